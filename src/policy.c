/*
 * policy.c — policies, their JSON file form, and the profile they resolve to.
 *
 * Resolution rules:
 *  1. every path is made absolute, `~` expanded, symlinks resolved (so a
 *     symlink in a policy cannot point a rule somewhere else later);
 *  2. write roots = workspace roots (unless read-only) + allowWrite + /tmp and
 *     $TMPDIR (unless temp is off);
 *  3. read roots default to "/"; without "/" the filesystem is restricted to
 *     the platform roots, the read roots and the write roots.
 */
#include "policy.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "internal.h"
#include "json_util.h"

static const char *const default_protected[] = {".agents", ".corral"};
static const char *const platform_candidates[] = {"/bin", "/sbin", "/usr", "/etc", "/lib",
                                                  "/lib32", "/lib64", "/libx32"};

int path_list_add(struct path_list *l, const char *s) { return strv_push(&l->v, &l->n, s); }

bool path_list_has(const struct path_list *l, const char *s) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->v[i], s) == 0)
      return true;
  return false;
}

void path_list_free(struct path_list *l) {
  strv_free(l->v, l->n);
  l->v = NULL;
  l->n = 0;
}

bool path_is_under(const char *path, const char *root) {
  size_t n = strlen(root);
  if (n == 1 && root[0] == '/')
    return path[0] == '/';
  return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

corral_policy *corral_policy_new(void) {
  corral_policy *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->enforce = true;
  p->temp = true;
  p->workspace_writable = true;
  return p;
}

void corral_policy_free(corral_policy *p) {
  if (!p)
    return;
  for (int i = 0; i < POLICY_NLISTS; i++)
    path_list_free(&p->lists[i]);
  free(p);
}

corral_policy *policy_copy(const corral_policy *src) {
  corral_policy *p = corral_policy_new();
  if (!p)
    return NULL;
  if (src) {
    *p = *src;
    for (int i = 0; i < POLICY_NLISTS; i++) {
      p->lists[i].v = strv_copy((const char *const *)src->lists[i].v, src->lists[i].n);
      if (!p->lists[i].v) {
        for (int k = 0; k < i; k++)
          path_list_free(&p->lists[k]);
        free(p);
        return NULL;
      }
    }
  }
  return p;
}

int corral_policy_add(corral_policy *p, corral_policy_list list, const char *value) {
  if (list < 1 || list >= POLICY_NLISTS || !value)
    return -EINVAL;
  if (list == CORRAL_POLICY_PROTECTED_NAMES)
    p->protected_set = true;
  return path_list_add(&p->lists[list], value);
}

void corral_policy_clear(corral_policy *p, corral_policy_list list) {
  if (list < 1 || list >= POLICY_NLISTS)
    return;
  path_list_free(&p->lists[list]);
  if (list == CORRAL_POLICY_PROTECTED_NAMES)
    p->protected_set = true;
}

void corral_policy_set_enforce(corral_policy *p, bool v) { p->enforce = v; }
void corral_policy_set_network(corral_policy *p, bool v) { p->network_allow = v; }
void corral_policy_set_block_unix_sockets(corral_policy *p, bool v) { p->block_unix = v; }
void corral_policy_set_temp(corral_policy *p, bool v) { p->temp = v; }
void corral_policy_set_workspace_writable(corral_policy *p, bool v) { p->workspace_writable = v; }

/* ---------------------------------------------------------- the file */

static const struct {
  const char *key;
  corral_policy_list list;
} list_fields[] = {
    {"allowRead", CORRAL_POLICY_ALLOW_READ},   {"denyRead", CORRAL_POLICY_DENY_READ},
    {"allowWrite", CORRAL_POLICY_ALLOW_WRITE}, {"denyWrite", CORRAL_POLICY_DENY_WRITE},
    {"readRoots", CORRAL_POLICY_READ_ROOTS},   {"protectedNames", CORRAL_POLICY_PROTECTED_NAMES},
    {"sensitiveEnv", CORRAL_POLICY_SENSITIVE_ENV},
};

static int choice(json_t *root, const char *key, const char *a, const char *b, bool *is_b,
                  corral_error *err) {
  json_t *v = json_object_get(root, key);
  if (!v)
    return 0;
  const char *s = json_string_value(v);
  if (!s || (strcmp(s, a) != 0 && strcmp(s, b) != 0))
    return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: expected \"%s\" or \"%s\"", key, a, b);
  *is_b = strcmp(s, b) == 0;
  return 0;
}

