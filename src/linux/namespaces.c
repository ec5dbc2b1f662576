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
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
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

/* What init's child makes alongside when the network is denied
 * (ns_net_begin_apply): the network namespace, and the IPC one with it,
 * off the supervisor's clone. */
#define ALONGSIDE (CLONE_NEWNET | CLONE_NEWIPC)

/* Init's namespaces, without those made alongside. */
unsigned long ns_clone_flags(bool network_allow) {
  unsigned long f = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC;
  return network_allow ? f : f & ~(unsigned long)ALONGSIDE;
}

/* Init writes its own maps: a process may map its own user and group ids
 * into a user namespace it is in (one line each; setgroups denied first),
 * so the supervisor has no part in the setup and init no one to wait for.
 * /proc is still the host's here, where init has a pid of its own. */
static int write_self(int report_fd, const char *name, const char *text) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/%s", name);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : write(fd, text, strlen(text));
  int e = n < 0 ? errno : EIO;
  if (fd >= 0)
    close(fd);
  if (n == (ssize_t)strlen(text))
    return 0;
  return setup_failed(report_fd, e, "namespaces: write `%s`", path);
}

int ns_write_id_maps_apply(uid_t uid, gid_t gid, int report_fd) {
  char map[64];
  /* The user keeps its own ids inside, so files it owns look like its own
   * and git's ownership checks pass; every other id shows as nobody. */
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
  if (write_self(report_fd, "uid_map", map) < 0 || write_self(report_fd, "setgroups", "deny") < 0)
    return -1;
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
  return write_self(report_fd, "gid_map", map);
}

static int loopback_up(void) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0)
    return -1;
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
  errno = e;
  return r;
}

/* A network namespace takes the kernel about half a millisecond to make
 * (loopback, its sysctls, every protocol's per-namespace state), as long
 * as all of init's filesystem work.  So init has a child make it while it
 * builds the filesystem, on the other CPU, and then joins it.  The child
 * is a copy of init, itself a copy of the supervisor: it hides itself
 * (launch_hide_self) before anything else, and hands init the namespaces
 * as descriptors (SCM_RIGHTS; a pidfd's setns would need it dumpable),
 * which keep them alive after it exits.  Init's own memory, no malloc. */
static struct {
  int ready; /* socket: the child's struct net_result, with the namespaces */
  int hold;  /* write end: 'd' asks for the detach; closing lets the child exit */
} net = {-1, -1};

struct net_result {
  int err;
  char step; /* 'h' hiding, 'n' the namespace, 'l' its loopback, 'o' opening it, 'd' the detach */
};

static ssize_t read_byte(int fd, char *c) {
  ssize_t n;
  while ((n = read(fd, c, 1)) < 0 && errno == EINTR)
    ;
  return n;
}

