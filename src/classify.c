/*
 * classify.c — the one switch that says how a run ended.
 *
 * Order matters: the first that holds decides.
 *   1. the report could not be read      -> failed / sandbox_setup_failure
 *   2. a limit ended the run, or the report carries a denial
 *                                        -> denied / enforcement_denied
 *   3. the deadline passed               -> failed / timed_out
 *   4. the caller cancelled              -> cancelled / cancelled
 *   5. exit 0                            -> completed / success
 *   6. the program could not be found    -> failed / executable_not_found
 *   7. anything else                     -> failed / application_failure
 * A run that never started (no adapter, wrong mode, prepare failed) and a
 * setup step that failed inside the sandbox both count as case 1: the
 * sandbox could not produce a trustworthy report of a run.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

#include "adapter.h"
#include "internal.h"
#include "json_util.h"
#include "runner.h"

static int set_message(corral_outcome *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int set_message(corral_outcome *out, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  free(out->message);
  out->message = strdup(buf);
  return out->message ? 0 : -ENOMEM;
}

static void set_exit_from_status(corral_outcome *out, int status) {
  out->exit.present = true;
  if (WIFSIGNALED(status)) {
    out->exit.code = -1;
    out->exit.signal = WTERMSIG(status);
  } else {
    out->exit.code = WEXITSTATUS(status);
    out->exit.signal = 0;
  }
}

static void setup_failure(corral_outcome *out) {
  out->state = CORRAL_STATE_FAILED;
  out->kind = CORRAL_KIND_SANDBOX_SETUP_FAILURE;
  /* No command, no exit code of its own (init's is not the command's):
   * -1, as the contract has it for a run that never produced one. */
  if (!out->exit.present || !out->launched) {
    out->exit.present = true;
    out->exit.code = -1;
    out->exit.signal = 0;
  }
}

/* The run was ended at a limit: a denial of process_spawn scoped to the
 * limit's name, since zero's contract has no kind for resources; the
 * outcome's `limit` says which, its value and what was seen. */
static int limit_denial(const launch_report *rep, corral_outcome *out) {
  const corral_limit_hit *l = &rep->limit;
  const char *name = corral_enum_name(CORRAL_ENUM_LIMIT, (int)l->which);
  char value[32], seen[32], reason[300];
  run_limits_words(l, value, sizeof value, seen, sizeof seen);
  switch (l->which) {
  case CORRAL_LIMIT_PROCESSES:
    snprintf(reason, sizeof reason,
             "the process limit (%s processes and threads) was reached%s (at least %s were running); "
             "the whole run was ended",
             value, rep->limit_pids_full ? ": no more could start" : "", seen);
    break;
  case CORRAL_LIMIT_MEMORY:
    snprintf(reason, sizeof reason,
             "the memory limit (%s) was crossed: the run held %s%s; the whole run was ended", value,
             seen,
             rep->limit_bound ? " (its processes' resident sizes, pages they share counted in "
                                "each: their exact share could not be read in time)"
                              : "");
    break;
  case CORRAL_LIMIT_CPU_TIME:
    snprintf(reason, sizeof reason,
             "the CPU time limit (%s) was crossed: the run used %s; the whole run was ended",
             value, seen);
    break;
  default:
    snprintf(reason, sizeof reason, "the %s limit (%s) ended the run", name ? name : "?", value);
    break;
  }
  out->limit = *l;
  out->state = CORRAL_STATE_DENIED;
  out->kind = CORRAL_KIND_ENFORCEMENT_DENIED;
  corral_denial *d = &out->denial;
  d->present = true;
  d->capability.kind = CORRAL_CAP_PROCESS_SPAWN;
  d->capability.scope = strdup(name ? name : "limit");
  d->source = CORRAL_SOURCE_PLATFORM_SANDBOX;
  d->reason = strdup(reason);
  d->recoverable = true;
  d->next_action = CORRAL_NEXT_CHANGE_COMMAND;
  if (!out->exit.present) {
    out->exit.present = true;
    out->exit.code = -1;
    out->exit.signal = SIGKILL;
  }
  return set_message(out, "%s", reason);
}

