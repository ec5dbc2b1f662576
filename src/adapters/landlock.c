/*
 * landlock.c — the landlock-only adapter, for hosts where user namespaces
 * are unavailable or restricted, and for corral inside corral (a
 * Landlock-restricted process may not mount, so namespaces are out).
 *
 * Setup order (no namespaces; init is a child subreaper):
 *   1. init: every capability dropped (the bounding set too, when the
 *      caller holds CAP_SETPCAP: root), no_new_privs;
 *   2. init: a Landlock domain of its own that scopes signals (ABI 6+), so
 *      that nothing the command starts can signal init, and init's
 *      kill(-1) ends the command's whole tree, setsid or not;
 *   3. the command, after the fork: Landlock (nested in init's): writes
 *      only beneath the write roots; when the policy hides something,
 *      reads only beneath an allow-list computed here (every entry along
 *      the way to a deny-read path but that path), which also keeps
 *      secrets created later unreadable; signal and abstract-socket
 *      scoping;
 *   4. the command: seccomp, last: the core's denials plus, with the
 *      network denied, no socket other than AF_UNIX.
 *
 * Without user namespaces a root caller's command runs as the host's uid
 * 0: every file root owns is its own.  So Landlock grants it no write
 * under /proc (the sysctls, sysrq-trigger, irq affinities are root's
 * files), and the system's credential files are in the deny-read list
 * (policy.c).
 *
 * What it cannot express — read-only paths inside a write root that are
 * not already read-only (an outer sandbox may have made them so), or any
 * Landlock at all — makes it refuse and name the part, unless the caller
 * accepted degraded enforcement; the outcome then says what is missing.
 */
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

#include "../adapter.h"
#include "../internal.h"
#include "../linux/linux.h"

struct landlock_adapter {
  corral_policy *policy;
  struct sock_fprog seccomp;
  bool allow_degraded;
};

static int landlock_init_setup(const launch_plan *plan, int report_fd) {
  if (ns_drop_bounding_apply(report_fd) < 0 || ns_drop_privileges_apply(report_fd) < 0)
    return -1;
  return plan->init_scoped ? landlock_scope_init_apply(report_fd) : 0;
}

static int landlock_command_setup(const launch_plan *plan, int report_fd) {
  const struct linux_plan *lp = plan->adapter_data;
  if (landlock_apply(lp, false, report_fd) < 0 || seccomp_apply(&lp->seccomp, report_fd) < 0)
    return -1;
  return 0;
}

/* Replaces `dir` in the allow-list by its entries, except the one on the
 * way to `target`, into which it descends; `target` itself is left out. */
static int carve(struct path_list *allow, const char *dir, const char *target) {
  DIR *d = opendir(dir);
  if (!d)
    return 0; /* unreadable already */
  struct dirent *de;
  char next[4096] = "";
  size_t dlen = strcmp(dir, "/") == 0 ? 0 : strlen(dir);
  /* The child of dir that leads to target. */
  const char *rest = target + dlen + 1;
  size_t clen = strcspn(rest, "/");
  int r = 0;
  while ((de = readdir(d)) && r == 0) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%.*s/%s", (int)dlen, dir, de->d_name);
    if (strlen(de->d_name) == clen && strncmp(de->d_name, rest, clen) == 0) {
      snprintf(next, sizeof next, "%s", path);
      continue;
    }
    /* A symlink needs no rule (what it leads to has its own), and a rule
     * would be put on whatever it leads to (/dev/stderr: a pipe). */
    struct stat lst;
    if (de->d_type == DT_LNK || (de->d_type == DT_UNKNOWN && lstat(path, &lst) == 0 &&
                                 S_ISLNK(lst.st_mode)))
      continue;
    r = path_list_add(allow, path);
  }
  closedir(d);
  if (r == 0 && next[0] && strcmp(next, target) != 0) {
    struct stat st;
    if (lstat(next, &st) == 0 && S_ISDIR(st.st_mode))
      r = carve(allow, next, target);
  }
  return r;
}

/* Carves `deny` out of whichever allowed entry of `out` contains it. */
static int carve_out(struct path_list *out, const char *deny) {
  for (size_t k = 0; k < out->n; k++) {
    if (!path_is_under(deny, out->v[k]))
      continue;
    char *holder = out->v[k];
    out->v[k] = out->v[--out->n];
    out->v[out->n] = NULL;
    int r = strcmp(holder, deny) != 0 ? carve(out, holder, deny) : 0;
    free(holder);
    return r;
  }
  return 0;
}

/* The read allow-list.  Reads are always handled: without a mount
 * namespace /dev/pts is the host's, and the user's other terminals there
 * (their keystrokes) are the user's own to read; only the command's own
 * terminal is added back (landlock_apply). */
static int compute_read_allow(const struct profile *pr, struct path_list *out) {
  int r = 0;
  if (pr->restricted_read) {
    for (size_t i = 0; i < pr->platform_roots.n && r == 0; i++)
      r = path_list_add(out, pr->platform_roots.v[i]);
    for (size_t i = 0; i < pr->read_roots.n && r == 0; i++)
      r = path_list_add(out, pr->read_roots.v[i]);
    if (r == 0)
      r = path_list_add(out, "/dev");
  } else {
    r = path_list_add(out, "/");
  }
  for (size_t i = 0; i < pr->deny_read.n && r == 0; i++)
    r = carve_out(out, pr->deny_read.v[i]);
  if (r == 0)
    r = carve_out(out, "/dev/pts");
  for (size_t i = 0; i < pr->allow_read.n && r == 0; i++)
    r = path_list_add(out, pr->allow_read.v[i]);
  if (r == 0)
    r = path_list_add(out, "/proc");
  for (size_t i = 0; i < pr->write_roots.n && r == 0; i++)
    r = path_list_add(out, pr->write_roots.v[i]);
  return r;
}

