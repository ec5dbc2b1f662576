/*
 * contract_json.c — the JSON form of the execution contract.
 *
 * Field names and JSON types are those of zero's execution contract:
 * what zero writes decodes here, and what is written here decodes into
 * zero's types and passes its rules.  corral's own fields (`launched`,
 * `message`, `changesSkipped`, `changesScanned`, `limit`, `usage`) are extra keys zero
 * ignores, written only when known.  Decoding:
 *  1. syntax errors name the byte position jansson reports;
 *  2. a field of the wrong type or an unknown enum value names the field by
 *     its full path ("command.args[1]", "denial.capability.kind");
 *  3. unknown fields are ignored, so newer callers can talk to older corral;
 *  4. decoding does not apply the validation rules: call *_validate for that.
 */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "json_util.h"

/* ------------------------------------------------------------ helpers */

int json_parse_document(const char *text, size_t len, json_t **out, const char *what,
                        corral_error *err) {
  json_error_t jerr;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
  if (!root)
    return error_set(err, CORRAL_EBADJSON, 0, "%s: byte %d (line %d, column %d): %s", what,
                     jerr.position, jerr.line, jerr.column, jerr.text);
  if (!json_is_object(root)) {
    json_decref(root);
    return error_set(err, CORRAL_EBADJSON, 0, "%s: the top level must be a JSON object", what);
  }
  *out = root;
  return 0;
}

/* A string field: absent/null leaves *dst NULL; anything but a string fails. */
int json_get_string(json_t *obj, const char *key, const char *path, char **dst,
                    corral_error *err) {
  json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_string(v))
    return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: expected a string", path);
  const char *s = json_string_value(v);
  size_t len = json_string_length(v);
  if (strlen(s) != len)
    return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: contains a NUL character", path);
  free(*dst);
  *dst = strdup(s);
  return *dst ? 0 : error_set(err, -ENOMEM, ENOMEM, "field `%s`: out of memory", path);
}

int json_get_bool(json_t *obj, const char *key, const char *path, bool *dst, corral_error *err) {
  json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_boolean(v))
    return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: expected true or false", path);
  *dst = json_is_true(v);
  return 0;
}

int json_get_int(json_t *obj, const char *key, const char *path, long *dst, bool *present,
                 corral_error *err) {
  json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_integer(v))
    return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: expected an integer", path);
  json_int_t i = json_integer_value(v);
  if (i < -2147483648LL || i > 2147483647LL)
    return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: out of range", path);
  *dst = (long)i;
  if (present)
    *present = true;
  return 0;
}

static int get_long(json_t *obj, const char *key, const char *path, long *dst,
                    corral_error *err) {
  json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_integer(v))
    return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: expected an integer", path);
  *dst = (long)json_integer_value(v);
  return 0;
}

/* A non-negative 64-bit count (bytes, ms); absent leaves *dst untouched. */
static int get_count(json_t *obj, const char *key, const char *path, int64_t *dst,
                     corral_error *err) {
  json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_integer(v) || json_integer_value(v) < 0)
    return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: expected a non-negative integer",
                     path);
  *dst = (int64_t)json_integer_value(v);
  return 0;
}

/* An enum field; absent leaves *dst untouched (0 = not set). */
static int get_enum(json_t *obj, const char *key, const char *path, corral_enum which, int *dst,
                    corral_error *err) {
  json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_string(v))
    return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: expected a string", path);
  int value = corral_enum_parse(which, json_string_value(v));
  if (!value)
    return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: unknown value `%s`", path,
                     json_string_value(v));
  *dst = value;
  return 0;
}

/* An optional object field: *dst is NULL when absent. */
static int get_object(json_t *obj, const char *key, const char *path, json_t **dst,
                      corral_error *err) {
  json_t *v = json_object_get(obj, key);
  *dst = NULL;
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_object(v))
    return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: expected an object", path);
  *dst = v;
  return 0;
}

