/* The network filter's rules and the proxies' parsers, without a sandbox. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy.h"

static const char *check_addr(const struct net_rules *r, const char *text) {
  struct sockaddr_storage ss = {0};
  if (strchr(text, ':')) {
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    s6->sin6_family = AF_INET6;
    assert_int_equal(inet_pton(AF_INET6, text, &s6->sin6_addr), 1);
  } else {
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    s4->sin_family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, text, &s4->sin_addr), 1);
  }
  struct net_range own = {.family = AF_INET, .addr = {203, 0, 112, 0}, .prefix = 22};
  return net_address_check(r, (struct sockaddr *)&ss, &own, 1);
}

static void test_names_are_normalised(void **state) {
  (void)state;
  char out[NET_HOST_MAX + 1];
  assert_true(net_host_normalize("Example.ORG.", 12, out));
  assert_string_equal(out, "example.org");
  assert_true(net_host_normalize("[::1]", 5, out));
  assert_string_equal(out, "::1");
  assert_true(net_host_normalize("xn--bcher-kva.example", 21, out));
  const char *bad[] = {"", ".", "a..b", "a b", "a/b", "caf\xc3\xa9.example", "a\x1b[2J", "[zz]",
                       "x:y"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_false(net_host_normalize(bad[i], strlen(bad[i]), out));
  char long_label[80];
  memset(long_label, 'a', 64);
  long_label[64] = '\0';
  assert_false(net_host_normalize(long_label, 64, out));
}

static void test_rules_match(void **state) {
  (void)state;
  struct net_rules r = {0};
  const char *why, *reason;
  assert_int_equal(net_rules_add(&r, "example.org", false, NULL, &why), 0);
  assert_int_equal(net_rules_add(&r, "*.example.com", false, NULL, &why), 0);
  assert_int_equal(net_rules_add(&r, "git.example.org:22", false, NULL, &why), 0);
  assert_int_equal(net_rules_add(&r, "*.example.org:22", true, "no ssh", &why), 0);
  assert_int_equal(net_rules_add(&r, "[::1]:8080", false, NULL, &why), 0);
  assert_int_equal(net_rules_add(&r, "bad host", false, NULL, &why), -EINVAL);
  assert_int_equal(net_rules_add(&r, "example.org:0", false, NULL, &why), -EINVAL);
  assert_int_equal(net_rules_add(&r, "example.org:65536", false, NULL, &why), -EINVAL);
  assert_null(net_rules_check(&r, "example.org", 443, &reason));
  assert_null(net_rules_check(&r, "example.org", 80, &reason));
  assert_non_null(net_rules_check(&r, "example.org", 8080, &reason));
  assert_null(net_rules_check(&r, "a.b.example.com", 443, &reason));
  assert_non_null(net_rules_check(&r, "example.com", 443, &reason)); /* subdomains only */
  assert_non_null(net_rules_check(&r, "badexample.com", 443, &reason));
  assert_non_null(net_rules_check(&r, "git.example.org", 22, &reason)); /* deny wins */
  assert_string_equal(reason, "no ssh");
  assert_int_equal(net_rules_add(&r, "secret.example.com", true, NULL, &why), 0);
  assert_int_equal(net_rules_add(&r, "*.example.com:8443", false, NULL, &why), 0);
  assert_null(net_rules_check(&r, "open.example.com", 8443, &reason));
  assert_non_null(net_rules_check(&r, "secret.example.com", 8443, &reason)); /* every port */
  char out[NET_HOST_MAX + 1] = "untouched";
  assert_false(net_host_normalize("[\x1b[1mx]", 7, out));
  assert_string_equal(out, ""); /* nothing of a refused name is kept */
  assert_null(net_rules_check(&r, "::1", 8080, &reason));
  assert_non_null(net_rules_check(&r, "example.net", 443, &reason));
  net_rules_free(&r);
}

static void test_addresses_are_guarded(void **state) {
  (void)state;
  struct net_rules r = {0};
  const char *why;
  const char *refused[] = {"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
                           "100.64.0.1", "0.0.0.0", "224.0.0.1", "255.255.255.255", "::1", "::",
                           "fe80::1", "fd00::1", "ff02::1", "::ffff:10.0.0.1", "64:ff9b::a00:1",
                           "2002:a00:1::", "203.0.113.7", "192.0.2.1", "198.51.100.1",
                           "::127.0.0.1", "::ffff:0:127.0.0.1", "64:ff9b:1::7f00:1", "fec0::1",
                           "2001:0:4136:e378::1", "2001:db8::1", "198.18.0.1",
                           "203.0.114.9" /* on the host's own network (203.0.112.0/22) */};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
    assert_non_null(check_addr(&r, refused[i]));
  assert_null(check_addr(&r, "93.184.216.34"));
  assert_null(check_addr(&r, "2606:2800:220:1::1"));
  assert_int_equal(net_rules_allow_range(&r, "10.1.0.0/16", &why), 0);
  assert_int_equal(net_rules_allow_range(&r, "10.1.0.0/33", &why), -EINVAL);
  assert_null(check_addr(&r, "10.1.2.3"));
  assert_null(check_addr(&r, "::ffff:10.1.2.3")); /* mapped: a connection goes to 10.1.2.3 */
  /* NAT64 and 6to4 forms go to an IPv6 address: an IPv4 range does not cover them. */
  assert_non_null(check_addr(&r, "64:ff9b::a01:203"));
  assert_non_null(check_addr(&r, "2002:a01:203::"));
  assert_non_null(check_addr(&r, "10.2.0.1"));
  net_rules_free(&r);
}

