#!/usr/bin/env bash
# Runs every test: unit, conformance, HTTP, activity, durability, OpenAPI drift, on the
# embedded backend and, through the MongoDB stand-in (mongo-java-server), on MongoDB,
# and the real Mastodon clients (tests/clients.rs) against a fresh server.
# Extra arguments go to `cargo test`.
#
# The clients are installed first by scripts/clients-setup.sh (pinned, idempotent; as
# root it installs Debian's chromium and chromium-driver when missing), and a client
# that is missing fails its test. SOCIALITE_TEST_CLIENTS=skip skips the installation and
# lets the client tests print SKIPPED instead (on a machine without root or a network).
#
# With SOCIALITE_TEST_MONGODB_URI already set (say, to a real replica set), that server
# is used and no stand-in is started.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

stand_in_pid=""
cleanup() {
  if [[ -n "$stand_in_pid" ]]; then
    kill "$stand_in_pid" 2>/dev/null || true
    wait "$stand_in_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

if [[ -z "${SOCIALITE_TEST_MONGODB_URI:-}" ]]; then
  pidfile="$(mktemp)"
  SOCIALITE_TEST_MONGODB_URI="$(tests/mongo-server/start.sh "$pidfile")"
  stand_in_pid="$(cat "$pidfile")"
  rm -f "$pidfile"
  export SOCIALITE_TEST_MONGODB_URI
  echo "MongoDB stand-in (mongo-java-server) at $SOCIALITE_TEST_MONGODB_URI" >&2
fi

if [[ "${SOCIALITE_TEST_CLIENTS:-}" != skip ]]; then
  scripts/clients-setup.sh
  export SOCIALITE_TEST_CLIENTS=required
fi

log="$(mktemp)"
trap 'cleanup; rm -f "$log"' EXIT
status=0
cargo test --locked --no-fail-fast "$@" 2>&1 | tee "$log" || status=$?
# One line for the whole run, after cargo's per-binary results.
awk '/^test result:/ { p += $4; f += $6; i += $8; n++ }
     END { printf "\n== summary: %d passed, %d failed, %d ignored in %d test binaries\n", p, f, i, n }' "$log"
grep -h 'SKIPPED' "$log" | sort -u || true
exit "$status"
