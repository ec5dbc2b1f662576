/*
 * dispatch.c — JSON-RPC 2.0 and the MCP tools: exec_command, write_stdin,
 * list_sessions, stop_session.
 *
 * Rules kept here:
 *   1. bad input never ends the server: every line gets the error it
 *      deserves (-32700 parse, -32600 not a request, -32601 unknown method,
 *      -32602 bad params) or, for a problem with a valid call (an unknown
 *      session), a tool result with isError and the problem named;
 *   2. the client cannot loosen the sandbox: no tool argument reaches the
 *      policy (a capability an agent asks for is the user's to grant, through
 *      the client: approval.c); workdir must lie inside a workspace root;
 *   3. notifications are never answered; a cancelled call is not either.
 */
#include <limits.h>
#include <stdio.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "../internal.h"
#include "../json_util.h"
#include "../policy.h"
#include "mcp.h"

#define ERR_PARSE -32700
#define ERR_INVALID_REQUEST -32600
#define ERR_METHOD -32601
#define ERR_PARAMS -32602

static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

struct mcp_pending {
  json_t *id;
  long session;
  int64_t started, deadline;
  size_t max_bytes;
  char *out;
  size_t len, cap;
  bool dropped;
  bool started_command; /* an exec_command: its cancellation ends the command */
  unsigned batch;        /* the batch it was asked in, or 0 */
  json_t *args;          /* an exec_command whose refusal may be offered to the user */
  json_t *approval;      /* a run the user approved: the record for its result */
  char *note;            /* and the line its text starts with */
};

/* ------------------------------------------------------------ sending */

static void send_json(struct mcp_server *s, json_t *msg);

/* An answer that belongs to a batch joins its array; the array goes out
 * when nothing in the batch waits.  True when `msg` was taken. */
static struct mcp_batch *batch_of(struct mcp_server *s, unsigned serial) {
  for (size_t b = 0; serial && b < s->nbatches; b++)
    if (s->batches[b].serial == serial)
      return &s->batches[b];
  return NULL;
}

/* Sends a batch's array once nothing in it waits, and forgets it. */
static void batch_finish(struct mcp_server *s, struct mcp_batch *bt) {
  if (json_array_size(bt->waiting) || bt->serial == s->collecting)
    return;
  json_t *answers = json_incref(bt->answers);
  json_decref(bt->waiting), json_decref(bt->answers);
  *bt = s->batches[--s->nbatches];
  if (json_array_size(answers))
    send_json(s, answers);
  else
    json_decref(answers);
}

/* No longer waited for (answered, or cancelled). */
static void batch_unwait(struct mcp_batch *bt, json_t *id) {
  size_t i;
  json_t *w;
  json_array_foreach(bt->waiting, i, w) if (id && json_equal(w, id)) {
    json_array_remove(bt->waiting, i);
    break;
  }
}

/* An answer that belongs to a batch joins its array: every answer while the
 * batch is handled, and a deferred call's that was asked in it (it says
 * which: never by its id alone, which another request may share).  True
 * when `msg` was taken. */
static bool batch_take(struct mcp_server *s, json_t *msg) {
  struct mcp_batch *bt = batch_of(s, s->collecting ? s->collecting : s->answering);
  if (!bt)
    return false;
  batch_unwait(bt, json_object_get(msg, "id"));
  json_array_append_new(bt->answers, msg);
  batch_finish(s, bt);
  return true;
}

static void send_json(struct mcp_server *s, json_t *msg) {
  if (json_is_object(msg) && batch_take(s, msg))
    return;
  char *text = json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII |
                               JSON_REAL_PRECISION(9));
  json_decref(msg);
  if (text) {
    s->send(s->send_ctx, text, strlen(text));
    free(text);
  }
}

