/* policy.c — `corral policy`: print the effective permission profile. */
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "cli.h"
#include "corral.h"
#include "options.h"
#include "policy_flags.h"
#include "../linux/linux.h"

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
  struct cli_sandbox sb;
  int rc = cli_sandbox_open(&pf, false, &sb);
  if (rc == 0) {
    corral_error err = {0};
    /* --unsandboxed enforces nothing: the profile says so. */
    if (pf.unsandboxed)
      corral_policy_set_enforce(sb.policy, false);
    char *json = corral_policy_profile_json(sb.policy, (const char *const *)sb.roots, sb.nroots,
                                            &err);
    json_t *profile = json ? json_loads(json, 0, NULL) : NULL;
    if (profile) {
      /* What would enforce each limit for a run with these options here. */
      char why[256] = "";
      int backend = pf.backend;
      if (!backend)
        ns_obstacle(why, sizeof why), backend = why[0] ? 2 : 1;
      json_object_set_new(profile, "limitsEnforcedBy",
                          pf.unsandboxed ? json_object()
                                         : cli_limits_json(sb.policy, backend == 1));
      char *s = json_dumps(profile, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
      printf("%s\n", s);
      free(s);
      json_decref(profile);
    } else {
      fprintf(stderr, "corral policy: %s\n", err.message);
      rc = EXIT_USAGE;
    }
    free(json);
  }
  cli_sandbox_close(&sb, &pf);
  return rc;
}