static int http(const char *text, struct http_request *rq, int *status) {
  const char *why;
  return proxy_parse_http(text, strlen(text), rq, &why, status);
}

static void test_http_requests(void **state) {
  (void)state;
  struct http_request rq;
  int status;
  assert_int_equal(http("CONNECT example.org:443 HTTP/1.1\r\nHost: x\r\n\r\nTLS", &rq, &status), 1);
  assert_true(rq.connect);
  assert_string_equal(rq.host, "example.org");
  assert_int_equal(rq.port, 443);
  assert_int_equal(rq.head_len, strlen("CONNECT example.org:443 HTTP/1.1\r\nHost: x\r\n\r\n"));
  assert_int_equal(http("CONNECT [::1]:8080 HTTP/1.1\r\n\r\n", &rq, &status), 1);
  assert_string_equal(rq.host, "::1");
  assert_int_equal(http("CONNECT example.org HTTP/1.1\r\n\r\n", &rq, &status), -1);
  assert_int_equal(http("CONNECT example.org:443 HTTP/1.1\r\n", &rq, &status), 0);
  assert_int_equal(http("GET http://Example.org:8080/a?b HTTP/1.1\r\nHost: elsewhere.test\r\n"
                        "Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\n"
                        "Proxy-Authorization: x\r\nAccept: */*\r\n\r\n",
                        &rq, &status),
                   1);
  assert_false(rq.connect);
  assert_string_equal(rq.host, "example.org");
  assert_int_equal(rq.port, 8080);
  static const char want[] = "GET /a?b HTTP/1.1\r\nHost: example.org:8080\r\nAccept: */*\r\n"
                             "Connection: close\r\n\r\n"; /* the Host checked, not the client's */
  assert_int_equal(rq.forward_len, sizeof want - 1);
  assert_memory_equal(rq.forward, want, rq.forward_len);
  free(rq.forward);
  assert_int_equal(http("GET http://example.org HTTP/1.0\r\n\r\n", &rq, &status), 1);
  assert_int_equal(rq.port, 80);
  assert_memory_equal(rq.forward, "GET / HTTP/1.0\r\nHost: example.org\r\nConnection: close\r\n\r\n",
                      rq.forward_len);
  free(rq.forward);
  const char *bad[] = {"GET https://example.org/ HTTP/1.1\r\n\r\n",
                       "GET http://u:p@example.org/ HTTP/1.1\r\n\r\n",
                       "GET /relative HTTP/1.1\r\n\r\n",
                       "get http://example.org/ HTTP/1.1\r\n\r\n",
                       "GET http://example.org/ HTTP/2\r\n\r\n",
                       "GET http://example.org/ HTTP/1.1\r\nno colon\r\n\r\n",
                       "GET http://example.org/ HTTP/1.1\r\n folded: x\r\n\r\n",
                       "GET http://example.org/ HTTP/1.1\r\nConnection : keep-alive\r\n\r\n",
                       "GET http://exa mple.org/ HTTP/1.1\r\n\r\n"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_int_equal(http(bad[i], &rq, &status), -1);
  char *big = malloc(PROXY_HEAD_MAX + 1);
  memset(big, 'a', PROXY_HEAD_MAX);
  big[PROXY_HEAD_MAX] = '\0';
  assert_int_equal(http(big, &rq, &status), -1);
  assert_int_equal(status, 431);
  free(big);
}

static void test_socks_requests(void **state) {
  (void)state;
  struct socks_request rq;
  int rep;
  const unsigned char name[] = {5, 1, 0, 5, 1, 0, 3, 11, 'E', 'x', 'a', 'm', 'p', 'l', 'e', '.',
                                'o', 'r', 'g', 1, 187};
  assert_int_equal(proxy_parse_socks(name, sizeof name, &rq, &rep), 1);
  assert_true(rq.no_auth);
  assert_string_equal(rq.host, "example.org");
  assert_int_equal(rq.port, 443);
  assert_int_equal(rq.request_len, sizeof name);
  assert_int_equal(proxy_parse_socks(name, 3, &rq, &rep), 2);
  assert_int_equal(proxy_parse_socks(name, 2, &rq, &rep), 0);
  const unsigned char v4[] = {5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 80};
  assert_int_equal(proxy_parse_socks(v4, sizeof v4, &rq, &rep), 1);
  assert_string_equal(rq.host, "127.0.0.1");
  const unsigned char v6[] = {5, 1, 0, 5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                              0, 80};
  assert_int_equal(proxy_parse_socks(v6, sizeof v6, &rq, &rep), 1);
  assert_string_equal(rq.host, "::1");
  const unsigned char bind[] = {5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 0, 80};
  assert_int_equal(proxy_parse_socks(bind, sizeof bind, &rq, &rep), -1);
  assert_int_equal(rep, 7);
  const unsigned char nul[] = {5, 1, 0, 5, 1, 0, 3, 3, 'a', 0, 'b', 0, 80};
  assert_int_equal(proxy_parse_socks(nul, sizeof nul, &rq, &rep), -1);
  assert_int_equal(rep, 1); /* malformed, not the ruleset's refusal */
  const unsigned char v4proto[] = {4, 1, 0, 80, 127, 0, 0, 1, 0};
  assert_int_equal(proxy_parse_socks(v4proto, sizeof v4proto, &rq, &rep), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names_are_normalised), cmocka_unit_test(test_rules_match),
      cmocka_unit_test(test_addresses_are_guarded), cmocka_unit_test(test_http_requests),
      cmocka_unit_test(test_socks_requests),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
