#!/usr/bin/env bash
# Builds the Go contract test (no dependencies beyond Go's standard library,
# so nothing is fetched) and runs it against $CORRAL.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOCACHE=$tmp/cache GOPATH=$tmp/gopath GOPROXY=off GOFLAGS=-mod=mod GO111MODULE=on
(cd "$here" && go build -o "$tmp/contract" .)
"$tmp/contract"
