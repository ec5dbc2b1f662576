/*
 * observer.c — which files a command created, modified or deleted.
 *
 * A snapshot is a sorted list of entries (relative path, type, lstat data).
 * Modification is decided by lstat data, ctime included: a process cannot
 * set ctime, so a write that restores the old mtime and size (touch -r,
 * utimes) still shows.  A file rewritten with identical content is
 * therefore reported as modified — always, whatever its size.
 *
 * Timestamps come from a coarse clock on older kernels, so a file written
 * twice within one tick may keep its ctime.  As git does for "racily clean"
 * index entries, files whose ctime is within RACY_SECONDS of the first
 * snapshot also get their content hashed (up to 1 MiB each, 32 MiB in
 * all), and an unchanged stat with a changed hash counts as modified.
 *
 * Invariants:
 *   1. never follows a symlink (lstat, O_NOFOLLOW, openat from the root);
 *   2. `.git` and the protected names are skipped at any depth;
 *   3. generated trees are one aggregated entry `name/` whose count is the
 *      number of direct children (-1 above 256), never entered;
 *   4. beyond CORRAL_OBSERVE_MAX_FILES entries, or OBSERVE_MAX_DEPTH levels of
 *      directories, or when a directory cannot be opened for want of
 *      descriptors, the snapshot is incomplete (and says which) and no
 *      report is made from it: the tree is the command's, so its depth is
 *      bounded here rather than by the stack or the descriptor table;
 *   5. unreadable directories and files are skipped, never fatal.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

#include <pthread.h>
#include <stdatomic.h>

#include "internal.h"
#include "observer.h"
#include "policy.h"
#include "sha256.h"

#define RACY_SECONDS 3
#define HASH_FILE_MAX (1 << 20)
#define HASH_TOTAL_MAX (32 << 20)

/* What the scanning threads share. */
struct scan_shared {
  atomic_size_t files;        /* non-directories seen: the bound counts these */
  atomic_size_t hashed_bytes;
  atomic_bool incomplete;
  atomic_int why;             /* with incomplete: INCOMPLETE_* */
  struct timespec taken;
  const char *const *names;   /* protected names, borrowed */
  size_t nnames;
  /* top-level directories handed out to the workers */
  int rootfd;
  char **top;
  size_t ntop;
  atomic_size_t next;
};

enum { INCOMPLETE_FILES = 1, INCOMPLETE_DEPTH, INCOMPLETE_FDS };

static void give_up(struct scan_shared *sh, int why) {
  int none = 0;
  atomic_compare_exchange_strong(&sh->why, &none, why);
  atomic_store(&sh->incomplete, true);
}

/* One thread's entries; merged into the snapshot at the end. */
struct scan_list {
  struct entry *e;
  size_t n, cap;
  struct scan_shared *sh;
  int rc;
};

bool observe_skipped(const char *const *names, size_t nnames, const char *name) {
  if (strcmp(name, ".git") == 0)
    return true;
  if (!names) {
    static const char *const defaults[] = {".agents", ".corral"};
    for (size_t i = 0; i < ARRAY_SIZE(defaults); i++)
      if (strcmp(name, defaults[i]) == 0)
        return true;
    return false;
  }
  for (size_t i = 0; i < nnames; i++)
    if (strcmp(name, names[i]) == 0)
      return true;
  return false;
}

bool observe_generated(const char *name) {
  static const char *const generated[] = {"node_modules", ".pnpm-store", ".yarn",
                                          "dist",         "coverage",    ".cache"};
  for (size_t i = 0; i < ARRAY_SIZE(generated); i++)
    if (strcmp(name, generated[i]) == 0)
      return true;
  return false;
}

static struct entry *add(struct scan_list *s) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    struct entry *g = realloc(s->e, cap * sizeof *g);
    if (!g)
      return NULL;
    s->e = g;
    s->cap = cap;
  }
  struct entry *e = &s->e[s->n++];
  memset(e, 0, sizeof *e);
  return e;
}

long observe_count_children(int dirfd_) {
  DIR *d = fdopendir(dirfd_);
  if (!d) {
    close(dirfd_);
    return 0;
  }
  long n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && ++n > AGGREGATE_COUNT_MAX) {
      n = -1;
      break;
    }
  closedir(d);
  return n;
}

/* Invariant 1: openat2 where the kernel has it, a component-by-component
 * walk with O_NOFOLLOW elsewhere. */
static atomic_bool no_openat2;

