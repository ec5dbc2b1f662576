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
#include <sys/types.h>

#include "../policy.h"

struct linux_plan {
  struct profile profile;
  struct sock_fprog seccomp;   /* compiled in the supervisor; loaded last */
  uid_t uid;                   /* the supervisor's ids, mapped to themselves */
  gid_t gid;
  int landlock_abi;            /* 0: the kernel has no Landlock */
  char cwd[4096];
};

/* namespaces.c */
unsigned long ns_clone_flags(const struct profile *pr);
int ns_write_id_maps(pid_t child, uid_t uid, gid_t gid, corral_error *err);
int ns_loopback_up_apply(int report_fd);
int ns_drop_privileges_apply(int report_fd);
/* Can this process create the namespaces the adapter needs?  (A probe in a
 * short-lived child; *why says what failed.) */
bool ns_available(char *why, size_t whylen);

/* mounts.c */
int mounts_apply(const struct linux_plan *lp, int report_fd);

/* landlock.c */
int landlock_abi_version(void);
int landlock_apply(const struct linux_plan *lp, int report_fd);

/* seccomp.c */
int seccomp_compile(const struct profile *pr, struct sock_fprog *prog, corral_error *err);
int seccomp_apply(const struct sock_fprog *prog, int report_fd);

/* Reports a failed step; always returns -1.  `what` is formatted with %s. */
int setup_failed(int report_fd, int saved_errno, const char *fmt, const char *arg);

#endif
