#!/usr/bin/env bash
# Usage: loadtest/read_ceiling.sh [STRATEGY]
# Warm timeline-read throughput against the machine's HTTP ceiling: closed-loop
# ceiling.js at VUS at once (32), OP=read (page 1 of a random user's timeline) and
# OP=healthz alternately, ROUNDS times against one server (auth.mode = MODE, default
# none, over a copy of the seeded data set, every cache warmed first). Prints each
# round and the ratio of the sums.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
strategy="${1:-cache}"
cd "$root"
source loadtest/common.sh

start_server "${MODE:-none}" ceiling
declare -A total=([read]=0 [healthz]=0)
for round in $(seq 1 "${ROUNDS:-3}"); do
  for op in healthz read; do
    read -r rate errors < <(ceiling "$base" "$op" "$op-$round")
    printf 'round %s %-7s %8.0f req/s (error rate %s)\n' "$round" "$op" "$rate" "$errors"
    total[$op]="$(python3 -c "print(${total[$op]} + $rate)")"
  done
done
python3 -c "print(f'read / healthz: {${total[read]} / ${total[healthz]}:.3f}')"
