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
#include "run_limits.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/stat.h>

#include "internal.h"
#include "json_util.h"

static const char *const default_protected[] = {".agents", ".corral"};
static const char *const platform_candidates[] = {"/bin", "/sbin", "/usr", "/etc", "/lib",
                                                  "/lib32", "/lib64", "/libx32"};

int path_list_take(struct path_list *l, char *s) {
  if (l->n + 2 > l->cap) {
    size_t cap = l->cap ? l->cap : 16;
    while (cap < l->n + 2)
      cap *= 2;
    char **g = realloc(l->v, cap * sizeof *g);
    if (!g) {
      free(s);
      return -ENOMEM;
    }
    l->v = g;
    l->cap = cap;
  }
  l->v[l->n++] = s;
  l->v[l->n] = NULL;
  return 0;
}

int path_list_add(struct path_list *l, const char *s) {
  char *copy = strdup(s);
  return copy ? path_list_take(l, copy) : -ENOMEM;
}

bool path_list_has(const struct path_list *l, const char *s) {
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->v[i], s) == 0)
      return true;
  return false;
}

void path_list_free(struct path_list *l) {
  strv_free(l->v, l->n);
  l->v = NULL;
  l->n = l->cap = 0;
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
  p->record_refusals = true;
  p->temp = true;
  p->workspace_writable = true;
  return p;
}

void corral_policy_free(corral_policy *p) {
  if (!p)
    return;
  for (int i = 0; i < POLICY_NLISTS; i++)
    path_list_free(&p->lists[i]);
  net_rules_free(&p->net);
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
    if (net_rules_copy(&p->net, &src->net) < 0) {
      for (int k = 0; k < POLICY_NLISTS; k++)
        path_list_free(&p->lists[k]);
      free(p);
      return NULL;
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
void corral_policy_set_network(corral_policy *p, bool v) {
  p->network_allow = v;
  p->network_filter = false;
}

void corral_policy_set_network_filter(corral_policy *p) {
  p->network_allow = false;
  p->network_filter = true;
}

int corral_policy_add_domain(corral_policy *p, const char *entry, bool deny, const char *reason,
                             corral_error *err) {
  const char *why = "";
  int r = entry ? net_rules_add(&p->net, entry, deny, reason, &why) : -EINVAL;
  if (r == -ENOMEM)
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  if (r < 0)
    return error_set(err, CORRAL_EINVALID, EINVAL, "domain `%s`: %s", entry ? entry : "", why);
  return 0;
}

int corral_policy_allow_addresses(corral_policy *p, const char *range, corral_error *err) {
  const char *why = "";
  int r = range ? net_rules_allow_range(&p->net, range, &why) : -EINVAL;
  if (r == -ENOMEM)
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  if (r < 0)
    return error_set(err, CORRAL_EINVALID, EINVAL, "address range `%s`: %s", range ? range : "",
                     why);
  return 0;
}
void corral_policy_set_block_unix_sockets(corral_policy *p, bool v) { p->block_unix = v; }
void corral_policy_set_record_refusals(corral_policy *p, bool v) { p->record_refusals = v; }
void corral_policy_set_temp(corral_policy *p, bool v) { p->temp = v; }
void corral_policy_set_workspace_writable(corral_policy *p, bool v) { p->workspace_writable = v; }

int corral_policy_set_limit(corral_policy *p, corral_limit which, int64_t value) {
  if (!p || which < 1 || which >= CORRAL_LIMIT_COUNT || value < CORRAL_LIMIT_NONE)
    return -EINVAL;
  p->limits[which] = value;
  return 0;
}

/* "limits": {"processes": 4096, "memory": "8G", "cpuTime": 30, ...}: a
 * number in the limit's unit (seconds for cpuTime), or a string as the
 * flags take it ("512M", "none", "default"). */
static const char *const limit_keys[CORRAL_LIMIT_COUNT] = {
    NULL, "processes", "memory", "cpuTime", "fileSize", "openFiles"};

const char *limits_json_key(corral_limit which) {
  return which > 0 && which < CORRAL_LIMIT_COUNT ? limit_keys[which] : NULL;
}

static int decode_limits(json_t *obj, corral_policy *p, corral_error *err) {
  if (!json_is_object(obj))
    return error_set(err, CORRAL_EBADJSON, 0, "field `limits`: expected an object");
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    int which = 0;
    for (int i = 1; i < CORRAL_LIMIT_COUNT; i++)
      if (strcmp(key, limit_keys[i]) == 0)
        which = i;
    if (!which)
      return error_set(err, CORRAL_EBADJSON, 0, "field `limits.%s`: unknown limit", key);
    char text[64];
    if (json_is_string(v))
      snprintf(text, sizeof text, "%s", json_string_value(v));
    else if (json_is_integer(v))
      snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v) && which == CORRAL_LIMIT_CPU_TIME)
      snprintf(text, sizeof text, "%.17g", json_real_value(v));
    else
      text[0] = '\0';
    const char *why = "expected a number or a string";
    int64_t value;
    if (!text[0] || limits_parse((corral_limit)which, text, &value, &why) < 0)
      return error_set(err, CORRAL_EBADJSON, 0, "field `limits.%s`: %s", key, why);
    p->limits[which] = value;
  }
  return 0;
}

/* ---------------------------------------------------------- the file */

