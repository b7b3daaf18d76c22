#!/usr/bin/env bash
# Installs the pinned k6 from the Go module proxy (needs Go) and prints its path.
set -euo pipefail
K6_VERSION="v1.8.1"
bin="$(go env GOPATH)/bin/k6"
if [[ -x "$bin" ]] && "$bin" version 2>/dev/null | grep -q "${K6_VERSION}"; then
  echo "$bin"
  exit 0
fi
echo "installing k6 ${K6_VERSION} with go install (takes a few minutes the first time)" >&2
go install "go.k6.io/k6@${K6_VERSION}" >&2
echo "$bin"
