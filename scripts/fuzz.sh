#!/usr/bin/env bash
# Fuzzes the running API against its own OpenAPI document with schemathesis (pinned,
# from PyPI, in a virtual environment this script creates under target/), with
# authentication on: every operation, a bounded number of examples each. Fails on any
# 5xx, any response that breaks the schema, and any undocumented status code.
# A second run fuzzes the Mastodon routes alone (/api/, /oauth/, /.well-known/,
# /nodeinfo/) as a Mastodon client calls them: with an OAuth token from the password
# grant instead of a /v1 API token.
#
# One worker: with two, schemathesis parses lambda sources (hypothesis's filter
# descriptions) on two threads at once, and CPython 3.11 before 3.11.8 keeps the AST
# constructor's recursion counter per interpreter, not per call (CPython gh-106905), so
# a run could die with "SystemError: AST constructor recursion depth mismatch". CI's
# Python is 3.11.7, and one CI run did.
#
# Env: FUZZ_EXAMPLES (per operation, default 30), FUZZ_MAX_TIME (seconds, default 150),
# FUZZ_MASTODON_MAX_TIME (seconds for the second run, default 120), BIN (the socialite binary, default target/release/socialite, built when missing).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source scripts/lib/listening.sh
SCHEMATHESIS_VERSION="4.32.5"
venv="$root/target/fuzz-venv"
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
bin="${BIN:-$root/target/release/socialite}"
# Always build: a stale binary from an earlier checkout must not be what is fuzzed.
[[ -n "${BIN:-}" ]] || cargo build --release --locked --quiet

work="$(mktemp -d)"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Token authentication (the default) with the per-user limits raised, so that the
# fuzzer's one user is not throttled into seeing mostly 429s (which are documented).
SOCIALITE_STORAGE__PATH="$work/fuzz.db" SOCIALITE_RATE__WRITES_PER_MIN=1000000 \
  SOCIALITE_RATE__READS_PER_MIN=1000000 SOCIALITE_RATE__IP_PER_MIN=1000000 \
  RUST_LOG=warn,socialite=info NO_COLOR=1 "$bin" serve --listen 127.0.0.1:0 > "$work/server.log" 2>&1 &
server_pid=$!
base="$(await_listening "$work/server.log" "$server_pid")"

# The users scripts/schemathesis.toml names: the fuzzer acts as "fuzz" (its token on
# every request, its id pinned as `{id}` where only the owner may act) and follows or
# unfollows "fuzz2".
create_user() {
  curl -fsS -XPOST "$base/v1/users" -H 'content-type: application/json' -d "{\"id\":\"$1\"}"
}
token="$(create_user fuzz | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')"
create_user fuzz2 > /dev/null

# The Mastodon run's user "fuzzm" has a password, and its token comes from an app
# through the password grant, with every scope an app may hold.
curl -fsS -XPOST "$base/v1/users" -H 'content-type: application/json' \
  -d '{"id":"fuzzm","password":"fuzzing password"}' > /dev/null
json_field() { python3 -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }
app="$(curl -fsS -XPOST "$base/api/v1/apps" -d client_name=fuzz \
  -d 'redirect_uris=urn:ietf:wg:oauth:2.0:oob' -d 'scopes=read write follow push')"
oauth_token="$(curl -fsS -XPOST "$base/oauth/token" -d grant_type=password \
  -d "client_id=$(json_field client_id <<< "$app")" \
  -d "client_secret=$(json_field client_secret <<< "$app")" \
  -d username=fuzzm -d 'password=fuzzing password' -d 'scope=read write follow push' \
  | json_field access_token)"

fuzz() {
  "$venv/bin/schemathesis" --no-color --config-file "$root/scripts/schemathesis.toml" run "$base/openapi.json" \
    --checks not_a_server_error,status_code_conformance,response_schema_conformance,content_type_conformance \
    --max-examples "${FUZZ_EXAMPLES:-30}" \
    --generation-deterministic \
    --workers 1 \
    --request-timeout 10 \
    "$@"
}
status=0
echo "== every operation, with the /v1 API token of \"fuzz\""
fuzz --header "Authorization: Bearer $token" --max-time "${FUZZ_MAX_TIME:-150}" || status=$?
echo "== the Mastodon routes, with an OAuth token of \"fuzzm\" (password grant)"
fuzz --header "Authorization: Bearer $oauth_token" --max-time "${FUZZ_MASTODON_MAX_TIME:-120}" \
  --include-path-regex '^/(api/|oauth/|\.well-known/|nodeinfo/)' || status=$?
if grep -q 'panicked' "$work/server.log"; then
  echo "the server panicked during the fuzz run:" >&2
  grep -A5 'panicked' "$work/server.log" >&2
  status=1
fi
exit "$status"
