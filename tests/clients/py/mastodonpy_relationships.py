"""Mastodon.py follows, blocks and mutes: account_follow / unfollow, account_block /
unblock, account_mute (with notifications and duration) / unmute, the Relationship each
answers, account_relationships, blocks(), mutes(), account_followers /
account_following, account_lookup; a blocked author's posts leave the home timeline."""

from common import check, eventually, passed, register

alice, _, a = register("alice")
bob, _, b = register("bob")
carol, _, c = register("carol")
alice_id = a.account_verify_credentials().id
carol_id = c.account_verify_credentials().id
check(b.account_lookup(alice).id == alice_id, "account_lookup finds alice")

rel = b.account_follow(alice_id)
check(rel.following is True and rel.id == alice_id, "follow answers following", rel)
check([x.username for x in a.account_followers(alice_id)] == [bob], "alice's followers are bob")
check([x.username for x in b.account_following(b.account_verify_credentials().id)] == [alice], "bob follows alice")

rel = b.account_mute(carol_id, notifications=False, duration=3600)
check(rel.muting is True and rel.muting_notifications is False, "mute answers muting", rel)
check([x.username for x in b.mutes()] == [carol], "mutes() lists carol")
check(b.account_unmute(carol_id).muting is False, "unmute answers not muting")

post = a.status_post("seen then hidden")
eventually(lambda: [s.id for s in b.timeline_home()], lambda ids: post.id in ids, "alice's post reaches bob's home")
rel = b.account_block(alice_id)
check(rel.blocking is True and rel.following is False, "a block ends the follow", rel)
check([x.username for x in b.blocks()] == [alice], "blocks() lists alice")
check(post.id not in [s.id for s in b.timeline_home()], "a blocked author's post leaves the home timeline")
rels = b.account_relationships([alice_id, carol_id])
check([(r.id, r.blocking) for r in rels] == [(alice_id, True), (carol_id, False)], "account_relationships", rels)
check(b.account_unblock(alice_id).blocking is False, "unblock answers not blocking")
check(b.account_unfollow(alice_id).following is False, "unfollow answers not following")

passed("Mastodon.py follow, block, mute")
