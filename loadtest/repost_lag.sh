#!/usr/bin/env bash
# Does a repost by the largest account reach its followers' reads as fast as that
# account's posts? For each strategy in STRATEGIES (default "cache hybrid"), on the
# embedded store: `socialite seed --users USERS --max-follows 200 --posts-per-user 20
# --seed 42` under that strategy, a release server on it, the polled followers' first
# reads (which build their caches), then LAG_POSTS posts by the largest account
# (`scale_probe.py lag`) and LAG_POSTS reposts by it of posts by a user nobody follows
# (`scale_probe.py repost-lag`), one at a time, each timed from its request's start until
# it tops page 1 of the timelines of three of its followers and the timelines worker has
# nothing waiting. Under `hybrid`, when the largest account is above
# `feed.hybrid_threshold` (default 10,000 followers) it is a celebrity: its posts and
# its reposts alike reach only its own cache and are merged into each follower's page at
# read time, so neither waits for a fan-out. Usage: loadtest/repost_lag.sh [USERS]
set -euo pipefail
users=${1:-100000}
lag_posts=${LAG_POSTS:-10} lag_timeout=${LAG_TIMEOUT:-60}
cd "$(dirname "$0")/.."
source scripts/lib/listening.sh
bin=${BIN:-target/release/socialite}
[[ -n "${BIN:-}" ]] || cargo build --release --locked --quiet
export SOCIALITE_AUTH__MODE=token SOCIALITE_RATE__WRITES_PER_MIN=100000000 \
  SOCIALITE_RATE__READS_PER_MIN=100000000 SOCIALITE_RATE__IP_PER_MIN=100000000

for strategy in ${STRATEGIES:-cache hybrid}; do
  out=target/repost-lag/$strategy
  rm -rf "$out" && mkdir -p "$out"
  db="$out/store.db" tokens="$out/tokens.json"
  export SOCIALITE_STORAGE__PATH="$db" SOCIALITE_FEED__STRATEGY="$strategy"
  start=$(date +%s)
  nice "$bin" seed --users "$users" --max-follows 200 --posts-per-user 20 --seed 42 \
    --tokens-out "$tokens" > "$out/seed.log" 2>&1
  echo "$strategy: seeded $users users in $(( $(date +%s) - start )) s"
  python3 loadtest/scale_probe.py graph "$db" "$tokens" "$out" 1 > /dev/null

  "$bin" serve --listen 127.0.0.1:0 > "$out/serve.log" 2>&1 &
  pid=$!
  base="$(await_listening "$out/serve.log" "$pid")" || exit 1
  # The polled followers' first reads build their caches before anything is timed.
  python3 - "$tokens" "$out/graph.json" "$base" <<'PY'
import http.client, json, sys, urllib.parse
tokens, graph = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
port = urllib.parse.urlsplit(sys.argv[3]).port
c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
for u in graph["largest"]["poll"]:
    c.request("GET", f"/v1/users/{u}/timeline?limit=20",
              headers={"Authorization": f"Bearer {tokens[int(u[1:])]}"})
    r = c.getresponse(); r.read()
    assert r.status == 200, r.status
PY
  python3 loadtest/scale_probe.py lag "$base" "$tokens" "$out/graph.json" largest \
    "$lag_posts" "$lag_timeout" > "$out/lag-posts.json"
  python3 loadtest/scale_probe.py repost-lag "$base" "$tokens" "$out/graph.json" largest \
    "$lag_posts" "$lag_timeout" > "$out/lag-reposts.json"
  kill "$pid"; wait "$pid" || true
  python3 - "$strategy" "$out/lag-posts.json" "$out/lag-reposts.json" <<'PY'
import json, statistics, sys
strategy = sys.argv[1]
for path in sys.argv[2:]:
    r = json.load(open(path))
    lags = r["lag_ms"] or [float("nan")]
    print(f"{strategy}: {r['kind']}s by {r['author']} ({r['followers']} followers): request p50 "
          f"{statistics.median(r['post_ms']):.0f} ms; to followers' reads p50 "
          f"{statistics.median(lags):.0f} ms, max {max(lags):.0f} ms, lost {r['lost']}")
PY
done
