#!/usr/bin/env bash
# Usage: loadtest/scale.sh SIZES...        e.g. loadtest/scale.sh 10000 100000
# The strategies compared at scale (issue 21, section 3), on the embedded store. For each
# SIZE (users) and each strategy in STRATEGIES it bulk-loads a graph with
# `socialite seed --users SIZE --max-follows 200 --posts-per-user 20 --seed 42
# --tokens-out` (auth.mode = token), starts one release server on it and, in that one
# run, measures:
#   - load time, database file size (after the load) and server RSS (after the run, with
#     its private and file-backed parts, and the peak);
#   - warm timeline reads (page 1 of a random warmed user) against /healthz, after
#     reading twice (the cache built, the page kept) the timeline of every user, or
#     above WARM_MAX users (100,000) of every STRIDE-th one (STRIDE = ceil(SIZE /
#     WARM_MAX)) and of every reader and follower the arms and probes read, closed loop
#     at CONNS (32) connections for ARM (10s) each, with wrk (2 threads) and with k6:
#     throughput, p50, p99. Each tool runs ROUNDS (3) rounds of its three arms in turn
#     (the report takes the median round: one 10 s arm moves by a quarter between runs
#     here);
#   - the same reads by readers who follow the ten largest accounts;
#   - for the strategies in PAIR (cache hybrid), at every size after the first: the
#     first size's data set, kept, served again beside this one and warmed, then ROUNDS
#     pairs of wrk read arms, small graph then large, so each p99 ratio compares
#     neighbours in one run rather than two runs minutes apart;
#   - LAG_POSTS (10) posts, one at a time, by the largest account and by a median one:
#     the post request's latency and the lag until the post tops the timelines of three
#     of the author's followers (the highest id, the lowest, one between) and the
#     timelines worker has nothing waiting (loadtest/scale_probe.py).
# Every strategy gets its own load, so each has a load time (hybrid also classifies its
# celebrities during the load); each data set is deleted as soon as its run ends. The
# warm-up is where cache and hybrid build their caches: about 10 minutes for 100,000
# users on the shared 2 cores, hence WARM_MAX. Raw results go to target/scale/STAMP/;
# loadtest/scale_report.py writes loadtest/results/scale-DATE.md and the charts
# (docs/img/scale-*.png, with matplotlib in a venv under target/).
#
# Knobs: STRATEGIES (default all five), WARM_MAX, BUCKET_MAX_USERS (20000: the bucket
# strategies materialise a copy of every post per follower, 2.6 GB at 20,000 users and
# about 13 GB at 100,000, so larger sizes skip them unless it is raised; 1,000,000 needs
# about 130 GB), HYBRID_THRESHOLD (feed.hybrid_threshold, default the service's; a
# STRATEGIES entry `hybrid:N` runs hybrid with threshold N as an arm of its own), CONNS,
# ARM, ROUNDS, PAIR (strategies, or empty for none), LAG_POSTS, LAG_TIMEOUT (30 s per
# post), K6, REPORT and IMG_DIR (where to write), RAW (an earlier run's raw directory:
# add to it, and report on both), BIN (a release
# binary already built: no cargo build), AUDIT (sizes or SIZE-STRATEGY arms, e.g.
# "10000 1000000-cache": after those runs, `socialite audit --wait 5` on their data sets,
# timed, with its peak RSS from GNU time). Traffic goes to 127.0.0.1 only.
# Not run in CI (minutes per size and gigabytes of disk): CI keeps its smoke run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source scripts/lib/listening.sh
(( $# > 0 )) || { sed -n 2,3p "$0" >&2; exit 2; }
for size in "$@"; do [[ "$size" =~ ^[0-9]+$ ]] || { echo "not a size: $size" >&2; exit 2; }; done
strategies=(${STRATEGIES:-fanout_on_read cache hybrid timed_buckets sized_buckets})
bucket_max="${BUCKET_MAX_USERS:-20000}"
conns="${CONNS:-32}" arm="${ARM:-10s}" lag_posts="${LAG_POSTS:-10}" lag_timeout="${LAG_TIMEOUT:-30}"
rounds="${ROUNDS:-3}" pair=" ${PAIR-cache hybrid} " first_size="$1"
follows=200 posts=20 warm_max="${WARM_MAX:-100000}"

k6="${K6:-$(loadtest/install-k6.sh)}"
for tool in wrk:wrk /usr/bin/time:time; do
  if ! command -v "${tool%%:*}" >/dev/null; then
    apt-get install -y "${tool#*:}" >&2 || { apt-get update >&2 && apt-get install -y "${tool#*:}" >&2; }
  fi
done
venv="$root/target/scale-venv"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "matplotlib==3.11.2"
fi
if [[ -n "${BIN:-}" ]]; then
  bin="$BIN"
else
  cargo build --release --locked --quiet
  bin="$root/target/release/socialite"
fi

stamp="$(date -u +%Y%m%dT%H%M%SZ)"
raw="${RAW:-$root/target/scale/$stamp}"
data="$root/target/scale/data"
mkdir -p "$raw" "$data"
server_pid="" pair_pid=""
stop_server() {
  local pid
  for pid in "$server_pid" "$pair_pid"; do
    if [[ -n "$pid" ]]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  done
  server_pid="" pair_pid=""
}
trap 'stop_server; rm -rf "$data"' EXIT

export SOCIALITE_AUTH__MODE=token
# All load comes from one address and a few users: the limits are raised, still checked.
export SOCIALITE_RATE__IP_PER_MIN=100000000 SOCIALITE_RATE__READS_PER_MIN=100000000
export SOCIALITE_RATE__WRITES_PER_MIN=100000000
[[ -n "${HYBRID_THRESHOLD:-}" ]] && export SOCIALITE_FEED__HYBRID_THRESHOLD="$HYBRID_THRESHOLD"

# serve DB LOG: a release server on DB for this arm's strategy (and threshold), in the
# background, on 127.0.0.1; sets served_pid and served_base.
serve() {
  "${threshold[@]}" SOCIALITE_FEED__STRATEGY="$strategy" SOCIALITE_STORAGE__PATH="$1" \
    RUST_LOG=warn,socialite=info NO_COLOR=1 "$bin" serve --listen 127.0.0.1:0 > "$2" 2>&1 &
  served_pid=$!
  served_base="$(await_listening "$2" "$served_pid")" || exit 1
  curl -fsS "$served_base/readyz" >/dev/null
}
# warm BASE USERS STRIDE EXTRA_CSV TOKENS: every STRIDE-th user's timeline and EXTRA's read twice.
warm() {
  BASE_URL="$1" USERS="$2" STRIDE="$3" EXTRA="$(cat "$4")" TOKENS_FILE="$5" \
    "$k6" run --quiet --no-color loadtest/warm.js >/dev/null
}
# wrk_arm NAME BASE MODE [USERS_FILE]: one closed-loop wrk run; its JSON line to
# $run/wrk-NAME.json.
wrk_arm() {
  wrk -t2 -c"$conns" -d"$arm" --timeout 10s -s loadtest/scale_wrk.lua "$2" -- "${@:3}" \
    | grep '^{' > "$run/wrk-$1.json" || echo "wrk $1: no result" >&2
}
# k6_arm NAME OP [READERS]: one closed-loop ceiling.js run; summary to $run/k6-NAME.json.
k6_arm() {
  BASE_URL="$base" USERS="$size" STRIDE="$stride" TOKENS_FILE="$tokens" OP="$2" READERS="${3:-}" VUS="$conns" \
    DURATION="$arm" "$k6" run --quiet --no-color --summary-export "$run/k6-$1.json" \
    loadtest/ceiling.js >/dev/null || echo "k6 $1: thresholds failed (see its summary)" >&2
}

for size in "$@"; do
  for arm_name in "${strategies[@]}"; do
    strategy="${arm_name%%:*}" threshold=(env) thr="${HYBRID_THRESHOLD:-default}"
    if [[ "$arm_name" == *:* ]]; then
      thr="${arm_name#*:}" threshold=(env SOCIALITE_FEED__HYBRID_THRESHOLD="$thr")
    fi
    run="$raw/$size-$arm_name"
    mkdir -p "$run"
    if [[ "$strategy" == *_buckets && "$size" -gt "$bucket_max" ]]; then
      echo "{\"skipped\": \"above BUCKET_MAX_USERS=$bucket_max: the bucket strategies materialise a copy of every post per follower, about 13 GB and minutes of load at 100,000 users, about 130 GB at 1,000,000, more than this machine's free disk\"}" > "$run/skipped.json"
      continue
    fi
    rm -f "$run/skipped.json"  # an arm skipped by an earlier run into this RAW directory
    echo "== $size users, $arm_name ($(date -u +%H:%M:%S))" >&2
    db="$data/$strategy-$size.db" tokens="$data/$strategy-$size.tokens.json"
    rm -f "$db" "$db-wal" "$db-shm"
    started="$(date +%s.%N)"
    "${threshold[@]}" SOCIALITE_FEED__STRATEGY="$strategy" SOCIALITE_STORAGE__PATH="$db" NO_COLOR=1 \
      "$bin" seed --users "$size" --max-follows "$follows" --posts-per-user "$posts" --seed 42 \
      --tokens-out "$tokens" > "$run/seed.log" 2>&1
    load_s="$(python3 -c "import time; print(round(time.time() - $started, 1))")"
    db_bytes="$(du -cb "$db"* | tail -1 | cut -f1)"
    stride=$(( (size + warm_max - 1) / warm_max ))
    python3 loadtest/scale_probe.py graph "$db" "$tokens" "$run" "$stride"

    serve "$db" "$run/server.log"
    server_pid="$served_pid" base="$served_base"

    warm_started="$(date +%s.%N)"
    warm "$base" "$size" "$stride" "$run/warm_extra.csv" "$tokens"
    warm_s="$(python3 -c "import time; print(round(time.time() - $warm_started, 1))")"
    # Arms alternate between /healthz and reads so each ratio compares neighbours.
    for r in $(seq 1 "$rounds"); do
      wrk_arm "healthz-$r" "$base" healthz
      wrk_arm "read-$r" "$base" read "$run/users.txt"
      wrk_arm "read_top-$r" "$base" read "$run/top_readers.txt"
    done
    for r in $(seq 1 "$rounds"); do
      k6_arm "healthz-$r" healthz
      k6_arm "read-$r" read
      k6_arm "read_top-$r" read "$(cat "$run/top_readers.csv")"
    done
    kept="$data/kept-$arm_name" paired=null
    if [[ "$size" != "$first_size" && -d "$kept" ]]; then
      paired="$first_size"
      echo "== $size users, $arm_name: paired with $first_size ($(date -u +%H:%M:%S))" >&2
      serve "$kept/db" "$run/pair-server.log"
      pair_pid="$served_pid"
      warm "$served_base" "$first_size" "$(cat "$kept/stride")" "$kept/warm_extra.csv" "$kept/tokens.json"
      for r in $(seq 1 "$rounds"); do
        wrk_arm "pair_small-$r" "$served_base" read "$kept/users.txt"
        wrk_arm "pair_large-$r" "$base" read "$run/users.txt"
      done
      kill "$pair_pid"; wait "$pair_pid" 2>/dev/null || true; pair_pid=""
    fi
    python3 loadtest/scale_probe.py lag "$base" "$tokens" "$run/graph.json" largest "$lag_posts" "$lag_timeout" > "$run/lag-largest.json" \
      || echo "lag probe (largest) failed" >&2
    python3 loadtest/scale_probe.py lag "$base" "$tokens" "$run/graph.json" median "$lag_posts" "$lag_timeout" > "$run/lag-median.json" \
      || echo "lag probe (median) failed" >&2
    awk '/VmRSS|VmHWM|RssAnon|RssFile/ {print $1, $2}' "/proc/$server_pid/status" > "$run/rss.txt"
    stop_server
    audit=""
    if [[ " ${AUDIT:-} " == *" $size "* || " ${AUDIT:-} " == *" $size-$arm_name "* ]]; then
      echo "== audit of $size users, $arm_name ($(date -u +%H:%M:%S))" >&2
      audit_started="$(date +%s.%N)" audit_status=0
      "${threshold[@]}" SOCIALITE_FEED__STRATEGY="$strategy" SOCIALITE_STORAGE__PATH="$db" NO_COLOR=1 \
        /usr/bin/time -v "$bin" audit --wait 5 > "$run/audit.log" 2> "$run/audit.err" || audit_status=$?
      audit_s="$(python3 -c "import time; print(round(time.time() - $audit_started, 1))")"
      audit_kb="$(awk -F': ' '/Maximum resident set size/ {print $2}' "$run/audit.err")"
      audit=", \"audit_s\": $audit_s, \"audit_status\": $audit_status, \"audit_peak_kb\": ${audit_kb:-0}"
    fi
    cat > "$run/run.json" <<EOF
{"size": $size, "strategy": "$arm_name", "load_s": $load_s, "warm_s": $warm_s, "db_bytes": $db_bytes$audit,
 "hybrid_threshold": "$thr", "conns": $conns, "arm": "$arm", "warm_stride": $stride,
 "rounds": $rounds, "paired_with": $paired,
 "loadavg_after": "$(cut -d' ' -f1-3 /proc/loadavg)", "finished": "$(date -u +%FT%TZ)"}
EOF
    tail -3 "$run/seed.log" > "$run/seed.tail"
    if [[ "$size" == "$first_size" && "$pair" == *" $arm_name "* && $# -gt 1 ]]; then
      # Kept for the larger sizes' paired rounds (removed with $data on exit).
      mkdir -p "$kept"
      for f in "$db" "$db"-wal "$db"-shm; do [[ ! -e "$f" ]] || mv "$f" "$kept/db${f#"$db"}"; done
      mv "$tokens" "$kept/tokens.json"
      cp "$run/users.txt" "$run/warm_extra.csv" "$kept/"
      echo "$stride" > "$kept/stride"
    fi
    rm -f "$run/users.txt" "$run/top_readers.txt" "$db" "$db"-* "$tokens"
  done
done
"$venv/bin/python" loadtest/scale_report.py "$raw" "${REPORT:-loadtest/results/scale-$(date -u +%F).md}" "${IMG_DIR:-docs/img}"
