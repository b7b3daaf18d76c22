# Sourced by the ratio scripts (auth_overhead.sh, read_ceiling.sh): a seeded data set
# with tokens, kept in target/loadtest-seed/, and release servers on port 0 over copies
# of it. Expects $root, $bin and $strategy; sets $seeded, $tokens_file, $users, $base.
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
server_pids=()
base=""
stop_servers() {
  for pid in "${server_pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  server_pids=()
}
trap 'stop_servers; rm -rf "$work"' EXIT

# start_server MODE NAME: serves a fresh copy of the data set with auth.mode = MODE,
# the per-address limit raised (all load comes from one address) but still checked,
# then warms every cache; sets $base to its address. Servers keep running until
# stop_servers (or the script's exit). k6 sends the seeded tokens whatever the mode.
start_server() {
  local mode="$1" name="$2" log="$work/server-$2.log"
  cp "$seeded" "$work/db-$name"
  SOCIALITE_FEED__STRATEGY="$strategy" SOCIALITE_AUTH__MODE="$mode" \
    SOCIALITE_RATE__IP_PER_MIN=100000000 SOCIALITE_STORAGE__PATH="$work/db-$name" \
    RUST_LOG=warn,socialite=info NO_COLOR=1 "$bin" serve --listen 127.0.0.1:0 > "$log" 2>&1 &
  server_pids+=($!)
  base=""
  for _ in $(seq 1 300); do
    base="$(grep -o 'listening on http://[0-9.:]*' "$log" | head -1 | sed 's/listening on //')" || true
    [[ -n "$base" ]] && break
    sleep 0.1
  done
  [[ -n "$base" ]] || { cat "$log" >&2; exit 1; }
  BASE_URL="$base" USERS="$users" TOKENS_FILE="$tokens_file" \
    "$k6" run --quiet --no-color loadtest/warm.js >/dev/null
}

# ceiling URL OP NAME: closed-loop ceiling.js (VUS at once, DURATION) against the server
# at URL; prints "req/s errors".
ceiling() {
  BASE_URL="$1" USERS="$users" TOKENS_FILE="$tokens_file" OP="$2" VUS="${VUS:-32}" DURATION="${DURATION:-10s}" "$k6" run --quiet --no-color \
    --summary-export "$work/$3.json" loadtest/ceiling.js >/dev/null
  python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["metrics"]; print(m["http_reqs"]["rate"], m.get("op_errors", {}).get("value", 0))' "$work/$3.json"
}
