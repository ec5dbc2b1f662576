/*
 * watcher.h — a run's changes from the kernel's change events, kept
 * current across runs (watcher.c).  Not installed.
 */
#ifndef CORRAL_WATCHER_H
#define CORRAL_WATCHER_H

#include "internal.h"

/* One workspace root, indexed and watched.  NULL on ENOMEM only: a root
 * that cannot be watched gives a watcher that says why, and runs through it
 * fall back to scans. */
struct watcher *watcher_open(const char *root);
void watcher_free(struct watcher *w);
const char *watcher_root(const struct watcher *w);
/* The inotify descriptor (-1 when there is none): readable when events
 * wait; watcher_process applies them.  It stays the same for the
 * watcher's life. */
int watcher_fd(const struct watcher *w);
bool watcher_process(struct watcher *w); /* true: events may still wait (call again) */
/* The bound on indexed names (0: the default); for tests. */
void watcher_limit_for_tests(size_t entries);
/* Runs still observing through it. */
bool watcher_busy(const struct watcher *w);

/* One run's observation of its first workspace root: through `w` when the
 * caller keeps one (not owned; it must outlive the observation), else
 * through a watcher of its own.  Never fails: what could not be observed
 * is said at the end. */
struct observation *observe_begin(struct watcher *w, const char *root);
/* The watcher whose events the observation follows (NULL: none, it
 * scans): a caller that waits for the command polls its descriptor and
 * applies what comes with watcher_process. */
struct watcher *observe_watcher(const struct observation *o);
/* What the run did may have gone unheard (a hard link made: refusals.c):
 * its report compares every indexed file. */
void observe_unsure(struct observation *o);
/* The same for every run observing the root of `o`: a link one run's
 * command made is a second name any of them may have been written
 * through (a session of corral mcp beside another). */
void observe_unsure_all(struct observation *o);
/* Fills out->changes (or changes_skipped, and changes_scanned when the
 * report came from scans); frees the observation. */
void observe_end(struct observation *o, corral_outcome *out);

#endif
