/*
 * direct.c — the adapter that enforces nothing.
 *
 * It exists for two honest cases: the policy turned the sandbox off
 * (level `disabled`), or the caller explicitly accepted running unenforced
 * (level `degraded`, with the reason).  It never stands in silently for an
 * adapter that failed: that is sandbox_setup_failure (fail closed).
 */
#include "../adapter.h"
#include "../internal.h"

struct direct {
  corral_level level;
  char *reason;
};

static int direct_prepare(corral_adapter *ad, const corral_request *req, launch_plan *plan,
                          corral_enforcement *enf, corral_error *err) {
  struct direct *d = ad->data;
  int r = plan_from_request(req, plan, err);
  if (r < 0)
    return r;
  if (enforcement_set(enf, "direct", d->level, d->reason) < 0)
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  return 0;
}

static void direct_destroy(corral_adapter *ad) {
  struct direct *d = ad->data;
  free(d->reason);
  free(d);
}

static const struct adapter_ops direct_ops = {
    .prepare = direct_prepare,
    .destroy = direct_destroy,
};

corral_adapter *corral_adapter_new_direct(corral_level level, const char *reason) {
  if (level != CORRAL_LEVEL_DISABLED && level != CORRAL_LEVEL_DEGRADED)
    return NULL;
  if (level == CORRAL_LEVEL_DEGRADED && str_blank(reason))
    return NULL; /* degraded without a reason would hide why */
  struct direct *d = calloc(1, sizeof *d);
  if (!d)
    return NULL;
  d->level = level;
  d->reason = xstrdup_or_null(reason);
  corral_adapter *ad = adapter_new("direct", &direct_ops, d);
  if (!ad || (reason && !d->reason)) {
    free(d->reason);
    free(d);
    free(ad);
    return NULL;
  }
  return ad;
}