static const struct {
  const char *key;
  corral_policy_list list;
} list_fields[] = {
    {"allowRead", CORRAL_POLICY_ALLOW_READ},   {"denyRead", CORRAL_POLICY_DENY_READ},
    {"allowWrite", CORRAL_POLICY_ALLOW_WRITE}, {"denyWrite", CORRAL_POLICY_DENY_WRITE},
    {"readRoots", CORRAL_POLICY_READ_ROOTS},   {"protectedNames", CORRAL_POLICY_PROTECTED_NAMES},
    {"sensitiveEnv", CORRAL_POLICY_SENSITIVE_ENV}, {"allowProtected", CORRAL_POLICY_ALLOW_PROTECTED},
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

/* "allowDomains": ["host", "*.domain", "host:port"], "denyDomains": the
 * same or {"domain": D, "reason": R}, "allowAddresses": ["10.1.0.0/16"]. */
static int decode_network_list(const char *key, json_t *v, corral_policy *p,
                               corral_error *err) {
  if (!json_is_array(v))
    return error_set(err, CORRAL_EBADJSON, 0, "field `%s`: expected an array", key);
  bool deny = strcmp(key, "denyDomains") == 0, ranges = strcmp(key, "allowAddresses") == 0;
  size_t k;
  json_t *item;
  json_array_foreach(v, k, item) {
    const char *entry = json_string_value(item), *reason = NULL;
    if (deny && json_is_object(item)) {
      entry = json_string_value(json_object_get(item, "domain"));
      json_t *rs = json_object_get(item, "reason");
      reason = json_string_value(rs);
      if (rs && !reason)
        return error_set(err, CORRAL_EBADJSON, 0, "field `%s[%zu].reason`: expected a string",
                         key, k);
    }
    if (!entry)
      return error_set(err, CORRAL_EBADJSON, 0, "field `%s[%zu]`: expected %s", key, k,
                       deny ? "a string or {\"domain\", \"reason\"}" : "a string");
    corral_error e = {0};
    int r = ranges ? corral_policy_allow_addresses(p, entry, &e)
                   : corral_policy_add_domain(p, entry, deny, reason, &e);
    if (r == -ENOMEM)
      return error_set(err, -ENOMEM, ENOMEM, "out of memory");
    if (r < 0)
      return error_set(err, CORRAL_EBADJSON, 0, "field `%s[%zu]`: %s", key, k, e.message);
  }
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
      const char *s = json_string_value(v);
      if (s && strcmp(s, "filter") == 0)
        corral_policy_set_network_filter(p);
      else if ((r = choice(root, key, "deny", "allow", &b, err)) == 0)
        corral_policy_set_network(p, b);
      if (r < 0)
        return error_set(err, CORRAL_EBADJSON, 0,
                         "field `network`: expected \"deny\", \"allow\" or \"filter\"");
    } else if (strcmp(key, "allowDomains") == 0 || strcmp(key, "denyDomains") == 0 ||
               strcmp(key, "allowAddresses") == 0) {
      r = decode_network_list(key, v, p, err);
    } else if (strcmp(key, "blockUnixSockets") == 0) {
      r = json_get_bool(root, key, key, &p->block_unix, err);
    } else if (strcmp(key, "recordRefusals") == 0) {
      r = json_get_bool(root, key, key, &p->record_refusals, err);
    } else if (strcmp(key, "writableTemp") == 0) {
      r = json_get_bool(root, key, key, &p->temp, err);
    } else if (strcmp(key, "workspaceWritable") == 0) {
      r = json_get_bool(root, key, key, &p->workspace_writable, err);
    } else if (strcmp(key, "limits") == 0) {
      r = decode_limits(v, p, err);
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

/* The password entry's home directory, for when HOME cannot say (env -i,
 * cron, some service managers), and for stores kept in the real home while
 * HOME points elsewhere (sudo -E, a temporary HOME). */
/* Read from /etc/passwd itself, not through NSS: corral is a static
 * binary, and the NSS modules a static glibc would load are the system's
 * shared objects, of another build (a uid without an entry crashed in
 * one).  Accounts kept elsewhere (LDAP, homed) have HOME. */
static bool passwd_home(char *out, size_t size) {
  FILE *f = fopen("/etc/passwd", "re");
  if (!f)
    return false;
  char line[4096];
  bool found = false;
  unsigned long me = (unsigned long)geteuid();
  while (!found && fgets(line, sizeof line, f)) {
    /* name:password:uid:gid:gecos:dir:shell */
    char *field[7] = {line};
    int n = 1;
    for (char *c = line; *c && n < 7; c++)
      if (*c == ':') {
        *c = '\0';
        field[n++] = c + 1;
      }
    if (n < 7)
      continue;
    char *end;
    unsigned long uid = strtoul(field[2], &end, 10);
    if (end == field[2] || *end || uid != me)
      continue;
    field[5][strcspn(field[5], "\n")] = '\0';
    if (field[5][0] == '/' && strlen(field[5]) < size) {
      snprintf(out, size, "%s", field[5]);
      found = true;
    }
  }
  fclose(f);
  return found;
}

bool user_home(char *out, size_t size) {
  const char *home = getenv("HOME");
  if (!home || home[0] != '/')
    return passwd_home(out, size);
  if (strlen(home) >= size)
    return false;
  snprintf(out, size, "%s", home);
  return true;
}

bool xdg_dir(const char *var, const char *in_home, char *out, size_t size) {
  const char *xdg = getenv(var);
  char home[PATH_MAX];
  if (xdg && xdg[0] == '/')
    snprintf(out, size, "%s", xdg);
  else if (user_home(home, sizeof home))
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
/* a, b and c joined into dst (size bytes); false when it does not fit.
 * The hot path of resolving a hundred and more stores: no formatting. */
static bool cat3(char *dst, size_t size, const char *a, const char *b, const char *c) {
  size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
  if (la + lb + lc >= size)
    return false;
  memcpy(dst, a, la);
  memcpy(dst + la, b, lb);
  memcpy(dst + la + lb, c, lc + 1);
  return true;
}

struct resolve_cache {
  size_t n, nmissing;
  char *in[32], *out[32];
  /* When set, where a resolved path whose last component is a symlink is
   * recorded (profile.deny_links). */
  struct path_list *links;
  /* Found missing: nothing below them exists.  A hash set (open
   * addressing; a full set just forgets), asked once per ancestor. */
  char *missing[256];
  /* The entries of in[i], read once when a second name is looked up in
   * it: a hundred stores in HOME cost one directory read, not a hundred
   * lstats.  NUL-separated names; types from getdents. */
  struct listing {
    int state; /* 0 not read, 1 read, -1 not to be read (too big, unreadable) */
    int lookups;
    char *names;                /* NUL-separated */
    struct listed *by_name;     /* sorted, for bsearch */
    size_t n;
  } list[32];
};

static bool known_missing(const struct resolve_cache *c, const char *path);
static size_t missing_prefix(const struct resolve_cache *c, const char *path);
static void remember_missing(struct resolve_cache *c, const char *path, size_t len);
static size_t missing_slot(const struct resolve_cache *c, const char *path, size_t len);

#define LISTING_MAX 4096 /* entries; a bigger directory is looked at by name */

struct listed {
  const char *name;
  unsigned char type;
};

static int by_name(const void *a, const void *b) {
  return strcmp(((const struct listed *)a)->name, ((const struct listed *)b)->name);
}

static void listing_read(struct listing *l, const char *dir) {
  l->state = -1;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  struct dir_iter it;
  dir_start(&it, fd);
  size_t cap = 0, used = 0, ncap = 0;
  unsigned char *types = NULL, type;
  const char *name;
  bool ok = true;
  while (ok && (name = dir_next(&it, &type))) {
    size_t len = strlen(name) + 1;
    if (l->n == LISTING_MAX) {
      ok = false;
    } else if (used + len > cap) {
      char *g = realloc(l->names, cap = cap ? cap * 2 : 4096);
      ok = g != NULL;
      l->names = g ? g : l->names;
    }
    if (ok && l->n == ncap) {
      unsigned char *t = realloc(types, ncap = ncap ? ncap * 2 : 256);
      ok = t != NULL;
      types = t ? t : types;
    }
    if (ok) {
      memcpy(l->names + used, name, len);
      types[l->n++] = type;
      used += len;
    }
  }
  close(fd);
  /* Names are pointed at only now: realloc may have moved them. */
  l->by_name = ok ? malloc((l->n ? l->n : 1) * sizeof *l->by_name) : NULL;
  if (l->by_name) {
    const char *p = l->names;
    for (size_t k = 0; k < l->n; k++, p += strlen(p) + 1)
      l->by_name[k] = (struct listed){p, types[k]};
    qsort(l->by_name, l->n, sizeof *l->by_name, by_name);
    l->state = 1;
  }
  free(types);
}

/* 0: `name` is not in parent i; 1: it is, and no symlink (its d_type in
 * *type); -1: unknown (look it up the slow way). */
static int listing_find(struct resolve_cache *c, size_t i, const char *name,
                        unsigned char *type) {
  struct listing *l = &c->list[i];
  if (l->state == 0 && ++l->lookups >= 2)
    listing_read(l, c->out[i]);
  if (l->state != 1)
    return -1;
  struct listed key = {name, 0}, *hit = bsearch(&key, l->by_name, l->n, sizeof key, by_name);
  if (!hit)
    return 0;
  *type = hit->type;
  return hit->type == DT_LNK || hit->type == DT_UNKNOWN ? -1 : 1;
}

static bool resolve_parent(const char *path, char out[PATH_MAX], struct resolve_cache *c);
static bool remember_parent(struct resolve_cache *c, const char *in, const char *out);
static ssize_t cache_index(const struct resolve_cache *c, const char *path);

/* `path` resolved from its deepest cached ancestor through listings, or
 * NULL when a component needs the slow way (a symlink, an unlisted
 * directory). */
static char *walk_listed(struct resolve_cache *c, const char *path) {
  char prefix[PATH_MAX], real[PATH_MAX];
  ssize_t idx = -1;
  size_t len = strlen(path);
  if (len >= sizeof prefix)
    return NULL;
  memcpy(prefix, path, len + 1);
  /* The deepest ancestor in the cache. */
  for (char *slash = strrchr(prefix, '/'); slash && slash != prefix; slash = strrchr(prefix, '/')) {
    *slash = '\0';
    if ((idx = cache_index(c, prefix)) >= 0)
      break;
  }
  if (idx < 0)
    return NULL;
  size_t done = strlen(prefix);
  if (!cat3(real, sizeof real, c->out[idx], "", ""))
    return NULL;
  while (path[done] == '/') {
    const char *name = path + done + 1;
    size_t n = strcspn(name, "/");
    char comp[NAME_MAX + 1];
    if (n == 0 || n > NAME_MAX || (n == 1 && name[0] == '.') ||
        (n == 2 && name[0] == '.' && name[1] == '.'))
      return NULL;
    memcpy(comp, name, n);
    comp[n] = '\0';
    c->list[idx].lookups++; /* walked into: worth reading at once */
    unsigned char type = DT_UNKNOWN;
    int found = listing_find(c, (size_t)idx, comp, &type);
    size_t rlen = strlen(real);
    if (found < 0 || rlen + n + 2 > sizeof real)
      return NULL;
    if (strcmp(real, "/") != 0)
      real[rlen++] = '/';
    memcpy(real + rlen, comp, n + 1);
    done += n + 1;
    if (found == 0 && path[done] != '\0')
      remember_missing(c, real, strlen(real)); /* what is below it is known too */
    if (found == 0 || path[done] == '\0') { /* missing: the rest as written */
      size_t need = strlen(real) + strlen(path + done) + 1;
      char *out = malloc(need);
      if (out)
        cat3(out, need, real, path + done, "");
      return out;
    }
    /* A directory on the way: known from here on.  Listed as one (no
     * symlink), its real path is the parent's and its name. */
    memcpy(prefix, path, done);
    prefix[done] = '\0';
    if (type == DT_DIR && remember_parent(c, prefix, real))
      idx = (ssize_t)c->n - 1;
    else if (!resolve_parent(prefix, real, c) || (idx = cache_index(c, prefix)) < 0)
      return NULL;
  }
  return NULL;
}

/* Does `path` (a real path) exist?  From its parent's listing when that
 * was read, else by looking. */
static bool path_exists(struct resolve_cache *c, const char *path) {
  const char *slash = strrchr(path, '/');
  for (size_t i = 0; slash && slash != path && i < c->n; i++) {
    size_t n = (size_t)(slash - path);
    if (c->list[i].state != 1 || strlen(c->out[i]) != n || strncmp(c->out[i], path, n) != 0)
      continue;
    struct listed key = {slash + 1, 0};
    return bsearch(&key, c->list[i].by_name, c->list[i].n, sizeof key, by_name) != NULL;
  }
  struct stat st;
  return lstat(path, &st) == 0;
}

/* 0 when `path` exists, else the length of the prefix that names its
 * first missing component (the shortest ancestor known to be missing, or
 * the path itself). */
static size_t missing_from(struct resolve_cache *c, const char *path) {
  size_t m = missing_prefix(c, path);
  return m ? m : path_exists(c, path) ? 0 : strlen(path);
}

static ssize_t cache_index(const struct resolve_cache *c, const char *path) {
  for (size_t i = 0; c && i < c->n; i++)
    if (strcmp(c->in[i], path) == 0)
      return (ssize_t)i;
  return -1;
}

static void resolve_cache_free(struct resolve_cache *c) {
  for (size_t i = 0; i < c->n; i++) {
    free(c->in[i]), free(c->out[i]);
    free(c->list[i].names), free(c->list[i].by_name);
    memset(&c->list[i], 0, sizeof c->list[i]);
  }
  for (size_t i = 0; i < ARRAY_SIZE(c->missing); i++) {
    free(c->missing[i]);
    c->missing[i] = NULL;
  }
  c->n = c->nmissing = 0;
}

/* Is `path`, or a directory above it, known to be missing? */
/* The slot of path[0..len) in the missing set: where it is, or the empty
 * one where it would go (SIZE_MAX: the set is full). */
static size_t missing_slot(const struct resolve_cache *c, const char *path, size_t len) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)path[i]) * 16777619u;
  for (size_t k = 0; k < ARRAY_SIZE(c->missing); k++) {
    size_t i = (h + k) % ARRAY_SIZE(c->missing);
    const char *m = c->missing[i];
    if (!m || (strncmp(m, path, len) == 0 && m[len] == '\0'))
      return i;
  }
  return SIZE_MAX;
}

