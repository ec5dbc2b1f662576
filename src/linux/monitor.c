/*
 * monitor.c — protected metadata inside the write roots.
 *
 * Existing `.git/hooks`, `.git/config` and protected metadata directories
 * (`.agents`, `.corral`, or the policy's protectedNames) become read-only
 * binds.  A protected name that does not exist cannot be mounted over
 * without creating it on the host, so the supervisor watches the write
 * root with inotify instead: a create, mkdir, symlink or rename onto the
 * name (even one removed again at once: the event stays queued) stops the
 * command at once; afterwards whatever was created is removed from the
 * host and the adapter reports a protected_metadata denial with the path.
 */
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "../internal.h"
#include "linux.h"

void protect_init(struct protect *pt) {
  memset(pt, 0, sizeof *pt);
  pt->fd = -1;
}

int protect_prepare(struct profile *pr, struct protect *pt, corral_error *err) {
  static const char *const git_paths[] = {".git/hooks", ".git/config"};
  size_t nroots = pr->write_roots.n;
  for (size_t i = 0; i < nroots; i++) {
    const char *root = pr->write_roots.v[i];
    char path[PATH_MAX];
    struct stat st;
    for (size_t k = 0; k < ARRAY_SIZE(git_paths); k++) {
      snprintf(path, sizeof path, "%s/%s", root, git_paths[k]);
      if (lstat(path, &st) == 0 && !S_ISLNK(st.st_mode) && !path_list_has(&pr->deny_write, path) &&
          path_list_add(&pr->deny_write, path) < 0)
        return error_set(err, -ENOMEM, ENOMEM, "out of memory");
    }
    bool watch = false;
    for (size_t k = 0; k < pr->protected_names.n; k++) {
      snprintf(path, sizeof path, "%s/%s", root, pr->protected_names.v[k]);
      if (lstat(path, &st) == 0) {
        if (!path_list_has(&pr->deny_write, path) && path_list_add(&pr->deny_write, path) < 0)
          return error_set(err, -ENOMEM, ENOMEM, "out of memory");
      } else {
        watch = true;
      }
    }
    if (!watch)
      continue;
    if (pt->fd < 0 && (pt->fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) < 0)
      return error_sys(err, "protected paths: inotify_init1");
    int wd = inotify_add_watch(pt->fd, root, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR);
    if (wd < 0)
      return error_sys(err, "protected paths: watch `%s`", root);
    if (pt->nwatch < ARRAY_SIZE(pt->wd)) {
      pt->wd[pt->nwatch] = wd;
      pt->root[pt->nwatch++] = root;
    }
  }
  pt->names = &pr->protected_names;
  return 0;
}

bool protect_check(struct protect *pt) {
  char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
  bool hit = false;
  ssize_t n;
  while (pt->fd >= 0 && (n = read(pt->fd, buf, sizeof buf)) > 0) {
    for (char *p = buf; p < buf + n;) {
      struct inotify_event *ev = (struct inotify_event *)p;
      p += sizeof *ev + ev->len;
      if (!ev->len || !path_list_has(pt->names, ev->name))
        continue;
      for (size_t i = 0; i < pt->nwatch; i++) {
        if (pt->wd[i] != ev->wd)
          continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", pt->root[i], ev->name);
        if (!path_list_has(&pt->created, path))
          path_list_add(&pt->created, path);
        hit = true;
      }
    }
  }
  return hit || pt->created.n > 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  remove(path);
  return 0;
}

void protect_finish(struct protect *pt, launch_report *rep) {
  protect_check(pt); /* events queued after the last poll */
  for (size_t i = 0; i < pt->created.n; i++) {
    const char *path = pt->created.v[i];
    /* Never follows a symlink out: the link itself is what goes. */
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (i == 0) {
      corral_denial *d = &rep->denial;
      free(d->capability.scope);
      free(d->reason);
      d->present = true;
      d->capability.kind = CORRAL_CAP_PROTECTED_METADATA;
      d->capability.scope = strdup(path);
      d->source = CORRAL_SOURCE_CONFIGURED_POLICY;
      char reason[PATH_MAX + 64];
      snprintf(reason, sizeof reason, "blocked creation of protected path %s", path);
      d->reason = strdup(reason);
      d->recoverable = true;
      d->next_action = CORRAL_NEXT_REQUEST_APPROVAL;
      snprintf(rep->stderr_note, sizeof rep->stderr_note, "%s\n", reason);
    }
  }
}

void protect_free(struct protect *pt) {
  if (pt->fd >= 0)
    close(pt->fd);
  path_list_free(&pt->created);
  protect_init(pt);
}
