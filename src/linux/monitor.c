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

/* What in a repository's git directory git would run or follow: hooks and
 * config (code to run), submodules' and worktrees' git directories (their
 * own hooks and config), and the files that point git at another git
 * directory for them (commondir, config.worktree). */
static const char *const git_dangerous[] = {"hooks",  "modules",   "worktrees",
                                            "config", "commondir", "config.worktree"};
#define GIT_DANGEROUS_DIRS 3 /* the first three are directories */
#define GIT_FILE_MAX (1 << 20) /* a config, .gitmodules or .git file larger is not read */

/* A protected path the policy makes writable on purpose (allowProtected):
 * at or below one of those, nothing is bound read-only or watched. */
static bool allowed(const struct profile *pr, const char *path) {
  for (size_t i = 0; i < pr->allow_protected.n; i++)
    if (path_is_under(path, pr->allow_protected.v[i]))
      return true;
  return false;
}

static bool in_write_root(const struct profile *pr, const char *path) {
  for (size_t i = 0; i < pr->write_roots.n; i++)
    if (path_is_under(path, pr->write_roots.v[i]))
      return true;
  return false;
}

static int watch_path(struct path_list *watch, const char *path) {
  return path_list_has(watch, path) ? 0 : path_list_add(watch, path);
}

/* Bound onto itself: a mount point cannot be renamed or removed, so
 * nothing can take its place. */
static int pin(struct profile *pr, const char *path) {
  char *real = path_resolve(path, NULL);
  if (!real)
    return -ENOMEM;
  int r = path_list_has(&pr->pinned, real) ? 0 : path_list_add(&pr->pinned, real);
  free(real);
  return r;
}

/* The directories from `dir` up to write root `root` (not itself) pinned,
 * so that none can be renamed away and a planted tree put where the
 * user's git will look: a nested repository, a git directory, a file a
 * config includes. */
static int pin_way(struct profile *pr, const char *root, const char *dir) {
  char way[PATH_MAX];
  struct stat st;
  size_t rlen = strlen(root);
  int r = 0;
  snprintf(way, sizeof way, "%s", dir);
  while (r == 0 && strlen(way) > rlen && path_is_under(way, root) && !allowed(pr, way)) {
    if (lstat(way, &st) == 0 && S_ISDIR(st.st_mode))
      r = pin(pr, way);
    *strrchr(way, '/') = '\0';
  }
  return r;
}

/* pin_way for `path`'s directory, from the innermost write root that
 * holds it: a protected path whose directory is renamed away is protected
 * no more. */
static int pin_above(struct profile *pr, const char *path) {
  const char *root = NULL;
  for (size_t i = 0; i < pr->write_roots.n; i++) {
    const char *w = pr->write_roots.v[i];
    if (path_is_under(path, w) && strcmp(path, w) != 0 && (!root || strlen(w) > strlen(root)))
      root = w;
  }
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!root || !slash)
    return 0;
  *slash = '\0';
  return pin_way(pr, root, dir);
}

/* `path`: read-only when it exists (by its real path: the sandbox is built
 * by path, and a symlink on the way would put the mount somewhere else),
 * else its creation is watched for. */