static void reply(struct mcp_server *s, json_t *id, json_t *result) {
  send_json(s, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

void mcp_send(struct mcp_server *s, json_t *msg) { send_json(s, msg); }
void mcp_reply(struct mcp_server *s, json_t *id, json_t *result) { reply(s, id, result); }

static void reply_error(struct mcp_server *s, json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void reply_error(struct mcp_server *s, json_t *id, int code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  json_t *e = json_pack("{s:i,s:s}", "code", code, "message", msg);
  send_json(s, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error",
                         e));
}

static json_t *text_result(const char *text, bool is_error) {
  return json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text", text, "isError",
                   is_error);
}

static void tool_error_v(struct mcp_server *s, json_t *id, const char *fmt, va_list ap) {
  char msg[1200];
  vsnprintf(msg, sizeof msg, fmt, ap);
  reply(s, id, text_result(msg, true));
}

static void tool_error(struct mcp_server *s, json_t *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void tool_error(struct mcp_server *s, json_t *id, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tool_error_v(s, id, fmt, ap);
  va_end(ap);
}

void mcp_tool_error(struct mcp_server *s, json_t *id, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tool_error_v(s, id, fmt, ap);
  va_end(ap);
}

/* ------------------------------------------------------------ tools */

static json_t *tools_list(void) {
  json_t *outcome_schema = json_pack("{s:s}", "type", "object");
  json_t *result_schema = json_pack(
      "{s:s,s:{s:{s:[s,s]},s:{s:s},s:{s:[s,s]},s:{s:s},s:{s:s},s:o},s:[s,s,s]}", "type",
      "object", "properties", "sessionId", "type", "integer", "null", "wallTimeSeconds", "type",
      "number", "exitCode", "type", "integer", "null", "output", "type", "string",
      "outputDropped", "type", "boolean", "outcome", outcome_schema, "required", "wallTimeSeconds",
      "output", "outcome");
  json_t *exec = json_pack(
      "{s:s,s:s,s:{s:s,s:{s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s},"
      "s:{s:s,s:i,s:i,s:s},s:{s:s,s:i,s:i,s:s}},s:[s]},s:O}",
      "name", "exec_command", "description",
      "Run a shell command in corral's sandbox (workspace writable, rest of the disk read-only, "
      "secrets hidden, network closed unless the server allows it). Returns its output and exit "
      "code, or a session ID when it is still running after yield_time_ms: then use "
      "write_stdin to poll it, type into it, or interrupt it.",
      "inputSchema", "type", "object", "properties", "cmd", "type", "string", "description",
      "the command line, run with the server's shell (-c); plain words run without it", "workdir", "type", "string",
      "description", "working directory, relative to the first workspace root", "tty", "type",
      "boolean", "description", "run in a pseudo-terminal (default false)", "changes", "type",
      "boolean", "description",
      "report the files the command changed in the workspace (default true; false makes "
      "no report)",
      "yield_time_ms",
      "type", "integer", "minimum", 0, "maximum", 30000, "description",
      "how long to wait for output before returning (default 10000, clamped to 250..30000)",
      "max_output_tokens", "type", "integer", "minimum", 1, "maximum", 200000, "description",
      "output budget in tokens of 4 bytes (default 10000)", "required", "cmd", "outputSchema",
      result_schema);
  /* Asking for more than the sandbox gives: the user decides, through the
   * client (elicitation), each capability of exactly one scope. */
  json_t *exec_props = json_object_get(json_object_get(exec, "inputSchema"), "properties");
  json_object_set_new(
      exec_props, "request_capabilities",
      json_pack("{s:s,s:i,s:i,s:{s:s,s:{s:{s:s,s:[s,s,s]},s:{s:s,s:s}},s:[s,s],s:b},s:s}",
                "type", "array", "minItems", 1, "maxItems", MCP_REQUEST_CAPABILITIES_MAX,
                "items", "type", "object", "properties", "kind", "type", "string", "enum",
                "workspace_write", "external_network", "protected_metadata", "scope", "type",
                "string", "description",
                "workspace_write, protected_metadata: an absolute path; external_network: "
                "host:port",
                "required", "kind", "scope", "additionalProperties", false, "description",
                "capabilities beyond the sandbox this command needs, each of one exact scope "
                "(a refused run's result names them); the user is asked before it runs, "
                "which needs a client that supports elicitation"));
  json_object_set_new(exec_props, "justification",
                      json_pack("{s:s,s:i,s:s}", "type", "string", "maxLength",
                                MCP_JUSTIFICATION_MAX, "description",
                                "why the command needs request_capabilities, shown to the user "
                                "as the agent's words"));
  json_t *out_props = json_object_get(result_schema, "properties");
  json_object_set_new(out_props, "approval", json_pack("{s:s}", "type", "object"));
  json_object_set_new(out_props, "approvalNeeded", json_pack("{s:s}", "type", "object"));
  json_t *write = json_pack(
      "{s:s,s:s,s:{s:s,s:{s:{s:s,s:i,s:s},s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:i,s:i,s:s},"
      "s:{s:s,s:i,s:i,s:s}},s:[s]},s:O}",
      "name", "write_stdin", "description",
      "Write characters to a running session's stdin and collect its output; \"\" only polls. "
      "Ctrl-C (\"\\u0003\", also written as the text \\u0003, ^c or ctrl-c) is a keystroke in a "
      "tty session (the foreground job is interrupted, the shell stays) and SIGINT to the "
      "process group in a pipe session; Ctrl-D (\"\\u0004\", ^d, ctrl-d) is a keystroke in a tty "
      "session and closes stdin (EOF) in a pipe session, as close_stdin does after chars. "
      "stop_session ends a session's whole process tree.",
      "inputSchema", "type", "object", "properties", "session_id", "type", "integer", "minimum",
      1, "description", "the session ID from exec_command", "chars", "type", "string",
      "description", "characters to write (default \"\": poll)", "close_stdin", "type",
      "boolean", "description", "close the session's stdin after chars (EOF; pipe sessions)",
      "yield_time_ms", "type",
      "integer", "minimum", 0, "maximum", 300000, "description",
      "how long to wait for output (default 250 with input, 5000 for a poll)",
      "max_output_tokens", "type", "integer", "minimum", 1, "maximum", 200000, "description",
      "output budget in tokens of 4 bytes (default 10000)", "required", "session_id",
      "outputSchema", result_schema);
  json_t *list = json_pack("{s:s,s:s,s:{s:s,s:{}},s:{s:s,s:{s:{s:s}}}}", "name",
                           "list_sessions", "description",
                           "List the sessions: ID, command, directory, status, exit code and "
                           "the last output.",
                           "inputSchema", "type", "object", "properties", "outputSchema", "type",
                           "object", "properties", "sessions", "type", "array");
  json_t *stop = json_pack("{s:s,s:s,s:{s:s,s:{s:{s:s,s:i}},s:[s]}}", "name", "stop_session",
                           "description", "Stop a session: its whole process tree is ended.",
                           "inputSchema", "type", "object", "properties", "session_id", "type",
                           "integer", "minimum", 1, "required", "session_id");
  json_decref(result_schema);
  return json_pack("{s:[o,o,o,o]}", "tools", exec, write, list, stop);
}

/* Reads an optional integer argument; false (and an error sent) if it is
 * there but not an integer. */
/* A JSON number with an integral value: JSON Schema's `integer` takes
 * 1000.0 and 1e3 too, and Python clients and models send them. */
static bool integral(json_t *v, long *out) {
  double d;
  if (json_is_integer(v)) {
    json_int_t i = json_integer_value(v);
    *out = i > LONG_MAX / 2 ? LONG_MAX / 2 : i < -(LONG_MAX / 2) ? -(LONG_MAX / 2) : (long)i;
    return true;
  }
  if (!json_is_real(v))
    return false;
  d = json_real_value(v);
  if (!(d >= -9e18 && d <= 9e18) || d != (double)(long long)d)
    return false;
  *out = d > (double)(LONG_MAX / 2) ? LONG_MAX / 2 : d < -(double)(LONG_MAX / 2) ? -(LONG_MAX / 2) : (long)d;
  return true;
}

static bool int_arg(json_t *args, const char *key, long *out, long def) {
  json_t *v = json_object_get(args, key);
  *out = def;
  if (!v || json_is_null(v))
    return true;
  return integral(v, out);
}

static long clampl(long v, long lo, long hi) { return v < lo ? lo : v > hi ? hi : v; }

static void pending_append(struct mcp_pending *p, const corral_session_result *r) {
  if (r->dropped)
    p->dropped = true;
  if (!r->output_len)
    return;
  /* Keep at most twice the budget: the head, and a tail that slides. */
  size_t keep = p->max_bytes * 2 + 16;
  if (p->len + r->output_len > p->cap) {
    size_t cap = p->len + r->output_len;
    char *g = realloc(p->out, cap);
    if (!g)
      return;
    p->out = g;
    p->cap = cap;
  }
  memcpy(p->out + p->len, r->output, r->output_len);
  p->len += r->output_len;
  if (p->len > keep) {
    /* Head half stays; the middle goes (it would be cut anyway). */
    size_t head = p->max_bytes, tail = keep - head;
    memmove(p->out + head, p->out + p->len - tail, tail);
    p->len = keep;
  }
}

static json_t *outcome_value(const corral_outcome *o) { return outcome_to_json_value(o); }

void mcp_append(char *buf, size_t size, size_t *n, const char *fmt, ...) {
  if (*n + 1 >= size)
    return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(buf + *n, size - *n, fmt, ap);
  va_end(ap);
  if (w > 0)
    *n = *n + (size_t)w < size ? *n + (size_t)w : size - 1;
}

/* The answer to exec_command / write_stdin, or NULL (out of memory). */
static json_t *session_result(struct mcp_server *s, struct mcp_pending *p,
                              const corral_session_result *last) {
  double wall = (double)(mono_ms() - p->started) / 1000.0;
  size_t flen = 0;
  char *formatted = mcp_format_output(p->out ? p->out : "", p->len, p->max_bytes, p->dropped, &flen);
  if (!formatted)
    return NULL;
  const corral_outcome *o = &last->outcome;
  char head[8192];
  size_t n = 0;
  mcp_append(head, sizeof head, &n, "Wall time: %.4f seconds\n", wall);
  if (last->exited)
    mcp_append(head, sizeof head, &n, "Process exited with code %d\n", corral_outcome_exit_code(o));
  else
    mcp_append(head, sizeof head, &n, "Process running with session ID %ld\n", p->session);
  if (o->denial.present)
    mcp_append(head, sizeof head, &n, "Denied by the sandbox: %s\n",
        o->denial.reason ? o->denial.reason : "");
  else if (last->exited && o->kind != CORRAL_KIND_SUCCESS && o->message)
    mcp_append(head, sizeof head, &n, "%s\n", o->message);
  /* Every refusal in one line (the first not again when it is the denial). */
  for (size_t i = 0; i < o->ndenials; i++) {
    const corral_denial *d = &o->denials[i];
    if (i == 0 && o->denial.present && o->denial.reason && d->reason &&
        strcmp(o->denial.reason, d->reason) == 0)
      continue;
    mcp_append(head, sizeof head, &n, "Refused by the sandbox: %s", d->reason ? d->reason : "");
    if (d->count > 1)
      mcp_append(head, sizeof head, &n, " (%ld times)", d->count);
    mcp_append(head, sizeof head, &n, "\n");
  }
  if (o->denials_dropped)
    mcp_append(head, sizeof head, &n, "And %ld more refusals not listed\n", o->denials_dropped);
  json_t *needed = last->exited ? mcp_approval_hint(s, o, head, sizeof head, &n) : NULL;
  if (n + 10 > sizeof head)
    n = sizeof head - 10;
  snprintf(head + n, sizeof head - n, "Output:\n");
  size_t hl = strlen(head);
  char *text = malloc(hl + flen + 1);
  if (text) {
    memcpy(text, head, hl);
    memcpy(text + hl, formatted, flen + 1);
  }
  json_t *structured = json_pack(
      "{s:o,s:f,s:o,s:s%,s:b,s:o}", "sessionId",
      last->exited ? json_null() : json_integer(p->session), "wallTimeSeconds", wall, "exitCode",
      last->exited ? json_integer(corral_outcome_exit_code(o)) : json_null(), "output", formatted,
      flen, "outputDropped", p->dropped, "outcome", outcome_value(o));
  if (needed && structured)
    json_object_set_new(structured, "approvalNeeded", needed);
  else
    json_decref(needed);
  json_t *result = json_pack("{s:[{s:s,s:s}],s:o,s:b}", "content", "type", "text", "text",
                             text ? text : "", "structuredContent", structured, "isError", false);
  free(text);
  free(formatted);
  return result;
}

/* Sends a call's result, unless its refusal becomes a question to the user
 * (who then decides what is sent: approval.c). */
static void send_session_result(struct mcp_server *s, json_t *id, struct mcp_pending *p,
                                const corral_session_result *last) {
  json_t *result = session_result(s, p, last);
  if (!result) {
    reply_error(s, id, -32603, "out of memory");
    return;
  }
  if (p->approval || p->note)
    mcp_approval_annotate(result, p->note, p->approval);
  if (p->args && last->exited && mcp_approval_offer(s, id, p->args, &last->outcome, result))
    return;
  reply(s, id, result);
}

static void pending_free(struct mcp_pending *p) {
  json_decref(p->id);
  json_decref(p->args);
  json_decref(p->approval);
  free(p->note);
  free(p->out);
}

/* Either answers now (the session ended) or queues the call. */
static void settle(struct mcp_server *s, json_t *id, struct mcp_pending *p,
                   corral_session_result *r) {
  pending_append(p, r);
  if (r->exited || r->session_id == 0 || !p->session) {
    send_session_result(s, id, p, r);
    pending_free(p);
    return;
  }
  if (s->npending == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 8;
    struct mcp_pending *g = realloc(s->pending, cap * sizeof *g);
    if (!g) {
      send_session_result(s, id, p, r);
      pending_free(p);
      return;
    }
    s->pending = g;
    s->cap = cap;
  }
  p->id = json_incref(id);
  p->batch = s->collecting;
  s->pending[s->npending++] = *p;
}

static bool inside_roots(const struct mcp_server *s, const char *path) {
  for (size_t i = 0; i < s->nroots; i++)
    if (path_is_under(path, s->roots[i]))
      return true;
  return false;
}

/* A command line that is words and nothing the shell would interpret
 * (no quoting, expansion, redirection, operator, assignment or builtin) is
 * run as those words, without the shell: then a program that does not
 * exist is executable_not_found from execve's own answer, as `corral run`
 * says it, not a 127 the shell printed.  False: the shell runs it. */
static bool simple_command(corral_request *req, const char *line) {
  static const char *const builtins[] = {
      ".",      ":",     "alias",  "bg",      "break", "cd",     "command", "continue", "declare",
      "eval",   "exec",  "exit",   "export",  "fc",    "fg",     "getopts", "hash",     "jobs",
      "let",    "local", "read",   "readonly", "return", "set",  "shift",   "source",   "times",
      "trap",   "type",  "typeset", "ulimit", "umask", "unalias", "unset",  "wait",     "if",
      "then",   "else",  "elif",   "fi",      "case",  "esac",   "for",     "while",    "until",
      "do",     "done",  "function", "select", "time", "coproc", "in"};
  char *words[64];
  size_t n = 0;
  for (const char *p = line; *p; p++)
    if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@%+,- ", *p))
      return false;
  char *copy = strdup(line);
  if (!copy)
    return false;
  for (char *save, *w = strtok_r(copy, " ", &save); w && n < ARRAY_SIZE(words);
       w = strtok_r(NULL, " ", &save))
    words[n++] = w;
  bool simple = n > 0 && n < ARRAY_SIZE(words) && !strchr(words[0], '%');
  for (size_t i = 0; simple && i < ARRAY_SIZE(builtins); i++)
    simple = strcmp(words[0], builtins[i]) != 0;
  if (simple)
    simple = corral_request_set_command(req, words[0], (const char *const *)words + 1, n - 1) == 0;
  free(copy);
  return simple;
}

void mcp_exec(struct mcp_server *s, json_t *id, json_t *args, const struct mcp_run *run) {
  json_t *cmd = json_object_get(args, "cmd");
  if (!json_is_string(cmd) || str_blank(json_string_value(cmd)) ||
      strlen(json_string_value(cmd)) != json_string_length(cmd)) {
    tool_error(s, id, "exec_command: `cmd` must be a non-empty string");
    return;
  }
  long yield, tokens;
  json_t *tty = json_object_get(args, "tty"), *workdir = json_object_get(args, "workdir"),
         *changes = json_object_get(args, "changes");
  if (!int_arg(args, "yield_time_ms", &yield, 10000) ||
      !int_arg(args, "max_output_tokens", &tokens, 10000) ||
      (tty && !json_is_null(tty) && !json_is_boolean(tty)) ||
      (changes && !json_is_null(changes) && !json_is_boolean(changes)) ||
      (workdir && !json_is_null(workdir) && !json_is_string(workdir))) {
    tool_error(s, id,
               "exec_command: yield_time_ms and max_output_tokens must be integers, tty and "
               "changes booleans, workdir a string");
    return;
  }
  json_t *asks = json_object_get(args, "request_capabilities"),
         *justification = json_object_get(args, "justification");
  if (json_is_null(asks))
    asks = NULL;
  if (json_is_null(justification))
    justification = NULL;
  if (!run && justification && !asks) {
    tool_error(s, id, "exec_command: `justification` explains `request_capabilities`: give both "
                      "or neither");
    return;
  }
  char dir[PATH_MAX * 2];
  const char *wd = json_is_string(workdir) ? json_string_value(workdir) : "";
  if (wd[0] == '/')
    snprintf(dir, sizeof dir, "%s", wd);
  else
    snprintf(dir, sizeof dir, "%s/%s", s->roots[0], wd);
  char *real = realpath(dir, NULL);
  if (!real || !inside_roots(s, real)) {
    tool_error(s, id, "exec_command: workdir `%s` %s", wd,
               real ? "is outside every workspace root: refused" : "does not exist");
    free(real);
    return;
  }
  if (!run && asks) { /* the user decides first; approval.c runs it, or says why not */
    free(real);
    mcp_approval_request(s, id, args, asks, justification);
    return;
  }
  /* Grants of this session (and the run's own) widen the policy exactly
   * that far: an adapter of their own, made once and kept. */
  const corral_capability *once = run ? run->once : NULL;
  size_t nonce = run ? run->nonce : 0;
  corral_adapter *adapter = s->adapter;
  if (adapter && (nonce || s->ngranted)) {
    char why[1024] = "";
    adapter = mcp_approval_adapter(s, once, nonce, why, sizeof why);
    if (!adapter) {
      free(real);
      tool_error(s, id, "exec_command: the approved capability cannot be applied: %s", why);
      return;
    }
  }
  corral_request req;
  corral_request_init(&req);
  req.origin = CORRAL_ORIGIN_MCP_SERVER;
  req.mode = CORRAL_MODE_INTERACTIVE;
  if (!simple_command(&req, json_string_value(cmd))) {
    const char *argv[] = {"-c", json_string_value(cmd)};
    corral_request_set_command(&req, s->shell, argv, 2);
  }
  corral_request_set_working_directory(&req, real);
  free(real);
  for (size_t i = 0; i < s->nroots; i++)
    corral_request_add_workspace_root(&req, s->roots[i]);
  mcp_approval_fill(s, once, nonce, &req);
  corral_session_options o;
  corral_session_options_init(&o);
  o.request = &req;
  o.adapter = adapter;
  o.tty = json_is_true(tty);
  o.yield_ms = 0; /* the wait happens in the loop, so a cancel can come */
  o.flags = json_is_false(changes) ? 0 : CORRAL_RUN_CHANGES;
  struct mcp_pending p = {.started = mono_ms(), .started_command = true,
                          .max_bytes = (size_t)clampl(tokens, 1, 200000) * 4};
  p.deadline = p.started + clampl(yield, 250, 30000);
  corral_session_result r;
  corral_error err = {0};
  if (!run) {
    p.args = json_incref(args);
  } else {
    p.approval = json_incref(run->approval);
    p.note = run->note ? strdup(run->note) : NULL;
  }
  if (corral_session_start(s->sessions, &o, &r, &err) < 0) {
    tool_error(s, id, "exec_command: %s", err.message);
    pending_free(&p);
  } else {
    p.session = r.session_id;
    settle(s, id, &p, &r);
  }
  corral_session_result_free(&r);
  corral_request_free(&req);
}

static bool session_arg(struct mcp_server *s, json_t *id, json_t *args, const char *tool,
                        long *sid) {
  json_t *v = json_object_get(args, "session_id");
  if (!v || !integral(v, sid) || *sid <= 0 || *sid >= LONG_MAX / 2) {
    tool_error(s, id, "%s: `session_id` must be a positive integer", tool);
    return false;
  }
  return true;
}

/* 3 for Ctrl-C, 4 for Ctrl-D: the character itself, or the ways agents
 * write it as text (zero's tool takes the same). */
static int control_key(const char *in, size_t len) {
  static const struct {
    const char *text;
    int key;
  } names[] = {{"\\u0003", 3}, {"^c", 3}, {"ctrl-c", 3}, {"ctrl+c", 3},
               {"\\u0004", 4}, {"^d", 4}, {"ctrl-d", 4}, {"ctrl+d", 4}};
  if (len == 1 && (in[0] == 3 || in[0] == 4))
    return in[0];
  for (size_t i = 0; i < ARRAY_SIZE(names); i++)
    if (strlen(names[i].text) == len && strncasecmp(in, names[i].text, len) == 0)
      return names[i].key;
  return 0;
}

static void write_stdin(struct mcp_server *s, json_t *id, json_t *args) {
  long sid, yield, tokens;
  if (!session_arg(s, id, args, "write_stdin", &sid))
    return;
  json_t *chars = json_object_get(args, "chars");
  if ((chars && !json_is_null(chars) && !json_is_string(chars))) {
    tool_error(s, id, "write_stdin: `chars` must be a string");
    return;
  }
  const char *in = json_is_string(chars) ? json_string_value(chars) : "";
  size_t inlen = json_is_string(chars) ? json_string_length(chars) : 0;
  if (!int_arg(args, "yield_time_ms", &yield, inlen ? 250 : 5000) ||
      !int_arg(args, "max_output_tokens", &tokens, 10000)) {
    tool_error(s, id, "write_stdin: yield_time_ms and max_output_tokens must be integers");
    return;
  }
  json_t *close = json_object_get(args, "close_stdin");
  if (close && !json_is_null(close) && !json_is_boolean(close)) {
    tool_error(s, id, "write_stdin: `close_stdin` must be true or false");
    return;
  }
  int key = control_key(in, inlen);
  struct mcp_pending p = {.started = mono_ms(), .session = sid,
                          .max_bytes = (size_t)clampl(tokens, 1, 200000) * 4};
  p.deadline = p.started + clampl(yield, 0, 300000);
  corral_session_result r;
  corral_error err = {0};
  int rc = key == 3   ? corral_session_interrupt(s->sessions, sid, 0, &r, &err)
           : key == 4 ? corral_session_eof(s->sessions, sid, 0, &r, &err)
                      : corral_session_continue(s->sessions, sid, in, inlen, false, 0, &r, &err);
  if (rc == 0 && json_is_true(close) && !r.exited) {
    pending_append(&p, &r); /* what came with the write, then the EOF */
    corral_session_result_free(&r);
    rc = corral_session_eof(s->sessions, sid, 0, &r, &err);
  }
  if (rc < 0) {
    free(p.out);
    tool_error(s, id, "write_stdin: %s", err.message);
    return;
  }
  settle(s, id, &p, &r);
  corral_session_result_free(&r);
}

static void list_sessions(struct mcp_server *s, json_t *id) {
  corral_session_info *info;
  size_t n;
  if (corral_sessions_list(s->sessions, &info, &n) < 0) {
    reply_error(s, id, -32603, "out of memory");
    return;
  }
  json_t *arr = json_array();
  char text[8192] = "";
  size_t tl = 0;
  if (!n)
    tl += (size_t)snprintf(text, sizeof text, "No sessions.\n");
  for (size_t i = 0; i < n; i++) {
    size_t tlen;
    char *tail = utf8_sanitize(info[i].tail ? info[i].tail : "", info[i].tail_len, &tlen, NULL);
    json_array_append_new(
        arr, json_pack("{s:I,s:s,s:s,s:I,s:I,s:b,s:s,s:o,s:s%,s:b}", "sessionId",
                       (json_int_t)info[i].id, "command", info[i].command, "workingDirectory",
                       info[i].working_directory, "startedMs", (json_int_t)info[i].started_ms,
                       "lastUsedMs", (json_int_t)info[i].last_used_ms, "tty", info[i].tty,
                       "status", info[i].running ? "running" : "exited", "exitCode",
                       info[i].running ? json_null() : json_integer(info[i].exit.code),
                       "lastOutput", tail ? tail : "", tail ? tlen : 0, "outputDropped",
                       info[i].dropped));
    free(tail);
    if (tl < sizeof text)
      tl += (size_t)snprintf(text + tl, sizeof text - tl, "%ld %s %s: %s\n", info[i].id,
                             info[i].running ? "running" : "exited",
                             info[i].working_directory, info[i].command);
  }
  corral_session_info_free(info, n);
  json_t *result = text_result(text, false);
  json_object_set_new(result, "structuredContent", json_pack("{s:o}", "sessions", arr));
  reply(s, id, result);
}

static void stop_session(struct mcp_server *s, json_t *id, json_t *args) {
  long sid;
  if (!session_arg(s, id, args, "stop_session", &sid))
    return;
  corral_error err = {0};
  if (corral_session_stop(s->sessions, sid, &err) < 0) {
    tool_error(s, id, "stop_session: %s", err.message);
    return;
  }
  /* A call still waiting on it is answered now with what there was. */
  char msg[64];
  snprintf(msg, sizeof msg, "Session %ld stopped.", sid);
  reply(s, id, text_result(msg, false));
}

static void tools_call(struct mcp_server *s, json_t *id, json_t *params) {
  json_t *name = json_object_get(params, "name"), *args = json_object_get(params, "arguments");
  if (!json_is_string(name)) {
    reply_error(s, id, ERR_PARAMS, "tools/call: `name` must be a string");
    return;
  }
  if (args && !json_is_null(args) && !json_is_object(args)) {
    reply_error(s, id, ERR_PARAMS, "tools/call: `arguments` must be an object");
    return;
  }
  json_t *empty = NULL;
  if (!json_is_object(args))
    args = empty = json_object();
  const char *tool = json_string_value(name);
  if (strcmp(tool, "exec_command") == 0)
    mcp_exec(s, id, args, NULL);
  else if (strcmp(tool, "write_stdin") == 0)
    write_stdin(s, id, args);
  else if (strcmp(tool, "list_sessions") == 0)
    list_sessions(s, id);
  else if (strcmp(tool, "stop_session") == 0)
    stop_session(s, id, args);
  else
    reply_error(s, id, ERR_PARAMS, "unknown tool `%s`", tool);
  json_decref(empty);
}

/* ------------------------------------------------------------ protocol */

static void initialize(struct mcp_server *s, json_t *id, json_t *params) {
  json_t *v = json_object_get(params, "protocolVersion");
  if (!json_is_string(v)) {
    reply_error(s, id, ERR_PARAMS, "initialize: `protocolVersion` must be a string");
    return;
  }
  const char *chosen = versions[0]; /* unsupported: offer the newest we speak */
  for (size_t i = 0; i < ARRAY_SIZE(versions); i++)
    if (strcmp(json_string_value(v), versions[i]) == 0)
      chosen = versions[i];
  snprintf(s->protocol, sizeof s->protocol, "%s", chosen);
  /* Elicitation came with 2025-06-18; in form mode (an empty object is
   * form mode, as the version that added `url` says). */
  json_t *caps = json_object_get(params, "capabilities");
  json_t *eli = json_is_object(caps) ? json_object_get(caps, "elicitation") : NULL;
  s->can_elicit = json_is_object(eli) &&
                  (json_object_size(eli) == 0 || json_is_object(json_object_get(eli, "form"))) &&
                  strcmp(chosen, "2025-06-18") >= 0;
  reply(s, id,
        json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s},s:s}", "protocolVersion", chosen, "capabilities",
                  "tools", "listChanged", false, "serverInfo", "name", "corral", "version",
                  corral_version(), "instructions",
                  "Commands run in corral's sandbox. Long-running ones become sessions: poll "
                  "and type into them with write_stdin."));
}