/* One result, and with it (when given) two descriptors. */
static bool send_result(int sock, const struct net_result *res, const int fds[2]) {
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(2 * sizeof(int))];
  } u;
  struct iovec iov = {(void *)res, sizeof *res};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fds) {
    memset(&u, 0, sizeof u);
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof u.buf;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(2 * sizeof(int));
    memcpy(CMSG_DATA(c), fds, 2 * sizeof(int));
  }
  ssize_t n;
  while ((n = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
    ;
  return n == sizeof *res;
}

/* After the namespace, the child takes one more step off init's path when
 * asked ('d'; only a restricted root is pivoted into): detaching the old
 * root that init's pivot_root left on top of the new one.  An unmount
 * waits for an RCU grace period; init drops its privileges meanwhile, and
 * waits for this before the command runs. */
static _Noreturn void net_child(int ready, int hold) {
  /* Nothing of init's but its two ends: not the command's output pipes
   * (their EOF must not wait for this child), not the report pipe. */
  unsigned lo = (unsigned)(ready < hold ? ready : hold), hi = (unsigned)(ready < hold ? hold : ready);
  if (lo > 0)
    syscall(SYS_close_range, 0U, lo - 1, 0U);
  if (hi > lo + 1)
    syscall(SYS_close_range, lo + 1, hi - 1, 0U);
  syscall(SYS_close_range, hi + 1, ~0U, 0U);
  struct net_result res = {0, 0};
  int fds[2] = {-1, -1};
  if (launch_hide_self() < 0)
    res = (struct net_result){errno, 'h'};
  else if (unshare(ALONGSIDE) < 0)
    res = (struct net_result){errno, 'n'};
  else if (loopback_up() < 0)
    res = (struct net_result){errno, 'l'};
  else if ((fds[0] = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0 ||
           (fds[1] = open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC)) < 0)
    res = (struct net_result){errno, 'o'};
  char c;
  if (send_result(ready, &res, res.err ? NULL : fds) && !res.err && read_byte(hold, &c) == 1) {
    res = (struct net_result){0, 'd'};
    /* pivot_root made the new root this process's root too. */
    if (chdir("/") < 0 || umount2(".", MNT_DETACH) < 0)
      res.err = errno;
    if (send_result(ready, &res, NULL))
      read_byte(hold, &c);
  }
  _exit(0);
}

/* A new child is queued on its parent's CPU, and init keeps that CPU busy:
 * left alone, the child can wait most of a millisecond before the other
 * CPU takes it.  So it is sent to another CPU init may use, if any. */
static void move_off_this_cpu(pid_t pid) {
  cpu_set_t set;
  int me = sched_getcpu();
  if (me < 0 || me >= CPU_SETSIZE || sched_getaffinity(0, sizeof set, &set) < 0)
    return;
  CPU_CLR(me, &set);
  if (CPU_COUNT(&set) > 0)
    sched_setaffinity(pid, sizeof set, &set);
}

/* The child pays only with a CPU free to run it while init works: on a
 * busy machine it would wait for another task's slice to end (up to a
 * tick) where init makes the namespace itself in half a millisecond.
 * /proc/loadavg's fourth field counts the machine's runnable tasks: init
 * among them, and often the supervisor, about to sleep. */
bool ns_net_alongside_pays(void) {
  char buf[128];
  cpu_set_t set;
  int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC), running = 0;
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
  if (fd >= 0)
    close(fd);
  if (n <= 0 || sched_getaffinity(0, sizeof set, &set) < 0)
    return true;
  buf[n] = '\0';
  if (sscanf(buf, "%*s %*s %*s %d/", &running) != 1)
    return true;
  return running <= CPU_COUNT(&set);
}

int ns_net_self_apply(int report_fd) {
  if (unshare(ALONGSIDE) < 0)
    return setup_failed(report_fd, errno, "network: new namespace%s", "");
  if (loopback_up() < 0)
    return setup_failed(report_fd, errno, "network: bring up `lo`%s", "");
  return 0;
}

int ns_net_begin_apply(int report_fd) {
  int r[2], h[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, r) < 0)
    return setup_failed(report_fd, errno, "network: socket for `%s`", "the namespace helper");
  if (pipe2(h, O_CLOEXEC) < 0) {
    int e = errno;
    close(r[0]), close(r[1]);
    return setup_failed(report_fd, e, "network: pipe for `%s`", "the namespace helper");
  }
  pid_t pid = launch_clone3(0, NULL);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* and the pid namespace ends with init */
    close(r[0]), close(h[1]);
    net_child(r[1], h[0]);
  }
  int e = errno;
  if (pid > 0)
    move_off_this_cpu(pid);
  close(r[1]), close(h[0]);
  if (pid < 0) {
    close(r[0]), close(h[1]);
    return setup_failed(report_fd, e, "network: start `%s`", "the namespace helper");
  }
  net.ready = r[0];
  net.hold = h[1];
  return 0;
}

/* The child's next answer (and the descriptors that came with it, or -1):
 * 0, or the errno of a failed or short read. */
static int next_answer(struct net_result *res, int fds[2]) {
  union {
    struct cmsghdr h;
    char buf[CMSG_SPACE(2 * sizeof(int))];
  } u;
  struct iovec iov = {res, sizeof *res};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                       .msg_controllen = sizeof u.buf};
  ssize_t n;
  fds[0] = fds[1] = -1;
  do
    n = recvmsg(net.ready, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL;
  if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
      c->cmsg_len == CMSG_LEN(2 * sizeof(int)))
    memcpy(fds, CMSG_DATA(c), 2 * sizeof(int));
  return n == sizeof *res ? 0 : n < 0 ? errno : EPIPE;
}

