/*
 * linux.h — the Linux adapter's mechanisms, one file each.
 *
 * Everything named *_apply runs inside init after the clone: it must not
 * allocate, and it reports failure with report_write(REPORT_SETUP_FAILED)
 * naming the step before returning -1.  Everything else runs in the
 * supervisor before the clone.
 */
#ifndef CORRAL_LINUX_H
#define CORRAL_LINUX_H

#include <linux/filter.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "../launch.h"
#include "../policy.h"

/* runtime.c */
struct runtime_lease {
  char root[4096];  /* the directory with cache/ data/ tmp/ */
  int lease_fd;     /* holds the shared flock, -1 for a private directory */
  bool private_dir; /* a mkdtemp directory, removed on release */
};
int runtime_acquire(const char *workspace, const struct path_list *roots,
                    struct runtime_lease *rl, corral_error *err);
void runtime_release(struct runtime_lease *rl);
void runtime_cleanup(const char *base, time_t max_age, size_t keep);
/* Where init keeps the views' masks (mounts.c), made if need be, in `out`
 * ("" when there is none that is the user's alone).  true when a write
 * root holds it or lies in it: it must then be made read-only for the run. */
bool runtime_mask_cache(char *out, size_t size, const struct path_list *write_roots);

/* monitor.c: protected metadata in the write roots. */
/* Adds read-only carve-outs for what exists (to pr->deny_write) and lists
 * the protected paths that are missing, whose creation must be watched. */
int protect_prepare(struct profile *pr, struct path_list *watch, corral_error *err);
/* The watched paths as they were before the run (st_nlink 0: absent). */
int protect_remember(const struct path_list *watch, struct stat **was, corral_error *err);
/* Removes from the host what the command created under a protected name
 * and fills the denial and the stderr note.  The report is the command's
 * to forge if anything went wrong, so a path is acted on only when it is
 * one the plan watched and it is not what was there before the run; a
 * record naming anything else makes the report unreadable. */
void protect_finish(launch_report *rep, const struct path_list *watch, const struct stat *was);

struct linux_plan {
  struct profile profile;
  struct sock_fprog seccomp;   /* compiled in the supervisor; loaded last */
  uid_t uid;                   /* the supervisor's ids, mapped to themselves */
  gid_t gid;
  int landlock_abi;            /* 0: the kernel has no Landlock */
  struct path_list watch;      /* protected paths that are missing */
  struct stat *watch_was;      /* each as it was before the run (protect_remember) */
  struct runtime_lease runtime;
  struct path_list read_allow; /* landlock-only: where reading is allowed */
  char mask_cache[4096];       /* views' masks made once (mounts.c), or "" */
  void *mount_tables;          /* mounts.c's, sized by mounts_prepare */
  struct refusal_plan refusals; /* what init checks the command's writes against */
};

/* namespaces.c */
unsigned long ns_clone_flags(bool network_allow);
int ns_write_id_maps_apply(uid_t uid, gid_t gid, int report_fd);
/* A private network namespace with loopback up: begun by init before the
 * uid/gid maps, joined after the mounts.  With hand_over, the child also
 * detaches the old root (after mounts_apply(..., false));
 * ns_net_detached_apply waits for that. */
int ns_net_begin_apply(int report_fd);
/* Or made by init itself (after ns_net_alongside_pays says no). */
bool ns_net_alongside_pays(void);
int ns_net_self_apply(int report_fd);
int ns_net_join_apply(bool hand_over, int report_fd);
int ns_net_detached_apply(int report_fd);
int ns_drop_bounding_apply(int report_fd);
int ns_drop_privileges_apply(int report_fd); /* after ns_drop_bounding_apply */
/* Why the namespace adapter cannot work here, cheaply (no fork): "" when
 * nothing speaks against it. */
void ns_obstacle(char *why, size_t whylen);
/* Can this process create the namespaces the adapter needs?  (A probe in a
 * short-lived child; *why says what failed.) */
bool ns_available(char *why, size_t whylen);

/* gitconfig.c: a regular file of at most `max` bytes, NUL-terminated
 * (malloc'd), or NULL; and each value of `key` in `section` (any
 * subsection, case as git has it) of config text, which it changes. */
char *read_small_file(const char *path, size_t max);
void gitconfig_each(char *text, const char *section, const char *key,
                    void (*fn)(const char *value, void *ctx), void *ctx);

/* mounts.c */
/* In the supervisor, once the profile is final: the tables init fills
 * (as many entries as the lists hold; freed with the plan). */
int mounts_prepare(struct linux_plan *lp);
int mounts_clone_apply(const struct linux_plan *lp, int report_fd);
/* Does mounts_apply pivot_root (restricted reads: a root of its own)?
 * Else the sandbox is built in place and there is no old root. */
bool mounts_pivot(const struct linux_plan *lp);
/* detach: unmount the old root after pivot_root here (else someone else
 * must, before anything untrusted runs). */
int mounts_apply(const struct linux_plan *lp, bool detach, int report_fd);

/* landlock.c */
int landlock_abi_version(void);
/* own_dev: /dev is the sandbox's own (mounts.c), not the host's. */
int landlock_apply(const struct linux_plan *lp, bool own_dev, int report_fd);
/* Puts init alone in a domain that scopes signals (ABI 6), after
 * no_new_privs: the command's domain, nested in it, cannot signal init,
 * and init's kill(-1) reaches the command's tree and nothing else. */
int landlock_scope_init_apply(int report_fd);

/* seccomp.c */
/* deny_inet: no socket other than AF_UNIX (network denial without a
 * network namespace, for the landlock-only adapter).  The build's copy
 * when there is one, else compiled now; prog->filter is malloc'd. */
int seccomp_program(const struct profile *pr, bool deny_inet, struct sock_fprog *prog,
                    corral_error *err);
int seccomp_apply(const struct sock_fprog *prog, int report_fd);
/* Puts before the program the checks that make a set*id or chown call
 * naming another id than these EPERM (as outside), not the kernel's
 * EINVAL for an id the namespace cannot map.  0 or -ENOMEM. */
int seccomp_add_id_checks(struct sock_fprog *prog, uid_t uid, gid_t gid);

/* environment.c */
bool env_is_secret(const char *entry, const struct profile *pr);
/* Sets KEY=VALUE in an environment vector, replacing KEY; 0 or -ENOMEM. */
int env_set(char ***envp, size_t *envc, const char *key, const char *value);
/* Removes secrets, adds the markers and (when runtime is not NULL) points
 * caches and temp there. */
int environment_prepare(char ***envp, size_t *envc, const struct profile *pr,
                        const char *backend, const char *runtime);

/* adapters/linux.c: shared by the linux and landlock adapters. */
struct launch_plan;
int linux_plan_prepare(const corral_policy *policy, const struct sock_fprog *seccomp,
                       const char *backend, const corral_request *req,
                       struct launch_plan *plan, corral_error *err);
int linux_finish(corral_adapter *ad, struct launch_plan *plan, launch_report *rep,
                 corral_error *err);
void linux_cleanup(corral_adapter *ad, struct launch_plan *plan);

/* adapters/landlock.c */
corral_adapter *adapter_new_landlock(const corral_policy *policy, bool allow_degraded,
                                     corral_error *err);

/* Reports a failed step; always returns -1.  `what` is formatted with %s. */
int setup_failed(int report_fd, int saved_errno, const char *fmt, const char *arg);

#endif
