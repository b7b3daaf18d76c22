"""The authorize page alone in headless Chromium with JavaScript switched off (the page
must need none): a wrong password keeps the user on the page with an error; Approve
lands on the app's redirect URI with a code and the state, which the token endpoint
exchanges with the PKCE verifier; Deny lands there with error=access_denied; an
out-of-band app is shown its code on a page."""

import base64
import hashlib
import secrets
import urllib.parse

import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from common import BASE, check, chromium, element, name, passed, submit
from redirect_catcher import Catcher

OOB = "urn:ietf:wg:oauth:2.0:oob"
catcher = Catcher()
answer = requests.post(
    f"{BASE}/api/v1/apps",
    data={"client_name": "Browser test", "redirect_uris": f"{catcher.uri}\n{OOB}", "scopes": "read write"},
)
check(answer.status_code == 200, "the app is registered", answer.text)
client = answer.json()
user, password = name("web"), "correct horse battery"
answer = requests.post(f"{BASE}/v1/users", json={"id": user, "password": password})
check(answer.status_code == 201, "the user is made", answer.text)

verifier = secrets.token_urlsafe(48)
challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def authorize_url(redirect_uri, state):
    return f"{BASE}/oauth/authorize?" + urllib.parse.urlencode(
        {
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": redirect_uri,
            "scope": "read write",
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
    )


def sign_in(browser, url, secret, decision):
    browser.get(url)
    check("Browser test" in browser.page_source, "the page names the app")
    browser.find_element(By.ID, "user").clear()
    browser.find_element(By.ID, "user").send_keys(user)
    browser.find_element(By.ID, "password").send_keys(secret)
    submit(browser, f"button[value={decision}]")


def landed_query(browser):
    WebDriverWait(browser, 30).until(lambda b: b.current_url.startswith(catcher.uri))
    return urllib.parse.parse_qs(urllib.parse.urlsplit(browser.current_url).query)


browser = chromium(javascript=False)
try:
    # The page itself needs no script: with JavaScript off, nothing here would work if it did.
    sign_in(browser, authorize_url(catcher.uri, "wrong"), "not the password", "approve")
    error = element(browser, By.CSS_SELECTOR, "p.error")
    check(error.text, "a wrong password shows an error on the page", browser.page_source)
    check(browser.current_url.startswith(BASE), "a wrong password stays on the page", browser.current_url)

    sign_in(browser, authorize_url(catcher.uri, "yes"), password, "approve")
    query = landed_query(browser)
    check(query.get("state") == ["yes"], "Approve carries the state", query)
    code = query["code"][0]

    sign_in(browser, authorize_url(catcher.uri, "no"), password, "deny")
    query = landed_query(browser)
    check(query.get("error") == ["access_denied"] and query.get("state") == ["no"], "Deny says access_denied", query)
    check("code" not in query, "Deny carries no code", query)

    sign_in(browser, authorize_url(OOB, "oob"), password, "approve")
    shown = element(browser, By.ID, "code").text
    check(shown, "an out-of-band app is shown its code")
finally:
    browser.quit()
    catcher.close()


def exchange(code, redirect_uri, code_verifier):
    return requests.post(
        f"{BASE}/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": client["client_id"],
            "client_secret": client["client_secret"],
            "redirect_uri": redirect_uri,
            "code_verifier": code_verifier,
        },
    )


answer = exchange(code, catcher.uri, verifier)
check(answer.status_code == 200, "the redirect's code is exchanged with the verifier", answer.text)
token = answer.json()["access_token"]
me = requests.get(f"{BASE}/api/v1/accounts/verify_credentials", headers={"authorization": f"Bearer {token}"})
check(me.status_code == 200 and me.json()["username"] == user, f"the token signs in {user}", me.text)

answer = exchange(shown, OOB, "a" * 43)
check(answer.status_code == 400, "a code with the wrong PKCE verifier is refused", answer.text)

passed("the authorize page in headless Chromium, without JavaScript")
