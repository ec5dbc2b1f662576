/*
 * doctor.c — `corral doctor`: what this kernel offers, which adapter the
 * default policy gets, and whether it really enforces (a sandboxed `true`
 * is run to find out: a check that cannot lie).  Exit 0 only then.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <linux/sched.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "corral.h"
#include "linux/linux.h"
#include "options.h"
#include "policy_flags.h"

enum { OPT_JSON = 1 };
static const struct cli_option doctor_options[] = {
    {"json", NULL, OPT_JSON, "print the report as JSON"},
};
static const char doctor_usage[] =
    "usage: corral doctor [--json]\n"
    "Reports what this kernel offers for sandboxing, which adapter the default\n"
    "policy would use, and what each adapter can enforce here.  Exit 0 only when\n"
    "the default policy can be enforced.";

static int on_option(void *ctx, int id, const char *value) {
  (void)value;
  if (id == OPT_JSON)
    *(bool *)ctx = true;
  return 0;
}

/* Runs `fn` in a throwaway child; true when it exits 0. */
static bool probe(int (*fn)(void)) {
  pid_t pid = fork();
  if (pid < 0)
    return false;
  if (pid == 0)
    _exit(fn() == 0 ? 0 : 1);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static int try_netns(void) { return unshare(CLONE_NEWUSER | CLONE_NEWNET); }
static int try_pidfd(void) { return syscall(SYS_pidfd_open, getpid(), 0) < 0 ? -1 : 0; }

/* Runs `true` through the adapter; fills level/backend/message. */
static bool enforces(corral_adapter *ad, json_t *out) {
  char cwd[PATH_MAX];
  if (!ad || !getcwd(cwd, sizeof cwd))
    return false;
  corral_request req;
  corral_request_init(&req);
  req.origin = CORRAL_ORIGIN_INTERACTIVE_COMMAND;
  req.mode = CORRAL_MODE_CAPTURED;
  corral_request_set_command(&req, "true", NULL, 0);
  corral_request_set_working_directory(&req, cwd);
  corral_request_add_workspace_root(&req, cwd);
  corral_run_options o;
  corral_run_options_init(&o);
  o.request = &req;
  o.adapter = ad;
  o.timeout_ms = 10000;
  corral_result res;
  bool ok = false;
  if (corral_run(&o, &res, NULL) == 0) {
    const corral_outcome *oc = &res.outcome;
    ok = oc->kind == CORRAL_KIND_SUCCESS && oc->enforcement.level == CORRAL_LEVEL_NATIVE;
    json_object_set_new(out, "check", json_string(corral_enum_name(CORRAL_ENUM_KIND, (int)oc->kind)));
    if (oc->message)
      json_object_set_new(out, "message", json_string(oc->message));
  }
  corral_result_free(&res);
  corral_request_free(&req);
  return ok;
}

static json_t *features(const char *names[], const bool values[], size_t n) {
  json_t *o = json_object();
  for (size_t i = 0; i < n; i++)
    json_object_set_new(o, names[i], json_boolean(values[i]));
  return o;
}

int cmd_doctor(int argc, char **argv) {
  bool as_json = false;
  int first = cli_parse("corral doctor", doctor_usage, doctor_options, 1, argc, argv, on_option,
                        &as_json);
  if (first == -2)
    return 0;
  if (first < 0)
    return EXIT_USAGE;
  if (first < argc) {
    fprintf(stderr, "corral doctor: unexpected argument `%s`\nTry `corral doctor --help`.\n",
            argv[first]);
    return EXIT_USAGE;
  }
  char why[256] = "", obstacle[256];
  bool userns = ns_available(why, sizeof why);
  ns_obstacle(obstacle, sizeof obstacle);
  int abi = landlock_abi_version();
  errno = 0;
  bool seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 || errno != EINVAL;
  bool netns = probe(try_netns);
  bool pidfd = probe(try_pidfd);
  struct stat st;
  bool cgroup2 = stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0;

  json_t *report = json_object();
  json_t *kernel = json_object();
  json_object_set_new(kernel, "userNamespaces", json_boolean(userns && !obstacle[0]));
  if (!userns || obstacle[0])
    json_object_set_new(kernel, "userNamespacesReason", json_string(obstacle[0] ? obstacle : why));
  json_object_set_new(kernel, "landlockAbi", json_integer(abi));
  json_object_set_new(kernel, "seccomp", json_boolean(seccomp));
  json_object_set_new(kernel, "networkNamespaces", json_boolean(netns));
  json_object_set_new(kernel, "pidfd", json_boolean(pidfd));
  json_object_set_new(kernel, "cgroupV2", json_boolean(cgroup2));
  json_object_set_new(report, "kernel", kernel);

  static const char *fnames[] = {"writes",       "network",       "processIsolation",
                                 "signalScoping", "denyRead",      "restrictedReads",
                                 "readOnlyPaths", "protectedNames", "syscallFilter",
                                 "networkFilter"};
  bool linux_ok = userns && !obstacle[0] && netns;
  bool lin[] = {linux_ok, linux_ok, linux_ok, linux_ok, linux_ok,
                linux_ok, linux_ok, linux_ok, linux_ok && seccomp, linux_ok};
  bool ll = abi > 0;
  /* networkFilter: the proxies need a network namespace of the sandbox's own. */
  bool lan[] = {ll, seccomp, false, abi >= 6, ll, ll, false, ll, seccomp, false};
  json_t *adapters = json_object();
  json_object_set_new(adapters, "linux", features(fnames, lin, sizeof fnames / sizeof *fnames));
  json_object_set_new(adapters, "landlock", features(fnames, lan, sizeof fnames / sizeof *fnames));
  json_object_set_new(report, "adapters", adapters);

  corral_policy *policy = corral_policy_new();
  corral_error err = {0};
  corral_adapter *ad = corral_adapter_new_default(policy, 0, &err);
  json_t *def = json_object();
  json_object_set_new(def, "adapter", ad ? json_string(corral_adapter_name(ad)) : json_null());
  bool ok = enforces(ad, def);
  json_object_set_new(def, "enforced", json_boolean(ok));
  /* The limits of the default policy, and what holds each on this machine
   * (no cgroup: the kernel's per-namespace limits and init's watch need
   * none, so every caller gets the same). */
  json_t *limits = json_object();
  int64_t lv[CORRAL_LIMIT_COUNT];
  limits_resolve(policy->limits, lv);
  json_t *by = cli_limits_json(policy, ad && strcmp(corral_adapter_name(ad), "linux") == 0);
  for (int i = 1; i < CORRAL_LIMIT_COUNT; i++) {
    const char *key = limits_json_key((corral_limit)i);
    json_object_set_new(limits, key,
                        json_pack("{s:o,s:O}", "value",
                                  lv[i] ? json_integer(limits_value(lv, (corral_limit)i))
                                        : json_string("none"),
                                  "enforcedBy", json_object_get(by, key)));
  }
  json_decref(by);
  json_object_set_new(def, "limits", limits);
  json_object_set_new(report, "defaultPolicy", def);
  corral_adapter_free(ad);
  corral_policy_free(policy);

  if (as_json) {
    char *s = json_dumps(report, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    printf("%s\n", s);
    free(s);
  } else {
    printf("kernel\n");
    const char *key;
    json_t *v;
    json_object_foreach(kernel, key, v) {
      if (json_is_string(v))
        printf("  %-22s %s\n", key, json_string_value(v));
      else if (json_is_integer(v))
        printf("  %-22s %lld\n", key, (long long)json_integer_value(v));
      else
        printf("  %-22s %s\n", key, json_is_true(v) ? "yes" : "no");
    }
    printf("\n%-20s %-8s %-8s\n", "feature", "linux", "landlock");
    for (size_t i = 0; i < sizeof fnames / sizeof *fnames; i++)
      printf("%-20s %-8s %-8s\n", fnames[i], lin[i] ? "yes" : "no", lan[i] ? "yes" : "no");
    printf("\n");
    json_t *lim;
    json_object_foreach(json_object_get(def, "limits"), key, lim) {
      json_t *value = json_object_get(lim, "value");
      char num[32];
      if (json_is_integer(value))
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(value));
      printf("limit %-14s %-14s %s\n", key, json_is_integer(value) ? num : "none",
             json_string_value(json_object_get(lim, "enforcedBy")));
    }
    json_t *msg = json_object_get(def, "message");
    printf("\ndefault policy: adapter %s, %s%s%s\n", ad ? json_string_value(json_object_get(def, "adapter")) : "none",
           ok ? "enforced" : "NOT enforced", msg ? ": " : "", msg ? json_string_value(msg) : "");
  }
  json_decref(report);
  return ok ? 0 : 1;
}
