#!/usr/bin/env bash
# socialite beside GoToSocial v0.19.2, both on SQLite on this machine, on the same data
# and the same Mastodon API requests (loadtest/gts_data.py): a reader following 1,000
# authors with 3 posts each, a poster with 100 followers, authentication on for both,
# rate limits off for both (all load comes from one address).
#
#   [ROUNDS=3] [DUR=10] [VUS=32] [AUTHORS=1000] [FOLLOWERS=100] [SETTLE=0]
#   [SOCIALITE_BIN=...] [SOCIALITE_BEFORE_BIN=...] loadtest/gts_compare.sh
#
# Measures, under wrk, in alternating rounds (which server goes first alternates too):
# GET /api/v1/timelines/home (default page, 20) throughput and p99; then POST
# /api/v1/statuses by the poster at 4 connections, p50 and p99; the RSS of each server
# after; and the bytes of one home page. Writes loadtest/results/gts-DATE.md. Data and
# logs in target/gts-compare/ (removed first). Minutes, mostly GoToSocial's account
# creation and sign-ins: not run in CI. With SOCIALITE_BEFORE_BIN, a second socialite
# (that binary, its own file, the same data) reads in every round too, as "before":
# two builds beside one GoToSocial set-up (its accounts take the longest). SETTLE:
# seconds to wait, both servers idle, between loading the data and the first round, so
# that neither is measured while still working through the load.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source scripts/lib/listening.sh
rounds="${ROUNDS:-3}" dur="${DUR:-10}" vus="${VUS:-32}"
work="$root/target/gts-compare"
rm -rf "$work"
mkdir -p "$work" loadtest/results
command -v wrk >/dev/null || { echo "gts_compare: wrk is needed (apt-get install wrk)" >&2; exit 1; }

gts_dir="$(loadtest/install-gotosocial.sh)"
# SOCIALITE_BIN: a socialite binary to measure instead of this tree's release build.
if [[ -n "${SOCIALITE_BIN:-}" ]]; then
  bin="$SOCIALITE_BIN"
else
  cargo build --release --locked --quiet
  bin="${CARGO_TARGET_DIR:-$root/target}/release/socialite"
fi

pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# socialite: the embedded default store, token authentication, limits off.
SOCIALITE_STORAGE__PATH="$work/socialite.db" SOCIALITE_AUTH__MODE=token \
  SOCIALITE_RATE__IP_PER_MIN=0 SOCIALITE_RATE__WRITES_PER_MIN=0 SOCIALITE_RATE__READS_PER_MIN=0 \
  RUST_LOG=warn,socialite=info NO_COLOR=1 "$bin" serve --listen 127.0.0.1:0 > "$work/socialite.log" 2>&1 &
s_pid=$!
pids+=("$s_pid")
s_base="$(await_listening "$work/socialite.log" "$s_pid")"
b_base=""
if [[ -n "${SOCIALITE_BEFORE_BIN:-}" ]]; then
  SOCIALITE_STORAGE__PATH="$work/before.db" SOCIALITE_AUTH__MODE=token \
    SOCIALITE_RATE__IP_PER_MIN=0 SOCIALITE_RATE__WRITES_PER_MIN=0 SOCIALITE_RATE__READS_PER_MIN=0 \
    RUST_LOG=warn,socialite=info NO_COLOR=1 "$SOCIALITE_BEFORE_BIN" serve --listen 127.0.0.1:0 \
    > "$work/before.log" 2>&1 &
  b_pid=$!
  pids+=("$b_pid")
  b_base="$(await_listening "$work/before.log" "$b_pid")"
fi

