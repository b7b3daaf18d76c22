// The closed-loop executor shared by ceiling runs.
export function constantVus() {
  return {
    executor: 'constant-vus',
    vus: parseInt(__ENV.VUS || '32', 10),
    duration: __ENV.DURATION || '10s',
  };
}
