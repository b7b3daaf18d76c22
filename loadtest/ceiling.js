// Closed-loop throughput at a fixed concurrency: VUS virtual users as fast as the server
// answers, for OP = healthz (the machine's HTTP ceiling), read (timeline page 1) or mixed.
// READERS (comma-separated user ids, optional): OP=read reads only their timelines.
import { constantVus } from './scenario.js';
import { get, randomUser, record, summaryTrendStats } from './lib.js';
import { healthz, mixed } from './mixed.js';

const OP = __ENV.OP || 'healthz';
const READERS = __ENV.READERS ? __ENV.READERS.split(',') : null;

export const options = {
  scenarios: { ceiling: constantVus() },
  thresholds: { op_errors: ['rate<0.001'], server_errors: ['count<1'] },
  summaryTrendStats,
};

export default function () {
  if (OP === 'healthz') {
    healthz();
  } else if (OP === 'read') {
    const user = READERS ? READERS[Math.floor(Math.random() * READERS.length)] : randomUser();
    record('op_read', get(`/v1/users/${user}/timeline?limit=20`, { op: 'read' }), [200]);
  } else {
    mixed();
  }
}
