/*
 * namespaces.c — which namespaces the sandbox gets, its uid/gid maps, the
 * loopback interface of a private network, and dropping every privilege.
 */
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../internal.h"
#include "../launch.h"
#include "linux.h"

int setup_failed(int report_fd, int saved_errno, const char *fmt, const char *arg) {
  char text[REPORT_TEXT_MAX];
  snprintf(text, sizeof text, fmt, arg ? arg : "");
  report_write(report_fd, REPORT_SETUP_FAILED, saved_errno, 0, text);
  return -1;
}

unsigned long ns_clone_flags(const struct profile *pr) {
  unsigned long f = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
  if (!pr->network_allow)
    f |= CLONE_NEWNET;
  return f;
}

static int write_file(pid_t pid, const char *name, const char *text, corral_error *err) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return error_sys(err, "namespaces: open `%s`", path);
  ssize_t n = write(fd, text, strlen(text));
  int e = errno;
  close(fd);
  if (n != (ssize_t)strlen(text)) {
    errno = n < 0 ? e : EIO;
    return error_sys(err, "namespaces: write `%s` to `%s`", text, path);
  }
  return 0;
}

int ns_write_id_maps(pid_t child, uid_t uid, gid_t gid, corral_error *err) {
  char map[64];
  int r;
  /* The user keeps its own ids inside, so files it owns look like its own
   * and git's ownership checks pass; every other id shows as nobody. */
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
  if ((r = write_file(child, "uid_map", map, err)) < 0)
    return r;
  if ((r = write_file(child, "setgroups", "deny", err)) < 0)
    return r;
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
  return write_file(child, "gid_map", map, err);
}

int ns_loopback_up_apply(int report_fd) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return setup_failed(report_fd, errno, "network: socket for `%s`", "lo");
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  memcpy(ifr.ifr_name, "lo", 3);
  int r = ioctl(s, SIOCGIFFLAGS, &ifr);
  if (r == 0) {
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    r = ioctl(s, SIOCSIFFLAGS, &ifr);
  }
  int e = errno;
  close(s);
  return r < 0 ? setup_failed(report_fd, e, "network: bring up `%s`", "lo") : 0;
}

int ns_drop_privileges_apply(int report_fd) {
  /* Bounding set first (needs CAP_SETPCAP), then ambient, then the sets
   * themselves: an execve by uid 0 inside gets nothing back. */
  for (int cap = 0; cap <= 63; cap++)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
      return setup_failed(report_fd, errno, "capabilities: drop bounding set%s", "");
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    return setup_failed(report_fd, errno, "capabilities: clear ambient%s", "");
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &hdr, data) < 0)
    return setup_failed(report_fd, errno, "capabilities: capset to zero%s", "");
  return prctl_no_new_privs(report_fd);
}

int prctl_no_new_privs(int report_fd) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
    return setup_failed(report_fd, errno, "no_new_privs%s", "");
  return 0;
}

static long read_sysctl(const char *path) {
  char buf[32];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  return strtol(buf, NULL, 10);
}

void ns_obstacle(char *why, size_t whylen) {
  why[0] = '\0';
  /* Inside corral's own sandbox, Landlock forbids every mount. */
  const char *sandboxed = getenv("CORRAL_SANDBOXED");
  if (sandboxed && strcmp(sandboxed, "1") == 0) {
    snprintf(why, whylen, "already inside a corral sandbox (Landlock forbids mounts)");
    return;
  }
  if (read_sysctl("/proc/sys/user/max_user_namespaces") == 0) {
    snprintf(why, whylen, "user namespaces are disabled (user.max_user_namespaces = 0)");
    return;
  }
  if (geteuid() != 0 && read_sysctl("/proc/sys/kernel/unprivileged_userns_clone") == 0) {
    snprintf(why, whylen, "unprivileged user namespaces are disabled "
                          "(kernel.unprivileged_userns_clone = 0)");
    return;
  }
  if (geteuid() != 0 &&
      read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1) {
    snprintf(why, whylen, "AppArmor restricts unprivileged user namespaces");
    return;
  }
  /* Mapping uid 0 into a new namespace needs CAP_SETFCAP. */
  if (geteuid() == 0) {
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data) == 0 && !(data[0].effective & (1u << CAP_SETFCAP)))
      snprintf(why, whylen, "root without CAP_SETFCAP cannot map itself into a user namespace");
  }
}

bool ns_available(char *why, size_t whylen) {
  struct profile pr = {0};
  unsigned long flags = ns_clone_flags(&pr);
  /* unshare in a throwaway child: the probe must not change this process. */
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, whylen, "fork: %s", strerror(errno));
    return false;
  }
  if (pid == 0)
    _exit(unshare((int)(flags & ~(unsigned long)CLONE_NEWPID)) == 0 ? 0 : (errno & 0xff));
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return true;
  snprintf(why, whylen, "user namespaces are not available: unshare: %s",
           WIFEXITED(status) ? strerror(WEXITSTATUS(status)) : "probe crashed");
  return false;
}
