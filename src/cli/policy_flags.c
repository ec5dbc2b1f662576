/* policy_flags.c — policy flags shared by the subcommands that run things. */
#include "policy_flags.h"

#include "cli.h"
#include "policy.h"
#include "../internal.h"
#include "../json_util.h"
#include "run_limits.h"
#include "../linux/linux.h"

#include <jansson.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* A limit's flag, from the one option table (the PF_ ids follow
 * corral_limit's order). */
static const struct cli_option *limit_flag(int which) {
  static const struct cli_option flags[] = {POLICY_FLAG_OPTIONS};
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++)
    if (flags[i].id == PF_MAX_PROCS + which - 1)
      return &flags[i];
  return &flags[0];
}

int policy_flag(struct policy_flags *pf, int id, const char *value) {
  pf->given = true;
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
  case PF_ALLOW_PROTECTED:
    return push(&pf->lists[CORRAL_POLICY_ALLOW_PROTECTED],
                &pf->nlists[CORRAL_POLICY_ALLOW_PROTECTED], value);
  case PF_READ_ROOT:
    return push(&pf->lists[CORRAL_POLICY_READ_ROOTS], &pf->nlists[CORRAL_POLICY_READ_ROOTS], value);
  case PF_NETWORK:
    if (strcmp(value, "deny") == 0)
      pf->network = 1;
    else if (strcmp(value, "allow") == 0)
      pf->network = 2;
    else if (strcmp(value, "filter") == 0)
      pf->network = 3;
    else {
      fprintf(stderr, "%s: --network: expected `deny`, `allow` or `filter`, got `%s`\n",
              cli_command, value);
      return -1;
    }
    return 0;
  case PF_ALLOW_DOMAIN:
  case PF_DENY_DOMAIN: {
    size_t len = strlen(value) + 2;
    char *e = malloc(len);
    if (!e)
      return -1;
    snprintf(e, len, "%c%s", id == PF_ALLOW_DOMAIN ? '+' : '-', value);
    if (push(&pf->domains, &pf->ndomains, e) < 0) {
      free(e);
      return -1;
    }
    return 0;
  }
  case PF_ALLOW_ADDRESS:
    return push(&pf->addresses, &pf->naddresses, value);
  case PF_NO_TEMP:
    pf->no_temp = true;
    return 0;
  case PF_READ_ONLY:
    pf->read_only = true;
    return 0;
  case PF_BLOCK_UNIX:
    pf->block_unix = true;
    return 0;
  case PF_NO_REFUSALS:
    pf->no_refusals = true;
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
      fprintf(stderr, "%s: --backend: expected `auto`, `linux` or `landlock`, got `%s`\n", cli_command,
              value);
      return -1;
    }
    return 0;
  case PF_MAX_PROCS:
  case PF_MEMORY:
  case PF_CPU_TIME:
  case PF_MAX_FILE_SIZE:
  case PF_MAX_OPEN_FILES: {
    int which = id - PF_MAX_PROCS + 1;
    const char *why = "";
    if (limits_parse((corral_limit)which, value, &pf->limits[which], &why) < 0) {
      fprintf(stderr, "%s: --%s: %s, got `%s`\n", cli_command, limit_flag(which)->name, why,
              value);
      return -1;
    }
    pf->limit_given[which] = true;
    return 0;
  }
  }
  return 1;
}