int open_beneath(int dirfd_, const char *path, int flags) {
  int fd;
  if (!atomic_load(&no_openat2)) {
    struct open_how how = {.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK),
                           .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH};
    fd = (int)syscall(SYS_openat2, dirfd_, path, &how, sizeof how);
    if (fd >= 0 || errno != ENOSYS)
      return fd;
    atomic_store(&no_openat2, true);
  }
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  int cur = dirfd_;
  char *save, *part = strtok_r(buf, "/", &save);
  while (part) {
    char *next = strtok_r(NULL, "/", &save);
    if (strcmp(part, "..") == 0 || strcmp(part, ".") == 0) {
      fd = -1;
      errno = EXDEV;
    } else {
      fd = openat(cur, part,
                  (next ? O_DIRECTORY | O_PATH : flags | O_NONBLOCK) | O_NOFOLLOW | O_CLOEXEC);
    }
    if (cur != dirfd_)
      close(cur);
    if (fd < 0 || !next)
      return fd;
    cur = fd;
    part = next;
  }
  return -1;
}

static bool hash_file(int dirfd_, const char *name, off_t size, unsigned char out[32]) {
  int fd = open_beneath(dirfd_, name, O_RDONLY);
  if (fd < 0)
    return false;
  char *buf = malloc(size > 0 ? (size_t)size : 1);
  ssize_t got = 0, r = 0;
  while (buf && got < size && (r = read(fd, buf + got, (size_t)(size - got))) > 0)
    got += r;
  close(fd);
  bool ok = buf && r >= 0 && got == size;
  if (ok)
    sha256(buf, (size_t)got, out);
  free(buf);
  return ok;
}

static bool racy(const struct scan_shared *s, const struct stat *st) {
  return st->st_ctim.tv_sec >= s->taken.tv_sec - RACY_SECONDS;
}

/* Scans a directory `depth` levels below the root; with `top` (the root,
 * scanned by the first thread) its subdirectories are not entered but
 * queued for the workers. */
static int scan(struct scan_list *s, int dirfd_, const char *prefix, struct path_list *top,
                int depth) {
  struct scan_shared *sh = s->sh;
  DIR *d = fdopendir(dirfd_);
  if (!d) {
    close(dirfd_);
    return 0; /* invariant 5 */
  }
  struct dirent *de;
  int rc = 0;
  while (rc == 0 && (de = readdir(d))) {
    const char *name = de->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
        observe_skipped(sh->names, sh->nnames, name))
      continue;
    struct stat st;
    if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) < 0)
      continue;
    if (atomic_load(&sh->incomplete) ||
        (!S_ISDIR(st.st_mode) && atomic_fetch_add(&sh->files, 1) >= CORRAL_OBSERVE_MAX_FILES)) {
      give_up(sh, INCOMPLETE_FILES);
      rc = 1;
      break;
    }
    size_t plen = strlen(prefix) + strlen(name) + 3;
    char *path = malloc(plen);
    struct entry *e = path ? add(s) : NULL;
    if (!e) {
      free(path);
      rc = -ENOMEM;
      break;
    }
    bool dir = S_ISDIR(st.st_mode), gen = dir && observe_generated(name);
    snprintf(path, plen, "%s%s%s", prefix, name, gen ? "/" : "");
    e->path = path;
    e->mode = st.st_mode;
    e->size = dir ? 0 : st.st_size;
    e->ino = st.st_ino;
    e->mtime = st.st_mtim;
    e->ctime = st.st_ctim;
    if (gen) {
      e->aggregated = true;
      int fd = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      e->count = fd >= 0 ? observe_count_children(fd) : 0;
    } else if (dir && top) {
      if (path_list_add(top, name) < 0)
        rc = -ENOMEM;
    } else if (dir && depth >= OBSERVE_MAX_DEPTH) {
      give_up(sh, INCOMPLETE_DEPTH);
      rc = 1;
    } else if (dir) {
      int fd = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      char *sub = fd >= 0 ? malloc(plen + 1) : NULL;
      if (sub) {
        snprintf(sub, plen + 1, "%s/", path);
        rc = scan(s, fd, sub, NULL, depth + 1);
        free(sub);
      } else if (fd >= 0) {
        close(fd);
        rc = -ENOMEM;
      } else if (errno == EMFILE || errno == ENFILE) {
        give_up(sh, INCOMPLETE_FDS);
        rc = 1;
      }
    } else if (S_ISREG(st.st_mode) && racy(sh, &st) && st.st_size <= HASH_FILE_MAX &&
               atomic_fetch_add(&sh->hashed_bytes, (size_t)st.st_size) + (size_t)st.st_size <=
                   HASH_TOTAL_MAX) {
      /* e may move when add() grows the array: index, not pointer. */
      size_t idx = (size_t)(e - s->e);
      if (hash_file(dirfd(d), name, st.st_size, s->e[idx].hash))
        s->e[idx].hashed = true;
    }
  }
  closedir(d);
  return rc;
}

