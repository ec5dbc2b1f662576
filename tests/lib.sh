# lib.sh — tiny assertion helpers for the tests that drive the real binary.
# Each test file sources this, calls `ok`/`expect_*`, and ends with `finish`.
set -u
: "${CORRAL:?CORRAL must point at the corral binary}"
passed=0
failed=0
current=""

t() { current="$*"; }
pass() { passed=$((passed + 1)); }
fail() {
  failed=$((failed + 1))
  printf 'FAIL: %s: %s\n' "$current" "$*" >&2
}
# expect_eq WANT GOT [what]
expect_eq() {
  if [ "$1" = "$2" ]; then pass; else fail "${3:-value}: want [$1], got [$2]"; fi
}
# expect_contains HAYSTACK NEEDLE
expect_contains() {
  case "$1" in *"$2"*) pass ;; *) fail "[$2] not found in [$(printf '%s' "$1" | head -c 600)]" ;; esac
}
expect_not_contains() {
  case "$1" in *"$2"*) fail "[$2] unexpectedly found" ;; *) pass ;; esac
}
expect_absent() { if [ -e "$1" ] || [ -L "$1" ]; then fail "$1 exists"; else pass; fi; }
# jq-free JSON field access through python3 (present on Debian's base).
json_get() { python3 -c 'import json,sys
v=json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[int(k)] if isinstance(v, list) else v.get(k) if isinstance(v, dict) else None
print("null" if v is None else (json.dumps(v) if isinstance(v,(dict,list,bool)) else v))' "$1"; }
# The cached mask of the view that holds $HOME (its own or an ancestor's),
# from a run's mountinfo on stdin: "MASK DIR", DIR being where HOME's
# entries are in it.  Other tests share the cache; this one is HOME's.
home_mask() {
  python3 -c 'import os, re, sys
masks, home = sys.argv[1], os.environ["HOME"]
for m in re.finditer(r"lowerdir=(" + re.escape(masks) + r"/[0-9a-f]+):([^ ,]+)", sys.stdin.read()):
    view = m.group(2)
    if home == view or home.startswith(view.rstrip("/") + "/"):
        print(m.group(1), m.group(1) + home[len(view.rstrip("/")):]); break' "/var/tmp/corral-masks-$(id -u)"
}
finish() {
  printf '%d passed, %d failed\n' "$passed" "$failed"
  [ "$failed" -eq 0 ]
}
# "--allow-read PATH" for each daemon socket this machine has: tests of the
# landlock-only adapter pass them, since it cannot hide those sockets and
# refuses to run otherwise (a refusal tested on its own).
socket_allows() {
  "$CORRAL" policy | python3 -c 'import json,sys
for p in json.load(sys.stdin)["hiddenSockets"]: print("--allow-read"); print(p)'
}
