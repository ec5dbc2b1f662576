/* policy_flags.c — policy flags shared by the subcommands that run things. */
#include "policy_flags.h"

#include "cli.h"
#include "policy.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int push(char ***v, size_t *n, const char *s) {
  char **g = realloc(*v, (*n + 2) * sizeof **v);
  if (!g)
    return -1;
  *v = g;
  g[(*n)++] = (char *)s;
  g[*n] = NULL;
  return 0;
}

int policy_flag(struct policy_flags *pf, int id, const char *value) {
  switch (id) {
  case PF_POLICY:
    pf->policy_file = value;
    return 0;
  case PF_WORKSPACE:
    return push(&pf->workspaces, &pf->nworkspaces, value);
  case PF_ALLOW_WRITE:
    return push(&pf->lists[CORRAL_POLICY_ALLOW_WRITE], &pf->nlists[CORRAL_POLICY_ALLOW_WRITE], value);
  case PF_DENY_WRITE:
    return push(&pf->lists[CORRAL_POLICY_DENY_WRITE], &pf->nlists[CORRAL_POLICY_DENY_WRITE], value);
  case PF_DENY_READ:
    return push(&pf->lists[CORRAL_POLICY_DENY_READ], &pf->nlists[CORRAL_POLICY_DENY_READ], value);
  case PF_ALLOW_READ:
    return push(&pf->lists[CORRAL_POLICY_ALLOW_READ], &pf->nlists[CORRAL_POLICY_ALLOW_READ], value);
  case PF_READ_ROOT:
    return push(&pf->lists[CORRAL_POLICY_READ_ROOTS], &pf->nlists[CORRAL_POLICY_READ_ROOTS], value);
  case PF_NETWORK:
    if (strcmp(value, "deny") == 0)
      pf->network = 1;
    else if (strcmp(value, "allow") == 0)
      pf->network = 2;
    else {
      fprintf(stderr, "corral: --network: expected `deny` or `allow`, got `%s`\n", value);
      return -1;
    }
    return 0;
  case PF_NO_TEMP:
    pf->no_temp = true;
    return 0;
  case PF_READ_ONLY:
    pf->read_only = true;
    return 0;
  case PF_BLOCK_UNIX:
    pf->block_unix = true;
    return 0;
  case PF_ALLOW_DEGRADED:
    pf->allow_degraded = true;
    return 0;
  case PF_UNSANDBOXED:
    pf->unsandboxed = true;
    return 0;
  case PF_BACKEND:
    if (strcmp(value, "auto") == 0)
      pf->backend = 0;
    else if (strcmp(value, "linux") == 0)
      pf->backend = 1;
    else if (strcmp(value, "landlock") == 0)
      pf->backend = 2;
    else {
      fprintf(stderr, "corral: --backend: expected `auto`, `linux` or `landlock`, got `%s`\n",
              value);
      return -1;
    }
    return 0;
  }
  return 1;
}

void policy_flags_free(struct policy_flags *pf) {
  for (int i = 0; i < 8; i++)
    free(pf->lists[i]);
  free(pf->workspaces);
}

int policy_flags_roots(const struct policy_flags *pf, char ***roots, size_t *nroots) {
  *roots = NULL;
  *nroots = 0;
  if (pf->nworkspaces == 0) {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) {
      fprintf(stderr, "corral: cannot determine the current directory: %s\n", strerror(errno));
      return -1;
    }
    char *s = strdup(cwd);
    return s ? push(roots, nroots, s) : -1;
  }
  for (size_t i = 0; i < pf->nworkspaces; i++) {
    char *real = realpath(pf->workspaces[i], NULL);
    if (!real) {
      fprintf(stderr, "corral: --workspace `%s`: %s\n", pf->workspaces[i], strerror(errno));
      return -1;
    }
    if (push(roots, nroots, real) < 0)
      return -1;
  }
  return 0;
}

/* The user's policy file is skipped when it lies inside a workspace: a
 * repository must not be able to loosen its own sandbox. */
static bool inside_any(const char *path, char **roots, size_t n) {
  char real[PATH_MAX];
  if (!realpath(path, real))
    return false;
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(roots[i]);
    if (strncmp(real, roots[i], len) == 0 && (real[len] == '/' || real[len] == '\0'))
      return true;
  }
  return false;
}

