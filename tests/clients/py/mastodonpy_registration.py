"""Mastodon.py registers a user as Mastodon does (a client_credentials token from its
app, then POST /api/v1/accounts with it), is signed in by the answer, and revokes it."""

from mastodon import Mastodon, MastodonError, MastodonUnauthorizedError

from common import BASE, SCOPES, app, check, name, passed

client_id, client_secret = app()
user = name("reg")
api = Mastodon(client_id=client_id, client_secret=client_secret, api_base_url=BASE)
token = api.create_account(user, "correct horse battery", f"{user}@example.invalid", agreement=True, scopes=SCOPES)
check(token, "create_account answers a token", token)

me = api.account_verify_credentials()
check(me.username == user and me.acct == user, f"verify_credentials names {user}", (me.username, me.acct))
check(str(me.id) == user, "the account id is the user id", me.id)

# The same name again is refused with an error, not a second account.
other = Mastodon(client_id=client_id, client_secret=client_secret, api_base_url=BASE)
try:
    other.create_account(user, "another password", "x@example.invalid", agreement=True, scopes=SCOPES)
    raise AssertionError("registering a taken name succeeded")
except MastodonError as error:
    check("taken" in str(error), "the refusal says the name is taken", str(error))

# Without agreement=True Mastodon.py leaves the field out, and the server refuses.
try:
    other.create_account(name("noagree"), "correct horse battery", "y@example.invalid", scopes=SCOPES)
    raise AssertionError("registration without agreement succeeded")
except MastodonError as error:
    check("agreement" in str(error), "the refusal names the agreement", str(error))

# Revocation holds at once: the token no longer works.
api.revoke_access_token(allow_http=True)
try:
    Mastodon(access_token=token, api_base_url=BASE).account_verify_credentials()
    raise AssertionError("a revoked token still verifies")
except MastodonUnauthorizedError:
    pass

passed("Mastodon.py registration through client_credentials and create_account")
