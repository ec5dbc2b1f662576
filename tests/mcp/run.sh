# run.sh — runs the MCP SDK tests when their client is installed (the test
# command installs it with `npm ci`); otherwise skips (77).
here=$(cd "$(dirname "$0")" && pwd)
# Under ./scripts/test (CORRAL_TESTS_REQUIRED) a missing dependency fails.
skip=77; [ -n "${CORRAL_TESTS_REQUIRED:-}" ] && skip=1
command -v node >/dev/null || { echo "node is not installed: skipped"; exit "${skip:-77}"; }
[ -d "$here/node_modules/@modelcontextprotocol/sdk" ] ||
  { echo "the MCP SDK is not installed (npm ci in tests/mcp): skipped"; exit "${skip:-77}"; }
cd "$here" && exec node --test --test-concurrency=1 mcp.test.mjs
