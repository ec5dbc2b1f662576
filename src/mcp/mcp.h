/*
 * mcp.h — the Model Context Protocol server behind `corral mcp`.
 *
 * The dispatcher takes one JSON-RPC line at a time and answers through a
 * callback, so it can be driven by the stdio loop, by tests and by the
 * fuzzer alike.  Tool calls that wait (the yield) do not block it: they
 * become pending calls that mcp_tick completes when their session ends or
 * their time is up, so a cancellation can arrive meanwhile.
 */
#ifndef CORRAL_MCP_H
#define CORRAL_MCP_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "corral.h"

struct mcp_pending;
struct mcp_asked;   /* approval.c: a question to the user, waiting for its answer */
struct mcp_widened; /* approval.c: an adapter for a set of grants */

/* Builds an adapter for the server's policy widened by exactly `caps` (n of
 * them: workspace_write and protected_metadata paths, external_network
 * host:port entries), or with `adapter` NULL only says whether each can be
 * widened so.  0, or -1 with the reason in `why`.  The front end sets it
 * (it owns the policy); NULL: nothing can be granted. */
typedef int (*mcp_widen_fn)(void *ctx, const corral_capability *caps, size_t n,
                            corral_adapter **adapter, char *why, size_t whylen);

struct mcp_batch {
  unsigned serial;        /* what its deferred calls carry (mcp_pending.batch) */
  struct json_t *waiting; /* ids still to be answered */
  struct json_t *answers; /* the array sent when none waits */
};

struct mcp_server {
  corral_sessions *sessions;      /* owned */
  corral_adapter *adapter;        /* not owned; NULL: every exec is a setup failure */
  char **roots;                   /* not owned: resolved workspace roots */
  size_t nroots;
  const char *shell;              /* not owned */
  char protocol[16];
  bool initialized;
  struct mcp_pending *pending;    /* calls waiting for their yield */
  size_t npending, cap;
  /* JSON-RPC batches (2025-03-26 only): each one's answers, sent together
   * once every request in it has one; `collecting` takes every answer
   * while a batch's lines are handled. */
  struct mcp_batch *batches;
  size_t nbatches;
  unsigned collecting;    /* the batch being handled: every answer is its */
  unsigned answering;     /* the batch a deferred answer being sent is of */
  unsigned next_serial;
  /* Approvals (approval.c).  A client that declared `elicitation` is asked
   * when a command is refused; what the user grants for the session is in
   * `granted` until the server ends. */
  bool can_elicit;
  mcp_widen_fn widen;      /* set by the front end, may be NULL */
  void *widen_ctx;
  int64_t approval_timeout_ms; /* how long an answer is waited for */
  char approval_id[48];    /* approval.sessionId of every grant of this server */
  corral_capability *granted; /* owned: for this session, in the order given */
  size_t ngranted;
  struct mcp_widened *widened; /* adapters by grant set, kept until close */
  size_t nwidened;
  struct mcp_asked *asked;  /* questions waiting for the client's answer */
  size_t nasked;
  long next_request;        /* the id of the next request to the client */
  /* Where answers go: one complete JSON line each, without the newline. */
  void (*send)(void *ctx, const char *line, size_t len);
  void *send_ctx;
};

/* How long a question to the user waits for its answer by default. */
#define MCP_APPROVAL_TIMEOUT_MS (120 * 1000)
/* Bounds on what an agent may ask for in one call. */
#define MCP_REQUEST_CAPABILITIES_MAX 4
#define MCP_JUSTIFICATION_MAX 1000

int mcp_server_init(struct mcp_server *s, corral_adapter *adapter, char **roots, size_t nroots,
                    const char *shell);
void mcp_server_close(struct mcp_server *s); /* stops every session */

/* One line from the client (no newline).  Never fails: bad input gets the
 * JSON-RPC error it deserves. */
void mcp_handle_line(struct mcp_server *s, const char *line, size_t len);
/* Completes pending calls whose session ended or whose yield is over. */
void mcp_tick(struct mcp_server *s);
/* The same as if the clock said `now_ms` (CLOCK_MONOTONIC): INT64_MAX
 * answers every pending call with what there is. */