static int get_string_array(json_t *obj, const char *key, const char *path, char ***dst,
                            size_t *n, corral_error *err) {
  json_t *v = json_object_get(obj, key);
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_array(v))
    return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: expected an array of strings", path);
  size_t i;
  json_t *item;
  json_array_foreach(v, i, item) {
    if (!json_is_string(item) || strlen(json_string_value(item)) != json_string_length(item))
      return error_set(err, CORRAL_EBADJSON, 0, "field `%s[%zu]`: expected a string", path, i);
    if (strv_push(dst, n, json_string_value(item)) < 0)
      return error_set(err, -ENOMEM, ENOMEM, "field `%s`: out of memory", path);
  }
  return 0;
}

/* command.env: an array of "KEY=VALUE", or an object {KEY: VALUE}. */
static int get_env(json_t *command, corral_request *req, corral_error *err) {
  json_t *v = json_object_get(command, "env");
  if (!v || json_is_null(v))
    return 0;
  req->env_set = true;
  if (json_is_array(v)) {
    int r = get_string_array(command, "env", "command.env", &req->env, &req->nenv, err);
    if (r < 0)
      return r;
    for (size_t i = 0; i < req->nenv; i++)
      if (!strchr(req->env[i], '=') || req->env[i][0] == '=')
        return error_set(err, CORRAL_EBADJSON, 0,
                         "field `command.env[%zu]`: expected KEY=VALUE", i);
    return 0;
  }
  if (!json_is_object(v))
    return error_set(err, CORRAL_EBADJSON, 0, "field `command.env`: expected an array or object");
  const char *key;
  json_t *val;
  json_object_foreach(v, key, val) {
    if (!json_is_string(val) || strlen(json_string_value(val)) != json_string_length(val))
      return error_set(err, CORRAL_EBADJSON, 0,
                       "field `command.env.%s`: expected a string without NUL", key);
    if (!*key || strchr(key, '='))
      return error_set(err, CORRAL_EBADJSON, 0, "field `command.env`: bad variable name `%s`",
                       key);
    size_t len = strlen(key) + json_string_length(val) + 2;
    cleanup_free char *kv = malloc(len);
    if (!kv)
      return error_set(err, -ENOMEM, ENOMEM, "out of memory");
    snprintf(kv, len, "%s=%s", key, json_string_value(val));
    if (strv_push(&req->env, &req->nenv, kv) < 0)
      return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  }
  return 0;
}

static int get_capability(json_t *v, const char *path, corral_capability *cap,
                          corral_error *err) {
  char kpath[128];
  if (!json_is_object(v))
    return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: expected an object", path);
  snprintf(kpath, sizeof kpath, "%s.kind", path);
  int r = get_enum(v, "kind", kpath, CORRAL_ENUM_CAPABILITY, (int *)&cap->kind, err);
  if (r < 0)
    return r;
  snprintf(kpath, sizeof kpath, "%s.scope", path);
  return json_get_string(v, "scope", kpath, &cap->scope, err);
}

/* ------------------------------------------------------------ request */

static int decode_request(json_t *root, corral_request *req, corral_error *err) {
  int r;
  json_t *command, *approval, *caps;
  if ((r = get_enum(root, "origin", "origin", CORRAL_ENUM_ORIGIN, (int *)&req->origin, err)) < 0 ||
      (r = get_enum(root, "mode", "mode", CORRAL_ENUM_MODE, (int *)&req->mode, err)) < 0 ||
      (r = get_object(root, "command", "command", &command, err)) < 0 ||
      (r = json_get_string(root, "workingDirectory", "workingDirectory",
                           &req->working_directory, err)) < 0 ||
      (r = get_string_array(root, "workspaceRoots", "workspaceRoots", &req->workspace_roots,
                            &req->nroots, err)) < 0 ||
      (r = get_object(root, "approval", "approval", &approval, err)) < 0)
    return r;
  if (command) {
    if ((r = json_get_string(command, "name", "command.name", &req->name, err)) < 0 ||
        (r = get_string_array(command, "args", "command.args", &req->args, &req->nargs, err)) <
            0 ||
        (r = get_env(command, req, err)) < 0)
      return r;
  }
  if (approval) {
    req->approval_set = true;
    if ((r = json_get_string(approval, "sessionId", "approval.sessionId",
                             &req->approval_session_id, err)) < 0 ||
        (r = get_long(approval, "policyVersion", "approval.policyVersion",
                    &req->approval_policy_version, err)) < 0)
      return r;
  }
  caps = json_object_get(root, "capabilities");
  if (caps && !json_is_null(caps)) {
    if (!json_is_array(caps))
      return error_set(err, CORRAL_EBADJSON, 0, "field `capabilities`: expected an array");
    size_t n = json_array_size(caps);
    req->capabilities = calloc(n ? n : 1, sizeof *req->capabilities);
    if (!req->capabilities)
      return error_set(err, -ENOMEM, ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
      char path[64];
      snprintf(path, sizeof path, "capabilities[%zu]", i);
      req->ncapabilities = i + 1;
      if ((r = get_capability(json_array_get(caps, i), path, &req->capabilities[i], err)) < 0)
        return r;
    }
  }
  return 0;
}

