"""Mastodon.py walks the home timeline through Link pages (timeline_home with a limit,
then fetch_next until it answers None) and finds exactly what the authors it follows
posted, newest first, once each; fetch_previous from the first page after new posts
finds those; since_id and min_id answer the newer ones. Ids compare with Mastodon.py's
own ID type (which orders only numeric ids), and min_id given a datetime (a Mastodon
snowflake of that second) answers the posts made after it."""

import time
from datetime import datetime, timezone

from common import check, eventually, passed, register

reader, _, r = register("reader")
authors = [register(f"author{n}") for n in range(3)]
for _, _, api in authors:
    r.account_follow(api.account_verify_credentials().id)

posted = []
for round_ in range(5):
    for user, _, api in authors:
        posted.append(api.status_post(f"{user} round {round_}").id)
posted.append(r.status_post("the reader's own").id)
expected = list(reversed(posted))
# Fan-out is the workers': wait until the newest post is on the reader's first page.
eventually(lambda: r.timeline_home(limit=1), lambda p: [s.id for s in p] == expected[:1], "the newest post reaches home")

page = r.timeline_home(limit=4)
walked, pages = [], 0
while page:
    pages += 1
    check(len(page) <= 4, "a page holds at most the limit", len(page))
    walked.extend(s.id for s in page)
    page = r.fetch_next(page)
check(walked == expected, "the walk is every post, newest first, once each", (walked, expected))
check(pages == 4, "16 posts in pages of 4", pages)
# Mastodon.py's ID type orders ids only when they are numbers (TypeError otherwise).
check(all(a > b for a, b in zip(walked, walked[1:])), "ids compare as Mastodon.py's IDs, newest first", walked)
check(walked[-1] < walked[0] and sorted(walked) == list(reversed(walked)), "sorted ids are creation order", walked)

first = r.timeline_home(limit=4)
# A time after every post so far, in a later second than any of them: Mastodon.py sends
# a datetime as the snowflake of its whole second.
time.sleep(1.1)
cut = datetime.now(timezone.utc)
newer = [authors[0][2].status_post("newer one").id, authors[1][2].status_post("newer two").id]
eventually(lambda: r.timeline_home(limit=1), lambda p: [s.id for s in p] == newer[-1:], "the newer posts reach home")
previous = r.fetch_previous(first)
check(previous and sorted(s.id for s in previous) == newer, "fetch_previous finds the newer posts", previous)
since = r.timeline_home(since_id=first[0].id)
check([s.id for s in since] == list(reversed(newer)), "since_id answers the newer posts, newest first", since)
oldest_first = r.timeline_home(min_id=first[0].id, limit=1)
check([s.id for s in oldest_first] == [newer[0]], "min_id answers the page just newer", oldest_first)
after_cut = r.timeline_home(min_id=cut)
check([s.id for s in after_cut] == list(reversed(newer)), "min_id=<datetime> answers the posts made after it", after_cut)
check(r.timeline_home(max_id=cut, limit=1)[0].id == expected[0], "max_id=<datetime> answers those before it", cut)

passed("Mastodon.py home-timeline walk through Link pages")
