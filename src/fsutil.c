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

/* Removes `name` in `dirfd` and all below it without ever following a
 * symlink: each directory is opened from its parent with O_NOFOLLOW, so
 * one swapped for a symlink meanwhile (a sandboxed command may still be
 * writing there) is not entered.  Reads entries with getdents64 into a
 * small buffer on the stack: nothing allocated, so init may use it. */
static void remove_at(int parent, const char *name, int depth) {
  if (unlinkat(parent, name, 0) == 0 || errno == ENOENT || depth > 64)
    return;
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return;
  char buf[1024] __attribute__((aligned(8)));
  long got;
  /* Entries are removed while listing: start over until a pass finds
   * nothing left to remove (or only what cannot be). */
  for (bool removed = true; removed;) {
    removed = false;
    lseek(fd, 0, SEEK_SET);
    while ((got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0)
      for (long off = 0; off < got;) {
        struct dirent64 *d = (struct dirent64 *)(buf + off);
        off += d->d_reclen;
        if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0) {
          remove_at(fd, d->d_name, depth + 1);
          removed |= faccessat(fd, d->d_name, F_OK, AT_SYMLINK_NOFOLLOW) != 0;
        }
      }
  }
  close(fd);
  unlinkat(parent, name, AT_REMOVEDIR);
}

void remove_tree(const char *path, bool exact_parent) {
  char parent[4096];
  const char *slash = strrchr(path, '/');
  if (!slash || !slash[1] || (size_t)(slash - path) >= sizeof parent)
    return;
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
    return;
  remove_at(fd, slash + 1, 0);
  close(fd);
}
