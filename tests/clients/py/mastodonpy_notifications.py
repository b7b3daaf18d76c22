"""Mastodon.py reads notifications: a follow, a favourite, a reblog, a mention and a
reply to alice each notify her; notifications() newest first, filtered by types and
exclude_types, one by id, dismissed, and cleared."""

from common import check, eventually, passed, register

alice, _, a = register("alice")
bob, _, b = register("bob")
alice_id = a.account_verify_credentials().id

b.account_follow(alice_id)
post = a.status_post("notice me")
b.status_favourite(post.id)
b.status_reblog(post.id)
b.status_post(f"hi @{alice}")
b.status_post("a reply", in_reply_to_id=post.id)

every = eventually(a.notifications, lambda ns: len(ns) >= 5, "five notifications for alice")
kinds = [n.type for n in every]
check(sorted(set(kinds)) == ["favourite", "follow", "mention", "reblog"], "the kinds", kinds)
check(all(n.account.username == bob for n in every), "all from bob", every)
check(len(every) == 5, "follow, favourite, reblog, mention, reply", kinds)
check(kinds[-1] == "follow", "newest first: the follow is last", kinds)
check([n.type for n in a.notifications(types=["follow"])] == ["follow"], "types[] filters")
check("follow" not in [n.type for n in a.notifications(exclude_types=["follow"])], "exclude_types[] filters")

one = a.notifications(id=every[0].id)
check(one.id == every[0].id and one.type == every[0].type, "one notification by id", one)
a.notifications_dismiss(every[0].id)
check(every[0].id not in [n.id for n in a.notifications()], "a dismissed notification is gone")
a.notifications_clear()
check(a.notifications() == [], "clear empties the list")

passed("Mastodon.py notifications")