static int decode_policy(json_t *root, corral_policy *p, corral_error *err) {
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) {
    bool known = false;
    for (size_t i = 0; i < ARRAY_SIZE(list_fields); i++) {
      if (strcmp(key, list_fields[i].key) != 0)
        continue;
      known = true;
      if (!json_is_array(v))
        return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: expected an array of strings",
                         key);
      if (list_fields[i].list == CORRAL_POLICY_PROTECTED_NAMES)
        corral_policy_clear(p, CORRAL_POLICY_PROTECTED_NAMES);
      size_t k;
      json_t *item;
      json_array_foreach(v, k, item) {
        const char *s = json_string_value(item);
        if (!s || str_blank(s) || strlen(s) != json_string_length(item))
          return error_set(err, CORRAL_EBADJSON, 0, "field `%s[%zu]`: expected a non-blank string",
                           key, k);
        if (list_fields[i].list == CORRAL_POLICY_PROTECTED_NAMES && strchr(s, '/'))
          return error_set(err, CORRAL_EBADJSON, 0, "field `%s[%zu]`: a name, not a path", key, k);
        if (corral_policy_add(p, list_fields[i].list, s) < 0)
          return error_set(err, -ENOMEM, ENOMEM, "out of memory");
      }
    }
    if (known)
      continue;
    bool b;
    int r = 0;
    if (strcmp(key, "mode") == 0) {
      if ((r = choice(root, key, "enforce", "disabled", &b, err)) == 0)
        p->enforce = !b;
    } else if (strcmp(key, "network") == 0) {
      if ((r = choice(root, key, "deny", "allow", &b, err)) == 0)
        p->network_allow = b;
    } else if (strcmp(key, "blockUnixSockets") == 0) {
      r = json_get_bool(root, key, key, &p->block_unix, err);
    } else if (strcmp(key, "writableTemp") == 0) {
      r = json_get_bool(root, key, key, &p->temp, err);
    } else if (strcmp(key, "workspaceWritable") == 0) {
      r = json_get_bool(root, key, key, &p->workspace_writable, err);
    } else {
      return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: unknown field", key);
    }
    if (r < 0)
      return r;
  }
  return 0;
}

int corral_policy_load_file(corral_policy *p, const char *path, corral_error *err) {
  FILE *f = fopen(path, "re");
  if (!f)
    return error_sys(err, "policy file `%s`", path);
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 > cap) {
      cap = cap ? cap * 2 : 8192;
      if (cap > (16u << 20)) {
        fclose(f);
        free(buf);
        return error_set(err, CORRAL_EBADJSON, 0, "policy file `%s`: larger than 16 MiB", path);
      }
      char *g = realloc(buf, cap);
      if (!g) {
        fclose(f);
        free(buf);
        return error_set(err, -ENOMEM, ENOMEM, "out of memory");
      }
      buf = g;
    }
    size_t n = fread(buf + len, 1, cap - len, f);
    len += n;
    if (n == 0)
      break;
  }
  bool failed = ferror(f);
  fclose(f);
  if (failed) {
    free(buf);
    return error_set(err, -EIO, EIO, "policy file `%s`: read error", path);
  }
  int r = policy_load_buffer(p, buf, len, path, err);
  free(buf);
  return r;
}

int policy_load_buffer(corral_policy *p, const char *data, size_t len, const char *name,
                       corral_error *err) {
  json_t *root;
  int r = json_parse_document(data, len, &root, "parsing", err);
  if (r == 0) {
    r = decode_policy(root, p, err);
    json_decref(root);
  }
  if (r < 0)
    return error_prefix(err, "policy file `%s`", name);
  return 0;
}

bool xdg_dir(const char *var, const char *in_home, char *out, size_t size) {
  const char *xdg = getenv(var), *home = getenv("HOME");
  if (xdg && xdg[0] == '/')
    snprintf(out, size, "%s", xdg);
  else if (home && home[0] == '/')
    snprintf(out, size, "%s/%s", home, in_home);
  else
    return false;
  return true;
}

bool user_config_dir(char *out, size_t size) {
  return xdg_dir("XDG_CONFIG_HOME", ".config", out, size);
}

