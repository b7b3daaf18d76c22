#!/usr/bin/env bash
# Usage: [VIEW=v1|mastodon] [STRATEGY=cache|hybrid] [THRESHOLD=N] [HIDDEN=N] [ENCODING=gzip] loadtest/read_cost.sh [ROUNDS] [NAME=BINARY ...]
# What a warm timeline read costs the server, for comparing builds on a noisy machine:
# for each binary in turn (default: this tree's release build), ROUNDS times (2), a
# server over a fresh copy of one seeded data set (10,000 users, max-follows 200, 20
# posts each, STRATEGY (default `cache`; with `hybrid`, `feed.hybrid_threshold` =
# THRESHOLD, default 1000, which makes the 30 or so largest accounts celebrities that
# most readers follow), auth.mode = token, rate limits out of reach), every 5th user's
# timeline read twice (the cache built, the page kept), then wrk (2 threads, 32
# connections, DUR seconds, default 10) on `/healthz` and on page 1 of those users'
# timelines. Prints per arm the throughput and the server's CPU time (user + system,
# from /proc) per request served (the CPU figure moves with the code, the throughput as
# much with the machine), and the share of reads served as kept pages
# (`socialite_page_memo_hits_total`). With VIEW=mastodon the reads (warm-up and wrk)
# are the same users' Mastodon home timeline, `/api/v1/timelines/home?limit=20`, and
# the kept share is `socialite_masto_page_hits_total`'s. With HIDDEN=N, every reader hides N accounts
# before the reads: N/2 blocks of accounts they do not follow and N/2 mutes, a tenth of
# those of accounts they follow (so that pages lose entries to the filter), written
# into the seeded file directly, as a load of blocks and mutes would (where one
# collides with a block or mute the seed made itself, the seed's stands). With
# ENCODING=E, every request (warm-up, /healthz and reads) says `Accept-Encoding: E`, as
# browsers and the clients' HTTP libraries do (`gzip, deflate, br` is typical).
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
strategy="${STRATEGY:-cache}"
view="${VIEW:-v1}"
case "$view" in
  v1) read_mode=read kept_metric=socialite_page_memo_hits_total ;;
  mastodon) read_mode=masto kept_metric=socialite_masto_page_hits_total ;;
  *) echo "read_cost: VIEW must be v1 or mastodon, got $view" >&2; exit 1 ;;
esac
dir="$root/target/read-cost/$strategy"
mkdir -p "$dir"
export SOCIALITE_AUTH__MODE=token SOCIALITE_FEED__STRATEGY="$strategy"
if [[ "$strategy" == hybrid ]]; then
  export SOCIALITE_FEED__HYBRID_THRESHOLD="${THRESHOLD:-1000}"
  dir="$dir/$SOCIALITE_FEED__HYBRID_THRESHOLD"
  mkdir -p "$dir"
fi
if [[ -n "${HIDDEN:-}" ]]; then
  dir="$dir/hidden-$HIDDEN"
  mkdir -p "$dir"
fi
export SOCIALITE_RATE__IP_PER_MIN=100000000 SOCIALITE_RATE__READS_PER_MIN=100000000
export SOCIALITE_RATE__WRITES_PER_MIN=100000000
export ACCEPT_ENCODING="${ENCODING:-}"
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
  if [[ -n "${HIDDEN:-}" ]]; then
    python3 - "$dir/seed.db" "$dir/users" "$HIDDEN" <<'PY'
import random, sqlite3, sys
db, users, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
con = sqlite3.connect(db)
everyone = [r[0] for r in con.execute("SELECT id FROM users")]
rng = random.Random(42)
for line in open(users):
    reader = line.split()[0]
    follows = [r[0] for r in con.execute("SELECT followee FROM follows WHERE follower = ?", (reader,))]
    muted = set(rng.sample(follows, min(len(follows), -(-n // 20))))
    blocked = set()
    followed = set(follows)
    while len(muted) < n // 2 or len(blocked) < n - n // 2:
        other = rng.choice(everyone)
        if other == reader or other in followed or other in muted or other in blocked:
            continue
        (muted if len(muted) < n // 2 else blocked).add(other)
    con.executemany("INSERT OR IGNORE INTO mutes (user, other, created_ms, notifications, until_ms) "
                    "VALUES (?, ?, 0, 1, NULL)", [(reader, o) for o in muted])
    con.executemany("INSERT OR IGNORE INTO blocks (user, other, created_ms) VALUES (?, ?, 0)",
                    [(reader, o) for o in blocked])
con.commit()
PY
  fi
fi
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true' EXIT
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
for round in $(seq 1 "$rounds"); do
  for spec in "$@"; do
    name="${spec%%=*}" bin="${spec#*=}"
    rm -f "$dir"/run.db*
    cp "$dir/seed.db" "$dir/run.db"
    SOCIALITE_STORAGE__PATH="$dir/run.db" RUST_LOG=warn,socialite=info NO_COLOR=1 \
      "$bin" serve --listen 127.0.0.1:0 > "$dir/server.log" 2>&1 &
    pid=$!
    base="$(await_listening "$dir/server.log" "$pid")"
    python3 - "$base" "$dir/users" "$view" "${ENCODING:-}" <<'PY'
import sys, urllib.request
for line in open(sys.argv[2]):
    user, token = line.split()
    path = {"v1": f"/v1/users/{user}/timeline?limit=20",
            "mastodon": "/api/v1/timelines/home?limit=20"}[sys.argv[3]]
    headers = {"Authorization": "Bearer " + token}
    if sys.argv[4]:
        headers["Accept-Encoding"] = sys.argv[4]
    request = urllib.request.Request(f"{sys.argv[1]}{path}", headers=headers)
    for _ in range(2):  # builds the cache, then keeps the rendered page
        urllib.request.urlopen(request).read()
PY
    c0="$(cpu_ticks)"
    wrk -t2 -c32 -d"${DUR:-10}s" -s loadtest/scale_wrk.lua "$base" -- healthz > "$dir/healthz.txt"
    c1="$(cpu_ticks)"
    wrk -t2 -c32 -d"${DUR:-10}s" -s loadtest/scale_wrk.lua "$base" -- "$read_mode" "$dir/users" > "$dir/read.txt"
    c2="$(cpu_ticks)"
    kept="$( (curl -fsS "$base/metrics" || true) | awk -v m="$kept_metric" '$1 == m {print $2}')"
    python3 - "$name" "$round" "$dir/healthz.txt" "$dir/read.txt" "$c0" "$c1" "$c2" "$(getconf CLK_TCK)" "${kept:-0}" <<'PY'
import json, sys
name, round_, healthz, read = sys.argv[1:5]
c0, c1, c2, tick = map(int, sys.argv[5:9])
kept = float(sys.argv[9])
def arm(path):
    line = next(l for l in open(path) if l.startswith("{"))
    j = json.loads(line)
    return j["requests"], j["requests"] / j["duration_us"] * 1e6, j["p99_us"] / 1000, j["non2xx"]
h, r = arm(healthz), arm(read)
h_us = (c1 - c0) / tick * 1e6 / h[0]
r_us = (c2 - c1) / tick * 1e6 / r[0]
print(f"{name:>10} round {round_}: /healthz {h[1]:7.0f}/s {h_us:5.1f} us CPU each | "
      f"reads {r[1]:7.0f}/s {r_us:5.1f} us CPU each, p99 {r[2]:.2f} ms, non-2xx {r[3]}, "
      f"kept {kept / r[0]:.0%} | reads/healthz {r[1] / h[1]:.3f}", flush=True)
PY
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  done
done
