/*
 * seccomp.c — the seccomp program (seccomp_rules.c) as the build compiled
 * it, and loading it in init, last, after every other step.
 *
 * Compiling with libseccomp costs a fresh process about 80 us, a fair part
 * of a sandboxed `true`; the build compiles every variant once, with the
 * same code, and embeds them.  A build without them (cross-compiled)
 * compiles at run time.
 */
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "../internal.h"
#include "../launch.h"
#include "linux.h"
#include "seccomp_rules.h"

#ifdef CORRAL_EMBEDDED_SECCOMP
#include "seccomp_programs.h"
#endif

int seccomp_program(const struct profile *pr, bool deny_inet, struct sock_fprog *prog,
                    corral_error *err) {
#ifdef CORRAL_EMBEDDED_SECCOMP
  for (size_t i = 0; i < ARRAY_SIZE(seccomp_programs); i++) {
    const struct embedded_program *e = &seccomp_programs[i];
    if (e->block_unix != pr->block_unix || e->deny_inet != deny_inet)
      continue;
    prog->filter = malloc(e->len * sizeof *e->insns);
    if (!prog->filter)
      return error_set(err, -ENOMEM, ENOMEM, "out of memory");
    memcpy(prog->filter, e->insns, e->len * sizeof *e->insns);
    prog->len = e->len;
    return 0;
  }
#endif
  return seccomp_compile(pr->block_unix, deny_inet, prog, err);
}

/* Ids outside the namespace's map: the kernel says EINVAL (it cannot name
 * them), where an unprivileged process on a real machine gets EPERM —
 * and programs (CPython's own tests among them) tell the two apart.  This
 * fragment, put before libseccomp's program, answers EPERM for a set*id or
 * chown call naming an id other than the caller's own (or -1, "unchanged").
 * It checks the native ABI only; its jumps stay inside it, and it ends by
 * falling through to the program, whose own jumps it does not move.  Whole
 * syscalls outside [first, last] id call leave after three instructions,
 * and the kernel's cache of always-allowed calls still applies. */
struct id_arg {
  int nr;
  unsigned char arg; /* which argument */
  bool gid;          /* compared with the gid, else the uid */
};

static const struct id_arg id_args[] = {
#ifdef __NR_setuid
    {__NR_setuid, 0, false},    {__NR_setgid, 0, true},     {__NR_setreuid, 0, false},
    {__NR_setreuid, 1, false},  {__NR_setregid, 0, true},   {__NR_setregid, 1, true},
    {__NR_setresuid, 0, false}, {__NR_setresuid, 1, false}, {__NR_setresuid, 2, false},
    {__NR_setresgid, 0, true},  {__NR_setresgid, 1, true},  {__NR_setresgid, 2, true},
#ifdef __NR_chown
    {__NR_chown, 1, false},     {__NR_chown, 2, true},      {__NR_lchown, 1, false},
    {__NR_lchown, 2, true},
#endif
    {__NR_fchown, 1, false},    {__NR_fchown, 2, true},     {__NR_fchownat, 2, false},
    {__NR_fchownat, 3, true},
#endif
};

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

int seccomp_add_id_checks(struct sock_fprog *prog, uid_t uid, gid_t gid) {
#ifdef NATIVE_ARCH
  enum { PER_CHECK = 6 };
  const size_t n = ARRAY_SIZE(id_args), frag = 5 + n * PER_CHECK;
  int lo = id_args[0].nr, hi = id_args[0].nr;
  for (size_t i = 1; i < n; i++) {
    if (id_args[i].nr < lo)
      lo = id_args[i].nr;
    if (id_args[i].nr > hi)
      hi = id_args[i].nr;
  }
  struct sock_filter *f = malloc((frag + prog->len) * sizeof *f);
  if (!f)
    return -ENOMEM;
  size_t k = 0;
  /* Jumps are relative to the next instruction; `end` is the first one
   * after the fragment. */
#define TO_END(at) ((unsigned char)(frag - (at) - 1))
  f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  f[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 0, TO_END(k)), k++;
  f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  f[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (unsigned)lo, 0, TO_END(k)), k++;
  f[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, (unsigned)hi, TO_END(k), 0), k++;
  for (size_t i = 0; i < n; i++) {
    const struct id_arg *a = &id_args[i];
    unsigned id = a->gid ? (unsigned)gid : (unsigned)uid;
    /* nr, then the argument's low 32 bits (the kernel's uid_t): the caller's
     * id or -1 pass on to the next check, anything else is EPERM. */
    f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)a->nr, 0, 4);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                          offsetof(struct seccomp_data, args[a->arg]));
    f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, id, 2, 0);
    f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, 1, 0);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
  }
#undef TO_END
  memcpy(f + frag, prog->filter, prog->len * sizeof *f);
  free(prog->filter);
  prog->filter = f;
  prog->len = (unsigned short)(frag + prog->len);
#else
  (void)prog, (void)uid, (void)gid;
#endif
  return 0;
}

int seccomp_apply(const struct sock_fprog *prog, int report_fd) {
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0) < 0)
    return setup_failed(report_fd, errno, "seccomp: load the filter%s", "");
  return 0;
}