bool user_policy_path(char *out, size_t size) {
  char dir[PATH_MAX];
  if (!user_config_dir(dir, sizeof dir))
    return false;
  snprintf(out, size, "%s/corral/policy.json", dir);
  return true;
}

int corral_policy_load_user(corral_policy *p, corral_error *err) {
  char path[PATH_MAX];
  if (!user_policy_path(path, sizeof path) || access(path, F_OK) != 0)
    return 0;
  return corral_policy_load_file(p, path, err);
}

/* --------------------------------------------------------- resolving */

/* Removes "." and ".." and doubled slashes from an absolute path, in place. */
static void normalise(char *p) {
  char *out = p, *seg = p;
  while (*seg) {
    while (*seg == '/')
      seg++;
    char *end = strchrnul(seg, '/');
    size_t n = (size_t)(end - seg);
    if (n == 0)
      break;
    if (n == 1 && seg[0] == '.') {
    } else if (n == 2 && seg[0] == '.' && seg[1] == '.') {
      while (out > p && *--out != '/')
        ;
    } else {
      *out++ = '/';
      memmove(out, seg, n);
      out += n;
    }
    seg = end;
  }
  if (out == p)
    *out++ = '/';
  *out = '\0';
}

/* realpath(3) costs an lstat and a readlink per component; the kernel
 * resolves a path in one open(O_PATH), and /proc/self/fd says where it
 * landed.  realpath stays the fallback where /proc is not there. */
static bool resolve_existing(const char *path, char out[PATH_MAX]) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0)
    return false;
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, out, PATH_MAX - 1);
  close(fd);
  if (n > 0 && out[0] == '/' && (size_t)n < PATH_MAX - 1) {
    out[n] = '\0';
    if (!strstr(out, " (deleted)"))
      return true;
  }
  return realpath(path, out) != NULL;
}

/* Parents already resolved during one profile_resolve: most secret stores
 * do not exist and share a parent (HOME, its .config), which is then
 * resolved once instead of once per store. */
struct resolve_cache {
  size_t n;
  char *in[8], *out[8];
};

static void resolve_cache_free(struct resolve_cache *c) {
  for (size_t i = 0; i < c->n; i++)
    free(c->in[i]), free(c->out[i]);
  c->n = 0;
}

static const char *cache_lookup(const struct resolve_cache *c, const char *path) {
  for (size_t i = 0; c && i < c->n; i++)
    if (strcmp(c->in[i], path) == 0)
      return c->out[i];
  return NULL;
}

static bool resolve_parent(const char *path, char out[PATH_MAX], struct resolve_cache *c) {
  const char *known = cache_lookup(c, path);
  if (known) {
    snprintf(out, PATH_MAX, "%s", known);
    return true;
  }
  if (!resolve_existing(path, out))
    return false;
  if (c && c->n < ARRAY_SIZE(c->in)) {
    char *in = strdup(path), *o = strdup(out);
    if (in && o) {
      c->in[c->n] = in;
      c->out[c->n++] = o;
    } else {
      free(in), free(o);
    }
  }
  return true;
}

