# --help of every subcommand: exits 0, lists each flag once; every flag it
# lists is accepted by the parser, and an unlisted one is refused with a
# hint and exit 2 (the two lists come from one table; this keeps it so).
. "$(dirname "$0")/../lib.sh"
cd "$(mktemp -d)"
t "corral --help and --version"
"$CORRAL" --help | grep -q "run" && pass || fail "no command list"
expect_eq "corral 0.1.0" "$("$CORRAL" --version)"
for cmd in run exec mcp policy doctor; do
  t "corral $cmd --help"
  help=$("$CORRAL" "$cmd" --help); expect_eq 0 $? "exit"
  flags=$(printf '%s\n' "$help" | grep -oE '^  --[a-z-]+' | tr -d ' ')
  [ -n "$flags" ] && pass || fail "no flags listed"
  for f in $flags; do
    err=$("$CORRAL" "$cmd" "$f" 2>&1 </dev/null | head -3)
    expect_not_contains "$err" "unknown option"
  done
  err=$("$CORRAL" "$cmd" --no-such-flag 2>&1); expect_eq 2 $? "unknown flag exit"
  expect_contains "$err" "Try \`corral $cmd --help\`"
done
t "unknown subcommand"
err=$("$CORRAL" frobnicate 2>&1); expect_eq 2 $?
expect_contains "$err" "corral --help"
finish
