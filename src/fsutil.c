/* fsutil.c — small filesystem helpers shared by the supervisor and init. */
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

int mkdir_p(const char *path, mode_t mode) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  /* Usually the parents exist: one mkdir then. */
  if (mkdir(buf, mode) == 0 || errno == EEXIST)
    return 0;
  if (errno != ENOENT)
    return -1;
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, 0755) < 0 && errno != EEXIST)
      return -1;
    *p = '/';
  }
  return mkdir(buf, mode) < 0 && errno != EEXIST ? -1 : 0;
}

bool path_through_symlink(const char *path) {
  char prefix[PATH_MAX];
  struct stat st;
  for (const char *p = path + 1;; p++)
    if (*p == '/' || *p == '\0') {
      snprintf(prefix, sizeof prefix, "%.*s", (int)(p - path), path);
      if (lstat(prefix, &st) < 0)
        return false; /* nothing below a missing component is a link yet */
      if (S_ISLNK(st.st_mode))
        return true;
      if (!*p)
        return false;
    }
}

void dir_start(struct dir_iter *it, int fd) {
  it->fd = fd;
  it->got = it->off = 0;
}

void dir_rewind(struct dir_iter *it, int fd) {
  dir_start(it, fd);
  lseek(fd, 0, SEEK_SET);
}

const char *dir_next(struct dir_iter *it, unsigned char *type) {
  for (;;) {
    if (it->off >= it->got) {
      it->got = syscall(SYS_getdents64, it->fd, it->buf, sizeof it->buf);
      it->off = 0;
      if (it->got <= 0)
        return NULL;
    }
    struct dirent64 *d = (struct dirent64 *)(it->buf + it->off);
    it->off += d->d_reclen;
    if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0) {
      if (type)
        *type = d->d_type;
      it->ino = d->d_ino;
      return d->d_name;
    }
  }
}

/* A directory in `parent` opened for emptying: never through a symlink,
 * and made readable, writable and searchable by its owner first if it is
 * not (the command may have left it 000 or 555).  -1 if it cannot be. */
static int open_dir(int parent, const char *name) {
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 0700) != 0700)
    fchmod(fd, (st.st_mode & 07777) | 0700);
  if (fd >= 0 || errno != EACCES)
    return fd;
  /* Unreadable: by a path descriptor (no permission needed) and its
   * /proc link, which names the very inode. */
  int pfd = openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (pfd < 0)
    return -1;
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", pfd);
  if (fstat(pfd, &st) == 0)
    chmod(link, (st.st_mode & 07777) | 0700);
  fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  close(pfd);
  return fd;
}

/* Moves directory `name` in `dir` up into `top` under a fresh name. */
static bool move_up(int dir, const char *name, int top, unsigned long *fresh) {
  for (int tries = 0; tries < 64; tries++) {
    char to[64];
    snprintf(to, sizeof to, ".corral-rm-%lu", (*fresh)++);
    if (renameat2(dir, name, top, to, RENAME_NOREPLACE) == 0)
      return true;
    if (errno == EACCES || errno == EPERM) {
      /* Moving a directory rewrites its "..": it must be writable. */
      int fd = open_dir(dir, name);
      if (fd < 0)
        return false;
      close(fd);
    } else if (errno != EEXIST) {
      return false;
    }
  }
  return false;
}

/* Unlinks what `dir` holds and moves its subdirectories up into `top`;
 * true if anything changed. */
static bool empty_into(int dir, int top, unsigned long *fresh) {
  struct dir_iter it;
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    dir_rewind(&it, dir);
    for (const char *name; (name = dir_next(&it, NULL));)
      if (unlinkat(dir, name, 0) == 0 ||
          ((errno == EISDIR || errno == EPERM) && move_up(dir, name, top, fresh)))
        again = changed = true;
  }
  return changed;
}

/* Removes `name` in `parent` and everything below it, at any depth and
 * whatever the modes, without following a symlink and without recursion:
 * the subdirectories of each directory being emptied are first moved up
 * into the top one under fresh names, so nothing is ever more than one
 * level below it.  No ".." is walked (a directory moved meanwhile by
 * someone else cannot lead out), nothing is allocated (init uses it), and
 * the work is proportional to what the tree holds. */
static int remove_at(int parent, const char *name) {
  if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
    return 0;
  int top = open_dir(parent, name);
  if (top < 0)
    return -1;
  unsigned long fresh = 0;
  struct dir_iter it;
  for (bool changed = true; changed;) {
    changed = false;
    dir_rewind(&it, top);
    for (const char *entry; (entry = dir_next(&it, NULL));) {
      if (unlinkat(top, entry, 0) == 0) {
        changed = true;
        continue;
      }
      int fd = open_dir(top, entry);
      if (fd < 0)
        continue;
      changed |= empty_into(fd, top, &fresh);
      close(fd);
      changed |= unlinkat(top, entry, AT_REMOVEDIR) == 0;
    }
  }
  close(top);
  return unlinkat(parent, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

int remove_tree(const char *path, bool exact_parent) {
  char parent[4096];
  const char *slash = strrchr(path, '/');
  if (!slash || !slash[1] || (size_t)(slash - path) >= sizeof parent) {
    errno = EINVAL;
    return -1;
  }
  snprintf(parent, sizeof parent, "%.*s", slash == path ? 1 : (int)(slash - path), path);
  int fd;
  if (exact_parent) {
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                           .resolve = RESOLVE_NO_SYMLINKS};
    fd = (int)syscall(SYS_openat2, AT_FDCWD, parent, &how, sizeof how);
    if (fd < 0 && errno == ENOSYS)
      fd = open(parent, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  } else {
    fd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
  }
  if (fd < 0)
    return errno == ENOENT ? 0 : -1;
  int r = remove_at(fd, slash + 1);
  close(fd);
  return r;
}