static char *resolve_cached(const char *path, struct resolve_cache *cache, corral_error *err) {
  char buf[PATH_MAX * 2];
  const char *home = getenv("HOME");
  if (path[0] == '~' && (path[1] == '/' || path[1] == '\0')) {
    if (!home || home[0] != '/') {
      error_set(err, -EINVAL, EINVAL, "path `%s`: HOME is not set", path);
      return NULL;
    }
    snprintf(buf, sizeof buf, "%s%s", home, path + 1);
  } else if (path[0] != '/') {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) {
      error_sys(err, "path `%s`: getcwd", path);
      return NULL;
    }
    snprintf(buf, sizeof buf, "%s/%s", cwd, path);
  } else {
    snprintf(buf, sizeof buf, "%s", path);
  }
  if (strlen(buf) >= PATH_MAX) {
    error_set(err, -ENAMETOOLONG, ENAMETOOLONG, "path `%s`: too long", path);
    return NULL;
  }
  /* A plain name in a parent already resolved: if it is missing or no
   * symlink, the parent's resolution and the name are the answer (one
   * lstat instead of resolving the whole path again). */
  char *last = strrchr(buf, '/');
  if (cache && last && last != buf && last[1] && strcmp(last + 1, ".") != 0 &&
      strcmp(last + 1, "..") != 0) {
    *last = '\0';
    const char *parent = cache_lookup(cache, buf);
    *last = '/';
    struct stat st;
    if (parent && (lstat(buf, &st) < 0 ? errno == ENOENT : !S_ISLNK(st.st_mode))) {
      size_t need = strlen(parent) + strlen(last) + 1;
      char *out = malloc(need);
      if (out)
        snprintf(out, need, "%s%s", strcmp(parent, "/") == 0 ? "" : parent, last);
      return out;
    }
  }
  char real[PATH_MAX];
  if (resolve_existing(buf, real))
    return strdup(real);
  /* Not there (yet): resolve the longest existing ancestor, keep the rest
   * (so a store under a symlinked HOME gets its real path even before it
   * exists). */
  normalise(buf);
  char up[PATH_MAX];
  snprintf(up, sizeof up, "%s", buf);
  for (char *slash = strrchr(up, '/'); slash && slash != up; slash = strrchr(up, '/')) {
    *slash = '\0';
    char rp[PATH_MAX];
    if (resolve_parent(up, rp, cache)) {
      const char *rest = buf + (slash - up) + 1;
      size_t need = strlen(rp) + strlen(rest) + 2;
      char *out = malloc(need);
      if (out)
        snprintf(out, need, "%s/%s", strcmp(rp, "/") == 0 ? "" : rp, rest);
      return out;
    }
  }
  return strdup(buf); /* nothing but / exists: the path as written */
}

char *path_resolve(const char *path, corral_error *err) { return resolve_cached(path, NULL, err); }

static int add_resolved(struct path_list *l, const char *p, struct resolve_cache *cache,
                        corral_error *err) {
  char *r = resolve_cached(p, cache, err);
  if (!r)
    return err ? err->code : -EINVAL;
  int rc = path_list_has(l, r) ? 0 : path_list_add(l, r);
  free(r);
  return rc < 0 ? error_set(err, rc, -rc, "out of memory") : 0;
}

int path_list_add_real(struct path_list *l, const char *path, corral_error *err) {
  return add_resolved(l, path, NULL, err);
}

/* The usual secret stores of the user running corral.  Paths that do not
 * exist are kept: a store created while the command runs must stay
 * unreadable too (mounts.c hides them through their parent's view). */
static int add_secret_stores(struct path_list *l, struct resolve_cache *cache,
                             corral_error *err) {
  const char *home = getenv("HOME");
  if (!home || home[0] != '/')
    return 0;
  char buf[PATH_MAX], cfg[PATH_MAX];
  if (!user_config_dir(cfg, sizeof cfg))
    return 0;
  static const char *const in_home[] = {".aws",         ".azure",          ".ssh",
                                        ".gnupg",       ".git-credentials", ".pypirc",
                                        ".cargo/credentials", ".cargo/credentials.toml"};
  int r = 0;
  for (size_t i = 0; i < ARRAY_SIZE(in_home) && r == 0; i++) {
    snprintf(buf, sizeof buf, "%s/%s", home, in_home[i]);
    r = add_resolved(l, buf, cache, err);
  }
  struct {
    const char *env, *fallback_fmt, *fallback_base, *suffix;
  } const vars[] = {
      {"CLOUDSDK_CONFIG", "%s/gcloud", cfg, ""},
      {"GOOGLE_APPLICATION_CREDENTIALS", NULL, NULL, ""},
      {"NETRC", "%s/.netrc", home, ""},
      {"NPM_CONFIG_USERCONFIG", "%s/.npmrc", home, ""},
      {"DOCKER_CONFIG", "%s/.docker", home, "/config.json"},
      {"GH_CONFIG_DIR", "%s/gh", cfg, "/hosts.yml"},
  };
  for (size_t i = 0; i < ARRAY_SIZE(vars) && r == 0; i++) {
    const char *v = getenv(vars[i].env);
    char base[PATH_MAX];
    if (v && v[0] == '/')
      snprintf(base, sizeof base, "%s", v);
    else if (vars[i].fallback_fmt)
      snprintf(base, sizeof base, vars[i].fallback_fmt, vars[i].fallback_base);
    else
      continue;
    snprintf(buf, sizeof buf, "%s%s", base, vars[i].suffix);
    r = add_resolved(l, buf, cache, err);
  }
  /* KUBECONFIG is a list. */
  const char *kube = getenv("KUBECONFIG");
  if (kube && *kube && r == 0) {
    char list[PATH_MAX];
    snprintf(list, sizeof list, "%s", kube);
    for (char *save, *tok = strtok_r(list, ":", &save); tok && r == 0;
         tok = strtok_r(NULL, ":", &save))
      if (tok[0] == '/')
        r = add_resolved(l, tok, cache, err);
  } else if (r == 0) {
    snprintf(buf, sizeof buf, "%s/.kube/config", home);
    r = add_resolved(l, buf, cache, err);
  }
  if (r == 0) {
    snprintf(buf, sizeof buf, "%s/git/credentials", cfg);
    r = add_resolved(l, buf, cache, err);
  }
  if (r == 0) {
    snprintf(buf, sizeof buf, "%s/corral", cfg);
    r = add_resolved(l, buf, cache, err);
  }
  return r;
}

