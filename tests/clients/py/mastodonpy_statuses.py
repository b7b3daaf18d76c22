"""Mastodon.py posts, replies, reposts and likes: status_post (with in_reply_to_id),
status, status_context, status_reblog / status_unreblog, status_favourite /
status_unfavourite, status_favourited_by / status_reblogged_by, status_delete; the
counts each answer carries, and the HTML content with the text escaped and the hashtag
linked."""

from mastodon import MastodonNotFoundError

from common import check, eventually, passed, register

alice, _, a = register("alice")
bob, _, b = register("bob")

post = a.status_post("hello <world> #socialite")
check(post.account.username == alice, "the status is alice's", post.account)
check("&lt;world&gt;" in post.content, "the text is escaped", post.content)
check("tags/socialite" in post.content, "the hashtag is linked", post.content)
for field in ["media_attachments", "emojis", "mentions", "tags"]:
    check(isinstance(post[field], list), f"{field} is a list", post[field])
check(a.status(post.id).id == post.id, "a status read back by id")

reply = b.status_post("a reply", in_reply_to_id=post.id)
check(reply.in_reply_to_id == post.id, "the reply answers the post", reply.in_reply_to_id)
context = a.status_context(post.id)
check([s.id for s in context.descendants] == [reply.id], "the post's context holds the reply", context)
check([s.id for s in b.status_context(reply.id).ancestors] == [post.id], "the reply's ancestors hold the post")

reblog = b.status_reblog(post.id)
check(reblog.reblog and reblog.reblog.id == post.id, "a reblog wraps the post", reblog)
liked = b.status_favourite(post.id)
check(liked.favourited is True, "favourite answers favourited", liked.favourited)
check([acct.username for acct in a.status_favourited_by(post.id)] == [bob], "favourited_by names bob")
check([acct.username for acct in a.status_reblogged_by(post.id)] == [bob], "reblogged_by names bob")
check(b.status(post.id).favourited is True and b.status(post.id).reblogged is True, "bob sees his like and reblog")
eventually(
    lambda: a.status(post.id),
    lambda s: (s.reblogs_count, s.replies_count) == (1, 1),
    "one reblog and one reply counted",
)

check(b.status_unfavourite(post.id).favourited is False, "unfavourite answers not favourited")
b.status_unreblog(post.id)
check(a.status_favourited_by(post.id) == [] and a.status_reblogged_by(post.id) == [], "undone: no one listed")
eventually(
    lambda: a.status(post.id),
    lambda s: s.reblogs_count == 0,
    "no reblog counted after undoing",
)

deleted = b.status_delete(reply.id)
check(deleted.id == reply.id, "delete answers the status", deleted)
try:
    b.status(reply.id)
    raise AssertionError("a deleted status is still served")
except MastodonNotFoundError:
    pass

# The favourites count last, so that a wrong one hides none of the checks above.
b.status_favourite(post.id)
eventually(lambda: a.status(post.id), lambda s: s.favourites_count == 1, "one favourite counted")
b.status_unfavourite(post.id)
eventually(lambda: a.status(post.id), lambda s: s.favourites_count == 0, "no favourite counted after undoing")

passed("Mastodon.py post, reply, repost, like")
