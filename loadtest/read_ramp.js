// Timeline read latency against followee count: the cost fanout on read pays. setup()
// creates readers rd1 ... rd1000 following that many seeded users, then each reads
// READS_PER_READER times (after one unrecorded read that builds a cache where one is used).
// /healthz is read as often, one request at a time like the reads: the HTTP floor that no
// timeline read can go below on this machine.
import http from 'k6/http';
import {
  batchRequest, createUser, get, record, summaryTrendStats, thresholds, useTokens,
} from './lib.js';
import { healthz } from './mixed.js';

const COUNTS = (__ENV.FOLLOWEE_COUNTS || '1,10,100,1000').split(',').map((c) => parseInt(c, 10));
const READS = parseInt(__ENV.READS_PER_READER || '100', 10);

export const options = {
  scenarios: { read_ramp: { executor: 'per-vu-iterations', vus: 1, iterations: 1, maxDuration: '30m' } },
  thresholds: thresholds(['op_healthz', ...COUNTS.map((c) => `read_f${c}`)]),
  summaryTrendStats,
  setupTimeout: '30m',
};

export function setup() {
  const tokens = {};
  for (const count of COUNTS) {
    const reader = `rd${count}`;
    tokens[reader] = createUser(reader);
    useTokens({ tokens });
    for (let start = 0; start < count; start += 200) {
      const batch = [];
      for (let i = start; i < Math.min(start + 200, count); i += 1) {
        batch.push(batchRequest('PUT', `/v1/users/${reader}/following/u${i}`, { op: 'setup' }));
      }
      http.batch(batch);
    }
    get(`/v1/users/${reader}/timeline?limit=20`, { op: 'setup' });
  }
  return { tokens };
}

export default function (data) {
  useTokens(data);
  for (let i = 0; i < READS; i += 1) {
    healthz();
  }
  for (const count of COUNTS) {
    for (let i = 0; i < READS; i += 1) {
      record(`read_f${count}`, get(`/v1/users/rd${count}/timeline?limit=20`, { op: `read_f${count}` }), [200]);
    }
  }
}