int classify_outcome(const struct run_facts *f, launch_report *rep, const char *name,
                     corral_outcome *out) {
  out->launched_known = true;
  if (f->never_ran) {
    out->launched = false;
    setup_failure(out);
    return set_message(out, "%s", f->why ? f->why : "the command was not run");
  }

  out->process_id = f->process_id;
  /* `launched` is the program's own start.  When the plan says the adapter
   * owns that transition, only the adapter's word counts; silence = no. */
  out->launched = f->adapter_owns_launch ? rep->adapter_launched : rep->launched;

  /* The command's status comes from init's report; init's own status is the
   * fallback, and says nothing about the command when init was killed. */
  if (rep->exited)
    set_exit_from_status(out, rep->wait_status);
  else if (f->init_reaped)
    set_exit_from_status(out, f->init_status);

  /* 1. */
  if (!rep->readable || rep->setup_failed || (!rep->exited && !f->init_killed)) {
    setup_failure(out);
    if (!rep->readable)
      return set_message(out, "the sandbox report could not be read: %s", rep->problem);
    if (rep->setup_failed)
      return set_message(out, "sandbox setup failed at %s%s%s", rep->setup_step,
                         rep->setup_errno ? ": " : "",
                         rep->setup_errno ? strerror(rep->setup_errno) : "");
    if (f->init_reaped && WIFSIGNALED(f->init_status))
      return set_message(out, "the sandbox's init ended without a report (killed by signal %d)",
                         WTERMSIG(f->init_status));
    return set_message(out, "the sandbox's init ended without a report");
  }
  out->usage = rep->usage;
  /* 2. A limit is a fact because init, outside the command's reach, said
   * so on the report channel; so is a denial. */
  if (rep->limit.present)
    return limit_denial(rep, out);
  if (rep->denial.present) {
    out->state = CORRAL_STATE_DENIED;
    out->kind = CORRAL_KIND_ENFORCEMENT_DENIED;
    corral_denial *d = &out->denial;
    *d = rep->denial;
    memset(&rep->denial, 0, sizeof rep->denial); /* ownership moves */
    if (!d->source)
      d->source = CORRAL_SOURCE_PLATFORM_SANDBOX;
    if (!d->next_action)
      d->next_action = CORRAL_NEXT_REQUEST_APPROVAL;
    if (!d->reason) {
      char buf[600];
      snprintf(buf, sizeof buf, "the sandbox denied %s on `%s`",
               corral_enum_name(CORRAL_ENUM_CAPABILITY, (int)d->capability.kind),
               d->capability.scope ? d->capability.scope : "");
      d->reason = strdup(buf);
    }
    return set_message(out, "%s", d->reason ? d->reason : "denied by the sandbox");
  }
  if (!out->exit.present) { /* init killed before it could say anything */
    out->exit.present = true;
    out->exit.code = -1;
    out->exit.signal = SIGKILL;
  }
  /* 3. */
  if (f->timed_out) {
    out->state = CORRAL_STATE_FAILED;
    out->kind = CORRAL_KIND_TIMED_OUT;
    return set_message(out, "timed out after %lld ms; the process tree was ended",
                       (long long)f->timeout_ms);
  }
  /* 4. */
  if (f->cancelled) {
    out->state = CORRAL_STATE_CANCELLED;
    out->kind = CORRAL_KIND_CANCELLED;
    return set_message(out, "cancelled; the process tree was ended");
  }
  /* 5. */
  if (out->exit.code == 0 && out->exit.signal == 0 && !rep->exec_failed) {
    out->state = CORRAL_STATE_COMPLETED;
    out->kind = CORRAL_KIND_SUCCESS;
    return 0;
  }
  out->state = CORRAL_STATE_FAILED;
  /* 6. Known from execve's errno, never guessed from exit code 127. */
  if (rep->exec_failed && strcmp(rep->exec_step, "execve") == 0 && rep->exec_errno == ENOENT) {
    out->kind = CORRAL_KIND_EXECUTABLE_NOT_FOUND;
    out->exit.code = 127;
    return set_message(out, "`%s`: command not found", name);
  }
  /* 7. */
  out->kind = CORRAL_KIND_APPLICATION_FAILURE;
  if (rep->exec_failed) {
    out->exit.code = 126;
    if (strcmp(rep->exec_step, "chdir") == 0)
      return set_message(out, "cannot enter the working directory: %s",
                         strerror(rep->exec_errno));
    return set_message(out, "`%s`: cannot execute: %s", name, strerror(rep->exec_errno));
  }
  return 0;
}

int outcome_add_denial(corral_outcome *out, corral_capability_kind kind, const char *scope,
                       const char *reason, bool recoverable, long count) {
  corral_denial *g = realloc(out->denials, (out->ndenials + 1) * sizeof *g);
  if (!g)
    return -ENOMEM;
  out->denials = g;
  corral_denial *d = &g[out->ndenials];
  *d = (corral_denial){.present = true,
                       .capability = {.kind = kind, .scope = strdup(scope)},
                       .source = CORRAL_SOURCE_PLATFORM_SANDBOX,
                       .reason = strdup(reason),
                       .recoverable = recoverable,
                       .next_action = recoverable ? CORRAL_NEXT_REQUEST_APPROVAL
                                                  : CORRAL_NEXT_CHANGE_COMMAND,
                       .count = count};
  out->ndenials++;
  return d->capability.scope && d->reason ? 0 : -ENOMEM;
}

void outcome_denied_after_refusal(corral_outcome *out) {
  if (out->state != CORRAL_STATE_FAILED || out->kind != CORRAL_KIND_APPLICATION_FAILURE ||
      out->denial.present || !out->ndenials)
    return;
  const corral_denial *f = &out->denials[0];
  out->state = CORRAL_STATE_DENIED;
  out->kind = CORRAL_KIND_ENFORCEMENT_DENIED;
  out->denial = *f;
  out->denial.capability.scope = xstrdup_or_null(f->capability.scope);
  out->denial.reason = xstrdup_or_null(f->reason);
  free(out->message);
  out->message = xstrdup_or_null(f->reason);
}