/* Unix sockets of daemons that would do anything a command asks outside
 * the sandbox: container engines (docker run -v /:/host), systemd and the
 * D-Bus buses (systemd-run), snapd, libvirt, lxd, the user's ssh and gpg
 * agents (their keys), and the terminals and displays that would type into
 * the user's shells (tmux send-keys, an X server, emacs' server).
 * Filesystem sockets are not namespaced, so those that exist are masked
 * (connect fails); one a daemon creates mid-run is not. */
static int add_socket(struct path_list *l, const char *path, struct resolve_cache *cache,
                      corral_error *err) {
  struct stat st;
  if (!path || path[0] != '/' || stat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
    return 0;
  return add_resolved(l, path, cache, err);
}

/* Every socket directly in `dir`. */
static int add_sockets_in(struct path_list *l, const char *dir, struct resolve_cache *cache,
                          corral_error *err) {
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  int r = 0;
  struct dirent *de;
  while (r == 0 && (de = readdir(d)))
    if (de->d_type == DT_SOCK || de->d_type == DT_UNKNOWN) {
      char path[PATH_MAX];
      snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
      r = add_socket(l, path, cache, err);
    }
  closedir(d);
  return r;
}

static int add_daemon_sockets(struct path_list *l, struct resolve_cache *cache,
                              corral_error *err) {
  static const char *const fixed[] = {
      "/run/docker.sock",        "/var/run/docker.sock",          "/run/containerd/containerd.sock",
      "/run/podman/podman.sock", "/run/crio/crio.sock",           "/run/systemd/private",
      "/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket", "/run/snapd.socket",
      "/run/snapd-snap.socket",  "/run/libvirt/libvirt-sock",    "/var/snap/lxd/common/lxd/unix.socket"};
  int r = 0;
  for (size_t i = 0; i < ARRAY_SIZE(fixed) && r == 0; i++)
    r = add_socket(l, fixed[i], cache, err);
  const char *run = getenv("XDG_RUNTIME_DIR");
  static const char *const in_run[] = {"bus", "docker.sock", "podman/podman.sock", "systemd/private",
                                       "gnupg/S.gpg-agent", "gnupg/S.gpg-agent.ssh",
                                       "gnupg/S.gpg-agent.extra", "gnupg/S.gpg-agent.browser",
                                       "gnupg/S.keyboxd", "keyring/control", "keyring/ssh",
                                       "gcr/ssh"};
  for (size_t i = 0; run && run[0] == '/' && i < ARRAY_SIZE(in_run) && r == 0; i++) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", run, in_run[i]);
    r = add_socket(l, path, cache, err);
  }
  /* Those the environment names: "unix://PATH", "unix:path=PATH[,...]". */
  const char *docker = getenv("DOCKER_HOST"), *dbus = getenv("DBUS_SESSION_BUS_ADDRESS");
  if (r == 0)
    r = add_socket(l, getenv("SSH_AUTH_SOCK"), cache, err);
  if (r == 0 && docker && strncmp(docker, "unix://", 7) == 0)
    r = add_socket(l, docker + 7, cache, err);
  if (r == 0 && dbus && strncmp(dbus, "unix:path=", 10) == 0) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%.*s", (int)strcspn(dbus + 10, ",;"), dbus + 10);
    r = add_socket(l, path, cache, err);
  }
  /* Terminal multiplexers and displays: tmux (TMUX is "socket,pid,index";
   * its directory is tmux-UID in TMUX_TMPDIR or /tmp), X servers, emacs. */
  const char *tmux = getenv("TMUX"), *tmux_dir = getenv("TMUX_TMPDIR");
  char path[PATH_MAX];
  unsigned uid = (unsigned)getuid();
  if (r == 0 && tmux && tmux[0] == '/') {
    snprintf(path, sizeof path, "%.*s", (int)strcspn(tmux, ","), tmux);
    r = add_socket(l, path, cache, err);
  }
  snprintf(path, sizeof path, "%s/tmux-%u",
           tmux_dir && tmux_dir[0] == '/' ? tmux_dir : "/tmp", uid);
  if (r == 0)
    r = add_sockets_in(l, path, cache, err);
  if (r == 0)
    r = add_sockets_in(l, "/tmp/.X11-unix", cache, err);
  snprintf(path, sizeof path, "/tmp/emacs%u", uid);
  if (r == 0)
    r = add_sockets_in(l, path, cache, err);
  return r;
}