static void remember_missing(struct resolve_cache *c, const char *path, size_t len) {
  size_t i = missing_slot(c, path, len);
  if (i != SIZE_MAX && !c->missing[i] && c->nmissing < ARRAY_SIZE(c->missing) / 2)
    if ((c->missing[i] = strndup(path, len)))
      c->nmissing++;
}

/* The length of the shortest prefix of `path` (a directory above it, or
 * itself) known to be missing; 0 when none is. */
static size_t missing_prefix(const struct resolve_cache *c, const char *path) {
  if (!c || !c->nmissing)
    return 0;
  for (const char *p = path + 1;; p++)
    if (*p == '/' || *p == '\0') {
      size_t i = missing_slot(c, path, (size_t)(p - path));
      if (i != SIZE_MAX && c->missing[i])
        return (size_t)(p - path);
      if (!*p)
        return 0;
    }
}

static bool known_missing(const struct resolve_cache *c, const char *path) {
  return missing_prefix(c, path) != 0;
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
  if (known_missing(c, path))
    return false;
  if (!resolve_existing(path, out)) {
    if (errno == ENOENT && c)
      remember_missing(c, path, strlen(path));
    return false;
  }
  if (c)
    remember_parent(c, path, out);
  return true;
}

/* `in` resolves to `out`, a directory; false when the cache is full. */
static bool remember_parent(struct resolve_cache *c, const char *in, const char *out) {
  if (c->n == ARRAY_SIZE(c->in))
    return false;
  char *i = strdup(in), *o = strdup(out);
  if (!i || !o) {
    free(i), free(o);
    return false;
  }
  c->in[c->n] = i;
  c->out[c->n++] = o;
  return true;
}

/* A link whose target is no longer denied (an --allow-read of it) is no
 * longer covered either. */
static void drop_allowed_links(struct path_list *links, const struct path_list *deny) {
  for (size_t i = 0; i < links->n;) {
    char *target = path_resolve(links->v[i], NULL);
    if (target && path_list_has(deny, target)) {
      i++;
    } else {
      free(links->v[i]);
      links->v[i] = links->v[--links->n];
      links->v[links->n] = NULL;
    }
    free(target);
  }
}

