"""Mastodon.py's stream_public and stream_hashtag (SSE, /api/v1/streaming/public and
/api/v1/streaming/hashtag): an author's posts arrive on the public stream, only the
tagged ones on the hashtag stream, and a deletion reaches both as on_delete with the
status's id. The streams are live only once the server has them open, which the client
cannot see, so the author posts again every half second (at most 60 times) until a
tagged post has reached both."""

import threading

from mastodon import StreamListener

from common import check, passed, register

alice, _, a = register("alice")
bob, _, b = register("bob")


class Listener(StreamListener):
    def __init__(self):
        super().__init__()
        self.updates, self.deletes = [], []
        self.deleted = threading.Event()

    def on_update(self, status):
        self.updates.append(status)

    def on_delete(self, status_id):
        self.deletes.append(str(status_id))
        self.deleted.set()


public, tagged = Listener(), Listener()
handles = [
    b.stream_public(public, run_async=True, reconnect_async=False),
    b.stream_hashtag("news", tagged, run_async=True, reconnect_async=False),
]
plain, news = set(), set()


def reached(listener):
    return any(str(s.id) in news for s in listener.updates)


try:
    for n in range(60):
        plain.add(str(a.status_post(f"plain {n}").id))
        news.add(str(a.status_post(f"#news {n}").id))
        if reached(public) and reached(tagged):
            break
        threading.Event().wait(0.5)
    check(reached(public), "one of alice's tagged posts arrived on the public stream", public.updates)
    check(reached(tagged), "one of alice's tagged posts arrived on the hashtag stream", tagged.updates)
    check(any(str(s.id) in plain for s in public.updates), "untagged posts arrive on the public stream")
    check(all(str(s.id) in news for s in tagged.updates), "only tagged posts on the hashtag stream", tagged.updates)
    check(all(s.account.username == alice for s in public.updates), "every update is alice's post")
    gone = next(str(s.id) for s in tagged.updates)
    a.status_delete(gone)
    for listener, where in [(public, "public"), (tagged, "hashtag")]:
        check(listener.deleted.wait(30), f"on_delete fired on the {where} stream", listener.deletes)
        check(gone in listener.deletes, f"the {where} stream named the deleted status", listener.deletes)
finally:
    for handle in handles:
        handle.close()

passed("Mastodon.py stream_public and stream_hashtag: update and delete")
