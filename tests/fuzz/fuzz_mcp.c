/* libFuzzer: one MCP message through the server's dispatcher.  There is no
 * adapter, so exec_command never launches anything: the stub launcher is
 * the fail-closed path (sandbox_setup_failure). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"

static void check_line(void *ctx, const char *line, size_t len) {
  (void)ctx;
  /* every answer must be one valid JSON object, on one line */
  json_error_t e;
  json_t *v = json_loadb(line, len, 0, &e);
  if (!v || !json_is_object(v) || memchr(line, '\n', len))
    abort();
  json_decref(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct mcp_server server;
  static char *roots[] = {"/tmp"};
  static bool ready;
  if (!ready) {
    mcp_server_init(&server, NULL, roots, 1, "/bin/sh");
    server.send = check_line;
    ready = true;
  }
  mcp_handle_line(&server, (const char *)data, size);
  mcp_tick_until(&server, INT64_MAX);
  return 0;
}
