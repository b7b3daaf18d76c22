// Likes POST (the environment's POST_ID) once by each seeded user u1..u{LIKES}, with
// their own tokens (TOKENS_FILE), so that u0, its author, gets LIKES like notifications
// through the notifications worker, as live likes would. For
// loadtest/grouped_notifications.sh.
import exec from 'k6/execution';
import { put } from './lib.js';

const LIKES = parseInt(__ENV.LIKES || '100000', 10);

export const options = {
  scenarios: {
    likes: {
      executor: 'shared-iterations',
      vus: 16,
      iterations: LIKES,
      maxDuration: '60m',
    },
  },
};

export default function () {
  const liker = `u${exec.scenario.iterationInTest + 1}`;
  const response = put(`/v1/users/${liker}/likes/${__ENV.POST_ID}`, { op: 'like' });
  if (response.status !== 200 && response.status !== 201 && response.status !== 204) {
    exec.test.abort(`like by ${liker}: ${response.status} ${response.body}`);
  }
}
