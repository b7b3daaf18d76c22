#!/usr/bin/env bash
# Usage: loadtest/auth_overhead.sh [STRATEGY]
# The cost of authentication and rate limiting on the hot path: closed-loop warm
# timeline-read throughput (ceiling.js OP=read, VUS at once) with auth.mode = token and
# the rate limits on, against auth.mode = none. Both servers start at once, on copies of
# one seeded data set, and are measured in turn ROUNDS times (the idle one uses no CPU),
# so a round compares the two, not two start-ups. Prints each round and the ratio of the
# sums.
# k6 sends the same requests, bearer tokens included, in both modes (with auth off the
# server ignores them): k6 shares the machine's cores with the server, so a client
# doing less work in one arm would hand that arm CPU the server did not save.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
strategy="${1:-cache}"
cd "$root"
source loadtest/common.sh

declare -A total=([token]=0 [none]=0) url=()
for mode in token none; do
  start_server "$mode" "$mode"
  url[$mode]="$base"
done
for round in $(seq 1 "${ROUNDS:-5}"); do
  order="token none"
  (( round % 2 == 0 )) && order="none token" # neither always goes first
  for mode in $order; do
    read -r rate errors < <(ceiling "${url[$mode]}" read "$mode-$round")
    printf 'round %s auth.mode=%-5s %8.0f reads/s (error rate %s)\n' "$round" "$mode" "$rate" "$errors"
    total[$mode]="$(python3 -c "print(${total[$mode]} + $rate)")"
  done
done
python3 -c "print(f'token+limits / none: {${total[token]} / ${total[none]}:.3f}')"