/* allow-read re-includes: a deny-read path at or below an allow-read path
 * is dropped (allow-read paths inside a deny-read are bound back later). */
static void drop_reincluded(struct path_list *deny, const struct path_list *allow) {
  size_t kept = 0;
  for (size_t i = 0; i < deny->n; i++) {
    bool drop = false;
    for (size_t k = 0; k < allow->n && !drop; k++)
      drop = path_is_under(deny->v[i], allow->v[k]);
    if (drop)
      free(deny->v[i]);
    else
      deny->v[kept++] = deny->v[i];
  }
  deny->n = kept;
  if (deny->v)
    deny->v[kept] = NULL;
}

static int by_length(const void *a, const void *b) {
  size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
  return la < lb ? -1 : la > lb ? 1 : strcmp(*(char *const *)a, *(char *const *)b);
}

int profile_resolve(const corral_policy *p, char *const *roots, size_t nroots, struct profile *pr,
                    corral_error *err) {
  int r = 0;
  struct resolve_cache cache = {0};
  memset(pr, 0, sizeof *pr);
  pr->enforce = p->enforce;
  pr->network_allow = p->network_allow;
  pr->block_unix = p->block_unix;
  const struct path_list *L = p->lists;
  if (p->workspace_writable)
    for (size_t i = 0; i < nroots && r == 0; i++)
      r = add_resolved(&pr->write_roots, roots[i], &cache, err);
  /* A workspace at / (corral started from the root directory) would make
   * the whole disk writable: refuse rather than enforce nothing. */
  if (r == 0 && path_list_has(&pr->write_roots, "/")) {
    resolve_cache_free(&cache);
    profile_free(pr);
    return error_set(err, CORRAL_EINVALID, 0,
                     "workspace root `/` would make the whole filesystem writable; "
                     "run from the project's directory or pass --workspace DIR");
  }
  for (size_t i = 0; i < L[CORRAL_POLICY_ALLOW_WRITE].n && r == 0; i++)
    r = add_resolved(&pr->write_roots, L[CORRAL_POLICY_ALLOW_WRITE].v[i], &cache, err);
  if (p->temp && r == 0) {
    r = add_resolved(&pr->write_roots, "/tmp", &cache, err);
    const char *tmpdir = getenv("TMPDIR");
    if (r == 0 && tmpdir && tmpdir[0] == '/')
      r = add_resolved(&pr->write_roots, tmpdir, &cache, err);
  }
  if (L[CORRAL_POLICY_READ_ROOTS].n == 0 && r == 0)
    r = path_list_add(&pr->read_roots, "/");
  for (size_t i = 0; i < L[CORRAL_POLICY_READ_ROOTS].n && r == 0; i++)
    r = add_resolved(&pr->read_roots, L[CORRAL_POLICY_READ_ROOTS].v[i], &cache, err);
  for (size_t i = 0; i < L[CORRAL_POLICY_DENY_READ].n && r == 0; i++)
    r = add_resolved(&pr->deny_read, L[CORRAL_POLICY_DENY_READ].v[i], &cache, err);
  if (r == 0 && p->enforce)
    r = add_secret_stores(&pr->deny_read, &cache, err);
  if (r == 0 && p->enforce)
    r = add_daemon_sockets(&pr->hidden_sockets, &cache, err);
  for (size_t i = 0; i < L[CORRAL_POLICY_ALLOW_READ].n && r == 0; i++)
    r = add_resolved(&pr->allow_read, L[CORRAL_POLICY_ALLOW_READ].v[i], &cache, err);
  if (r == 0) {
    drop_reincluded(&pr->deny_read, &pr->allow_read);
    drop_reincluded(&pr->hidden_sockets, &pr->allow_read);
  }
  for (size_t i = 0; i < L[CORRAL_POLICY_DENY_WRITE].n && r == 0; i++)
    r = add_resolved(&pr->deny_write, L[CORRAL_POLICY_DENY_WRITE].v[i], &cache, err);
  if (p->protected_set) {
    for (size_t i = 0; i < L[CORRAL_POLICY_PROTECTED_NAMES].n && r == 0; i++)
      r = path_list_add(&pr->protected_names, L[CORRAL_POLICY_PROTECTED_NAMES].v[i]);
  } else {
    for (size_t i = 0; i < ARRAY_SIZE(default_protected) && r == 0; i++)
      r = path_list_add(&pr->protected_names, default_protected[i]);
  }
  for (size_t i = 0; i < L[CORRAL_POLICY_SENSITIVE_ENV].n && r == 0; i++)
    r = path_list_add(&pr->sensitive_env, L[CORRAL_POLICY_SENSITIVE_ENV].v[i]);
  resolve_cache_free(&cache);
  pr->restricted_read = !path_list_has(&pr->read_roots, "/");
  for (size_t i = 0; i < ARRAY_SIZE(platform_candidates) && r == 0; i++) {
    struct stat st;
    if (lstat(platform_candidates[i], &st) == 0)
      r = path_list_add(&pr->platform_roots, platform_candidates[i]);
  }
  if (r < 0) {
    profile_free(pr);
    return err && err->code ? err->code : error_set(err, r, -r, "resolving the policy");
  }
  /* Outer roots before inner ones: mounts are applied in this order. */
  struct path_list *sorted[] = {&pr->write_roots, &pr->deny_write, &pr->deny_read,
                                 &pr->allow_read};
  for (size_t i = 0; i < ARRAY_SIZE(sorted); i++)
    if (sorted[i]->n > 1)
      qsort(sorted[i]->v, sorted[i]->n, sizeof(char *), by_length);
  return 0;
}

