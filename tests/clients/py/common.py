"""What every client scenario shares: the server's address (tests/clients.rs passes it
in SOCIALITE_BASE_URL), fresh names, registration through Mastodon.py, a check that
says what it expected, and headless Chromium from Debian's packages."""

import os
import secrets
import sys

from mastodon import Mastodon

BASE = os.environ["SOCIALITE_BASE_URL"]
SCOPES = ["read", "write", "follow", "push"]


def name(prefix):
    """A user id no other scenario on this server uses (ids are [A-Za-z0-9_], 1 to 32)."""
    return f"{prefix}_{secrets.token_hex(4)}"


def check(condition, what, got=None):
    """Fails the scenario, saying what was expected and what came instead."""
    if not condition:
        raise AssertionError(what if got is None else f"{what}; got {got!r}")


def app(redirect_uris=None, name="socialite client test"):
    """A Mastodon.py app on this server: (client_id, client_secret)."""
    return Mastodon.create_app(name, scopes=SCOPES, redirect_uris=redirect_uris, api_base_url=BASE)


def register(prefix, password="correct horse battery"):
    """A new user, registered as Mastodon.py does it (a client_credentials token, then
    POST /api/v1/accounts); returns (user id, password, a signed-in Mastodon)."""
    client_id, client_secret = app()
    user = name(prefix)
    api = Mastodon(client_id=client_id, client_secret=client_secret, api_base_url=BASE)
    token = api.create_account(user, password, f"{user}@example.invalid", agreement=True, scopes=SCOPES)
    check(token, "create_account answers an access token", token)
    return user, password, Mastodon(access_token=token, api_base_url=BASE)


def chromium(javascript=True):
    """Debian's headless chromium through Debian's chromedriver; selenium is handed the
    driver's path so that it never fetches one. The flags keep Chromium off the network
    (this machine's is closed) and out of any profile."""
    import tempfile

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    profile = tempfile.mkdtemp(prefix="socialite-chromium-")
    for flag in [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
    ]:
        options.add_argument(flag)
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    return webdriver.Chrome(options=options, service=Service(executable_path="/usr/bin/chromedriver"))


def submit(browser, selector):
    """Clicks the form button `selector` and waits until the page it was on is gone: a
    click returns before the next page loads, and a lookup straight after it would read
    the old page."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    button = browser.find_element(By.CSS_SELECTOR, selector)
    button.click()
    WebDriverWait(browser, 30).until(expected_conditions.staleness_of(button))


def element(browser, by, value):
    """The element once the page shows it (up to 30 s): pages load after the click that
    asked for them."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, 30).until(expected_conditions.presence_of_element_located((by, value)))


def passed(scenario):
    """The line tests/clients.rs looks for: a script that stopped early without failing
    does not pass."""
    print(f"scenario passed: {scenario}")
    sys.stdout.flush()


def eventually(read, ok, what, limit=30.0):
    """Reads until `ok(value)` holds and answers that value: counts, timelines and
    notifications are kept by the server's workers, which apply a write shortly after it
    is acknowledged. Fails with the last value after `limit` seconds (a bound on a
    worker's lag, not a measurement)."""
    import time

    deadline = time.monotonic() + limit
    while True:
        value = read()
        if ok(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {limit} s; last read {value!r}")
        time.sleep(0.2)
