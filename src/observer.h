/*
 * observer.h — what the two change observers share: the snapshot
 * (observer.c, a fingerprint of the whole tree) and the watcher
 * (watcher.c, the kernel's change events).  Not installed.
 */
#ifndef CORRAL_OBSERVER_H
#define CORRAL_OBSERVER_H

#include <sys/stat.h>

#include "internal.h"

/* Generated trees count at most this many direct children (-1 above). */
#define AGGREGATE_COUNT_MAX 256
/* Directories below the root; each level holds one open while scanning. */
#define OBSERVE_MAX_DEPTH 128

struct entry {
  char *path;      /* relative, "/" separated; aggregated trees end in "/" */
  mode_t mode;
  off_t size;
  ino_t ino;
  struct timespec mtime, ctime;
  long count;      /* aggregated: direct children (-1 above the bound) */
  bool aggregated;
  bool hashed;
  unsigned char hash[32];
};

struct corral_snapshot {
  char *root;
  struct entry *e; /* sorted by path */
  size_t n, cap;
  bool incomplete;
  char *why;       /* with incomplete */
};

/* `.git` and the protected names (NULL: ".agents", ".corral"): never
 * observed, at any depth. */
bool observe_skipped(const char *const *names, size_t nnames, const char *name);
/* node_modules, dist, ...: one aggregated entry, never entered. */
bool observe_generated(const char *name);
/* Direct children of an opened directory (-1 above AGGREGATE_COUNT_MAX);
 * closes it. */
long observe_count_children(int dirfd_);
/* Opens `path` below dirfd_ with `flags` (O_RDONLY, O_DIRECTORY ...),
 * following no symlink in any component and never leaving dirfd_. */
int open_beneath(int dirfd_, const char *path, int flags);
/* Appends a change to out->changes (capacity *cap); 0 or -ENOMEM. */
int change_push(corral_outcome *out, size_t *cap, const char *path, corral_change_kind kind,
                bool aggregated, long count);
/* Empties out->changes: no report. */
void changes_clear(corral_outcome *out);

#endif
