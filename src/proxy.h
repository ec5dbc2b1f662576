/*
 * proxy.h — network mode `filter`: the supervisor's side of the sandbox's
 * proxies.
 *
 * Inside the sandbox's private network namespace, init listens on
 * 127.0.0.1:3128 (HTTP: CONNECT and absolute-URI requests) and
 * 127.0.0.1:1080 (SOCKS5, names resolved here) and hands both listening
 * sockets to the supervisor before the command starts.  The supervisor
 * accepts, reads the destination by name, checks it against the policy,
 * resolves it on the host, checks every address, connects from the host's
 * namespace and relays both ways.  No helper process: the proxy is an
 * epoll set of its own that the caller's loop polls (proxy_fd) and
 * drives (proxy_process), as the watcher is.
 *
 * What the command sends is untrusted: requests are bounded (16 KiB of
 * head, 10 s to send it), connections and buffered bytes are bounded per
 * run, and a refusal is answered at once on the wire and kept as a denial
 * record for the outcome.
 */
#ifndef CORRAL_PROXY_H
#define CORRAL_PROXY_H

#include <stdbool.h>
#include <stddef.h>

#include "corral.h"
#include "netrules.h"

#define PROXY_HTTP_PORT 3128
#define PROXY_SOCKS_PORT 1080
#define PROXY_HEAD_MAX 16384
#define PROXY_DENIALS_MAX 32 /* distinct records kept per run; more are counted */

struct proxy;

/* A proxy for one run under `rules` (borrowed: they outlive it). */
struct proxy *proxy_new(const struct net_rules *rules);
/* Takes init's end of the handover: the two listeners arrive on it. */
void proxy_attach(struct proxy *p, int sock);
/* Readable when proxy_process has work. */
int proxy_fd(const struct proxy *p);
void proxy_process(struct proxy *p);
/* The run's refusals into the outcome (`denials`, and `denial` with the
 * first when the command failed after one: then it is `denied`). */
int proxy_conclude(struct proxy *p, corral_outcome *out);
void proxy_free(struct proxy *p);

/* For callers without a loop of their own to poll it in (corral_exec,
 * sessions): the proxy driven by a thread of its own until stopped.
 * Nothing else touches the proxy meanwhile.  false: no thread (the proxy
 * is then not driven; its listeners stay unanswered). */
bool proxy_thread_start(struct proxy *p);
void proxy_thread_stop(struct proxy *p);

/* The proxy of a launched run: `rules` from the plan (NULL: none), `sock`
 * init's handover (closed when no proxy can be had: init's handover then
 * fails, and the run is a setup failure), driven by a thread of its own
 * with `threaded`.  NULL when there is none. */
struct proxy *proxy_for_run(const struct net_rules *rules, int sock, bool threaded);

/* Parsers, exposed for the fuzz target and tests. */
struct http_request {
  size_t head_len;             /* bytes of the head, with its blank line */
  bool connect;
  char host[NET_HOST_MAX + 1]; /* normalised */
  int port;
  char *forward;               /* absolute-URI form: the head to send upstream (owned) */
  size_t forward_len;
};
/* 1: a complete, valid head (fills rq); 0: more bytes needed; -1: refused,
 * *why says how (and *status the HTTP status to answer). */
int proxy_parse_http(const char *buf, size_t len, struct http_request *rq, const char **why,
                     int *status);

struct socks_request {
  size_t greeting_len; /* bytes of the greeting */
  bool no_auth;        /* the client offers "no authentication" */
  size_t request_len;  /* bytes of greeting and request together */
  int command;         /* 1: CONNECT */
  int atyp;
  char host[NET_HOST_MAX + 1];
  int port;
};
/* 1: greeting and request complete; 2: greeting only so far; 0: more
 * bytes; -1: malformed (reply with *rep, a SOCKS5 reply code). */
int proxy_parse_socks(const unsigned char *buf, size_t len, struct socks_request *rq, int *rep);

#endif
