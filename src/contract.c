/*
 * contract.c — the execution contract: names of every enum value, the
 * lifetime of requests and outcomes, and the validation rules.
 *
 * The JSON spellings here are the contract; contract_json.c and every front
 * end use these tables, so a name is written exactly once.
 */
#include <signal.h>
#include <stdio.h>

#include "internal.h"

static const char *const origin_names[] = {
    NULL, "interactive_command", "hook", "plugin", "mcp_server", "background_task"};
static const char *const mode_names[] = {NULL, "captured", "interactive", "durable"};
static const char *const capability_names[] = {
    NULL,           "filesystem_read",     "workspace_write", "protected_metadata",
    "external_network", "isolated_loopback", "host_visible_binding", "process_spawn",
    "process_control",  "environment",       "unrestricted"};
static const char *const state_names[] = {
    NULL,        "completed", "denied",    "failed",           "cancelled", "running",
    "retained",  "requested", "evaluated", "awaiting_approval", "prepared"};
static const char *const kind_names[] = {NULL,
                                         "running",
                                         "success",
                                         "policy_denied",
                                         "enforcement_denied",
                                         "application_failure",
                                         "sandbox_setup_failure",
                                         "executable_not_found",
                                         "cancelled",
                                         "timed_out",
                                         "enforcement_degraded"};
static const char *const source_names[] = {NULL, "configured_policy", "platform_sandbox",
                                           "approval"};
static const char *const next_action_names[] = {NULL, "none", "request_approval",
                                                "change_command", "enable_sandbox"};
static const char *const level_names[] = {NULL, "native", "degraded", "disabled"};
static const char *const change_names[] = {NULL, "created", "modified", "deleted"};
static const char *const limit_names[] = {NULL,        "processes", "memory",
                                          "cpu_time", "file_size", "open_files"};

static const char *const *table(corral_enum which, size_t *n) {
#define T(a)                                                                                   \
  do {                                                                                         \
    *n = ARRAY_SIZE(a);                                                                        \
    return a;                                                                                  \
  } while (0)
  switch (which) {
  case CORRAL_ENUM_ORIGIN: T(origin_names);
  case CORRAL_ENUM_MODE: T(mode_names);
  case CORRAL_ENUM_CAPABILITY: T(capability_names);
  case CORRAL_ENUM_STATE: T(state_names);
  case CORRAL_ENUM_KIND: T(kind_names);
  case CORRAL_ENUM_SOURCE: T(source_names);
  case CORRAL_ENUM_NEXT_ACTION: T(next_action_names);
  case CORRAL_ENUM_LEVEL: T(level_names);
  case CORRAL_ENUM_CHANGE: T(change_names);
  case CORRAL_ENUM_LIMIT: T(limit_names);
  }
#undef T
  *n = 0;
  return NULL;
}

const char *corral_enum_name(corral_enum which, int value) {
  size_t n;
  const char *const *t = table(which, &n);
  if (!t || value <= 0 || (size_t)value >= n)
    return NULL;
  return t[value];
}

int corral_enum_parse(corral_enum which, const char *name) {
  size_t n;
  const char *const *t = table(which, &n);
  if (!t || !name)
    return 0;
  for (size_t i = 1; i < n; i++)
    if (strcmp(t[i], name) == 0)
      return (int)i;
  return 0;
}

/* ------------------------------------------------------------- request */

void corral_request_init(corral_request *req) { memset(req, 0, sizeof *req); }

void corral_request_free(corral_request *req) {
  if (!req)
    return;
  free(req->name);
  strv_free(req->args, req->nargs);
  strv_free(req->env, req->nenv);
  free(req->working_directory);
  strv_free(req->workspace_roots, req->nroots);
  for (size_t i = 0; i < req->ncapabilities; i++)
    free(req->capabilities[i].scope);
  free(req->capabilities);
  free(req->approval_session_id);
  corral_request_init(req);
}

int corral_request_set_command(corral_request *req, const char *name, const char *const *args,
                               size_t nargs) {
  char *n = strdup(name ? name : "");
  char **a = strv_copy(args, nargs);
  if (!n || !a) {
    free(n);
    strv_free(a, nargs);
    return -ENOMEM;
  }
  free(req->name);
  strv_free(req->args, req->nargs);
  req->name = n;
  req->args = a;
  req->nargs = nargs;
  return 0;
}

