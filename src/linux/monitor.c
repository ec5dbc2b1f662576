/*
 * monitor.c — protected metadata inside the write roots.
 *
 * Existing protected metadata directories (`.agents`, `.corral`, or the
 * policy's protectedNames) and, in a repository's git directory, what git
 * would run or follow (git_dangerous) become read-only binds; `.git`
 * itself is pinned.  A protected path that does not exist cannot be
 * mounted over without creating it on the host, so init watches its
 * directory with inotify instead (launch.c): a create, mkdir, symlink or
 * rename onto it (even one removed again at once: the event stays queued)
 * kills the tree at once and is reported on the report channel;
 * afterwards protect_finish removes whatever was created from the host.
 */
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "../internal.h"
#include "../policy.h"
#include "linux.h"

/* `name` in `dir`: read-only when it exists (by its real path: the
 * sandbox is built by path, and a symlink on the way would put the mount
 * somewhere else), else its creation is watched for. */
static int protect(struct profile *pr, struct path_list *watch, const char *dir,
                   const char *name) {
  char path[PATH_MAX];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (lstat(path, &st) == 0)
    return path_list_add_real(&pr->deny_write, path, NULL);
  return path_list_has(watch, path) ? 0 : path_list_add(watch, path);
}

/* What in a repository's git directory git would run or follow: hooks and
 * config (code to run), submodules' and worktrees' git directories (their
 * own hooks and config), and the files that point git at another git
 * directory for them (commondir, config.worktree). */
static const char *const git_dangerous[] = {"hooks",     "config",   "modules",
                                            "worktrees", "commondir", "config.worktree"};

int protect_prepare(struct profile *pr, struct path_list *watch, corral_error *err) {
  for (size_t i = 0; i < pr->write_roots.n; i++) {
    const char *root = pr->write_roots.v[i];
    char path[PATH_MAX];
    struct stat st;
    int r = 0;
    snprintf(path, sizeof path, "%s/.git", root);
    if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode))
      /* A symlink or a worktree's file cannot be pinned: a .git put in
       * its place is stopped like a protected name. */
      r = path_list_add(watch, path);
    if (r == 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
      /* .git itself is pinned (a mount point cannot be renamed or
       * removed): otherwise `mv .git x; mkdir .git` would leave what is
       * read-only behind and plant anew. */
      char *git = path_resolve(path, NULL);
      if (!git)
        return error_set(err, -ENOMEM, ENOMEM, "out of memory");
      r = path_list_has(&pr->pinned, git) ? 0 : path_list_add(&pr->pinned, git);
      for (size_t k = 0; k < ARRAY_SIZE(git_dangerous) && r == 0; k++)
        r = protect(pr, watch, git, git_dangerous[k]);
      free(git);
    }
    for (size_t k = 0; k < pr->protected_names.n && r == 0; k++)
      r = protect(pr, watch, root, pr->protected_names.v[k]);
    if (r < 0)
      return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  }
  return 0;
}

int protect_remember(const struct path_list *watch, struct stat **was, corral_error *err) {
  *was = calloc(watch->n ? watch->n : 1, sizeof **was);
  if (!*was)
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  for (size_t i = 0; i < watch->n; i++)
    if (lstat(watch->v[i], &(*was)[i]) < 0)
      (*was)[i].st_nlink = 0;
  return 0;
}

/* Is `path` one of the watched ones, and something other than what was
 * there before the run? */
static bool created_in_run(const char *path, const struct path_list *watch, const struct stat *was,
                           bool *known) {
  for (size_t k = 0; k < watch->n; k++) {
    if (strcmp(watch->v[k], path) != 0)
      continue;
    *known = true;
    struct stat now;
    if (lstat(path, &now) < 0)
      return false; /* nothing there to remove */
    /* An inode number freed by the command is soon reused: the type and
     * the change time tell a new file from the old one. */
    return !was[k].st_nlink || now.st_ino != was[k].st_ino || now.st_dev != was[k].st_dev ||
           (now.st_mode & S_IFMT) != (was[k].st_mode & S_IFMT) ||
           now.st_ctim.tv_sec != was[k].st_ctim.tv_sec ||
           now.st_ctim.tv_nsec != was[k].st_ctim.tv_nsec;
  }
  *known = false;
  return false;
}

void protect_finish(launch_report *rep, const struct path_list *watch, const struct stat *was) {
  for (size_t i = 0; i < rep->nprotected; i++) {
    const char *path = rep->protected_paths[i];
    bool known;
    /* Never follows a symlink out: the link itself goes.  What cannot be
     * removed (someone else's file in it) is said, never left silently. */
    bool left = created_in_run(path, watch, was, &known) && remove_tree(path, true) < 0;
    if (!known) {
      rep->readable = false;
      snprintf(rep->problem, sizeof rep->problem,
               "report names a protected path the sandbox did not watch");
      return;
    }
    if (i > 0) {
      size_t n = strlen(rep->stderr_note);
      if (left)
        snprintf(rep->stderr_note + n, sizeof rep->stderr_note - n,
                 "%s could not be removed entirely: what remains is on the host\n", path);
      continue;
    }
    corral_denial *d = &rep->denial;
    free(d->capability.scope);
    free(d->reason);
    d->present = true;
    d->capability.kind = CORRAL_CAP_PROTECTED_METADATA;
    d->capability.scope = strdup(path);
    d->source = CORRAL_SOURCE_CONFIGURED_POLICY;
    char reason[PATH_MAX + 128];
    snprintf(reason, sizeof reason, "blocked creation of protected path %s%s", path,
             left ? " (it could not be removed entirely: what remains is on the host)" : "");
    d->reason = strdup(reason);
    d->recoverable = true;
    d->next_action = CORRAL_NEXT_REQUEST_APPROVAL;
    snprintf(rep->stderr_note, sizeof rep->stderr_note, "%s\n", reason);
  }
}
