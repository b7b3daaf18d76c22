# Sourced by the scripts that start a socialite server on port 0 (loadtest/*.sh,
# scripts/fuzz.sh).
#
# await_listening LOG PID [SECONDS]: waits until the server PID, started in the
# background with its log going to LOG, has written its "listening on" line, and prints
# the base URL (http://127.0.0.1:PORT). Fails, with the end of the log on stderr, when
# the process exits first, when SECONDS (default 60) pass, or when the server is not on
# 127.0.0.1: load and fuzz traffic must stay on this machine.
await_listening() {
  local log="$1" pid="$2" tenths=$(( ${3:-60} * 10 )) base=""
  for (( i = 0; i < tenths; i++ )); do
    base="$(grep -o 'listening on http://[0-9.:]*' "$log" 2>/dev/null | head -1 | sed 's/listening on //')" || true
    [[ -n "$base" ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [[ -z "$base" ]]; then
    echo "the server (pid $pid) did not start; the end of $log:" >&2
    tail -20 "$log" >&2
    return 1
  fi
  if [[ "$base" != http://127.0.0.1:* ]]; then
    echo "the server is not on 127.0.0.1: $base" >&2
    return 1
  fi
  echo "$base"
}
