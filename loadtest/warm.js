// Reads every seeded user's timeline once, so caches exist and pages are hot before
// anything is measured ("warm").
import exec from 'k6/execution';
import { USERS, get } from './lib.js';

export const options = {
  scenarios: {
    warm: { executor: 'shared-iterations', vus: 16, iterations: USERS, maxDuration: '15m' },
  },
};

export default function () {
  get(`/v1/users/u${exec.scenario.iterationInTest}/timeline?limit=20`, { op: 'warm' });
}
