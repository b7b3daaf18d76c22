# Sourced by the scripts that measure against a seeded data set (auth_overhead.sh,
# read_ceiling.sh, sse_latency.sh): the data set with tokens, kept in
# target/loadtest-seed/, and release servers on port 0 over copies of it. Expects $root
# (the working directory) and $strategy; sets $k6, $bin (built, in $CARGO_TARGET_DIR when
# set), $seeded, $tokens_file,
# $users and $work (OUT, kept, or a
# temporary directory removed on exit). Processes added to $pids are stopped on exit.
source scripts/lib/listening.sh
k6="${K6:-$(loadtest/install-k6.sh)}"
cargo build --release --locked --quiet
bin="${CARGO_TARGET_DIR:-$root/target}/release/socialite"
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
if [[ -n "${OUT:-}" ]]; then
  work="$OUT" keep_work=1
  mkdir -p "$work"
else
  work="$(mktemp -d)" keep_work=0
fi
pids=()
base="" server_pid=""
stop_all() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap 'stop_all; if (( ! keep_work )); then rm -rf "$work"; fi' EXIT

# serve MODE NAME: serves a fresh copy of the data set ($work/db-NAME, log in
# $work/server-NAME.log) with auth.mode = MODE and the per-address limit raised (all
# load comes from one address) but still checked; other settings come from the
# caller's environment. Sets $base and $server_pid; the server runs until exit.
serve() {
  local mode="$1" name="$2" log="$work/server-$2.log"
  cp "$seeded" "$work/db-$name"
  SOCIALITE_FEED__STRATEGY="$strategy" SOCIALITE_AUTH__MODE="$mode" \
    SOCIALITE_RATE__IP_PER_MIN=100000000 SOCIALITE_STORAGE__PATH="$work/db-$name" \
    RUST_LOG=warn,socialite=info NO_COLOR=1 "$bin" serve --listen 127.0.0.1:0 > "$log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  base="$(await_listening "$log" "$server_pid")" || exit 1
}

# start_server MODE NAME: serve, then warm every cache (k6 sends the seeded tokens
# whatever the mode).
start_server() {
  serve "$1" "$2"
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
