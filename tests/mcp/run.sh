# run.sh — runs the MCP SDK tests when their client is installed (the test
# command installs it with `npm ci`); otherwise skips (77).
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null || { echo "node is not installed: skipped"; exit 77; }
[ -d "$here/node_modules/@modelcontextprotocol/sdk" ] ||
  { echo "the MCP SDK is not installed (npm ci in tests/mcp): skipped"; exit 77; }
cd "$here" && exec node --test --test-concurrency=1 mcp.test.mjs
