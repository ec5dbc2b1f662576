/* output.c — command output cut to an agent's budget, always valid UTF-8. */
#include <stdio.h>

#include "../internal.h"
#include "../json_util.h"
#include "mcp.h"

#define TRUNCATED "\n[corral] output truncated\n"
#define DROPPED "[corral] output was dropped in the middle (more than 2 MiB waited unread)\n"

/* Where a suffix of at most n bytes may start without splitting a character. */
static size_t suffix_start(const char *data, size_t len, size_t n) {
  size_t start = len > n ? len - n : 0;
  while (start < len && ((unsigned char)data[start] & 0xC0) == 0x80)
    start++;
  return start;
}

char *mcp_format_output(const char *data, size_t len, size_t max_bytes, bool dropped,
                        size_t *out_len) {
  size_t head = len, tail_from = len;
  if (len > max_bytes) {
    head = utf8_prefix_len(data, max_bytes / 2);
    tail_from = suffix_start(data, len, max_bytes - max_bytes / 2);
    if (tail_from < head)
      tail_from = head;
  }
  size_t hl, tl;
  bool valid;
  char *h = utf8_sanitize(data, head, &hl, &valid);
  char *t = utf8_sanitize(data + tail_from, len - tail_from, &tl, &valid);
  size_t total = (dropped ? strlen(DROPPED) : 0) + hl +
                 (len > max_bytes ? strlen(TRUNCATED) : 0) + tl + 1;
  char *out = h && t ? malloc(total) : NULL;
  if (out) {
    size_t o = 0;
    if (dropped)
      o += (size_t)sprintf(out, "%s", DROPPED);
    memcpy(out + o, h, hl);
    o += hl;
    if (len > max_bytes) {
      memcpy(out + o, TRUNCATED, strlen(TRUNCATED));
      o += strlen(TRUNCATED);
    }
    memcpy(out + o, t, tl);
    o += tl;
    out[o] = '\0';
    *out_len = o;
  }
  free(h);
  free(t);
  return out;
}
