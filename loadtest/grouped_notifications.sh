#!/usr/bin/env bash
# Usage: [LIKES=100000] [DUR=10] [STRATEGY=cache] loadtest/grouped_notifications.sh
# The grouped notifications page of a post with LIKES likes against the plain page, as
# p99 under wrk. Seeds LIKES + 1 users with tokens and nothing else (common.sh, kept in
# target/loadtest-seed/), serves a copy with the rate limits out of reach, has u0 post
# once through the API and u1..u{LIKES} like it through the API (loadtest/likes.js, k6),
# so that the notifications worker builds the notifications as it does in use, waits until the
# notifications worker has applied every change (`/v1/workers`), checks that the
# grouped page holds one group of LIKES likes and the plain page a full page of likes,
# then runs wrk (2 threads, 16 connections, DUR seconds) on page 1 (limit 20) of u0's
# notifications, plain, then grouped, then `/healthz`, and prints each arm's
# throughput, p50 and p99, and grouped p99 / plain p99.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
command -v wrk > /dev/null || { echo "wrk is needed (apt-get install wrk)" >&2; exit 1; }
strategy="${STRATEGY:-cache}"
likes="${LIKES:-100000}"
export SEED_USERS=$((likes + 1)) SEED_MAX_FOLLOWS=0 SEED_POSTS=0
export SOCIALITE_RATE__READS_PER_MIN=100000000 SOCIALITE_RATE__WRITES_PER_MIN=100000000
source loadtest/common.sh
serve token grouped
token0="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0])' "$tokens_file")"
post="$(curl -fsS -X POST -H "Authorization: Bearer $token0" -H 'content-type: application/json' \
  -d '{"text":"like this"}' "$base/v1/users/u0/posts" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')"
echo "u0 posted $post; $likes users like it" >&2
start=$(date +%s)
BASE_URL="$base" USERS="$SEED_USERS" TOKENS_FILE="$tokens_file" POST_ID="$post" LIKES="$likes" \
  "$k6" run --quiet --no-color loadtest/likes.js
echo "likes sent in $(( $(date +%s) - start )) s; waiting for the notifications worker" >&2
while true; do
  waiting="$(curl -fsS "$base/v1/workers" | python3 -c '
import json, sys
w = next(w for w in json.load(sys.stdin)["workers"] if w["name"] == "notifications")
print(w["lag_changes"] if w["held_here"] else -1)')"
  [[ "$waiting" == 0 ]] && break
  sleep 2
done
echo "notifications applied $(( $(date +%s) - start )) s after the first like" >&2
plain="/v1/users/u0/notifications?limit=20"
grouped="/v1/users/u0/notifications?limit=20&grouped=true"
python3 - "$base" "$token0" "$plain" "$grouped" "$post" "$likes" <<'PY'
import json, sys, urllib.request
base, token, plain, grouped, post, likes = sys.argv[1:]
def get(path):
    request = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + token})
    return json.load(urllib.request.urlopen(request))
page = get(plain)
assert len(page["items"]) == 20 and all(i["type"] == "like" for i in page["items"]), page
groups = get(grouped)["groups"]
assert len(groups) == 1 and groups[0]["post_id"] == post, groups
assert groups[0]["count"] == int(likes), f"the group counts {groups[0]['count']} likes, not {likes}"
PY
arm() {
  wrk -t2 -c16 -d"${DUR:-10}s" -s loadtest/scale_wrk.lua "$base" -- "$@" > "$work/wrk.txt"
  grep '^{' "$work/wrk.txt"
}
p="$(arm get "$plain" "$token0")"
g="$(arm get "$grouped" "$token0")"
h="$(arm healthz)"
python3 - "$p" "$g" "$h" <<'PY'
import json, sys
arms = {name: json.loads(line) for name, line in zip(["plain", "grouped", "healthz"], sys.argv[1:])}
for name, a in arms.items():
    rate = a["requests"] / a["duration_us"] * 1e6
    print(f"{name:>8}: {rate:7.0f}/s p50 {a['p50_us'] / 1000:6.2f} ms p99 {a['p99_us'] / 1000:6.2f} ms "
          f"non-2xx {a['non2xx']} socket errors {a['socket_errors']}")
print(f"grouped p99 / plain p99: {arms['grouped']['p99_us'] / arms['plain']['p99_us']:.2f}")
PY
