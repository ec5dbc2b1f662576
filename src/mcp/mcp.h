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

#include "corral.h"

struct mcp_pending;

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
  /* Where answers go: one complete JSON line each, without the newline. */
  void (*send)(void *ctx, const char *line, size_t len);
  void *send_ctx;
};

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

/* output.c: the text an agent sees, within max_bytes: head and tail halves
 * around "[corral] output truncated", never splitting a UTF-8 character,
 * invalid UTF-8 as U+FFFD; `dropped` is said even with a tiny budget. */
char *mcp_format_output(const char *data, size_t len, size_t max_bytes, bool dropped,
                        size_t *out_len);

#endif
