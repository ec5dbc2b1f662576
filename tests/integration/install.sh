# `meson install` into a temporary prefix; then the examples build against
# the installed library through pkg-config and run; the man pages render;
# the example policies parse.
. "$(dirname "$0")/../lib.sh"
: "${SOURCE_ROOT:?}"
tmp=$(mktemp -d /var/tmp/corral-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
t "meson install into a temporary prefix"
meson setup "$tmp/build" "$SOURCE_ROOT" --prefix "$tmp/prefix" --buildtype=release \
  -Dtests=disabled >/dev/null && ninja -C "$tmp/build" >/dev/null && \
  meson install -C "$tmp/build" --quiet >/dev/null
expect_eq 0 $? "install"
p="$tmp/prefix"
for f in bin/corral include/corral.h share/man/man1/corral.1 share/man/man5/corral-policy.5 \
         share/man/man7/corral-mcp.7 share/bash-completion/completions/corral; do
  [ -e "$p/$f" ] && pass || fail "$f not installed"
done
[ -n "$(find "$p" -name 'libcorral.so*')" ] && pass || fail "no shared library"
[ -n "$(find "$p" -name libcorral.a)" ] && pass || fail "no static library"
pcdir=$(dirname "$(find "$p" -name corral.pc | head -1)")
[ -n "$pcdir" ] && pass || fail "no corral.pc"
export PKG_CONFIG_PATH=$pcdir
libdir=$(pkg-config --variable=libdir corral)

t "the exported symbols are corral_* only"
bad=$(nm -D --defined-only "$libdir/libcorral.so" | awk '$2 ~ /[TDBR]/ {print $3}' | grep -v '^corral_' | head -3)
expect_eq "" "$bad"

t "the examples build against the installed library and run"
cd "$tmp"
for ex in run sessions; do
  cc -Wall -Wextra -Werror -o "$tmp/$ex" "$SOURCE_ROOT/examples/$ex.c" \
    $(pkg-config --cflags --libs corral) -Wl,-rpath,"$libdir"
  expect_eq 0 $? "build examples/$ex.c"
done
out=$("$tmp/run" sh -c 'echo from-the-example; echo x > made.txt')
expect_eq 0 $? "examples/run"
expect_contains "$out" from-the-example
expect_contains "$out" '"backend":"linux"'
expect_contains "$out" '"path":"made.txt"'
out=$("$tmp/sessions")
expect_eq 0 $? "examples/sessions"
expect_contains "$out" echoed
cc -o "$tmp/static" "$SOURCE_ROOT/examples/run.c" -I"$p/include" "$libdir/libcorral.a" \
  $(pkg-config --libs jansson libseccomp) -lpthread -lm
expect_eq 0 $? "static link"

t "the static library defines corral_* only: an embedder's own error_set links"
bad=$(nm -g --defined-only "$libdir/libcorral.a" | awk 'NF == 3 {print $3}' | grep -v '^corral_' | head -3)
expect_eq "" "$bad"
cat > "$tmp/embedder.c" <<'EOF2'
#include <corral.h>
#include <stdio.h>
int error_set(void) { return 7; }       /* names corral uses inside */
int sha256(int x) { return x + 1; }
int mkdir_p(void) { return 0; }
int main(void) {
  corral_request r;
  corral_request_init(&r);
  corral_request_free(&r);
  printf("%d %d %d\n", error_set(), sha256(1), mkdir_p());
  return 0;
}
EOF2
cc -o "$tmp/embedder" "$tmp/embedder.c" -I"$p/include" "$libdir/libcorral.a" \
  $(pkg-config --libs jansson libseccomp) -lpthread -lm
expect_eq 0 $? "link an embedder with its own error_set, sha256, mkdir_p"
expect_eq "7 2 0" "$("$tmp/embedder")"

t "every C block of the README compiles as written (against the installed header)"
python3 - "$SOURCE_ROOT/README.md" "$tmp/readme" <<'EOF2'
import re, sys
text = open(sys.argv[1]).read()
for i, block in enumerate(re.findall(r"```c\n(.*?)```", text, re.S)):
    open("%s-%d.c" % (sys.argv[2], i), "w").write(block)
EOF2
n=0
for c in "$tmp"/readme-*.c; do
  n=$((n + 1))
  if grep -q 'int main' "$c"; then
    cc -Wall -Wextra -Werror -o "${c%.c}" "$c" $(pkg-config --cflags --libs corral)
  else
    cc -Wall -Wextra -Werror -c -o "${c%.c}.o" "$c" $(pkg-config --cflags corral)
  fi
  expect_eq 0 $? "README block $(basename "$c")"
done
[ "$n" -ge 2 ] && pass || fail "no C blocks found in the README"

t "the example policies parse"
for pol in "$SOURCE_ROOT"/examples/policy-*.json; do
  "$p/bin/corral" policy --policy "$pol" >/dev/null
  expect_eq 0 $? "$(basename "$pol")"
done
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$SOURCE_ROOT/examples/mcp-client-config.json"
expect_eq 0 $? "mcp-client-config.json"

t "man -l renders every page without warnings"
for page in "$p"/share/man/man*/*; do
  warn=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
  expect_eq "" "$warn" "$(basename "$page")"
done
finish
