/* policy.c — `corral policy`: print the effective permission profile. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "corral.h"
#include "options.h"
#include "policy_flags.h"

static const struct cli_option policy_options[] = {POLICY_FLAG_OPTIONS};

static const char policy_usage[] =
    "usage: corral policy [options]\n"
    "Prints the permission profile that `corral run` with the same options would\n"
    "enforce, as JSON (paths absolute, `~` expanded, symlinks resolved).";

static int on_option(void *ctx, int id, const char *value) {
  return policy_flag(ctx, id, value) == 0 ? 0 : -1;
}

int cmd_policy(int argc, char **argv) {
  struct policy_flags pf = {0};
  int first = cli_parse("corral policy", policy_usage, policy_options,
                        sizeof policy_options / sizeof policy_options[0], argc, argv, on_option,
                        &pf);
  if (first == -2)
    return 0;
  if (first < 0)
    return EXIT_USAGE;
  if (first < argc) {
    fprintf(stderr, "corral policy: unexpected argument `%s`\nTry `corral policy --help`.\n",
            argv[first]);
    policy_flags_free(&pf);
    return EXIT_USAGE;
  }
  char **roots;
  size_t nroots;
  int rc = EXIT_USAGE;
  if (policy_flags_roots(&pf, &roots, &nroots) == 0) {
    corral_policy *p = policy_flags_build(&pf, roots, nroots);
    corral_error err = {0};
    char *json = p ? corral_policy_profile_json(p, (const char *const *)roots, nroots, &err) : NULL;
    if (json) {
      printf("%s\n", json);
      rc = 0;
    } else if (p) {
      fprintf(stderr, "corral policy: %s\n", err.message);
    }
    free(json);
    corral_policy_free(p);
    for (size_t i = 0; i < nroots; i++)
      free(roots[i]);
    free(roots);
  }
  policy_flags_free(&pf);
  return rc;
}
