/*
 * watcher.c — a command's changes from the kernel's change events.
 *
 * A watcher keeps an index of one workspace root — every name, and an
 * inotify watch on every directory — current from the events the kernel
 * queues.  A run begins with the queue drained; while it lasts, each path an
 * event names is "touched": the state the index had for it at that moment
 * (absent, file, directory, generated tree) is recorded, once.  The run
 * ends with the queue drained again, and its report compares those
 * before-states with the index, plus one lstat per touched file that was
 * there before and after: a process cannot set ctime back, so a ctime at
 * or after the run's start means modified (a write that restores mtime and
 * size included).  So a run costs in proportion to what changed, not to the
 * size of the workspace; the index is built once per `corral run`, and once
 * per root for the life of `corral mcp`.
 *
 * Where the events cannot be complete, the run says so:
 *   - inotify unusable, or the kernel's watch limit reached: the run
 *     compares snapshots before and after (observer.c); changes_scanned
 *     says why;
 *   - the event queue overflowed during a run: the run touches every path
 *     of the index (its state then is the run's start but for what the run
 *     touched already), and compares that with a snapshot at its end;
 *   - more than WATCH_MAX_ENTRIES names, or directories deeper than
 *     OBSERVE_MAX_DEPTH: no report (changes_skipped), and the index and its
 *     watches are dropped, so the cost stops growing; building is tried
 *     again after RETRY_MS.
 * Anything that changes the workspace during a run is in its report, the
 * command or another process on the host: the kernel's events do not say
 * who (the README says so).
 *
 * Invariants:
 *   1. a directory is opened only below the root's descriptor, following
 *      no symlink (open_beneath, openat with O_NOFOLLOW), and watched
 *      through that descriptor (/proc/self/fd/N): no path the command
 *      controls is resolved;
 *   2. an event's name only selects which paths are compared: what the
 *      report says comes from the index and from lstat below the root;
 *   3. `.git`, the protected names and what is inside generated trees are
 *      never indexed (a generated tree's direct children are counted);
 *   4. the inotify descriptor is the same for the watcher's life (callers
 *      poll it): dropping the index removes each watch, never the
 *      descriptor.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "internal.h"
#include "observer.h"
#include "watcher.h"

#define WATCH_MAX_ENTRIES 250000
/* Paths one run may touch; its report lists at most
 * CORRAL_OBSERVE_MAX_FILES changes. */
#define RUN_TOUCH_MAX (4 * CORRAL_OBSERVE_MAX_FILES)
#define RUN_TOUCH_BYTES (16 << 20) /* and in bytes of their paths */
#define WATCH_MAX_BYTES (64 << 20) /* of the index's nodes and names */
/* Longest path indexed, so that every buffer here holds it and a "/". */
#define PATH_LIMIT 4000
/* Names the scans of new directories may add while the queue is never
 * empty: a command renaming a big directory back and forth makes each
 * rename a rescan of it, and past this the events are given up. */
#define RESCAN_BUDGET (4 * RUN_TOUCH_MAX)
/* Events applied per watcher_process: the caller's loop gets its turn. */
#define DRAIN_EVENTS 4096
#define RETRY_MS (5 * 60 * 1000)

