"""Turns a run's k6 summary exports into a markdown table (used by run.sh)."""
import json
import os
import sys

prefix, strategy, scenario, storage, rss_kb, dataset = sys.argv[1:7]


def load(path):
    with open(path) as f:
        return json.load(f)["metrics"]


def rate(metrics):
    return metrics.get("http_reqs", {}).get("rate", 0.0)


main = load(prefix + ".json")
print(f"### {strategy} · {scenario} · {storage} (data set users/max-follows/posts {dataset})\n")
print("| operation | count | p50 (ms) | p95 (ms) | p99 (ms) |")
print("|---|---:|---:|---:|---:|")
for name in sorted(main):
    values = main[name]
    if (name.startswith("op_") or name.startswith("post_") or name.startswith("read_f")) and "p(99)" in values:
        print(f"| {name} | {values.get('count', 0):.0f} | {values['med']:.1f} | {values['p(95)']:.1f} | {values['p(99)']:.1f} |")
print()
print(f"- throughput: {rate(main):.0f} req/s; errors: {main.get('op_errors', {}).get('value', 0):.4%}; "
      f"5xx: {main.get('server_errors', {}).get('count', 0):.0f}")
ceilings = {op: prefix + f".ceiling-{op}.json" for op in ("healthz", "read", "mixed")}
if all(os.path.exists(p) for p in ceilings.values()):
    measured = {op: rate(load(p)) for op, p in ceilings.items()}
    h = measured["healthz"] or 1.0
    print(f"- closed-loop throughput at the same concurrency: /healthz {measured['healthz']:.0f} req/s, "
          f"timeline read {measured['read']:.0f} req/s ({measured['read'] / h:.0%} of /healthz), "
          f"mixed {measured['mixed']:.0f} req/s ({measured['mixed'] / h:.0%} of /healthz)")
samples_path = prefix + ".workers.jsonl"
if os.path.exists(samples_path):
    lags = {}
    with open(samples_path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            for worker in json.loads(line).get("workers", []):
                lags.setdefault(worker["name"], []).append(worker.get("delay_seconds", 0.0))
    for name, series in sorted(lags.items()):
        third = max(1, len(series) // 3)
        print(f"- worker {name}: delay (change written to applied) over {len(series)} one-second samples: max {max(series):.2f} s, "
              f"mean of the first third {sum(series[:third]) / third:.3f} s, "
              f"of the last third {sum(series[-third:]) / third:.3f} s, last {series[-1]:.2f} s")
print(f"- server RSS at the end: {int(rss_kb) / 1024:.0f} MiB")
