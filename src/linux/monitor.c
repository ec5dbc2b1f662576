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
#include <strings.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../internal.h"
#include "../policy.h"
#include "linux.h"

/* `name` in `dir`: read-only when it exists (by its real path: the
 * sandbox is built by path, and a symlink on the way would put the mount
 * somewhere else), else its creation is watched for. */
/* What in a repository's git directory git would run or follow: hooks and
 * config (code to run), submodules' and worktrees' git directories (their
 * own hooks and config), and the files that point git at another git
 * directory for them (commondir, config.worktree). */
static const char *const git_dangerous[] = {"hooks",  "modules",   "worktrees",
                                            "config", "commondir", "config.worktree"};
#define GIT_DANGEROUS_DIRS 3 /* the first three are directories */

/* A protected path the policy makes writable on purpose (allowProtected):
 * at or below one of those, nothing is bound read-only or watched. */
static bool allowed(const struct profile *pr, const char *path) {
  for (size_t i = 0; i < pr->allow_protected.n; i++)
    if (path_is_under(path, pr->allow_protected.v[i]))
      return true;
  return false;
}

static int watch_path(struct path_list *watch, const char *path) {
  return path_list_has(watch, path) ? 0 : path_list_add(watch, path);
}

static int protect(struct profile *pr, struct path_list *watch, const char *dir,
                   const char *name) {
  char path[PATH_MAX];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (allowed(pr, path))
    return 0;
  if (lstat(path, &st) < 0)
    return watch_path(watch, path);
  int r = path_list_add_real(&pr->deny_write, path, NULL);
  /* A symlink (hooks -> elsewhere): its target is read-only, and the link
   * itself must not be replaced by a directory of the command's. */
  return r == 0 && S_ISLNK(st.st_mode) ? watch_path(watch, path) : r;
}

/* The directory core.hooksPath names in `config`, resolved against the
 * work tree `root` ("" when there is none).  Only the file itself is read
 * (not its includes): enough for the husky-style setting a repository
 * carries. */
static void hooks_path(const char *config, const char *root, char *out, size_t size) {
  out[0] = '\0';
  FILE *f = fopen(config, "re");
  if (!f)
    return;
  char line[4096];
  bool core = false;
  while (fgets(line, sizeof line, f)) {
    char *p = line + strspn(line, " \t");
    if (*p == '[') {
      core = strncasecmp(p, "[core]", 6) == 0;
      continue;
    }
    if (!core || strncasecmp(p, "hookspath", 9) != 0)
      continue;
    p += 9 + strspn(p + 9, " \t");
    if (*p != '=')
      continue;
    p++;
    p += strspn(p, " \t\"");
    p[strcspn(p, "\"\r\n")] = '\0';
    if (*p == '/')
      snprintf(out, size, "%s", p);
    else if (*p)
      snprintf(out, size, "%s/%s", root, p);
  }
  fclose(f);
}

/* A repository whose work tree is `root` (a write root, or a submodule in
 * one): what git there would run or follow is kept read-only, or watched
 * when missing, and a .git that is missing or a file cannot be replaced. */