int corral_request_from_json(const char *json, size_t len, corral_request *req,
                             corral_error *err) {
  json_t *root;
  corral_request_init(req);
  int r = json_parse_document(json, len, &root, "decoding request", err);
  if (r < 0)
    return r;
  r = decode_request(root, req, err);
  json_decref(root);
  if (r < 0) {
    corral_request_free(req);
    return error_prefix(err, "decoding request");
  }
  return 0;
}

static json_t *string_array(char *const *v, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append_new(a, json_string(v[i]));
  return a;
}

static void set_enum(json_t *o, const char *key, corral_enum which, int value);

static json_t *capability_json(const corral_capability *cap) {
  json_t *o = json_object();
  set_enum(o, "kind", CORRAL_ENUM_CAPABILITY, (int)cap->kind); /* unset: left out */
  if (cap->scope && *cap->scope)
    json_object_set_new(o, "scope", json_string(cap->scope));
  return o;
}

/* Sets key to the enum's name, or leaves it out when the value is unset. */
static void set_enum(json_t *o, const char *key, corral_enum which, int value) {
  const char *name = corral_enum_name(which, value);
  if (name)
    json_object_set_new(o, key, json_string(name));
}

static void set_string(json_t *o, const char *key, const char *value) {
  if (value)
    json_object_set_new(o, key, json_string(value));
}

static void set_nonempty(json_t *o, const char *key, const char *value) {
  if (value && *value)
    json_object_set_new(o, key, json_string(value));
}

/* As zero writes a request: args and capabilities only when there are
 * some; env when one is set (an empty one too: corral tells "empty" from
 * "inherit"); workspaceRoots and approval always. */
json_t *request_to_json_value(const corral_request *req) {
  json_t *o = json_object();
  set_enum(o, "origin", CORRAL_ENUM_ORIGIN, (int)req->origin);
  set_enum(o, "mode", CORRAL_ENUM_MODE, (int)req->mode);
  json_t *command = json_object();
  json_object_set_new(command, "name", json_string(req->name ? req->name : ""));
  if (req->nargs)
    json_object_set_new(command, "args", string_array(req->args, req->nargs));
  if (req->env_set)
    json_object_set_new(command, "env", string_array(req->env, req->nenv));
  json_object_set_new(o, "command", command);
  json_object_set_new(o, "workingDirectory",
                      json_string(req->working_directory ? req->working_directory : ""));
  json_object_set_new(o, "workspaceRoots", req->nroots
                                               ? string_array(req->workspace_roots, req->nroots)
                                               : json_null());
  if (req->ncapabilities) {
    json_t *caps = json_array();
    for (size_t i = 0; i < req->ncapabilities; i++)
      json_array_append_new(caps, capability_json(&req->capabilities[i]));
    json_object_set_new(o, "capabilities", caps);
  }
  json_t *a = json_object();
  set_nonempty(a, "sessionId", req->approval_session_id);
  json_object_set_new(a, "policyVersion", json_integer(req->approval_policy_version));
  json_object_set_new(o, "approval", a);
  return o;
}

char *json_dump_compact(json_t *value) {
  char *s = json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(value);
  return s;
}

char *corral_request_to_json(const corral_request *req) {
  return json_dump_compact(request_to_json_value(req));
}

/* ------------------------------------------------------------ outcome */

