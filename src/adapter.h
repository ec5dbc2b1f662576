/*
 * adapter.h — the seam between what to run and how it is enforced.
 *
 * An adapter prepares a request into a launch plan and an enforcement
 * description; after the process tree is gone it reads (and may amend) the
 * report; its cleanup always runs, whatever happened in between.  Nothing
 * above this seam knows which adapter runs.
 */
#ifndef CORRAL_ADAPTER_H
#define CORRAL_ADAPTER_H

#include "corral.h"
#include "launch.h"

struct adapter_ops {
  /* Fills *plan (owned by the caller, freed with launch_plan_free) and
   * *enf.  Returns 0, or a negative code with err naming the step that
   * failed; then nothing runs. */
  int (*prepare)(corral_adapter *ad, const corral_request *req, launch_plan *plan,
                 corral_enforcement *enf, corral_error *err);
  /* Reads the adapter's own findings into *report after the tree ended
   * (e.g. protected paths created).  Negative: the report is unreadable. */
  int (*finish)(corral_adapter *ad, launch_plan *plan, launch_report *report, corral_error *err);
  /* Always called once after prepare, successful or not. */
  void (*cleanup)(corral_adapter *ad, launch_plan *plan);
  /* Frees ad->data. */
  void (*destroy)(corral_adapter *ad);
};

struct corral_adapter {
  const char *name; /* backend name reported in enforcement.backend */
  const struct adapter_ops *ops;
  void *data;
};

/* Fills plan argv/envp/cwd from the request (the common part of prepare).
 * `extra_env` (may be NULL) entries replace or add variables. */
int plan_from_request(const corral_request *req, launch_plan *plan, corral_error *err);

/* Sets enforcement fields (copies strings); 0 or -ENOMEM. */
int enforcement_set(corral_enforcement *enf, const char *backend, corral_level level,
                    const char *reason);

corral_adapter *adapter_new(const char *name, const struct adapter_ops *ops, void *data);

#endif
