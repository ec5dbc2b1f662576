/*
 * netrules.h — network mode `filter`: which hosts a command may reach by
 * name through corral's proxy, and which addresses a name may never
 * resolve to.
 *
 * An entry is a host (`registry.npmjs.org`), a wildcard for its subdomains
 * (`*.githubusercontent.com`: not the name itself), or an IP literal, with
 * an optional port (`github.com:22`, `[::1]:8080`); without one it means
 * ports 80 and 443.  Deny entries win over allow entries and may carry a
 * reason for the command and the agent.  Names are compared lower-cased,
 * without one trailing dot; anything that is not a plain ASCII host name
 * (punycode is, as `xn--`) is refused before any lookup.
 */
#ifndef CORRAL_NETRULES_H
#define CORRAL_NETRULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define NET_HOST_MAX 253

struct net_rule {
  char *host;    /* lower-case; for a wildcard, the suffix without "*." */
  bool wildcard;
  int port;      /* 0: ports 80 and 443 */
  bool deny;
  char *reason;  /* deny entries: may be NULL */
};

struct net_range {
  int family; /* AF_INET or AF_INET6 */
  unsigned char addr[16];
  int prefix;
};

struct net_rules {
  struct net_rule *v;
  size_t n;
  struct net_range *allowed; /* addresses let through the private-range guard */
  size_t nallowed;
};

/* Adds an entry ("host[:port]", "*.suffix[:port]", "[v6][:port]");
 * 0, -EINVAL with *why set for a malformed entry, or -ENOMEM. */
int net_rules_add(struct net_rules *r, const char *entry, bool deny, const char *reason,
                  const char **why);
/* Adds an address range ("10.0.0.0/8", "::1", "127.0.0.1"). */
int net_rules_allow_range(struct net_rules *r, const char *range, const char **why);
int net_rules_copy(struct net_rules *dst, const struct net_rules *src);
/* An entry as the policy spells it ("*.example.com:8443"), and a range. */
void net_rule_format(const struct net_rule *rule, char *out, size_t size);
void net_range_format(const struct net_range *r, char *out, size_t size);
/* What no allowed name may resolve to unless a range allows it, in words. */
#define NET_GUARDED_TEXT                                                                      \
  "loopback, link-local (169.254.169.254 among them), private, shared, multicast and "        \
  "reserved addresses, and this host's own"

void net_rules_free(struct net_rules *r);

/* Lower-cases `host` into out (NET_HOST_MAX + 1 bytes), dropping one
 * trailing dot and IPv6 brackets; false when it is not a host name or an
 * IP literal. */
bool net_host_normalize(const char *host, size_t len, char *out);

/* Does the policy let a connection to host:port through (by name)?  NULL
 * when it does; else why not, and *rule the deny rule's reason (or NULL). */
const char *net_rules_check(const struct net_rules *r, const char *host, int port,
                            const char **reason);

/* May a connection go to this address?  NULL when it may, else why not:
 * loopback, link-local (169.254.169.254 among them), private, shared,
 * multicast and reserved ranges, and the host's own addresses (`own`,
 * `nown` of them), unless an allowed range covers it. */
const char *net_address_check(const struct net_rules *r, const struct sockaddr *sa,
                              const struct net_range *own, size_t nown);
/* The host's own addresses, for net_address_check; *n of them. */
struct net_range *net_own_addresses(size_t *n);

#endif