static int protect_path(struct profile *pr, struct path_list *watch, const char *path) {
  struct stat st;
  if (allowed(pr, path))
    return 0;
  int r = pin_above(pr, path);
  if (r < 0)
    return r;
  if (lstat(path, &st) < 0)
    return watch_path(watch, path);
  /* A symlink (hooks -> elsewhere): its target is read-only, and the link
   * itself must not be replaced by a directory of the command's.  One that
   * leads nowhere has nothing to make read-only. */
  if (S_ISLNK(st.st_mode) && stat(path, &st) < 0)
    return watch_path(watch, path);
  r = path_list_add_real(&pr->deny_write, path, NULL);
  if (r == 0 && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
    r = watch_path(watch, path);
  return r;
}

static int protect(struct profile *pr, struct path_list *watch, const char *dir,
                   const char *name) {
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
    return 0;
  return protect_path(pr, watch, path);
}

/* A path a file names: absolute, `~/`, or relative to `base`. */
static bool named_path(const char *value, const char *base, char *out, size_t size) {
  char home[PATH_MAX];
  if (value[0] == '/')
    return snprintf(out, size, "%s", value) < (int)size;
  if (value[0] == '~' && value[1] == '/')
    return user_home(home, sizeof home) && snprintf(out, size, "%s%s", home, value + 1) < (int)size;
  return snprintf(out, size, "%s/%s", base, value) < (int)size;
}

struct config_walk {
  struct profile *pr;
  struct path_list *watch;
  const char *base; /* what relative values are relative to */
  int r;
  int depth;        /* includes followed so far */
};

static void config_each(const char *cfg, const char *section, const char *key,
                        struct config_walk *w);
#define INCLUDE_DEPTH 10 /* git's own limit */

/* A file or directory a repository's config names as code or more config
 * (core.hooksPath, include.path, includeIf.*.path): read-only when it lies
 * in a write root, watched when it does not exist yet. */
static void protect_named(const char *value, void *ctx) {
  struct config_walk *w = ctx;
  char path[PATH_MAX];
  if (w->r || !named_path(value, w->base, path, sizeof path) || !in_write_root(w->pr, path))
    return;
  w->r = protect_path(w->pr, w->watch, path);
  /* What an included file includes, against its own directory. */
  struct stat st;
  char dir[PATH_MAX];
  if (w->r == 0 && w->depth < INCLUDE_DEPTH && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    struct config_walk inner = {w->pr, w->watch, dir, 0, w->depth + 1};
    config_each(path, "include", "path", &inner);
    config_each(path, "includeif", "path", &inner);
    w->r = inner.r;
  }
}

/* What `gitdir`'s config names: hooksPath (against the work tree `root`,
 * or the git directory for a bare one), the files it includes (against
 * the config's directory).  Only the config itself is read. */
static void config_each(const char *cfg, const char *section, const char *key,
                        struct config_walk *w) {
  char *text = w->r == 0 ? read_small_file(cfg, GIT_FILE_MAX) : NULL;
  if (text)
    gitconfig_each(text, section, key, protect_named, w);
  free(text);
}

static int protect_config_targets(struct profile *pr, struct path_list *watch, const char *gitdir,
                                  const char *root) {
  char cfg[PATH_MAX];
  snprintf(cfg, sizeof cfg, "%s/config", gitdir);
  struct config_walk w = {pr, watch, root ? root : gitdir, 0, 0};
  config_each(cfg, "core", "hookspath", &w);
  w.base = gitdir;
  config_each(cfg, "include", "path", &w);
  config_each(cfg, "includeif", "path", &w);
  return w.r;
}

/* A git directory (a work tree's .git, where a .git file points, or a bare
 * repository): pinned, and what git would run or follow in it read-only,
 * or watched when missing. */
static int protect_gitdir(struct profile *pr, struct path_list *watch, const char *gitdir,
                          const char *root) {
  char *git = path_resolve(gitdir, NULL);
  if (!git)
    return -ENOMEM;
  int r = allowed(pr, git) ? 0 : pin(pr, git);
  for (size_t k = 0; k < ARRAY_SIZE(git_dangerous) && r == 0; k++) {
    /* The directories git makes when first needed are made empty now, so
     * that they can be read-only: `git worktree add` or `git submodule
     * update --init` inside then fails with an error git reports, and the
     * command goes on, instead of being stopped like a protected name. */
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/%s", git, git_dangerous[k]);
    if (k < GIT_DANGEROUS_DIRS && !allowed(pr, sub))
      mkdir(sub, 0755); /* EEXIST, or it stays watched (protect) */
    r = protect(pr, watch, git, git_dangerous[k]);
  }
  if (r == 0)
    r = protect_config_targets(pr, watch, git, root);
  free(git);
  return r;
}

/* The git directory a .git file names ("gitdir: PATH", relative to the
 * work tree), into out; false when it names none. */
static bool gitfile_target(const char *file, const char *root, char *out, size_t size) {
  char *text = read_small_file(file, GIT_FILE_MAX);
  bool ok = false;
  if (text && strncmp(text, "gitdir:", 7) == 0) {
    char *v = text + 7 + strspn(text + 7, " \t");
    v[strcspn(v, "\r\n")] = '\0';
    ok = *v && named_path(v, root, out, size);
  }
  free(text);
  return ok;
}

/* A repository whose work tree is `root` (a write root, or a submodule in
 * one): what git there would run or follow is kept read-only, or watched
 * when missing, and a .git that is missing or a file cannot be replaced. */
static int protect_repo(struct profile *pr, struct path_list *watch, const char *root) {
  char path[PATH_MAX], target[PATH_MAX];
  struct stat st;
  /* A directory with HEAD, objects and refs is a (bare) repository to git
   * of its own: with a config naming a work tree (core.worktree), git on
   * the host would take `root` for one, once its .git is broken or where
   * there is none.  HEAD is what git looks for first, so a HEAD is not
   * made here either. */
  int r = protect(pr, watch, root, "HEAD");
  if (r < 0)
    return r;
  snprintf(path, sizeof path, "%s/.git", root);
  if (allowed(pr, path))
    return 0;
  bool present = lstat(path, &st) == 0;
  if (present && S_ISDIR(st.st_mode))
    return protect_gitdir(pr, watch, path, root);
  /* Missing (`git init` would make one: its config is code to run), a
   * symlink or a worktree's or submodule's file: it cannot be pinned, so a
   * .git put in its place is stopped like a protected name. */
  r = watch_path(watch, path);
  if (r < 0 || !present)
    return r;
  if (S_ISREG(st.st_mode)) {
    /* The file is read-only besides (bound onto itself, it cannot be
     * removed either), and where it points gets what a .git gets when it
     * lies in a write root (`git init --separate-git-dir`). */
    r = path_list_add_real(&pr->deny_write, path, NULL);
    if (r == 0 && gitfile_target(path, root, target, sizeof target) &&
        in_write_root(pr, target) && stat(target, &st) == 0 && S_ISDIR(st.st_mode))
      r = protect_gitdir(pr, watch, target, root);
  } else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    r = protect_gitdir(pr, watch, path, root); /* a symlink to a git directory */
  }
  return r;
}

