#!/usr/bin/env bash
# Usage: loadtest/rename_stall.sh [ROUNDS] [NAME=BINARY ...]
# How many warm timeline reads are served as kept pages while an unrelated user renames
# themselves once a second in another process. For each binary in turn (default: this
# tree's release build), ROUNDS times (2): over a fresh copy of loadtest/read_cost.sh's
# data set (10,000 users, max-follows 200, 20 posts each, `cache`, auth.mode = token),
# server A (the workers, so it holds every lease) and server B (`workers.enabled =
# false`) on the same file; B creates `loner` (no follower, no post, so on no page); every
# 5th user's page 1 is read twice through A (the cache built, the page kept); then wrk
# (2 threads, 32 connections, DUR seconds, default 10) reads those pages through A while
# `loner` renames through B once a second. Prints per arm the renames made and the share
# of wrk's reads A served as kept pages (`socialite_page_memo_hits_total`, over the run).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source scripts/lib/listening.sh
rounds=2
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then rounds="$1"; shift; fi
if (( $# == 0 )); then
  cargo build --release --locked --quiet
  set -- "this=$root/target/release/socialite"
fi
command -v wrk > /dev/null || { echo "wrk is needed (apt-get install wrk)" >&2; exit 1; }
dir="$root/target/rename-stall"
mkdir -p "$dir"
export SOCIALITE_AUTH__MODE=token SOCIALITE_FEED__STRATEGY=cache
export SOCIALITE_RATE__IP_PER_MIN=100000000 SOCIALITE_RATE__READS_PER_MIN=100000000
export SOCIALITE_RATE__WRITES_PER_MIN=100000000
if [[ ! -f "$dir/seed.db" || ! -f "$dir/users" ]]; then
  rm -f "$dir"/seed.db*
  SOCIALITE_STORAGE__PATH="$dir/seed.db" NO_COLOR=1 "${1#*=}" seed --users 10000 \
    --max-follows 200 --posts-per-user 20 --seed 42 --tokens-out "$dir/tokens.json" > /dev/null
  python3 - "$dir/tokens.json" "$dir/users" <<'PY'
import json, sys
tokens = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as out:
    for i in range(0, len(tokens), 5):
        out.write(f"u{i} {tokens[i]}\n")
PY
fi
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT
start() { # LOG [VAR=VALUE ...]: starts a server on run.db, prints its base URL; LOG.pid
  local log="$1"; shift
  env SOCIALITE_STORAGE__PATH="$dir/run.db" RUST_LOG=warn,socialite=info NO_COLOR=1 "$@" \
    "$bin" serve --listen 127.0.0.1:0 > "$log" 2>&1 &
  echo $! > "$log.pid"
  await_listening "$log" "$!" || exit 1
}
hits() { curl -fsS "$1/metrics" | awk '/^socialite_page_memo_hits_total / {print $2}'; }
for round in $(seq 1 "$rounds"); do
  for spec in "$@"; do
    name="${spec%%=*}" bin="${spec#*=}"
    rm -f "$dir"/run.db*
    cp "$dir/seed.db" "$dir/run.db"
    a="$(start "$dir/a.log")"
    pids+=("$(cat "$dir/a.log.pid")")
    b="$(start "$dir/b.log" SOCIALITE_WORKERS__ENABLED=false)"
    pids+=("$(cat "$dir/b.log.pid")")
    python3 - "$a" "$dir/users" <<'PY'
import sys, urllib.request
for line in open(sys.argv[2]):
    user, token = line.split()
    request = urllib.request.Request(f"{sys.argv[1]}/v1/users/{user}/timeline?limit=20",
                                     headers={"Authorization": "Bearer " + token})
    for _ in range(2):  # builds the cache, then keeps the rendered page
        urllib.request.urlopen(request).read()
PY
    h0="$(hits "$a")"
    python3 - "$b" "${DUR:-10}" > "$dir/renames.txt" <<'PY' &
import json, sys, time, urllib.request
base, seconds = sys.argv[1], float(sys.argv[2])
def call(method, path, body, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    request = urllib.request.Request(base + path, json.dumps(body).encode(), headers,
                                     method=method)
    return json.load(urllib.request.urlopen(request))
token = call("POST", "/v1/users", {"id": "loner"})["token"]
end, n = time.monotonic() + seconds, 0
while time.monotonic() < end:
    n += 1
    call("PATCH", "/v1/users/loner", {"display_name": f"Loner {n}"}, token)
    time.sleep(1)
print(n)
PY
    renamer=$!
    wrk -t2 -c32 -d"${DUR:-10}s" -s loadtest/scale_wrk.lua "$a" -- read "$dir/users" > "$dir/read.txt"
    wait "$renamer"
    h1="$(hits "$a")"
    python3 - "$name" "$round" "$dir/read.txt" "${h0:-0}" "${h1:-0}" "$(cat "$dir/renames.txt")" <<'PY'
import json, sys
name, round_, read, h0, h1, renames = sys.argv[1:7]
j = json.loads(next(l for l in open(read) if l.startswith("{")))
kept = (float(h1) - float(h0)) / j["requests"]
print(f"{name:>10} round {round_}: {j['requests']} reads, non-2xx {j['non2xx']}, "
      f"{renames} renames of an unrelated user in the other process, kept {kept:.1%}",
      flush=True)
PY
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    pids=()
  done
done
