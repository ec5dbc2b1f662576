#!/usr/bin/env bash
# Builds the Go contract test (no dependencies beyond Go's standard library,
# so nothing is fetched) and runs it against $CORRAL.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# Without Go it is skipped (77), except under ./scripts/test, where a
# missing test dependency fails.
if ! command -v go >/dev/null; then
  echo "go is not installed (golang-go): skipped"
  [ -n "${CORRAL_TESTS_REQUIRED:-}" ] && exit 1 || exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOCACHE=$tmp/cache GOPATH=$tmp/gopath GOPROXY=off GOFLAGS=-mod=mod GO111MODULE=on
(cd "$here" && go build -o "$tmp/contract" .)
"$tmp/contract"
