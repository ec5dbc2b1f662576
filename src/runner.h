/* runner.h — pieces of captured execution shared with sessions. */
#ifndef CORRAL_RUNNER_H
#define CORRAL_RUNNER_H

#include "corral.h"
#include "launch.h"

/* The eventfd behind a cancellation token (readable once fired), or -1. */
int cancel_fd(const corral_cancel *c);

/* What classification needs to know about how a run went. */
struct run_facts {
  bool never_ran;         /* no adapter, wrong mode, prepare or launch failed */
  const char *why;        /* with never_ran: the message */
  bool timed_out;
  bool cancelled;
  bool init_reaped;       /* the supervisor reaped init */
  int init_status;        /* its wait status */
  bool init_killed;       /* the supervisor had to SIGKILL init */
  bool adapter_owns_launch;
  int64_t timeout_ms;
  long process_id;        /* init's pid as the supervisor sees it */
};

/* The one place that turns facts and the adapter's report into an outcome
 * (state, kind, exit, denial, launched, message).  Enforcement is set by
 * the caller. */
int classify_outcome(const struct run_facts *facts, launch_report *report,
                     const char *command_name, corral_outcome *out);

/* After the process tree is gone: parses the report, lets the adapter
 * amend it (its finish), and classifies.  `note` receives the line the
 * adapter wants after the command's output ("" when none). */
struct corral_adapter;
void conclude_outcome(struct corral_adapter *ad, launch_plan *plan, struct report_buf *rb,
                      const struct run_facts *facts, const char *command_name,
                      corral_outcome *out, char *note, size_t notelen);

/* Appends a refusal to out->denials (copies of scope and reason), from
 * the platform's sandbox, recoverable by approval when `recoverable`.
 * 0 or -ENOMEM. */
int outcome_add_denial(corral_outcome *out, corral_capability_kind kind, const char *scope,
                       const char *reason, bool recoverable, long count);
/* A command that failed after a refusal was, as far as anyone can tell,
 * stopped by it: the outcome says denied, with the first. */
void outcome_denied_after_refusal(corral_outcome *out);

#endif