#define DIR_MASK                                                                             \
  (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM |         \
   IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
/* Writes in a generated tree are watched only for hard links through it.
 * Neither mask has IN_EXCL_UNLINK: a write through a name already removed
 * (link, open, unlink, write) must still be heard. */
#define GEN_MASK                                                                             \
  (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM |         \
   IN_MOVED_TO | IN_ONLYDIR)
#define NAME_EVENTS (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)
#define WRITE_EVENTS (IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB)
enum { TOUCH_RENAMED = 1, TOUCH_WRITTEN = 2 };

static size_t max_entries = WATCH_MAX_ENTRIES;
void watcher_limit_for_tests(size_t entries) {
  max_entries = entries ? entries : WATCH_MAX_ENTRIES;
}

/* T_FILE: anything but a directory.  T_SKIP: a `.git` or protected-name
 * directory, watched at its top like a generated tree (a hard link made in
 * it is heard) but never reported. */
enum { T_NONE, T_FILE, T_DIR, T_GEN, T_SKIP };

struct node {
  struct node *parent, *kids, *next, *prev; /* the tree; siblings in a list */
  struct node *hnext, *wnext;               /* chains: by (parent, name), by wd */
  int wd;                                   /* directories: -1 until watched */
  int count;                                /* T_GEN: direct children (-1 above the bound) */
  unsigned char type, depth;
  bool blind;                               /* a directory that could not be watched */
  bool linked;                              /* a file last seen with more than one name */
  unsigned short plen;                      /* of its path, at most PATH_LIMIT */
  ino_t ino;                                /* 0: not known */
  char name[];
};

struct touch {
  struct touch *next;
  unsigned char before; /* T_*: what the index had when first touched */
  bool renamed;         /* a name event on this very path: its file may be another */
  bool written;         /* written to (or chmod-ed) through this path */
  bool content;         /* T_GEN: names changed inside */
  bool seen;            /* a fallback comparison found it */
  int count;            /* T_GEN before */
  ino_t ino;            /* before, 0 when not known: a same-named other file shows */
  char path[];          /* relative; a generated tree's ends in "/" */
};

struct watch_run {
  struct watch_run *next;
  struct timespec start;
  uint64_t seed; /* of its table: paths the command names cannot be made to collide */
  struct touch **b;
  size_t cap, n, bytes;
  ino_t *aliased;       /* files with another name that were written through one */
  size_t naliased, aliased_cap;
  bool uncertain;       /* a name written through is gone: every file is compared */
  char *skipped;        /* no report: why */
  char *scanned;        /* fallback: the events were incomplete, why */
};

struct watcher {
  char *root;
  int rootfd, ifd;
  struct node *top;
  struct node **names, **wds; /* chained hash tables */
  size_t names_cap, wds_cap, entries, nwds, bytes;
  size_t blind; /* directories indexed but not watched: what is made in them is not heard */
  size_t linked; /* files with nodes marked linked: every run compares them */
  size_t linkers; /* runs whose command made a link and goes on: a run that begins
                     meanwhile compares every file (observe_unsure_all) */
  size_t rescanned; /* names scans of new directories added since the queue was empty */
  bool runs_rescan; /* applying events: a build does not count against the budget */
  struct watch_run *runs;
  char *broken;  /* events cannot be complete: runs fall back to scans */
  char *too_big; /* no report at all */
  int64_t retry_at;
  bool overflowed;
  /* The directory whose events are being applied, opened for the lstat of
   * the names created in it; closed at the end of each drain. */
  const struct node *open_node;
  int open_fd;
};

/* The first scan of a root runs in threads: the kernel's part — listing
 * and watching each directory — is most of its cost and spreads over the
 * CPUs.  A thread's nodes stay out of the hash tables (its subtree is its
 * own) until the threads are joined; a failure is kept here until then. */
#define BUILD_THREADS 4
struct builder {
  struct watcher *w;
  struct node **dirs; /* the root's directories, handed out in turn */
  size_t ndirs, cap;
  atomic_size_t next, entries, bytes;
  atomic_bool failed;
  pthread_mutex_t lock; /* for why */
  char **which;
  char why[128];
};
static __thread struct builder *building;
static __thread bool own_cwd; /* unshare(CLONE_FS): fchdir is this thread's */

/* ------------------------------------------------------------ the index */

/* FNV-1a of s, from `seed`: the index's names and a run's touched paths. */
static size_t str_hash(const char *s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    h = (h ^ *p) * 1099511628211ull;
  return (size_t)(h ^ (h >> 29));
}

static size_t name_hash(const struct node *parent, const char *name) {
  return str_hash(name, (uint64_t)(uintptr_t)parent);
}

static size_t wd_hash(int wd) { return (size_t)((uint32_t)wd * 2654435761u); }

/* Doubles a chained table; `chain` picks the link, `hash` the bucket. */
static bool grow(struct node ***tab, size_t *cap, size_t n, bool by_wd) {
  if (n < *cap)
    return true;
  size_t ncap = *cap ? *cap * 2 : 1024;
  struct node **g = calloc(ncap, sizeof *g);
  if (!g)
    return false;
  for (size_t i = 0; i < *cap; i++)
    for (struct node *x = (*tab)[i], *nx; x; x = nx) {
      nx = by_wd ? x->wnext : x->hnext;
      size_t k = (by_wd ? wd_hash(x->wd) : name_hash(x->parent, x->name)) & (ncap - 1);
      if (by_wd) {
        x->wnext = g[k];
      } else {
        x->hnext = g[k];
      }
      g[k] = x;
    }
  free(*tab);
  *tab = g;
  *cap = ncap;
  return true;
}

static struct node *lookup(const struct watcher *w, const struct node *parent, const char *name) {
  if (!w->names_cap)
    return NULL;
  for (struct node *x = w->names[name_hash(parent, name) & (w->names_cap - 1)]; x; x = x->hnext)
    if (x->parent == parent && strcmp(x->name, name) == 0)
      return x;
  return NULL;
}

static struct node *by_wd(const struct watcher *w, int wd) {
  if (!w->wds_cap)
    return NULL;
  for (struct node *x = w->wds[wd_hash(wd) & (w->wds_cap - 1)]; x; x = x->wnext)
    if (x->wd == wd)
      return x;
  return NULL;
}

static void unmap_wd(struct watcher *w, struct node *n) {
  if (n->wd < 0 || !w->wds_cap) {
    n->wd = -1;
    return;
  }
  struct node **p = &w->wds[wd_hash(n->wd) & (w->wds_cap - 1)];
  while (*p && *p != n)
    p = &(*p)->wnext;
  if (*p) {
    *p = n->wnext;
    w->nwds--;
  }
  n->wd = -1;
}

/* The path of `n` into buf (no trailing "/"); false when it does not fit. */
static bool node_path(const struct node *n, char *buf, size_t size) {
  size_t len = 0;
  for (const struct node *x = n; x && x->parent; x = x->parent)
    len += strlen(x->name) + (x->parent->parent ? 1 : 0);
  if (len >= size)
    return false;
  buf[len] = '\0';
  for (const struct node *x = n; x && x->parent; x = x->parent) {
    size_t l = strlen(x->name);
    len -= l;
    memcpy(buf + len, x->name, l);
    if (x->parent->parent)
      buf[--len] = '/';
  }
  return true;
}

static void fail(struct watcher *w, char **which, const char *why);
static void close_open_node(struct watcher *w);
static void touch_new(struct watcher *w, struct node *n);
static void unseen(struct watcher *w);
static void alias_all(struct watcher *w, ino_t ino, nlink_t links);

/* A file's count of names, as last seen.  One with more is compared at the
 * end of every run: a write through a name corral does not watch (deep in
 * a generated tree or a `.git`, made by an earlier run; in another root)
 * is heard nowhere, and only its ctime tells. */
static void set_linked(struct watcher *w, struct node *n, const struct stat *st) {
  bool linked = !S_ISDIR(st->st_mode) && st->st_nlink > 1;
  if (!n || n->type != T_FILE || n->linked == linked)
    return;
  n->linked = linked;
  if (!building) /* a build's threads: counted when their nodes are indexed */
    w->linked += linked ? 1 : (size_t)-1;
}

static unsigned char dir_type(const char *name, bool dir) {
  return !dir                    ? T_FILE
         : observe_skipped(NULL, 0, name) ? T_SKIP
         : observe_generated(name)        ? T_GEN
                                          : T_DIR;
}
static void touch_name(struct watcher *w, struct node *d, const char *name, const struct node *n,
                       unsigned how);

/* The length of name's path in `parent`; 0, the watcher given up, when
 * it is longer than PATH_LIMIT (said, never skipped in silence). */
static size_t path_len(struct watcher *w, const struct node *parent, const char *name) {
  size_t len = parent->plen + (parent->parent ? 1 : 0) + strlen(name);
  if (len <= PATH_LIMIT)
    return len;
  char why[96];
  snprintf(why, sizeof why, "the workspace has paths longer than %d bytes", PATH_LIMIT);
  fail(w, &w->too_big, why);
  return 0;
}

/* The bounds on the index: names, and their bytes. */
static bool index_full(struct watcher *w, size_t entries, size_t bytes) {
  char why[96];
  if (entries >= max_entries)
    snprintf(why, sizeof why, "the workspace has more than %zu files", max_entries);
  else if (bytes >= WATCH_MAX_BYTES)
    snprintf(why, sizeof why, "the workspace's names take more than %d MiB",
             WATCH_MAX_BYTES >> 20);
  else
    return false;
  fail(w, &w->too_big, why);
  return true;
}

/* A node under parent, linked among its kids: in the tables or not is the
 * caller's. */
static struct node *node_new(struct node *parent, const char *name, unsigned char type, ino_t ino,
                             size_t plen, size_t size) {
  struct node *n = calloc(1, size);
  if (!n)
    return NULL;
  strcpy(n->name, name);
  n->type = type;
  n->ino = ino;
  n->plen = (unsigned short)plen;
  n->wd = -1;
  n->parent = parent;
  n->depth = (unsigned char)(parent->depth + 1);
  n->next = parent->kids;
  if (parent->kids)
    parent->kids->prev = n;
  parent->kids = n;
  return n;
}

static struct node *node_add(struct watcher *w, struct node *parent, const char *name,
                             unsigned char type, ino_t ino) {
  size_t plen = path_len(w, parent, name), size = sizeof(struct node) + strlen(name) + 1;
  if (!plen)
    return NULL;
  if (building) { /* parent is in this thread's subtree; the tables come after the join */
    if (index_full(w, w->entries + atomic_fetch_add(&building->entries, 1),
                   w->bytes + atomic_fetch_add(&building->bytes, size)))
      return NULL;
    struct node *n = node_new(parent, name, type, ino, plen, size);
    if (!n)
      fail(w, &w->broken, "out of memory");
    return n;
  }
  struct node *n;
  if (index_full(w, w->entries, w->bytes + size) ||
      !grow(&w->names, &w->names_cap, w->entries + 1, false) ||
      !(n = node_new(parent, name, type, ino, plen, size)))
    return NULL;
  size_t k = name_hash(parent, name) & (w->names_cap - 1);
  n->hnext = w->names[k];
  w->names[k] = n;
  w->entries++;
  w->bytes += size;
  touch_new(w, n);
  if (++w->rescanned > RESCAN_BUDGET && w->runs_rescan)
    fail(w, &w->broken, "the workspace changes faster than its events can be followed");
  return n;
}

/* Removes n and everything below it from the index, and their watches. */
static void node_drop(struct watcher *w, struct node *n) {
  while (n->kids)
    node_drop(w, n->kids);
  if (n == w->open_node)
    close_open_node(w);
  if (n->blind && n->parent) {
    n->blind = false;
    w->blind--;
  }
  if (n->linked) {
    n->linked = false;
    w->linked--;
  }
  if (n->wd >= 0) {
    if (w->ifd >= 0)
      inotify_rm_watch(w->ifd, n->wd); /* EINVAL when the kernel dropped it: fine */
    unmap_wd(w, n);
  }
  if (!n->parent)
    return; /* the root node stays */
  if (n->prev)
    n->prev->next = n->next;
  else
    n->parent->kids = n->next;
  if (n->next)
    n->next->prev = n->prev;
  /* A node a failed build left out of the tables is in none. */
  struct node **p = w->names_cap ? &w->names[name_hash(n->parent, n->name) & (w->names_cap - 1)]
                                 : NULL;
  while (p && *p && *p != n)
    p = &(*p)->hnext;
  if (p && *p) {
    *p = n->hnext;
    w->entries--;
    w->bytes -= sizeof *n + strlen(n->name) + 1;
  }
  free(n);
}

static void close_open_node(struct watcher *w) {
  if (w->open_node && w->open_fd >= 0)
    close(w->open_fd);
  w->open_node = NULL;
  w->open_fd = -1;
}

/* A directory there that cannot be opened or watched (mode 0300: the
 * command may still make a link in it): every run compares every file
 * while it is so. */
static void blind(struct watcher *w, struct node *n) {
  if (n->blind || !n->parent)
    return;
  n->blind = true;
  if (!building)
    w->blind++;
}

/* Invariant 1: watched through the descriptor it was opened by. */
static bool watch_dir(struct watcher *w, struct node *n, int fd) {
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  uint32_t mask = n->type == T_GEN || n->type == T_SKIP ? GEN_MASK : DIR_MASK;
  int wd = own_cwd && fchdir(fd) == 0 ? inotify_add_watch(w->ifd, ".", mask)
                                      : inotify_add_watch(w->ifd, proc, mask);
  if (wd < 0) {
    if (errno == ENOSPC) {
      fail(w, &w->broken,
           "the kernel's limit on inotify watches (fs.inotify.max_user_watches) is reached");
    } else if (errno == ENOMEM) {
      fail(w, &w->broken, "out of memory for inotify watches");
    } else if (errno != ENOENT && errno != EACCES && errno != ENOTDIR) {
      char why[128];
      snprintf(why, sizeof why, "watching a directory: %s", strerror(errno));
      fail(w, &w->broken, why);
    }
    if (errno == EACCES)
      blind(w, n);
    else
      unseen(w);
    return false; /* gone or unreadable: skipped, as the snapshot skips it */
  }
  if (n->blind && !building) {
    n->blind = false;
    w->blind--;
  }
  if (building) { /* mapped when the threads are joined */
    n->wd = wd;
    return true;
  }
  struct node *other = by_wd(w, wd);
  if (other && other != n) {
    bool above = false;
    for (const struct node *x = n->parent; x && !above; x = x->parent)
      above = x == other;
    if (above) { /* inside itself: the scan ran ahead of a move (or a bind mount) */
      unseen(w);
      return false;
    }
    /* The same directory at another place in the index: moved, and this
     * scan ran ahead of the queued events that say so.  Its old place is
     * gone (touched as a moved name), and the watch is this node's now. */
    touch_name(w, other->parent, other->name, other, TOUCH_RENAMED);
    unmap_wd(w, other);
    node_drop(w, other);
  }
  if (other == n)
    return true;
  if (!grow(&w->wds, &w->wds_cap, w->nwds + 1, true)) {
    inotify_rm_watch(w->ifd, wd);
    fail(w, &w->broken, "out of memory");
    return false;
  }
  n->wd = wd;
  size_t k = wd_hash(wd) & (w->wds_cap - 1);
  n->wnext = w->wds[k];
  w->wds[k] = n;
  w->nwds++;
  return true;
}

static bool failed(const struct watcher *w) {
  return building ? atomic_load(&building->failed) : w->broken || w->too_big;
}

/* Watches and indexes the directory `n`, opened as fd (closed here), and
 * everything below it.  Unreadable directories are skipped. */
static void scan_dir(struct watcher *w, struct node *n, int fd, struct builder *queue) {
  bool watched = watch_dir(w, n, fd);
  struct stat self;
  /* Removed already when its watch came: what it held cannot be listed. */
  if (watched && w->runs && !building && fstat(fd, &self) == 0 && self.st_nlink == 0)
    unseen(w);
  if (!watched || n->type == T_GEN || n->type == T_SKIP) {
    if (n->wd < 0 || (n->type == T_SKIP && (!w->runs || building))) {
      close(fd);
      return;
    }
    long count = observe_count_children(fd);
    if (n->type == T_GEN)
      n->count = (int)count;
    if (count) /* made in before its watch, by a run: a link to an indexed file? */
      unseen(w);
    return;
  }
  struct dir_iter *it = malloc(sizeof *it);
  if (!it) {
    close(fd);
    fail(w, &w->broken, "out of memory");
    return;
  }
  dir_start(it, fd);
  unsigned char dt;
  for (const char *name; !failed(w) && (name = dir_next(it, &dt));) {
    bool skip = observe_skipped(NULL, 0, name);
    if (skip && dt != DT_DIR && dt != DT_UNKNOWN)
      continue;
    struct stat st;
    bool statted = dt == DT_UNKNOWN;
    if (statted) {
      if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        continue;
      dt = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
    }
    bool dir = dt == DT_DIR;
    if (skip && !dir)
      continue;
    if (dir && n->depth >= OBSERVE_MAX_DEPTH) {
      char why[96];
      snprintf(why, sizeof why, "the workspace has directories more than %d levels deep",
               OBSERVE_MAX_DEPTH);
      fail(w, &w->too_big, why);
      break;
    }
    struct node *k = node_add(w, n, name, dir_type(name, dir), (ino_t)it->ino);
    if (k && !dir && (statted || fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)) {
      set_linked(w, k, &st);
      if (w->runs && !building) /* made before the watch */
        alias_all(w, k->ino, S_ISDIR(st.st_mode) ? 1 : st.st_nlink);
    }
    if (!k || !dir)
      continue;
    if (queue) {
      if (queue->ndirs == queue->cap) {
        size_t cap = queue->cap ? queue->cap * 2 : 64;
        struct node **g = realloc(queue->dirs, cap * sizeof *g);
        if (!g) {
          fail(w, &w->broken, "out of memory");
          break;
        }
        queue->dirs = g;
        queue->cap = cap;
      }
      queue->dirs[queue->ndirs++] = k;
      continue;
    }
    int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (sub >= 0)
      scan_dir(w, k, sub, NULL);
    else if (errno == EMFILE || errno == ENFILE)
      fail(w, &w->broken, "too many open files to watch the workspace");
    else if (errno == EACCES)
      blind(w, k);
    else
      unseen(w);
  }
  free(it);
  close(fd);
}

/* Opens the directory node `n` below the root (invariant 1) and scans it. */
static void scan_node(struct watcher *w, struct node *n) {
  char path[4096];
  int fd;
  if (!n->parent) /* a description of its own: getdents moves its offset */
    fd = openat(w->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
  else if (node_path(n, path, sizeof path))
    fd = open_beneath(w->rootfd, path, O_RDONLY | O_DIRECTORY);
  else
    fd = -1;
  struct stat st;
  if (fd >= 0 && !n->ino && fstat(fd, &st) == 0)
    n->ino = st.st_ino;
  if (fd >= 0)
    scan_dir(w, n, fd, NULL);
  else if (errno == EACCES)
    blind(w, n);
  else
    unseen(w);
}

/* Drops the index and every watch, keeping the descriptor (invariant 4). */
static void drop_index(struct watcher *w) {
  if (w->top)
    node_drop(w, w->top);
}

static void build_worker_run(struct builder *b) {
  struct builder *was = building;
  building = b;
  size_t i;
  while (!atomic_load(&b->failed) && (i = atomic_fetch_add(&b->next, 1)) < b->ndirs) {
    struct node *n = b->dirs[i];
    int fd = openat(b->w->rootfd, n->name,
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0)
      scan_dir(b->w, n, fd, NULL);
    else if (errno == EMFILE || errno == ENFILE)
      fail(b->w, &b->w->broken, "too many open files to watch the workspace");
    else if (errno == EACCES)
      blind(b->w, n);
  }
  building = was;
}

static void *build_worker(void *arg) {
  /* A working directory of its own: each directory is watched as ".",
   * after fchdir to its descriptor (invariant 1), with no path to walk. */
  own_cwd = unshare(CLONE_FS) == 0;
  build_worker_run(arg);
  return NULL;
}

/* Puts a subtree a thread built into the hash tables. */
static void index_tree(struct watcher *w, struct node *n) {
  for (struct node *k = n->kids; k && !failed(w); k = k->next) {
    if (!grow(&w->names, &w->names_cap, w->entries + 1, false)) {
      fail(w, &w->broken, "out of memory");
      return;
    }
    size_t h = name_hash(k->parent, k->name) & (w->names_cap - 1);
    k->hnext = w->names[h];
    w->names[h] = k;
    w->entries++;
    w->bytes += sizeof *k + strlen(k->name) + 1;
    w->blind += k->blind;
    w->linked += k->linked;
    index_tree(w, k);
  }
  if (n->wd < 0)
    return;
  int wd = n->wd;
  n->wd = -1;
  if (by_wd(w, wd)) /* the same directory twice (a move while scanning): the events fix it */
    return;
  if (!grow(&w->wds, &w->wds_cap, w->nwds + 1, true)) {
    fail(w, &w->broken, "out of memory");
    return;
  }
  n->wd = wd;
  size_t h = wd_hash(wd) & (w->wds_cap - 1);
  n->wnext = w->wds[h];
  w->wds[h] = n;
  w->nwds++;
}

static void build(struct watcher *w) {
  drop_index(w);
  w->blind = w->linked = 0; /* a failed build's nodes were dropped uncounted */
  free(w->broken);
  free(w->too_big);
  w->broken = w->too_big = NULL;
  if (w->ifd < 0 && (w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) < 0) {
    char why[128];
    snprintf(why, sizeof why, "inotify is not available: %s", strerror(errno));
    fail(w, &w->broken, why);
    return;
  }
  int fd = openat(w->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
  struct builder b = {.w = w};
  pthread_mutex_init(&b.lock, NULL);
  if (fd >= 0)
    scan_dir(w, w->top, fd, &b);
  if (!failed(w) && w->top->wd < 0)
    fail(w, &w->broken, "the workspace root cannot be watched");
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int nthreads = cpus < 1 ? 1 : cpus > BUILD_THREADS ? BUILD_THREADS : (int)cpus;
  if ((size_t)nthreads > b.ndirs)
    nthreads = b.ndirs ? (int)b.ndirs : 0;
  pthread_t th[BUILD_THREADS];
  int started = 0;
  while (!failed(w) && started < nthreads &&
         pthread_create(&th[started], NULL, build_worker, &b) == 0)
    started++;
  if (!failed(w) && !started && b.ndirs) /* no thread: this one, with /proc paths */
    build_worker_run(&b);
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  for (size_t i = 0; i < b.ndirs && !failed(w); i++) {
    w->blind += b.dirs[i]->blind; /* flagged by a thread, counted here */
    index_tree(w, b.dirs[i]);
  }
  if (atomic_load(&b.failed))
    fail(w, b.which, b.why);
  free(b.dirs);
  pthread_mutex_destroy(&b.lock);
  w->rescanned = 0; /* a build is not a rescan */
}

/* ------------------------------------------------------------ runs */

static struct touch *find_touch(const struct watch_run *r, const char *key) {
  if (!r->cap)
    return NULL;
  for (struct touch *t = r->b[str_hash(key, r->seed) & (r->cap - 1)]; t; t = t->next)
    if (strcmp(t->path, key) == 0)
      return t;
  return NULL;
}

static void run_give_up(struct watch_run *r, const char *why) {
  if (r->skipped)
    return;
  r->skipped = strdup(why);
  for (size_t i = 0; i < r->cap; i++)
    for (struct touch *t = r->b[i], *nx; t; t = nx) {
      nx = t->next;
      free(t);
    }
  free(r->b);
  r->b = NULL;
  r->cap = r->n = 0;
  free(r->aliased);
  r->aliased = NULL;
  r->naliased = r->aliased_cap = 0;
}

/* Records `before` for key unless it was touched already; the entry, or
 * NULL when the run has given up. */
static struct touch *touch_key(struct watch_run *r, const char *key, unsigned char before,
                               int count, ino_t ino) {
  if (r->skipped)
    return NULL;
  struct touch *t = find_touch(r, key);
  if (t)
    return t;
  size_t len = strlen(key);
  if (r->n >= RUN_TOUCH_MAX || r->bytes + len > RUN_TOUCH_BYTES) {
    char why[96];
    snprintf(why, sizeof why, "the workspace changed in more than %d paths (or %d MiB of them)",
             RUN_TOUCH_MAX, RUN_TOUCH_BYTES >> 20);
    run_give_up(r, why);
    return NULL;
  }
  if (r->n >= r->cap) {
    size_t ncap = r->cap ? r->cap * 2 : 64;
    struct touch **g = calloc(ncap, sizeof *g);
    if (!g) {
      run_give_up(r, "out of memory");
      return NULL;
    }
    for (size_t i = 0; i < r->cap; i++)
      for (struct touch *x = r->b[i], *nx; x; x = nx) {
        nx = x->next;
        size_t k = str_hash(x->path, r->seed) & (ncap - 1);
        x->next = g[k];
        g[k] = x;
      }
    free(r->b);
    r->b = g;
    r->cap = ncap;
  }
  if (!(t = calloc(1, sizeof *t + len + 1))) {
    run_give_up(r, "out of memory");
    return NULL;
  }
  memcpy(t->path, key, len + 1);
  t->before = before;
  t->count = count;
  t->ino = before ? ino : 0;
  size_t k = str_hash(key, r->seed) & (r->cap - 1);
  t->next = r->b[k];
  r->b[k] = t;
  r->n++;
  r->bytes += sizeof *t + len + 1;
  return t;
}

/* Touches the path `buf` (len bytes) as the index has it: `n`, or absent.
 * A generated name is two keys, "name/" for the tree and "name" for
 * anything else, so that either turning into the other shows; the first
 * is returned. */
static void mark(struct touch *t, unsigned how) {
  if (t && (how & TOUCH_RENAMED))
    t->renamed = true;
  if (t && (how & TOUCH_WRITTEN))
    t->written = true;
}

static struct touch *touch_at(struct watch_run *r, char *buf, size_t len, const char *name,
                              const struct node *n, unsigned how) {
  struct touch *t = NULL, *u;
  if (observe_generated(name) && len + 2 <= 4096) {
    buf[len] = '/', buf[len + 1] = '\0';
    t = touch_key(r, buf, n && n->type == T_GEN ? T_GEN : T_NONE, n ? n->count : 0,
                  n ? n->ino : 0);
    buf[len] = '\0';
    mark(t, how);
  }
  u = touch_key(r, buf, n && n->type != T_GEN ? n->type : T_NONE, 0, n ? n->ino : 0);
  mark(u, how);
  return t ? t : u;
}

/* Touches everything below the directory node `n`, whose path is buf. */
static void touch_below(struct watch_run *r, const struct node *n, char *buf, size_t len) {
  for (const struct node *k = n->kids; k && !r->skipped; k = k->next) {
    size_t l = strlen(k->name);
    if (k->type == T_SKIP || len + l + 3 > 4096)
      continue;
    size_t at = len;
    if (len)
      buf[at++] = '/';
    memcpy(buf + at, k->name, l + 1);
    touch_at(r, buf, at + l, k->name, k, 0);
    if (k->type == T_DIR)
      touch_below(r, k, buf, at + l);
    buf[len] = '\0';
  }
}

/* A new node: absent before, for every run observing (a scan of a new
 * directory finds what the command made in it before the watch). */
static void touch_new(struct watcher *w, struct node *n) {
  char buf[4096];
  if (!w->runs || n->type == T_SKIP || !node_path(n, buf, sizeof buf - 2))
    return;
  for (struct watch_run *r = w->runs; r; r = r->next)
    if (!r->scanned)
      touch_at(r, buf, strlen(buf), n->name, NULL, 0);
}

/* Touches the name `name` in directory d (`n` is what the index has for
 * it); after a name event, also what was below it. */
static void touch_name(struct watcher *w, struct node *d, const char *name, const struct node *n,
                       unsigned how) {
  char buf[4096];
  if ((n && n->type == T_SKIP) || !node_path(d, buf, sizeof buf))
    return;
  size_t len = strlen(buf), l = strlen(name);
  if (len + l + 3 > sizeof buf)
    return;
  if (len)
    buf[len++] = '/';
  memcpy(buf + len, name, l + 1);
  len += l;
  for (struct watch_run *r = w->runs; r; r = r->next) {
    if (r->scanned)
      continue;
    touch_at(r, buf, len, name, n, how);
    if ((how & TOUCH_RENAMED) && n && n->type == T_DIR)
      touch_below(r, n, buf, len);
  }
}

/* The events cannot be trusted from here on: the run touches everything
 * the index has, which with what it touched already is its start, and
 * compares that with a snapshot at its end. */
static void run_fall_back(struct watch_run *r, struct watcher *w, const char *why) {
  if (r->scanned || r->skipped)
    return;
  char buf[4096] = "";
  touch_below(r, w->top, buf, 0);
  r->scanned = strdup(why);
  if (!r->scanned)
    run_give_up(r, "out of memory");
}

static void fail(struct watcher *w, char **which, const char *why) {
  if (building) {
    pthread_mutex_lock(&building->lock);
    if (!atomic_load(&building->failed)) {
      building->which = which;
      snprintf(building->why, sizeof building->why, "%s", why);
      atomic_store(&building->failed, true);
    }
    pthread_mutex_unlock(&building->lock);
    return;
  }
  if (failed(w))
    return;
  for (struct watch_run *r = w->runs; r; r = r->next) {
    if (which == &w->broken)
      run_fall_back(r, w, why);
    else
      run_give_up(r, why);
  }
  *which = strdup(why ? why : "");
  w->retry_at = mono_ms() + RETRY_MS;
  /* Dropped after the scan in progress has unwound. */
}

/* ------------------------------------------------------------ events */

/* The inode of `name` in the directory node d, 0 when it is gone: what
 * tells a file from another of the same name later.  Its names: `links`;
 * `n`, when given, is the node it is (marked linked or not). */
static ino_t ino_in(struct watcher *w, const struct node *d, const char *name, struct node *n,
                    nlink_t *links) {
  *links = 1;
  if (w->open_node != d) {
    close_open_node(w);
    char path[4096];
    if (!d->parent)
      w->open_fd = openat(w->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    else if (node_path(d, path, sizeof path))
      w->open_fd = open_beneath(w->rootfd, path, O_RDONLY | O_DIRECTORY);
    if (w->open_fd < 0)
      return 0;
    w->open_node = d;
  }
  struct stat st;
  if (fstatat(w->open_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return 0;
  *links = S_ISDIR(st.st_mode) ? 1 : st.st_nlink;
  set_linked(w, n, &st);
  return st.st_ino;
}

/* A file with more names than the one written through: its other names in
 * the index are compared at the end (a hard link is one file). */
static void alias(struct watch_run *r, ino_t ino) {
  if (r->skipped || r->scanned)
    return;
  for (size_t i = 0; i < r->naliased; i++)
    if (r->aliased[i] == ino)
      return;
  if (r->naliased == r->aliased_cap) {
    size_t cap = r->aliased_cap ? r->aliased_cap * 2 : 16;
    ino_t *g = cap <= RUN_TOUCH_MAX ? realloc(r->aliased, cap * sizeof *g) : NULL;
    if (!g) {
      run_give_up(r, "the command wrote through too many hard links");
      return;
    }
    r->aliased = g;
    r->aliased_cap = cap;
  }
  r->aliased[r->naliased++] = ino;
}

static void alias_all(struct watcher *w, ino_t ino, nlink_t links) {
  if (links > 1 && ino)
    for (struct watch_run *r = w->runs; r; r = r->next)
      alias(r, ino);
}

/* Every run observing is uncertain: every indexed file is compared. */
static void all_uncertain(struct watcher *w) {
  for (struct watch_run *r = w->runs; r; r = r->next)
    r->uncertain = true;
}

/* A directory a run made (or changed) could not be watched or read before
 * the run could act in it: gone already, replaced, or made in a tree not
 * listed.  What was done there, a hard link to an indexed file written
 * through, cannot be told. */
static void unseen(struct watcher *w) {
  if (!building)
    all_uncertain(w);
}

/* Written or made through a name the index does not have (in a generated
 * tree, or a protected name): a hard link to a file it has?  A new
 * directory there is not watched; a name gone already cannot be told. */
static void heard_unindexed(struct watcher *w, const struct node *d, const char *name, bool dir) {
  nlink_t links;
  ino_t ino = dir ? 0 : ino_in(w, d, name, NULL, &links);
  if (ino)
    alias_all(w, ino, links);
  else
    all_uncertain(w);
}

static void on_event(struct watcher *w, const struct inotify_event *ev) {
  if (ev->mask & IN_Q_OVERFLOW) {
    w->overflowed = true;
    return;
  }
  struct node *d = by_wd(w, ev->wd);
  if (!d)
    return; /* a watch already dropped */
  if (ev->mask & IN_IGNORED) {
    unmap_wd(w, d);
    if (d == w->top)
      fail(w, &w->broken, "the workspace root is no longer watched");
    return;
  }
  if (!ev->len || !ev->name[0]) {
    if (d == w->top && (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF))) {
      fail(w, &w->broken, "the workspace root was moved or deleted");
      w->retry_at = 0;
    }
    return; /* the parent's events speak for a directory itself */
  }
  const char *name = ev->name;
  if (observe_skipped(NULL, 0, name) && d->type != T_GEN && d->type != T_SKIP) {
    /* Never reported, but a file of that name may be another name of one
     * that is; a directory of it is watched at its top (what was made in
     * it before the watch cannot be told). */
    if (w->runs && (ev->mask & (WRITE_EVENTS | IN_CREATE | IN_MOVED_TO)))
      heard_unindexed(w, d, name, ev->mask & IN_ISDIR);
    struct node *n = lookup(w, d, name);
    if ((ev->mask & NAME_EVENTS) && n)
      node_drop(w, n);
    if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && (ev->mask & IN_ISDIR) && path_len(w, d, name) &&
        (n = node_add(w, d, name, T_SKIP, 0)))
      scan_node(w, n);
    return;
  }
  if (d->type == T_SKIP) {
    if (w->runs && (ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
      all_uncertain(w); /* a directory made in it is not watched */
    else if (w->runs && (ev->mask & WRITE_EVENTS) && !(ev->mask & IN_ISDIR))
      heard_unindexed(w, d, name, false);
    return;
  }
  if (d->type == T_GEN) {
    char buf[4096];
    if (w->runs && (ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
      all_uncertain(w); /* a directory made in a generated tree is not watched */
    else if (w->runs && (ev->mask & WRITE_EVENTS) && !(ev->mask & IN_ISDIR))
      heard_unindexed(w, d, name, false);
    if ((ev->mask & NAME_EVENTS) && node_path(d, buf, sizeof buf - 2))
      for (struct watch_run *r = w->runs; r; r = r->next) {
        struct touch *t = r->scanned ? NULL : touch_at(r, buf, strlen(buf), d->name, d, 0);
        if (t)
          t->content = true;
      }
    if (d->count >= 0 && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
      d->count = d->count >= AGGREGATE_COUNT_MAX ? -1 : d->count + 1;
    else if (d->count > 0 && (ev->mask & (IN_DELETE | IN_MOVED_FROM)))
      d->count--;
    return;
  }
  if (!path_len(w, d, name))
    return;
  struct node *n = lookup(w, d, name);
  bool renamed = ev->mask & NAME_EVENTS;
  touch_name(w, d, name, n,
             (renamed ? TOUCH_RENAMED : 0) | (ev->mask & WRITE_EVENTS ? TOUCH_WRITTEN : 0));
  if (!renamed && n && n->type == T_FILE && (ev->mask & WRITE_EVENTS) && !n->ino) {
    /* Written through a name whose file is not known: another name of an
     * indexed one? */
    nlink_t links;
    n->ino = ino_in(w, d, name, n, &links);
    if (n->ino)
      alias_all(w, n->ino, links);
    else
      all_uncertain(w);
  } else if (!renamed && !n && (ev->mask & WRITE_EVENTS) && !(ev->mask & IN_ISDIR)) {
    all_uncertain(w); /* a name removed before its events were read */
  }
  if (!renamed) {
    /* A directory that could not be read when it was seen (mode 0, then
     * chmod): scanned now, its names new to the index. */
    if (n && n->type != T_FILE && n->wd < 0 && (ev->mask & IN_ATTRIB))
      scan_node(w, n);
    return;
  }
  /* A moved directory is dropped and its new place scanned: the kernel
   * pairs the two halves, but nothing needs to (a moved-in directory is
   * new to the index either way). */
  if (n)
    node_drop(w, n);
  if (!(ev->mask & (IN_CREATE | IN_MOVED_TO)))
    return;
  bool dir = ev->mask & IN_ISDIR;
  if (dir && d->depth >= OBSERVE_MAX_DEPTH) {
    char why[96];
    snprintf(why, sizeof why, "the workspace has directories more than %d levels deep",
             OBSERVE_MAX_DEPTH);
    fail(w, &w->too_big, why);
    return;
  }
  n = node_add(w, d, name, dir_type(name, dir), 0);
  nlink_t links;
  if (n && dir)
    scan_node(w, n);
  else if (n) {
    n->ino = ino_in(w, d, name, n, &links);
    alias_all(w, n->ino, links);
  }
}

bool watcher_process(struct watcher *w) {
  if (w->ifd < 0)
    return false;
  char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
  ssize_t got = 0;
  size_t applied = 0;
  w->runs_rescan = true;
  while (applied < DRAIN_EVENTS && (got = read(w->ifd, buf, sizeof buf)) > 0) {
    for (char *p = buf; p < buf + got; applied++) {
      const struct inotify_event *ev = (const struct inotify_event *)p;
      if (!failed(w))
        on_event(w, ev);
      p += sizeof *ev + ev->len;
    }
  }
  w->runs_rescan = false;
  bool more = got > 0;
  if (!more)
    w->rescanned = 0; /* the queue was emptied */
  close_open_node(w);
  if (failed(w)) {
    drop_index(w);
    w->overflowed = false;
  } else if (w->overflowed) {
    w->overflowed = false;
    for (struct watch_run *r = w->runs; r; r = r->next)
      run_fall_back(r, w, "the kernel's event queue overflowed (fs.inotify.max_queued_events)");
    build(w);
  }
  if (failed(w))
    drop_index(w); /* a failure in the scan above */
  return more;
}

/* Applies every event queued, or gives the events up: a queue that is
 * never empty (another process churning the workspace) is not waited on. */
static void drain(struct watcher *w) {
  for (int i = 0; watcher_process(w) && i < 128; i++)
    if (i == 64 && !failed(w)) { /* dropping every watch stops the flow */
      fail(w, &w->broken, "the workspace changes faster than its events can be followed");
      drop_index(w);
    }
}

/* ------------------------------------------------------------ watchers */

struct watcher *watcher_open(const char *root) {
  struct watcher *w = calloc(1, sizeof *w);
  if (!w || !(w->root = strdup(root)) || !(w->top = calloc(1, sizeof *w->top))) {
    if (w)
      free(w->root);
    free(w);
    return NULL;
  }
  w->top->wd = -1;
  w->top->type = T_DIR;
  w->ifd = -1;
  w->open_fd = -1;
  w->rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (w->rootfd < 0) {
    char why[600];
    snprintf(why, sizeof why, "observing `%s`: %s", root, strerror(errno));
    w->too_big = strdup(why);
    w->retry_at = 0;
    return w;
  }
  build(w);
  if (failed(w))
    drop_index(w);
  return w;
}

void watcher_free(struct watcher *w) {
  if (!w)
    return;
  if (w->ifd >= 0) /* every watch goes with it: none is removed one by one */
    close(w->ifd);
  w->ifd = -1;
  drop_index(w);
  free(w->top);
  free(w->names);
  free(w->wds);
  if (w->rootfd >= 0)
    close(w->rootfd);
  free(w->root);
  free(w->broken);
  free(w->too_big);
  free(w);
}

const char *watcher_root(const struct watcher *w) { return w->root; }
int watcher_fd(const struct watcher *w) { return w->ifd; }
bool watcher_busy(const struct watcher *w) { return w->runs != NULL; }

/* After RETRY_MS, or at once when the root itself went: built again,
 * from the root's path (it may be another directory now). */
static void retry(struct watcher *w) {
  if (!failed(w) || mono_ms() < w->retry_at || w->runs)
    return;
  int fd = open(w->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return;
  if (w->rootfd >= 0)
    close(w->rootfd);
  w->rootfd = fd;
  build(w);
  if (failed(w))
    drop_index(w);
}

/* ------------------------------------------------------------ reports */

static bool at_or_after(struct timespec t, struct timespec start) {
  return t.tv_sec > start.tv_sec || (t.tv_sec == start.tv_sec && t.tv_nsec >= start.tv_nsec);
}

/* lstat of a relative path, below the root and following no symlink. */
static bool stat_beneath(int rootfd, const char *path, struct stat *st) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    return fstatat(rootfd, path, st, AT_SYMLINK_NOFOLLOW) == 0;
  char dir[4096];
  size_t l = (size_t)(slash - path);
  if (l >= sizeof dir)
    return false;
  memcpy(dir, path, l);
  dir[l] = '\0';
  int fd = open_beneath(rootfd, dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    return false;
  bool ok = fstatat(fd, slash + 1, st, AT_SYMLINK_NOFOLLOW) == 0;
  close(fd);
  return ok;
}

/* What the index has now at key ("name/": a generated tree there). */
static struct node *now_at(const struct watcher *w, const char *key, unsigned char *type) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", key);
  size_t len = strlen(buf);
  bool gen = len && buf[len - 1] == '/';
  if (gen)
    buf[len - 1] = '\0';
  struct node *n = w->top;
  char *save = NULL;
  for (char *part = strtok_r(buf, "/", &save); part && n; part = strtok_r(NULL, "/", &save))
    n = lookup(w, n, part);
  *type = !n || n == w->top || gen != (n->type == T_GEN) ? T_NONE : n->type;
  return *type ? n : NULL;
}

static long gen_count(const struct watcher *w, const char *key) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", key);
  buf[strlen(buf) - 1] = '\0';
  int fd = open_beneath(w->rootfd, buf, O_RDONLY | O_DIRECTORY);
  return fd >= 0 ? observe_count_children(fd) : 0;
}

/* A file (tree) there before and after: modified when it is another one,
 * or when its ctime (a tree's mtime: its names) is from the run. */
static bool changed(const struct watch_run *r, const struct touch *t, ino_t ino,
                    struct timespec stamp) {
  return (t->ino && ino != t->ino) || at_or_after(stamp, r->start);
}

static int by_ino(const void *a, const void *b) {
  ino_t x = *(const ino_t *)a, y = *(const ino_t *)b;
  return x < y ? -1 : x > y;
}

/* The files not touched by any event that a write may have reached
 * unheard, compared here: the other names of files written through a name
 * with more than one, the files marked linked, and — when a name written
 * through is gone and so cannot tell, or a link was made — every file.
 * One pass over the index, for runs that need it only; what it stats
 * marks each file linked or not. */
static int report_aliases(struct watcher *w, struct watch_run *r, struct node *n, char *buf,
                          size_t len, corral_outcome *out, size_t *cap) {
  if (n == w->top && r->naliased)
    qsort(r->aliased, r->naliased, sizeof *r->aliased, by_ino);
  int rc = 0;
  for (struct node *k = n->kids; k && rc == 0; k = k->next) {
    size_t at = len, l = strlen(k->name);
    if (len)
      buf[at++] = '/';
    memcpy(buf + at, k->name, l + 1);
    struct stat st;
    if (k->type == T_DIR)
      rc = report_aliases(w, r, k, buf, at + l, out, cap);
    else if (k->type == T_FILE &&
             (r->uncertain || k->linked ||
              (k->ino && r->naliased &&
               bsearch(&k->ino, r->aliased, r->naliased, sizeof *r->aliased, by_ino))) &&
             !find_touch(r, buf) && stat_beneath(w->rootfd, buf, &st) &&
             (!k->ino || st.st_ino == k->ino)) {
      set_linked(w, k, &st);
      if (at_or_after(st.st_ctim, r->start))
        rc = change_push(out, cap, buf, CORRAL_CHANGE_MODIFIED, false, 0);
    }
    buf[len] = '\0';
  }
  return rc;
}

static int report_events(struct watcher *w, struct watch_run *r, corral_outcome *out,
                         size_t *cap) {
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < r->cap; i++)
    for (struct touch *t = r->b[i]; rc == 0 && t; t = t->next) {
      unsigned char now;
      struct node *n = now_at(w, t->path, &now);
      bool gen = now == T_GEN || t->before == T_GEN;
      if (now == T_NONE && t->before == T_NONE)
        continue;
      if (t->before == T_NONE)
        rc = change_push(out, cap, t->path, CORRAL_CHANGE_CREATED, gen,
                         gen ? gen_count(w, t->path) : 0);
      else if (now == T_NONE)
        rc = change_push(out, cap, t->path, CORRAL_CHANGE_DELETED, gen, t->count);
      else if (now != t->before)
        rc = change_push(out, cap, t->path, CORRAL_CHANGE_MODIFIED, gen,
                         gen ? gen_count(w, t->path) : 0);
      else if (now != T_DIR) {
        char path[4096];
        snprintf(path, sizeof path, "%s", t->path);
        if (gen)
          path[strlen(path) - 1] = '\0';
        struct stat st;
        bool there = stat_beneath(w->rootfd, path, &st);
        if (there && !gen && st.st_nlink > 1)
          alias(r, st.st_ino);
        if (there && !gen && n && st.st_ino == n->ino)
          set_linked(w, n, &st);
        if (t->renamed || t->content ||
            (there && changed(r, t, st.st_ino, gen ? st.st_mtim : st.st_ctim)))
          rc = change_push(out, cap, t->path, CORRAL_CHANGE_MODIFIED, gen,
                           gen ? gen_count(w, t->path) : 0);
      }
    }
  if (w->blind) /* a directory not watched: a link made in it is not heard */
    r->uncertain = true;
  if (rc == 0 && (r->naliased || r->uncertain || w->linked))
    rc = report_aliases(w, r, w->top, (char[4096]){0}, 0, out, cap);
  return rc;
}

/* The fallback: what the run touched (everything, since the events broke
 * off) against a snapshot now. */
static int report_scan(struct watcher *w, struct watch_run *r, corral_outcome *out, size_t *cap,
                       corral_error *err) {
  corral_snapshot *after = NULL;
  int rc = corral_snapshot_take(w->root, NULL, 0, &after, err);
  if (rc < 0)
    return rc;
  if (after->incomplete) {
    rc = error_set(err, -E2BIG, E2BIG, "%s", after->why);
    corral_snapshot_free(after);
    return rc;
  }
  for (size_t i = 0; rc == 0 && i < after->n; i++) {
    const struct entry *e = &after->e[i];
    struct touch *t = find_touch(r, e->path);
    unsigned char now = e->aggregated ? T_GEN : S_ISDIR(e->mode) ? T_DIR : T_FILE;
    if (t)
      t->seen = true;
    if (!t || t->before == T_NONE)
      rc = change_push(out, cap, e->path, CORRAL_CHANGE_CREATED, e->aggregated, e->count);
    else if (now != t->before)
      rc = change_push(out, cap, e->path, CORRAL_CHANGE_MODIFIED, e->aggregated, e->count);
    else if (now != T_DIR && (t->renamed || t->content ||
                              changed(r, t, e->ino, now == T_GEN ? e->mtime : e->ctime)))
      rc = change_push(out, cap, e->path, CORRAL_CHANGE_MODIFIED, e->aggregated, e->count);
  }
  for (size_t i = 0; rc == 0 && i < r->cap; i++)
    for (struct touch *t = r->b[i]; rc == 0 && t; t = t->next)
      if (!t->seen && t->before != T_NONE)
        rc = change_push(out, cap, t->path, CORRAL_CHANGE_DELETED, t->before == T_GEN, t->count);
  corral_snapshot_free(after);
  if (rc < 0)
    return error_set(err, rc, -rc, "out of memory");
  return 0;
}

static int by_change_path(const void *a, const void *b) {
  return strcmp(((const corral_change *)a)->path, ((const corral_change *)b)->path);
}

static void set_reason(char **field, const char *why) {
  free(*field);
  *field = xstrdup_or_null(why);
}

static void run_report(struct watcher *w, struct watch_run *r, corral_outcome *out) {
  changes_clear(out);
  set_reason(&out->changes_skipped, NULL);
  set_reason(&out->changes_scanned, r->scanned);
  if (r->skipped) {
    set_reason(&out->changes_skipped, r->skipped);
    return;
  }
  size_t cap = 0;
  corral_error err = {0};
  int rc = r->scanned ? report_scan(w, r, out, &cap, &err) : report_events(w, r, out, &cap);
  if (rc == 0 && out->nchanges > CORRAL_OBSERVE_MAX_FILES) {
    char why[96];
    snprintf(why, sizeof why, "the command changed more than %d paths",
             CORRAL_OBSERVE_MAX_FILES);
    changes_clear(out);
    set_reason(&out->changes_skipped, why);
    return;
  }
  if (rc < 0) {
    changes_clear(out);
    set_reason(&out->changes_skipped, err.message[0] ? err.message : "out of memory");
    return;
  }
  if (out->nchanges > 1)
    qsort(out->changes, out->nchanges, sizeof *out->changes, by_change_path);
  if (!out->changes && !(out->changes = calloc(1, sizeof *out->changes))) {
    set_reason(&out->changes_skipped, "out of memory");
    return;
  }
  out->changes_present = true;
}

static void run_free(struct watch_run *r) {
  run_give_up(r, "");
  free(r->skipped);
  free(r->scanned);
  free(r);
}

/* ------------------------------------------------------------ observations */

struct observation {
  struct watcher *w, *own;
  struct watch_run *run;
  corral_snapshot *before; /* the fallback when nothing can be watched */
  char *root, *scanned, *skipped;
  bool linker; /* counted in w->linkers */
};

void observe_unsure(struct observation *o) {
  if (o && o->run)
    o->run->uncertain = true;
}

void observe_unsure_all(struct observation *o) {
  if (!o || !o->run)
    return;
  if (!o->linker) {
    o->linker = true;
    o->w->linkers++;
  }
  all_uncertain(o->w);
}

struct observation *observe_begin(struct watcher *w, const char *root) {
  struct observation *o = calloc(1, sizeof *o);
  if (!o)
    return NULL;
  if (!w)
    w = o->own = watcher_open(root);
  o->w = w;
  if (!w || !(o->root = strdup(root))) {
    o->skipped = strdup("out of memory");
    return o;
  }
  drain(w); /* what happened before the run is not the run's */
  retry(w);
  if (w->too_big) {
    o->skipped = strdup(w->too_big);
  } else if (w->broken) {
    corral_error err = {0};
    o->scanned = strdup(w->broken);
    if (corral_snapshot_take(root, NULL, 0, &o->before, &err) < 0)
      o->skipped = strdup(err.message);
  } else if ((o->run = calloc(1, sizeof *o->run))) {
    /* The kernel stamps files from the coarse clock: a change after this
     * has a ctime at or after it. */
    clock_gettime(CLOCK_REALTIME_COARSE, &o->run->start);
    struct timespec fine;
    clock_gettime(CLOCK_MONOTONIC, &fine);
    o->run->seed = ((uint64_t)fine.tv_nsec << 20) ^ (uint64_t)(uintptr_t)o->run ^
                   (uint64_t)fine.tv_sec * 0x9e3779b97f4a7c15ull;
    o->run->next = w->runs;
    o->run->uncertain = w->linkers > 0; /* a link made beside it, its other name unknown */
    w->runs = o->run;
  } else {
    o->skipped = strdup("out of memory");
  }
  return o;
}

struct watcher *observe_watcher(const struct observation *o) {
  return o && o->run ? o->w : NULL;
}

void observe_end(struct observation *o, corral_outcome *out) {
  if (!o) {
    set_reason(&out->changes_skipped, "out of memory");
    return;
  }
  if (o->linker)
    o->w->linkers--;
  if (o->run) {
    struct watcher *w = o->w;
    drain(w);
    for (struct watch_run **p = &w->runs; *p; p = &(*p)->next)
      if (*p == o->run) {
        *p = o->run->next;
        break;
      }
    run_report(w, o->run, out);
    run_free(o->run);
  } else if (o->before) {
    snapshot_conclude(o->before, o->root, out);
    set_reason(&out->changes_scanned, o->scanned);
  } else {
    changes_clear(out);
    set_reason(&out->changes_skipped, o->skipped ? o->skipped : "out of memory");
  }
  watcher_free(o->own);
  free(o->root);
  free(o->scanned);
  free(o->skipped);
  free(o);
}