static int by_path(const void *a, const void *b) {
  return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

static void *worker(void *arg) {
  struct scan_list *l = arg;
  struct scan_shared *sh = l->sh;
  size_t i;
  /* Once the snapshot is incomplete, nothing more is opened: past a
   * limit the cost stops growing with the tree. */
  while (l->rc >= 0 && !atomic_load(&sh->incomplete) &&
         (i = atomic_fetch_add(&sh->next, 1)) < sh->ntop) {
    const char *name = sh->top[i];
    int fd = openat(sh->rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      continue;
    char prefix[4096];
    snprintf(prefix, sizeof prefix, "%s/", name);
    int r = scan(l, fd, prefix, NULL, 1);
    if (r < 0)
      l->rc = r;
  }
  return NULL;
}

static int merge(corral_snapshot *s, struct scan_list *l) {
  if (l->n && s->n + l->n > s->cap) {
    struct entry *g = realloc(s->e, (s->n + l->n) * sizeof *g);
    if (!g)
      return -ENOMEM;
    s->e = g;
    s->cap = s->n + l->n;
  }
  if (l->n)
    memcpy(s->e + s->n, l->e, l->n * sizeof *l->e);
  s->n += l->n;
  free(l->e);
  l->e = NULL;
  l->n = 0;
  return 0;
}

/* The scan is I/O-bound metadata work: like git's preloaded index, it
 * spreads the top-level directories over a few threads. */
#define SCAN_THREADS 4

int corral_snapshot_take(const char *root, const char *const *names, size_t nnames,
                         corral_snapshot **out, corral_error *err) {
  *out = NULL;
  corral_snapshot *s = calloc(1, sizeof *s);
  if (!s || !(s->root = strdup(root))) {
    free(s);
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  }
  struct scan_shared sh = {.names = names, .nnames = nnames};
  atomic_init(&sh.files, 0);
  atomic_init(&sh.hashed_bytes, 0);
  atomic_init(&sh.incomplete, false);
  atomic_init(&sh.why, 0);
  atomic_init(&sh.next, 0);
  clock_gettime(CLOCK_REALTIME, &sh.taken);
  int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int r = error_sys(err, "observing `%s`", root);
    corral_snapshot_free(s);
    return r;
  }
  sh.rootfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  struct path_list top = {0};
  struct scan_list lists[SCAN_THREADS];
  memset(lists, 0, sizeof lists);
  for (int i = 0; i < SCAN_THREADS; i++)
    lists[i].sh = &sh;
  int r = scan(&lists[0], fd, "", &top, 0);
  sh.top = top.v;
  sh.ntop = top.n;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int nthreads = cpus < 2 ? 1 : cpus > SCAN_THREADS ? SCAN_THREADS : (int)cpus;
  if (top.n < 8)
    nthreads = 1; /* not worth a thread */
  pthread_t th[SCAN_THREADS];
  int started = 0;
  for (int i = 1; r >= 0 && i < nthreads; i++)
    if (pthread_create(&th[i], NULL, worker, &lists[i]) == 0)
      started = i;
  if (r >= 0)
    worker(&lists[0]);
  for (int i = 1; i <= started; i++)
    pthread_join(th[i], NULL);
  close(sh.rootfd);
  path_list_free(&top);
  for (int i = 0; i < SCAN_THREADS; i++) {
    if (lists[i].rc < 0)
      r = lists[i].rc;
    if (merge(s, &lists[i]) < 0)
      r = -ENOMEM;
  }
  for (int i = 0; i < SCAN_THREADS; i++) {
    for (size_t k = 0; k < lists[i].n; k++)
      free(lists[i].e[k].path);
    free(lists[i].e);
  }
  s->incomplete = atomic_load(&sh.incomplete);
  if (r < 0) {
    corral_snapshot_free(s);
    return error_set(err, r, -r, "observing `%s`: out of memory", root);
  }
  if (s->incomplete) {
    char why[128];
    int w = atomic_load(&sh.why);
    if (w == INCOMPLETE_DEPTH)
      snprintf(why, sizeof why, "the workspace has directories more than %d levels deep",
               OBSERVE_MAX_DEPTH);
    else if (w == INCOMPLETE_FDS)
      snprintf(why, sizeof why, "too many open files to observe the workspace");
    else
      snprintf(why, sizeof why, "the workspace has more than %d files", CORRAL_OBSERVE_MAX_FILES);
    s->why = strdup(why);
  }
  if (s->n > 1)
    qsort(s->e, s->n, sizeof *s->e, by_path);
  *out = s;
  return 0;
}

void corral_snapshot_free(corral_snapshot *s) {
  if (!s)
    return;
  for (size_t i = 0; i < s->n; i++)
    free(s->e[i].path);
  free(s->e);
  free(s->root);
  free(s->why);
  free(s);
}

static bool same_time(struct timespec a, struct timespec b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* Was the entry modified?  Stat first; for racily clean files, content. */
static bool modified(const corral_snapshot *after, const struct entry *a, const struct entry *b) {
  if ((a->mode & S_IFMT) != (b->mode & S_IFMT))
    return true;
  if (a->aggregated)
    return a->count != b->count || !same_time(a->mtime, b->mtime) || a->ino != b->ino;
  if (S_ISDIR(a->mode))
    return false; /* its children speak for it */
  if (a->size != b->size || a->ino != b->ino || a->mode != b->mode ||
      !same_time(a->mtime, b->mtime) || !same_time(a->ctime, b->ctime))
    return true;
  if (!a->hashed)
    return false;
  unsigned char now[32];
  int dfd = open(after->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  bool ok = dfd >= 0 && hash_file(dfd, b->path, b->size, now);
  if (dfd >= 0)
    close(dfd);
  return !ok || memcmp(now, a->hash, sizeof now) != 0;
}

int change_push(corral_outcome *out, size_t *cap, const char *path, corral_change_kind kind,
                bool aggregated, long count) {
  if (out->nchanges == *cap) {
    size_t ncap = *cap ? *cap * 2 : 16;
    corral_change *g = realloc(out->changes, ncap * sizeof *g);
    if (!g)
      return -ENOMEM;
    out->changes = g;
    *cap = ncap;
  }
  corral_change *c = &out->changes[out->nchanges];
  if (!(c->path = strdup(path)))
    return -ENOMEM;
  c->kind = kind;
  c->aggregated = aggregated;
  c->count = aggregated ? count : 0;
  out->nchanges++;
  return 0;
}

static int push_change(corral_outcome *out, size_t *cap, const struct entry *e,
                       corral_change_kind kind) {
  return change_push(out, cap, e->path, kind, e->aggregated, e->count);
}

void changes_clear(corral_outcome *out) {
  for (size_t i = 0; i < out->nchanges; i++)
    free(out->changes[i].path);
  free(out->changes);
  out->changes = NULL;
  out->nchanges = 0;
  out->changes_present = false;
}

void snapshot_conclude(corral_snapshot *before, const char *root, corral_outcome *out) {
  corral_snapshot *after = NULL;
  corral_error err = {0};
  /* An incomplete first snapshot makes no report: no second scan. */
  if (before->incomplete) {
    free(out->changes_skipped);
    out->changes_skipped = strdup(before->why);
  } else if (corral_snapshot_take(root, NULL, 0, &after, &err) < 0 ||
             corral_snapshot_diff(before, after, out, &err) < 0) {
    free(out->changes_skipped);
    out->changes_skipped = strdup(err.message);
  }
  corral_snapshot_free(after);
  corral_snapshot_free(before);
}

int corral_snapshot_diff(const corral_snapshot *a, const corral_snapshot *b, corral_outcome *out,
                         corral_error *err) {
  changes_clear(out);
  free(out->changes_skipped);
  out->changes_skipped = NULL;
  if (a->incomplete || b->incomplete) {
    out->changes_skipped = strdup(a->incomplete ? a->why : b->why);
    return 0; /* invariant 4: no report rather than a wrong one */
  }
  size_t i = 0, k = 0, cap = 0;
  int r = 0;
  while (r == 0 && (i < a->n || k < b->n)) {
    int c = i == a->n ? 1 : k == b->n ? -1 : strcmp(a->e[i].path, b->e[k].path);
    if (c < 0)
      r = push_change(out, &cap, &a->e[i++], CORRAL_CHANGE_DELETED);
    else if (c > 0)
      r = push_change(out, &cap, &b->e[k++], CORRAL_CHANGE_CREATED);
    else {
      if (modified(b, &a->e[i], &b->e[k]))
        r = push_change(out, &cap, &b->e[k], CORRAL_CHANGE_MODIFIED);
      i++, k++;
    }
  }
  if (r < 0)
    return error_set(err, r, -r, "comparing snapshots: out of memory");
  out->changes_present = true;
  if (!out->changes)
    out->changes = calloc(1, sizeof *out->changes);
  return 0;
}