/* Read-only paths inside write roots (or holding one) that no layer
 * enforces yet. */
static void unenforced_readonly(const struct profile *pr, char *out, size_t size) {
  out[0] = '\0';
  for (size_t i = 0; i < pr->deny_write.n; i++) {
    const char *p = pr->deny_write.v[i];
    bool inside = false;
    for (size_t k = 0; k < pr->write_roots.n && !inside; k++)
      inside = path_is_under(p, pr->write_roots.v[k]) || path_is_under(pr->write_roots.v[k], p);
    if (!inside || (access(p, W_OK) < 0 && (errno == EROFS || errno == EACCES)))
      continue; /* outside a write root Landlock denies it; or already read-only */
    if (!out[0])
      snprintf(out, size, "a read-only path in or around a write root (`%s`)", p);
    return;
  }
}

static int landlock_prepare(corral_adapter *ad, const corral_request *req, launch_plan *plan,
                            corral_enforcement *enf, corral_error *err) {
  struct landlock_adapter *la = ad->data;
  int r = linux_plan_prepare(la->policy, &la->seccomp, "landlock", req, plan, err);
  if (r < 0)
    return r;
  struct linux_plan *lp = plan->adapter_data;
  /* Without a network namespace of its own, the command would reach the
   * host's loopback, and through it anything listening there. */
  if (lp->profile.network_filter)
    return error_set(err, CORRAL_EINVALID, EINVAL,
                     "network mode `filter` needs the linux adapter (a private network "
                     "namespace for the proxies); the landlock-only adapter can only deny or "
                     "allow the network");
  limits_plan(&plan->limits, lp->profile.limits, plan->clone_flags);
  char gap[600] = "";
  if (lp->landlock_abi <= 0)
    snprintf(gap, sizeof gap, "this kernel has no Landlock");
  else if (lp->landlock_abi < 6)
    snprintf(gap, sizeof gap,
             "keeping corral's init out of the command's reach (signal scoping needs "
             "Landlock ABI 6, this kernel has %d): the command could end init and outlive the run",
             lp->landlock_abi);
  else
    unenforced_readonly(&lp->profile, gap, sizeof gap);
  if (!gap[0] && lp->profile.hidden_sockets.n)
    snprintf(gap, sizeof gap, "hiding daemons' sockets (`%s`)", lp->profile.hidden_sockets.v[0]);
  for (size_t i = 0; !gap[0] && i < lp->profile.deny_links.n; i++)
    for (size_t k = 0; !gap[0] && k < lp->profile.write_roots.n; k++)
      if (path_is_under(lp->profile.deny_links.v[i], lp->profile.write_roots.v[k]))
        snprintf(gap, sizeof gap, "keeping a secret store's symlink in a write root (`%s`)",
                 lp->profile.deny_links.v[i]);
  if (!gap[0] && compute_read_allow(&lp->profile, &lp->read_allow) < 0)
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  if (gap[0] && !la->allow_degraded)
    return error_set(err, CORRAL_ESETUP, 0,
                     "the landlock-only adapter cannot enforce %s (--allow-degraded runs the "
                     "command anyway and says so)",
                     gap);
  plan->init_setup = landlock_init_setup;
  plan->command_setup = landlock_command_setup;
  plan->init_scoped = lp->landlock_abi >= 6;
  plan->watch_links = true; /* no_new_privs is set by step 1 */
  char reason[700];
  snprintf(reason, sizeof reason, "landlock-only: not enforced: %s", gap);
  if (enforcement_set(enf, "landlock", gap[0] ? CORRAL_LEVEL_DEGRADED : CORRAL_LEVEL_NATIVE,
                      gap[0] ? reason : NULL) < 0)
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  return 0;
}

static void landlock_destroy(corral_adapter *ad) {
  struct landlock_adapter *la = ad->data;
  corral_policy_free(la->policy);
  free(la->seccomp.filter);
  free(la);
}

static const struct adapter_ops landlock_ops = {
    .prepare = landlock_prepare,
    .finish = linux_finish,
    .cleanup = linux_cleanup,
    .destroy = landlock_destroy,
};

corral_adapter *adapter_new_landlock(const corral_policy *policy, bool allow_degraded,
                                     corral_error *err) {
  struct landlock_adapter *la = calloc(1, sizeof *la);
  if (!la || !(la->policy = policy_copy(policy))) {
    free(la);
    error_set(err, -ENOMEM, ENOMEM, "out of memory");
    return NULL;
  }
  la->allow_degraded = allow_degraded;
  struct profile pr = {.block_unix = la->policy->block_unix};
  if (seccomp_program(&pr, !la->policy->network_allow, &la->seccomp, err) < 0) {
    corral_policy_free(la->policy);
    free(la);
    return NULL;
  }
  corral_adapter *ad = adapter_new("landlock", &landlock_ops, la);
  if (!ad) {
    landlock_destroy(&(corral_adapter){.data = la});
    error_set(err, -ENOMEM, ENOMEM, "out of memory");
  }
  return ad;
}
