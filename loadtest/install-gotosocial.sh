#!/usr/bin/env bash
# Builds GoToSocial v0.19.2 from the Go module proxy, for loadtest/gts_compare.sh, and
# prints the path of its directory (the binary is bin/gotosocial, the web templates
# web/template). Idempotent: a built tree is reused.
#
# The release's module is published under its old path (github.com/superseriousbusiness/
# gotosocial) but declares code.superseriousbusiness.org/gotosocial, so `go install`
# refuses it: the module's zip is downloaded and built as a main module instead. Its
# zip carries vendor/modules.txt without the vendored sources, so the build fetches the
# dependencies its go.sum pins (-mod=mod) after removing that file. One of them
# (codeberg.org/gruf/go-mutexes v1.5.2) links into the runtime of Go 1.22 to 1.24 only,
# so the build takes Go 1.24.11 from the Go module proxy (GOTOOLCHAIN).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version="v0.19.2"
dir="$root/target/gotosocial-$version"
if [[ -x "$dir/bin/gotosocial" ]]; then
  echo "$dir"
  exit 0
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
# `go mod download` needs a main module to resolve in; the path mismatch is only an
# error once the module is required, so its zip is fetched through -json output.
go mod init scratch >/dev/null 2>&1
zip="$(GOFLAGS=-mod=mod go mod download -json "github.com/superseriousbusiness/gotosocial@$version" 2>/dev/null \
  | python3 -c 'import json,sys; print(json.load(sys.stdin).get("Zip",""))')"
if [[ -z "$zip" || ! -f "$zip" ]]; then
  echo "install-gotosocial: could not download github.com/superseriousbusiness/gotosocial@$version" >&2
  exit 1
fi
rm -rf "$dir.tmp"
mkdir -p "$dir.tmp"
(cd "$dir.tmp" && unzip -q "$zip")
src="$dir.tmp/github.com/superseriousbusiness/gotosocial@$version"
chmod -R u+w "$src"
rm -rf "$src/vendor"
(cd "$src" && GOTOOLCHAIN=go1.24.11 GOFLAGS=-mod=mod go build -trimpath -o bin/gotosocial ./cmd/gotosocial) >&2
mv "$src" "$dir"
rm -rf "$dir.tmp"
echo "$dir"