static void protect_submodule(const char *value, void *ctx) {
  struct config_walk *w = ctx;
  char sub[PATH_MAX];
  if (w->r == 0 && value[0] != '/' && !strstr(value, "..") &&
      snprintf(sub, sizeof sub, "%s/%s", w->base, value) < (int)sizeof sub)
    w->r = protect_repo(w->pr, w->watch, sub); /* only inside the work tree */
}

/* The submodules `.gitmodules` in `root` lists: each is a repository of
 * its own whose .git (a file pointing into .git/modules) could be swapped
 * for a planted one. */
static int protect_submodules(struct profile *pr, struct path_list *watch, const char *root) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/.gitmodules", root);
  char *text = read_small_file(path, GIT_FILE_MAX);
  if (!text)
    return 0;
  struct config_walk w = {pr, watch, root, 0, 0};
  gitconfig_each(text, "submodule", "path", protect_submodule, &w);
  free(text);
  return w.r;
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
 * sub-project, a bare repository): each gets what the top one gets, and
 * the directories on the way to it are pinned.  Looked for breadth first,
 * NESTED_DEPTH levels down, among NESTED_DIRS directories and
 * NESTED_ENTRIES names read at most (past those, a directory already
 * queued is only asked for a .git), since it costs start-up time on every
 * run; not through symlinks, not
 * inside a .git or node_modules, and not in a shared temporary directory
 * such as /tmp (sticky: other users' files; only its top is watched). */
#define NESTED_DEPTH 2
#define NESTED_DIRS 256
#define NESTED_ENTRIES 2048 /* names read in all: a wide tree costs no more */
#define NESTED_REPOS 32
static int protect_nested(struct profile *pr, struct path_list *watch, const char *root) {
  struct stat st;
  if (stat(root, &st) < 0 || !S_ISDIR(st.st_mode) || (st.st_mode & S_ISVTX))
    return 0;
  struct path_list dirs = {0};
  unsigned char depth[NESTED_DIRS];
  int r = path_list_add(&dirs, root), repos = 0;
  size_t entries = NESTED_ENTRIES;
  depth[0] = 0;
  for (size_t i = 0; r == 0 && i < dirs.n && repos < NESTED_REPOS; i++) {
    char path[PATH_MAX];
    bool repo = false;
    unsigned bare = 0; /* HEAD, objects, refs seen */
    if (depth[i] == NESTED_DEPTH || !entries) { /* only: is it one? */
      repo = snprintf(path, sizeof path, "%s/.git", dirs.v[i]) < (int)sizeof path &&
             lstat(path, &st) == 0; /* (a bare one only where it was listed) */
    } else {
      int fd = open(dirs.v[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      struct dir_iter it;
      unsigned char type;
      if (fd >= 0)
        dir_start(&it, fd);
      for (const char *name; r == 0 && fd >= 0 && entries && (name = dir_next(&it, &type));) {
        entries--;
        if (strcmp(name, ".git") == 0) {
          repo = true;
          continue;
        }
        bare |= strcmp(name, "HEAD") == 0 ? 1 : strcmp(name, "objects") == 0 ? 2
                                              : strcmp(name, "refs") == 0    ? 4
                                                                             : 0;
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
    if (r || i == 0) /* the top one is protect_repo's already */
      continue;
    if (repo) {
      repos++;
      r = pin_way(pr, root, dirs.v[i]);
      if (r == 0)
        r = protect_repo(pr, watch, dirs.v[i]);
      if (r == 0)
        r = protect_submodules(pr, watch, dirs.v[i]);
    } else if (bare == 7) { /* a bare repository (mirror.git): its hooks run on a push */
      char objects[PATH_MAX], refs[PATH_MAX];
      snprintf(objects, sizeof objects, "%s/objects", dirs.v[i]);
      snprintf(refs, sizeof refs, "%s/refs", dirs.v[i]);
      if (lstat(objects, &st) == 0 && S_ISDIR(st.st_mode) && lstat(refs, &st) == 0 &&
          S_ISDIR(st.st_mode)) {
        repos++;
        r = pin_way(pr, root, dirs.v[i]);
        if (r == 0)
          r = protect_gitdir(pr, watch, dirs.v[i], NULL);
      }
    }
  }
  path_list_free(&dirs);
  return r;
}

int protect_prepare(struct profile *pr, struct path_list *watch, corral_error *err) {
  for (size_t i = 0; i < pr->write_roots.n; i++) {
    const char *root = pr->write_roots.v[i];
    struct stat st;
    if (stat(root, &st) < 0 || !S_ISDIR(st.st_mode))
      continue; /* not there (nothing is mounted for it) or a file: nothing to watch in */
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
  /* A deny-read path, a store's symlink or a daemon's socket is hidden by
   * its name: were a directory above it in a write root renamed
   * (~/.config/gh to ~/.config/gh-x, ssh-agent's directory in /tmp to any
   * name), the secret or the socket would be on the host under a name no
   * later run hides.  Its own cover is a mount point already, which cannot
   * be renamed. */
  const struct path_list *hidden[] = {&pr->deny_read, &pr->hidden_sockets, &pr->deny_links};
  for (size_t l = 0; l < ARRAY_SIZE(hidden); l++)
    for (size_t i = 0; i < hidden[l]->n; i++)
      if (in_write_root(pr, hidden[l]->v[i]) && pin_above(pr, hidden[l]->v[i]) < 0)
        return error_set(err, -ENOMEM, ENOMEM, "out of memory");
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