# GoToSocial: SQLite (WAL), plain HTTP on this machine, rate limits and throttling off.
g_port="$(free_port)"
password="Compare-Password-1!"
cat > "$work/gts.yaml" <<YAML
host: "127.0.0.1:$g_port"
protocol: "http"
bind-address: "127.0.0.1"
port: $g_port
db-type: "sqlite"
db-address: "$work/gts.db"
storage-local-base-path: "$work/gts-storage"
web-template-base-dir: "$gts_dir/web/template/"
web-asset-base-dir: "$gts_dir/web/assets/"
log-level: "warn"
accounts-registration-open: false
advanced-rate-limit-requests: 0
advanced-throttling-multiplier: 0
letsencrypt-enabled: false
YAML
gts=("$gts_dir/bin/gotosocial" --config-path "$work/gts.yaml")
g_base="http://127.0.0.1:$g_port"
# start_gts: serves GoToSocial in the background until it answers; sets $g_pid.
start_gts() {
  "${gts[@]}" server start >> "$work/gts.log" 2>&1 &
  g_pid=$!
  pids+=("$g_pid")
  for ((i = 0; i < 600; i++)); do
    curl -fs "$g_base/api/v1/instance" >/dev/null 2>&1 && return 0
    kill -0 "$g_pid" 2>/dev/null || { tail -20 "$work/gts.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "gts_compare: GoToSocial did not answer" >&2
  exit 1
}
# Its admin command creates accounts only once the server has run (and made its own
# application), and while it is stopped.
start_gts
kill "$g_pid" && wait "$g_pid" 2>/dev/null || true
names=(r0 p0)
for ((i = 0; i < ${AUTHORS:-1000}; i++)); do names+=("a$i"); done
for ((i = 0; i < ${FOLLOWERS:-100}; i++)); do names+=("f$i"); done
echo "gts_compare: creating ${#names[@]} GoToSocial accounts with its admin command" >&2
start=$SECONDS
printf '%s\n' "${names[@]}" | xargs -P "${GTS_CREATE_JOBS:-4}" -I{} \
  "${gts[@]}" admin account create --username {} --email {}@example.org \
  --password "$password" >> "$work/gts-admin.log" 2>&1
gts_accounts_s=$((SECONDS - start))
start_gts

echo "gts_compare: the same data through the Mastodon API on both" >&2
python3 loadtest/gts_data.py socialite "$s_base" > "$work/socialite-data.json"
[[ -n "$b_base" ]] && python3 loadtest/gts_data.py socialite "$b_base" > "$work/before-data.json"
python3 loadtest/gts_data.py gotosocial "$g_base" "$password" > "$work/gts-data.json"
token() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

cat > "$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, "status=load+post+" .. n .. "+%23compare&visibility=public")
end
LUA

# wrk_run NAME URL TOKEN CONNS SECONDS [SCRIPT]: prints "req/s p50_ms p99_ms".
wrk_run() {
  local out="$work/wrk-$1.txt"
  local extra=()
  [[ -n "${6:-}" ]] && extra=(-s "$6")
  # GoToSocial refuses a request without a User-Agent; both get the same one.
  wrk -t2 -c"$4" -d"$5"s --latency -H "Authorization: Bearer $3" -H "User-Agent: wrk" \
    "${extra[@]}" "$2" > "$out"
  python3 - "$out" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def ms(v, unit):
    return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
rate = re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)
lat = dict((p, ms(v, u)) for p, v, u in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", text, re.M))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
print(rate, lat.get("50", 0), lat.get("99", 0), errors.group(1) if errors else 0)
PY
}

s_reader="$(token "$work/socialite-data.json" reader)" g_reader="$(token "$work/gts-data.json" reader)"
s_poster="$(token "$work/socialite-data.json" poster)" g_poster="$(token "$work/gts-data.json" poster)"
home="/api/v1/timelines/home"
# Warm both: a few pages each.
for _ in 1 2 3; do
  curl -fs -A wrk -H "Authorization: Bearer $s_reader" "$s_base$home" > "$work/socialite-page.json"
  curl -fs -A wrk -H "Authorization: Bearer $g_reader" "$g_base$home" > "$work/gts-page.json"
done
if [[ -n "$b_base" ]]; then
  b_reader="$(token "$work/before-data.json" reader)"
  for _ in 1 2 3; do
    curl -fs -A wrk -H "Authorization: Bearer $b_reader" "$b_base$home" > /dev/null
  done
fi
s_bytes="$(wc -c < "$work/socialite-page.json")" g_bytes="$(wc -c < "$work/gts-page.json")"
s_items="$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$work/socialite-page.json")"
g_items="$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$work/gts-page.json")"

if (( ${SETTLE:-0} > 0 )); then
  echo "gts_compare: both servers idle for ${SETTLE} s before the rounds" >&2
  sleep "$SETTLE"
fi
rows=()
for ((r = 1; r <= rounds; r++)); do
  order=(socialite gotosocial)
  (( r % 2 == 0 )) && order=(gotosocial socialite)
  [[ -n "$b_base" ]] && order+=(before)
  for who in "${order[@]}"; do
    if [[ "$who" == socialite ]]; then
      rows+=("read $r socialite $(wrk_run "read-s-$r" "$s_base$home" "$s_reader" "$vus" "$dur")")
    elif [[ "$who" == before ]]; then
      rows+=("read $r before $(wrk_run "read-b-$r" "$b_base$home" "$b_reader" "$vus" "$dur")")
    else
      rows+=("read $r gotosocial $(wrk_run "read-g-$r" "$g_base$home" "$g_reader" "$vus" "$dur")")
    fi
  done