corral_policy *policy_flags_build(const struct policy_flags *pf, char **roots, size_t nroots) {
  corral_policy *p = corral_policy_new();
  corral_error err = {0};
  if (!p) {
    fprintf(stderr, "corral: out of memory\n");
    return NULL;
  }
  int r = 0;
  if (pf->policy_file) {
    r = corral_policy_load_file(p, pf->policy_file, &err);
  } else {
    char path[PATH_MAX];
    if (user_policy_path(path, sizeof path) && access(path, F_OK) == 0) {
      if (inside_any(path, roots, nroots))
        fprintf(stderr, "corral: ignoring `%s`: it lies inside the workspace\n", path);
      else
        r = corral_policy_load_file(p, path, &err);
    }
  }
  if (r < 0) {
    fprintf(stderr, "corral: %s\n", err.message);
    corral_policy_free(p);
    return NULL;
  }
  for (int l = 1; l < 8; l++)
    for (size_t i = 0; i < pf->nlists[l]; i++)
      corral_policy_add(p, (corral_policy_list)l, pf->lists[l][i]);
  if (pf->network)
    corral_policy_set_network(p, pf->network == 2);
  if (pf->no_temp)
    corral_policy_set_temp(p, false);
  if (pf->read_only)
    corral_policy_set_workspace_writable(p, false);
  if (pf->block_unix)
    corral_policy_set_block_unix_sockets(p, true);
  return p;
}

corral_adapter *policy_flags_adapter(const struct policy_flags *pf, const corral_policy *policy,
                                     char *why, size_t whylen) {
  if (pf->unsandboxed)
    return corral_adapter_new_direct(CORRAL_LEVEL_DEGRADED,
                                     "--unsandboxed: the caller chose to run without a sandbox");
  corral_error err = {0};
  unsigned flags = pf->allow_degraded ? CORRAL_ALLOW_DEGRADED : 0;
  corral_adapter *ad = pf->backend == 1   ? corral_adapter_new_linux(policy, &err)
                       : pf->backend == 2 ? corral_adapter_new_landlock(policy, flags, &err)
                                          : corral_adapter_new_default(policy, flags, &err);
  if (!ad)
    snprintf(why, whylen, "no sandbox can be set up: %s", err.message);
  return ad;
}

int cli_sandbox_open(const struct policy_flags *pf, bool with_adapter, struct cli_sandbox *sb) {
  memset(sb, 0, sizeof *sb);
  if (policy_flags_roots(pf, &sb->roots, &sb->nroots) < 0)
    return EXIT_USAGE;
  sb->policy = policy_flags_build(pf, sb->roots, sb->nroots);
  if (!sb->policy)
    return EXIT_USAGE;
  if (with_adapter) {
    /* Fail closed: without an adapter nothing runs, and the outcome says why. */
    char why[1200] = "";
    sb->adapter = policy_flags_adapter(pf, sb->policy, why, sizeof why);
    if (!sb->adapter)
      fprintf(stderr, "corral: %s\n", why);
  }
  return 0;
}

int cli_sandbox_request(const struct cli_sandbox *sb, corral_mode mode, int argc, char **argv,
                        corral_request *req) {
  char cwd[PATH_MAX];
  corral_request_init(req);
  if (!getcwd(cwd, sizeof cwd)) {
    fprintf(stderr, "corral: cannot determine the current directory: %s\n", strerror(errno));
    return -1;
  }
  req->origin = CORRAL_ORIGIN_INTERACTIVE_COMMAND;
  req->mode = mode;
  int r = corral_request_set_command(req, argv[0], (const char *const *)argv + 1,
                                     (size_t)argc - 1);
  r = r < 0 ? r : corral_request_set_working_directory(req, cwd);
  for (size_t i = 0; r >= 0 && i < sb->nroots; i++)
    r = corral_request_add_workspace_root(req, sb->roots[i]);
  if (r < 0) {
    fprintf(stderr, "corral: out of memory\n");
    return -1;
  }
  return 0;
}

int cli_sandbox_prepare(struct policy_flags *pf, corral_mode mode, int argc, char **argv,
                        struct cli_sandbox *sb, corral_request *req) {
  corral_request_init(req);
  int rc = cli_sandbox_open(pf, true, sb);
  if (rc == 0 && cli_sandbox_request(sb, mode, argc, argv, req) < 0)
    rc = EXIT_SETUP;
  if (rc) {
    cli_sandbox_close(sb, pf);
    corral_request_free(req);
  }
  return rc;
}

void cli_sandbox_close(struct cli_sandbox *sb, struct policy_flags *pf) {
  corral_adapter_free(sb->adapter);
  corral_policy_free(sb->policy);
  for (size_t i = 0; i < sb->nroots; i++)
    free(sb->roots[i]);
  free(sb->roots);
  memset(sb, 0, sizeof *sb);
  policy_flags_free(pf);
}

void cli_report_outcome(const corral_outcome *o) {
  bool say = o->message && (o->kind != CORRAL_KIND_SUCCESS &&
                            (o->kind != CORRAL_KIND_APPLICATION_FAILURE || !o->launched));
  if (say)
    fprintf(stderr, "corral: %s\n", o->message);
}
