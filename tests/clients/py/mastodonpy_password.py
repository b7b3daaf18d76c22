"""Mastodon.py signs in with the password grant (log_in with a user name and password),
after reading the server's OAuth metadata, which must list the grant."""

from mastodon import Mastodon, MastodonError

from common import BASE, SCOPES, app, check, passed, register

user, password, _ = register("pw")
client_id, client_secret = app()
api = Mastodon(client_id=client_id, client_secret=client_secret, api_base_url=BASE)
token = api.log_in(user, password, scopes=SCOPES, allow_http=True)
check(token and len(token) == 64, "log_in answers a 64-character OAuth token", token)
me = api.account_verify_credentials()
check(me.username == user, f"the password grant signs in {user}", me.username)

# A wrong password is refused, and so is an unknown user.
for who, secret in [(user, "wrong password!"), ("nobody_here", password)]:
    try:
        Mastodon(client_id=client_id, client_secret=client_secret, api_base_url=BASE).log_in(
            who, secret, scopes=SCOPES, allow_http=True
        )
        raise AssertionError(f"log_in as {who} with a wrong secret succeeded")
    except MastodonError as error:
        print(f"refused as expected: {type(error).__name__}: {error}")

# A narrower token than the app's: Mastodon.py checks the granted scopes itself.
narrow = Mastodon(client_id=client_id, client_secret=client_secret, api_base_url=BASE)
narrow.log_in(user, password, scopes=["read"], allow_http=True)
check(narrow.account_verify_credentials().username == user, "a read token reads verify_credentials")

passed("Mastodon.py sign-in with the password grant")
