/*
 * approval.c — a refusal the user may lift, precisely, through the client.
 *
 * When exec_command's command was refused (its outcome denied, or refusals
 * listed and a non-zero exit) and the client declared `elicitation`, the
 * server asks the user (`elicitation/create`, form mode) whether to allow
 * exactly what was refused — once, for this session, or not — and on
 * approval runs the command again with that added.  An agent may also ask
 * before running (exec_command's `request_capabilities`, with a
 * justification); without a client that can ask, that is refused.
 *
 * Invariants:
 *   1. a grant is one capability of one exact scope, as the refusal (or the
 *      agent) named it, checked before anyone is asked: an absolute, normal
 *      path with no symbolic link on the way, neither `/` nor the home
 *      directory or above it; or a host:port, never a wildcard, never the
 *      whole network.  A path in protected metadata is granted only as
 *      protected_metadata of that path, and the question says so;
 *   2. nothing is granted without the user's `accept` of that question: an
 *      error, a decline, a cancel, an answer naming no choice, no answer in
 *      time, or the call withdrawn, grant nothing;
 *   3. a question never blocks the server: it waits in s->asked and is
 *      matched by the id we gave it (an answer to any other id is dropped);
 *   4. `once` widens the policy for the one run it answers; `session` for
 *      every later exec_command of this process, and is kept nowhere else.
 *
 * A question's life:
 *
 *   asked --accept, once|session--> the run with the grant answers the call
 *     |---decline|cancel|error|timeout--> the refused result answers it (or,
 *     |                                   asked before running, a tool error)
 *     `---the call cancelled--> withdrawn: notifications/cancelled to the client
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

#include "../internal.h"
#include "../json_util.h"
#include "../netrules.h"
#include "../policy.h"
#include "mcp.h"

#define ASKED_MAX 16    /* questions waiting at once */
#define GRANTED_MAX 64  /* grants of one session */
#define WIDENED_MAX 64  /* adapters made for grant sets, kept until the server ends */
#define COMMAND_SHOWN 160 /* bytes of the command line in a question */

struct mcp_asked {
  long request;    /* the id of our elicitation/create */
  json_t *call;    /* the id of the tools/call it answers */
  json_t *args;    /* that call's exec_command arguments */
  json_t *held;    /* the refused run's result; NULL: asked before running */
  corral_capability *caps; /* owned: exactly what would be granted */
  size_t ncaps;
  int64_t deadline;
};

struct mcp_widened {
  char *key; /* the grant set, sorted: "kind\tscope\n" each */
  corral_adapter *adapter;
};

static const char *kind_name(corral_capability_kind k) {
  const char *n = corral_enum_name(CORRAL_ENUM_CAPABILITY, (int)k);
  return n ? n : "?";
}

static bool grantable_kind(corral_capability_kind k) {
  return k == CORRAL_CAP_WORKSPACE_WRITE || k == CORRAL_CAP_EXTERNAL_NETWORK ||
         k == CORRAL_CAP_PROTECTED_METADATA;
}

static void caps_free(corral_capability *caps, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(caps[i].scope);
  free(caps);
}

static bool same_cap(const corral_capability *a, const corral_capability *b) {
  return a->kind == b->kind && strcmp(a->scope, b->scope) == 0;
}

static bool granted_already(const struct mcp_server *s, const corral_capability *c) {
  for (size_t i = 0; i < s->ngranted; i++)
    if (same_cap(&s->granted[i], c))
      return true;
  return false;
}

/* ------------------------------------------------------------ scopes */

bool mcp_host_port(const char *scope, char *host, int *port) {
  const char *colon = strrchr(scope, ':');
  if (!colon || colon == scope || !isdigit((unsigned char)colon[1]) || colon[1] == '0')
    return false;
  char *end;
  errno = 0;
  long p = strtol(colon + 1, &end, 10);
  if (*end || errno || p < 1 || p > 65535)
    return false;
  const char *h = scope;
  size_t hl = (size_t)(colon - scope);
  if (h[0] == '[') {
    if (hl < 3 || h[hl - 1] != ']')
      return false;
    h++, hl -= 2;
  } else if (memchr(h, ':', hl)) {
    return false; /* an IPv6 literal goes in brackets */
  }
  /* Exactly as the proxy names a host: a scope that normalises to another
   * spelling is not the one that was refused. */
  if (memchr(h, '*', hl) || !net_host_normalize(h, hl, host) || strlen(host) != hl ||
      strncmp(host, h, hl) != 0)
    return false;
  *port = (int)p;
  return true;
}