/* A field zero writes as a string and an earlier corral wrote as an
 * integer: the integer into *num, the string into *text (absent: neither). */
static int get_number_or_text(json_t *obj, const char *key, const char *path, long *num,
                              char **text, corral_error *err) {
  json_t *v = json_object_get(obj, key);
  if (v && json_is_integer(v)) {
    *num = (long)json_integer_value(v);
    return 0;
  }
  return json_get_string(obj, key, path, text, err);
}

/* processId: the OS pid, or a live session's id (kept as text). */
static int get_process_id(json_t *root, corral_outcome *out, corral_error *err) {
  int r = get_number_or_text(root, "processId", "processId", &out->process_id,
                             &out->process_ref, err);
  if (r < 0 || !out->process_ref)
    return r;
  char *end;
  errno = 0;
  long pid = strtol(out->process_ref, &end, 10);
  if (out->process_ref[0] >= '1' && out->process_ref[0] <= '9' && !*end && !errno &&
      pid <= INT32_MAX) {
    out->process_id = pid;
    free(out->process_ref);
    out->process_ref = NULL;
  }
  return 0;
}

/* The signal's name as written ("SIGKILL"), or NULL for none. */
static const char *signal_name(int sig, char buf[16]) {
  const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL;
  if (sig <= 0)
    return NULL;
  if (abbrev)
    snprintf(buf, 16, "SIG%s", abbrev);
  else
    snprintf(buf, 16, "SIG%d", sig);
  return buf;
}

/* exit.signal: zero's is a string, omitted when there is none; a name
 * known here ("SIGKILL", "KILL") is its number, anything else is kept as
 * text.  An integer (what corral wrote before) is read too. */
static int get_signal(json_t *exit, corral_exit *e, corral_error *err) {
  long num = 0;
  int r = get_number_or_text(exit, "signal", "exit.signal", &num, &e->signal_text, err);
  e->signal = (int)num;
  if (r < 0 || !e->signal_text || !*e->signal_text)
    return r;
  const char *name = strncmp(e->signal_text, "SIG", 3) == 0 ? e->signal_text + 3 : e->signal_text;
  for (int sig = 1; sig < NSIG; sig++) {
    char buf[16];
    if (strcmp(signal_name(sig, buf) + 3, name) == 0) {
      e->signal = sig;
      free(e->signal_text);
      e->signal_text = NULL;
      break;
    }
  }
  return 0;
}

static int decode_denial(json_t *denial, const char *where, corral_denial *d,
                         corral_error *err) {
  char path[64];
  int r;
  json_t *cap = json_object_get(denial, "capability");
  d->present = true;
#define AT(field) (snprintf(path, sizeof path, "%s." field, where), path)
  if (json_is_string(cap)) {
    /* Accept the flat spelling too: "capability": "workspace_write". */
    if (!(d->capability.kind = corral_enum_parse(CORRAL_ENUM_CAPABILITY, json_string_value(cap))))
      return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: unknown value `%s`",
                       AT("capability"), json_string_value(cap));
  } else if (cap && !json_is_null(cap) &&
             (r = get_capability(cap, AT("capability"), &d->capability, err)) < 0)
    return r;
  long count = 0;
  if ((r = get_enum(denial, "source", AT("source"), CORRAL_ENUM_SOURCE, (int *)&d->source,
                    err)) < 0 ||
      (r = json_get_string(denial, "reason", AT("reason"), &d->reason, err)) < 0 ||
      (r = json_get_bool(denial, "recoverable", AT("recoverable"), &d->recoverable, err)) < 0 ||
      (r = get_enum(denial, "nextAction", AT("nextAction"), CORRAL_ENUM_NEXT_ACTION,
                    (int *)&d->next_action, err)) < 0 ||
      (r = json_get_int(denial, "count", AT("count"), &count, NULL, err)) < 0)
    return r;
#undef AT
  d->count = count;
  return 0;
}

/* "denials": every refusal recorded (corral's extension), and how many
 * more were not listed ("denialsDropped"). */
