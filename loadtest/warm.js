// Reads twice the timeline of every STRIDE-th seeded user (every user by default), then
// of each user in EXTRA (comma-separated ids), so caches exist, pages are kept and hot
// before anything is measured ("warm").
import exec from 'k6/execution';
import { STRIDE, USERS, get } from './lib.js';

const SAMPLED = Math.ceil(USERS / STRIDE);
const EXTRA = __ENV.EXTRA ? __ENV.EXTRA.split(',') : [];

export const options = {
  scenarios: {
    warm: {
      executor: 'shared-iterations',
      vus: 16,
      iterations: SAMPLED + EXTRA.length,
      maxDuration: '60m',
    },
  },
};

export default function () {
  const i = exec.scenario.iterationInTest;
  const user = i < SAMPLED ? `u${i * STRIDE}` : EXTRA[i - SAMPLED];
  // Twice: the first read builds the cache (cache, hybrid), the second reads it and
  // keeps the rendered page (`feed.page_memo_mib`), as a reader's next read would.
  get(`/v1/users/${user}/timeline?limit=20`, { op: 'warm' });
  get(`/v1/users/${user}/timeline?limit=20`, { op: 'warm' });
}