/* Each refusal's words, and the option that would allow it (followed by
 * the scope when `scoped`); none where no option should. */
static const struct refused_words {
  const char *why, *allow;
  bool scoped;
} refused_words[] = {
    [REFUSED_OUTSIDE] = {"outside the write roots", "--allow-write", true},
    [REFUSED_READ_ONLY] = {"read-only inside the write roots", NULL, false},
    [REFUSED_PROTECTED] = {"protected metadata", "--allow-protected", true},
    [REFUSED_NET_CLOSED] = {"the network is closed", "--network allow", false},
    [REFUSED_NET_FILTER] = {"only named hosts are reached, through corral's proxy",
                            "--allow-domain with the host's name", false},
    [REFUSED_KERNEL] = {"the kernel's own files, read-only in the sandbox", NULL, false},
    [REFUSED_SECRET] = {"a secret store, covered in the sandbox", NULL, false},
};

/* The writes and connections init heard refused (refusals.c), each with
 * what would allow it.  A cut path cannot be granted as it is. */
static int add_refusals(const launch_report *rep, corral_outcome *out) {
  for (size_t i = 0; i < rep->nrefused; i++) {
    const struct launch_refusal *f = &rep->refused[i];
    bool cut = strlen(f->scope) == REFUSAL_SCOPE_MAX - 1 &&
               strcmp(f->scope + REFUSAL_SCOPE_MAX - 4, "...") == 0;
    /* The names are the command's: controls and bytes that are not UTF-8
     * shown as \xNN, here once for every reader (JSON, the model, a
     * question to the user).  A scope shown so is not the path: never
     * offered as a grant. */
    char scope[REFUSAL_SCOPE_MAX * 4], name[REFUSAL_NAME_MAX * 4];
    cut |= !text_for_terminal(f->scope, scope, sizeof scope);
    text_for_terminal(f->name, name, sizeof name);
    bool net = f->kind == CORRAL_CAP_EXTERNAL_NETWORK;
    char reason[REFUSAL_SCOPE_MAX * 2 + 200], allow[REFUSAL_SCOPE_MAX + 64] = "";
    const struct refused_words *w = &refused_words[f->why];
    if (w->allow)
      snprintf(allow, sizeof allow, w->scoped ? "%s %s" : "%s", w->allow, scope);
    snprintf(reason, sizeof reason, "denied %s%s %s%s%s (%s%s%s)", f->op,
             !net && !strcmp(f->op, "write") ? " to" : "", scope,
             name[0] && strcmp(scope, "/") ? "/" : "", name, w->why,
             allow[0] && !cut ? "; allow with " : "", cut ? "" : allow);
    if (outcome_add_denial(out, (corral_capability_kind)f->kind, scope, reason,
                           allow[0] && !cut, f->count) < 0)
      return -ENOMEM;
  }
  out->denials_dropped += rep->refused_dropped;
  return 0;
}

void conclude_outcome(corral_adapter *ad, launch_plan *plan, struct report_buf *rb,
                      const struct run_facts *f, const char *name, corral_outcome *out,
                      char *note, size_t notelen) {
  launch_report rep = {0};
  launch_report_parse(&rep, rb->data, rb->len);
  if (rb->overflow) {
    rep.readable = false;
    snprintf(rep.problem, sizeof rep.problem, "the report is longer than %zu bytes",
             (size_t)REPORT_MAX);
  }
  corral_error ferr = {0};
  if (ad->ops->finish && ad->ops->finish(ad, plan, &rep, &ferr) < 0) {
    rep.readable = false;
    snprintf(rep.problem, sizeof rep.problem, "%s", ferr.message);
  }
  classify_outcome(f, &rep, name, out);
  /* SIGXFSZ is what the kernel sends a process writing past the file size
   * limit; a process can also send it to itself, so it is said, not made a
   * denial. */
  int64_t fsize = plan->limits.v[CORRAL_LIMIT_FILE_SIZE];
  if (out->kind == CORRAL_KIND_APPLICATION_FAILURE && out->exit.signal == SIGXFSZ && fsize) {
    char value[32];
    set_message(out, "`%s` was ended by SIGXFSZ, which the kernel sends to a process writing "
                     "past the file size limit (%s)",
                name, limits_format(CORRAL_LIMIT_FILE_SIZE, fsize, value, sizeof value));
  }
  if (add_refusals(&rep, out) < 0)
    snprintf(rep.stderr_note, sizeof rep.stderr_note,
             "corral: out of memory listing the sandbox's refusals\n");
  outcome_denied_after_refusal(out);
  snprintf(note, notelen, "%s", rep.stderr_note);
  launch_report_free(&rep);
}