/* A cancelled call gets no answer (rule 3); a cancelled exec_command
 * also ends the command it started, its whole tree, and the session goes
 * (the client never learnt its id).  A cancelled poll leaves it running. */
static void cancelled(struct mcp_server *s, json_t *params) {
  json_t *rid = json_object_get(params, "requestId");
  if (rid && mcp_approval_cancel(s, rid))
    return; /* it waited for the user: the question is withdrawn */
  for (size_t i = 0; rid && i < s->npending; i++)
    if (json_equal(s->pending[i].id, rid)) {
      bool ours = s->pending[i].started_command;
      long session = s->pending[i].session;
      struct mcp_batch *bt = batch_of(s, s->pending[i].batch);
      if (bt) { /* the batch no longer waits for it */
        batch_unwait(bt, s->pending[i].id);
        batch_finish(s, bt);
      }
      pending_free(&s->pending[i]);
      s->pending[i] = s->pending[--s->npending];
      corral_error err = {0};
      if (ours)
        corral_session_stop(s->sessions, session, &err);
      return;
    }
}

static void handle_message(struct mcp_server *s, json_t *msg);

/* A batch (2025-03-26 allows them; later versions do not): each element
 * handled as a line of its own, the answers sent as one array once the
 * last request in it is answered (a tools/call may answer later). */
