"""Mastodon.py's code flow through the authorize page: auth_request_url, the page in
headless Chromium (sign in, approve), the redirect with a code landing at the app's
redirect URI, and log_in(code=...) exchanging it for a token."""

import urllib.parse

from mastodon import Mastodon
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from common import BASE, SCOPES, app, check, chromium, element, passed, register, submit
from redirect_catcher import Catcher

catcher = Catcher()
user, password, _ = register("code")
client_id, client_secret = app(redirect_uris=catcher.uri)
api = Mastodon(client_id=client_id, client_secret=client_secret, api_base_url=BASE)
url = api.auth_request_url(redirect_uris=catcher.uri, scopes=SCOPES, state="s-123", allow_http=True)
check(url.startswith(BASE + "/oauth/authorize"), "the authorize URL is this server's page", url)

browser = chromium()
try:
    browser.get(url)
    browser.find_element(By.ID, "user").send_keys(user)
    browser.find_element(By.ID, "password").send_keys(password)
    submit(browser, "button[value=approve]")
    WebDriverWait(browser, 30).until(lambda b: b.current_url.startswith(catcher.uri))
    landed = browser.current_url
    check(element(browser, By.ID, "landed").text == "redirected", "the redirect page loaded")
finally:
    browser.quit()
    catcher.close()

query = urllib.parse.parse_qs(urllib.parse.urlsplit(landed).query)
check(query.get("state") == ["s-123"], "the redirect carries the state", landed)
code = query.get("code", [None])[0]
check(code, "the redirect carries a code", landed)
check(catcher.queries and catcher.queries[-1].get("code") == [code], "the app's redirect URI got the code", catcher.queries)

token = api.log_in(code=code, redirect_uri=catcher.uri, scopes=SCOPES, allow_http=True)
check(token, "the code is exchanged for a token", token)
check(api.account_verify_credentials().username == user, f"the code flow signs in {user}")

# A code is spent by its first exchange.
again = Mastodon(client_id=client_id, client_secret=client_secret, api_base_url=BASE)
try:
    again.log_in(code=code, redirect_uri=catcher.uri, scopes=SCOPES, allow_http=True)
    raise AssertionError("a spent code was exchanged twice")
except Exception as error:
    print(f"second exchange refused: {type(error).__name__}: {error}")

passed("Mastodon.py code flow through the authorize page in Chromium")
