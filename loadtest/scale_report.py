#!/usr/bin/env python3
"""Sums up a loadtest/scale.sh run: scale_report.py RAW_DIR REPORT.md IMG_DIR

Reads RAW_DIR/SIZE-STRATEGY/ (run.json, graph.json, wrk-*.json, k6-*.json, lag-*.json,
rss.txt, seed.tail, or skipped.json), writes the markdown report and two charts to
IMG_DIR: scale-cost.png (cost against graph size per strategy) and scale-lag.png (the
post-lag distribution). Needs matplotlib (scale.sh installs it into a venv).
"""
import json
import os
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["fanout_on_read", "cache", "hybrid", "timed_buckets", "sized_buckets"]


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def wrk_round(path):
    w = load(path)
    if not w:
        return None
    secs = w["duration_us"] / 1e6
    return {"rps": w["requests"] / secs, "p50": w["p50_us"] / 1000, "p99": w["p99_us"] / 1000,
            "bad": w["socket_errors"] + w["non2xx"]}


def k6_round(path, trend):
    s = load(path)
    if not s:
        return None
    m = s["metrics"]
    t = m.get(trend, {})
    return {"rps": m["http_reqs"]["rate"], "p50": t.get("med"), "p99": t.get("p(99)"),
            "bad": m.get("op_errors", {}).get("value", 0)}


def rounds_of(d, tool, name, one):
    """An arm's rounds (TOOL-NAME-R.json; an older run's single TOOL-NAME.json is one
    round) and their medians, which the tables and charts show."""
    found = sorted((int(m.group(1)), n) for n in os.listdir(d)
                   if (m := re.fullmatch(rf"{tool}-{re.escape(name)}-(\d+)\.json", n)))
    paths = [os.path.join(d, n) for _, n in found] or [os.path.join(d, f"{tool}-{name}.json")]
    rounds = [x for x in map(one, paths) if x]
    if not rounds:
        return None
    med = {k: (statistics.median(x[k] for x in rounds) if all(x[k] is not None for x in rounds)
               else None) for k in ("rps", "p50", "p99")}
    return {**med, "bad": sum(x["bad"] for x in rounds), "rounds": rounds}


def wrk(d, name):
    return rounds_of(d, "wrk", name, wrk_round)


def k6(d, name, trend):
    return rounds_of(d, "k6", name, lambda p: k6_round(p, trend))


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def collect(raw):
    runs, skipped = [], []
    for name in sorted(os.listdir(raw)):
        d = os.path.join(raw, name)
        if not os.path.isdir(d):
            continue
        size, strategy = name.split("-", 1)
        sk = load(os.path.join(d, "skipped.json"))
        if sk:
            skipped.append((int(size), strategy, sk["skipped"]))
            continue
        r = load(os.path.join(d, "run.json"))
        if not r:
            continue
        r["graph"] = load(os.path.join(d, "graph.json"))
        for tool in ("wrk", "k6"):
            for arm in ("healthz", "read", "read_top"):
                r[f"{tool}_{arm}"] = (wrk(d, arm) if tool == "wrk"
                                      else k6(d, arm, "op_healthz" if arm == "healthz" else "op_read"))
        r["pair"] = {side: wrk(d, f"pair_{side}") for side in ("small", "large")}
        r["lag"] = {who: load(os.path.join(d, f"lag-{who}.json")) for who in ("largest", "median")}
        rss = {}
        if os.path.exists(os.path.join(d, "rss.txt")):
            for line in open(os.path.join(d, "rss.txt")):
                k, v = line.split()
                rss[k.rstrip(":")] = int(v) * 1024
        r["rss"] = rss
        tail = os.path.join(d, "seed.tail")
        r["seed_tail"] = open(tail).read().strip().splitlines()[-1] if os.path.exists(tail) else ""
        runs.append(r)
    runs.sort(key=lambda r: (r["size"], ORDER.index(r["strategy"]) if r["strategy"] in ORDER else 9))
    return runs, skipped


