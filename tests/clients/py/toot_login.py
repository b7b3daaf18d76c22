"""toot registers a user (toot.api, as its own integration tests do), signs in with
`toot login_cli` (instance, apps as JSON, the password grant as a form,
verify_credentials), and says who is signed in with `toot whoami` and `toot auth`; then
signs in again with `toot login`, the browser flow: the link it prints is opened in
headless Chromium, which signs in and approves, and the out-of-band code the page shows
is typed at toot's prompt."""

import subprocess

from selenium.webdriver.common.by import By

from common import BASE, check, chromium, element, passed, submit
from toot_common import TOOT, register, toot

user, account = register("toot")
check(user in toot("whoami").stdout, f"`toot whoami` names {user}")
check(account in toot("auth").stdout, f"`toot auth` lists {account}")

# A second account, then switching between them.
other, other_account = register("toot2")
check(other in toot("whoami").stdout, "the last sign-in is the active account")
toot("activate", account)
check(user in toot("whoami").stdout, f"`toot activate` switches back to {user}")

# A wrong password fails the command, not silently.
wrong = toot("login_cli", "--instance", BASE, "--email", user, "--password", "wrong one!", check_status=False)
check(wrong.returncode != 0, "`toot login_cli` with a wrong password fails", wrong.returncode)

# `toot login`: the browser flow with an out-of-band code.
login = subprocess.Popen(
    [TOOT, "--no-color", "login", "--instance", BASE],
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    stderr=subprocess.STDOUT,
    text=True,
)
url = None
for line in login.stdout:
    print(line, end="")
    if line.startswith(BASE + "/oauth/authorize"):
        url = line.strip()
        break
check(url, "`toot login` prints the authorize link")
browser = chromium()
try:
    browser.get(url)
    browser.find_element(By.ID, "user").send_keys(user)
    browser.find_element(By.ID, "password").send_keys("correct horse battery")
    submit(browser, "button[value=approve]")
    code = element(browser, By.ID, "code").text
finally:
    browser.quit()
check(code, "the page shows the out-of-band code")
rest, _ = login.communicate(f"n\n{code}\n", timeout=60)
print(rest)
check(login.returncode == 0 and "Successfully logged in" in rest, "`toot login` takes the code", login.returncode)
check(user in toot("whoami").stdout, f"after `toot login`, `toot whoami` names {user}")

passed("toot register, login_cli, login (browser), whoami")
