#!/usr/bin/env bash
# run.sh BUILD_DIR SECONDS_PER_TARGET — runs each libFuzzer target from its
# seed corpus (tests/fuzz/corpus/<target>, read only: new inputs go to a
# temporary directory).  A crash fails the run and leaves the input in
# $CRASH_DIR (default: a temporary directory) to be added to the corpus as a
# regression case.  Prints executions per target.
#
# A long run:  tests/fuzz/run.sh build-fuzz 3600
set -uo pipefail
build=$1 secs=$2
here=$(cd "$(dirname "$0")" && pwd)
crash=${CRASH_DIR:-$(mktemp -d)}
rc=0
for t in request policy mcp proxy; do
  work=$(mktemp -d)
  log=$(mktemp)
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$crash/$t-" "$work" "$here/corpus/$t" >"$log" 2>&1
  r=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  [ -n "$execs" ] || execs=$(grep -Eo '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  echo "fuzz_$t: ${secs}s, ${execs:-?} executions, exit $r"
  if [ $r -ne 0 ]; then
    tail -40 "$log"
    rc=1
  fi
  rm -rf "$work" "$log"
done
[ $rc -eq 0 ] && echo "fuzz: no crash" || echo "fuzz: crashing inputs in $crash"
exit $rc
