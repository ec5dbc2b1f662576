/* adapter.c — what every adapter shares: the request-to-plan step. */
#include "adapter.h"

#include "internal.h"

extern char **environ;

int plan_from_request(const corral_request *req, launch_plan *plan, corral_error *err) {
  plan->argc = req->nargs + 1;
  plan->argv = calloc(plan->argc + 1, sizeof *plan->argv);
  if (!plan->argv)
    return error_set(err, -ENOMEM, ENOMEM, "preparing the command: out of memory");
  plan->argv[0] = strdup(req->name);
  for (size_t i = 0; i < req->nargs; i++)
    plan->argv[i + 1] = strdup(req->args[i]);
  for (size_t i = 0; i < plan->argc; i++)
    if (!plan->argv[i])
      return error_set(err, -ENOMEM, ENOMEM, "preparing the command: out of memory");
  if (req->env_set) {
    plan->envp = strv_copy((const char *const *)req->env, req->nenv);
    plan->envc = req->nenv;
  } else {
    size_t n = 0;
    while (environ[n])
      n++;
    plan->envp = strv_copy((const char *const *)environ, n);
    plan->envc = n;
  }
  plan->cwd = strdup(req->working_directory);
  if (!plan->envp || !plan->cwd)
    return error_set(err, -ENOMEM, ENOMEM, "preparing the command: out of memory");
  return 0;
}

int enforcement_set(corral_enforcement *enf, const char *backend, corral_level level,
                    const char *reason) {
  free(enf->backend);
  free(enf->downgrade_reason);
  free(enf->level_text);
  enf->level_text = NULL;
  enf->present = true;
  enf->backend = strdup(backend);
  enf->level = level;
  enf->degraded = level == CORRAL_LEVEL_DEGRADED;
  enf->downgrade_reason = xstrdup_or_null(reason);
  return enf->backend && (!reason || enf->downgrade_reason) ? 0 : -ENOMEM;
}

corral_adapter *adapter_new(const char *name, const struct adapter_ops *ops, void *data) {
  corral_adapter *ad = calloc(1, sizeof *ad);
  if (!ad)
    return NULL;
  ad->name = name;
  ad->ops = ops;
  ad->data = data;
  return ad;
}

void corral_adapter_free(corral_adapter *ad) {
  if (!ad)
    return;
  if (ad->ops->destroy)
    ad->ops->destroy(ad);
  free(ad);
}

const char *corral_adapter_name(const corral_adapter *ad) { return ad ? ad->name : NULL; }
