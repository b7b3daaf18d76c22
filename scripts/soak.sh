#!/usr/bin/env bash
# Soaks the timeline oracle (tests/oracle.rs) for DURATION with fresh seeds, cycling
# topologies and foci, in a release build: random histories against 1-3 real server
# processes, kill -9s in every run, in-binary faults, on the embedded store and, when
# SOCIALITE_TEST_MONGODB_URI is set (or the stand-in can be started), on MongoDB too
# (a third of the time: the stand-in is much slower per operation).
#
# Usage: scripts/soak.sh DURATION      (e.g. 30m, 2h)
# Knobs: SOAK_CLIENTS (virtual clients per run, default 10), SOAK_RUN (each run's
# length of operations, default 20s).
# Ends with one summary line; exits non-zero on any divergence (the failing seed's
# report, with its replay command, is printed above it).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
duration="${1:?usage: scripts/soak.sh DURATION (e.g. 30m)}"

stand_in_pid=""
log="$(mktemp)"
cleanup() {
  if [[ -n "$stand_in_pid" ]]; then kill "$stand_in_pid" 2>/dev/null || true; fi
  rm -f "$log"
}
trap cleanup EXIT
if [[ -z "${SOCIALITE_TEST_MONGODB_URI:-}" && -x tests/mongo-server/start.sh ]]; then
  pidfile="$(mktemp)"
  if uri="$(tests/mongo-server/start.sh "$pidfile" 2>/dev/null)"; then
    export SOCIALITE_TEST_MONGODB_URI="$uri"
    stand_in_pid="$(cat "$pidfile")"
  fi
fi

cargo build --release --test oracle --bin socialite >&2 || exit 2
# humantime durations, in seconds.
seconds="$(python3 -c "
import re,sys
t=sys.argv[1]; units={'ms':0.001,'s':1,'m':60,'h':3600,'d':86400}
print(int(sum(float(n)*units[u] for n,u in re.findall(r'(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)', t))))" "$duration")"
embedded="$seconds"
mongo=0
if [[ -n "${SOCIALITE_TEST_MONGODB_URI:-}" ]]; then
  mongo="$(( seconds / 3 ))"
  embedded="$(( seconds - mongo ))"
fi

export SOCIALITE_ORACLE_FRESH=1 SOCIALITE_ORACLE_KILLS=1
export SOCIALITE_ORACLE_CLIENTS="${SOAK_CLIENTS:-10}" SOCIALITE_ORACLE_RUN="${SOAK_RUN:-20s}"
status=0
for leg in "embedded $embedded" "mongodb $mongo"; do
  read -r filter budget <<<"$leg"
  [[ "$budget" -gt 0 ]] || continue
  SOCIALITE_ORACLE_BUDGET="${budget}s" \
    cargo test --release --test oracle "$filter" -- --nocapture --test-threads 1 2>&1 | tee -a "$log" >&2
  [[ "${PIPESTATUS[0]}" == 0 ]] || status=1
done

summary="$(grep '^oracle summary:' "$log" | awk '
  { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[2] ~ /^[0-9]+$/) sum[kv[1]] += kv[2] } }
  END { printf "soak %s: runs=%d ops=%d kill-9s=%d aborts=%d streamed=%d takeovers=%d rebuilds=%d history_lost=%d kept=%d stale_notifications=%d reposts=%d reposts_served=%d masto_reads=%d divergences=%d",
        "'"$duration"'", sum["runs"], sum["ops"], sum["kills"], sum["aborts"], sum["streamed"], sum["takeovers"], sum["rebuilds"], sum["history_lost"], sum["kept"], sum["stale_notifications"], sum["reposts"], sum["reposts_served"], sum["masto_reads"], sum["divergences"] }')"
echo "$summary"
if [[ "$status" != 0 ]] || ! grep -q 'divergences=0$' <<<"$summary"; then
  exit 1
fi