static bool is_protected_name(const char *name, size_t len) {
  return (len == 4 && strncmp(name, ".git", 4) == 0) ||
         (len == 7 && strncmp(name, ".agents", 7) == 0) ||
         (len == 7 && strncmp(name, ".corral", 7) == 0);
}

/* Is any component of the path protected metadata? */
static bool in_protected(const char *path) {
  for (const char *p = path; *p;) {
    while (*p == '/')
      p++;
    const char *e = strchr(p, '/');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (is_protected_name(p, len))
      return true;
    p += len;
  }
  return false;
}


/* Why a path cannot be a grant's scope, or NULL. */
static const char *bad_path(const char *path) {
  size_t len = strlen(path);
  char home[PATH_MAX];
  if (path[0] != '/')
    return "must be an absolute path";
  if (len >= PATH_MAX)
    return "is too long";
  for (const char *p = path; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      return "holds a control character";
  if (strstr(path, "//") || strstr(path, "/./") || strstr(path, "/../") ||
      (len > 1 && path[len - 1] == '/') || (len >= 2 && strcmp(path + len - 2, "/.") == 0) ||
      (len >= 3 && strcmp(path + len - 3, "/..") == 0))
    return "must be a normal path (no `.`, `..`, `//` or trailing `/`)";
  if (strcmp(path, "/") == 0)
    return "is the whole file system: name the path itself";
  if (user_home(home, sizeof home) && path_is_under(home, path))
    return "holds the home directory and its secret stores: name the path itself";
  if (path_through_symlink(path)) /* the approver reads one path, the sandbox would open another */
    return "is, or goes through, a symbolic link: name the real path";
  return NULL;
}

/* Why `c` cannot be granted as it is, or NULL.  A path in protected
 * metadata is granted only as protected_metadata (rule 1). */
static const char *bad_scope(const struct mcp_server *s, const corral_capability *c, char *why,
                             size_t whylen) {
  char host[NET_HOST_MAX + 1];
  int port;
  struct stat st;
  const char *no = NULL;
  if (!grantable_kind(c->kind))
    return "only workspace_write, external_network and protected_metadata can be granted "
           "(the sandbox gives every command the others, or never)";
  if (!c->scope || !*c->scope)
    return "needs a scope: the path or host:port";
  if (c->kind == CORRAL_CAP_EXTERNAL_NETWORK) {
    if (!mcp_host_port(c->scope, host, &port))
      return "must be host:port (or [v6]:port), lower case, one host: no wildcard";
  } else if ((no = bad_path(c->scope))) {
    return no;
  } else if (c->kind == CORRAL_CAP_WORKSPACE_WRITE && in_protected(c->scope)) {
    /* A write refused there is outside the write roots (inside, it is
     * protected_metadata), where allowProtected opens nothing. */
    return "lies in protected metadata (.git, .agents, .corral): ask for protected_metadata "
           "of that path by name, inside a write root";
  } else if (c->kind == CORRAL_CAP_PROTECTED_METADATA && !in_protected(c->scope)) {
    return "protected_metadata names a path in a .git, .agents or .corral";
  } else if (c->kind == CORRAL_CAP_WORKSPACE_WRITE && lstat(c->scope, &st) < 0) {
    /* The sandbox makes writable what is there: a grant of a missing path
     * would change nothing (a refused write names the directory). */
    return "does not exist: ask for the directory that is to hold it";
  }
  if (!s->widen)
    return "this server cannot widen its policy";
  if (s->widen(s->widen_ctx, c, 1, NULL, why, whylen) < 0)
    return why;
  return NULL;
}

/* What the user is asked to allow, in words. */
static void describe(const corral_capability *c, char *out, size_t size) {
  switch (c->kind) {
  case CORRAL_CAP_EXTERNAL_NETWORK:
    snprintf(out, size, "connect to %s (that host and port only, through corral's proxy)",
             c->scope);
    break;
  case CORRAL_CAP_PROTECTED_METADATA:
    snprintf(out, size, "write %s, which corral protects (repository or agent metadata)",
             c->scope);
    break;
  default:
    snprintf(out, size, "write %s", c->scope);
    break;
  }
}

/* The server option that would allow it for good. */
static const char *flag_for(corral_capability_kind k) {
  return k == CORRAL_CAP_EXTERNAL_NETWORK     ? "--allow-domain"
         : k == CORRAL_CAP_PROTECTED_METADATA ? "--allow-protected"
                                              : "--allow-write";
}

static json_t *caps_json(const corral_capability *caps, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, json_pack("{s:s,s:s}", "kind", kind_name(caps[i].kind), "scope",
                                       caps[i].scope));
  return a;
}

