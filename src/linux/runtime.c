/*
 * runtime.c — per-workspace runtime directories for caches and temp files.
 *
 * Layout: <cache>/corral/runtime/v1/<first 16 hex of sha256(workspace)>/
 *         {cache,data,tmp} (mode 0700), and beside it <name>.lease.
 *
 * Invariants:
 *   1. a command using a directory holds a shared flock on its lease for
 *      the whole run;
 *   2. a directory is removed only by whoever holds the exclusive lock,
 *      taken without blocking, so one in use is never removed;
 *   3. an acquirer checks, after locking, that the lease it locked is still
 *      the one on disk (a remover may have unlinked it in between).
 * Removal: directories older than 30 days, or beyond the newest 64, looked
 * for when a run makes a new directory or the last look is an hour old (a
 * scan on every launch would sit on the hot path).
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "../internal.h"
#include "../policy.h"
#include "../sha256.h"
#include "linux.h"

#define RUNTIME_MAX_AGE (30L * 24 * 3600)
#define RUNTIME_KEEP 64
#define CLEANUP_EVERY (3600L)

/* Is a cleanup scan due?  Marks it done (the stamp) when it is. */
static bool cleanup_due(const char *base, bool created) {
  char stamp[PATH_MAX];
  struct stat st;
  snprintf(stamp, sizeof stamp, "%s/.cleaned", base);
  if (!created && stat(stamp, &st) == 0 && time(NULL) - st.st_mtime < CLEANUP_EVERY)
    return false;
  int fd = open(stamp, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd >= 0) {
    futimens(fd, NULL);
    close(fd);
  }
  return true;
}

/* The base directory, or "" when there is none that fits. */
static void runtime_base(char *out, size_t size) {
  char cache[PATH_MAX];
  if (xdg_dir("XDG_CACHE_HOME", ".cache", cache, sizeof cache))
    snprintf(out, size, "%s/corral/runtime/v1", cache);
  else
    out[0] = '\0';
}

bool runtime_mask_cache(char *out, size_t size, const struct path_list *write_roots) {
  /* Not under HOME, where the views are: overlayfs refuses a layer inside
   * another.  One place for every run of the user's, whatever its
   * environment: each run must know where the masks are to keep them out
   * of its command's reach (a second place, named by a variable, would be
   * writable to a run that did not know of it).  A directory of the user's
   * own in /var/tmp — only the user's and only theirs (a directory someone
   * else made there first is not used). */
  struct stat st;
  snprintf(out, size, "/var/tmp/corral-masks-%u", (unsigned)geteuid());
  if ((mkdir(out, 0700) < 0 && errno != EEXIST) || lstat(out, &st) < 0 || !S_ISDIR(st.st_mode) ||
      st.st_uid != geteuid() || (st.st_mode & 077)) {
    out[0] = '\0';
    return false;
  }
  char *real = path_resolve(out, NULL);
  snprintf(out, size, "%s", real ? real : "");
  free(real);
  /* A write root above it, or inside it (a mask's own directory). */
  for (size_t i = 0; i < write_roots->n; i++)
    if (out[0] && (path_is_under(out, write_roots->v[i]) || path_is_under(write_roots->v[i], out)))
      return true;
  return false;
}

struct entry {
  char name[32];
  time_t mtime;
};

static int newest_first(const void *a, const void *b) {
  time_t x = ((const struct entry *)a)->mtime, y = ((const struct entry *)b)->mtime;
  return x < y ? 1 : x > y ? -1 : 0;
}

