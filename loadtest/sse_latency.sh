#!/usr/bin/env bash
# Usage: loadtest/sse_latency.sh
# Post-to-SSE delivery latency at STREAMS (1000) open timeline streams under mixed.js.
# Seeds (or reuses) the standard data set with tokens, starts a release server on a copy,
# and runs examples/sse_latency.rs: users u9000..u9999 each open their live timeline
# stream with their own token and follow AUTHORS new authors, who post every
# INTERVAL_MS for POSTS posts, while k6 runs mixed.js (RATE sessions/s) over users
# u0..u8999 only, so the load never unfollows the probes' authors. Prints p50/p99 of
# POST-send-to-SSE-arrival over every delivery, and fails on a lost delivery.
# PERF=1 records a CPU profile of the server while the authors post (perf.data in $OUT).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
strategy="${STRATEGY:-cache}"
OUT="${OUT:-$(mktemp -d)}" # kept: the logs are the run's record
source loadtest/common.sh
cargo build --release --locked --quiet --example sse_latency
client="$root/target/release/examples/sse_latency"
out="$work"
streams="${STREAMS:-1000}" first=$((users - ${STREAMS:-1000}))
probe_posts="${POSTS:-120}" interval="${INTERVAL_MS:-500}"
# The streams alone would nearly fill the default server.max_connections (1024).
SOCIALITE_SERVER__MAX_CONNECTIONS="${MAX_CONNECTIONS:-4096}" serve token sse

SSE_BASE_URL="$base" TOKENS_FILE="$tokens_file" SSE_FIRST="$first" SSE_STREAMS="$streams" \
  SSE_AUTHORS="${AUTHORS:-2}" SSE_POSTS="$probe_posts" SSE_INTERVAL_MS="$interval" \
  "$client" > "$out/client.log" 2>&1 &
client_pid=$!
pids+=("$client_pid")
until grep -q READY "$out/client.log"; do
  kill -0 "$client_pid" 2>/dev/null || { cat "$out/client.log" >&2; exit 1; }
  sleep 0.2
done
# k6 runs from READY until after the last post (5 s warm-up, then the posts).
duration=$(( 5 + probe_posts * interval / 1000 + 5 ))
BASE_URL="$base" USERS="$first" TOKENS_FILE="$tokens_file" RATE="${RATE:-200}" DURATION="${duration}s" \
  "$k6" run --quiet --no-color --summary-export "$out/k6.json" loadtest/mixed.js > "$out/k6.log" 2>&1 &
k6_pid=$!
pids+=("$k6_pid")
if [[ "${PERF:-0}" == 1 ]]; then
  sleep 5
  perf record -g -o "$out/perf.data" -p "$server_pid" -- sleep $(( probe_posts * interval / 1000 )) \
    > "$out/perf.log" 2>&1 || true
fi
client_rc=0; wait "$client_pid" || client_rc=$?
# The events worker's share: from a change's commit to its event's (same run).
curl -s "$base/metrics" > "$out/metrics.txt" || true
k6_rc=0; wait "$k6_pid" || k6_rc=$?
cat "$out/client.log"
python3 - "$out/k6.json" "$k6_rc" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["metrics"]
rate = m["iterations"]["rate"]
def p(name):
    v = m.get(name, {})
    return f'{v.get("med", 0):.1f} / {v.get("p(99)", 0):.1f} ms'
print(f'mixed.js alongside: {rate:.0f} sessions/s, read p50/p99 {p("op_read")}, post {p("op_post")}, '
      f'error rate {m["op_errors"]["value"]:.4f}, k6 exit {sys.argv[2]}')
PY
grep -E '^socialite_worker_delay_seconds\{worker="events",quantile="0\.(5|99)"\}' "$out/metrics.txt" \
  | sed 's/^/server: /' || true
grep -c 'did not keep up' "$out/server-sse.log" | sed 's/^/slow-client disconnects: /' || true
echo "logs in $out"
exit "$client_rc"
