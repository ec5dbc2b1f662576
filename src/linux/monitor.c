/*
 * monitor.c — protected metadata inside the write roots.
 *
 * Existing `.git/hooks`, `.git/config` and protected metadata directories
 * (`.agents`, `.corral`, or the policy's protectedNames) become read-only
 * binds.  A protected name that does not exist cannot be mounted over
 * without creating it on the host, so init watches the write root with
 * inotify instead (launch.c): a create, mkdir, symlink or rename onto the
 * name (even one removed again at once: the event stays queued) kills the
 * tree at once and is reported on the report channel; afterwards
 * protect_finish removes whatever was created from the host.
 */
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "../internal.h"
#include "../policy.h"
#include "linux.h"

/* Adds `path` by its real path (the sandbox is built by path: a symlink
 * on the way would put the mount somewhere else) unless already there. */
static int add_real(struct path_list *l, const char *path) {
  char *real = path_resolve(path, NULL);
  if (!real)
    return -ENOMEM;
  int r = path_list_has(l, real) ? 0 : path_list_add(l, real);
  free(real);
  return r;
}

int protect_prepare(struct profile *pr, struct path_list *watch_dirs,
                    struct path_list *watch_git_dirs, corral_error *err) {
  static const char *const git_paths[] = {".git/hooks", ".git/config"};
  for (size_t i = 0; i < pr->write_roots.n; i++) {
    const char *root = pr->write_roots.v[i];
    char path[PATH_MAX];
    struct stat st;
    /* .git itself is pinned (a mount point cannot be renamed or removed):
     * otherwise `mv .git x; mkdir .git` would leave the read-only hooks
     * behind and plant new ones. */
    snprintf(path, sizeof path, "%s/.git", root);
    bool watch = false;
    if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
      /* A symlink or a worktree's file cannot be pinned: a .git put in
       * its place is stopped like a protected name instead. */
      watch = true;
      if (path_list_add(watch_git_dirs, root) < 0)
        return error_set(err, -ENOMEM, ENOMEM, "out of memory");
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && add_real(&pr->pinned, path) < 0)
      return error_set(err, -ENOMEM, ENOMEM, "out of memory");
    for (size_t k = 0; k < ARRAY_SIZE(git_paths); k++) {
      snprintf(path, sizeof path, "%s/%s", root, git_paths[k]);
      if (lstat(path, &st) == 0 && !S_ISLNK(st.st_mode) && add_real(&pr->deny_write, path) < 0)
        return error_set(err, -ENOMEM, ENOMEM, "out of memory");
    }
    for (size_t k = 0; k < pr->protected_names.n; k++) {
      snprintf(path, sizeof path, "%s/%s", root, pr->protected_names.v[k]);
      if (lstat(path, &st) == 0) {
        if (add_real(&pr->deny_write, path) < 0)
          return error_set(err, -ENOMEM, ENOMEM, "out of memory");
      } else {
        watch = true;
      }
    }
    if (watch && path_list_add(watch_dirs, root) < 0)
      return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  }
  return 0;
}

void protect_finish(launch_report *rep) {
  for (size_t i = 0; i < rep->nprotected; i++) {
    const char *path = rep->protected_paths[i];
    /* Never follows a symlink out: the link itself is what goes. */
    remove_tree(path, true);
    if (i > 0)
      continue;
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
