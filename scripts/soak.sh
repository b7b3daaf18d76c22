#!/usr/bin/env bash
# Soaks the timeline oracle (tests/oracle.rs) for DURATION with fresh seeds, cycling
# topologies and foci, in a release build: random histories against 1-3 real server
# processes, kill -9s in every run, in-binary faults, on the embedded store and, when
# SOCIALITE_TEST_MONGODB_URI is set (or the stand-in can be started), on MongoDB too
# (a third of the time: the stand-in is much slower per operation).
#
# Usage: scripts/soak.sh DURATION      (e.g. 30m, 2h)
# Knobs: SOAK_CLIENTS (virtual clients per run, default 10), SOAK_RUN (each run's
# length of operations, default 20s), SOAK_MONGO_CHUNK (the MongoDB leg's part per
# fresh stand-in, default 5m), SOAK_MONGO_PERCENT (the MongoDB leg's share of DURATION,
# default 33; 100 soaks a given replica set only, as the GitHub workflow does).
# Ends with one summary line; exits non-zero on any divergence (the failing seed's
# report, with its replay command, is printed above it).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
duration="${1:?usage: scripts/soak.sh DURATION (e.g. 30m)}"

# The MongoDB leg runs in chunks of SOAK_MONGO_CHUNK (default 5m), each on a fresh
# stand-in (why: scripts/lib/stand-in.sh; one stand-in for a whole leg left a
# convergence walk still going 10 minutes after its run, 2026-11-28).
source scripts/lib/stand-in.sh
log="$(mktemp)"
cleanup() {
  stop_stand_in
  rm -f "$log"
}
trap cleanup EXIT
if [[ -z "${SOCIALITE_TEST_MONGODB_URI:-}" && -x tests/mongo-server/start.sh ]]; then
  own_stand_in=true
  fresh_stand_in || own_stand_in=false
fi

cargo build --release --test oracle --bin socialite >&2 || exit 2
# A humantime duration, in seconds.
secs() {
  python3 -c "
import re,sys
t=sys.argv[1]; units={'ms':0.001,'s':1,'m':60,'h':3600,'d':86400}
print(int(sum(float(n)*units[u] for n,u in re.findall(r'(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)', t))))" "$1"
}
seconds="$(secs "$duration")"
embedded="$seconds"
mongo=0
if [[ -n "${SOCIALITE_TEST_MONGODB_URI:-}" ]]; then
  percent="${SOAK_MONGO_PERCENT:-33}"
  [[ "$percent" =~ ^[0-9]+$ && "$percent" -le 100 ]] ||
    { echo "SOAK_MONGO_PERCENT must be 0-100, not $percent" >&2; exit 2; }
  mongo="$(( seconds * percent / 100 ))"
  embedded="$(( seconds - mongo ))"
fi

export SOCIALITE_ORACLE_FRESH=1 SOCIALITE_ORACLE_KILLS=1
export SOCIALITE_ORACLE_CLIENTS="${SOAK_CLIENTS:-10}" SOCIALITE_ORACLE_RUN="${SOAK_RUN:-20s}"
status=0
leg() {
  SOCIALITE_ORACLE_BUDGET="${2}s" \
    cargo test --release --test oracle "$1" -- --nocapture --test-threads 1 2>&1 | tee -a "$log" >&2
  [[ "${PIPESTATUS[0]}" == 0 ]] || status=1
}
[[ "$embedded" -gt 0 ]] && leg embedded "$embedded"
chunk="$(secs "${SOAK_MONGO_CHUNK:-5m}")"
[[ "$chunk" -gt 0 ]] || chunk=300
while [[ "$mongo" -gt 0 ]]; do
  part=$(( mongo < chunk ? mongo : chunk ))
  fresh_stand_in || { echo "the MongoDB stand-in did not start" >&2; status=1; break; }
  leg mongodb "$part"
  mongo=$(( mongo - part ))
done

summary="$(grep '^oracle summary:' "$log" | awk '
  { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[2] ~ /^[0-9]+$/) sum[kv[1]] += kv[2] } }
  END { printf "soak %s: runs=%d ops=%d kill-9s=%d aborts=%d streamed=%d takeovers=%d rebuilds=%d history_lost=%d kept=%d stale_notifications=%d reposts=%d reposts_served=%d masto_reads=%d divergences=%d",
        "'"$duration"'", sum["runs"], sum["ops"], sum["kills"], sum["aborts"], sum["streamed"], sum["takeovers"], sum["rebuilds"], sum["history_lost"], sum["kept"], sum["stale_notifications"], sum["reposts"], sum["reposts_served"], sum["masto_reads"], sum["divergences"] }')"
echo "$summary"
if [[ "$status" != 0 ]] || ! grep -q 'divergences=0$' <<<"$summary"; then
  exit 1
fi
