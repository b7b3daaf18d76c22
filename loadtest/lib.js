// Shared helpers for the socialite k6 scripts.
import http from 'k6/http';
import { SharedArray } from 'k6/data';
import { Counter, Rate, Trend } from 'k6/metrics';

export const BASE_URL = __ENV.BASE_URL || 'http://127.0.0.1:8080';
export const USERS = parseInt(__ENV.USERS || '10000', 10);

// Authentication: the seeder's tokens (`socialite seed --tokens-out`, TOKENS_FILE: the
// token of u{i} at index i) and those of users a script creates in setup() (pass
// setup's data to useTokens). A request carries the token of the user in its path.
const SEEDED = __ENV.TOKENS_FILE ? new SharedArray('tokens', () => JSON.parse(open(__ENV.TOKENS_FILE))) : [];
let created = {};

export function useTokens(data) {
  if (data && data.tokens) {
    created = data.tokens;
  }
}

export function tokenOf(user) {
  const seeded = /^u(\d+)$/.exec(user);
  if (seeded && SEEDED.length > 0) {
    return SEEDED[parseInt(seeded[1], 10)];
  }
  return created[user];
}

function actingUser(path) {
  const match = /^\/v1\/users\/([^/?]+)/.exec(path);
  return match ? match[1] : undefined;
}

// Creates a user through the API and returns their token (undefined with auth off).
export function createUser(id) {
  const response = postJson('/v1/users', { id }, { op: 'setup' });
  return response.status === 201 ? response.json('token') : undefined;
}

export const serverErrors = new Counter('server_errors');
export const opErrors = new Rate('op_errors');
const trends = {};

// Metrics must exist at init time, before any threshold names them.
const OPS = ['op_read', 'op_scroll', 'op_post', 'op_follow', 'op_unfollow', 'op_like', 'op_healthz'];

export function trend(name) {
  if (!trends[name]) {
    trends[name] = new Trend(name, true);
  }
  return trends[name];
}

// Records an operation's latency and whether its status was one we expected.
export function record(name, response, expected) {
  trend(name).add(response.timings.duration);
  if (response.status >= 500) {
    serverErrors.add(1);
  }
  const ok = expected.includes(response.status);
  opErrors.add(!ok);
  return ok;
}

for (const op of OPS) {
  trend(op);
}

// Reads may be limited to every STRIDE-th user (u0, uSTRIDE, ...): the ones warmed.
export const STRIDE = parseInt(__ENV.STRIDE || '1', 10);

export function randomUser() {
  return `u${STRIDE * Math.floor(Math.random() * Math.ceil(USERS / STRIDE))}`;
}

// URLs carry ids, so requests are grouped by operation name to keep k6's time series few.
function named(tags) {
  return Object.assign({ name: tags && tags.op ? tags.op : 'other' }, tags);
}

// Request parameters for `path`: its tags, and the acting user's bearer token.
export function params(path, tags, json) {
  const headers = json ? { 'Content-Type': 'application/json' } : {};
  const user = actingUser(path);
  const token = user ? tokenOf(user) : undefined;
  if (token) {
    headers.Authorization = `Bearer ${token}`;
  }
  return { tags: named(tags), headers };
}

// One entry of http.batch.
export function batchRequest(method, path, tags) {
  return [method, `${BASE_URL}${path}`, null, params(path, tags)];
}

export function get(path, tags) {
  return http.get(`${BASE_URL}${path}`, params(path, tags));
}

export function put(path, tags) {
  return http.put(`${BASE_URL}${path}`, null, params(path, tags));
}

export function del(path, tags) {
  return http.del(`${BASE_URL}${path}`, null, params(path, tags));
}

export function postJson(path, body, tags) {
  return http.post(`${BASE_URL}${path}`, JSON.stringify(body), params(path, tags, true));
}

const LETTERS = 'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
export function randomText() {
  const length = 10 + Math.floor(Math.random() * 131);
  let text = '';
  for (let i = 0; i < length; i += 1) {
    text += LETTERS[Math.floor(Math.random() * LETTERS.length)];
  }
  return text;
}

// p95/p99 per operation (override with P95_MS / P99_MS), under 0.1% errors, no 5xx at all.
export function thresholds(ops) {
  const p95 = __ENV.P95_MS || '500';
  const p99 = __ENV.P99_MS || '1500';
  const result = {
    op_errors: ['rate<0.001'],
    server_errors: ['count<1'],
  };
  for (const op of ops) {
    trend(op);
    result[op] = [`p(95)<${p95}`, `p(99)<${p99}`];
  }
  return result;
}

export const summaryTrendStats = ['avg', 'min', 'med', 'p(95)', 'p(99)', 'max', 'count'];