/* ------------------------------------------------------------ adapters */

static int cmp_cap(const void *a, const void *b) {
  const corral_capability *x = *(const corral_capability *const *)a,
                          *y = *(const corral_capability *const *)b;
  return x->kind != y->kind ? (int)x->kind - (int)y->kind : strcmp(x->scope, y->scope);
}

corral_adapter *mcp_approval_adapter(struct mcp_server *s, const corral_capability *once,
                                     size_t nonce, char *why, size_t whylen) {
  size_t n = 0, total = s->ngranted + nonce;
  const corral_capability **set = calloc(total ? total : 1, sizeof *set);
  corral_capability *flat = calloc(total ? total : 1, sizeof *flat);
  char *key = NULL;
  size_t klen = 1;
  corral_adapter *ad = NULL;
  if (!set || !flat) {
    snprintf(why, whylen, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < total; i++) {
    const corral_capability *c = i < s->ngranted ? &s->granted[i] : &once[i - s->ngranted];
    bool dup = false;
    for (size_t k = 0; k < n && !dup; k++)
      dup = same_cap(set[k], c);
    if (!dup)
      set[n++] = c, klen += strlen(c->scope) + 24;
  }
  if (!n) {
    ad = s->adapter;
    goto out;
  }
  qsort(set, n, sizeof *set, cmp_cap);
  key = malloc(klen);
  if (!key) {
    snprintf(why, whylen, "out of memory");
    goto out;
  }
  key[0] = '\0';
  for (size_t i = 0, o = 0; i < n; i++) {
    o += (size_t)snprintf(key + o, klen - o, "%s\t%s\n", kind_name(set[i]->kind), set[i]->scope);
    flat[i] = *set[i]; /* borrowed scopes: the callback copies what it keeps */
  }
  for (size_t i = 0; i < s->nwidened; i++)
    if (strcmp(s->widened[i].key, key) == 0) {
      ad = s->widened[i].adapter;
      goto out;
    }
  if (!s->widen) {
    snprintf(why, whylen, "this server cannot widen its policy");
    goto out;
  }
  if (s->nwidened >= WIDENED_MAX) {
    snprintf(why, whylen,
             "this server has made %d sets of grants already: restart it, with the options "
             "that allow what is needed",
             WIDENED_MAX);
    goto out;
  }
  struct mcp_widened *g = realloc(s->widened, (s->nwidened + 1) * sizeof *g);
  if (!g) {
    snprintf(why, whylen, "out of memory");
    goto out;
  }
  s->widened = g;
  if (s->widen(s->widen_ctx, flat, n, &ad, why, whylen) < 0 || !ad) {
    ad = NULL;
    goto out;
  }
  s->widened[s->nwidened++] = (struct mcp_widened){.key = key, .adapter = ad};
  key = NULL;
out:
  free(key);
  free(set);
  free(flat);
  return ad;
}

int mcp_approval_fill(const struct mcp_server *s, const corral_capability *once, size_t nonce,
                      corral_request *req) {
  if (!s->ngranted && !nonce)
    return 0;
  int r = 0;
  for (size_t i = 0; i < s->ngranted + nonce && r == 0; i++) {
    const corral_capability *c = i < s->ngranted ? &s->granted[i] : &once[i - s->ngranted];
    r = corral_request_add_capability(req, c->kind, c->scope);
  }
  free(req->approval_session_id);
  req->approval_session_id = strdup(s->approval_id);
  req->approval_policy_version = 1;
  req->approval_set = true;
  return r < 0 || !req->approval_session_id ? -ENOMEM : 0;
}

/* ------------------------------------------------------------ results */

void mcp_approval_annotate(json_t *result, const char *line, json_t *approval) {
  json_t *block = json_array_get(json_object_get(result, "content"), 0);
  const char *old = json_string_value(json_object_get(block, "text"));
  if (line && old) {
    size_t n = strlen(line) + strlen(old) + 2;
    char *text = malloc(n);
    if (text) {
      snprintf(text, n, "%s\n%s", line, old);
      json_object_set_new(block, "text", json_string(text));
      free(text);
    }
  }
  json_t *sc = json_object_get(result, "structuredContent");
  if (json_is_object(sc) && approval)
    json_object_set(sc, "approval", approval);
}

/* Did the run end because of a refusal (so that lifting it may help)? */
static bool ended_refused(const corral_outcome *o) {
  if (o->state == CORRAL_STATE_DENIED && o->denial.present)
    return true;
  return o->ndenials && o->exit.present && (o->exit.code != 0 || o->exit.signal);
}

/* The n-th refusal of the outcome: the denial first, then the list. */
static const corral_denial *refusal(const corral_outcome *o, size_t i) {
  if (o->denial.present) {
    if (i == 0)
      return &o->denial;
    i--;
  }
  return i < o->ndenials ? &o->denials[i] : NULL;
}

/* The capability that would lift refusal d, checked; false when there is
 * none (not the user's to grant, or too wide, or granted and refused all
 * the same). */
static bool lift(const struct mcp_server *s, const corral_denial *d, corral_capability *c) {
  char why[512];
  if (!d->recoverable || d->next_action != CORRAL_NEXT_REQUEST_APPROVAL ||
      !grantable_kind(d->capability.kind) || !d->capability.scope)
    return false;
  c->kind = d->capability.kind;
  c->scope = d->capability.scope; /* borrowed */
  return !bad_scope(s, c, why, sizeof why) && !granted_already(s, c);
}


json_t *mcp_approval_hint(const struct mcp_server *s, const corral_outcome *o, char *text,
                          size_t size, size_t *n) {
  corral_capability caps[MCP_REQUEST_CAPABILITIES_MAX];
  size_t nc = 0;
  const corral_denial *d;
  for (size_t i = 0; (d = refusal(o, i)) && nc < ARRAY_SIZE(caps); i++) {
    corral_capability c;
    bool dup = false;
    if (!lift(s, d, &c))
      continue;
    for (size_t k = 0; k < nc && !dup; k++)
      dup = same_cap(&caps[k], &c);
    if (!dup)
      caps[nc++] = c;
  }
  if (!nc)
    return NULL;
  json_t *asks = caps_json(caps, nc);
  char *arg = json_dumps(asks, JSON_COMPACT);
  json_t *options = json_array();
  mcp_append(text, size, n, "Needs approval:");
  for (size_t i = 0; i < nc; i++) {
    mcp_append(text, size, n, "%s %s %s", i ? "," : "", kind_name(caps[i].kind), caps[i].scope);
    json_array_append_new(options, json_string(flag_for(caps[i].kind)));
    json_array_append_new(options, json_string(caps[i].scope));
  }
  if (s->can_elicit) {
    mcp_append(text, size, n,
        ". To ask the user, call exec_command again with request_capabilities: %s and a "
        "justification.\n",
        arg ? arg : "[]");
  } else {
    mcp_append(text, size, n,
        ". This client cannot ask the user (it declared no elicitation), so "
        "request_capabilities (%s, with a justification) will be refused: ask the user to "
        "allow it, e.g. by starting corral mcp with",
        arg ? arg : "[]");
    for (size_t i = 0; i < nc; i++)
      mcp_append(text, size, n, " %s %s", flag_for(caps[i].kind), caps[i].scope);
    mcp_append(text, size, n, ", then run it again.\n");
  }
  free(arg);
  return json_pack("{s:o,s:{s:O},s:b,s:o}", "capabilities", asks, "argument",
                   "request_capabilities", asks, "clientCanAsk", s->can_elicit, "serverOptions",
                   options);
}

/* ------------------------------------------------------------ asking */

/* The command line as a question shows it: one line, bounded, valid UTF-8. */
static void shown_command(json_t *args, char *out, size_t size) {
  const char *cmd = json_string_value(json_object_get(args, "cmd"));
  size_t len = cmd ? strlen(cmd) : 0, keep = utf8_prefix_len(cmd ? cmd : "", len < COMMAND_SHOWN ? len : COMMAND_SHOWN);
  size_t clean_len;
  char *clean = utf8_sanitize(cmd ? cmd : "", keep, &clean_len, NULL);
  for (size_t i = 0; clean && i < clean_len; i++)
    if ((unsigned char)clean[i] < 0x20 || clean[i] == 0x7f)
      clean[i] = ' ';
  snprintf(out, size, "%s%s", clean ? clean : "", keep < len ? "…" : "");
  free(clean);
}

/* Sends elicitation/create for `a` and keeps it waiting.  False (nothing
 * sent, `a` untouched) when it cannot be kept. */
static bool ask(struct mcp_server *s, struct mcp_asked *a, const char *why_line) {
  struct mcp_asked *g = realloc(s->asked, (s->nasked + 1) * sizeof *g);
  if (!g)
    return false;
  s->asked = g;
  char cmd[COMMAND_SHOWN * 3 + 8], what[PATH_MAX + 128], msg[8192];
  size_t n = 0;
  shown_command(a->args, cmd, sizeof cmd);
  if (a->ncaps == 1) {
    describe(&a->caps[0], what, sizeof what);
    mcp_append(msg, sizeof msg, &n, "Allow `%s` to %s?\n", cmd, what);
  } else {
    mcp_append(msg, sizeof msg, &n, "Allow `%s` to:\n", cmd);
    for (size_t i = 0; i < a->ncaps; i++) {
      describe(&a->caps[i], what, sizeof what);
      mcp_append(msg, sizeof msg, &n, "- %s\n", what);
    }
  }
  if (why_line)
    mcp_append(msg, sizeof msg, &n, "%s\n", why_line);
  mcp_append(msg, sizeof msg, &n, "%s",
      a->held ? "It was refused; corral will run it again with exactly that allowed, nothing "
                "wider."
              : "corral will run it with exactly that allowed, nothing wider.");
  /* 2025-06-18 names an enum's choices with enumNames; 2025-11-25 with oneOf. */
  static const char *const values[] = {"once", "session", "no"},
                           *const titles[] = {"Yes, this once",
                                              "Yes, for this session (until corral mcp exits)",
                                              "No"};
  json_t *allow = json_pack("{s:s,s:s,s:s}", "type", "string", "title", "Allow?", "description",
                            "once: this run only; session: every later command of this "
                            "server, until it exits");
  if (strcmp(s->protocol, "2025-11-25") >= 0) {
    json_t *one = json_array();
    for (size_t i = 0; i < ARRAY_SIZE(values); i++)
      json_array_append_new(one, json_pack("{s:s,s:s}", "const", values[i], "title", titles[i]));
    json_object_set_new(allow, "oneOf", one);
  } else {
    json_object_set_new(allow, "enum", json_pack("[s,s,s]", values[0], values[1], values[2]));
    json_object_set_new(allow, "enumNames", json_pack("[s,s,s]", titles[0], titles[1], titles[2]));
  }
  a->request = s->next_request++;
  a->deadline = mono_ms() + s->approval_timeout_ms;
  s->asked[s->nasked++] = *a;
  mcp_send(s, json_pack("{s:s,s:I,s:s,s:{s:s,s:{s:s,s:{s:o},s:[s]}}}", "jsonrpc", "2.0", "id",
                        (json_int_t)a->request, "method", "elicitation/create", "params",
                        "message", msg, "requestedSchema", "type", "object", "properties",
                        "allow", allow, "required", "allow"));
  return true;
}

static void asked_free(struct mcp_asked *a) {
  json_decref(a->call);
  json_decref(a->args);
  json_decref(a->held);
  caps_free(a->caps, a->ncaps);
}

static json_t *record(const struct mcp_server *s, const struct mcp_asked *a, const char *answer) {
  return json_pack("{s:s,s:o,s:s}", "sessionId", s->approval_id, "asked",
                   caps_json(a->caps, a->ncaps), "answer", answer);
}

static void what_list(const struct mcp_asked *a, char *out, size_t size) {
  size_t n = 0;
  out[0] = '\0';
  for (size_t i = 0; i < a->ncaps; i++)
    mcp_append(out, size, &n, "%s%s %s", i ? ", " : "", kind_name(a->caps[i].kind), a->caps[i].scope);
}

/* The user allowed it: the run with the grant answers the call. */
static void approved(struct mcp_server *s, struct mcp_asked *a, bool session) {
  char what[2048], note[2300];
  what_list(a, what, sizeof what);
  struct mcp_run run = {.approval = record(s, a, session ? "session" : "once")};
  bool kept = session;
  for (size_t i = 0; session && kept && i < a->ncaps; i++) {
    if (granted_already(s, &a->caps[i]))
      continue;
    corral_capability *g =
        s->ngranted < GRANTED_MAX ? realloc(s->granted, (s->ngranted + 1) * sizeof *g) : NULL;
    char *scope = g ? strdup(a->caps[i].scope) : NULL;
    if (g)
      s->granted = g;
    if (scope)
      s->granted[s->ngranted++] = (corral_capability){a->caps[i].kind, scope};
    kept = scope != NULL;
  }
  /* What the session cannot keep (past its bound) this run still has. */
  if (!kept) {
    run.once = a->caps;
    run.nonce = a->ncaps;
  }
  json_object_set_new(run.approval, "granted", caps_json(a->caps, a->ncaps));
  snprintf(note, sizeof note, "%s with %s allowed: the user approved it %s.%s",
           a->held ? "Ran again" : "Ran", what, session ? "for this session" : "once",
           session && !kept ? " This server keeps no more grants: it holds for this run only."
                            : "");
  run.note = note;
  mcp_exec(s, a->call, a->args, &run);
  json_decref(run.approval);
}

/* Not allowed: the refused result answers the call (or, asked before
 * running, a tool error), saying why. */
static void not_approved(struct mcp_server *s, struct mcp_asked *a, const char *answer,
                         const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void not_approved(struct mcp_server *s, struct mcp_asked *a, const char *answer,
                         const char *fmt, ...) {
  char why[1024], what[2048], note[3200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  what_list(a, what, sizeof what);
  if (!a->held) {
    mcp_tool_error(s, a->call, "exec_command: not run, and nothing granted (%s): %s", what, why);
    return;
  }
  snprintf(note, sizeof note, "Not run again: %s; %s stays refused.", why, what);
  json_t *rec = record(s, a, answer);
  mcp_approval_annotate(a->held, note, rec);
  json_decref(rec);
  mcp_reply(s, a->call, a->held);
  a->held = NULL;
}

/* Takes question i out of the list (the caller frees it). */
static struct mcp_asked take(struct mcp_server *s, size_t i) {
  struct mcp_asked a = s->asked[i];
  s->asked[i] = s->asked[--s->nasked];
  return a;
}

bool mcp_approval_offer(struct mcp_server *s, json_t *id, json_t *args, const corral_outcome *o,
                        json_t *result) {
  if (!s->can_elicit || !ended_refused(o) || s->nasked >= ASKED_MAX)
    return false;
  /* One question per call, for the refusal that stopped it (the first one
   * that can be lifted): a grant is one scope, and the rerun asks nothing. */
  const corral_denial *d;
  corral_capability c = {0};
  bool found = false;
  for (size_t i = 0; !found && (d = refusal(o, i)); i++)
    found = lift(s, d, &c);
  if (!found)
    return false;
  struct mcp_asked a = {.call = json_incref(id), .args = json_incref(args), .held = result,
                        .caps = calloc(1, sizeof *a.caps), .ncaps = 1};
  if (a.caps)
    a.caps[0] = (corral_capability){c.kind, strdup(c.scope)};
  char reason[1200];
  snprintf(reason, sizeof reason, "The sandbox said: %s.", d->reason ? d->reason : "refused");
  if (!a.caps || !a.caps[0].scope || !ask(s, &a, reason)) {
    a.held = NULL; /* not taken: the caller sends it */
    asked_free(&a);
    return false;
  }
  return true;
}

void mcp_approval_request(struct mcp_server *s, json_t *id, json_t *args, json_t *asks,
                          json_t *justification) {
  char why[1024];
  if (!json_is_array(asks) || !json_array_size(asks)) {
    mcp_tool_error(s, id, "exec_command: `request_capabilities` must be a non-empty array of "
                          "{\"kind\", \"scope\"} objects");
    return;
  }
  if (json_array_size(asks) > MCP_REQUEST_CAPABILITIES_MAX) {
    mcp_tool_error(s, id, "exec_command: `request_capabilities` names %zu capabilities: at most "
                          "%d in one call",
                   json_array_size(asks), MCP_REQUEST_CAPABILITIES_MAX);
    return;
  }
  const char *just = json_string_value(justification);
  if (!just || str_blank(just) || strlen(just) != json_string_length(justification) ||
      strlen(just) > MCP_JUSTIFICATION_MAX) {
    mcp_tool_error(s, id, "exec_command: `request_capabilities` needs a `justification`: a "
                          "non-empty string of at most %d bytes saying why, shown to the user",
                   MCP_JUSTIFICATION_MAX);
    return;
  }
  corral_capability *caps = calloc(json_array_size(asks), sizeof *caps);
  size_t n = 0, i;
  json_t *item;
  if (!caps) {
    mcp_tool_error(s, id, "exec_command: out of memory");
    return;
  }
  json_array_foreach(asks, i, item) {
    json_t *kind = json_object_get(item, "kind"), *scope = json_object_get(item, "scope");
    const char *bad = NULL;
    corral_capability c = {0};
    if (!json_is_object(item) || !json_is_string(kind) || !json_is_string(scope) ||
        json_object_size(item) != 2) {
      bad = "must be {\"kind\": ..., \"scope\": ...} and nothing else";
    } else if (!(c.kind = (corral_capability_kind)corral_enum_parse(CORRAL_ENUM_CAPABILITY,
                                                                    json_string_value(kind)))) {
      bad = "the kind is none of the contract's capability kinds";
    } else if (strlen(json_string_value(scope)) != json_string_length(scope)) {
      bad = "the scope holds a NUL";
    } else {
      c.scope = (char *)json_string_value(scope);
      bad = bad_scope(s, &c, why, sizeof why);
    }
    if (bad) {
      mcp_tool_error(s, id, "exec_command: request_capabilities[%zu] (%s %s): %s", i,
                     json_is_string(kind) ? json_string_value(kind) : "?",
                     json_is_string(scope) ? json_string_value(scope) : "?", bad);
      caps_free(caps, n);
      return;
    }
    bool dup = granted_already(s, &c);
    for (size_t k = 0; k < n && !dup; k++)
      dup = same_cap(&caps[k], &c);
    if (dup)
      continue;
    caps[n] = (corral_capability){c.kind, strdup(c.scope)};
    if (!caps[n++].scope) {
      mcp_tool_error(s, id, "exec_command: out of memory");
      caps_free(caps, n);
      return;
    }
  }
  if (!n) { /* every one granted for this session already */
    caps_free(caps, n);
    json_t *rec = json_pack("{s:s,s:s,s:o}", "sessionId", s->approval_id, "answer",
                            "granted earlier", "granted", caps_json(s->granted, s->ngranted));
    mcp_exec(s, id, args,
             &(struct mcp_run){.approval = rec,
                               .note = "Ran with what it asked for: the user granted it earlier "
                                       "in this session."});
    json_decref(rec);
    return;
  }
  if (!s->can_elicit || s->nasked >= ASKED_MAX) {
    const corral_capability *c = &caps[0];
    mcp_tool_error(
        s, id,
        !s->can_elicit
            ? "exec_command: request_capabilities needs a client that can ask the user (MCP "
              "elicitation), and this one declared none: nothing was run, nothing granted. Ask "
              "the user to allow it themselves (e.g. corral mcp %s %s), or run the command "
              "without it."
            : "exec_command: too many questions wait for the user already (%s %s not asked): "
              "nothing was run, nothing granted.",
        flag_for(c->kind), c->scope);
    caps_free(caps, n);
    return;
  }
  struct mcp_asked a = {.call = json_incref(id), .args = json_incref(args), .caps = caps,
                        .ncaps = n};
  /* The agent's words, shown as its words: one line, no control or
   * direction mark that could pass for the question's own lines. */
  char shown[MCP_JUSTIFICATION_MAX * 4 + 1], line[sizeof shown + 64];
  text_for_terminal(just, shown, sizeof shown);
  snprintf(line, sizeof line, "The agent says: \"%s\"", shown);
  if (!ask(s, &a, line)) {
    mcp_tool_error(s, id, "exec_command: out of memory");
    asked_free(&a);
  }
}

/* ------------------------------------------------------------ answers */

bool mcp_approval_answer(struct mcp_server *s, json_t *msg) {
  json_t *id = json_object_get(msg, "id");
  size_t i = 0;
  while (json_is_integer(id) && i < s->nasked && s->asked[i].request != json_integer_value(id))
    i++;
  if (!json_is_integer(id) || i == s->nasked)
    return false; /* not a question we wait on (rule 3) */
  struct mcp_asked a = take(s, i);
  /* What answers the call is its own message, never part of a batch the
   * answer came in (the call was not asked in one). */
  unsigned collecting = s->collecting;
  s->collecting = 0;
  json_t *error = json_object_get(msg, "error"), *result = json_object_get(msg, "result");
  const char *action = json_string_value(json_object_get(result, "action"));
  const char *choice =
      json_string_value(json_object_get(json_object_get(result, "content"), "allow"));
  if (error || !json_is_object(result)) {
    const char *m = json_string_value(json_object_get(error, "message"));
    not_approved(s, &a, "error", "the client could not ask the user (error %lld: %.300s)",
                 (long long)json_integer_value(json_object_get(error, "code")),
                 m ? m : "no message");
  } else if (action && strcmp(action, "accept") == 0 && choice &&
             (strcmp(choice, "once") == 0 || strcmp(choice, "session") == 0)) {
    approved(s, &a, strcmp(choice, "session") == 0);
  } else if (action && strcmp(action, "accept") == 0) {
    not_approved(s, &a, "declined", "the user answered %s",
                 choice && strcmp(choice, "no") == 0 ? "no" : "with no choice of once or session");
  } else if (action && strcmp(action, "decline") == 0) {
    not_approved(s, &a, "declined", "the user declined");
  } else if (action && strcmp(action, "cancel") == 0) {
    not_approved(s, &a, "cancelled", "the user dismissed the question");
  } else {
    not_approved(s, &a, "error", "the client's answer has no action accept, decline or cancel");
  }
  s->collecting = collecting;
  asked_free(&a);
  return true;
}

/* Tells the client we no longer wait for question `request`. */
static void withdraw(struct mcp_server *s, long request, const char *reason) {
  mcp_send(s, json_pack("{s:s,s:s,s:{s:I,s:s}}", "jsonrpc", "2.0", "method",
                        "notifications/cancelled", "params", "requestId", (json_int_t)request,
                        "reason", reason));
}

bool mcp_approval_cancel(struct mcp_server *s, json_t *call) {
  for (size_t i = 0; i < s->nasked; i++)
    if (json_equal(s->asked[i].call, call)) {
      struct mcp_asked a = take(s, i);
      withdraw(s, a.request, "the tool call was cancelled");
      asked_free(&a);
      return true;
    }
  return false;
}

void mcp_approval_tick(struct mcp_server *s, int64_t now) {
  for (size_t i = 0; i < s->nasked;) {
    if (s->asked[i].deadline > now) {
      i++;
      continue;
    }
    struct mcp_asked a = take(s, i);
    long secs = (long)(s->approval_timeout_ms / 1000);
    withdraw(s, a.request, "no answer in time");
    if (now == INT64_MAX)
      not_approved(s, &a, "no answer", "the client went away before the user answered");
    else
      not_approved(s, &a, "no answer", "no answer from the user in %ld s, taken as no", secs);
    asked_free(&a);
  }
}

int64_t mcp_approval_deadline(const struct mcp_server *s) {
  int64_t best = -1;
  for (size_t i = 0; i < s->nasked; i++)
    if (best < 0 || s->asked[i].deadline < best)
      best = s->asked[i].deadline;
  return best;
}

void mcp_approval_close(struct mcp_server *s) {
  for (size_t i = 0; i < s->nasked; i++)
    asked_free(&s->asked[i]);
  free(s->asked);
  for (size_t i = 0; i < s->nwidened; i++) {
    corral_adapter_free(s->widened[i].adapter);
    free(s->widened[i].key);
  }
  free(s->widened);
  caps_free(s->granted, s->ngranted);
  s->asked = NULL, s->widened = NULL, s->granted = NULL;
  s->nasked = s->nwidened = s->ngranted = 0;
}
