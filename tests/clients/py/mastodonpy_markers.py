"""Mastodon.py markers: markers_set (JSON) stores each timeline's position as sent and
moves its version by one; markers_get (timeline[]) answers the timelines asked for."""

from common import check, passed, register

alice, _, a = register("alice")

check(dict(a.markers_get(["home", "notifications"])) == {}, "no markers before a write")
post = a.status_post("read up to here")
first = a.markers_set("home", post)
check(str(first.home.last_read_id) == str(post.id) and first.home.version == 1, "markers_set stores home at version 1", first)
both = a.markers_set(["home", "notifications"], [post.id, "7"])
check(both.home.version == 2 and both.notifications.version == 1, "each write moves its marker's version", both)
got = a.markers_get(["home", "notifications"])
check(str(got.home.last_read_id) == str(post.id) and str(got.notifications.last_read_id) == "7", "markers_get answers both", got)
check(got.home.version == 2 and got.home.updated_at is not None, "with version and time", got)
check(set(a.markers_get("notifications").keys()) == {"notifications"}, "only the timelines asked for")

passed("Mastodon.py markers")
