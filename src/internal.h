/*
 * internal.h — helpers shared by every part of libcorral; not installed.
 *
 * Internal names carry no `corral_` prefix and are hidden by the version
 * script, so they never collide with an embedding program's.
 */
#ifndef CORRAL_INTERNAL_H
#define CORRAL_INTERNAL_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "corral.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Cleanup attributes: every early return frees what was acquired.  Hand
 * ownership on by setting the variable to NULL / -1 (see steal_ptr). */
static inline void free_ptr(void *p) { free(*(void **)p); }
static inline void close_fd(int *fd) {
  if (*fd >= 0) {
    int saved = errno;
    close(*fd);
    errno = saved;
  }
}
#define cleanup_free __attribute__((cleanup(free_ptr)))
#define cleanup_close __attribute__((cleanup(close_fd)))

static inline void *steal_ptr_impl(void **p) {
  void *v = *p;
  *p = NULL;
  return v;
}
#define steal_ptr(p) steal_ptr_impl((void **)&(p))
static inline int steal_fd(int *fd) {
  int v = *fd;
  *fd = -1;
  return v;
}

/* error.c: record an error (code, errno, message) and add context to it as
 * it travels up: "preparing mounts: " + "bind `/tmp`: Permission denied". */
int error_set(corral_error *err, int code, int sys_errno, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Shorthand for a failed system call: code -errno, message plus strerror. */
int error_sys(corral_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefixes the message with context; returns err->code so callers can
 * `return error_prefix(err, "...")`. */
int error_prefix(corral_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void error_clear(corral_error *err);

/* Milliseconds on the monotonic clock (deadlines) and the real one (for
 * people).  Async-signal-safe. */
static inline int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
static inline int64_t real_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* fsutil.c: mkdir -p with `mode` for the last component (0755 above it).
 * Allocates nothing, so init may use it. */
int mkdir_p(const char *path, mode_t mode);
/* Is the absolute path, or a directory on its way, a symbolic link? */
bool path_through_symlink(const char *path);
/* rm -rf that never follows a symlink below `path`; with exact_parent, not
 * in the path to it either (it must be a real path). */
int remove_tree(const char *path, bool exact_parent);
/* A directory's entries but "." and "..", read with getdents64 into the
 * iterator itself: nothing allocated, so init may use it.  dir_next gives
 * NULL at the end (or on an error); `type` (may be NULL) gets d_type. */
struct dir_iter {
  int fd;
  long got, off;
  uint64_t ino; /* of the entry dir_next gave last */
  char buf[4096] __attribute__((aligned(8)));
};
void dir_start(struct dir_iter *it, int fd); /* fd just opened */
void dir_rewind(struct dir_iter *it, int fd);
const char *dir_next(struct dir_iter *it, unsigned char *type);

/* observer.c: the change report after a run from the snapshot before it
 * (taken, diffed into out, or why not in out->changes_skipped); frees
 * `before`. */
void snapshot_conclude(corral_snapshot *before, const char *root, corral_outcome *out);

/* strv.c: NULL-terminated string vectors. */
char **strv_copy(const char *const *v, size_t n); /* NULL on ENOMEM; n entries + NULL */
void strv_free(char **v, size_t n);
char *xstrdup_or_null(const char *s); /* strdup that keeps NULL as NULL */
bool str_blank(const char *s);        /* NULL, empty or only white space */
int strv_push(char ***v, size_t *n, const char *s); /* copies s; 0 or -ENOMEM */

/* Environment lookup in a "KEY=VALUE" vector; NULL when absent. */
const char *env_lookup(char *const *env, size_t n, const char *key);

#endif
