#!/usr/bin/env python3
"""Helpers for loadtest/scale.sh (standard library only).

  scale_probe.py graph DB TOKENS OUTDIR [STRIDE]
      Reads a loaded embedded data file (before the server opens it) and writes to
      OUTDIR: graph.json (the ten largest accounts and their follower counts, a median
      account, readers who follow the ten largest, followers to poll after a post),
      users.txt (every STRIDE-th user, default every one) and top_readers.txt ("id
      token" lines for wrk), top_readers.csv (for k6), and warm_extra.csv (the readers
      and polled followers outside the stride, to be warmed as well).

  scale_probe.py lag BASE TOKENS GRAPH_JSON WHO COUNT TIMEOUT_S
      Posts COUNT times as WHO (largest | median), one post at a time, and for each
      measures the post request's latency and the lag from the request's start until
      the post is first in page 1 of the timeline of every polled follower (the
      follower with the highest id, the lowest and one in the middle), polled every
      5 ms, and until the timelines worker reports nothing waiting. Prints one JSON
      object. A post not seen within TIMEOUT_S is counted as lost.

  scale_probe.py repost-lag BASE TOKENS GRAPH_JSON WHO COUNT TIMEOUT_S
      The same for reposts: COUNT times, a user nobody follows (created once through
      the API) posts, and WHO reposts that post; the lag runs from the repost request's
      start until the repost is first in page 1 of every polled follower's timeline and
      the timelines worker reports nothing waiting.
"""
import http.client
import json
import os
import sqlite3
import sys
import time
import urllib.parse


def uid_key(u):
    return int(u[1:]) if u.startswith("u") and u[1:].isdigit() else 1 << 62