done
for ((r = 1; r <= rounds; r++)); do
  order=(socialite gotosocial)
  (( r % 2 == 0 )) && order=(gotosocial socialite)
  for who in "${order[@]}"; do
    if [[ "$who" == socialite ]]; then
      rows+=("post $r socialite $(wrk_run "post-s-$r" "$s_base/api/v1/statuses" "$s_poster" 4 5 "$work/post.lua")")
    else
      rows+=("post $r gotosocial $(wrk_run "post-g-$r" "$g_base/api/v1/statuses" "$g_poster" 4 5 "$work/post.lua")")
    fi
  done
done
s_rss="$(ps -o rss= -p "$s_pid" | tr -d ' ')" g_rss="$(ps -o rss= -p "$g_pid" | tr -d ' ')"

report="loadtest/results/gts-$(date -u +%Y-%m-%d).md"
python3 - "$report" "$rounds" "$s_bytes" "$g_bytes" "$s_items" "$g_items" "$s_rss" "$g_rss" \
  "$gts_accounts_s" "$work/socialite-data.json" "$work/gts-data.json" "${rows[@]}" <<'PY'
import json, os, statistics, subprocess, sys
authors = int(os.environ.get("AUTHORS", "1000"))
followers = int(os.environ.get("FOLLOWERS", "100"))
(report, rounds, s_bytes, g_bytes, s_items, g_items, s_rss, g_rss, gts_accounts_s,
 s_data, g_data, *rows) = sys.argv[1:]
table = {}
for row in rows:
    op, r, who, rate, p50, p99, errors = row.split()
    table.setdefault((op, who), []).append((float(rate), float(p50), float(p99), int(errors)))
def med(op, who, i):
    return statistics.median(v[i] for v in table[(op, who)])
load = open("/proc/loadavg").read().split()[:3]
lines = [
    f"# socialite beside GoToSocial v0.19.2, {subprocess.check_output(['date', '-u', '+%Y-%m-%d %H:%M UTC']).decode().strip()}",
    "",
    f"`loadtest/gts_compare.sh` (ROUNDS={rounds}, SETTLE={os.environ.get('SETTLE', '0')}), load average at the end {' '.join(load)}. "
    f"Same data through the Mastodon API on both (a reader following {authors:,} authors "
    f"with 3 posts each, a poster with {followers:,} followers), SQLite on both, "
    "authentication on, rate limits off. Medians of the rounds; each round's figures below.",
    "",
    "| | socialite | GoToSocial | ratio |",
    "|---|---|---|---|",
]
sr, gr = med("read", "socialite", 0), med("read", "gotosocial", 0)
lines.append(f"| home timeline, req/s | {sr:.0f} | {gr:.0f} | {sr / gr:.1f}× |")
if ("read", "before") in table:
    br = med("read", "before", 0)
    lines.append(f"| home timeline, req/s, SOCIALITE_BEFORE_BIN | {br:.0f} | {gr:.0f} | {br / gr:.1f}× |")
sp, gp = med("read", "socialite", 2), med("read", "gotosocial", 2)
lines.append(f"| home timeline, p99 ms | {sp:.2f} | {gp:.2f} | {sp / gp:.2f}× |")
for q, i in (("p50", 1), ("p99", 2)):
    s, g = med("post", "socialite", i), med("post", "gotosocial", i)
    lines.append(f"| POST /api/v1/statuses, {q} ms | {s:.2f} | {g:.2f} | {s / g:.2f}× |")
lines.append(f"| RSS after, MiB | {int(s_rss) / 1024:.0f} | {int(g_rss) / 1024:.0f} | {int(s_rss) / int(g_rss):.2f}× |")
lines.append(f"| bytes per home page ({s_items} / {g_items} statuses) | {s_bytes} | {g_bytes} | {int(s_bytes) / int(g_bytes):.2f}× |")
lines += ["", "| op | round | server | req/s | p50 ms | p99 ms | non-2xx |", "|---|---|---|---|---|---|---|"]
for row in rows:
    lines.append("| " + " | ".join(row.split()) + " |")
took_s = json.load(open(s_data))["took_s"]
took_g = json.load(open(g_data))["took_s"]
lines += ["", f"Loading, seconds: socialite {took_s}; GoToSocial {took_g}, after {gts_accounts_s} s of `admin account create`."]
open(report, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