void mcp_tick_until(struct mcp_server *s, int64_t now_ms);
/* Milliseconds until mcp_tick has something to do, or -1. */
int mcp_timeout(const struct mcp_server *s);

/* ------------------------------------------------ dispatch.c and approval.c */

/* How a run of exec_command came about, when a user's approval made it. */
struct mcp_run {
  const corral_capability *once; /* not owned: granted for this run only */
  size_t nonce;
  json_t *approval;              /* not owned: the record for the result */
  const char *note;              /* the line the result's text starts with */
};

/* exec_command with its (already parsed) arguments; `run` NULL for a call
 * as the client made it (it may ask for capabilities, and a refusal may be
 * offered to the user), else a run the user approved (never offered again). */
void mcp_exec(struct mcp_server *s, json_t *id, json_t *args, const struct mcp_run *run);
void mcp_send(struct mcp_server *s, json_t *msg); /* takes msg */
/* Appends to buf (size bytes) at *n, never past its end. */
void mcp_append(char *buf, size_t size, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void mcp_reply(struct mcp_server *s, json_t *id, json_t *result); /* takes result */
void mcp_tool_error(struct mcp_server *s, json_t *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* approval.c.  A refused exec_command (its outcome denied, or refusals and
 * a non-zero exit) whose first refusal can be granted becomes a question to
 * the user; true when it did (`result` is then held, and taken). */
bool mcp_approval_offer(struct mcp_server *s, json_t *id, json_t *args,
                        const corral_outcome *o, json_t *result);
/* exec_command's `request_capabilities`: checked, then asked (or run when
 * all are granted already); a bad one or a client that cannot ask is the
 * tool's error. */
void mcp_approval_request(struct mcp_server *s, json_t *id, json_t *args, json_t *caps,
                          json_t *justification);
/* A response from the client: true when it answered one of our questions. */
bool mcp_approval_answer(struct mcp_server *s, json_t *msg);
/* The tools/call `call` was cancelled: its question is withdrawn.  True when
 * there was one. */
bool mcp_approval_cancel(struct mcp_server *s, json_t *call);
/* Questions whose time is up are taken as declined. */
void mcp_approval_tick(struct mcp_server *s, int64_t now_ms);
int64_t mcp_approval_deadline(const struct mcp_server *s); /* the earliest, or -1 */
/* The adapter for the session's grants plus `once`, or why there is none. */
corral_adapter *mcp_approval_adapter(struct mcp_server *s, const corral_capability *once,
                                     size_t nonce, char *why, size_t whylen);
/* The grants in effect (session's and `once`) into the request: its
 * capabilities and approval.sessionId.  0 or -ENOMEM. */
int mcp_approval_fill(const struct mcp_server *s, const corral_capability *once, size_t nonce,
                      corral_request *req);
/* What the agent can ask for after a refusal, in a line of `text` (at *n,
 * within size) and as structured content (NULL: nothing to ask). */
json_t *mcp_approval_hint(const struct mcp_server *s, const corral_outcome *o, char *text,
                          size_t size, size_t *n);
/* The result's text gets `line` in front, its structured content `approval`. */
void mcp_approval_annotate(json_t *result, const char *line, json_t *approval);
void mcp_approval_close(struct mcp_server *s);
/* "host:port" or "[v6]:port" as the proxy spells a scope: the host (lower
 * case, no brackets, NET_HOST_MAX + 1 bytes) and the port; false when the
 * scope is not exactly that. */
bool mcp_host_port(const char *scope, char *host, int *port);

/* output.c: the text an agent sees, within max_bytes: head and tail halves
 * around "[corral] output truncated", never splitting a UTF-8 character,
 * invalid UTF-8 as U+FFFD; `dropped` is said even with a tiny budget. */
char *mcp_format_output(const char *data, size_t len, size_t max_bytes, bool dropped,
                        size_t *out_len);

#endif
