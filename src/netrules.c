/*
 * netrules.c — the `filter` network mode's rules: names and ports in, and
 * the addresses an allowed name may never resolve to.
 */
#include "netrules.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool host_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Into a scratch buffer first: `out` gets a name only once it is one (a
 * caller may show it, and the bytes are the command's). */
static bool normalize(const char *host, size_t len, char *out) {
  if (len >= 2 && host[0] == '[' && host[len - 1] == ']') { /* an IPv6 literal */
    host++, len -= 2;
    struct in6_addr a6;
    if (len == 0 || len > 45)
      return false;
    memcpy(out, host, len);
    out[len] = '\0';
    for (size_t i = 0; i < len; i++)
      out[i] = (char)((out[i] >= 'A' && out[i] <= 'Z') ? out[i] + 32 : out[i]);
    return inet_pton(AF_INET6, out, &a6) == 1;
  }
  if (len && host[len - 1] == '.')
    len--;
  if (len == 0 || len > NET_HOST_MAX)
    return false;
  size_t label = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)host[i];
    if (c >= 'A' && c <= 'Z')
      c = (unsigned char)(c + 32);
    if (c == '.') {
      if (label == 0)
        return false; /* an empty label */
      label = 0;
    } else if (!host_char(c) || ++label > 63) {
      return false;
    }
    out[i] = (char)c;
  }
  out[len] = '\0';
  return label > 0;
}

bool net_host_normalize(const char *host, size_t len, char *out) {
  char scratch[NET_HOST_MAX + 1];
  out[0] = '\0';
  if (!normalize(host, len, scratch))
    return false;
  memcpy(out, scratch, strlen(scratch) + 1);
  return true;
}

/* "host[:port]", "[v6][:port]": the host part's length and the port (0
 * when none); false when the port is malformed. */
static bool split_port(const char *s, size_t *hlen, int *port) {
  const char *colon = NULL;
  if (s[0] == '[') {
    const char *close = strchr(s, ']');
    if (!close)
      return false;
    colon = close[1] == ':' ? close + 1 : NULL;
    if (!colon && close[1])
      return false;
  } else {
    colon = strrchr(s, ':');
    if (colon && strchr(s, ':') != colon)
      colon = NULL; /* a bare IPv6 literal */
  }
  *hlen = colon ? (size_t)(colon - s) : strlen(s);
  *port = 0;
  if (!colon)
    return true;
  char *end;
  errno = 0;
  long p = strtol(colon + 1, &end, 10);
  if (!colon[1] || *end || errno || p < 1 || p > 65535 || colon[1] == '+' || colon[1] == '-')
    return false;
  *port = (int)p;
  return true;
}

static void rule_free(struct net_rule *r) {
  free(r->host);
  free(r->reason);
}

int net_rules_add(struct net_rules *r, const char *entry, bool deny, const char *reason,
                  const char **why) {
  size_t hlen;
  int port;
  bool wildcard = strncmp(entry, "*.", 2) == 0;
  const char *h = wildcard ? entry + 2 : entry;
  char host[NET_HOST_MAX + 1];
  if (!split_port(h, &hlen, &port)) {
    *why = "a port is 1 to 65535";
    return -EINVAL;
  }
  if (!net_host_normalize(h, hlen, host)) {
    *why = "expected a host name (ASCII, punycode for others), `*.` and a domain, or an IP "
           "address, with an optional `:port`";
    return -EINVAL;
  }
  struct net_rule *g = realloc(r->v, (r->n + 1) * sizeof *g);
  if (!g)
    return -ENOMEM;
  r->v = g;
  struct net_rule *nr = &r->v[r->n];
  *nr = (struct net_rule){.wildcard = wildcard, .port = port, .deny = deny};
  nr->host = strdup(host);
  nr->reason = reason && *reason ? strdup(reason) : NULL;
  if (!nr->host || (reason && *reason && !nr->reason)) {
    rule_free(nr);
    return -ENOMEM;
  }
  r->n++;
  return 0;
}

static bool parse_range(const char *s, struct net_range *out) {
  char buf[64];
  const char *slash = strchr(s, '/');
  size_t len = slash ? (size_t)(slash - s) : strlen(s);
  if (len == 0 || len >= sizeof buf)
    return false;
  memcpy(buf, s, len);
  buf[len] = '\0';
  memset(out, 0, sizeof *out);
  if (inet_pton(AF_INET, buf, out->addr) == 1)
    out->family = AF_INET;
  else if (inet_pton(AF_INET6, buf, out->addr) == 1)
    out->family = AF_INET6;
  else
    return false;
  int max = out->family == AF_INET ? 32 : 128;
  out->prefix = max;
  if (slash) {
    char *end;
    long p = strtol(slash + 1, &end, 10);
    if (!slash[1] || *end || p < 0 || p > max)
      return false;
    out->prefix = (int)p;
  }
  return true;
}