def f(x, fmt="{:,.1f}"):
    return "–" if x is None else fmt.format(x)


def rows_per_s(line):
    m = re.search(r"(\d+) rows/s", line)
    return f"{int(m.group(1)):,}" if m else "–"


def per_round(a, b, key="rps"):
    """a ÷ b round by round (each round's arms ran back to back)."""
    if not (a and b):
        return []
    return [x[key] / y[key] for x, y in zip(a["rounds"], b["rounds"]) if y[key]]


def ratio(a, b, key="rps"):
    """The median of the per-round ratios."""
    xs = per_round(a, b, key)
    return statistics.median(xs) if xs else None


def report(runs, skipped, out, img_rel):
    L = []
    sizes = sorted({r["size"] for r in runs})
    L.append(f"# Strategies at scale — {runs[0]['finished'][:10] if runs else ''}\n")
    L.append("`loadtest/scale.sh " + " ".join(map(str, sizes)) + "` on the embedded store, "
             "`--max-follows 200 --posts-per-user 20 --seed 42`, auth.mode = token, one release "
             "server per strategy and size on 127.0.0.1, the load generators on the same 2 "
             "shared cores. Compare ratios within a run, not absolute figures across runs.\n")
    L.append(f"![cost against graph size]({img_rel}/scale-cost.png)\n")
    L.append(f"![post lag distribution]({img_rel}/scale-lag.png)\n")
    L.append("## Data sets\n")
    L.append("Load: the bulk loader, wall clock. Warm-up: every sampled user's timeline read "
             "twice (16 at a time; cache and hybrid build their caches on the first read and "
             "keep the rendered page on the second). DB: the file after the "
             "load. RSS: the server's VmRSS after the run, its private part (RssAnon) and its "
             "peak (VmHWM); the store maps up to `storage.mmap_mib` of its file per "
             "connection, and each connection's touched pages of it count.\n")
    L.append("| users | strategy | follows | posts | load (s) | loader's rows/s | warm-up (s) | DB (MB) | RSS after run (MB) | private (MB) | RSS peak (MB) | load avg after |")
    L.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in runs:
        g = r["graph"] or {}
        L.append(f"| {r['size']:,} | {r['strategy']} | {g.get('follows', 0):,} | {g.get('posts', 0):,} | "
                 f"{r['load_s']:.1f} | {rows_per_s(r['seed_tail'])} | {r['warm_s']:.0f} | {r['db_bytes'] / 1e6:,.0f} | "
                 f"{f(r['rss'].get('VmRSS', 0) / 1e6, '{:,.0f}')} | {f(r['rss']['RssAnon'] / 1e6 if 'RssAnon' in r['rss'] else None, '{:,.0f}')} | "
                 f"{f(r['rss'].get('VmHWM', 0) / 1e6, '{:,.0f}')} | "
                 f"{r['loadavg_after']} |")
    audited = [r for r in runs if "audit_s" in r]
    if audited:
        L.append("\n## Audit\n")
        L.append("`socialite audit --wait 5` on the data set after its run, the server stopped "
                 "(exit 0: clean, 1: discrepancies, 2: failed; its output is in the raw "
                 "directory). Peak RSS from GNU time; it counts the store's mapped pages.\n")
        L.append("| users | strategy | audit (s) | exit | peak RSS (MB) |")
        L.append("|---:|---|---:|---:|---:|")
        for r in audited:
            L.append(f"| {r['size']:,} | {r['strategy']} | {r['audit_s']:.0f} | {r['audit_status']} | "
                     f"{r['audit_peak_kb'] / 1e3:,.0f} |")
    for tool in ("wrk", "k6"):
        n = max((len((r[f"{tool}_read"] or {}).get("rounds", [])) for r in runs), default=1)
        L.append(f"\n## Warm reads under {tool} ({runs[0]['conns'] if runs else ''} connections, "
                 f"{runs[0]['arm'] if runs else ''} per arm, arms in turn"
                 + (f", {n} rounds" if n > 1 else "") + ")\n")
        L.append("`/healthz`, then page 1 of a random user's timeline, then page 1 of a reader who "
                 "follows the ten largest accounts. Ratio = reads/s ÷ `/healthz`/s of the same run"
                 + (" and round; each figure is the median of the rounds" if n > 1 else "") + ".\n")
        L.append("| users | strategy | healthz/s | reads/s | ratio | read p50 (ms) | read p99 (ms) | "
                 "top-10 readers/s | ratio | top-10 p99 (ms) | errors |"
                 + (" read ratio per round |" if n > 1 else ""))
        L.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---|" if n > 1 else ""))
        for r in runs:
            h, rd, tp = r[f"{tool}_healthz"], r[f"{tool}_read"], r[f"{tool}_read_top"]
            bad = sum(x["bad"] for x in (h, rd, tp) if x)
            L.append(f"| {r['size']:,} | {r['strategy']} | {f(h and h['rps'], '{:,.0f}')} | "
                     f"{f(rd and rd['rps'], '{:,.0f}')} | {f(ratio(rd, h), '{:.2f}×')} | "
                     f"{f(rd and rd['p50'], '{:.2f}')} | {f(rd and rd['p99'], '{:.2f}')} | "
                     f"{f(tp and tp['rps'], '{:,.0f}')} | {f(ratio(tp, h), '{:.2f}×')} | "
                     f"{f(tp and tp['p99'], '{:.2f}')} | {bad:g} |"
                     + (" " + (", ".join(f"{x:.2f}×" for x in per_round(rd, h)) or "–") + " |"
                        if n > 1 else ""))
    paired = [r for r in runs if r.get("paired_with") and r["pair"]["small"] and r["pair"]["large"]]
    if paired:
        L.append("\n## Read p99 against the first size's graph, paired (wrk)\n")
        L.append("The first size's data set served again beside this size's server and warmed, "
                 "then pairs of wrk read arms in turn, the small graph then the large, so each "
                 "ratio compares neighbours. Ratio = large ÷ small per pair; the median is the "
                 "figure the read-p99 target is held to.\n")
        L.append("| users | strategy | against | small p99 per pair (ms) | large p99 per pair (ms) | "
                 "p99 ratio per pair | median p99 ratio | median p50 ratio |")
        L.append("|---:|---|---:|---|---|---|---:|---:|")
        for r in paired:
            sm, lg = r["pair"]["small"], r["pair"]["large"]
            per = per_round(lg, sm, "p99")
            L.append(f"| {r['size']:,} | {r['strategy']} | {r['paired_with']:,} | "
                     + ", ".join(f"{x['p99']:.2f}" for x in sm["rounds"]) + " | "
                     + ", ".join(f"{x['p99']:.2f}" for x in lg["rounds"]) + " | "
                     + ", ".join(f"{x:.2f}×" for x in per) + " | "
                     f"{statistics.median(per):.2f}× | {f(ratio(lg, sm, 'p50'), '{:.2f}×')} |")
    L.append("\n## Posts and their lag\n")
    L.append("Posts one at a time by the account with the most followers and by a median account "
             "(with followers). Lag: from the post request's start until the post tops page 1 of "
             "three followers' timelines (highest id, lowest, middle; polled every 5 ms) and the "
             "timelines worker has nothing waiting. With n posts, p99 is the largest.\n")
    L.append("| users | strategy | author | followers | n | post p50 (ms) | post p99 (ms) | lag p50 (ms) | lag p99 (ms) | not seen |")
    L.append("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        for who in ("largest", "median"):
            lg = r["lag"][who]
            if not lg:
                continue
            L.append(f"| {r['size']:,} | {r['strategy']} | {who} {lg['author']} | {lg['followers']:,} | "
                     f"{len(lg['post_ms'])} | {f(pct(lg['post_ms'], 50), '{:.1f}')} | "
                     f"{f(pct(lg['post_ms'], 99), '{:.1f}')} | {f(pct(lg['lag_ms'], 50), '{:.1f}')} | "
                     f"{f(pct(lg['lag_ms'], 99), '{:.1f}')} | {lg['lost']} |")
    top = {r["size"]: r["graph"] for r in runs if r["graph"]}
    if top:
        L.append("\n## The graphs\n")
        for size, g in sorted(top.items()):
            L.append(f"- {size:,} users: the ten largest accounts have "
                     + ", ".join(f"{t['followers']:,}" for t in g["top"])
                     + f" followers; the median account {g['median']['id']} has {g['median']['followers']:,}; "
                     f"{len(g['top_readers'])} readers "
                     + ("follow all ten" if g["top_readers_follow_all"] else "follow the most of them")
                     + " (the top-10 reader arms use them).")
    for r in runs:
        if r["strategy"].startswith("hybrid") and r["graph"]:
            t = r["hybrid_threshold"]
            t = 10000 if t == "default" else int(t)
            celebs = [x["id"] for x in r["graph"]["top"] if x["followers"] > t]
            L.append(f"- {r['size']:,} users, {r['strategy']}: feed.hybrid_threshold = {t:,}; "
                     f"{len(celebs)} of the ten largest accounts are celebrities"
                     + (f" ({', '.join(celebs)})" if celebs else " (so this run behaves as cache)") + ".")
    if skipped:
        L.append("\n## Not run\n")
        for size, strategy, why in skipped:
            L.append(f"- {size:,} users, {strategy}: {why}.")
    with open(out, "w") as fh:
        fh.write("\n".join(L) + "\n")


def charts(runs, img):
    by = {}
    for r in runs:
        by.setdefault(r["strategy"], []).append(r)
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), dpi=80)
    panels = [
        (axes[0][0], "warm read p99, wrk (ms)", lambda r: r["wrk_read"] and r["wrk_read"]["p99"]),
        (axes[0][1], "reads/s ÷ /healthz/s, wrk", lambda r: ratio(r["wrk_read"], r["wrk_healthz"])),
        (axes[1][0], "post lag p50, largest account (ms)",
         lambda r: r["lag"]["largest"] and pct(r["lag"]["largest"]["lag_ms"], 50)),
        (axes[1][1], "database file (MB)", lambda r: r["db_bytes"] / 1e6),
    ]
    for ax, title, get in panels:
        for s in ORDER + sorted(set(by) - set(ORDER)):
            pts = [(r["size"], get(r)) for r in by.get(s, []) if get(r) is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=s)
        ax.set_xscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("users")
        ax.grid(alpha=0.3)
    axes[1][0].set_yscale("symlog", linthresh=10)
    axes[1][0].set_ylim(bottom=0)
    axes[1][1].set_yscale("log")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(img, "scale-cost.png"))
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=80, sharey=True)
    for ax, who in zip(axes, ("largest", "median")):
        labels, data = [], []
        for r in runs:
            lg = r["lag"][who]
            if lg and lg["lag_ms"]:
                labels.append(f"{r['strategy']}\n{r['size'] // 1000}k, {lg['followers']:,} f.")
                data.append(lg["lag_ms"])
        if data:
            ax.boxplot(data, whis=(0, 100))
            for i, xs in enumerate(data, 1):
                ax.scatter([i] * len(xs), xs, s=8, alpha=0.6)
            ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=7, rotation=45, ha="right")
        ax.set_yscale("log")
        ax.set_title(f"post lag, {who} account (ms)", fontsize=10)
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(os.path.join(img, "scale-lag.png"))
    plt.close(fig)


def main():
    raw, out, img = sys.argv[1:4]
    runs, skipped = collect(raw)
    os.makedirs(img, exist_ok=True)
    rel = os.path.relpath(img, os.path.dirname(os.path.abspath(out)))
    report(runs, skipped, out, rel)
    charts(runs, img)
    print(f"wrote {out}, {img}/scale-cost.png, {img}/scale-lag.png")


if __name__ == "__main__":
    main()
