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

# A fresh stand-in for each test binary (why: scripts/lib/stand-in.sh).
source scripts/lib/stand-in.sh
[[ -z "${SOCIALITE_TEST_MONGODB_URI:-}" ]] && own_stand_in=true

if [[ "${SOCIALITE_TEST_CLIENTS:-}" != skip ]]; then
  scripts/clients-setup.sh
  export SOCIALITE_TEST_CLIENTS=required
fi

log="$(mktemp)"
trap 'stop_stand_in; rm -f "$log"' EXIT
status=0
run() {
  fresh_stand_in || { echo "the MongoDB stand-in did not start" >&2; exit 2; }
  cargo test --locked --no-fail-fast "$@" 2>&1 | tee -a "$log" || status=1
}
# Arguments that choose the targets (`--test timelines`) make one run; otherwise the
# whole build first, then each test binary on its own stand-in.
chosen=false
for arg in "$@"; do
  case "$arg" in
    --test | --test=* | --tests | --lib | --bin | --bin=* | --bins | --doc | -p | --package*) chosen=true ;;
  esac
done
if $chosen; then
  run "$@"
else
  cargo test --locked --no-run "$@" 2>&1 | tee -a "$log" || status=1
  if [[ "$status" == 0 ]]; then
    run --lib --bins "$@"
    for file in tests/*.rs; do
      run --test "$(basename "$file" .rs)" "$@"
    done
    run --doc "$@"
  fi
fi
# One line for the whole run, after cargo's per-binary results.
awk '/^test result:/ { p += $4; f += $6; i += $8; n++ }
     END { printf "\n== summary: %d passed, %d failed, %d ignored in %d test binaries\n", p, f, i, n }' "$log"
grep -h 'SKIPPED' "$log" | sort -u || true
exit "$status"