void policy_flags_free(struct policy_flags *pf) {
  for (int i = 0; i < 9; i++)
    free(pf->lists[i]);
  for (size_t i = 0; i < pf->ndomains; i++)
    free(pf->domains[i]);
  free(pf->domains);
  free(pf->addresses);
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
      fprintf(stderr, "%s: --workspace `%s`: %s\n", cli_command, pf->workspaces[i],
              strerror(errno));
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
  for (int l = 1; l < 9; l++)
    for (size_t i = 0; i < pf->nlists[l]; i++)
      corral_policy_add(p, (corral_policy_list)l, pf->lists[l][i]);
  if ((pf->ndomains || pf->naddresses) && (pf->network == 1 || pf->network == 2)) {
    fprintf(stderr, "corral: --allow-domain, --deny-domain and --allow-address need "
                    "--network filter, not `%s`\n", pf->network == 1 ? "deny" : "allow");
    corral_policy_free(p);
    return NULL;
  }
  if (pf->network == 3 || pf->ndomains)
    corral_policy_set_network_filter(p);
  else if (pf->network)
    corral_policy_set_network(p, pf->network == 2);
  for (size_t i = 0; i < pf->ndomains && r == 0; i++) {
    char entry[512];
    snprintf(entry, sizeof entry, "%s", pf->domains[i] + 1);
    char *reason = pf->domains[i][0] == '-' ? strchr(entry, '=') : NULL;
    if (reason)
      *reason++ = '\0';
    r = corral_policy_add_domain(p, entry, pf->domains[i][0] == '-', reason, &err);
  }
  for (size_t i = 0; i < pf->naddresses && r == 0; i++)
    r = corral_policy_allow_addresses(p, pf->addresses[i], &err);
  if (r < 0) {
    fprintf(stderr, "corral: %s\n", err.message);
    corral_policy_free(p);
    return NULL;
  }
  if (pf->no_temp)
    corral_policy_set_temp(p, false);
  if (pf->read_only)
    corral_policy_set_workspace_writable(p, false);
  if (pf->block_unix)
    corral_policy_set_block_unix_sockets(p, true);
  if (pf->no_refusals)
    corral_policy_set_record_refusals(p, false);
  for (int i = 1; i < CORRAL_LIMIT_COUNT; i++)
    if (pf->limit_given[i])
      corral_policy_set_limit(p, (corral_limit)i, pf->limits[i]);
  return p;
}

