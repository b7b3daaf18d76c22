"""Mastodon.py's stream_user (SSE, /api/v1/streaming/user) receives an `update` for a
post by an author the reader follows and a `notification` for that author's follow of
the reader. The stream is live only once the server has it open, which the client cannot
see, so the author posts again every half second (at most 60 times) until one arrives."""

import threading
import time

from mastodon import StreamListener

from common import check, passed, register

alice, _, a = register("alice")
bob, _, b = register("bob")
b.account_follow(a.account_verify_credentials().id)
bob_id = b.account_verify_credentials().id

got = {"update": [], "notification": []}
updated, notified = threading.Event(), threading.Event()


class Listener(StreamListener):
    def on_update(self, status):
        got["update"].append(status)
        updated.set()

    def on_notification(self, notification):
        got["notification"].append(notification)
        notified.set()


handle = b.stream_user(Listener(), run_async=True, reconnect_async=False)
posted = set()
try:
    for n in range(60):
        posted.add(a.status_post(f"streamed {n}").id)
        if updated.wait(0.5):
            break
    check(updated.is_set(), "one of alice's posts arrived as an update")
    check(all(s.id in posted and s.account.username == alice for s in got["update"]), "updates are alice's posts", got["update"])
    a.account_follow(bob_id)
    check(notified.wait(30), "alice's follow arrived as a notification within 30 s")
    n = got["notification"][0]
    check(n.type == "follow" and n.account.username == alice, "the notification is alice's follow", n)
finally:
    handle.close()

passed("Mastodon.py stream_user: update and notification")
