# Sourced by the scripts that run tests against the MongoDB stand-in (mongo-java-server):
# scripts/test.sh and scripts/soak.sh.
#
# Each caller gives a part of its work a fresh stand-in: mongo-java-server keeps one
# oplog for all its databases, never trimmed, and scans it on every change-stream poll,
# so one stand-in for a whole run slowed the late test binaries sevenfold
# (tests/twin.rs: 731 s in a full run, 103 s on its own, 2026-11-28).
#
# own_stand_in: true when the caller starts and stops its own (it sets this; it is false
# when SOCIALITE_TEST_MONGODB_URI names a server given from outside, which is used as is).
# fresh_stand_in: stops the previous stand-in and starts a new one, exporting
# SOCIALITE_TEST_MONGODB_URI; fails (status 1) when it cannot start. A no-op when the
# caller does not own its stand-in.
# stop_stand_in: stops it, if one runs; safe to call twice (an EXIT trap does).
own_stand_in=false
stand_in_pid=""

stop_stand_in() {
  if [[ -n "$stand_in_pid" ]]; then
    kill "$stand_in_pid" 2>/dev/null || true
    wait "$stand_in_pid" 2>/dev/null || true
    stand_in_pid=""
  fi
}

fresh_stand_in() {
  $own_stand_in || return 0
  stop_stand_in
  local pidfile uri
  pidfile="$(mktemp)"
  if ! uri="$(tests/mongo-server/start.sh "$pidfile")"; then
    rm -f "$pidfile"
    return 1
  fi
  stand_in_pid="$(cat "$pidfile")"
  rm -f "$pidfile"
  export SOCIALITE_TEST_MONGODB_URI="$uri"
  echo "MongoDB stand-in (mongo-java-server) at $uri" >&2
}
