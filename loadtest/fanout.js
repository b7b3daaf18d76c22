// Post latency against follower count. setup() creates authors fan10 ... fan10000 followed
// by that many seeded users (u0, u1, ...). Each author then posts POSTS_PER_AUTHOR times
// twice: first while none of the followers has read a timeline since the server started
// (post_f*), then after every follower has read once (post_active_f*). Under the cache
// strategy the first is the cost of a post to followers without caches, the second to
// followers who all have one; the other strategies write the same either way.
import http from 'k6/http';
import {
  batchRequest, createUser, postJson, randomText, record, summaryTrendStats, thresholds, trend, useTokens,
} from './lib.js';

const COUNTS = (__ENV.FOLLOWER_COUNTS || '10,100,1000,10000').split(',').map((c) => parseInt(c, 10));
const POSTS = parseInt(__ENV.POSTS_PER_AUTHOR || '30', 10);
const MAX_FOLLOWERS = Math.max(...COUNTS);

// A post waits for its whole fan-out, so the latency bound scales with the audience.
function postThresholds(prefix) {
  return Object.fromEntries(COUNTS.map((c) => {
    trend(`${prefix}${c}`);
    return [`${prefix}${c}`, [`p(99)<${Math.max(1500, c)}`]];
  }));
}

export const options = {
  scenarios: { fanout: { executor: 'per-vu-iterations', vus: 1, iterations: 1, maxDuration: '30m' } },
  thresholds: Object.assign(thresholds([]), postThresholds('post_f'), postThresholds('post_active_f')),
  summaryTrendStats,
  setupTimeout: '30m',
};


function inBatches(count, request) {
  for (let start = 0; start < count; start += 200) {
    const batch = [];
    for (let i = start; i < Math.min(start + 200, count); i += 1) {
      batch.push(request(i));
    }
    http.batch(batch);
  }
}

export function setup() {
  const tokens = {};
  for (const count of COUNTS) {
    const author = `fan${count}`;
    tokens[author] = createUser(author);
    inBatches(count, (i) => batchRequest('PUT', `/v1/users/u${i}/following/${author}`, { op: 'setup' }));
  }
  return { tokens };
}

function postAll(prefix) {
  for (const count of COUNTS) {
    for (let i = 0; i < POSTS; i += 1) {
      const response = postJson(`/v1/users/fan${count}/posts`, { text: randomText() }, { op: `${prefix}${count}` });
      record(`${prefix}${count}`, response, [201]);
    }
  }
}

export default function (data) {
  useTokens(data);
  postAll('post_f');
  inBatches(MAX_FOLLOWERS, (i) => batchRequest('GET', `/v1/users/u${i}/timeline?limit=20`, { op: 'activate' }));
  postAll('post_active_f');
}
