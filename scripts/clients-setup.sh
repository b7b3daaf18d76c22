#!/usr/bin/env bash
# Installs the real Mastodon clients that tests/clients.rs drives against a fresh
# server, at pinned versions, from their registries; idempotent (a second run with
# nothing changed installs nothing and takes about a second):
# - Python (PyPI): Mastodon.py, toot and selenium, with everything they pull in pinned
#   in tests/clients/py/requirements.txt, into a virtual environment at
#   target/clients-venv (reinstalled when that file changes);
# - JavaScript (npm): masto, pinned with its lock file in tests/clients/js
#   (`npm ci`, into tests/clients/js/node_modules, again when the lock file changes);
# - a browser: Debian's chromium and chromium-driver (/usr/bin/chromium,
#   /usr/bin/chromedriver), installed with apt-get when missing, which needs root.
# Nothing downloads a browser or a driver of its own (selenium is given Debian's).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if ! command -v chromium > /dev/null || ! command -v chromedriver > /dev/null; then
  if [[ "$(id -u)" != 0 ]]; then
    echo "clients-setup: chromium and chromedriver are missing; as root run:" >&2
    echo "  apt-get install -y chromium chromium-driver" >&2
    exit 1
  fi
  echo "clients-setup: installing Debian's chromium and chromium-driver" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium chromium-driver > /dev/null
fi

# A stamp holds the requirements a venv was made from: a changed pin makes it anew.
venv="$root/target/clients-venv"
requirements="$root/tests/clients/py/requirements.txt"
if ! cmp -s "$requirements" "$venv/requirements.installed"; then
  echo "clients-setup: making $venv from $requirements" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$requirements"
  "$venv/bin/pip" check --disable-pip-version-check > /dev/null
  cp "$requirements" "$venv/requirements.installed"
fi

js="$root/tests/clients/js"
if ! cmp -s "$js/package-lock.json" "$js/node_modules/.package-lock.installed"; then
  echo "clients-setup: npm ci in $js" >&2
  (cd "$js" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$js/package-lock.json" "$js/node_modules/.package-lock.installed"
fi
