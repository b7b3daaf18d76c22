"""toot posts, follows and reads the home timeline: bob follows alice with `toot
follow`, alice posts with `toot post`, bob reads both her posts and his own in `toot
timelines home`, and alice's reply to herself with `--reply-to`."""

import json

from common import check, eventually, passed
from toot_common import register, toot

alice, alice_account = register("alice")
bob, bob_account = register("bob")

toot("--as", bob_account, "follow", alice)
first = json.loads(toot("--as", alice_account, "post", "--json", "first from toot #tootcheck").stdout)
check(first["content"] and first["account"]["username"] == alice, "the post is alice's", first)
reply = json.loads(toot("--as", alice_account, "post", "--json", "--reply-to", str(first["id"]), "a self-reply").stdout)
check(str(reply["in_reply_to_id"]) == str(first["id"]), "--reply-to answers the first post", reply)
toot("--as", bob_account, "post", "bob's own")

home = eventually(
    lambda: json.loads(toot("--as", bob_account, "timelines", "home", "--json", "--no-pager").stdout),
    lambda statuses: len(statuses) >= 3,
    "three posts in bob's home",
)
texts = [status["content"] for status in home]
check(any("first from toot" in text for text in texts), "bob's home has alice's post", texts)
check(any("bob&#39;s own" in text or "bob's own" in text for text in texts), "bob's home has his own post", texts)
check(any("a self-reply" in text for text in texts), "bob's home has alice's self-reply", texts)

following = toot("--as", bob_account, "following", bob).stdout
check(alice in following, f"`toot following` lists {alice}", following)

passed("toot post, follow, home timeline")