/* `path` (absolute, resolving) ends in a symlink: the link's own real
 * place, its parent resolved, recorded. */
static void record_link(struct resolve_cache *c, const char *path) {
  struct stat st;
  char parent[PATH_MAX], rp[PATH_MAX];
  snprintf(parent, sizeof parent, "%s", path);
  normalise(parent);
  char *slash = strrchr(parent, '/');
  if (!slash || lstat(path, &st) < 0 || !S_ISLNK(st.st_mode))
    return;
  char name[NAME_MAX + 1];
  snprintf(name, sizeof name, "%s", slash + 1);
  if (slash == parent)
    slash[1] = '\0';
  else
    *slash = '\0';
  if (!resolve_parent(parent, rp, c))
    return;
  char link[PATH_MAX * 2];
  snprintf(link, sizeof link, "%s/%s", strcmp(rp, "/") == 0 ? "" : rp, name);
  if (strlen(link) < PATH_MAX && !path_list_has(c->links, link))
    path_list_add(c->links, link);
}

static char *resolve_cached(const char *path, struct resolve_cache *cache, corral_error *err) {
  char buf[PATH_MAX * 2], home[PATH_MAX];
  if (path[0] == '~' && (path[1] == '/' || path[1] == '\0')) {
    if (!user_home(home, sizeof home)) {
      error_set(err, -EINVAL, EINVAL, "path `%s`: no home directory (HOME is not set)", path);
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
  } else if (!cat3(buf, sizeof buf, path, "", "")) {
    error_set(err, -ENAMETOOLONG, ENAMETOOLONG, "path `%.64s...`: too long", path);
    return NULL;
  }
  if (strlen(buf) >= PATH_MAX) {
    error_set(err, -ENAMETOOLONG, ENAMETOOLONG, "path `%s`: too long", path);
    return NULL;
  }
  /* Below a directory already resolved, each further component is looked
   * up in that directory's listing: a missing one ends the walk (the rest
   * is as written), one that is no symlink extends the resolved path.
   * Most stores share a few parents (HOME, its .config), so this costs a
   * directory read or two instead of a lookup per path. */
  char *known = cache ? walk_listed(cache, buf) : NULL;
  if (known)
    return known;
  char real[PATH_MAX];
  if (!known_missing(cache, buf) && resolve_existing(buf, real)) {
    if (cache && cache->links && strcmp(real, buf) != 0)
      record_link(cache, buf);
    /* Its path had no symlink: so has its parent's, which is remembered
     * (in half the cache at most, the rest is the stores'), and siblings
     * given after it — three hundred --deny-read paths in one directory —
     * come from one listing of it. */
    char *slash = strrchr(buf, '/');
    if (cache && slash && slash != buf && strcmp(real, buf) == 0 &&
        cache->n < ARRAY_SIZE(cache->in) / 2) {
      *slash = '\0';
      if (cache_index(cache, buf) < 0)
        remember_parent(cache, buf, buf);
    }
    return strdup(real);
  }
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
  /* With a cache (profile_resolve, which adds well over a hundred paths)
   * duplicates go after sorting, not by a search per path. */
  int rc = 0;
  if (!cache && path_list_has(l, r))
    free(r);
  else
    rc = path_list_take(l, r);
  return rc < 0 ? error_set(err, rc, -rc, "out of memory") : 0;
}

int path_list_add_real(struct path_list *l, const char *path, corral_error *err) {
  return add_resolved(l, path, NULL, err);
}

/* ------------------------------------------------------ secret stores */

/* Where a store lies: below a home directory, below one of its XDG
 * directories ($XDG_CONFIG_HOME or ~/.config, $XDG_DATA_HOME or
 * ~/.local/share, $XDG_CACHE_HOME or ~/.cache), or only where a variable
 * says. */
enum store_base { IN_HOME, IN_CONFIG, IN_DATA, IN_CACHE, STORE_NBASES, ONLY_ENV = STORE_NBASES };

/* The usual secret stores of the user running corral: what logs in as the
 * user somewhere, and the histories people paste tokens into.  A tool's
 * variable (`env`, when absolute) names the store too, as $env followed by
 * `below_env`; the default place stays hidden as well, since the variable
 * may be set for this run only.  README.md lists the same table. */
static const struct secret_store {
  enum store_base base;
  const char *path, *env, *below_env;
} secret_stores[] = {
    /* Keys, password managers, keyrings. */
    {IN_HOME, ".ssh"},
    {IN_HOME, ".gnupg", "GNUPGHOME", ""},
    {IN_HOME, ".password-store", "PASSWORD_STORE_DIR", ""},
    {IN_DATA, "gopass"},
    {IN_DATA, "keyrings"}, /* GNOME keyring */
    {IN_DATA, "kwalletd"},
    {IN_CONFIG, "op"}, /* 1Password CLI */
    {IN_HOME, ".op"},
    {IN_CONFIG, "Bitwarden CLI", "BITWARDENCLI_APPDATA_DIR", ""},
    {IN_CONFIG, "sops/age/keys.txt", "SOPS_AGE_KEY_FILE", ""},
    {IN_HOME, ".minisign/minisign.key"},
    {IN_HOME, ".netrc", "NETRC", ""},
    {IN_HOME, ".authinfo"},
    {IN_HOME, ".authinfo.gpg"},
    {IN_HOME, ".env"}, /* read by aider and others as the user's own keys */

    /* AI agents' own credentials. */
    {IN_HOME, ".codex/auth.json", "CODEX_HOME", "/auth.json"},
    {IN_HOME, ".claude/.credentials.json", "CLAUDE_CONFIG_DIR", "/.credentials.json"},
    {IN_HOME, ".claude.json"}, /* Claude Code: an API key made at login */
    {IN_HOME, ".gemini/oauth_creds.json"},
    {IN_HOME, ".gemini/mcp-oauth-tokens.json"},
    {IN_HOME, ".gemini/.env"},
    {IN_CONFIG, "github-copilot"}, /* hosts.json, apps.json of the editor plug-ins */
    {IN_HOME, ".copilot/config.json"},
    {IN_HOME, ".aider/oauth-keys.env"},
    {IN_HOME, ".aider.conf.yml"},
    {IN_HOME, ".continue/.env"},
    {IN_DATA, "opencode/auth.json"},
    {IN_CONFIG, "goose/secrets.yaml"},
    {IN_CONFIG, "io.datasette.llm/keys.json", "LLM_USER_PATH", "/keys.json"},
    {IN_CACHE, "huggingface/token", "HF_TOKEN_PATH", ""},
    {ONLY_ENV, NULL, "HF_HOME", "/token"},
    {IN_HOME, ".huggingface/token"},
    {IN_HOME, ".kaggle/kaggle.json", "KAGGLE_CONFIG_DIR", "/kaggle.json"},
    {IN_CONFIG, "kaggle/kaggle.json"},
    {IN_HOME, ".ollama/id_ed25519"},

    /* Clouds and hosting. */
    {IN_HOME, ".aws"},
    {ONLY_ENV, NULL, "AWS_SHARED_CREDENTIALS_FILE", ""},
    {IN_HOME, ".azure", "AZURE_CONFIG_DIR", ""},
    {IN_CONFIG, "gcloud", "CLOUDSDK_CONFIG", ""},
    {ONLY_ENV, NULL, "GOOGLE_APPLICATION_CREDENTIALS", ""},
    {IN_HOME, ".boto", "BOTO_CONFIG", ""},
    {IN_HOME, ".oci"},
    {IN_CONFIG, "doctl"},
    {IN_HOME, ".fly"},
    {IN_HOME, ".aliyun"},
    {IN_HOME, ".bluemix"},
    {IN_CONFIG, "linode-cli"},
    {IN_CONFIG, "hcloud"},
    {IN_CONFIG, "scw"},
    {IN_CONFIG, "openstack"},
    {IN_HOME, ".s3cfg"},
    {IN_HOME, ".mc"}, /* MinIO client */
    {IN_HOME, ".passwd-s3fs"},
    {IN_CONFIG, "rclone/rclone.conf", "RCLONE_CONFIG", ""},
    {IN_HOME, ".rclone.conf"},
    {IN_HOME, ".vault-token"},
    {IN_HOME, ".terraform.d/credentials.tfrc.json"},
    {IN_HOME, ".terraformrc", "TF_CLI_CONFIG_FILE", ""},
    {IN_HOME, ".pulumi/credentials.json", "PULUMI_HOME", "/credentials.json"},
    {IN_HOME, ".databrickscfg", "DATABRICKS_CONFIG_FILE", ""},
    {IN_HOME, ".snowflake", "SNOWFLAKE_HOME", ""},
    {IN_HOME, ".dbt/profiles.yml", "DBT_PROFILES_DIR", "/profiles.yml"},
    {IN_HOME, ".sf"}, /* Salesforce */
    {IN_HOME, ".sfdx"},
    {IN_HOME, ".cloudflared"},
    {IN_HOME, ".wrangler/config"},
    {IN_CONFIG, ".wrangler/config"},
    {IN_DATA, "com.vercel.cli/auth.json"},
    {IN_CONFIG, "netlify/config.json"},
    {IN_HOME, ".supabase/access-token"},
    {IN_HOME, ".railway/config.json"},
    {IN_CONFIG, "configstore"}, /* firebase-tools, snyk and other Node CLIs */
    {IN_CONFIG, "stripe/config.toml"},
    {IN_CONFIG, "ngrok/ngrok.yml"},
    {IN_HOME, ".ngrok2/ngrok.yml"},
    {IN_HOME, ".sentryclirc"},
    {IN_HOME, ".jfrog", "JFROG_CLI_HOME_DIR", ""},

    /* Kubernetes and containers ($KUBECONFIG, a list, is read apart). */
    {IN_HOME, ".kube/config"},
    {IN_HOME, ".docker/config.json", "DOCKER_CONFIG", "/config.json"},
    {IN_HOME, ".docker/contexts/tls", "DOCKER_CONFIG", "/contexts/tls"},
    {IN_HOME, ".docker/key.pem", "DOCKER_CERT_PATH", "/key.pem"},
    {IN_CONFIG, "containers/auth.json", "REGISTRY_AUTH_FILE", ""},
    {IN_CONFIG, "helm/registry/config.json", "HELM_REGISTRY_CONFIG", ""},
    {IN_CONFIG, "helm/repositories.yaml", "HELM_REPOSITORY_CONFIG", ""},
    {IN_HOME, ".talos/config", "TALOSCONFIG", ""},

    /* Forges and version control. */
    {IN_HOME, ".git-credentials"},
    {IN_CONFIG, "git/credentials"},
    {IN_CONFIG, "gh/hosts.yml", "GH_CONFIG_DIR", "/hosts.yml"},
    {IN_CONFIG, "hub", "HUB_CONFIG", ""},
    {IN_CONFIG, "glab-cli", "GLAB_CONFIG_DIR", ""},
    {IN_CONFIG, "tea/config.yml"},
    {IN_HOME, ".subversion/auth"},

    /* Package registries.  pip.conf, .yarnrc.yml and .bunfig.toml are
     * where those tools' own documentation puts a private index's or
     * registry's token; hiding them at worst sends a command to the public
     * index. */
    {IN_HOME, ".npmrc", "NPM_CONFIG_USERCONFIG", ""},
    {ONLY_ENV, NULL, "npm_config_userconfig", ""},
    {IN_HOME, ".yarnrc.yml"},
    {IN_HOME, ".bunfig.toml"},
    {IN_CONFIG, ".bunfig.toml"},
    {IN_CONFIG, "pnpm/rc"},
    {IN_HOME, ".pypirc"},
    {IN_CONFIG, "pip/pip.conf", "PIP_CONFIG_FILE", ""},
    {IN_HOME, ".pip/pip.conf"},
    {IN_CONFIG, "pypoetry/auth.toml"},
    {IN_DATA, "uv/credentials"},
    {IN_HOME, ".cargo/credentials", "CARGO_HOME", "/credentials"},
    {IN_HOME, ".cargo/credentials.toml", "CARGO_HOME", "/credentials.toml"},
    {IN_HOME, ".gem/credentials"},
    {IN_DATA, "gem/credentials"},
    {IN_HOME, ".bundle/config", "BUNDLE_USER_CONFIG", ""},
    {IN_HOME, ".m2/settings.xml"},
    {IN_HOME, ".m2/settings-security.xml"},
    {IN_HOME, ".gradle/gradle.properties", "GRADLE_USER_HOME", "/gradle.properties"},
    {IN_HOME, ".nuget/NuGet/NuGet.Config"},
    {IN_CONFIG, "NuGet/NuGet.Config"},
    {IN_HOME, ".composer/auth.json", "COMPOSER_HOME", "/auth.json"},
    {IN_CONFIG, "composer/auth.json"},
    {IN_CONFIG, "dart/pub-credentials.json"},
    {IN_CONFIG, "dart/pub-tokens.json"},
    {IN_HOME, ".hex/hex.config", "HEX_HOME", "/hex.config"},
    {IN_HOME, ".julia/servers"},
    {IN_HOME, ".Renviron"}, /* where R's own tools keep GITHUB_PAT */

    /* Databases and mail. */
    {IN_HOME, ".pgpass", "PGPASSFILE", ""},
    {IN_HOME, ".pg_service.conf", "PGSERVICEFILE", ""},
    {IN_HOME, ".my.cnf"},
    {IN_HOME, ".mylogin.cnf", "MYSQL_TEST_LOGIN_FILE", ""},
    {IN_HOME, ".msmtprc"},
    {IN_CONFIG, "msmtp/config"},
    {IN_HOME, ".fetchmailrc"},

    /* Shell and REPL histories: tokens typed on command lines. */
    {IN_HOME, ".bash_history", "HISTFILE", ""},
    {IN_HOME, ".zsh_history"},
    {ONLY_ENV, NULL, "ZDOTDIR", "/.zsh_history"},
    {IN_HOME, ".zhistory"},
    {IN_HOME, ".histfile"},
    {IN_HOME, ".sh_history"},
    {IN_DATA, "fish/fish_history"},
    {IN_CONFIG, "nushell/history.txt"},
    {IN_CONFIG, "nushell/history.sqlite3"},
    {IN_DATA, "atuin/history.db"},
    {IN_HOME, ".python_history", "PYTHON_HISTORY", ""},
    {IN_HOME, ".psql_history", "PSQL_HISTORY", ""},
    {IN_HOME, ".mysql_history", "MYSQL_HISTFILE", ""},
    {IN_HOME, ".sqlite_history", "SQLITE_HISTORY", ""},
    {IN_HOME, ".rediscli_history", "REDISCLI_HISTFILE", ""},
    {IN_HOME, ".node_repl_history", "NODE_REPL_HISTORY", ""},
    {IN_HOME, ".irb_history"},
    {IN_DATA, "irb/irb_history"},
    {IN_HOME, ".mongodb/mongosh"},
    {IN_HOME, ".dbshell"},
    {IN_HOME, ".julia/logs/repl_history.jl"},

    /* Browsers, mail and chat clients: their cookies and tokens are logins. */
    {IN_HOME, ".mozilla"},
    {IN_HOME, ".thunderbird"},
    {IN_CONFIG, "google-chrome"},
    {IN_CONFIG, "chromium"},
    {IN_CONFIG, "BraveSoftware"},
    {IN_CONFIG, "microsoft-edge"},
    {IN_CONFIG, "Slack"},
    {IN_CONFIG, "discord"},
    {IN_CONFIG, "Signal"},
    {IN_DATA, "TelegramDesktop"},

    /* corral's own configuration: a command must not learn the policy's
     * holes from it, nor rewrite it. */
    {IN_CONFIG, "corral"},
};

/* Credential files of the system, hidden only when the caller can read
 * them (root; a member of the shadow or ssl-cert group): for anyone else
 * the permissions already keep them, at no cost. */
static const char *const system_stores[] = {
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
    "/var/backups/shadow.bak", "/var/backups/gshadow.bak", "/etc/security/opasswd",
    "/etc/sudoers", "/etc/sudoers.d",
    "/etc/ssl/private", "/etc/pki/tls/private", "/etc/letsencrypt/archive",
    "/etc/letsencrypt/keys", "/etc/letsencrypt/accounts",
    "/etc/krb5.keytab", "/var/lib/sss/db", "/var/lib/sss/secrets", "/var/lib/samba/private",
    "/etc/ldap.secret", "/etc/libnss-ldap.secret", "/etc/pam_ldap.secret",
    "/etc/NetworkManager/system-connections", "/var/lib/iwd", "/etc/wpa_supplicant.conf",
    "/etc/wireguard", "/etc/openvpn", "/etc/ipsec.secrets", "/etc/ipsec.d/private",
    "/etc/swanctl/private", "/etc/ppp/chap-secrets", "/etc/ppp/pap-secrets",
    "/var/lib/tailscale",
    "/etc/mysql/debian.cnf",
    "/etc/kubernetes/admin.conf", "/etc/kubernetes/super-admin.conf", "/etc/kubernetes/pki",
    "/etc/rancher/k3s/k3s.yaml", "/var/lib/rancher/k3s/server/token",
    "/var/lib/rancher/k3s/server/tls", "/etc/gitlab-runner/config.toml",
};

/* And those found by name: every `prefix*suffix` in `dir`. */
static const struct {
  const char *dir, *prefix, *suffix;
} system_store_names[] = {
    {"/etc/ssh", "ssh_host_", "_key"}, /* the private host keys, not the .pub */
    {"/etc/dropbear", "dropbear_", "_host_key"},
    {"/etc/wpa_supplicant", "", ".conf"}, /* network passphrases */
    {"/etc/netplan", "", ".yaml"},
};

/* Can the caller read `path` (a directory: reach what is in it)? */
static bool caller_can_read(const char *path) {
  struct stat st;
  if (faccessat(AT_FDCWD, path, R_OK, AT_EACCESS) == 0)
    return true;
  return errno != ENOENT && stat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
         faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) == 0;
}

