/*
 * proxy_parse.c — the proxies' request parsers.  Their input is the
 * command's bytes: every length is checked against the buffer, nothing is
 * NUL-terminated by the sender, and anything unusual is refused rather
 * than guessed at.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy.h"

static const char *find_crlfcrlf(const char *buf, size_t len) {
  for (size_t i = 0; i + 3 < len; i++)
    if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
      return buf + i;
  return NULL;
}

/* "host:port" or "[v6]:port" (CONNECT: the port is required), or the
 * authority of an http:// URL (port 80 when none). */
static bool authority(const char *s, size_t len, bool port_required, char *host, int *port) {
  size_t hlen = len;
  const char *colon = NULL;
  if (len && s[0] == '[') {
    const char *close = memchr(s, ']', len);
    if (!close)
      return false;
    hlen = (size_t)(close - s) + 1;
    if (hlen < len) {
      if (s[hlen] != ':')
        return false;
      colon = s + hlen;
    }
  } else {
    colon = memchr(s, ':', len);
    if (colon)
      hlen = (size_t)(colon - s);
  }
  *port = port_required ? 0 : 80;
  if (colon) {
    size_t plen = len - (size_t)(colon - s) - 1;
    if (plen == 0 || plen > 5)
      return false;
    int p = 0;
    for (size_t i = 0; i < plen; i++) {
      char c = colon[1 + i];
      if (c < '0' || c > '9')
        return false;
      p = p * 10 + (c - '0');
    }
    if (p < 1 || p > 65535)
      return false;
    *port = p;
  }
  return *port && net_host_normalize(s, hlen, host);
}

/* A header's name: token characters up to the colon, nothing between. */
static bool header_name(const char *line, size_t len) {
  const char *colon = memchr(line, ':', len);
  if (!colon || colon == line)
    return false;
  for (const char *c = line; c < colon; c++)
    if (!strchr("!#$%&'*+-.^_`|~", *c) && !(*c >= '0' && *c <= '9') &&
        !(*c >= 'a' && *c <= 'z') && !(*c >= 'A' && *c <= 'Z'))
      return false;
  return true;
}

/* Headers that are the proxy's, not the origin's, and Host, which the
 * proxy sets from the URL it checked. */
static bool hop_header(const char *line, size_t len) {
  static const char *const hop[] = {"proxy-connection", "proxy-authorization", "connection",
                                    "keep-alive", "host"};
  for (size_t i = 0; i < sizeof hop / sizeof *hop; i++) {
    size_t n = strlen(hop[i]);
    if (len > n && line[n] == ':' && strncasecmp(line, hop[i], n) == 0)
      return true;
  }
  return false;
}

