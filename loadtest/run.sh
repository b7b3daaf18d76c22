#!/usr/bin/env bash
# Usage: loadtest/run.sh STRATEGY [SCENARIO]
#   STRATEGY: fanout_on_read | timed_buckets | sized_buckets | cache
#   SCENARIO: mixed (default) | fanout | read_ramp | smoke
# Builds the release binary, seeds a fresh embedded data directory (or, with MONGODB_URI
# set, a fresh database on that server), starts the server, warms up, runs the scenario
# and writes the k6 summary JSON and a markdown table to loadtest/results/.
#
# The standard data set: SEED_USERS=10000 SEED_MAX_FOLLOWS=200 SEED_POSTS=20 (seed 42);
# smoke uses 500/20/5. Seeded files are kept in target/loadtest-seed/ and copied, so
# repeated runs skip seeding. Other knobs: RATE, DURATION, VUS (mixed), K6 (binary), BIN
# (the socialite binary; default: the release build, built here).
#
# Authentication stays on (auth.mode = token unless SOCIALITE_AUTH__MODE says otherwise):
# the seeder writes every user's token to a file the scripts read (TOKENS_FILE), and
# users the scripts create get their tokens from the API. All load comes from one
# address, so the per-address limit is raised (IP_PER_MIN, default 100000000); the
# per-user limits stay at their defaults.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
strategy="${1:?usage: run.sh STRATEGY [mixed|fanout|read_ramp|smoke]}"
scenario="${2:-mixed}"
cd "$root"
source scripts/lib/listening.sh

k6="${K6:-$(loadtest/install-k6.sh)}"
# BIN: a socialite binary to run instead (CI smokes the debug binary its tests built;
# figures come only from the release build).
bin="${BIN:-}"
if [[ -z "$bin" ]]; then
  cargo build --release --locked --quiet
  bin="$root/target/release/socialite"
fi

if [[ "$scenario" == smoke ]]; then
  users=500 follows=20 posts=5
else
  users="${SEED_USERS:-10000}" follows="${SEED_MAX_FOLLOWS:-200}" posts="${SEED_POSTS:-20}"
fi
work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

export SOCIALITE_FEED__STRATEGY="$strategy"
export SOCIALITE_RATE__IP_PER_MIN="${IP_PER_MIN:-100000000}"
auth_mode="${SOCIALITE_AUTH__MODE:-token}"
token_args=()
if [[ -n "${MONGODB_URI:-}" ]]; then
  export SOCIALITE_STORAGE__BACKEND=mongodb
  base="${MONGODB_URI%%\?*}"; base="${base%/}"; base="${base%/*}"
  query=""; [[ "$MONGODB_URI" == *\?* ]] && query="?${MONGODB_URI#*\?}"
  export SOCIALITE_STORAGE__MONGODB_URI="${base}/loadtest_$(date +%s)_$$${query}"
  storage=mongodb
  tokens_file="$work/tokens.json"
  [[ "$auth_mode" == token ]] && token_args=(--tokens-out "$tokens_file")
  "$bin" seed --users "$users" --max-follows "$follows" --posts-per-user "$posts" --seed 42 "${token_args[@]}"
else
  export SOCIALITE_STORAGE__PATH="$work/socialite.db"
  storage=embedded
  cache_dir="$root/target/loadtest-seed"
  seeded="$cache_dir/$strategy-$users-$follows-$posts-tokens.db"
  tokens_file="$seeded.tokens.json"
  if [[ ! -f "$seeded" || ! -f "$tokens_file" ]]; then
    mkdir -p "$cache_dir"
    # Seed before the server starts: seeding writes straight through the storage port.
    # Tokens are always issued, so one seeded file serves every auth mode.
    SOCIALITE_AUTH__MODE=token SOCIALITE_STORAGE__PATH="$seeded.tmp" "$bin" seed --users "$users" --max-follows "$follows" \
      --posts-per-user "$posts" --seed 42 --tokens-out "$tokens_file"
    sqlite3 "$seeded.tmp" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null 2>&1 || true
    rm -f "$seeded.tmp-wal" "$seeded.tmp-shm"
    mv "$seeded.tmp" "$seeded"
  fi
  cp "$seeded" "$work/socialite.db"
fi

RUST_LOG=warn,socialite=info NO_COLOR=1 "$bin" serve --listen 127.0.0.1:0 > "$work/server.log" 2>&1 &
server_pid=$!
base_url="$(await_listening "$work/server.log" "$server_pid")"
curl -fsS "$base_url/readyz" >/dev/null
export BASE_URL="$base_url" USERS="$users"
if [[ "$auth_mode" == token ]]; then export TOKENS_FILE="$tokens_file"; fi

stamp="$(date -u +%Y%m%dT%H%M%SZ)"
out="$root/loadtest/results/$storage-$strategy-$scenario-$stamp"
mkdir -p "$root/loadtest/results"
run_k6() { "$k6" run --quiet --no-color "$@"; }

case "$scenario" in
  smoke)
    RATE="${RATE:-30}" DURATION=15s VUS=10 run_k6 --summary-export "$out.json" loadtest/mixed.js
    ;;
  mixed)
    conc="${VUS:-32}"
    # Warm-up, not recorded: every user reads once (building caches where the strategy
    # keeps them), then a short mixed run.
    run_k6 loadtest/warm.js >/dev/null
    RATE=100 DURATION=10s run_k6 loadtest/mixed.js >/dev/null || true
    for op in healthz read mixed; do
      OP="$op" VUS="$conc" DURATION="${CEILING_DURATION:-15s}" run_k6 --summary-export "$out.ceiling-$op.json" loadtest/ceiling.js >/dev/null
    done
    # The workers' lag, sampled every second while the mix runs (report.py sums it up).
    ( while :; do curl -fsS "$base_url/v1/workers" 2>/dev/null && echo; sleep 1; done ) > "$out.workers.jsonl" &
    sampler=$!
    RATE="${RATE:-200}" DURATION="${DURATION:-60s}" VUS="$conc" run_k6 --summary-export "$out.json" loadtest/mixed.js
    kill "$sampler" 2>/dev/null || true
    ;;
  fanout)
    run_k6 --summary-export "$out.json" loadtest/fanout.js
    ;;
  read_ramp)
    run_k6 --summary-export "$out.json" loadtest/read_ramp.js
    ;;
  *) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac

rss_kb="$(awk '/VmRSS/ {print $2}' "/proc/$server_pid/status")"
python3 loadtest/report.py "$out" "$strategy" "$scenario" "$storage" "$rss_kb" "$users/$follows/$posts" | tee "$out.md"