/* Does a variable's value name a store?  HISTFILE=/dev/null and the like
 * turn a history off; hiding /dev/null would break every command. */
static bool names_store(const char *v) {
  struct stat st;
  if (!v || v[0] != '/')
    return false;
  return stat(v, &st) < 0 ? errno == ENOENT || errno == ENOTDIR
                          : S_ISREG(st.st_mode) || S_ISDIR(st.st_mode);
}

/* `a`, `sep` and `b` joined; a path too long to open names nothing to
 * hide. */
static int add_joined(struct path_list *l, const char *a, const char *sep, const char *b,
                      struct resolve_cache *cache, corral_error *err) {
  char buf[PATH_MAX];
  if (!cat3(buf, sizeof buf, a, sep, b))
    return 0;
  return add_resolved(l, buf, cache, err);
}

/* The stores below `home`; the XDG variables apply to the home HOME
 * names (`xdg`), not to the password entry's when HOME is elsewhere. */
static int add_stores_below(struct path_list *l, const char *home, bool xdg,
                            struct resolve_cache *cache, corral_error *err) {
  static const struct {
    const char *var, *in_home;
  } dirs[STORE_NBASES] = {
      [IN_HOME] = {NULL, ""},
      [IN_CONFIG] = {"XDG_CONFIG_HOME", "/.config"},
      [IN_DATA] = {"XDG_DATA_HOME", "/.local/share"},
      [IN_CACHE] = {"XDG_CACHE_HOME", "/.cache"},
  };
  char base[STORE_NBASES][PATH_MAX];
  for (size_t b = 0; b < STORE_NBASES; b++) {
    const char *v = xdg && dirs[b].var ? getenv(dirs[b].var) : NULL;
    if (v && v[0] == '/')
      snprintf(base[b], PATH_MAX, "%s", v);
    else
      snprintf(base[b], PATH_MAX, "%s%s", home, dirs[b].in_home);
  }
  int r = 0;
  for (size_t i = 0; i < ARRAY_SIZE(secret_stores) && r == 0; i++) {
    const struct secret_store *s = &secret_stores[i];
    if (s->base != ONLY_ENV)
      r = add_joined(l, base[s->base], "/", s->path, cache, err);
  }
  return r;
}