int net_rules_allow_range(struct net_rules *r, const char *range, const char **why) {
  struct net_range nr;
  if (!parse_range(range, &nr)) {
    *why = "expected an IPv4 or IPv6 address with an optional /prefix";
    return -EINVAL;
  }
  struct net_range *g = realloc(r->allowed, (r->nallowed + 1) * sizeof *g);
  if (!g)
    return -ENOMEM;
  r->allowed = g;
  r->allowed[r->nallowed++] = nr;
  return 0;
}

void net_rule_format(const struct net_rule *rule, char *out, size_t size) {
  bool v6 = strchr(rule->host, ':') != NULL;
  int n = snprintf(out, size, "%s%s%s%s", rule->wildcard ? "*." : "", v6 ? "[" : "", rule->host,
                   v6 ? "]" : "");
  if (rule->port && n > 0 && (size_t)n < size)
    snprintf(out + n, size - (size_t)n, ":%d", rule->port);
}

void net_range_format(const struct net_range *r, char *out, size_t size) {
  char a[INET6_ADDRSTRLEN] = "";
  inet_ntop(r->family, r->addr, a, sizeof a);
  snprintf(out, size, "%s/%d", a, r->prefix);
}

int net_rules_copy(struct net_rules *dst, const struct net_rules *src) {
  memset(dst, 0, sizeof *dst);
  const char *why;
  for (size_t i = 0; i < src->n; i++) {
    const struct net_rule *s = &src->v[i];
    char entry[NET_HOST_MAX + 16];
    net_rule_format(s, entry, sizeof entry);
    if (net_rules_add(dst, entry, s->deny, s->reason, &why) < 0) {
      net_rules_free(dst);
      return -ENOMEM;
    }
  }
  if (src->nallowed) {
    dst->allowed = malloc(src->nallowed * sizeof *dst->allowed);
    if (!dst->allowed) {
      net_rules_free(dst);
      return -ENOMEM;
    }
    memcpy(dst->allowed, src->allowed, src->nallowed * sizeof *dst->allowed);
    dst->nallowed = src->nallowed;
  }
  return 0;
}

void net_rules_free(struct net_rules *r) {
  for (size_t i = 0; i < r->n; i++)
    rule_free(&r->v[i]);
  free(r->v);
  free(r->allowed);
  memset(r, 0, sizeof *r);
}

/* An allow entry without a port means 80 and 443; a deny entry without
 * one, every port (a deny must never be narrower than it reads). */
static bool rule_matches(const struct net_rule *rule, const char *host, int port) {
  if (rule->port ? rule->port != port : !rule->deny && port != 80 && port != 443)
    return false;
  if (!rule->wildcard)
    return strcmp(rule->host, host) == 0;
  size_t hl = strlen(host), sl = strlen(rule->host);
  return hl > sl + 1 && host[hl - sl - 1] == '.' && strcmp(host + hl - sl, rule->host) == 0;
}

const char *net_rules_check(const struct net_rules *r, const char *host, int port,
                            const char **reason) {
  *reason = NULL;
  for (size_t i = 0; i < r->n; i++)
    if (r->v[i].deny && rule_matches(&r->v[i], host, port)) {
      *reason = r->v[i].reason;
      return "denied by the policy's denied domains";
    }
  for (size_t i = 0; i < r->n; i++)
    if (!r->v[i].deny && rule_matches(&r->v[i], host, port))
      return NULL;
  return "not in the policy's allowed domains";
}

/* ------------------------------------------------------------ addresses */

static bool in_range(const struct net_range *r, int family, const unsigned char *a) {
  if (r->family != family)
    return false;
  int full = r->prefix / 8, rest = r->prefix % 8;
  if (memcmp(r->addr, a, (size_t)full) != 0)
    return false;
  if (!rest)
    return true;
  unsigned char mask = (unsigned char)(0xff << (8 - rest));
  return (r->addr[full] & mask) == (a[full] & mask);
}

/* Ranges no allowed name may reach, unless the policy lets one through. */
static const struct {
  const char *range, *what;
} guarded[] = {
    {"0.0.0.0/8", "a reserved address"},           {"10.0.0.0/8", "a private address"},
    {"100.64.0.0/10", "a shared (carrier) address"}, {"127.0.0.0/8", "a loopback address"},
    {"169.254.0.0/16", "a link-local address (cloud metadata among them)"},
    {"172.16.0.0/12", "a private address"},        {"192.0.0.0/24", "a reserved address"},
    {"192.168.0.0/16", "a private address"},       {"198.18.0.0/15", "a benchmark address"},
    {"224.0.0.0/3", "a multicast or reserved address"},
    {"192.0.2.0/24", "a documentation address"},   {"198.51.100.0/24", "a documentation address"},
    {"203.0.113.0/24", "a documentation address"}, {"192.88.99.0/24", "a relay address"},
    {"::/127", "a loopback or unspecified address"},
    {"::/96", "an IPv4-compatible address"},
    {"::ffff:0:0:0/96", "an IPv4-translated address"},
    {"64:ff9b:1::/48", "a local-use translation address"},
    {"100::/64", "a discard address"},              {"2001::/32", "a Teredo tunnel address"},
    {"2001:db8::/32", "a documentation address"},  {"fc00::/7", "a private address"},
    {"fe80::/10", "a link-local address"},         {"fec0::/10", "a site-local address"},
    {"ff00::/8", "a multicast address"},
};