static int decode_denials(json_t *root, corral_outcome *out, corral_error *err) {
  json_t *a = json_object_get(root, "denials");
  long dropped = 0;
  int r = json_get_int(root, "denialsDropped", "denialsDropped", &dropped, NULL, err);
  if (r < 0)
    return r;
  out->denials_dropped = dropped;
  if (!a || json_is_null(a))
    return 0;
  if (!json_is_array(a))
    return error_set(err, CORRAL_EBADJSON, 0, "field `denials`: expected an array");
  size_t n = json_array_size(a);
  if (!n)
    return 0;
  out->denials = calloc(n, sizeof *out->denials);
  if (!out->denials)
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    char where[32];
    snprintf(where, sizeof where, "denials[%zu]", i);
    json_t *d = json_array_get(a, i);
    if (!json_is_object(d))
      return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: expected an object", where);
    out->ndenials++;
    if ((r = decode_denial(d, where, &out->denials[i], err)) < 0)
      return r;
  }
  return 0;
}

static int decode_outcome(json_t *root, corral_outcome *out, corral_error *err) {
  int r;
  json_t *exit, *denial, *enf, *changes;
  if ((r = get_enum(root, "state", "state", CORRAL_ENUM_STATE, (int *)&out->state, err)) < 0 ||
      (r = get_enum(root, "kind", "kind", CORRAL_ENUM_KIND, (int *)&out->kind, err)) < 0 ||
      (r = get_process_id(root, out, err)) < 0 ||
      (r = json_get_bool(root, "launched", "launched", &out->launched, err)) < 0 ||
      (r = json_get_string(root, "message", "message", &out->message, err)) < 0 ||
      (r = json_get_string(root, "changesSkipped", "changesSkipped", &out->changes_skipped,
                           err)) < 0 ||
      (r = json_get_string(root, "changesScanned", "changesScanned", &out->changes_scanned,
                           err)) < 0 ||
      (r = get_object(root, "exit", "exit", &exit, err)) < 0 ||
      (r = get_object(root, "denial", "denial", &denial, err)) < 0 ||
      (r = get_object(root, "enforcement", "enforcement", &enf, err)) < 0)
    return r;
  json_t *launched = json_object_get(root, "launched");
  out->launched_known = launched && !json_is_null(launched);
  if (exit) {
    long code = 0;
    out->exit.present = true;
    if ((r = json_get_int(exit, "code", "exit.code", &code, NULL, err)) < 0 ||
        (r = get_signal(exit, &out->exit, err)) < 0)
      return r;
    out->exit.code = (int)code;
  }
  if (denial && (r = decode_denial(denial, "denial", &out->denial, err)) < 0)
    return r;
  if ((r = decode_denials(root, out, err)) < 0)
    return r;
  if (enf) {
    corral_enforcement *e = &out->enforcement;
    e->present = true;
    if ((r = json_get_string(enf, "backend", "enforcement.backend", &e->backend, err)) < 0 ||
        (r = json_get_string(enf, "level", "enforcement.level", &e->level_text, err)) < 0 ||
        (r = json_get_bool(enf, "degraded", "enforcement.degraded", &e->degraded, err)) < 0 ||
        (r = json_get_string(enf, "downgradeReason", "enforcement.downgradeReason",
                             &e->downgrade_reason, err)) < 0)
      return r;
    /* A level known here is its value; another (zero's "unelevated") is
     * kept as it came: the contract treats it as a free string. */
    if (e->level_text && (e->level = corral_enum_parse(CORRAL_ENUM_LEVEL, e->level_text))) {
      free(e->level_text);
      e->level_text = NULL;
    }
  }
  json_t *limit, *usage;
  if ((r = get_object(root, "limit", "limit", &limit, err)) < 0 ||
      (r = get_object(root, "usage", "usage", &usage, err)) < 0)
    return r;
  if (limit) {
    corral_limit_hit *l = &out->limit;
    l->present = true;
    if ((r = get_enum(limit, "name", "limit.name", CORRAL_ENUM_LIMIT, (int *)&l->which, err)) <
            0 ||
        (r = get_count(limit, "value", "limit.value", &l->value, err)) < 0 ||
        (r = get_count(limit, "observed", "limit.observed", &l->observed, err)) < 0)
      return r;
  }
  if (usage) {
    corral_usage *u = &out->usage;
    u->present = true;
    if ((r = get_count(usage, "peakMemoryBytes", "usage.peakMemoryBytes",
                       &u->peak_memory_bytes, err)) < 0 ||
        (r = get_count(usage, "cpuTimeMs", "usage.cpuTimeMs", &u->cpu_time_ms, err)) < 0 ||
        (r = get_count(usage, "peakProcesses", "usage.peakProcesses", &u->peak_processes,
                       err)) < 0)
      return r;
  }
  changes = json_object_get(root, "changes");
  if (changes && !json_is_null(changes)) {
    if (!json_is_array(changes))
      return error_set(err, CORRAL_EBADJSON, 0, "field `changes`: expected an array");
    size_t n = json_array_size(changes);
    out->changes_present = true;
    out->changes = calloc(n ? n : 1, sizeof *out->changes);
    if (!out->changes)
      return error_set(err, -ENOMEM, ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
      json_t *c = json_array_get(changes, i);
      char path[64];
      corral_change *ch = &out->changes[i];
      out->nchanges = i + 1;
      ch->count = 0;
      snprintf(path, sizeof path, "changes[%zu]", i);
      if (!json_is_object(c))
        return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: expected an object", path);
      char p1[80], p2[80], p3[80], p4[80];
      snprintf(p1, sizeof p1, "%s.path", path);
      snprintf(p2, sizeof p2, "%s.kind", path);
      snprintf(p3, sizeof p3, "%s.aggregated", path);
      snprintf(p4, sizeof p4, "%s.count", path);
      if ((r = json_get_string(c, "path", p1, &ch->path, err)) < 0 ||
          (r = get_enum(c, "kind", p2, CORRAL_ENUM_CHANGE, (int *)&ch->kind, err)) < 0 ||
          (r = json_get_bool(c, "aggregated", p3, &ch->aggregated, err)) < 0 ||
          (r = json_get_int(c, "count", p4, &ch->count, NULL, err)) < 0)
        return r;
    }
  }
  return 0;
}