/* Every `prefix*suffix` in `dir` that the caller can read. */
static int add_system_names(struct path_list *l, const char *dir, const char *prefix,
                            const char *suffix, struct resolve_cache *cache, corral_error *err) {
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  size_t np = strlen(prefix), ns = strlen(suffix);
  int r = 0;
  struct dirent *de;
  while (r == 0 && (de = readdir(d))) {
    size_t n = strlen(de->d_name);
    if (n <= np + ns || strncmp(de->d_name, prefix, np) != 0 ||
        strcmp(de->d_name + n - ns, suffix) != 0)
      continue;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (caller_can_read(path))
      r = add_resolved(l, path, cache, err);
  }
  closedir(d);
  return r;
}

/* Paths that do not exist are kept: a store created while the command runs
 * must stay unreadable too (mounts.c hides them through their parent's
 * view, one mount for all of them). */
static int add_secret_stores(struct path_list *l, struct resolve_cache *cache,
                             corral_error *err) {
  char home[PATH_MAX], real_home[PATH_MAX];
  struct stat st;
  bool have_home = user_home(home, sizeof home);
  int r = have_home ? add_stores_below(l, home, true, cache, err) : 0;
  /* A HOME that is not the caller's own (sudo -E, HOME=/tmp) leaves the
   * stores where they really are: the password entry's home is covered
   * too.  Only then is the entry looked up (not on every run). */
  if (r == 0 && have_home && (stat(home, &st) < 0 || st.st_uid != geteuid()) &&
      passwd_home(real_home, sizeof real_home) && strcmp(home, real_home) != 0)
    r = add_stores_below(l, real_home, false, cache, err);
  for (size_t i = 0; i < ARRAY_SIZE(secret_stores) && r == 0; i++) {
    const struct secret_store *s = &secret_stores[i];
    const char *v = s->env ? getenv(s->env) : NULL;
    if (names_store(v))
      r = add_joined(l, v, "", s->below_env, cache, err);
  }
  /* KUBECONFIG is a list. */
  const char *kube = getenv("KUBECONFIG");
  if (kube && *kube && r == 0) {
    char list[PATH_MAX];
    snprintf(list, sizeof list, "%s", kube);
    for (char *save, *tok = strtok_r(list, ":", &save); tok && r == 0;
         tok = strtok_r(NULL, ":", &save))
      if (names_store(tok))
        r = add_resolved(l, tok, cache, err);
  }
  /* Stores only hidden when they exist: Kerberos tickets in /tmp, a write
   * root (no view there), and registry logins in the runtime directory,
   * where a view would cut the command off from the sockets beside them. */
  const char *krb = getenv("KRB5CCNAME"), *run = getenv("XDG_RUNTIME_DIR");
  char path[PATH_MAX];
  if (krb && strncmp(krb, "FILE:", 5) == 0)
    krb += 5;
  if (krb && krb[0] == '/')
    snprintf(path, sizeof path, "%s", krb);
  else
    snprintf(path, sizeof path, "/tmp/krb5cc_%u", (unsigned)geteuid());
  if (r == 0 && names_store(path) && caller_can_read(path))
    r = add_resolved(l, path, cache, err);
  if (run && run[0] == '/') {
    snprintf(path, sizeof path, "%s/containers/auth.json", run);
    if (r == 0 && caller_can_read(path))
      r = add_resolved(l, path, cache, err);
  }
  for (size_t i = 0; i < ARRAY_SIZE(system_stores) && r == 0; i++)
    if (caller_can_read(system_stores[i]))
      r = add_resolved(l, system_stores[i], cache, err);
  for (size_t i = 0; i < ARRAY_SIZE(system_store_names) && r == 0; i++)
    r = add_system_names(l, system_store_names[i].dir, system_store_names[i].prefix,
                         system_store_names[i].suffix, cache, err);
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

#define SOCKET_SCAN_MAX 65536

/* Every socket below `dir`, `depth` levels down; with `prefix`, only
 * through directories whose name starts with it and that the caller owns
 * (in /tmp: ssh-agent's ssh-<random>; other users' are theirs to guard, and
 * the rest of /tmp is not worth a look on every run).  At most *budget
 * entries are read in all; more is a setup failure. */
static int add_sockets_below(struct path_list *l, const char *dir, int depth, const char *prefix,
                             size_t *budget, struct resolve_cache *cache, corral_error *err) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  struct dir_iter it; /* no DIR: opendir's 32 KiB buffer per directory shows */
  dir_start(&it, fd);
  int r = 0;
  const char *name;
  unsigned char type;
  while (r == 0 && (name = dir_next(&it, &type))) {
    /* Past the budget nothing is known of what remains, and a command
     * could have filled /tmp to hide an agent's socket behind it: fail
     * closed, naming the directory. */
    if (*budget == 0) {
      r = error_set(err, CORRAL_ESETUP, 0,
                    "looking for daemons' sockets: `%s` holds too many entries to look at "
                    "(more than %d in all); empty it or pass --block-unix-sockets",
                    dir, SOCKET_SCAN_MAX);
      break;
    }
    (*budget)--;
    char path[PATH_MAX];
    if (!cat3(path, sizeof path, dir, "/", name))
      continue;
    struct stat st;
    bool wanted_dir = depth > 0 && (!prefix || strncmp(name, prefix, strlen(prefix)) == 0);
    if (type == DT_UNKNOWN || (type == DT_DIR && prefix && wanted_dir)) {
      if (lstat(path, &st) < 0)
        continue;
      type = S_ISSOCK(st.st_mode) ? DT_SOCK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
      if (type == DT_DIR && prefix && st.st_uid != geteuid())
        continue;
    }
    if (type == DT_SOCK)
      r = add_socket(l, path, cache, err);
    else if (type == DT_DIR && wanted_dir)
      r = add_sockets_below(l, path, depth - 1, NULL, budget, cache, err);
  }
  close(fd);
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
  char home[PATH_MAX], path[PATH_MAX];
  for (size_t i = 0; run && run[0] == '/' && i < ARRAY_SIZE(in_run) && r == 0; i++) {
    snprintf(path, sizeof path, "%s/%s", run, in_run[i]);
    r = add_socket(l, path, cache, err);
  }
  /* git's credential cache gives the passwords it holds to whoever asks. */
  if (r == 0 && xdg_dir("XDG_CACHE_HOME", ".cache", path, sizeof path) &&
      strlen(path) + sizeof "/git/credential/socket" <= sizeof path) {
    strcat(path, "/git/credential/socket");
    r = add_socket(l, path, cache, err);
  }
  if (r == 0 && user_home(home, sizeof home)) {
    snprintf(path, sizeof path, "%s/.git-credential-cache/socket", home);
    r = add_socket(l, path, cache, err);
  }
  /* Those the environment names: "unix://PATH", "unix:path=PATH[,...]". */
  const char *docker = getenv("DOCKER_HOST"), *dbus = getenv("DBUS_SESSION_BUS_ADDRESS");
  if (r == 0)
    r = add_socket(l, getenv("SSH_AUTH_SOCK"), cache, err);
  if (r == 0 && docker && strncmp(docker, "unix://", 7) == 0)
    r = add_socket(l, docker + 7, cache, err);
  if (r == 0 && dbus && strncmp(dbus, "unix:path=", 10) == 0) {
    snprintf(path, sizeof path, "%.*s", (int)strcspn(dbus + 10, ",;"), dbus + 10);
    r = add_socket(l, path, cache, err);
  }
  /* Terminal multiplexers and displays: tmux (TMUX is "socket,pid,index";
   * its directory is tmux-UID in TMUX_TMPDIR or /tmp), X servers, emacs. */
  const char *tmux = getenv("TMUX"), *tmux_dir = getenv("TMUX_TMPDIR");
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
  /* Beyond the names above, every socket where daemons acting as the user
   * listen: the user's runtime directory (sound, display, agents, buses,
   * the user's service manager), /tmp itself and ssh-agent's directories
   * there (ssh-<random>, the user's own); for root, all of /run, since every
   * root-owned socket there lets uid 0 in. */
  size_t budget = SOCKET_SCAN_MAX;
  if (run && run[0] == '/')
    snprintf(path, sizeof path, "%s", run);
  else
    snprintf(path, sizeof path, "/run/user/%u", (unsigned)geteuid());
  if (r == 0)
    r = add_sockets_below(l, path, 2, NULL, &budget, cache, err);
  if (r == 0)
    r = add_sockets_below(l, "/tmp", 1, "ssh-", &budget, cache, err);
  budget = SOCKET_SCAN_MAX;
  if (r == 0 && geteuid() == 0)
    r = add_sockets_below(l, "/run", 3, NULL, &budget, cache, err);
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

/* Sorted by length (outer roots before inner ones: mounts are applied in
 * this order), each path once. */
static void sort_unique(struct path_list *l) {
  if (l->n < 2)
    return;
  qsort(l->v, l->n, sizeof(char *), by_length);
  size_t kept = 1;
  for (size_t i = 1; i < l->n; i++) {
    if (strcmp(l->v[i], l->v[kept - 1]) == 0)
      free(l->v[i]);
    else
      l->v[kept++] = l->v[i];
  }
  l->n = kept;
  l->v[kept] = NULL;
}

int profile_resolve(const corral_policy *p, char *const *roots, size_t nroots, struct profile *pr,
                    corral_error *err) {
  int r = 0;
  struct resolve_cache cache = {0};
  memset(pr, 0, sizeof *pr);
  pr->enforce = p->enforce;
  pr->network_allow = p->network_allow;
  pr->network_filter = p->network_filter;
  pr->net = &p->net;
  limits_resolve(p->limits, pr->limits);
  pr->block_unix = p->block_unix;
  pr->record_refusals = p->record_refusals;
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
  cache.links = &pr->deny_links;
  for (size_t i = 0; i < L[CORRAL_POLICY_DENY_READ].n && r == 0; i++)
    r = add_resolved(&pr->deny_read, L[CORRAL_POLICY_DENY_READ].v[i], &cache, err);
  if (r == 0 && p->enforce)
    r = add_secret_stores(&pr->deny_read, &cache, err);
  cache.links = NULL;
  /* With Unix sockets refused, no daemon's can be reached: none to hide. */
  if (r == 0 && p->enforce && !p->block_unix)
    r = add_daemon_sockets(&pr->hidden_sockets, &cache, err);
  for (size_t i = 0; i < L[CORRAL_POLICY_ALLOW_READ].n && r == 0; i++)
    r = add_resolved(&pr->allow_read, L[CORRAL_POLICY_ALLOW_READ].v[i], &cache, err);
  if (r == 0) {
    drop_reincluded(&pr->deny_read, &pr->allow_read);
    drop_reincluded(&pr->hidden_sockets, &pr->allow_read);
    drop_allowed_links(&pr->deny_links, &pr->deny_read);
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
  for (size_t i = 0; i < L[CORRAL_POLICY_ALLOW_PROTECTED].n && r == 0; i++)
    r = add_resolved(&pr->allow_protected, L[CORRAL_POLICY_ALLOW_PROTECTED].v[i], &cache, err);
  for (size_t i = 0; i < L[CORRAL_POLICY_SENSITIVE_ENV].n && r == 0; i++)
    r = path_list_add(&pr->sensitive_env, L[CORRAL_POLICY_SENSITIVE_ENV].v[i]);
  pr->restricted_read = !path_list_has(&pr->read_roots, "/");
  for (size_t i = 0; i < ARRAY_SIZE(platform_candidates) && r == 0; i++) {
    struct stat st;
    if (lstat(platform_candidates[i], &st) == 0)
      r = path_list_add(&pr->platform_roots, platform_candidates[i]);
  }
  if (r < 0) {
    resolve_cache_free(&cache);
    profile_free(pr);
    return err && err->code ? err->code : error_set(err, r, -r, "resolving the policy");
  }
  /* Outer roots before inner ones: mounts are applied in this order. */
  struct path_list *sorted[] = {&pr->write_roots, &pr->deny_write, &pr->deny_read,
                                 &pr->allow_read, &pr->read_roots, &pr->hidden_sockets,
                                 &pr->deny_links};
  for (size_t i = 0; i < ARRAY_SIZE(sorted); i++)
    sort_unique(sorted[i]);
  if (pr->deny_read.n && (pr->deny_missing = calloc(pr->deny_read.n, sizeof(size_t))))
    for (size_t i = 0; i < pr->deny_read.n; i++)
      pr->deny_missing[i] = missing_from(&cache, pr->deny_read.v[i]);
  resolve_cache_free(&cache);
  return 0;
}

void profile_created(struct profile *pr, const char *path) {
  for (size_t i = 0; pr->deny_missing && i < pr->deny_read.n; i++) {
    size_t m = pr->deny_missing[i];
    if (m && m != SIZE_MAX && strncmp(path, pr->deny_read.v[i], m) == 0 &&
        (path[m] == '/' || path[m] == '\0'))
      pr->deny_missing[i] = SIZE_MAX;
  }
}

void profile_free(struct profile *pr) {
  path_list_free(&pr->read_roots);
  path_list_free(&pr->write_roots);
  path_list_free(&pr->deny_read);
  free(pr->deny_missing);
  pr->deny_missing = NULL;
  path_list_free(&pr->deny_write);
  path_list_free(&pr->pinned);
  path_list_free(&pr->hidden_sockets);
  path_list_free(&pr->deny_links);
  path_list_free(&pr->allow_read);
  path_list_free(&pr->platform_roots);
  path_list_free(&pr->protected_names);
  path_list_free(&pr->allow_protected);
  path_list_free(&pr->sensitive_env);
}

static json_t *list_json(const struct path_list *l) {
  json_t *a = json_array();
  for (size_t i = 0; i < l->n; i++)
    json_array_append_new(a, json_string(l->v[i]));
  return a;
}

/* `corral policy`'s view of the network rules, deny entries first as
 * they are checked. */
static json_t *net_rules_json(const struct net_rules *r) {
  json_t *o = json_object(), *allow = json_array(), *deny = json_array(), *ranges = json_array();
  for (size_t i = 0; i < r->n; i++) {
    char e[NET_HOST_MAX + 16];
    net_rule_format(&r->v[i], e, sizeof e);
    if (!r->v[i].deny)
      json_array_append_new(allow, json_string(e));
    else if (r->v[i].reason)
      json_array_append_new(deny, json_pack("{s:s,s:s}", "domain", e, "reason", r->v[i].reason));
    else
      json_array_append_new(deny, json_string(e));
  }
  for (size_t i = 0; i < r->nallowed; i++) {
    char e[64];
    net_range_format(&r->allowed[i], e, sizeof e);
    json_array_append_new(ranges, json_string(e));
  }
  json_object_set_new(o, "denyDomains", deny);
  json_object_set_new(o, "allowDomains", allow);
  json_object_set_new(o, "portsWithoutOne", json_string("80, 443"));
  json_object_set_new(o, "refusedAddresses", json_string(NET_GUARDED_TEXT));
  json_object_set_new(o, "allowAddresses", ranges);
  json_object_set_new(o, "httpProxy", json_string("http://127.0.0.1:3128"));
  json_object_set_new(o, "socksProxy", json_string("socks5h://127.0.0.1:1080"));
  return o;
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
  json_object_set_new(o, "allowProtected", list_json(&pr->allow_protected));
  json_object_set_new(o, "network", json_string(pr->network_allow    ? "allow"
                                                : pr->network_filter ? "filter"
                                                                     : "deny"));
  if (pr->network_filter)
    json_object_set_new(o, "networkRules", net_rules_json(pr->net));
  json_object_set_new(o, "blockUnixSockets", json_boolean(pr->block_unix));
  json_object_set_new(o, "recordRefusals", json_boolean(pr->record_refusals));
  json_t *lim = json_object();
  for (int i = 1; i < CORRAL_LIMIT_COUNT; i++)
    json_object_set_new(lim, limit_keys[i],
                        !pr->limits[i]                ? json_string("none")
                        : i == CORRAL_LIMIT_CPU_TIME ? json_real((double)pr->limits[i] / 1000)
                        : json_integer(limits_value(pr->limits, (corral_limit)i)));
  json_object_set_new(o, "limits", lim);
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