def graph(db, tokens_path, outdir, stride=1):
    tokens = json.load(open(tokens_path))
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    counts = con.execute(
        "SELECT id, followers_count FROM users ORDER BY followers_count DESC, id"
    ).fetchall()
    top = counts[:10]
    median = counts[len(counts) // 2]
    # A median account with followers is more telling than one with none.
    if median[1] == 0:
        with_followers = [c for c in counts if c[1] > 0]
        median = with_followers[len(with_followers) // 2]
    top_ids = [t[0] for t in top]
    marks = ",".join("?" * len(top_ids))
    readers = [
        r[0]
        for r in con.execute(
            f"SELECT follower FROM follows WHERE followee IN ({marks}) "
            "GROUP BY follower HAVING count(*) = ? ORDER BY follower LIMIT 500",
            (*top_ids, len(top_ids)),
        )
    ]
    follow_all = len(readers) >= 20
    if not follow_all:  # fall back to readers who follow the most of them
        readers = [
            r[0]
            for r in con.execute(
                f"SELECT follower FROM follows WHERE followee IN ({marks}) "
                "GROUP BY follower ORDER BY count(*) DESC, follower LIMIT 500",
                tuple(top_ids),
            )
        ]

    def pollees(author):
        fs = sorted(
            (r[0] for r in con.execute("SELECT follower FROM follows WHERE followee = ?", (author,))),
            key=uid_key,
        )
        if not fs:
            return []
        return sorted({fs[-1], fs[0], fs[len(fs) // 2]}, key=uid_key)

    out = {
        "users": len(counts),
        "follows": con.execute("SELECT count(*) FROM follows").fetchone()[0],
        "posts": con.execute("SELECT count(*) FROM posts").fetchone()[0],
        "top": [{"id": i, "followers": n} for i, n in top],
        "largest": {"id": top[0][0], "followers": top[0][1], "poll": pollees(top[0][0])},
        "median": {"id": median[0], "followers": median[1], "poll": pollees(median[0])},
        "top_readers": readers,
        "top_readers_follow_all": follow_all,
    }
    con.close()
    json.dump(out, open(os.path.join(outdir, "graph.json"), "w"), indent=1)
    with open(os.path.join(outdir, "users.txt"), "w") as f:
        for i, t in enumerate(tokens):
            if i % stride == 0:
                f.write(f"u{i} {t}\n")
    # Beyond the sampled users, the readers and followers the arms and probes read.
    extra = set(readers) | set(out["largest"]["poll"]) | set(out["median"]["poll"])
    with open(os.path.join(outdir, "warm_extra.csv"), "w") as f:
        f.write(",".join(sorted(u for u in extra if uid_key(u) % stride != 0)))
    with open(os.path.join(outdir, "top_readers.txt"), "w") as f:
        for r in readers:
            f.write(f"{r} {tokens[uid_key(r)]}\n")
    with open(os.path.join(outdir, "top_readers.csv"), "w") as f:
        f.write(",".join(readers))


class Client:
    def __init__(self, base, tokens):
        u = urllib.parse.urlparse(base)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        self.tokens = tokens

    def call(self, method, path, user=None, body=None):
        headers = {}
        if user is not None:
            headers["Authorization"] = f"Bearer {self.tokens[uid_key(user)]}"
        if body is not None:
            headers["Content-Type"] = "application/json"
            body = json.dumps(body)
        self.conn.request(method, path, body=body, headers=headers)
        r = self.conn.getresponse()
        return r.status, r.read()


def timelines_waiting(client):
    status, body = client.call("GET", "/v1/workers")
    if status != 200:
        return 1 << 30
    for w in json.loads(body)["workers"]:
        if w["name"] == "timelines":
            return w["lag_changes"]
    return 0


def create_loner(client):
    """A user nobody follows, so the polled followers' timelines hold only the repost
    of its posts (a reader who follows the original author is served the original)."""
    name = f"loner{int(time.time() * 1000) % 10**9}"
    status, body = client.call("POST", "/v1/users", None, {"id": name, "display_name": name})
    if status != 201:
        raise SystemExit(f"create {name}: {status} {body[:200]!r}")
    return name, json.loads(body)["token"]


def lag(base, tokens_path, graph_path, who, count, timeout, kind="post"):
    tokens = json.load(open(tokens_path))
    g = json.load(open(graph_path))[who]
    client = Client(base, tokens)
    if kind == "repost":
        loner, loner_token = create_loner(client)
        client.tokens = dict(enumerate(tokens))
        client.tokens[uid_key(loner)] = loner_token
    requests, lags, lost = [], [], 0
    for n in range(count):
        if kind == "repost":
            status, body = client.call(
                "POST", f"/v1/users/{loner}/posts", loner, {"text": f"scale probe original {n}"}
            )
            if status != 201:
                raise SystemExit(f"post as {loner}: {status} {body[:200]!r}")
            original = json.loads(body)["id"]
            start = time.perf_counter()
            status, body = client.call("PUT", f"/v1/users/{g['id']}/reposts/{original}", g["id"])
            expected = 201
        else:
            start = time.perf_counter()
            status, body = client.call(
                "POST", f"/v1/users/{g['id']}/posts", g["id"], {"text": f"scale probe {who} {n}"}
            )
            expected = 201
        done = time.perf_counter()
        if status != expected:
            raise SystemExit(f"{kind} as {g['id']}: {status} {body[:200]!r}")
        item_id = json.loads(body)["id"]
        requests.append((done - start) * 1000)
        waiting = set(g["poll"])
        seen = None
        while time.perf_counter() - start < timeout:
            for f in list(waiting):
                s, page = client.call("GET", f"/v1/users/{f}/timeline?limit=20", f)
                items = json.loads(page).get("items", []) if s == 200 else []
                if items and items[0].get("id") == item_id:
                    waiting.discard(f)
            if not waiting and timelines_waiting(client) == 0:
                seen = time.perf_counter()
                break
            time.sleep(0.005)
        if seen is None:
            lost += 1
        else:
            lags.append((seen - start) * 1000)
    print(json.dumps({
        "kind": kind, "author": g["id"], "followers": g["followers"], "polled": g["poll"],
        "post_ms": requests, "lag_ms": lags, "lost": lost,
    }))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "graph":
        graph(*sys.argv[2:5], *[int(a) for a in sys.argv[5:6]])
    elif cmd == "lag":
        a = sys.argv[2:]
        lag(a[0], a[1], a[2], a[3], int(a[4]), float(a[5]))
    elif cmd == "repost-lag":
        a = sys.argv[2:]
        lag(a[0], a[1], a[2], a[3], int(a[4]), float(a[5]), kind="repost")
    else:
        raise SystemExit(__doc__)