int ns_net_join_apply(bool hand_over, int report_fd) {
  struct net_result res;
  int fds[2], e = next_answer(&res, fds), r = 0;
  static const char *const steps[] = {"network: hide `%s`", "network: new namespace%s",
                                      "network: bring up `lo`%s", "network: open `%s`"};
  if (e)
    r = setup_failed(report_fd, e, "network: `%s` ended early", "the namespace helper");
  else if (res.err)
    r = setup_failed(report_fd, res.err,
                     steps[res.step == 'h' ? 0 : res.step == 'n' ? 1 : res.step == 'l' ? 2 : 3],
                     res.step == 'h' ? "the namespace helper"
                     : res.step == 'o' ? "/proc/self/ns" : "");
  else if (fds[0] < 0 || fds[1] < 0)
    r = setup_failed(report_fd, EPROTO, "network: no namespace from `%s`", "the namespace helper");
  else if (setns(fds[0], CLONE_NEWNET) < 0 || setns(fds[1], CLONE_NEWIPC) < 0)
    r = setup_failed(report_fd, errno, "network: join the private namespace%s", "");
  else if (hand_over && write(net.hold, "d", 1) != 1)
    r = setup_failed(report_fd, errno, "mounts: hand over `%s`", "the old root");
  for (int i = 0; i < 2; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  if (!hand_over) {
    close(net.ready);
    close(net.hold); /* the child exits; init reaps it with the rest */
  }
  return r;
}

int ns_net_detached_apply(int report_fd) {
  struct net_result res;
  int fds[2], e = next_answer(&res, fds);
  close(net.ready);
  close(net.hold); /* the child exits; init reaps it with the rest */
  if (e || res.step != 'd')
    return setup_failed(report_fd, e ? e : EPROTO, "mounts: detach `%s`: no answer",
                        "the old root");
  if (res.err)
    return setup_failed(report_fd, res.err, "mounts: detach `%s`", "the old root");
  return 0;
}

static bool has_effective(int cap) {
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  if (syscall(SYS_capget, &hdr, data) < 0)
    return true; /* unknown: let the caller report the failure */
  return (data[cap / 32].effective >> (cap % 32)) & 1;
}

/* The bounding set limits only what an execve can gain, not what init
 * holds, so init empties it early (it needs CAP_SETPCAP, which the end of
 * ns_drop_privileges_apply takes away). */
int ns_drop_bounding_apply(int report_fd) {
  for (int cap = 0; cap <= 63; cap++)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
      if (errno == EINVAL)
        break; /* past the kernel's last capability */
      /* Without CAP_SETPCAP (an ordinary user, no user namespace: the
       * landlock-only adapter) the bounding set cannot be emptied; it
       * only limits what an execve could gain, and no_new_privs with empty
       * permitted, inheritable and ambient sets leaves nothing to gain. */
      if (errno == EPERM && !has_effective(CAP_SETPCAP))
        return 0;
      return setup_failed(report_fd, errno, "capabilities: drop bounding set%s", "");
    }
  return 0;
}

static int prctl_no_new_privs(int report_fd);

int ns_drop_privileges_apply(int report_fd) {
  /* The bounding set is already empty (ns_drop_bounding_apply); then the
   * ambient set, then the sets themselves: an execve by uid 0 inside gets
   * nothing back. */
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    return setup_failed(report_fd, errno, "capabilities: clear ambient%s", "");
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &hdr, data) < 0)
    return setup_failed(report_fd, errno, "capabilities: capset to zero%s", "");
  return prctl_no_new_privs(report_fd);
}

static int prctl_no_new_privs(int report_fd) {
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
    if (!has_effective(CAP_SETFCAP))
      snprintf(why, whylen, "root without CAP_SETFCAP cannot map itself into a user namespace");
  }
}

bool ns_available(char *why, size_t whylen) {
  unsigned long flags = ns_clone_flags(false) | ALONGSIDE;
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
