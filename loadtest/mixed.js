// Sessions of active users doing the classic Socialite mix:
// read 50%, scroll 41%, post 4%, follow 2%, unfollow 1%, like 2%.
// Env: RATE (iterations/s), DURATION, VUS, MAX_VUS, USERS, WITH_HEALTHZ=1 adds /healthz
// at the same rate and concurrency in the same run (the machine's HTTP ceiling).
import { check } from 'k6';
import {
  USERS, del, get, postJson, put, randomText, randomUser, record, summaryTrendStats, thresholds,
} from './lib.js';

const RATE = parseInt(__ENV.RATE || '200', 10);
const DURATION = __ENV.DURATION || '30s';
const VUS = parseInt(__ENV.VUS || '50', 10);
const MAX_VUS = parseInt(__ENV.MAX_VUS || String(VUS * 4), 10);

const load = { executor: 'constant-arrival-rate', rate: RATE, timeUnit: '1s', duration: DURATION,
  preAllocatedVUs: VUS, maxVUs: MAX_VUS };
const scenarios = { mixed: Object.assign({ exec: 'mixed' }, load) };
if (__ENV.WITH_HEALTHZ === '1') {
  scenarios.healthz = Object.assign({ exec: 'healthz' }, load);
}

export const options = {
  scenarios,
  thresholds: thresholds(['op_read', 'op_scroll', 'op_post', 'op_follow', 'op_unfollow', 'op_like']),
  summaryTrendStats,
  discardResponseBodies: false,
};

function timeline(user, before) {
  const query = before ? `?limit=20&before=${before}` : '?limit=20';
  return get(`/v1/users/${user}/timeline${query}`, { op: before ? 'scroll' : 'read' });
}

export function mixed() {
  const user = randomUser();
  const dice = Math.random() * 100;
  if (dice < 50) {
    record('op_read', timeline(user), [200]);
  } else if (dice < 91) {
    const first = timeline(user);
    if (first.status !== 200) {
      record('op_read', first, [200]);
      return;
    }
    const cursor = first.json('next_cursor');
    if (cursor) {
      record('op_scroll', timeline(user, cursor), [200]);
    }
  } else if (dice < 95) {
    const response = postJson(`/v1/users/${user}/posts`, { text: randomText() }, { op: 'post' });
    check(response, { 'post 201': (r) => r.status === 201 });
    record('op_post', response, [201]);
  } else if (dice < 97) {
    let target = randomUser();
    if (target === user) {
      target = `u${(parseInt(user.slice(1), 10) + 1) % USERS}`;
    }
    record('op_follow', put(`/v1/users/${user}/following/${target}`, { op: 'follow' }), [204]);
  } else if (dice < 98) {
    const following = get(`/v1/users/${user}/following?limit=100`, { op: 'following' });
    const items = following.status === 200 ? following.json('items') : [];
    if (items.length > 0) {
      const target = items[Math.floor(Math.random() * items.length)].id;
      record('op_unfollow', del(`/v1/users/${user}/following/${target}`, { op: 'unfollow' }), [204]);
    }
  } else {
    const page = timeline(user);
    const items = page.status === 200 ? page.json('items') : [];
    if (items.length > 0) {
      const post = items[Math.floor(Math.random() * items.length)].id;
      record('op_like', put(`/v1/users/${user}/likes/${post}`, { op: 'like' }), [204, 404]);
    }
  }
}

export function healthz() {
  record('op_healthz', get('/healthz', { op: 'healthz' }), [200]);
}
