/*
 * seccomp_rules.c — the sandbox's seccomp program, compiled by libseccomp
 * (it gets the architecture checks and the x32 ABI right): ptrace, reading
 * or writing another process's memory, io_uring (which bypasses seccomp),
 * terminal injection, keyrings, bpf, other processes' limits, priority and
 * scheduling, and —
 * when the policy asks — creating Unix sockets
 * or, for the landlock-only adapter, any other socket.
 *
 * The build runs this through tools/seccomp-gen.c and embeds the result
 * (seccomp.c); at run time it is only the fallback.  So it depends on
 * nothing but libseccomp and error.c.
 */
#include <fcntl.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../internal.h"
#include "seccomp_rules.h"

static int add_native_arches(scmp_filter_ctx ctx) {
  /* Every ABI this machine can execute gets the same rules: a 32-bit or
   * x32 binary must not be a way around them. */
#if defined(__x86_64__)
  static const uint32_t extra[] = {SCMP_ARCH_X86, SCMP_ARCH_X32};
#elif defined(__aarch64__)
  static const uint32_t extra[] = {SCMP_ARCH_ARM};
#else
  static const uint32_t extra[] = {0};
#endif
  for (size_t i = 0; i < ARRAY_SIZE(extra); i++) {
    if (!extra[i])
      continue;
    int r = seccomp_arch_add(ctx, extra[i]);
    if (r < 0 && r != -EEXIST)
      return r;
  }
  return 0;
}

int seccomp_compile(bool block_unix, bool deny_inet, struct sock_fprog *prog, corral_error *err) {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx)
    return error_set(err, CORRAL_ESETUP, 0, "seccomp: init failed");
  int r = add_native_arches(ctx);
  const uint32_t deny = SCMP_ACT_ERRNO(EPERM);
  /* The keyring calls reach the caller's user keyring, which a user
   * namespace does not replace for a root caller's uid 0 (and init gives
   * the command a new session keyring besides).  bpf: pinned maps and
   * programs under /sys/fs/bpf are opened by file permission alone, which
   * a root caller's uid 0 passes, and a map updated that way acts on the
   * host.  pidfd_getfd takes another process's descriptors. */
  static const char *const denied[] = {
      "ptrace",         "process_vm_readv", "process_vm_writev", "io_uring_setup",
      "io_uring_enter", "io_uring_register", "keyctl",           "add_key",
      "request_key",    "bpf",               "pidfd_getfd"};
  for (size_t i = 0; i < ARRAY_SIZE(denied) && r == 0; i++) {
    int nr = seccomp_syscall_resolve_name(denied[i]);
    if (nr != __NR_SCMP_ERROR)
      r = seccomp_rule_add(ctx, deny, nr, 0);
  }
  /* ioctl's request is an int: compare the low 32 bits only. */
  if (r == 0)
    r = seccomp_rule_add(ctx, deny, SCMP_SYS(ioctl), 1,
                         SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI));
  if (r == 0)
    r = seccomp_rule_add(ctx, deny, SCMP_SYS(ioctl), 1,
                         SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX));
  /* Another process's resource limits, priority and scheduling: changing
   * them needs only the same uid, and no scoping covers them.  In the
   * sandbox's pid namespace the only other process is corral's init (pid
   * 1), whose watch holds the run to its limits: a lowered limit, SCHED_IDLE
   * or one CPU would cripple it, so those aimed at pid 1 are refused, and
   * a process may still renice itself or its children by pid.  Without a
   * pid namespace (the landlock-only adapter, the only one that asks for
   * deny_inet) every other pid may be the host's — corral's supervisor, the
   * agent — so only a process's own (pid or who 0) are allowed.  A whole
   * user's priority (PRIO_USER, IOPRIO_WHO_USER) reaches init, or the
   * host, either way.  Reading stays allowed. */
  const bool pid_ns = !deny_inet;
  /* The kernel takes a pid_t's low 32 bits: so does the comparison with
   * init's pid (a pid of (1 << 32) | 1 is init too).  Without a pid
   * namespace, any other bit set is refused, which only refuses more. */
  const struct scmp_arg_cmp other_a0 =
      pid_ns ? SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, 1) : SCMP_A0(SCMP_CMP_NE, 0);
  const struct scmp_arg_cmp other_a1 =
      pid_ns ? SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, 1) : SCMP_A1(SCMP_CMP_NE, 0);
  if (r == 0)
    r = seccomp_rule_add(ctx, deny, SCMP_SYS(prlimit64), 2, other_a0, SCMP_A2(SCMP_CMP_NE, 0));
  if (r == 0)
    r = seccomp_rule_add(ctx, deny, SCMP_SYS(setpriority), 1, other_a1);
  if (r == 0)
    r = seccomp_rule_add(ctx, deny, SCMP_SYS(setpriority), 1, SCMP_A0(SCMP_CMP_EQ, 2 /* PRIO_USER */));
  if (r == 0)
    r = seccomp_rule_add(ctx, deny, SCMP_SYS(ioprio_set), 1, other_a1);
  if (r == 0)
    r = seccomp_rule_add(ctx, deny, SCMP_SYS(ioprio_set), 1,
                         SCMP_A0(SCMP_CMP_EQ, 3 /* IOPRIO_WHO_USER */));
  static const char *const sched[] = {"sched_setscheduler", "sched_setparam",
                                      "sched_setaffinity", "sched_setattr"};
  for (size_t i = 0; i < ARRAY_SIZE(sched) && r == 0; i++) {
    int nr = seccomp_syscall_resolve_name(sched[i]);
    if (nr != __NR_SCMP_ERROR)
      r = seccomp_rule_add(ctx, deny, nr, 1, other_a0);
  }
  if (r == 0 && block_unix)
    r = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
  if (r == 0 && deny_inet)
    r = seccomp_rule_add(ctx, deny, SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX));
  if (r < 0) {
    seccomp_release(ctx);
    return error_set(err, CORRAL_ESETUP, -r, "seccomp: adding rules: %s", strerror(-r));
  }
  /* libseccomp 2.5 exports BPF only to a descriptor. */
  int fd = memfd_create("corral-seccomp", MFD_CLOEXEC);
  if (fd < 0) {
    seccomp_release(ctx);
    return error_sys(err, "seccomp: memfd_create");
  }
  r = seccomp_export_bpf(ctx, fd);
  seccomp_release(ctx);
  off_t size = lseek(fd, 0, SEEK_END);
  if (r < 0 || size <= 0 || size % sizeof(struct sock_filter)) {
    close(fd);
    return error_set(err, CORRAL_ESETUP, 0, "seccomp: exporting the program failed");
  }
  struct sock_filter *f = malloc((size_t)size);
  if (!f || pread(fd, f, (size_t)size, 0) != size) {
    free(f);
    close(fd);
    return error_set(err, CORRAL_ESETUP, 0, "seccomp: reading the program back failed");
  }
  close(fd);
  prog->filter = f;
  prog->len = (unsigned short)(size / sizeof(struct sock_filter));
  return 0;
}