int corral_outcome_from_json(const char *json, size_t len, corral_outcome *out,
                             corral_error *err) {
  json_t *root;
  corral_outcome_init(out);
  int r = json_parse_document(json, len, &root, "decoding outcome", err);
  if (r < 0)
    return r;
  r = decode_outcome(root, out, err);
  json_decref(root);
  if (r < 0) {
    corral_outcome_free(out);
    return error_prefix(err, "decoding outcome");
  }
  return 0;
}

/* As zero writes an outcome: processId a string, exit.signal a signal's
 * name (each omitted when there is none), enforcement always (`{}` when
 * unknown) with its empty fields left out, a change's aggregated and
 * count only when set; corral's own fields after. */
static json_t *denial_json(const corral_denial *d) {
  const char *source = corral_enum_name(CORRAL_ENUM_SOURCE, (int)d->source),
             *next = corral_enum_name(CORRAL_ENUM_NEXT_ACTION, (int)d->next_action);
  json_t *dj = json_object();
  json_object_set_new(dj, "capability", capability_json(&d->capability));
  json_object_set_new(dj, "source", json_string(source ? source : ""));
  json_object_set_new(dj, "reason", json_string(d->reason ? d->reason : ""));
  json_object_set_new(dj, "recoverable", json_boolean(d->recoverable));
  json_object_set_new(dj, "nextAction", json_string(next ? next : ""));
  if (d->count > 1)
    json_object_set_new(dj, "count", json_integer(d->count));
  return dj;
}

