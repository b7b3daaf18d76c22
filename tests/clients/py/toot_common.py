"""toot is a command-line client: the scenarios run it as a person would, with its
configuration (accounts and tokens) in the temporary $XDG_CONFIG_HOME that
tests/clients.rs gives each scenario. Users are registered through toot's own API
module, as toot's integration tests do (an app, a client_credentials token, then
POST /api/v1/accounts as JSON)."""

import json
import os
import subprocess
import sys

from toot import App, api

from common import BASE, check, name

TOOT = os.path.join(os.path.dirname(sys.executable), "toot")


def toot(*args, check_status=True):
    """Runs `toot ARGS`; answers its output, and fails with it on a non-zero exit."""
    run = subprocess.run([TOOT, "--no-color", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    print(f"$ toot {' '.join(args)}\n{run.stdout}{run.stderr}", end="")
    if check_status:
        check(run.returncode == 0, f"`toot {' '.join(args)}` exits 0", run.returncode)
    return run


def register(prefix, password="correct horse battery"):
    """A user registered through toot.api, then signed in with `toot login_cli` (the
    password grant); returns (user id, toot's name for the account, for --as/--using)."""
    created = api.create_app(BASE)
    app = App(BASE.split("://", 1)[1], BASE, created["client_id"], created["client_secret"])
    user = name(prefix)
    token = api.register_account(app, user, f"{user}@example.invalid", password)
    check("access_token" in token, "toot's register_account answers a token", token)
    toot("login_cli", "--instance", BASE, "--email", user, "--password", password)
    with open(os.path.join(os.environ["XDG_CONFIG_HOME"], "toot", "config.json")) as file:
        accounts = [key for key in json.load(file)["users"] if key.split("@", 1)[0] == user]
    check(len(accounts) == 1, f"toot's config holds {user}", accounts)
    return user, accounts[0]