void runtime_cleanup(const char *base, time_t max_age, size_t keep) {
  DIR *d = opendir(base);
  if (!d)
    return;
  struct entry *e = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (strlen(de->d_name) != 16 || strspn(de->d_name, "0123456789abcdef") != 16)
      continue;
    struct stat st;
    if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
      continue;
    if (n == cap) {
      struct entry *g = realloc(e, (cap = cap ? cap * 2 : 64) * sizeof *e);
      if (!g)
        break;
      e = g;
    }
    snprintf(e[n].name, sizeof e[n].name, "%s", de->d_name);
    e[n++].mtime = st.st_mtime;
  }
  closedir(d);
  if (n > 1)
    qsort(e, n, sizeof *e, newest_first);
  time_t now = time(NULL);
  for (size_t i = 0; i < n; i++) {
    if (i < keep && now - e[i].mtime <= max_age)
      continue;
    char dir[PATH_MAX], lease[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", base, e[i].name);
    snprintf(lease, sizeof lease, "%s.lease", dir);
    int fd = open(lease, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
      continue;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      remove_tree(dir, false);
      unlink(lease);
    }
    close(fd); /* releases the lock */
  }
  free(e);
}

int runtime_acquire(const char *workspace, const struct path_list *roots, struct runtime_lease *rl,
                    corral_error *err) {
  char base[PATH_MAX], hex[65];
  rl->lease_fd = -1;
  rl->private_dir = false;
  runtime_base(base, sizeof base);
  bool usable = base[0] != '\0';
  for (size_t i = 0; usable && i < roots->n; i++)
    if (path_is_under(base, roots->v[i]))
      usable = false; /* never inside the workspace */
  if (usable && mkdir_p(base, 0700) < 0)
    usable = false;
  if (usable) {
    sha256_hex(workspace, strlen(workspace), hex);
    hex[16] = '\0';
    snprintf(rl->root, sizeof rl->root, "%s/%s", base, hex);
    char lease[PATH_MAX + 8];
    snprintf(lease, sizeof lease, "%s.lease", rl->root);
    for (int attempt = 0; attempt < 5 && rl->lease_fd < 0; attempt++) {
      int fd = open(lease, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd < 0)
        break;
      struct stat a, b;
      if (flock(fd, LOCK_SH) == 0 && fstat(fd, &a) == 0 && stat(lease, &b) == 0 &&
          a.st_ino == b.st_ino && a.st_dev == b.st_dev)
        rl->lease_fd = fd; /* invariant 3 */
      else
        close(fd);
    }
    if (rl->lease_fd < 0)
      usable = false;
  }
  if (!usable) {
    /* A private directory outside the workspace, removed after the run
     * (the six X are mkdtemp's template, replaced by it). */
    snprintf(rl->root, sizeof rl->root, "/tmp/corral-runtime-XXXXXX");
    if (!mkdtemp(rl->root))
      return error_sys(err, "runtime directory: mkdtemp `%s`", rl->root);
    rl->private_dir = true;
  }
  static const char *const subdirs[] = {"", "/cache", "/data", "/tmp"};
  bool created = false;
  for (size_t i = 0; i < ARRAY_SIZE(subdirs); i++) {
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s%s", rl->root, subdirs[i]);
    int made = mkdir(path, 0700);
    if (i == 0)
      created = made == 0;
    if (made < 0 && errno != EEXIST) {
      int r = error_sys(err, "runtime directory: mkdir `%s`", path);
      runtime_release(rl);
      return r;
    }
  }
  /* Its real path: the sandbox is built by path, and a symlink on the way
   * (a symlinked HOME or cache directory) would lead outside the new root
   * while it is being built. */
  char *real = path_resolve(rl->root, NULL);
  if (real) {
    snprintf(rl->root, sizeof rl->root, "%s", real);
    free(real);
  }
  utimensat(AT_FDCWD, rl->root, NULL, 0); /* most recently used */
  if (!rl->private_dir && cleanup_due(base, created))
    runtime_cleanup(base, RUNTIME_MAX_AGE, RUNTIME_KEEP);
  return 0;
}

void runtime_release(struct runtime_lease *rl) {
  if (rl->private_dir && rl->root[0])
    remove_tree(rl->root, false);
  if (rl->lease_fd >= 0)
    close(rl->lease_fd);
  rl->lease_fd = -1;
  rl->root[0] = '\0';
}
