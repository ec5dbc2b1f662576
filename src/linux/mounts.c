/*
 * mounts.c — the sandbox's filesystem, built inside init's mount namespace.
 *
 * Two shapes.  When the sandbox reads everything (the default), it is built
 * in place: the namespace's own copy of the host's mounts is the root, made
 * read-only, and everything else is mounted over it — no second copy of the
 * tree, no pivot_root, no old root left to detach.  Covered host mounts
 * (the host's /proc and /dev) stay in the mount table but no path reaches
 * them, and the command has no capability to unmount what covers them.
 * With restricted reads, a root of its own is built in a tmpfs from the
 * platform and read roots, and pivoted into.
 *
 * Order (each step depends on the one before):
 *   1. make every mount private, so nothing propagates back to the host;
 *   2. clone (open_tree) every source while the host tree is still in view:
 *      (restricted) the platform and read roots, each write root, each
 *      allow-read path (1 and 2 create no file: mounts_clone_apply);
 *   3. a scratch tmpfs over a host mount below /dev (which 9 covers) for
 *      the setup's own files, and (restricted) the new root in it — every
 *      directory or file created as a mount point lives in a tmpfs of ours,
 *      never on the host (in place, a missing mount point fails the setup);
 *   4. the root read-only, nosuid, nodev (in place, before 3);
 *   5. the parent directory of each deny-read path (the nearest one that
 *      exists, outside the write roots) gets a read-only "view", so that a
 *      secret created or renamed into place on the host while the command
 *      runs never appears.  The view is an overlay whose upper layer holds
 *      a whiteout for each missing denied name: one mount, whatever the
 *      directory holds (built in place, the layer is made once and kept in
 *      the user's cache: cached_mask).  Where overlayfs cannot be had, it
 *      is a tmpfs holding binds of the directory's other entries as they
 *      are at start;
 *   6. the write roots, writable, on top (of a view too).  With restricted
 *      reads they come before 5 instead: their mount points are made in
 *      the new root, which a view would make read-only;
 *   7. pinned paths (a write root's .git) bound onto themselves, so that
 *      they cannot be renamed or removed; deny-write paths bound onto
 *      themselves, read-only;
 *   8. deny-read paths: an empty read-only tmpfs over a denied directory
 *      that exists, an unreadable empty file over a denied file, and
 *      allow-read paths bound back in; the same file over daemons' sockets
 *      (policy.c, add_daemon_sockets);
 *   9. a fresh /proc (only the sandbox's processes) and a minimal /dev;
 *  10. (restricted) pivot_root into the new root and detach the old one
 *      (or leave the detaching to the network-namespace child, which does
 *      it while init goes on: namespaces.c).
 *
 * Runs inside init: no allocation; fixed tables of descriptors.  In place,
 * the only files it makes on the host are the cached masks, in a directory
 * of the user's own, read-only to a run whose write roots hold it
 * (runtime_mask_cache).
 */
#include <fcntl.h>
#include <linux/openat2.h>
#include <limits.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <dirent.h>
#include <sys/syscall.h>

#include "../internal.h"
#include "../launch.h"
#include "linux.h"

/* Where the setup keeps its own files (the unreadable file that covers
 * denied ones, the views' whiteouts, a restricted root): a tmpfs over a
 * host mount below /dev, which the sandbox's own /dev covers later. */
static const char *const scratch_places[] = {"/dev/shm", "/dev/pts", "/dev/mqueue"};
static char scratch[32], denied_file[64], empty_dir[64], masks[64];
/* The two covers, opened once (O_PATH) to be cloned for each path. */
static int denied_fd = -1, empty_fd = -1, scratch_fd = -1;
/* The root being built: empty when the sandbox reads everything and is
 * built in place, over the namespace's own copy of the host's mounts (no
 * second copy, no pivot_root, no old root to detach). */
static char newroot[64];
#define MAX_DENIED 1024

/* Every path the sandbox is built from is a real path (the supervisor
 * resolved it), so a symlink met on the way means the tree changed since —
 * a concurrent command swapping a directory of a write root — and following
 * it would put a write root or a read-only bind somewhere else (an absolute
 * one leads out of the new root).  So sources and targets are opened
 * without following any (ELOOP: setup fails) and mounted by descriptor. */
static int open_exact(const char *path) {
  struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
  int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
  if (fd < 0 && errno == ENOSYS) /* before 5.6: the last component at least */
    fd = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
  return fd;
}

