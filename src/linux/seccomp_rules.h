/* seccomp_rules.h — compiling the sandbox's seccomp program (libseccomp). */
#ifndef CORRAL_SECCOMP_RULES_H
#define CORRAL_SECCOMP_RULES_H

#include <linux/filter.h>
#include <stdbool.h>

#include "corral.h"

/* block_unix: no AF_UNIX socket; deny_inet: no socket other than AF_UNIX.
 * prog->filter is malloc'd. */
int seccomp_compile(bool block_unix, bool deny_inet, struct sock_fprog *prog, corral_error *err);

#endif