int corral_request_set_env(corral_request *req, const char *const *env, size_t nenv) {
  char **e = strv_copy(env, nenv);
  if (!e)
    return -ENOMEM;
  strv_free(req->env, req->nenv);
  req->env = e;
  req->nenv = nenv;
  req->env_set = true;
  return 0;
}

int corral_request_set_working_directory(corral_request *req, const char *dir) {
  char *d = strdup(dir ? dir : "");
  if (!d)
    return -ENOMEM;
  free(req->working_directory);
  req->working_directory = d;
  return 0;
}

int corral_request_add_workspace_root(corral_request *req, const char *root) {
  return strv_push(&req->workspace_roots, &req->nroots, root ? root : "");
}

int corral_request_add_capability(corral_request *req, corral_capability_kind kind,
                                  const char *scope) {
  corral_capability *grown =
      realloc(req->capabilities, (req->ncapabilities + 1) * sizeof *grown);
  if (!grown)
    return -ENOMEM;
  req->capabilities = grown;
  char *s = xstrdup_or_null(scope);
  if (scope && !s)
    return -ENOMEM;
  grown[req->ncapabilities++] = (corral_capability){.kind = kind, .scope = s};
  return 0;
}

int corral_request_validate(const corral_request *req, corral_error *err) {
  if (!corral_enum_name(CORRAL_ENUM_ORIGIN, (int)req->origin))
    return error_set(err, CORRAL_EINVALID, 0, "field `origin`: missing or unknown origin");
  if (!corral_enum_name(CORRAL_ENUM_MODE, (int)req->mode))
    return error_set(err, CORRAL_EINVALID, 0, "field `mode`: missing or unknown mode");
  if (str_blank(req->name))
    return error_set(err, CORRAL_EINVALID, 0, "field `command.name`: must not be blank");
  if (str_blank(req->working_directory))
    return error_set(err, CORRAL_EINVALID, 0, "field `workingDirectory`: must not be blank");
  if (req->nroots == 0)
    return error_set(err, CORRAL_EINVALID, 0,
                     "field `workspaceRoots`: at least one workspace root is required");
  for (size_t i = 0; i < req->nroots; i++)
    if (str_blank(req->workspace_roots[i]))
      return error_set(err, CORRAL_EINVALID, 0, "field `workspaceRoots[%zu]`: must not be blank",
                       i);
  for (size_t i = 0; i < req->ncapabilities; i++)
    if (!corral_enum_name(CORRAL_ENUM_CAPABILITY, (int)req->capabilities[i].kind))
      return error_set(err, CORRAL_EINVALID, 0,
                       "field `capabilities[%zu].kind`: unknown capability kind", i);
  return 0;
}

/* ------------------------------------------------------------- outcome */

void corral_outcome_init(corral_outcome *out) { memset(out, 0, sizeof *out); }

void corral_outcome_free(corral_outcome *out) {
  if (!out)
    return;
  free(out->denial.capability.scope);
  free(out->denial.reason);
  free(out->enforcement.backend);
  free(out->enforcement.level_text);
  free(out->enforcement.downgrade_reason);
  free(out->exit.signal_text);
  free(out->process_ref);
  for (size_t i = 0; i < out->nchanges; i++)
    free(out->changes[i].path);
  free(out->changes);
  free(out->message);
  free(out->changes_skipped);
  free(out->changes_scanned);
  for (size_t i = 0; i < out->ndenials; i++) {
    free(out->denials[i].capability.scope);
    free(out->denials[i].reason);
  }
  free(out->denials);
  corral_outcome_init(out);
}

static int validate_denial(const corral_denial *d, corral_error *err) {
  if (!d->present)
    return error_set(err, CORRAL_EINVALID, 0, "field `denial`: a denied outcome needs a denial");
  if (!corral_enum_name(CORRAL_ENUM_CAPABILITY, (int)d->capability.kind))
    return error_set(err, CORRAL_EINVALID, 0,
                     "field `denial.capability`: missing or unknown capability kind");
  if (!corral_enum_name(CORRAL_ENUM_SOURCE, (int)d->source))
    return error_set(err, CORRAL_EINVALID, 0, "field `denial.source`: missing or unknown source");
  if (str_blank(d->reason))
    return error_set(err, CORRAL_EINVALID, 0, "field `denial.reason`: must not be blank");
  if (!corral_enum_name(CORRAL_ENUM_NEXT_ACTION, (int)d->next_action))
    return error_set(err, CORRAL_EINVALID, 0,
                     "field `denial.nextAction`: missing or unknown next action");
  return 0;
}

