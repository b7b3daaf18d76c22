#!/usr/bin/env bash
# The saving of dropping idle caches (`feed.cache_idle`), on the embedded store:
# `socialite seed --users USERS --max-follows 200 --posts-per-user 20 --seed 42`, a
# release server on it with `feed.cache_idle = 0s`; CACHES readers (every
# USERS/CACHES-th user, and the largest account's polled followers) read once, which
# builds their caches; the largest account's post-to-timeline lag (`scale_probe.py
# lag`, LAG_POSTS posts) and the file's size. Then the server is stopped, IDLE of
# those caches are made idle by moving their `last_read` back 8 days in the file (what
# a week without reads leaves; the clock cannot be moved in a release server), and a
# server with the default `feed.cache_idle = 7d` drops them at its timelines worker's
# first step; the lag and size again. Usage: loadtest/idle_caches.sh [USERS CACHES IDLE]
set -euo pipefail
users=${1:-100000} caches=${2:-20000} idle=${3:-18000}
lag_posts=${LAG_POSTS:-5}
cd "$(dirname "$0")/.."
source scripts/lib/listening.sh
bin=target/release/socialite
out=target/idle-caches
rm -rf "$out" && mkdir -p "$out"
db="$out/store.db" tokens="$out/tokens.json"
export SOCIALITE_STORAGE__PATH="$db" SOCIALITE_AUTH__MODE=token SOCIALITE_RATE__WRITES_PER_MIN=100000000 \
  SOCIALITE_RATE__READS_PER_MIN=100000000 SOCIALITE_RATE__IP_PER_MIN=100000000
start=$(date +%s)
nice "$bin" seed --users "$users" --max-follows 200 --posts-per-user 20 --seed 42 \
  --tokens-out "$tokens" > "$out/seed.log" 2>&1
echo "seeded $users users in $(( $(date +%s) - start )) s"
python3 loadtest/scale_probe.py graph "$db" "$tokens" "$out" 1 > /dev/null

serve() { # cache_idle: a release server on port 0; sets pid and base
  SOCIALITE_FEED__CACHE_IDLE="$1" "$bin" serve --listen 127.0.0.1:0 > "$out/serve-$1.log" 2>&1 &
  pid=$!
  base="$(await_listening "$out/serve-$1.log" "$pid")" || exit 1
}
stop() { kill "$pid"; wait "$pid" || true; }
size() { # label
  python3 - "$db" "$1" <<'PY'
import os, sqlite3, sys
db, label = sys.argv[1:3]
con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
page = con.execute("PRAGMA page_size").fetchone()[0]
pages = con.execute("PRAGMA page_count").fetchone()[0]
free = con.execute("PRAGMA freelist_count").fetchone()[0]
caches = con.execute("SELECT count(*) FROM caches").fetchone()[0]
entries = con.execute("SELECT count(*) FROM cache_entries").fetchone()[0]
print(f"{label}: caches {caches}, cache entries {entries}, file {os.path.getsize(db)/1e9:.3f} GB, "
      f"in use {(pages-free)*page/1e9:.3f} GB, free {free*page/1e9:.3f} GB")
PY
}
lag() { # label
  python3 loadtest/scale_probe.py lag "$base" "$tokens" "$out/graph.json" largest \
    "$lag_posts" 60 > "$out/lag-$1.json"
  python3 - "$out/lag-$1.json" "$1" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]}: largest account {r['author']} ({r['followers']} followers): post-to-timeline lag "
      f"p50 {statistics.median(r['lag_ms']):.0f} ms, max {max(r['lag_ms']):.0f} ms, lost {r['lost']}")
PY
}

serve 0s
# The readers: every USERS/CACHES-th user, plus the followers the lag probe polls.
python3 - "$tokens" "$users" "$caches" "$out/graph.json" "$out/readers.txt" "$base" <<'PY'
import concurrent.futures, http.client, json, sys, urllib.parse
tokens, users, caches = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
port = urllib.parse.urlsplit(sys.argv[6]).port
poll = json.load(open(sys.argv[4]))["largest"]["poll"]
step = users // caches
readers = [f"u{i}" for i in range(0, users, step)][: caches - len(poll)]
readers = list(dict.fromkeys(poll + readers))
open(sys.argv[5], "w").write("\n".join(readers))
def read(chunk):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for u in chunk:
        c.request("GET", f"/v1/users/{u}/timeline?limit=20",
                  headers={"Authorization": f"Bearer {tokens[int(u[1:])]}"})
        r = c.getresponse(); r.read()
        assert r.status == 200, r.status
with concurrent.futures.ThreadPoolExecutor(8) as pool:
    list(pool.map(read, [readers[i::8] for i in range(8)]))
print(f"built {len(readers)} caches")
PY
lag before
stop
size before

# IDLE of them idle for 8 days: the readers after the polled followers, from the end.
python3 - "$db" "$out/readers.txt" "$idle" <<'PY'
import sqlite3, sys, time
readers = open(sys.argv[2]).read().split()
idle = readers[-int(sys.argv[3]):]
con = sqlite3.connect(sys.argv[1])
week = int(time.time() * 1000) - 8 * 86_400_000
con.executemany("UPDATE caches SET last_read = ? WHERE user = ?", [(week, u) for u in idle])
con.commit()
print(f"made {len(idle)} caches idle")
PY
start=$(date +%s%N)
serve 7d
for _ in $(seq 600); do
  left=$(python3 -c "import sqlite3,sys; print(sqlite3.connect('file:$db?mode=ro', uri=True).execute('SELECT count(*) FROM caches').fetchone()[0])")
  [ "$left" -le $(( caches - idle )) ] && break; sleep 0.1
done
echo "dropped down to $left caches in $(( ($(date +%s%N) - start) / 1000000 )) ms after start"
lag after
stop
size after
