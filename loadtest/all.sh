#!/usr/bin/env bash
# Runs every scenario for every strategy (embedded, standard data set) and collects the
# markdown tables in loadtest/results/summary-<timestamp>.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
summary="$here/results/summary-$(date -u +%Y%m%dT%H%M%SZ).md"
for strategy in ${STRATEGIES:-cache fanout_on_read sized_buckets timed_buckets}; do
  for scenario in ${SCENARIOS:-mixed fanout read_ramp}; do
    # A crossed threshold fails run.sh but still produces a result worth keeping.
    "$here/run.sh" "$strategy" "$scenario" | sed -n '/^### /,$p' >> "$summary" ||
      echo "- thresholds crossed (see the k6 output above)" >> "$summary"
    echo >> "$summary"
  done
done
echo "$summary"
