#!/usr/bin/env python3
"""The same data on socialite and on GoToSocial, through the Mastodon client API, for
loadtest/gts_compare.sh: a reader following AUTHORS authors with POSTS posts each, and a
poster with FOLLOWERS followers. Prints a JSON object with the reader's and the poster's
tokens and how long each step took.

  gts_data.py socialite BASE_URL
  gts_data.py gotosocial BASE_URL PASSWORD   (accounts made beforehand with
                                              `gotosocial admin account create`)

Accounts are r0 (the reader), p0 (the poster), a0.. (authors), f0.. (followers).
Standard library only; requests run on a few threads.
"""

import http.cookiejar
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

AUTHORS = int(os.environ.get("AUTHORS", "1000"))
POSTS = int(os.environ.get("POSTS", "3"))
FOLLOWERS = int(os.environ.get("FOLLOWERS", "100"))
THREADS = int(os.environ.get("THREADS", "8"))
SCOPES = "read write follow"
OOB = "urn:ietf:wg:oauth:2.0:oob"


def names():
    return (
        ["r0", "p0"]
        + [f"a{i}" for i in range(AUTHORS)]
        + [f"f{i}" for i in range(FOLLOWERS)]
    )


def call(base, method, path, token=None, form=None, opener=None):
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("User-Agent", "socialite-compare")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/x-www-form-urlencoded")
    for attempt in range(5):
        try:
            open_ = opener.open if opener else urllib.request.urlopen
            with open_(request) as response:
                body = response.read()
                return response.geturl(), json.loads(body) if body.startswith((b"{", b"[")) else body
        except urllib.error.HTTPError as error:
            if error.code in (429, 503) and attempt < 4:
                time.sleep(1 + attempt)
                continue
            raise SystemExit(f"{method} {path}: {error.code} {error.read()[:300]!r}")
    raise SystemExit(f"{method} {path}: gave up")


def app(base):
    _, created = call(base, "POST", "/api/v1/apps", form={
        "client_name": "compare", "redirect_uris": OOB, "scopes": SCOPES,
    })
    return created["client_id"], created["client_secret"]


def socialite_tokens(base):
    """Registration through an app token, as Mastodon does: one Token per account."""
    client_id, secret = app(base)
    _, granted = call(base, "POST", "/oauth/token", form={
        "grant_type": "client_credentials", "client_id": client_id,
        "client_secret": secret, "scope": SCOPES,
    })
    app_token = granted["access_token"]

    def register(name):
        _, token = call(base, "POST", "/api/v1/accounts", token=app_token, form={
            "username": name, "email": f"{name}@example.org",
            "password": "compare-password-1", "agreement": "true", "locale": "en",
        })
        return name, token["access_token"]

    with ThreadPoolExecutor(THREADS) as pool:
        return dict(pool.map(register, names()))


def gotosocial_tokens(base, password):
    """The code flow, as a person signs in: the authorize page, the sign-in form, the
    approval, and the out-of-band page's code."""
    client_id, secret = app(base)

    def sign_in(name):
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        query = urllib.parse.urlencode({
            "client_id": client_id, "redirect_uri": OOB, "response_type": "code",
            "scope": SCOPES,
        })
        call(base, "GET", f"/oauth/authorize?{query}", opener=opener)
        call(base, "POST", "/auth/sign_in", opener=opener, form={
            "username": f"{name}@example.org", "password": password,
        })
        url, _ = call(base, "POST", "/oauth/authorize", opener=opener, form={})
        code = urllib.parse.parse_qs(urllib.parse.urlparse(url).query).get("code", [""])[0]
        if not code:
            raise SystemExit(f"no code for {name} at {url}")
        _, token = call(base, "POST", "/oauth/token", form={
            "grant_type": "authorization_code", "code": code, "client_id": client_id,
            "client_secret": secret, "redirect_uri": OOB,
        })
        return name, token["access_token"]

    with ThreadPoolExecutor(THREADS) as pool:
        return dict(pool.map(sign_in, names()))


def main():
    kind, base = sys.argv[1], sys.argv[2].rstrip("/")
    took = {}
    start = time.monotonic()
    if kind == "socialite":
        tokens = socialite_tokens(base)
    else:
        tokens = gotosocial_tokens(base, sys.argv[3])
    took["accounts"] = round(time.monotonic() - start, 1)

    def account_id(name):
        # GoToSocial makes accounts locked, where a follow is only a request: unlock.
        _, me = call(base, "PATCH", "/api/v1/accounts/update_credentials", token=tokens[name],
                     form={"locked": "false"})
        if me.get("locked"):
            raise SystemExit(f"{name} is still locked")
        return name, me["id"]

    start = time.monotonic()
    with ThreadPoolExecutor(THREADS) as pool:
        ids = dict(pool.map(account_id, names()))
        follows = [("r0", f"a{i}") for i in range(AUTHORS)]
        follows += [(f"f{i}", "p0") for i in range(FOLLOWERS)]
        list(pool.map(
            lambda pair: call(base, "POST", f"/api/v1/accounts/{ids[pair[1]]}/follow",
                              token=tokens[pair[0]], form={}),
            follows,
        ))
    took["follows"] = round(time.monotonic() - start, 1)
    start = time.monotonic()
    posts = [(f"a{i}", n) for n in range(POSTS) for i in range(AUTHORS)]
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(
            lambda p: call(base, "POST", "/api/v1/statuses", token=tokens[p[0]], form={
                "status": f"post {p[1]} by {p[0]}: the same words on both servers #compare",
                "visibility": "public",
            }),
            posts,
        ))
    took["posts"] = round(time.monotonic() - start, 1)
    json.dump({"reader": tokens["r0"], "poster": tokens["p0"], "took_s": took}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