json_t *outcome_to_json_value(const corral_outcome *out) {
  json_t *o = json_object();
  char buf[32];
  set_enum(o, "state", CORRAL_ENUM_STATE, (int)out->state);
  set_enum(o, "kind", CORRAL_ENUM_KIND, (int)out->kind);
  if (out->process_ref && *out->process_ref) {
    json_object_set_new(o, "processId", json_string(out->process_ref));
  } else if (out->process_id > 0) {
    snprintf(buf, sizeof buf, "%ld", out->process_id);
    json_object_set_new(o, "processId", json_string(buf));
  }
  if (out->exit.present) {
    json_t *ej = json_pack("{s:i}", "code", out->exit.code);
    const char *sig = out->exit.signal_text ? out->exit.signal_text
                                            : signal_name(out->exit.signal, buf);
    set_nonempty(ej, "signal", sig);
    json_object_set_new(o, "exit", ej);
  }
  if (out->denial.present)
    json_object_set_new(o, "denial", denial_json(&out->denial));
  if (out->ndenials) {
    json_t *a = json_array();
    for (size_t i = 0; i < out->ndenials; i++)
      json_array_append_new(a, denial_json(&out->denials[i]));
    json_object_set_new(o, "denials", a);
  }
  if (out->denials_dropped)
    json_object_set_new(o, "denialsDropped", json_integer(out->denials_dropped));
  const corral_enforcement *e = &out->enforcement;
  json_t *ej = json_object();
  set_nonempty(ej, "backend", e->backend);
  const char *level = e->level_text ? e->level_text : corral_enum_name(CORRAL_ENUM_LEVEL, (int)e->level);
  set_nonempty(ej, "level", level);
  if (e->degraded)
    json_object_set_new(ej, "degraded", json_true());
  set_nonempty(ej, "downgradeReason", e->downgrade_reason);
  json_object_set_new(o, "enforcement", ej);
  if (out->changes_present) {
    json_t *a = json_array();
    for (size_t i = 0; i < out->nchanges; i++) {
      const corral_change *c = &out->changes[i];
      json_t *cj = json_object();
      /* A name need not be UTF-8: JSON gets it with U+FFFD for each bad
       * byte, and its exact bytes in pathBase64 (as stdout's). */
      const char *path = c->path ? c->path : "";
      bool valid = true;
      char *text = utf8_sanitize(path, strlen(path), NULL, &valid);
      json_object_set_new(cj, "path", json_string(text ? text : ""));
      char *b64 = valid ? NULL : base64_encode(path, strlen(path));
      if (b64)
        json_object_set_new(cj, "pathBase64", json_string(b64));
      free(text);
      free(b64);
      set_enum(cj, "kind", CORRAL_ENUM_CHANGE, (int)c->kind);
      if (c->aggregated)
        json_object_set_new(cj, "aggregated", json_true());
      if (c->count)
        json_object_set_new(cj, "count", json_integer(c->count));
      json_array_append_new(a, cj);
    }
    json_object_set_new(o, "changes", a);
  }
  set_string(o, "changesSkipped", out->changes_skipped);
  set_string(o, "changesScanned", out->changes_scanned);
  if (out->limit.present) {
    json_t *lj = json_object();
    set_enum(lj, "name", CORRAL_ENUM_LIMIT, (int)out->limit.which);
    json_object_set_new(lj, "value", json_integer(out->limit.value));
    json_object_set_new(lj, "observed", json_integer(out->limit.observed));
    json_object_set_new(o, "limit", lj);
  }
  if (out->usage.present)
    json_object_set_new(o, "usage",
                        json_pack("{s:I,s:I,s:I}", "peakMemoryBytes",
                                  (json_int_t)out->usage.peak_memory_bytes, "cpuTimeMs",
                                  (json_int_t)out->usage.cpu_time_ms, "peakProcesses",
                                  (json_int_t)out->usage.peak_processes));
  if (out->launched_known || out->launched)
    json_object_set_new(o, "launched", json_boolean(out->launched));
  set_string(o, "message", out->message);
  return o;
}

char *corral_outcome_to_json(const corral_outcome *out) {
  return json_dump_compact(outcome_to_json_value(out));
}

/* Deep copies through the codec: one definition of what a request and an
 * outcome hold, so a copy can never miss a field. */
int request_copy(const corral_request *src, corral_request *dst) {
  char *text = json_dump_compact(request_to_json_value(src));
  int r = text ? corral_request_from_json(text, strlen(text), dst, NULL) : -ENOMEM;
  free(text);
  return r;
}

int outcome_copy(const corral_outcome *src, corral_outcome *dst) {
  char *text = json_dump_compact(outcome_to_json_value(src));
  int r = text ? corral_outcome_from_json(text, strlen(text), dst, NULL) : -ENOMEM;
  free(text);
  return r;
}