static void handle_batch(struct mcp_server *s, json_t *msg) {
  struct mcp_batch *grown = json_array_size(msg)
                                ? realloc(s->batches, (s->nbatches + 1) * sizeof *grown)
                                : NULL;
  if (!grown) {
    reply_error(s, NULL, ERR_INVALID_REQUEST,
                json_array_size(msg) ? "out of memory" : "an empty batch");
    return;
  }
  s->batches = grown;
  unsigned serial = ++s->next_serial ? s->next_serial : ++s->next_serial;
  s->batches[s->nbatches++] =
      (struct mcp_batch){.serial = serial, .waiting = json_array(), .answers = json_array()};
  struct mcp_batch *bt = &s->batches[s->nbatches - 1];
  size_t i;
  json_t *m;
  json_array_foreach(msg, i, m) {
    json_t *id = json_is_object(m) ? json_object_get(m, "id") : NULL;
    if (json_is_object(m) && json_object_get(m, "method") && (json_is_string(id) || json_is_integer(id)))
      json_array_append(bt->waiting, id);
  }
  s->collecting = serial;
  json_array_foreach(msg, i, m) handle_message(s, m);
  s->collecting = 0;
  /* Those not deferred were answered: what still waits is a call that
   * answers later (it carries the batch's serial). */
  bt = batch_of(s, serial);
  json_t *pending_ids = json_array();
  for (size_t k = 0; k < s->npending; k++)
    if (s->pending[k].batch == serial)
      json_array_append(pending_ids, s->pending[k].id);
  json_decref(bt->waiting);
  bt->waiting = pending_ids;
  batch_finish(s, bt);
}

