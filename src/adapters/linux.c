/*
 * linux.c — the default adapter: namespaces, mounts, Landlock and seccomp,
 * applied by corral's own init inside the clone (no helper binary).
 *
 * Setup order inside init (each later step relies on the earlier ones):
 *   1. (network denied) a child of init makes a private network namespace
 *      with loopback up while init goes on with 2-4 (on a machine with no
 *      CPU free to run that child, init makes it itself), and init joins it
 *      after 4 (not after 5: Landlock forbids reaching into the child);
 *      the child hides itself first (not dumpable, like init) and hands
 *      over the namespaces as descriptors; with restricted reads it then
 *      detaches the old root (left by pivot_root) while init goes on with
 *      5 and 6, and init waits for that before the command runs;
 *   2. what needs no uid/gid maps: the mount sources cloned, the bounding
 *      set emptied, seccomp (compiled by the build, seccomp.c) loaded — its
 *      rules refuse nothing the setup does;
 *   3. init's own uid/gid maps (namespaces.c); then init is made not
 *      dumpable (launch.c: nothing of the supervisor's that it carries is
 *      reachable through /proc);
 *   4. the filesystem: mounts.c (in place, or a root of its own);
 *   5. Landlock over the write roots, and signal/abstract-socket scoping;
 *   6. every capability dropped, no_new_privs.
 * Any failure is reported with the step and nothing runs (fail closed).
 */
#include <limits.h>
#include <stdio.h>

#include "../adapter.h"
#include "../internal.h"
#include "../linux/linux.h"

struct linux_adapter {
  corral_policy *policy;
  struct sock_fprog seccomp;
};

/* As soon as the maps are written (before, /proc/self/uid_map would no
 * longer be init's to write): nothing of the supervisor's that init
 * carries is reachable through /proc from then on. */
static int hide_init(int report_fd) {
  return launch_hide_self() < 0 ? setup_failed(report_fd, errno, "init: make not dumpable%s", "")
                                : 0;
}

/* In the order of the header; the network child first, since its
 * namespace takes longest. */
static int linux_init_setup(const launch_plan *plan, int report_fd) {
  const struct linux_plan *lp = plan->adapter_data;
  bool denied = !lp->profile.network_allow, pivot = mounts_pivot(lp);
  bool helper = denied && ns_net_alongside_pays();
  if ((helper && ns_net_begin_apply(report_fd) < 0) ||
      (denied && !helper && ns_net_self_apply(report_fd) < 0) ||
      mounts_clone_apply(lp, report_fd) < 0 ||
      ns_drop_bounding_apply(report_fd) < 0 || seccomp_apply(&lp->seccomp, report_fd) < 0 ||
      ns_write_id_maps_apply(lp->uid, lp->gid, report_fd) < 0 || hide_init(report_fd) < 0 ||
      mounts_apply(lp, !helper, report_fd) < 0 ||
      (helper && ns_net_join_apply(pivot, report_fd) < 0) ||
      landlock_apply(lp, true, report_fd) < 0 || ns_drop_privileges_apply(report_fd) < 0 ||
      (helper && pivot && ns_net_detached_apply(report_fd) < 0))
    return -1;
  return 0;
}

static bool in_write_root(const struct profile *pr, const char *path) {
  for (size_t i = 0; i < pr->write_roots.n; i++)
    if (path_is_under(path, pr->write_roots.v[i]))
      return true;
  return false;
}

/* corral's own configuration, where the command may write (a write root
 * holds the config directory, or is it): a policy planted there would be
 * the next run's, the sandbox off.  Missing, it is made here, empty, and
 * is then a store like any other that exists: covered and pinned.
 * Reached through a symlink that lies in a write root (~/.config ->
 * dotfiles/config, a HOME that is a link in /tmp), the command could
 * replace the link with a directory of its own: the run is refused. */
