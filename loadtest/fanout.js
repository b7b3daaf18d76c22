// Post latency against follower count. setup() creates authors fan10 ... fan10000 followed
// by that many seeded users (u0, u1, ...), then each author posts POSTS_PER_AUTHOR times.
import http from 'k6/http';
import {
  BASE_URL, postJson, randomText, record, summaryTrendStats, thresholds, trend,
} from './lib.js';

const COUNTS = (__ENV.FOLLOWER_COUNTS || '10,100,1000,10000').split(',').map((c) => parseInt(c, 10));
const POSTS = parseInt(__ENV.POSTS_PER_AUTHOR || '30', 10);

export const options = {
  scenarios: { fanout: { executor: 'per-vu-iterations', vus: 1, iterations: 1, maxDuration: '30m' } },
  // A post waits for its whole fan-out, so the latency bound scales with the audience.
  thresholds: Object.assign(thresholds([]), Object.fromEntries(COUNTS.map((c) => {
    trend(`post_f${c}`);
    return [`post_f${c}`, [`p(99)<${Math.max(1500, c)}`]];
  }))),
  summaryTrendStats,
  setupTimeout: '30m',
};

export function setup() {
  for (const count of COUNTS) {
    const author = `fan${count}`;
    postJson('/v1/users', { id: author }, { op: 'setup' });
    for (let start = 0; start < count; start += 200) {
      const batch = [];
      for (let i = start; i < Math.min(start + 200, count); i += 1) {
        batch.push(['PUT', `${BASE_URL}/v1/users/u${i}/following/${author}`, null, { tags: { op: 'setup', name: 'setup' } }]);
      }
      http.batch(batch);
    }
  }
}

export default function () {
  for (const count of COUNTS) {
    for (let i = 0; i < POSTS; i += 1) {
      const response = postJson(`/v1/users/fan${count}/posts`, { text: randomText() }, { op: `post_f${count}` });
      record(`post_f${count}`, response, [201]);
    }
  }
}
