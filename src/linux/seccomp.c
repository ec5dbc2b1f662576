/*
 * seccomp.c — the seccomp program (seccomp_rules.c) as the build compiled
 * it, and loading it in init, last, after every other step.
 *
 * Compiling with libseccomp costs a fresh process about 80 us, a fair part
 * of a sandboxed `true`; the build compiles every variant once, with the
 * same code, and embeds them.  A build without them (cross-compiled)
 * compiles at run time.
 */
#include <linux/seccomp.h>
#include <sys/prctl.h>

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

int seccomp_apply(const struct sock_fprog *prog, int report_fd) {
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0) < 0)
    return setup_failed(report_fd, errno, "seccomp: load the filter%s", "");
  return 0;
}