corral_adapter *policy_flags_adapter(const struct policy_flags *pf, const corral_policy *policy,
                                     char *why, size_t whylen) {
  if (pf->unsandboxed)
    return corral_adapter_new_direct(
        CORRAL_LEVEL_DEGRADED, pf->unsandboxed_why ? pf->unsandboxed_why
                                                   : "--unsandboxed: the caller chose to run "
                                                     "without a sandbox");
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

#define REQUEST_MAX (16 << 20)

static char *read_request(const char *file, size_t *len) {
  FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "re");
  if (!f) {
    fprintf(stderr, "corral run: --request %s: %s\n", file, strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16;
  char *buf = malloc(cap);
  *len = 0;
  while (buf) {
    size_t n = fread(buf + *len, 1, cap - *len, f);
    *len += n;
    if (n == 0 || *len > REQUEST_MAX)
      break;
    if (*len == cap) {
      char *g = realloc(buf, cap *= 2);
      if (!g)
        free(buf);
      buf = g;
    }
  }
  bool bad = !buf || ferror(f) || *len > REQUEST_MAX;
  if (f != stdin)
    fclose(f);
  if (bad) {
    fprintf(stderr, "corral run: --request %s: %s\n", file,
            !buf ? "out of memory" : *len > REQUEST_MAX ? "larger than 16 MiB" : "read error");
    free(buf);
    return NULL;
  }
  return buf;
}

/* `*path` made absolute against the request's working directory (not
 * corral's own), in the request's own storage. */
static int absolute(char **path, const char *wd) {
  if (!*path || (*path)[0] == '/' || (*path)[0] == '~')
    return 0;
  size_t n = strlen(wd) + strlen(*path) + 2;
  char *abs = malloc(n);
  if (!abs)
    return -1;
  snprintf(abs, n, "%s/%s", wd, *path);
  free(*path);
  *path = abs;
  return 0;
}

static bool under_listed(char **list, size_t n, const char *path) {
  for (size_t i = 0; i < n; i++)
    if (path_is_under(path, list[i]))
      return true;
  return false;
}

/* Why a scope cannot be taken as it is, or NULL.  A scope names the path
 * it opens: not through a symlink (the approver would see one path and the
 * sandbox open another), not a protected name's whole surroundings, not
 * every secret store at once. */

static const char *bad_scope(const corral_capability *c, const char *real) {
  char home[PATH_MAX];
  if (path_through_symlink(c->scope))
    return "it is, or goes through, a symbolic link: name the real path";
  if (c->kind == CORRAL_CAP_PROTECTED_METADATA) {
    const char *base = strrchr(real, '/');
    base = base ? base + 1 : real;
    if (strcmp(base, ".git") != 0 && strcmp(base, ".agents") != 0 &&
        strcmp(base, ".corral") != 0 && !strstr(real, "/.git/"))
      return "protected_metadata names a protected path itself (a .git, .agents or .corral)";
  }
  if (c->kind == CORRAL_CAP_FILESYSTEM_READ &&
      (strcmp(real, "/") == 0 || (user_home(home, sizeof home) && path_is_under(home, real))))
    return "it would make every secret store below it readable: name the path itself";
  return NULL;
}

/* What each capability opens; those the sandbox gives every command
 * (process_spawn, process_control, environment, isolated_loopback) need
 * nothing.  Options given on the command line win over the request. */
static int apply_capability(struct policy_flags *pf, const corral_capability *c, bool given,
                            bool network_given, bool read_only) {
  const char *scope = c->scope && *c->scope ? c->scope : NULL;
  switch (c->kind) {
  case CORRAL_CAP_EXTERNAL_NETWORK:
  case CORRAL_CAP_HOST_VISIBLE_BINDING: /* a port the host can reach: the host's network */
    if (!network_given)
      pf->network = 2;
    return 0;
  case CORRAL_CAP_WORKSPACE_WRITE:
    return scope && !read_only ? policy_flag(pf, PF_ALLOW_WRITE, scope) : 0;
  case CORRAL_CAP_FILESYSTEM_READ:
    return scope && !under_listed(pf->lists[CORRAL_POLICY_DENY_READ],
                                  pf->nlists[CORRAL_POLICY_DENY_READ], scope)
               ? policy_flag(pf, PF_ALLOW_READ, scope)
               : 0;
  case CORRAL_CAP_PROTECTED_METADATA:
    return scope ? policy_flag(pf, PF_ALLOW_PROTECTED, scope) : 0;
  case CORRAL_CAP_UNRESTRICTED:
    /* Only where the command line asked for nothing: any option of its
     * says what the sandbox must at least do. */
    if (!given) {
      pf->unsandboxed = true;
      pf->unsandboxed_why = "the request's `unrestricted` capability: no sandbox";
    }
    return 0;
  default:
    return 0;
  }
}

#define REQUEST_ROOTS_MAX 256
#define REQUEST_CAPABILITIES_MAX 1024

int cli_sandbox_from_request(struct policy_flags *pf, const char *file, struct cli_sandbox *sb,
                             corral_request *req) {
  size_t len = 0;
  char *text = read_request(file, &len);
  corral_error err = {0};
  int rc = EXIT_USAGE;
  memset(sb, 0, sizeof *sb);
  corral_request_init(req);
  if (!text)
    goto out;
  if (corral_request_from_json(text, len, req, &err) < 0 ||
      corral_request_validate(req, &err) < 0) {
    fprintf(stderr, "corral run: --request %s: %s\n", file, err.message);
    goto out;
  }
  if (req->mode != CORRAL_MODE_CAPTURED) {
    fprintf(stderr,
            "corral run: --request %s: mode `%s`: corral run runs captured commands "
            "(interactive ones: corral exec, or a session of corral mcp)\n",
            file, corral_enum_name(CORRAL_ENUM_MODE, (int)req->mode));
    goto out;
  }
  if (req->nroots > REQUEST_ROOTS_MAX || req->ncapabilities > REQUEST_CAPABILITIES_MAX) {
    fprintf(stderr, "corral run: --request %s: more than %d workspace roots or %d capabilities\n",
            file, REQUEST_ROOTS_MAX, REQUEST_CAPABILITIES_MAX);
    goto out;
  }
  /* Relative paths are the request's: against its working directory. */
  int r = 0;
  char cwd[PATH_MAX];
  const char *wd = req->working_directory[0] == '/' ? req->working_directory
                   : getcwd(cwd, sizeof cwd)          ? cwd
                                                      : "/";
  for (size_t i = 0; i < req->nroots && r == 0; i++)
    r = absolute(&req->workspace_roots[i], wd);
  for (size_t i = 0; i < req->ncapabilities && r == 0; i++) {
    corral_capability *c = &req->capabilities[i];
    r = absolute(&c->scope, wd);
    char *real = r == 0 && c->scope && *c->scope && c->scope[0] == '/' ? path_resolve(c->scope, NULL)
                                                                       : NULL;
    const char *why = real ? bad_scope(c, real) : NULL;
    if (why) {
      fprintf(stderr, "corral run: --request %s: capabilities[%zu] scope `%s`: %s\n", file, i,
              c->scope, why);
      free(real);
      goto out;
    }
    free(real);
  }
  bool given = pf->given, network_given = pf->network != 0, read_only = pf->read_only;
  for (size_t i = 0; i < req->nroots && r == 0; i++)
    r = policy_flag(pf, PF_WORKSPACE, req->workspace_roots[i]);
  for (size_t i = 0; i < req->ncapabilities && r == 0; i++)
    r = apply_capability(pf, &req->capabilities[i], given, network_given, read_only);
  if (r < 0) {
    fprintf(stderr, "corral: out of memory\n");
    goto out;
  }
  rc = cli_sandbox_open(pf, true, sb);
out:
  free(text);
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

json_t *cli_limits_json(const corral_policy *policy, bool namespaces) {
  int64_t v[CORRAL_LIMIT_COUNT];
  struct run_limits rl;
  limits_resolve(policy->limits, v);
  limits_plan(&rl, v, namespaces ? ns_clone_flags(false) : 0);
  json_t *o = json_object();
  for (int i = 1; i < CORRAL_LIMIT_COUNT; i++)
    json_object_set_new(o, limits_json_key((corral_limit)i),
                        json_string(limits_mechanism(&rl, (corral_limit)i)));
  return o;
}

void cli_report_outcome(const corral_outcome *o) {
  /* Classification gives an ordinary failure of the command no message:
   * one that has one is worth saying. */
  bool say = o->message && o->kind != CORRAL_KIND_SUCCESS;
  /* Each refusal in one line, after the command's own output. */
  for (size_t i = 0; i < o->ndenials; i++) {
    const corral_denial *d = &o->denials[i];
    const char *scope = d->capability.scope ? d->capability.scope : "";
    bool unlisted = d->reason && strstr(d->reason, "not in the policy's allowed domains");
    char times[32] = "";
    if (d->count > 1)
      snprintf(times, sizeof times, " (%ld times)", d->count);
    /* The names in it are normalised host names; shown safely all the same. */
    char line[1200];
    snprintf(line, sizeof line, "%s%s%s%s", d->reason ? d->reason : scope, times,
             unlisted ? "; allow with --allow-domain " : "", unlisted ? scope : "");
    fputs("corral: ", stderr);
    fputs_for_terminal(line, stderr);
    fputc('\n', stderr);
    if (say && d->reason && strcmp(d->reason, o->message) == 0)
      say = false; /* said just now */
  }
  if (o->denials_dropped)
    fprintf(stderr, "corral: and %ld more refusals not listed\n", o->denials_dropped);
  if (say && o->limit.present && o->limit.which > 0 && o->limit.which < CORRAL_LIMIT_COUNT)
    fprintf(stderr, "corral: %s (raise it with --%s)\n", o->message,
            limit_flag((int)o->limit.which)->name);
  else if (say)
    fprintf(stderr, "corral: %s\n", o->message);
}