/* IPv6 forms that carry an IPv4 address: mapped (a connection to it goes
 * to the IPv4 address), and NAT64 and 6to4 (it goes to the IPv6 one). */
static bool embedded_v4(const unsigned char *a6, unsigned char *v4, bool *mapped) {
  static const unsigned char prefix_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b};
  *mapped = memcmp(a6, prefix_mapped, 12) == 0;
  if (*mapped || memcmp(a6, nat64, 12) == 0) {
    memcpy(v4, a6 + 12, 4);
    return true;
  }
  if (a6[0] == 0x20 && a6[1] == 0x02) {
    memcpy(v4, a6 + 2, 4);
    return true;
  }
  return false;
}

static bool allowed_by_policy(const struct net_rules *r, int family, const unsigned char *a) {
  for (size_t i = 0; i < r->nallowed; i++)
    if (in_range(&r->allowed[i], family, a))
      return true;
  return false;
}

/* Why the guard refuses this address, policy aside; NULL: it does not. */
static const char *guarded_why(int family, const unsigned char *a, const struct net_range *own,
                               size_t nown) {
  for (size_t i = 0; i < sizeof guarded / sizeof *guarded; i++) {
    struct net_range g;
    if (parse_range(guarded[i].range, &g) && in_range(&g, family, a))
      return guarded[i].what;
  }
  for (size_t i = 0; i < nown; i++)
    if (in_range(&own[i], family, a))
      return "an address of this host or of a network it is on";
  return NULL;
}

const char *net_address_check(const struct net_rules *r, const struct sockaddr *sa,
                              const struct net_range *own, size_t nown) {
  unsigned char a[16], v4[4];
  int family = sa->sa_family;
  if (family == AF_INET)
    memcpy(a, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
  else if (family == AF_INET6)
    memcpy(a, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
  else
    return "not an internet address";
  bool mapped = false;
  bool carries = family == AF_INET6 && embedded_v4(a, v4, &mapped);
  if (carries && mapped) { /* it is the IPv4 address */
    struct sockaddr_in s4 = {.sin_family = AF_INET};
    memcpy(&s4.sin_addr, v4, 4);
    return net_address_check(r, (const struct sockaddr *)&s4, own, nown);
  }
  if (allowed_by_policy(r, family, a))
    return NULL;
  /* NAT64 and 6to4 lead to the IPv4 address they carry: refused where it
   * would be (an allowed IPv4 range does not cover the IPv6 form, which is
   * where the connection would really go). */
  const char *why = carries ? guarded_why(AF_INET, v4, own, nown) : NULL;
  return why ? why : guarded_why(family, a, own, nown);
}

struct net_range *net_own_addresses(size_t *n) {
  struct ifaddrs *ifa = NULL;
  *n = 0;
  if (getifaddrs(&ifa) < 0)
    return NULL;
  size_t cap = 0;
  for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
    cap++;
  struct net_range *v = calloc(cap ? cap : 1, sizeof *v);
  for (struct ifaddrs *i = ifa; v && i; i = i->ifa_next) {
    if (!i->ifa_addr)
      continue;
    /* The whole network of each address: its neighbours and its gateway
     * are as much the host's surroundings as the address itself. */
    struct net_range *r = &v[*n];
    const unsigned char *mask;
    size_t len;
    if (i->ifa_addr->sa_family == AF_INET) {
      r->family = AF_INET, len = 4;
      memcpy(r->addr, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, 4);
      mask = i->ifa_netmask ? (const unsigned char *)&((struct sockaddr_in *)(void *)
                                                           i->ifa_netmask)->sin_addr
                            : NULL;
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      r->family = AF_INET6, len = 16;
      memcpy(r->addr, &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr, 16);
      mask = i->ifa_netmask ? (const unsigned char *)&((struct sockaddr_in6 *)(void *)
                                                           i->ifa_netmask)->sin6_addr
                            : NULL;
    } else {
      continue;
    }
    r->prefix = (int)len * 8;
    if (mask) {
      int bits = 0;
      for (size_t k = 0; k < len; k++)
        bits += __builtin_popcount(mask[k]);
      r->prefix = bits;
    }
    (*n)++;
  }
  freeifaddrs(ifa);
  return v;
}
