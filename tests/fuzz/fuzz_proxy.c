/* libFuzzer: the proxies' request parsers (what the command sends them),
 * and the rules' checks on the names they yield.  The first byte picks
 * the parser; every prefix of the rest is fed, as bytes arrive one recv
 * at a time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  static struct net_rules rules;
  static int ready;
  if (!ready) {
    const char *why;
    net_rules_add(&rules, "example.org", false, NULL, &why);
    net_rules_add(&rules, "*.example.com:8443", false, NULL, &why);
    net_rules_add(&rules, "bad.example.org", true, "a reason", &why);
    net_rules_allow_range(&rules, "127.0.0.1", &why);
    ready = 1;
  }
  bool socks = data[0] & 1;
  const uint8_t *buf = data + 1;
  size_t len = size - 1;
  for (size_t n = len > 64 ? len - 64 : 0; n <= len; n++) {
    const char *reason;
    if (socks) {
      struct socks_request rq;
      int rep;
      if (proxy_parse_socks(buf, n, &rq, &rep) == 1)
        net_rules_check(&rules, rq.host, rq.port, &reason);
    } else {
      struct http_request rq;
      const char *why;
      int status;
      if (proxy_parse_http((const char *)buf, n, &rq, &why, &status) == 1) {
        net_rules_check(&rules, rq.host, rq.port, &reason);
        if (rq.forward && (rq.forward_len < 4 || memcmp(rq.forward + rq.forward_len - 4,
                                                         "\r\n\r\n", 4) != 0))
          abort(); /* the head sent upstream always ends where it should */
        free(rq.forward);
      }
    }
  }
  return 0;
}