static int protect_repo(struct profile *pr, struct path_list *watch, const char *root) {
  char path[PATH_MAX];
  struct stat st;
  /* A directory with HEAD, objects and refs is a (bare) repository to git
   * of its own: with a config naming a work tree (core.worktree), git on
   * the host would take `root` for one, once its .git is broken or where
   * there is none.  HEAD is what git looks for first, so a HEAD is not
   * made here either. */
  snprintf(path, sizeof path, "%s/HEAD", root);
  int rh = protect(pr, watch, root, "HEAD");
  if (rh < 0)
    return rh;
  snprintf(path, sizeof path, "%s/.git", root);
  if (allowed(pr, path))
    return 0;
  bool present = lstat(path, &st) == 0;
  if (!present || !S_ISDIR(st.st_mode)) {
    /* Missing (`git init` would make one: its config is code to run), a
     * symlink or a worktree's or submodule's file: it cannot be pinned, so
     * a .git put in its place is stopped like a protected name. */
    int r = watch_path(watch, path);
    /* A submodule's or worktree's .git file is read-only besides: bound
     * onto itself, it cannot be removed either. */
    if (r == 0 && present && S_ISREG(st.st_mode))
      r = path_list_add_real(&pr->deny_write, path, NULL);
    if (r < 0 || stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
      return r;
  }
  /* .git itself is pinned (a mount point cannot be renamed or removed):
   * otherwise `mv .git x; mkdir .git` would leave what is read-only behind
   * and plant anew. */
  char *git = path_resolve(path, NULL);
  if (!git)
    return -ENOMEM;
  int r = path_list_has(&pr->pinned, git) ? 0 : path_list_add(&pr->pinned, git);
  for (size_t k = 0; k < ARRAY_SIZE(git_dangerous) && r == 0; k++) {
    /* The directories git makes when first needed are made empty now, so
     * that they can be read-only: `git worktree add` or `git submodule
     * update --init` inside then fails with an error git reports, and the
     * command goes on, instead of being stopped like a protected name. */
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/%s", git, git_dangerous[k]);
    if (k < GIT_DANGEROUS_DIRS)
      mkdir(sub, 0755); /* EEXIST, or it stays watched (protect) */
    r = protect(pr, watch, git, git_dangerous[k]);
  }
  /* A hooks directory in the work tree (husky's .husky) is as much code as
   * .git/hooks. */
  char cfg[PATH_MAX], hooks[PATH_MAX];
  snprintf(cfg, sizeof cfg, "%s/config", git);
  hooks_path(cfg, root, hooks, sizeof hooks);
  free(git);
  for (size_t i = 0; r == 0 && hooks[0] && i < pr->write_roots.n; i++)
    if (path_is_under(hooks, pr->write_roots.v[i]))
      r = lstat(hooks, &st) == 0 ? path_list_add_real(&pr->deny_write, hooks, NULL)
                                 : watch_path(watch, hooks);
  return r;
}

/* The submodules `.gitmodules` in `root` lists: each is a repository of
 * its own whose .git (a file pointing into .git/modules) could be swapped
 * for a planted one. */
static int protect_submodules(struct profile *pr, struct path_list *watch, const char *root) {
  char path[PATH_MAX], line[4096];
  snprintf(path, sizeof path, "%s/.gitmodules", root);
  FILE *f = fopen(path, "re");
  if (!f)
    return 0;
  int r = 0, n = 0;
  while (r == 0 && n < 256 && fgets(line, sizeof line, f)) {
    char *p = line + strspn(line, " \t");
    if (strncmp(p, "path", 4) != 0)
      continue;
    p += 4 + strspn(p + 4, " \t");
    if (*p++ != '=')
      continue;
    p += strspn(p, " \t\"");
    p[strcspn(p, "\"\r\n")] = '\0';
    if (!*p || *p == '/' || strstr(p, ".."))
      continue; /* only inside the work tree */
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/%s", root, p);
    r = protect_repo(pr, watch, sub);
    n++;
  }
  fclose(f);
  return r;
}

/* The directories between write root `outer` and write root `inner`
 * below it (a workspace in /tmp): git run in `inner` on the host looks for
 * a repository in each of them too, and the command can write them all. */
static int protect_between(struct profile *pr, struct path_list *watch, const char *outer,
                           const char *inner) {
  char dir[PATH_MAX];
  size_t olen = strcmp(outer, "/") == 0 ? 0 : strlen(outer);
  int r = 0;
  snprintf(dir, sizeof dir, "%s", inner);
  for (char *slash = strrchr(dir, '/'); r == 0 && slash && (size_t)(slash - dir) > olen;
       slash = strrchr(dir, '/')) {
    *slash = '\0';
    r = protect_repo(pr, watch, dir);
  }
  return r;
}

/* Repositories nested in write root `root` (a vendored clone, a
 * sub-project): each gets what the top one gets.  Looked for breadth
 * first, NESTED_DEPTH levels down and among NESTED_DIRS directories at
 * most, since it costs start-up time on every run; not through symlinks,
 * not inside a .git or node_modules, and not in a shared temporary
 * directory such as /tmp (sticky: other users' files; only its top is
 * watched). */
#define NESTED_DEPTH 2
#define NESTED_DIRS 256
#define NESTED_REPOS 32
static int protect_nested(struct profile *pr, struct path_list *watch, const char *root) {
  struct stat st;
  if (stat(root, &st) < 0 || !S_ISDIR(st.st_mode) || (st.st_mode & S_ISVTX))
    return 0;
  struct path_list dirs = {0};
  unsigned char depth[NESTED_DIRS];
  int r = path_list_add(&dirs, root), repos = 0;
  depth[0] = 0;
  for (size_t i = 0; r == 0 && i < dirs.n && repos < NESTED_REPOS; i++) {
    char path[PATH_MAX];
    bool repo = false;
    if (depth[i] == NESTED_DEPTH) { /* the last level: only is it one? */
      repo = snprintf(path, sizeof path, "%s/.git", dirs.v[i]) < (int)sizeof path &&
             lstat(path, &st) == 0;
    } else {
      int fd = open(dirs.v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      struct dir_iter it;
      unsigned char type;
      if (fd >= 0)
        dir_start(&it, fd);
      for (const char *name; r == 0 && fd >= 0 && (name = dir_next(&it, &type));) {
        if (strcmp(name, ".git") == 0) {
          repo = true;
          continue;
        }
        if (type == DT_UNKNOWN && fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
          type = S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
        if (type != DT_DIR || dirs.n == NESTED_DIRS || strcmp(name, "node_modules") == 0 ||
            snprintf(path, sizeof path, "%s/%s", dirs.v[i], name) >= (int)sizeof path)
          continue;
        depth[dirs.n] = depth[i] + 1;
        r = path_list_add(&dirs, path);
      }
      if (fd >= 0)
        close(fd);
    }
    if (r == 0 && repo && i > 0) { /* the top one is protect_repo's already */
      repos++;
      r = protect_repo(pr, watch, dirs.v[i]);
      if (r == 0)
        r = protect_submodules(pr, watch, dirs.v[i]);
    }
  }
  path_list_free(&dirs);
  return r;
}

int protect_prepare(struct profile *pr, struct path_list *watch, corral_error *err) {
  for (size_t i = 0; i < pr->write_roots.n; i++) {
    const char *root = pr->write_roots.v[i];
    int r = protect_repo(pr, watch, root);
    for (size_t k = 0; k < pr->write_roots.n && r == 0; k++)
      if (k != i && path_is_under(root, pr->write_roots.v[k]) &&
          strcmp(root, pr->write_roots.v[k]) != 0)
        r = protect_between(pr, watch, pr->write_roots.v[k], root);
    if (r == 0)
      r = protect_submodules(pr, watch, root);
    if (r == 0)
      r = protect_nested(pr, watch, root);
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
    if (lstat(path, &now) < 0 || now.st_uid != geteuid())
      return false; /* nothing there to remove, or someone else's */
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