void mcp_handle_line(struct mcp_server *s, const char *line, size_t len) {
  json_error_t jerr;
  while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
    len--;
  if (len == 0)
    return;
  json_t *msg = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!msg) {
    reply_error(s, NULL, ERR_PARSE, "parse error at byte %d: %s", jerr.position, jerr.text);
    return;
  }
  if (json_is_array(msg) && strcmp(s->protocol, "2025-03-26") == 0 && !s->collecting)
    handle_batch(s, msg);
  else
    handle_message(s, msg);
  json_decref(msg);
}

static void handle_message(struct mcp_server *s, json_t *msg) {
  json_t *id = json_object_get(msg, "id"), *method = json_object_get(msg, "method");
  if (!json_is_object(msg)) {
    reply_error(s, NULL, ERR_INVALID_REQUEST,
                json_is_array(msg) && !s->collecting
                    ? "not a JSON-RPC request object (batches: only under 2025-03-26)"
                    : "not a JSON-RPC request object");
  } else if (!method && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
    /* An answer to one of our questions (approval.c); one to a request we
     * never sent, or no longer wait for, is dropped. */
    mcp_approval_answer(s, msg);
  } else if (!json_is_string(json_object_get(msg, "jsonrpc")) ||
             strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0 ||
             !json_is_string(method) ||
             (id && !json_is_string(id) && !json_is_integer(id))) {
    reply_error(s, json_is_string(id) || json_is_integer(id) ? id : NULL, ERR_INVALID_REQUEST,
                "invalid request: needs \"jsonrpc\": \"2.0\", a string method, and an id that is a "
                "string or an integer");
  } else {
    const char *m = json_string_value(method);
    json_t *params = json_object_get(msg, "params");
    if (params && !json_is_object(params) && !json_is_null(params)) {
      if (id)
        reply_error(s, id, ERR_PARAMS, "%s: params must be an object", m);
    } else if (!id) { /* notifications: never answered */
      if (strcmp(m, "notifications/initialized") == 0)
        s->initialized = true;
      else if (strcmp(m, "notifications/cancelled") == 0)
        cancelled(s, params);
    } else if (strcmp(m, "initialize") == 0) {
      if (s->collecting)
        reply_error(s, id, ERR_INVALID_REQUEST, "initialize cannot be part of a batch");
      else
        initialize(s, id, params);
    } else if (strcmp(m, "ping") == 0) {
      reply(s, id, json_object());
    } else if (strcmp(m, "tools/list") == 0) {
      reply(s, id, tools_list());
    } else if (strcmp(m, "tools/call") == 0) {
      tools_call(s, id, params);
    } else {
      reply_error(s, id, ERR_METHOD, "unknown method `%s`", m);
    }
  }
}