static int guard_own_config(struct profile *pr, corral_error *err) {
  char dir[PATH_MAX], own[PATH_MAX + 16], prefix[PATH_MAX + 16];
  struct stat st;
  if (!user_config_dir(dir, sizeof dir))
    return 0;
  snprintf(own, sizeof own, "%s/corral", dir);
  for (const char *p = own + 1;; p++)
    if (*p == '/' || *p == '\0') {
      snprintf(prefix, sizeof prefix, "%.*s", (int)(p - own), own);
      if (lstat(prefix, &st) < 0)
        break;
      if (S_ISLNK(st.st_mode) && *p && in_write_root(pr, prefix)) /* its own link: covered */
        return error_set(err, CORRAL_ESETUP, 0,
                         "corral's own configuration %s is reached through the symbolic link %s, "
                         "which a command could replace in a write root: set XDG_CONFIG_HOME to "
                         "the real directory, or keep the link out of the write roots",
                         own, prefix);
      if (!*p)
        return 0; /* there: covered like any store */
    }
  if (in_write_root(pr, own) && mkdir_p(own, 0700) == 0)
    profile_created(pr, dir);
  return 0;
}

/* What both Linux adapters prepare alike: the profile, the command, the
 * runtime directory, the environment and the protected-path monitor. */
int linux_plan_prepare(const corral_policy *policy, const struct sock_fprog *seccomp,
                       const char *backend, const corral_request *req, launch_plan *plan,
                       corral_error *err) {
  struct linux_plan *lp = calloc(1, sizeof *lp);
  if (!lp)
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  plan->adapter_data = lp;
  lp->runtime.lease_fd = -1;
  int r = profile_resolve(policy, req->workspace_roots, req->nroots, &lp->profile, err);
  if (r < 0)
    return error_prefix(err, "resolving the policy");
  if ((r = guard_own_config(&lp->profile, err)) < 0)
    return r;
  if ((r = plan_from_request(req, plan, err)) < 0)
    return r;
  if ((r = runtime_acquire(req->workspace_roots[0],
                           &lp->profile.write_roots, &lp->runtime, err)) < 0)
    return r;
  profile_created(&lp->profile, lp->runtime.root);
  if (path_list_add(&lp->profile.write_roots, lp->runtime.root) < 0 ||
      environment_prepare(&plan->envp, &plan->envc, &lp->profile, backend, lp->runtime.root) < 0)
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  /* The masks are layers of the views of every sandbox running now: a run
   * whose write roots hold them (TMPDIR=/var/tmp, --allow-write /var/tmp)
   * or lie in them gets them read-only, never to change what another run
   * hides (the landlock-only adapter, which cannot, refuses such a run). */
  if (runtime_mask_cache(lp->mask_cache, sizeof lp->mask_cache, &lp->profile.write_roots) &&
      path_list_add(&lp->profile.deny_write, lp->mask_cache) < 0)
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  if (lp->mask_cache[0])
    profile_created(&lp->profile, lp->mask_cache);
  if ((r = protect_prepare(&lp->profile, &lp->watch, err)) < 0)
    return r;
  if ((r = protect_remember(&lp->watch, &lp->watch_was, err)) < 0)
    return r;
  plan->watch = lp->watch.v;
  plan->nwatch = lp->watch.n;
  lp->seccomp = *seccomp;
  lp->uid = geteuid();
  lp->gid = getegid();
  lp->landlock_abi = landlock_abi_version();
  /* Init is the adapter's own code: its launch record is the adapter's
   * word (see linux_finish). */
  plan->adapter_owns_launch = true;
  return 0;
}

static int linux_prepare(corral_adapter *ad, const corral_request *req, launch_plan *plan,
                         corral_enforcement *enf, corral_error *err) {
  struct linux_adapter *la = ad->data;
  int r = linux_plan_prepare(la->policy, &la->seccomp, "linux", req, plan, err);
  if (r < 0)
    return r;
  struct linux_plan *lp = plan->adapter_data;
  plan->clone_flags = ns_clone_flags(lp->profile.network_allow);
  limits_plan(&plan->limits, lp->profile.limits, plan->clone_flags);
  if (mounts_prepare(lp) < 0)
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  plan->init_setup = linux_init_setup;
  plan->watch_links = true; /* no_new_privs is set by step 6 */
  plan->own_dev = true; /* mounts.c builds it, with a devpts of its own */
  plan->proxy = lp->profile.network_filter ? lp->profile.net : NULL;
  /* The walls here are mounts: a write is refused where the mount is
   * read-only, which init can ask the kernel. */
  lp->refusals = (struct refusal_plan){
      .write_roots = lp->profile.write_roots.v,
      .nwrite_roots = lp->profile.write_roots.n,
      .read_only = lp->profile.deny_write.v,
      .nread_only = lp->profile.deny_write.n,
      .protected_names = lp->profile.protected_names.v,
      .nprotected = lp->profile.protected_names.n,
      .secrets = lp->profile.deny_read.v,
      .nsecrets = lp->profile.deny_read.n,
      .network_closed = !lp->profile.network_allow,
      .network_filter = lp->profile.network_filter,
  };
  plan->refusals = lp->profile.record_refusals ? &lp->refusals : NULL;
  if (enforcement_set(enf, "linux", CORRAL_LEVEL_NATIVE, NULL) < 0)
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  return 0;
}

