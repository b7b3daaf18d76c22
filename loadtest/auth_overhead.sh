#!/usr/bin/env bash
# Usage: loadtest/auth_overhead.sh [STRATEGY]
# The cost of authentication and rate limiting on the hot path: closed-loop warm
# timeline-read throughput (ceiling.js OP=read, VUS at once) with auth.mode = token and
# the rate limits on, against auth.mode = none, alternating token/none ROUNDS times in
# one run on copies of one seeded data set. Prints each round and the ratio of the sums.
# The per-address limit is raised (all load comes from one address) but still checked.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
strategy="${1:-cache}"
cd "$root"
k6="${K6:-$(loadtest/install-k6.sh)}"
cargo build --release --locked --quiet
bin="$root/target/release/socialite"
users="${SEED_USERS:-10000}" follows="${SEED_MAX_FOLLOWS:-200}" posts="${SEED_POSTS:-20}"
cache_dir="$root/target/loadtest-seed"
seeded="$cache_dir/$strategy-$users-$follows-$posts-tokens.db"
tokens_file="$seeded.tokens.json"
if [[ ! -f "$seeded" || ! -f "$tokens_file" ]]; then
  mkdir -p "$cache_dir"
  SOCIALITE_FEED__STRATEGY="$strategy" SOCIALITE_AUTH__MODE=token SOCIALITE_STORAGE__PATH="$seeded.tmp" \
    "$bin" seed --users "$users" --max-follows "$follows" --posts-per-user "$posts" --seed 42 \
    --tokens-out "$tokens_file"
  rm -f "$seeded.tmp-wal" "$seeded.tmp-shm"
  mv "$seeded.tmp" "$seeded"
fi
work="$(mktemp -d)"
server_pid=""
stop_server() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  server_pid=""
}
trap 'stop_server; rm -rf "$work"' EXIT

measure() { # MODE ROUND -> prints req/s
  local mode="$1" round="$2" log="$work/server-$1-$2.log" base=""
  cp "$seeded" "$work/db-$mode-$round"
  SOCIALITE_FEED__STRATEGY="$strategy" SOCIALITE_AUTH__MODE="$mode" \
    SOCIALITE_RATE__IP_PER_MIN=100000000 SOCIALITE_STORAGE__PATH="$work/db-$mode-$round" \
    RUST_LOG=warn,socialite=info NO_COLOR=1 "$bin" serve --listen 127.0.0.1:0 > "$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    base="$(grep -o 'listening on http://[0-9.:]*' "$log" | head -1 | sed 's/listening on //')" || true
    [[ -n "$base" ]] && break
    sleep 0.1
  done
  [[ -n "$base" ]] || { cat "$log" >&2; exit 1; }
  export BASE_URL="$base" USERS="$users"
  if [[ "$mode" == token ]]; then export TOKENS_FILE="$tokens_file"; else unset TOKENS_FILE; fi
  "$k6" run --quiet --no-color loadtest/warm.js >/dev/null
  OP=read VUS="${VUS:-32}" DURATION="${DURATION:-20s}" "$k6" run --quiet --no-color \
    --summary-export "$work/$mode-$round.json" loadtest/ceiling.js >/dev/null
  stop_server
  python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["metrics"]; print(m["http_reqs"]["rate"], m["op_errors"]["value"])' "$work/$mode-$round.json"
}

declare -A total=([token]=0 [none]=0)
for round in $(seq 1 "${ROUNDS:-2}"); do
  for mode in token none; do
    read -r rate errors < <(measure "$mode" "$round")
    printf 'round %s auth.mode=%-5s %8.0f reads/s (error rate %s)\n' "$round" "$mode" "$rate" "$errors"
    total[$mode]="$(python3 -c "print(${total[$mode]} + $rate)")"
  done
done
python3 -c "print(f'token+limits / none: {${total[token]} / ${total[none]}:.3f}')"