void mcp_tick(struct mcp_server *s) { mcp_tick_until(s, mono_ms()); }

void mcp_tick_until(struct mcp_server *s, int64_t now) {
  mcp_approval_tick(s, now);
  for (size_t i = 0; i < s->npending;) {
    struct mcp_pending *p = &s->pending[i];
    int running = corral_session_running(s->sessions, p->session);
    if (running == 1 && now < p->deadline) {
      i++;
      continue;
    }
    struct mcp_pending done = *p;
    s->pending[i] = s->pending[--s->npending];
    corral_session_result r;
    corral_error err = {0};
    if (running < 0 ||
        corral_session_continue(s->sessions, done.session, NULL, 0, false, 0, &r, &err) < 0) {
      /* stopped meanwhile */
      corral_session_result_init(&r);
      r.exited = true;
      r.outcome.state = CORRAL_STATE_CANCELLED;
      r.outcome.kind = CORRAL_KIND_CANCELLED;
    }
    pending_append(&done, &r);
    s->answering = done.batch; /* its batch's array, if it was asked in one */
    send_session_result(s, done.id, &done, &r);
    s->answering = 0;
    corral_session_result_free(&r);
    pending_free(&done);
  }
}

int mcp_timeout(const struct mcp_server *s) {
  int64_t now = mono_ms(), best = mcp_approval_deadline(s);
  for (size_t i = 0; i < s->npending; i++)
    if (best < 0 || s->pending[i].deadline < best)
      best = s->pending[i].deadline;
  return best < 0 ? -1 : (int)(best > now ? best - now : 0);
}

int mcp_server_init(struct mcp_server *s, corral_adapter *adapter, char **roots, size_t nroots,
                    const char *shell) {
  memset(s, 0, sizeof *s);
  s->sessions = corral_sessions_new();
  if (!s->sessions)
    return -ENOMEM;
  s->adapter = adapter;
  s->roots = roots;
  s->nroots = nroots;
  s->shell = shell;
  s->approval_timeout_ms = MCP_APPROVAL_TIMEOUT_MS;
  s->next_request = 1;
  /* One approval session per server process: what its users granted. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(s->approval_id, sizeof s->approval_id, "corral-mcp-%ld-%lld", (long)getpid(),
           (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
  return 0;
}

void mcp_server_close(struct mcp_server *s) {
  for (size_t i = 0; i < s->npending; i++)
    pending_free(&s->pending[i]);
  free(s->pending);
  for (size_t i = 0; i < s->nbatches; i++)
    json_decref(s->batches[i].waiting), json_decref(s->batches[i].answers);
  free(s->batches);
  corral_sessions_free(s->sessions);
  mcp_approval_close(s); /* after the sessions: their adapters outlive them */
  memset(s, 0, sizeof *s);
}