int proxy_parse_http(const char *buf, size_t len, struct http_request *rq, const char **why,
                     int *status) {
  memset(rq, 0, sizeof *rq);
  *status = 400;
  const char *end = find_crlfcrlf(buf, len);
  if (!end) {
    if (len >= PROXY_HEAD_MAX) {
      *why = "the request head is longer than 16 KiB";
      *status = 431;
      return -1;
    }
    return 0;
  }
  rq->head_len = (size_t)(end - buf) + 4;
  if (memchr(buf, '\0', rq->head_len)) {
    *why = "a NUL byte in the request head";
    return -1;
  }
  const char *line_end = memchr(buf, '\r', rq->head_len);
  const char *sp1 = memchr(buf, ' ', (size_t)(line_end - buf));
  const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1)) : NULL;
  if (!sp1 || !sp2 || sp1 == buf || sp2 == sp1 + 1 || line_end[1] != '\n' ||
      (size_t)(line_end - sp2 - 1) != 8 ||
      (strncmp(sp2 + 1, "HTTP/1.1", 8) != 0 && strncmp(sp2 + 1, "HTTP/1.0", 8) != 0)) {
    *why = "not an HTTP/1.x request line";
    return -1;
  }
  for (const char *c = buf; c < sp1; c++)
    if (*c < 'A' || *c > 'Z') {
      *why = "not an HTTP method";
      return -1;
    }
  const char *target = sp1 + 1;
  size_t tlen = (size_t)(sp2 - target);
  if ((size_t)(sp1 - buf) == 7 && strncmp(buf, "CONNECT", 7) == 0) {
    rq->connect = true;
    if (!authority(target, tlen, true, rq->host, &rq->port)) {
      *why = "CONNECT needs host:port";
      return -1;
    }
    return 1;
  }
  if (tlen < 8 || strncasecmp(target, "http://", 7) != 0) {
    *why = tlen >= 8 && strncasecmp(target, "https://", 8) == 0
               ? "an https:// URL goes through CONNECT (set HTTPS_PROXY, not a plain request)"
               : "a proxy request needs an absolute http:// URL";
    return -1;
  }
  const char *auth = target + 7, *tend = target + tlen;
  const char *path = auth;
  while (path < tend && *path != '/' && *path != '?' && *path != '#')
    path++;
  if (memchr(auth, '@', (size_t)(path - auth))) {
    *why = "credentials in the URL";
    return -1;
  }
  if (!authority(auth, (size_t)(path - auth), false, rq->host, &rq->port)) {
    *why = "the URL's host is not a host name";
    return -1;
  }
  /* The head as the origin wants it: origin-form target, the proxy's own
   * headers dropped, and the connection closed after one response (the
   * upstream is fixed for this connection; a second request on it could
   * not be checked). */
  size_t cap = rq->head_len + NET_HOST_MAX + 64;
  char *out = malloc(cap);
  if (!out) {
    *why = "out of memory";
    *status = 503;
    return -1;
  }
  size_t n = 0, plen = (size_t)(tend - path);
  memcpy(out + n, buf, (size_t)(sp1 - buf) + 1), n += (size_t)(sp1 - buf) + 1;
  if (plen == 0 || *path != '/')
    out[n++] = '/';
  memcpy(out + n, path, plen), n += plen;
  memcpy(out + n, sp2, (size_t)(line_end - sp2) + 2), n += (size_t)(line_end - sp2) + 2;
  /* The origin is told the host that was checked, whatever the client's
   * Host said (else one allowed address could be asked for any name it
   * serves). */
  bool v6 = strchr(rq->host, ':') != NULL;
  n += (size_t)snprintf(out + n, cap - n, rq->port == 80 ? "Host: %s%s%s\r\n" : "Host: %s%s%s:%d\r\n",
                        v6 ? "[" : "", rq->host, v6 ? "]" : "", rq->port);
  const char *h = line_end + 2;
  const char *hend = buf + rq->head_len - 2; /* the final CRLF */
  while (h < hend) {
    const char *e = memchr(h, '\r', (size_t)(hend - h));
    if (!e || e[1] != '\n' || !header_name(h, (size_t)(e - h)) ||
        memchr(h, '\n', (size_t)(e - h))) {
      free(out);
      *why = "a malformed header line";
      return -1;
    }
    if (!hop_header(h, (size_t)(e - h))) {
      memcpy(out + n, h, (size_t)(e - h) + 2);
      n += (size_t)(e - h) + 2;
    }
    h = e + 2;
  }
  memcpy(out + n, "Connection: close\r\n\r\n", 21), n += 21;
  rq->forward = out;
  rq->forward_len = n;
  return 1;
}

int proxy_parse_socks(const unsigned char *buf, size_t len, struct socks_request *rq, int *rep) {
  memset(rq, 0, sizeof *rq);
  *rep = 1; /* general failure */
  if (len < 1)
    return 0;
  if (buf[0] != 5)
    return -1;
  if (len < 2)
    return 0;
  rq->greeting_len = 2 + (size_t)buf[1];
  if (buf[1] == 0)
    return -1;
  if (len < rq->greeting_len)
    return 0;
  for (size_t i = 2; i < rq->greeting_len; i++)
    if (buf[i] == 0)
      rq->no_auth = true;
  const unsigned char *r = buf + rq->greeting_len;
  size_t rl = len - rq->greeting_len;
  if (rl < 5)
    return 2;
  if (r[0] != 5 || r[2] != 0)
    return -1;
  rq->command = r[1];
  rq->atyp = r[3];
  size_t alen;
  if (r[3] == 1)
    alen = 4;
  else if (r[3] == 4)
    alen = 16;
  else if (r[3] == 3)
    alen = 1 + (size_t)r[4];
  else {
    *rep = 8; /* address type not supported */
    return -1;
  }
  if (rl < 4 + alen + 2)
    return 2;
  rq->request_len = rq->greeting_len + 4 + alen + 2;
  rq->port = (r[4 + alen] << 8) | r[5 + alen];
  if (rq->command != 1) {
    *rep = 7; /* command not supported */
    return -1;
  }
  char text[64];
  bool ok;
  if (r[3] == 1) {
    snprintf(text, sizeof text, "%u.%u.%u.%u", r[4], r[5], r[6], r[7]);
    ok = net_host_normalize(text, strlen(text), rq->host);
  } else if (r[3] == 4) {
    text[0] = '[';
    ok = inet_ntop(AF_INET6, r + 4, text + 1, sizeof text - 2) != NULL;
    if (ok) {
      strcat(text, "]");
      ok = net_host_normalize(text, strlen(text), rq->host);
    }
  } else {
    ok = r[4] > 0 && !memchr(r + 5, '\0', r[4]) &&
         net_host_normalize((const char *)r + 5, r[4], rq->host);
  }
  if (!ok || rq->port == 0) {
    *rep = 1; /* malformed: a general failure, not the ruleset's */
    return -1;
  }
  return 1;
}