int corral_outcome_validate(const corral_outcome *out, corral_error *err) {
  const char *state = corral_enum_name(CORRAL_ENUM_STATE, (int)out->state);
  if (!state)
    return error_set(err, CORRAL_EINVALID, 0, "field `state`: missing or unknown state");
  if (!corral_enum_name(CORRAL_ENUM_KIND, (int)out->kind))
    return error_set(err, CORRAL_EINVALID, 0, "field `kind`: missing or unknown kind");

  switch (out->state) {
  case CORRAL_STATE_RUNNING:
  case CORRAL_STATE_RETAINED:
    if (out->kind != CORRAL_KIND_RUNNING)
      return error_set(err, CORRAL_EINVALID, 0, "field `kind`: state `%s` needs kind `running`",
                       state);
    if (out->process_id <= 0 && str_blank(out->process_ref))
      return error_set(err, CORRAL_EINVALID, 0,
                       "field `processId`: state `%s` needs a process id", state);
    return 0;
  case CORRAL_STATE_COMPLETED:
    if (out->kind != CORRAL_KIND_SUCCESS)
      return error_set(err, CORRAL_EINVALID, 0, "field `kind`: state `completed` needs `success`");
    if (!out->exit.present || out->exit.code != 0)
      return error_set(err, CORRAL_EINVALID, 0,
                       "field `exit.code`: state `completed` needs exit code 0");
    return 0;
  case CORRAL_STATE_DENIED:
    if (out->kind != CORRAL_KIND_POLICY_DENIED && out->kind != CORRAL_KIND_ENFORCEMENT_DENIED)
      return error_set(err, CORRAL_EINVALID, 0,
                       "field `kind`: state `denied` needs `policy_denied` or "
                       "`enforcement_denied`");
    return validate_denial(&out->denial, err);
  case CORRAL_STATE_FAILED:
    if (out->kind == CORRAL_KIND_RUNNING || out->kind == CORRAL_KIND_SUCCESS)
      return error_set(err, CORRAL_EINVALID, 0,
                       "field `kind`: state `failed` cannot have kind `%s`",
                       corral_enum_name(CORRAL_ENUM_KIND, (int)out->kind));
    if (!out->exit.present)
      return error_set(err, CORRAL_EINVALID, 0, "field `exit`: state `failed` needs an exit");
    return 0;
  case CORRAL_STATE_CANCELLED:
    if (out->kind != CORRAL_KIND_CANCELLED)
      return error_set(err, CORRAL_EINVALID, 0,
                       "field `kind`: state `cancelled` needs kind `cancelled`");
    return 0;
  default:
    return error_set(err, CORRAL_EINVALID, 0, "field `state`: `%s` is not an outcome", state);
  }
}

int corral_outcome_exit_code(const corral_outcome *out) {
  switch (out->kind) {
  case CORRAL_KIND_TIMED_OUT:
    return 124;
  case CORRAL_KIND_ENFORCEMENT_DENIED:
    /* A refusal the command outlived, exiting by itself: its own code
     * (the outcome says denied).  A denial that ended it (a limit, a
     * protected path) is 125. */
    if (out->exit.present && out->exit.code > 0 && out->exit.signal == 0 && !out->limit.present)
      return out->exit.code & 0xff;
    return 125;
  case CORRAL_KIND_SANDBOX_SETUP_FAILURE:
  case CORRAL_KIND_POLICY_DENIED:
    return 125;
  case CORRAL_KIND_EXECUTABLE_NOT_FOUND:
    return 127;
  case CORRAL_KIND_CANCELLED:
    return 128 + SIGINT;
  default:
    break;
  }
  if (!out->exit.present)
    return 125;
  if (out->exit.signal > 0)
    return 128 + out->exit.signal;
  return out->exit.code & 0xff;
}