static int clone_fd(const char *path) {
  int pfd = open_exact(path);
  if (pfd < 0)
    return -1;
  int fd = open_tree(pfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
  int e = errno;
  close(pfd);
  errno = e;
  return fd;
}

/* Attaches clone `fd` (closed) at `target`. */
static int attach(int fd, const char *target) {
  int tfd = open_exact(target);
  int r = tfd < 0 ? -1
                  : move_mount(fd, "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
  int e = errno;
  if (tfd >= 0)
    close(tfd);
  close(fd);
  errno = e;
  return r;
}

/* On a clone before it is attached (or a mount named by a descriptor), so
 * that no path is looked up again. */
static int set_attr_fd(int fd, uint64_t set, uint64_t clr, bool recursive) {
  struct mount_attr a = {.attr_set = set, .attr_clr = clr};
  return mount_setattr(fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &a, sizeof a);
}

/* On our own mounts (tmpfs), once they are filled. */
static int set_attr(const char *target, uint64_t set, uint64_t clr, bool recursive) {
  struct mount_attr a = {.attr_set = set, .attr_clr = clr};
  return mount_setattr(AT_FDCWD, target, recursive ? AT_RECURSIVE : 0, &a, sizeof a);
}

static void in_root(char *buf, const char *path) {
  snprintf(buf, PATH_MAX, "%s%s", newroot, newroot[0] && strcmp(path, "/") == 0 ? "" : path);
}

/* A mount point of the same type as the source: a directory or a file,
 * made (mkdir -p) only when `create` says the target lies in a tmpfs of
 * ours; on the host a missing one fails the setup. */
static int make_mount_point(const char *target, bool dir, bool create) {
  struct stat st;
  if (lstat(target, &st) == 0)
    return 0;
  if (!create)
    return -1; /* lstat's errno */
  if (dir)
    return mkdir_p(target, 0755);
  char parent[PATH_MAX];
  snprintf(parent, sizeof parent, "%s", target);
  char *slash = strrchr(parent, '/');
  if (slash && slash != parent) {
    *slash = '\0';
    if (mkdir_p(parent, 0755) < 0)
      return -1;
  }
  int fd = open(target, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  close(fd);
  return 0;
}

struct source {
  const char *path;
  int fd;    /* clone, or -1 when the path does not exist */
  bool dir;
  bool link; /* a symlink on the host (restricted mode recreates it) */
};

/* The tables of what is cloned, as large as the plan's lists: made by the
 * supervisor (mounts_prepare), since init allocates nothing.  `covered`
 * holds the roots a view puts back (clone_covered). */
static struct source *write_src, *read_src, *allow_src, *covered;
static size_t ncovered_max;

static size_t nsources(const struct profile *pr, size_t *covered_max) {
  *covered_max = pr->write_roots.n + pr->read_roots.n + pr->platform_roots.n;
  return *covered_max + pr->allow_read.n;
}

int mounts_prepare(struct linux_plan *lp) {
  size_t cmax, n = nsources(&lp->profile, &cmax);
  lp->mount_tables = calloc(n + cmax + 1, sizeof(struct source));
  return lp->mount_tables ? 0 : -ENOMEM;
}

static int clone_list(const struct path_list *l, struct source *out, size_t *n, int report_fd,
                      const char *what) {
  *n = 0;
  for (size_t i = 0; i < l->n; i++) {
    struct stat st;
    struct source *s = &out[(*n)++];
    s->path = l->v[i];
    s->fd = -1;
    if (lstat(s->path, &st) < 0)
      continue; /* nothing to mount; never created on the host */
    s->link = S_ISLNK(st.st_mode);
    s->dir = S_ISDIR(st.st_mode);
    if (s->link)
      continue;
    s->fd = clone_fd(s->path);
    if (s->fd < 0)
      return setup_failed(report_fd, errno, what, s->path);
  }
  return 0;
}

/* `set` and `clr` on a clone and the mounts below it.  A host mount below
 * a write root that is locked read-only (WSL2 binds /tmp/.X11-unix so)
 * refuses to be made writable: then only the clone's top mount is, and
 * what lies below keeps its own read-only flag. */
static int set_attrs_below(int fd, uint64_t set, uint64_t clr) {
  if (set_attr_fd(fd, set, clr, true) == 0)
    return 0;
  if (errno != EPERM || !clr)
    return -1;
  return set_attr_fd(fd, set, 0, true) < 0 ? -1 : set_attr_fd(fd, 0, clr, false);
}

static int attach_sources(struct source *src, size_t n, uint64_t set, uint64_t clr,
                          bool restricted, int report_fd, const char *what) {
  char target[PATH_MAX];
  for (size_t i = 0; i < n; i++) {
    struct source *s = &src[i];
    in_root(target, s->path);
    if (s->link && restricted) {
      char dest[PATH_MAX];
      ssize_t len = readlink(s->path, dest, sizeof dest - 1);
      if (len < 0)
        return setup_failed(report_fd, errno, what, s->path);
      dest[len] = '\0';
      char parent[PATH_MAX];
      snprintf(parent, sizeof parent, "%s", target);
      *strrchr(parent, '/') = '\0';
      if ((parent[0] && mkdir_p(parent, 0755) < 0) ||
          (symlink(dest, target) < 0 && errno != EEXIST))
        return setup_failed(report_fd, errno, what, s->path);
      continue;
    }
    if (s->fd < 0)
      continue;
    if (set_attrs_below(s->fd, set, clr) < 0 ||
        make_mount_point(target, s->dir, newroot[0]) < 0 || attach(s->fd, target) < 0) {
      s->fd = -1;
      return setup_failed(report_fd, errno, what, s->path);
    }
    s->fd = -1;
  }
  return 0;
}

/* Binds a path inside the new root onto itself, with `attrs`. */
static int bind_self(const char *path, uint64_t attrs, int report_fd, const char *what) {
  char target[PATH_MAX];
  in_root(target, path);
  int tfd = open_exact(target);
  if (tfd < 0)
    return errno == ENOENT ? 0 : setup_failed(report_fd, errno, what, path); /* gone: nothing */
  int fd = open_tree(tfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
  int r = fd < 0 || set_attr_fd(fd, attrs, 0, true) < 0 ||
                  move_mount(fd, "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0
              ? -1
              : 0;
  int e = errno;
  if (fd >= 0)
    close(fd);
  close(tfd);
  return r < 0 ? setup_failed(report_fd, e, what, path) : 0;
}

/* What the views found of each deny-read path, so that deny_read() need
 * not look again: its nearest existing ancestor, the first component below
 * that (when the path is missing), and whether a view covers it.  Both are
 * prefixes of the path, so lengths say it. */
static struct denied {
  size_t parent_len;  /* 0: the parent is "/" */
  size_t missing_len; /* the first missing component ends here */
  bool exists;
  bool viewed;
} denied[MAX_DENIED];

/* lstat of `path[0..len)` in the new root, remembered for one setup: the
 * deny-read paths (well over a hundred) share a handful of directories —
 * HOME, its .config — which are then looked at once, not once per path.
 * `path` must outlive the setup (the profile's strings, parents[]). */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  for (const unsigned char *c = p; n--; c++)
    h = (h ^ *c) * 1099511628211ULL;
  return h;
}
#define FNV_START 14695981039346656037ULL

/* A set of paths (pointer and length into strings that outlive it) with
 * what is known of each: open addressing in fixed storage, nothing
 * allocated (init's).  A slot of another generation is free, so a set is
 * emptied by bumping `gen`. */
struct memo {
  const char *path;
  size_t len;
  unsigned gen;
  char kind;   /* mask_matches: 'w' a whiteout, 'd' a directory */
  bool exists; /* stat_prefix */
  mode_t mode;
};

/* The slot of path[0..len): where it is, or the free one where it would
 * go (then its gen is not `gen`); NULL when the set is full. */
static struct memo *memo_slot(struct memo *set, size_t n, unsigned gen, const char *path,
                              size_t len) {
  size_t i = fnv(FNV_START, path, len) % n;
  for (size_t k = 0; k < n; k++, i = (i + 1) % n)
    if (set[i].gen != gen || (set[i].len == len && memcmp(set[i].path, path, len) == 0))
      return &set[i];
  return NULL;
}

static struct memo stat_seen[512];
static size_t nstat_seen;
static unsigned stat_gen = 1; /* never 0: the zeroed slots are free */

static bool stat_prefix(const char *path, size_t len, mode_t *mode) {
  struct memo *m = memo_slot(stat_seen, ARRAY_SIZE(stat_seen), stat_gen, path, len);
  if (m && m->gen == stat_gen) {
    *mode = m->mode;
    return m->exists;
  }
  char probe[PATH_MAX];
  struct stat st;
  snprintf(probe, sizeof probe, "%s%.*s", newroot, (int)len, path);
  bool exists = lstat(probe, &st) == 0;
  *mode = exists ? st.st_mode : 0;
  if (m && nstat_seen < ARRAY_SIZE(stat_seen) / 2) { /* half full at most: probes stay short */
    *m = (struct memo){.path = path, .len = len, .gen = stat_gen, .exists = exists, .mode = *mode};
    nstat_seen++;
  }
  return exists;
}

static void probe_denied(const struct profile *pr) {
  stat_gen++; /* forgets what an earlier setup in this process saw */
  nstat_seen = 0;
  for (size_t i = 0; i < pr->deny_read.n; i++) {
    const char *path = pr->deny_read.v[i];
    struct denied *d = &denied[i];
    char probe[PATH_MAX];
    struct stat st;
    mode_t mode;
    d->viewed = false;
    d->missing_len = strlen(path);
    /* In place the paths are the host's, as the supervisor saw them; the
     * parent found is still looked at below (once per directory). */
    if (!newroot[0] && pr->deny_missing && pr->deny_missing[i] != SIZE_MAX) {
      d->exists = pr->deny_missing[i] == 0;
      if (!d->exists && pr->deny_missing[i] <= d->missing_len)
        d->missing_len = pr->deny_missing[i];
    } else {
      in_root(probe, path);
      d->exists = lstat(probe, &st) == 0;
    }
    d->parent_len = d->missing_len;
    while (d->parent_len > 0 && path[--d->parent_len] != '/')
      ;
    while (!d->exists && d->parent_len > 0 && !stat_prefix(path, d->parent_len, &mode)) {
      d->missing_len = d->parent_len;
      while (--d->parent_len > 0 && path[d->parent_len] != '/')
        ;
    }
  }
}

/* The parents that get views (plan_views), and for each the mask found in
 * the cache, if any (cached_mask). */
static char parents[64][PATH_MAX], view_mask[64][PATH_MAX];
static size_t np;

static void parent_of(const char *path, const struct denied *d, char *out) {
  size_t n = d->parent_len ? d->parent_len : 1;
  memcpy(out, path, n);
  out[n] = '\0';
}

/* A clone of cover `src` (denied_fd, empty_fd) attached on the target
 * opened as `tfd` (closed): both by descriptor, no path looked up again.
 * A clone has its mount's flags, so it is read-only like the scratch it
 * comes from (step 8).  Cover and target must be of one type (a directory
 * or not).  0, or -1 after reporting `what` of `path`. */
static int cover_with(int src, int tfd, int report_fd, const char *what, const char *path) {
  int fd = open_tree(src, "", OPEN_TREE_CLOEXEC | OPEN_TREE_CLONE | AT_EMPTY_PATH);
  int r = fd < 0 ? -1
                 : move_mount(fd, "", tfd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
  int e = errno;
  if (fd >= 0)
    close(fd);
  close(tfd);
  return r == 0 ? 0 : setup_failed(report_fd, e, what, path);
}

/* An allow-read source strictly inside `path`, to be bound back in. */
static bool inside(const struct source *s, const char *path) {
  return s->fd >= 0 && path_is_under(s->path, path) && strcmp(s->path, path) != 0;
}

/* An unreadable empty file over `path` (a denied file, a daemon's socket:
 * connect fails); nothing when it is gone.  The target is opened without
 * following a symlink. */
static int cover_file(const char *path, int report_fd, const char *what) {
  char target[PATH_MAX];
  in_root(target, path);
  int tfd = open_exact(target);
  if (tfd < 0)
    return errno == ENOENT ? 0 : setup_failed(report_fd, errno, what, path);
  return cover_with(denied_fd, tfd, report_fd, what, path);
}

/* A store's symlink in a write root (~/.ssh -> dotfiles/ssh), its target
 * denied: the unreadable file over the link itself, which then can be
 * neither removed nor replaced (a mount point).  Opened as the link (no
 * symlink followed on the way, none at the end); nothing when it is gone
 * or no longer a link. */
static int cover_link(const char *path, int report_fd) {
  char target[PATH_MAX];
  in_root(target, path);
  struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
  int tfd = (int)syscall(SYS_openat2, AT_FDCWD, target, &how, sizeof how), e = errno;
  struct stat st;
  if (tfd < 0)
    return e == ENOENT || e == ENOSYS ? 0 : setup_failed(report_fd, e, "mounts: cover `%s`", path);
  if (fstat(tfd, &st) < 0 || !S_ISLNK(st.st_mode)) {
    close(tfd);
    return 0;
  }
  return cover_with(denied_fd, tfd, report_fd, "mounts: cover `%s`", path);
}

static int deny_read(size_t idx, const struct profile *pr, int report_fd) {
  const char *path = pr->deny_read.v[idx];
  char target[PATH_MAX];
  struct stat st;
  /* Missing under a view: the view hides it now and later. */
  if (denied[idx].viewed && !denied[idx].exists)
    return 0;
  in_root(target, path);
  int tfd = open_exact(target);
  /* Gone since the supervisor saw it: a view planned without its whiteout
   * would show it if it came back, so fail closed. */
  if (tfd < 0 && errno == ENOENT && denied[idx].viewed)
    return setup_failed(report_fd, errno, "mounts: deny-read `%s` changed during setup", path);
  if (tfd < 0)
    return errno == ENOENT ? 0 : setup_failed(report_fd, errno, "mounts: deny-read `%s`", path);
  /* A directory with no allow-read path inside is covered with a clone of
   * the scratch's empty directory, anything else not a directory with one
   * of its unreadable file: a tmpfs of its own would be a new superblock,
   * and a second call to make it read-only. */
  bool reincluded = false;
  for (size_t i = 0; i < pr->allow_read.n && !reincluded; i++)
    reincluded = inside(&allow_src[i], path);
  bool dir = fstat(tfd, &st) == 0 && S_ISDIR(st.st_mode);
  if (!dir || !reincluded)
    return cover_with(dir ? empty_fd : denied_fd, tfd, report_fd, "mounts: deny-read `%s`", path);
  /* Mounted on the very directory opened, through its descriptor. */
  char via[64];
  snprintf(via, sizeof via, "/proc/self/fd/%d", tfd);
  int r = mount("tmpfs", via, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k");
  int e = errno;
  close(tfd);
  if (r < 0)
    return setup_failed(report_fd, e, "mounts: deny-read `%s`", path);
  /* allow-read paths inside come back, read-only. */
  for (size_t i = 0; i < pr->allow_read.n; i++) {
    struct source *s = &allow_src[i];
    if (!inside(s, path))
      continue;
    char inner[PATH_MAX];
    in_root(inner, s->path);
    if (set_attr_fd(s->fd, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, true) < 0 ||
        make_mount_point(inner, s->dir, true) < 0 || attach(s->fd, inner) < 0) {
      s->fd = -1;
      return setup_failed(report_fd, errno, "mounts: allow-read `%s`", s->path);
    }
    s->fd = -1;
  }
  if (set_attr(target, MOUNT_ATTR_RDONLY, 0, false) < 0)
    return setup_failed(report_fd, errno, "mounts: deny-read `%s` read-only", path);
  return 0;
}

static bool under_any(const char *path, const struct path_list *roots) {
  for (size_t i = 0; i < roots->n; i++)
    if (path_is_under(path, roots->v[i]))
      return true;
  return false;
}

/* Is `parent/name` a deny-read path? */
static bool denied_entry(const char *parent, const char *name, const struct path_list *deny) {
  char full[PATH_MAX];
  snprintf(full, sizeof full, "%s/%s", strcmp(parent, "/") == 0 ? "" : parent, name);
  return path_list_has(deny, full);
}

/* Replaces directory `parent` with a read-only tmpfs holding binds of its
 * entries as they are now; denied entries become placeholders (an empty
 * directory, a mode-000 file) that deny_read() masks afterwards. */
static int build_view(const char *parent, const struct profile *pr, int report_fd) {
  char target[PATH_MAX], dents[8192];
  in_root(target, parent);
  int dfd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return setup_failed(report_fd, errno, "mounts: view of `%s`", parent);
  if (mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=256k") < 0) {
    close(dfd);
    return setup_failed(report_fd, errno, "mounts: view of `%s`", parent);
  }
  long got;
  int rc = 0;
  while (rc == 0 && (got = syscall(SYS_getdents64, dfd, dents, sizeof dents)) > 0) {
    for (long off = 0; off < got && rc == 0;) {
      struct dirent64 *d = (struct dirent64 *)(dents + off);
      off += d->d_reclen;
      const char *name = d->d_name;
      if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        continue;
      struct stat st;
      if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        continue; /* vanished meanwhile */
      char entry[PATH_MAX];
      snprintf(entry, sizeof entry, "%s/%s", target, name);
      bool deny = denied_entry(parent, name, &pr->deny_read);
      if (S_ISLNK(st.st_mode)) {
        char dest[PATH_MAX];
        ssize_t n = readlinkat(dfd, name, dest, sizeof dest - 1);
        if (n < 0)
          continue;
        dest[n] = '\0';
        if (!deny && symlink(dest, entry) < 0)
          rc = -1;
        continue;
      }
      if (S_ISDIR(st.st_mode) ? mkdir(entry, 0755) < 0 : make_mount_point(entry, false, true) < 0) {
        rc = -1;
        break;
      }
      if (deny) {
        if (!S_ISDIR(st.st_mode))
          chmod(entry, 0);
        continue;
      }
      int fd = open_tree(dfd, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
      if (fd < 0 || attach(fd, entry) < 0)
        rc = -1;
    }
  }
  int e = errno;
  close(dfd);
  if (rc < 0)
    return setup_failed(report_fd, e, "mounts: view of `%s`", parent);
  if (set_attr(target, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, false) < 0)
    return setup_failed(report_fd, errno, "mounts: view of `%s` read-only", parent);
  return 0;
}

/* In mask directory `mask` standing for `view`, a whiteout at the place of
 * `missing` (a path below `view`); the directories between are made with
 * the modes of the real ones, which they merge with.  The first whiteout
 * is made, the others are links to it (cheaper, and overlayfs's own way). */
static int add_whiteout(const char *mask, const char *view, const char *missing,
                        char first[PATH_MAX]) {
  char path[PATH_MAX], real[PATH_MAX];
  size_t vlen = strlen(view);
  snprintf(path, sizeof path, "%s%s", mask, missing + vlen);
  for (char *p = path + strlen(mask) + 1; (p = strchr(p, '/')); p++) {
    *p = '\0';
    struct stat st;
    in_root(real, view);
    snprintf(real + strlen(real), PATH_MAX - strlen(real), "%s", path + strlen(mask));
    if (lstat(real, &st) < 0 || (mkdir(path, st.st_mode & 07777) < 0 && errno != EEXIST))
      return -1;
    *p = '/';
  }
  if (first[0] && link(first, path) == 0)
    return 0;
  if (mknod(path, S_IFCHR | 0000, 0) < 0)
    return errno == EEXIST ? 0 : -1;
  snprintf(first, PATH_MAX, "%s", path);
  return 0;
}

/* Which denied paths get a whiteout in the mask of `view`: the missing
 * ones whose nearest existing parent lies in it (one that exists is masked
 * by deny_read()); `*missing` is set to the part to white out. */
static bool whited_out(const char *view, size_t i, const struct profile *pr, char *missing) {
  const char *path = pr->deny_read.v[i];
  size_t plen = denied[i].parent_len, vlen = strlen(view);
  /* Its nearest existing parent path[0..plen) lies in the view. */
  if (denied[i].exists || !plen || plen < vlen || memcmp(path, view, vlen) != 0 ||
      (plen > vlen && path[vlen] != '/'))
    return false;
  memcpy(missing, path, denied[i].missing_len);
  missing[denied[i].missing_len] = '\0';
  return true;
}

/* Fills `mask` (a new directory) for `view`; -1 when a whiteout cannot be
 * made (kernels before 5.8 let no one make them here). */
static int fill_mask(const char *mask, const char *view, const struct profile *pr) {
  char first[PATH_MAX] = "", missing[PATH_MAX];
  for (size_t i = 0; i < pr->deny_read.n; i++)
    if (whited_out(view, i, pr, missing) && add_whiteout(mask, view, missing, first) < 0)
      return -1;
  return 0;
}

/* A mask holds nothing but what mask_key() names: the view's mode, and
 * for each whiteout its path and the modes of the directories above it
 * (the real ones', which they merge with).  FNV-1a over those. */
static uint64_t mask_key(const char *view, const struct profile *pr) {
  char missing[PATH_MAX];
  mode_t mode;
  stat_prefix(view, strlen(view), &mode);
  uint64_t h = fnv(fnv(FNV_START, view, strlen(view) + 1), &mode, sizeof mode);
  for (size_t i = 0; i < pr->deny_read.n; i++) {
    if (!whited_out(view, i, pr, missing))
      continue;
    h = fnv(h, missing, strlen(missing) + 1);
    for (char *p = missing + strlen(view) + 1; (p = strchr(p, '/')); p++) {
      stat_prefix(pr->deny_read.v[i], (size_t)(p - missing), &mode); /* missing is its prefix */
      h = fnv(h, &mode, sizeof mode);
    }
  }
  return h;
}

/* What a mask of a view must hold, by path below the view (over the
 * deny-read paths' own strings). */
static struct memo expected[2048];
static unsigned expected_gen = 1;
static const struct memo *expected_dirs[1024]; /* the 'd' entries */

/* Does `dirfd` (the mask's directory for rel[0..len), "" at the top) hold
 * exactly what is expected there?  Counts the whiteouts in *found. */
static bool listing_matches(int dirfd, const char *rel, size_t len, size_t *found) {
  static struct dir_iter it; /* off init's stack */
  char child[PATH_MAX];
  unsigned char type;
  memcpy(child, rel, len);
  dir_start(&it, dirfd);
  for (const char *name; (name = dir_next(&it, &type));) {
    size_t n = strlen(name);
    if (len + 1 + n >= sizeof child)
      return false;
    child[len] = '/';
    memcpy(child + len + 1, name, n);
    struct memo *e = memo_slot(expected, ARRAY_SIZE(expected), expected_gen, child, len + 1 + n);
    if (!e || e->gen != expected_gen || type != (e->kind == 'w' ? DT_CHR : DT_DIR))
      return false;
    *found += e->kind == 'w';
  }
  return it.got == 0;
}

/* A cached mask is used only when it holds exactly what its key says: a
 * run that could write the cache (or anyone else of the user's) may have
 * removed a whiteout, so that a store created later would show, or added
 * files the view would then show.  Not trusted for where it is. */
static bool mask_matches(const char *mask, const char *view, const struct profile *pr) {
  char missing[PATH_MAX], dir[PATH_MAX];
  size_t vlen = strlen(view), want = 0, found = 0, ndirs = 0;
  expected_gen++;
  for (size_t i = 0; i < pr->deny_read.n; i++) {
    if (!whited_out(view, i, pr, missing))
      continue;
    const char *rel = pr->deny_read.v[i] + vlen; /* "/a/b", the missing part's path */
    size_t len = strlen(missing) - vlen;
    for (size_t k = 1; k <= len; k++) {
      if (k < len && rel[k] != '/')
        continue;
      struct memo *e = memo_slot(expected, ARRAY_SIZE(expected), expected_gen, rel, k);
      if (!e || (e->gen != expected_gen && k < len && ndirs == ARRAY_SIZE(expected_dirs)))
        return false;
      if (e->gen != expected_gen) {
        *e = (struct memo){.path = rel, .len = k, .gen = expected_gen, .kind = k == len ? 'w' : 'd'};
        want += k == len;
        if (k < len)
          expected_dirs[ndirs++] = e;
      }
    }
  }
  /* The top, then every directory expected below it. */
  for (size_t i = 0; i <= ndirs; i++) {
    const char *rel = i ? expected_dirs[i - 1]->path : "";
    size_t len = i ? expected_dirs[i - 1]->len : 0;
    snprintf(dir, sizeof dir, "%s%.*s", mask, (int)len, rel);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    bool ok = fd >= 0 && listing_matches(fd, rel, len, &found);
    if (fd >= 0)
      close(fd);
    if (!ok)
      return false;
  }
  return found == want;
}

/* In place, the masks live in the user's cache (`cache`, outside every
 * write root), made once and found again by their key: a run then makes
 * no whiteout.  Made while the host is still writable here, under a
 * temporary name renamed into place (another run may be making the same).
 * "" in `out` when there is none to use: the view's mask is made in the
 * scratch tmpfs instead. */
static void cached_mask(const char *view, const struct profile *pr, const char *cache,
                        char out[PATH_MAX]) {
  struct stat st;
  out[0] = '\0';
  if (!cache[0] || path_is_under(cache, view) || path_is_under(view, cache))
    return; /* overlayfs refuses a layer inside another */
  char path[PATH_MAX], tmp[PATH_MAX];
  snprintf(path, sizeof path, "%s/%016llx", cache, (unsigned long long)mask_key(view, pr));
  if (lstat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode) && mask_matches(path, view, pr)) {
      snprintf(out, PATH_MAX, "%s", path);
      return;
    }
    remove_tree(path, true); /* not what its key says: made anew below */
  }
  snprintf(tmp, sizeof tmp, "%s/.new-XXXXXX", cache); /* mkdtemp fills in the X */
  bool made = mkdtemp(tmp) && lstat(view, &st) == 0 && chmod(tmp, st.st_mode & 07777) == 0 &&
              fill_mask(tmp, view, pr) == 0;
  if (made)
    rename(tmp, path); /* fails when another run's got there first: that one is used */
  remove_tree(tmp, true); /* what is left of a failure or a lost race */
  if (made && lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
    snprintf(out, PATH_MAX, "%s", path);
}

/* Roots already attached under the view directory (only with restricted
 * reads): the overlay covers them, so the outermost are cloned before and
 * put back after.  (The host's own mounts below it need nothing: overlayfs
 * refuses a lower directory with mounts inherited from the host, and that
 * directory gets the bind view, which carries them.) */
#define NCOVER 3
static size_t clone_covered(const char *view, const struct profile *pr, struct source *out,
                            int report_fd) {
  if (!pr->restricted_read)
    return 0;
  const struct path_list *lists[NCOVER] = {&pr->write_roots, &pr->read_roots,
                                           &pr->platform_roots};
  size_t n = 0;
  for (size_t l = 0; l < NCOVER; l++)
    for (size_t i = 0; i < lists[l]->n && n < ncovered_max; i++) {
      const char *m = lists[l]->v[i];
      if (strcmp(m, view) == 0 || !path_is_under(m, view))
        continue;
      bool inner = false;
      for (size_t k = 0; k < NCOVER && !inner; k++)
        for (size_t j = 0; j < lists[k]->n && !inner; j++) {
          const char *o = lists[k]->v[j];
          inner = strcmp(o, view) != 0 && strcmp(o, m) != 0 && path_is_under(o, view) &&
                  path_is_under(m, o);
        }
      bool dup = false;
      for (size_t k = 0; k < n && !dup; k++)
        dup = strcmp(out[k].path, m) == 0;
      char target[PATH_MAX];
      in_root(target, m);
      struct stat st;
      if (inner || dup || lstat(target, &st) < 0)
        continue;
      out[n] = (struct source){.path = m, .fd = clone_fd(target), .dir = S_ISDIR(st.st_mode)};
      if (out[n].fd < 0) {
        setup_failed(report_fd, errno, "mounts: view: clone `%s`", m);
        return SIZE_MAX;
      }
      n++;
    }
  return n;
}

/* The overlay view of `view`, for every denied path whose nearest
 * existing parent lies in it.  0 done, 1 overlayfs unavailable (nothing
 * changed), -1 failed (reported). */
static int overlay_view(const char *view, size_t idx, const struct profile *pr, int report_fd) {
  char target[PATH_MAX], mask[PATH_MAX], data[2 * PATH_MAX + 32];
  in_root(target, view);
  /* Overlayfs splits its options at these; such a directory gets binds. */
  if (strpbrk(target, ",:\\") || strpbrk(view_mask[idx], ",:\\"))
    return 1;
  struct stat st;
  if (view_mask[idx][0]) {
    snprintf(mask, sizeof mask, "%s", view_mask[idx]);
  } else {
    snprintf(mask, sizeof mask, "%s/%zu", masks, idx);
    if (lstat(target, &st) < 0 || mkdir_p(mask, st.st_mode & 07777) < 0)
      return setup_failed(report_fd, errno, "mounts: view of `%s`", view);
    if (fill_mask(mask, view, pr) < 0)
      return 1;
  }
  size_t n = clone_covered(view, pr, covered, report_fd);
  if (n == SIZE_MAX)
    return -1;
  snprintf(data, sizeof data, "lowerdir=%s:%s", mask, target);
  if (mount("overlay", target, "overlay", MS_RDONLY | MS_NOSUID | MS_NODEV, data) < 0) {
    for (size_t i = 0; i < n; i++)
      close(covered[i].fd);
    return 1;
  }
  for (size_t i = 0; i < n; i++) {
    char inner[PATH_MAX];
    in_root(inner, covered[i].path);
    if (attach(covered[i].fd, inner) < 0)
      return setup_failed(report_fd, errno, "mounts: view: put back `%s`", covered[i].path);
  }
  return 0;
}

static bool outermost(size_t i) {
  for (size_t k = 0; k < np; k++)
    if (k != i && path_is_under(parents[i], parents[k]))
      return false;
  return true;
}

/* Which parents get views: in place before the root is made read-only
 * (their masks may have to be made in the cache), else once the
 * restricted root holds what they are probed in. */
static int plan_views(const struct profile *pr, int report_fd) {
  np = 0;
  if (pr->deny_read.n > MAX_DENIED)
    return setup_failed(report_fd, E2BIG, "mounts: more than 1024 deny-read paths%s", "");
  probe_denied(pr);
  for (size_t i = 0; i < pr->deny_read.n; i++) {
    char parent[PATH_MAX];
    parent_of(pr->deny_read.v[i], &denied[i], parent);
    /* A parent inside a write root must stay writable: no view there. */
    if (!denied[i].parent_len || under_any(parent, &pr->write_roots))
      continue;
    denied[i].viewed = true;
    bool seen = false;
    for (size_t k = 0; k < np && !seen; k++)
      seen = strcmp(parents[k], parent) == 0;
    if (!seen && np < ARRAY_SIZE(parents)) {
      view_mask[np][0] = '\0';
      snprintf(parents[np++], PATH_MAX, "%s", parent);
    }
  }
  return 0;
}

static int build_views(const struct profile *pr, int report_fd) {
  /* One overlay for each outermost parent covers the ones inside it. */
  for (size_t i = 0; i < np; i++) {
    if (!outermost(i))
      continue;
    int r = overlay_view(parents[i], i, pr, report_fd);
    if (r < 0)
      return -1;
    if (r == 0)
      continue;
    if (build_view(parents[i], pr, report_fd) < 0)
      return -1;
    for (size_t k = 0; k < np; k++)
      if (k != i && path_is_under(parents[k], parents[i]) &&
          build_view(parents[k], pr, report_fd) < 0)
        return -1;
  }
  return 0;
}

/* The sandbox's /dev is built in the scratch tmpfs, where the host's /dev
 * is still in view (bound by path: cheaper than a clone each), and moved
 * into place whole. */
static int make_dev(int report_fd) {
  static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
  char dev[64], path[PATH_MAX];
  snprintf(dev, sizeof dev, "%s/dev", scratch);
  if (mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k") < 0)
    return setup_failed(report_fd, errno, "dev: tmpfs on `%s`", "/dev");
  for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
    char host[64];
    snprintf(host, sizeof host, "/dev/%s", nodes[i]);
    snprintf(path, sizeof path, "%s/%s", dev, nodes[i]);
    /* In place, the host's /dev is already nodev (step 4). */
    if (mknod(path, S_IFREG | 0644, 0) < 0 || mount(host, path, NULL, MS_BIND, NULL) < 0 ||
        set_attr(path, 0, MOUNT_ATTR_NODEV, false) < 0)
      return setup_failed(report_fd, errno, "dev: bind `%s`", host);
  }
  snprintf(path, sizeof path, "%s/pts", dev);
  if (mkdir(path, 0755) < 0 ||
      mount("devpts", path, "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620") <
          0)
    return setup_failed(report_fd, errno, "dev: devpts on `%s`", "/dev/pts");
  snprintf(path, sizeof path, "%s/shm", dev);
  if (mkdir(path, 01777) < 0 ||
      mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777") < 0)
    return setup_failed(report_fd, errno, "dev: tmpfs on `%s`", "/dev/shm");
  static const char *const links[][2] = {{"pts/ptmx", "ptmx"},
                                         {"/proc/self/fd", "fd"},
                                         {"/proc/self/fd/0", "stdin"},
                                         {"/proc/self/fd/1", "stdout"},
                                         {"/proc/self/fd/2", "stderr"}};
  for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
    snprintf(path, sizeof path, "%s/%s", dev, links[i][1]);
    if (symlink(links[i][0], path) < 0)
      return setup_failed(report_fd, errno, "dev: symlink `/dev/%s`", links[i][1]);
  }
  if (set_attr(dev, MOUNT_ATTR_RDONLY, 0, false) < 0)
    return setup_failed(report_fd, errno, "dev: read-only `%s`", "/dev");
  in_root(path, "/dev");
  if (make_mount_point(path, true, newroot[0]) < 0 || mount(dev, path, NULL, MS_MOVE, NULL) < 0)
    return setup_failed(report_fd, errno, "dev: move into `%s`", "/dev");
  return 0;
}

/* Steps 1 and 2 create no file. */
static size_t nwrite, nread, nallow;

int mounts_clone_apply(const struct linux_plan *lp, int report_fd) {
  const struct profile *pr = &lp->profile;
  struct source *tables = lp->mount_tables;
  size_t cmax;
  if (!tables)
    return setup_failed(report_fd, EINVAL, "mounts: no tables%s", "");
  write_src = tables;
  read_src = write_src + pr->write_roots.n;
  allow_src = read_src + pr->read_roots.n + pr->platform_roots.n;
  covered = tables + nsources(pr, &cmax);
  ncovered_max = cmax;
  /* 1. */
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    return setup_failed(report_fd, errno, "mounts: make `%s` private", "/");
  scratch[0] = '\0';
  for (size_t i = 0; i < ARRAY_SIZE(scratch_places) && !scratch[0]; i++) {
    struct stat st;
    if (lstat(scratch_places[i], &st) == 0 && S_ISDIR(st.st_mode))
      snprintf(scratch, sizeof scratch, "%s", scratch_places[i]);
  }
  if (!scratch[0])
    return setup_failed(report_fd, ENOENT, "mounts: no place for a scratch tmpfs under `%s`",
                        "/dev");
  snprintf(denied_file, sizeof denied_file, "%s/denied", scratch);
  snprintf(empty_dir, sizeof empty_dir, "%s/empty", scratch);
  snprintf(masks, sizeof masks, "%s/masks", scratch);
  snprintf(newroot, sizeof newroot, "%s", pr->restricted_read ? scratch : "");
  if (newroot[0])
    snprintf(newroot + strlen(newroot), sizeof newroot - strlen(newroot), "/root");
  /* 2. */
  nread = 0;
  if (pr->restricted_read) {
    struct path_list all = pr->platform_roots;
    if (clone_list(&all, read_src, &nread, report_fd, "mounts: clone platform root `%s`") < 0)
      return -1;
    size_t more;
    if (clone_list(&pr->read_roots, read_src + nread, &more, report_fd,
                   "mounts: clone read root `%s`") < 0)
      return -1;
    nread += more;
  }
  if (clone_list(&pr->write_roots, write_src, &nwrite, report_fd,
                 "mounts: clone write root `%s`") < 0 ||
      clone_list(&pr->allow_read, allow_src, &nallow, report_fd,
                 "mounts: clone allow-read `%s`") < 0)
    return -1;
  return 0;
}

static int attach_write_roots(const struct profile *pr, int report_fd) {
  return attach_sources(write_src, nwrite, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, MOUNT_ATTR_RDONLY,
                        pr->restricted_read, report_fd, "mounts: write root `%s`");
}

int mounts_apply(const struct linux_plan *lp, bool detach, int report_fd) {
  const struct profile *pr = &lp->profile;
  const uint64_t ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  char path[PATH_MAX];

  /* In place, the views' masks come from the cache, while the host is
   * still writable here (cached_mask). */
  if (!newroot[0]) {
    if (plan_views(pr, report_fd) < 0)
      return -1;
    for (size_t i = 0; i < np; i++)
      if (outermost(i))
        cached_mask(parents[i], pr, lp->mask_cache, view_mask[i]);
  }
  /* 4 (in place) before 3: the scratch tmpfs must stay writable. */
  if (!newroot[0] && set_attr("/", ro, 0, true) < 0)
    return setup_failed(report_fd, errno, "mounts: read-only root `%s`", "/");
  /* 3. */
  if (mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") < 0)
    return setup_failed(report_fd, errno, "mounts: scratch tmpfs on `%s`", scratch);
  /* The scratch holds, besides the views' masks, the two covers of
   * deny-read paths (an unreadable file, an empty directory) and the mount
   * points of /dev and of a restricted root: all made here, so that it can
   * be made read-only before the covers are cloned from it (step 8). */
  int dfd = open(denied_file, O_CREAT | O_WRONLY | O_CLOEXEC, 0000);
  snprintf(path, sizeof path, "%s/dev", scratch);
  if (dfd < 0 || mkdir(empty_dir, 0755) < 0 || mkdir(path, 0755) < 0 ||
      (newroot[0] && mkdir(newroot, 0755) < 0))
    return setup_failed(report_fd, errno, "mounts: scratch files in `%s`", scratch);
  close(dfd);
  /* Opened now, while the scratch is the top mount here: covers are cloned
   * from these, not from whatever a path would reach later. */
  denied_fd = open(denied_file, O_PATH | O_CLOEXEC);
  empty_fd = open(empty_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  scratch_fd = open(scratch, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (denied_fd < 0 || empty_fd < 0 || scratch_fd < 0)
    return setup_failed(report_fd, errno, "mounts: scratch files in `%s`", scratch);

  /* 4 (restricted). */
  if (newroot[0]) {
    if (mount("tmpfs", newroot, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0)
      return setup_failed(report_fd, errno, "mounts: restricted root `%s`", "/");
    if (attach_sources(read_src, nread, ro, 0, true, report_fd, "mounts: read root `%s`") < 0)
      return -1;
    static const char *const dirs[] = {"/proc", "/dev", "/tmp"};
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
      in_root(path, dirs[i]);
      if (mkdir_p(path, 0755) < 0)
        return setup_failed(report_fd, errno, "mounts: mount point `%s`", dirs[i]);
    }
  }
  /* 5. and 6. (the other way round with restricted reads) */
  if ((pr->restricted_read &&
       (attach_write_roots(pr, report_fd) < 0 || plan_views(pr, report_fd) < 0)) ||
      build_views(pr, report_fd) < 0 ||
      (!pr->restricted_read && attach_write_roots(pr, report_fd) < 0))
    return -1;
  /* 7. */
  for (size_t i = 0; i < pr->pinned.n; i++)
    if (bind_self(pr->pinned.v[i], MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, report_fd,
                  "mounts: pin `%s`") < 0)
      return -1;
  for (size_t i = 0; i < pr->deny_write.n; i++)
    if (bind_self(pr->deny_write.v[i], MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                  report_fd, "mounts: deny-write `%s`") < 0)
      return -1;
  /* 8.  Not even their owner can then chmod or write the covers.  Through
   * its own descriptor, which names the scratch's mount: by path,
   * the call would reach whatever is mounted over it since (a view of
   * /dev/shm, a deny-write of it) and leave the scratch writable. */
  if (set_attr_fd(scratch_fd, MOUNT_ATTR_RDONLY, 0, false) < 0)
    return setup_failed(report_fd, errno, "mounts: read-only scratch `%s`", scratch);
  for (size_t i = 0; i < pr->deny_read.n; i++)
    if (deny_read(i, pr, report_fd) < 0)
      return -1;
  for (size_t i = 0; i < pr->hidden_sockets.n; i++)
    if (cover_file(pr->hidden_sockets.v[i], report_fd, "mounts: hide socket `%s`") < 0)
      return -1;
  for (size_t i = 0; i < pr->deny_links.n; i++)
    if (under_any(pr->deny_links.v[i], &pr->write_roots) &&
        cover_link(pr->deny_links.v[i], report_fd) < 0)
      return -1;
  if (pr->restricted_read) {
    in_root(path, "/");
    if (set_attr(path, MOUNT_ATTR_RDONLY, 0, false) < 0)
      return setup_failed(report_fd, errno, "mounts: read-only `%s`", "/");
  }
  /* 9.  A root caller's command is uid 0 of the host (mapped to itself,
   * so that root's files stay its own): it passes the owner checks of
   * /proc's global entries — the sysctls (core_pattern runs a program as
   * the host's root), sysrq-trigger, irq affinities, /proc/bus/pci — and
   * reads root-only ones such as timer_list.  So its /proc is read-only
   * whole (Landlock grants it no write there either) and those are
   * covered.  /proc/keys lists the keys of the caller's uid on the host,
   * whoever the caller is. */
  in_root(path, "/proc");
  bool root = lp->uid == 0;
  if (mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | (root ? MS_RDONLY : 0),
            NULL) < 0)
    return setup_failed(report_fd, errno, "proc: mount a fresh `%s`", "/proc");
  static const char *const proc_covered[] = {"/proc/keys", "/proc/timer_list",
                                             "/proc/sched_debug", "/proc/latency_stats"};
  for (size_t i = 0; i < (root ? ARRAY_SIZE(proc_covered) : 1); i++)
    if (cover_file(proc_covered[i], report_fd, "proc: cover `%s`") < 0)
      return -1;
  close(denied_fd), close(empty_fd), close(scratch_fd);
  denied_fd = empty_fd = scratch_fd = -1;
  if (make_dev(report_fd) < 0)
    return -1;
  /* 10. */
  if (newroot[0] && (chdir(newroot) < 0 || syscall(SYS_pivot_root, ".", ".") < 0 ||
                     (detach && umount2(".", MNT_DETACH) < 0)))
    return setup_failed(report_fd, errno, "mounts: pivot_root into `%s`", newroot);
  if (chdir("/") < 0)
    return setup_failed(report_fd, errno, "mounts: chdir to `%s`", "/");
  return 0;
}

bool mounts_pivot(const struct linux_plan *lp) { return lp->profile.restricted_read; }