int linux_finish(corral_adapter *ad, launch_plan *plan, launch_report *rep,
                        corral_error *err) {
  (void)ad, (void)err;
  rep->adapter_launched = rep->launched;
  struct linux_plan *lp = plan->adapter_data;
  protect_finish(rep, &lp->watch, lp->watch_was);
  return 0;
}

void linux_cleanup(corral_adapter *ad, launch_plan *plan) {
  (void)ad;
  struct linux_plan *lp = plan->adapter_data;
  if (!lp)
    return;
  path_list_free(&lp->watch);
  free(lp->watch_was);
  runtime_release(&lp->runtime);
  profile_free(&lp->profile);
  path_list_free(&lp->read_allow);
  free(lp->mount_tables);
  free(lp);
  plan->adapter_data = NULL;
}

static void linux_destroy(corral_adapter *ad) {
  struct linux_adapter *la = ad->data;
  corral_policy_free(la->policy);
  free(la->seccomp.filter);
  free(la);
}

static const struct adapter_ops linux_ops = {
    .prepare = linux_prepare,
    .finish = linux_finish,
    .cleanup = linux_cleanup,
    .destroy = linux_destroy,
};

corral_adapter *corral_adapter_new_linux(const corral_policy *policy, corral_error *err) {
  struct linux_adapter *la = calloc(1, sizeof *la);
  if (!la || !(la->policy = policy_copy(policy))) {
    free(la);
    error_set(err, -ENOMEM, ENOMEM, "out of memory");
    return NULL;
  }
  struct profile pr = {.block_unix = la->policy->block_unix};
  if (seccomp_program(&pr, false, &la->seccomp, err) < 0) {
    corral_policy_free(la->policy);
    free(la);
    return NULL;
  }
  /* The namespace maps the caller's own ids alone (namespaces.c). */
  if (seccomp_add_id_checks(&la->seccomp, geteuid(), getegid()) < 0) {
    free(la->seccomp.filter);
    corral_policy_free(la->policy);
    free(la);
    error_set(err, -ENOMEM, ENOMEM, "out of memory");
    return NULL;
  }
  corral_adapter *ad = adapter_new("linux", &linux_ops, la);
  if (!ad) {
    ad = &(corral_adapter){.data = la};
    linux_destroy(ad);
    error_set(err, -ENOMEM, ENOMEM, "out of memory");
    return NULL;
  }
  return ad;
}

corral_adapter *corral_adapter_new_landlock(const corral_policy *policy, unsigned flags,
                                            corral_error *err) {
  if (flags & ~CORRAL_ALLOW_DEGRADED) {
    error_set(err, -EINVAL, EINVAL, "unknown flag bits %#x", flags);
    return NULL;
  }
  return adapter_new_landlock(policy, flags & CORRAL_ALLOW_DEGRADED, err);
}

corral_adapter *corral_adapter_new_default(const corral_policy *policy, unsigned flags,
                                           corral_error *err) {
  if (flags & ~CORRAL_ALLOW_DEGRADED) {
    error_set(err, -EINVAL, EINVAL, "unknown flag bits %#x", flags);
    return NULL;
  }
  if (policy && !policy->enforce)
    return corral_adapter_new_direct(CORRAL_LEVEL_DISABLED, NULL);
  bool degraded_ok = flags & CORRAL_ALLOW_DEGRADED;
  /* Cheap checks first (no fork).  The full probe costs a fork, so only
   * when there is a fallback to choose; otherwise a kernel that refuses
   * shows up as sandbox_setup_failure naming the step. */
  char why[256];
  ns_obstacle(why, sizeof why);
  if (!why[0] && degraded_ok && ns_available(why, sizeof why))
    why[0] = '\0';
  if (why[0])
    return adapter_new_landlock(policy, degraded_ok, err);
  return corral_adapter_new_linux(policy, err);
}