void profile_free(struct profile *pr) {
  path_list_free(&pr->read_roots);
  path_list_free(&pr->write_roots);
  path_list_free(&pr->deny_read);
  path_list_free(&pr->deny_write);
  path_list_free(&pr->pinned);
  path_list_free(&pr->hidden_sockets);
  path_list_free(&pr->allow_read);
  path_list_free(&pr->platform_roots);
  path_list_free(&pr->protected_names);
  path_list_free(&pr->sensitive_env);
}

static json_t *list_json(const struct path_list *l) {
  json_t *a = json_array();
  for (size_t i = 0; i < l->n; i++)
    json_array_append_new(a, json_string(l->v[i]));
  return a;
}

json_t *profile_to_json(const struct profile *pr) {
  json_t *o = json_object();
  json_object_set_new(o, "mode", json_string(pr->enforce ? "enforce" : "disabled"));
  json_object_set_new(o, "filesystem", json_string(pr->restricted_read ? "restricted" : "unrestricted"));
  json_object_set_new(o, "readRoots", list_json(&pr->read_roots));
  json_object_set_new(o, "writeRoots", list_json(&pr->write_roots));
  json_object_set_new(o, "denyRead", list_json(&pr->deny_read));
  json_object_set_new(o, "allowRead", list_json(&pr->allow_read));
  json_object_set_new(o, "denyWrite", list_json(&pr->deny_write));
  json_object_set_new(o, "hiddenSockets", list_json(&pr->hidden_sockets));
  json_object_set_new(o, "platformRoots", list_json(&pr->platform_roots));
  json_object_set_new(o, "protectedNames", list_json(&pr->protected_names));
  json_object_set_new(o, "network", json_string(pr->network_allow ? "allow" : "deny"));
  json_object_set_new(o, "blockUnixSockets", json_boolean(pr->block_unix));
  return o;
}

char *corral_policy_profile_json(const corral_policy *p, const char *const *roots, size_t nroots,
                                 corral_error *err) {
  struct profile pr;
  if (profile_resolve(p, (char *const *)roots, nroots, &pr, err) < 0)
    return NULL;
  json_t *j = profile_to_json(&pr);
  char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(j);
  profile_free(&pr);
  return s;
}
