/*
 * landlock.c — a second, independent layer over the same write roots, plus
 * scoping of signals and abstract Unix sockets where the kernel has it.
 *
 * If a mount were ever wrong, Landlock still refuses writes outside the
 * write roots.  Reads are not handled here (the mount layer hides what must
 * not be read), so handled rights are the write-like ones this ABI knows.
 */
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "../internal.h"
#include "../launch.h"
#include "linux.h"

/* Newer than Debian 12's kernel headers. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#define CORRAL_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define CORRAL_LANDLOCK_SCOPE_SIGNAL (1ULL << 1)

/* The ruleset attribute as of ABI 6 (handled_access_net, scoped). */
struct ruleset_attr_v6 {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

int landlock_abi_version(void) {
  long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return v < 0 ? 0 : (int)v;
}

static uint64_t write_rights(int abi) {
  uint64_t r = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
               LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
               LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
               LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
               LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2)
    r |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3)
    r |= LANDLOCK_ACCESS_FS_TRUNCATE;
  return r;
}

static int allow(int ruleset, const char *path, uint64_t rights) {
  /* Mostly directories: a file is told by ENOTDIR, without an fstat. */
  int fd = open(path, O_PATH | O_CLOEXEC | O_DIRECTORY);
  if (fd < 0 && errno == ENOTDIR) {
    fd = open(path, O_PATH | O_CLOEXEC);
    rights &= LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
              LANDLOCK_ACCESS_FS_READ_FILE;
  }
  if (fd < 0)
    return errno == ENOENT ? 0 : -1;
  struct landlock_path_beneath_attr pb = {.allowed_access = rights, .parent_fd = fd};
  long r = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
  int e = errno;
  close(fd);
  errno = e;
  return r < 0 ? -1 : 0;
}

#define READ_RIGHTS (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

int landlock_apply(const struct linux_plan *lp, bool own_dev, int report_fd) {
  int abi = lp->landlock_abi;
  if (abi <= 0)
    return 0; /* the kernel has none: the mount layer alone enforces */
  /* Reads are handled only when the landlock-only adapter has to express
   * deny-read or restricted reads itself (lp->read_allow not empty). */
  bool reads = lp->read_allow.n > 0;
  struct ruleset_attr_v6 attr = {.handled_access_fs =
                                     write_rights(abi) | (reads ? READ_RIGHTS : 0)};
  size_t size = sizeof(uint64_t); /* ABI 1-3 know only handled_access_fs */
  if (abi >= 6) {
    attr.scoped = CORRAL_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | CORRAL_LANDLOCK_SCOPE_SIGNAL;
    size = sizeof attr;
  }
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (rs < 0)
    return setup_failed(report_fd, errno, "landlock: create ruleset%s", "");
  uint64_t rights = attr.handled_access_fs;
  const struct profile *pr = &lp->profile;
  for (size_t i = 0; i < lp->read_allow.n; i++)
    if (allow(rs, lp->read_allow.v[i], READ_RIGHTS) < 0) {
      close(rs);
      return setup_failed(report_fd, errno, "landlock: read rule for `%s`", lp->read_allow.v[i]);
    }
  for (size_t i = 0; i < pr->write_roots.n; i++)
    if (allow(rs, pr->write_roots.v[i], rights) < 0) {
      close(rs);
      return setup_failed(report_fd, errno, "landlock: rule for `%s`", pr->write_roots.v[i]);
    }
  /* Device nodes and terminals are written by ordinary programs; /proc
   * files too (uid_map for a nested user namespace, oom_score_adj, comm).
   * The sandbox's own /dev (read-only, the nodes of mounts.c) is one rule;
   * the host's (landlock-only adapter) only the harmless nodes.  /proc is
   * one rule or none: a rule cannot name "the command's own entries" (a
   * process's directory is made anew for every process).  For a user
   * other than root, what /proc lets it write is its own (the global
   * entries are root's files), so the rule adds nothing; a root caller's
   * command passes the owner checks of every global entry (the sysctls,
   * sysrq-trigger, irq affinities), so it gets no write under /proc. */
  static const char *const host_dev[] = {"/proc",    "/dev/null", "/dev/zero", "/dev/full",
                                         "/dev/tty", "/dev/shm"};
  static const char *const own_dev_rules[] = {"/proc", "/dev", "/dev/shm"};
  const char *const *dev = own_dev ? own_dev_rules : host_dev;
  size_t ndev = own_dev ? ARRAY_SIZE(own_dev_rules) : ARRAY_SIZE(host_dev);
  /* Writing a file there means truncating it too: `echo 1 > F` opens
   * with O_TRUNC, which Landlock (ABI 3+) checks as its own right. */
  uint64_t write_file = rights & (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE);
  for (size_t i = 0; i < ndev; i++)
    if (!(lp->uid == 0 && strcmp(dev[i], "/proc") == 0) &&
        allow(rs, dev[i],
              strcmp(dev[i], "/dev/shm") == 0 ? rights : write_file | (reads ? READ_RIGHTS : 0)) <
        0) {
      close(rs);
      return setup_failed(report_fd, errno, "landlock: rule for `%s`", dev[i]);
    }
  /* Of the host's terminals (landlock-only), the command's own: its
   * standard streams' (this runs in the command's process). */
  for (int fd = 0; fd <= 2 && !own_dev; fd++) {
    char tty[64];
    if (isatty(fd) && ttyname_r(fd, tty, sizeof tty) == 0 && strncmp(tty, "/dev/", 5) == 0 &&
        allow(rs, tty, write_file | (reads ? READ_RIGHTS : 0)) < 0) {
      close(rs);
      return setup_failed(report_fd, errno, "landlock: rule for `%s`", tty);
    }
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
      syscall(SYS_landlock_restrict_self, rs, 0) < 0) {
    int e = errno;
    close(rs);
    return setup_failed(report_fd, e, "landlock: restrict_self%s", "");
  }
  close(rs);
  return 0;
}

int landlock_scope_init_apply(int report_fd) {
  /* No access rights handled: init itself may do anything it could; the
   * domain only draws the line that signals may not cross outwards. */
  struct ruleset_attr_v6 attr = {.scoped = CORRAL_LANDLOCK_SCOPE_SIGNAL};
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (rs < 0)
    return setup_failed(report_fd, errno, "landlock: create init's scope%s", "");
  long r = syscall(SYS_landlock_restrict_self, rs, 0);
  int e = errno;
  close(rs);
  return r < 0 ? setup_failed(report_fd, e, "landlock: restrict init%s", "") : 0;
}
