/*
 * exec.c — `corral exec`: a sandboxed program that talks to the caller live.
 *
 * Without a terminal, the program gets corral's own stdin, stdout and
 * stderr: nothing is captured, bounded or buffered.  With a terminal on
 * stdin, the program gets a PTY of its own (so it can never inject input
 * into the caller's terminal), corral puts the caller's terminal in raw
 * mode and relays both ways, passing window size changes on; the caller's
 * modes are restored on every way out.  SIGINT, SIGTERM, SIGHUP and SIGQUIT
 * go to the program; the exit status is the program's (128+N after signal
 * N) or corral's own codes, as for `run`.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "corral.h"
#include "options.h"
#include "policy_flags.h"

enum { OPT_REPORT = 1 };
static const struct cli_option exec_options[] = {
    {"report", "FILE", OPT_REPORT,
     "write the outcome as JSON to FILE when the program ends (stdout is the program's); "
     "FILE must not be a symbolic link"},
    POLICY_FLAG_OPTIONS,
};
static const char exec_usage[] =
    "usage: corral exec [options] [--] CMD [ARGS...]\n"
    "Runs CMD in the sandbox with its stdin, stdout and stderr connected straight to\n"
    "corral's (a PTY of its own when stdin is a terminal).  Exit status: CMD's own\n"
    "(128+N after signal N), or 124/125/126/127 and 2 as for `corral run`.";

struct exec_args {
  const char *report;
  struct policy_flags pf;
};

static int on_option(void *ctx, int id, const char *value) {
  struct exec_args *a = ctx;
  if (id == OPT_REPORT) {
    a->report = value;
    return 0;
  }
  return policy_flag(&a->pf, id, value) == 0 ? 0 : -1;
}

/* Every terminal among corral's standard streams, as it was: the program
 * may share one (stdout on a terminal, stdin not) and change its modes or
 * size, and stdin's goes raw when the program gets a PTY of its own.  All
 * are put back on every way out. */
static struct {
  bool saved, size_saved;
  struct termios modes;
  struct winsize size;
} terminals[3];
static struct termios saved_modes; /* stdin's, raw mode's starting point */
static bool modes_saved;

static void save_terminals(void) {
  for (int fd = 0; fd < 3; fd++) {
    terminals[fd].saved = tcgetattr(fd, &terminals[fd].modes) == 0;
    terminals[fd].size_saved =
        terminals[fd].saved && ioctl(fd, TIOCGWINSZ, &terminals[fd].size) == 0;
  }
}

/* tcsetattr and ioctl are async-signal-safe: fatal_signal uses this. */
static void restore_terminal(void) {
  if (modes_saved)
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_modes);
  modes_saved = false;
  for (int fd = 2; fd >= 0; fd--) {
    if (terminals[fd].saved)
      tcsetattr(fd, TCSADRAIN, &terminals[fd].modes);
    if (terminals[fd].size_saved)
      ioctl(fd, TIOCSWINSZ, &terminals[fd].size);
    terminals[fd].saved = terminals[fd].size_saved = false;
  }
}

static void fatal_signal(int sig) {
  restore_terminal(); /* tcsetattr is async-signal-safe */
  signal(sig, SIG_DFL);
  raise(sig);
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) {
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        poll(&pf, 1, 100);
        continue;
      }
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/*
 * --report: corral writes the file with the caller's rights, often where
 * the command can write too (the workspace, /tmp).  So it is opened before
 * the command runs and written after through that descriptor, never by
 * path: a symlink or a rename the command makes meanwhile cannot send the
 * report anywhere else.  What an earlier command may have left on the way
 * is refused at open: a symlink as the last component, or a symlink lying
 * in a write root that leads out of them.  After the run, PATH must still
 * name the file opened, or the caller would read the command's forgery.
 */
struct report_file {
  int fd;
  struct stat st; /* as opened */
  bool created;
};

struct dir_id {
  dev_t dev;
  ino_t ino;
};
struct write_dirs {
  struct dir_id *v;
  size_t n;
};

static int add_write_dir(struct write_dirs *w, const char *path) {
  struct stat st;
  if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
    return 0; /* nothing can lie in it */
  struct dir_id *g = realloc(w->v, (w->n + 1) * sizeof *g);
  if (!g)
    return -1;
  w->v = g;
  w->v[w->n++] = (struct dir_id){st.st_dev, st.st_ino};
  return 0;
}

/* The profile's write roots, and the workspace roots also when they are
 * read-only (one too many only refuses more).  Compared by device and
 * inode: the same directory reached by another path counts too. */
static int load_write_dirs(const struct cli_sandbox *sb, struct write_dirs *w) {
  for (size_t i = 0; i < sb->nroots; i++)
    if (add_write_dir(w, sb->roots[i]) < 0)
      return -1;
  corral_error err = {0};
  char *profile = corral_policy_profile_json(sb->policy, (const char *const *)sb->roots,
                                             sb->nroots, &err);
  json_t *doc = profile ? json_loads(profile, 0, NULL) : NULL;
  json_t *v;
  size_t i;
  int r = 0;
  json_array_foreach(json_object_get(doc, "writeRoots"), i, v) {
    if (json_is_string(v) && add_write_dir(w, json_string_value(v)) < 0)
      r = -1;
  }
  json_decref(doc);
  free(profile);
  return r;
}

/* 1 when `dir` is a write dir or lies below one, 0 when not, -1 when the
 * way up cannot be walked. */
static int in_write_dirs(int dir, const struct write_dirs *w) {
  int fd = openat(dir, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  struct stat st, up_st;
  while (fd >= 0 && fstat(fd, &st) == 0) {
    for (size_t i = 0; i < w->n; i++)
      if (w->v[i].dev == st.st_dev && w->v[i].ino == st.st_ino) {
        close(fd);
        return 1;
      }
    int up = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    close(fd);
    if (up >= 0 && fstat(up, &up_st) == 0 && up_st.st_dev == st.st_dev &&
        up_st.st_ino == st.st_ino) {
      close(up); /* "/" is its own parent */
      return 0;
    }
    fd = up;
  }
  if (fd >= 0)
    close(fd);
  return -1;
}

/* Opens the directory that holds PATH's last component, resolving symlinks
 * one component at a time as the kernel does, to learn where each symlink
 * followed lies.  The first one lying in a write dir is named in
 * `planted` ("" when none does). */
static int open_report_dir(const char *path, const struct write_dirs *w, char *planted,
                           size_t size) {
  char rest[2 * PATH_MAX], name[NAME_MAX + 1];
  const char *slash = strrchr(path, '/');
  size_t len = slash ? (size_t)(slash - path) + 1 : 0; /* "/x" keeps its "/" */
  planted[0] = '\0';
  if (len >= sizeof rest) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(rest, path, len);
  rest[len] = '\0';
  int dir = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  int links = 0;
  char *p = rest;
  while (dir >= 0) {
    p += strspn(p, "/");
    if (!*p)
      return dir;
    size_t n = strcspn(p, "/");
    if (n > NAME_MAX) {
      errno = ENAMETOOLONG;
      break;
    }
    memcpy(name, p, n);
    name[n] = '\0';
    p += n;
    if (strcmp(name, ".") == 0)
      continue;
    struct stat st;
    int next = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 || fstat(next, &st) < 0) {
      if (next >= 0)
        close(next);
      break;
    }
    if (!S_ISLNK(st.st_mode)) {
      close(dir);
      dir = next;
      if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        break;
      }
      continue;
    }
    char target[PATH_MAX], spliced[sizeof rest];
    ssize_t tl = readlinkat(next, "", target, sizeof target - 1);
    close(next);
    if (tl < 0)
      break;
    target[tl] = '\0';
    if (++links > 40) {
      errno = ELOOP;
      break;
    }
    int in = planted[0] ? 0 : in_write_dirs(dir, w);
    if (in < 0)
      break;
    if (in) {
      char proc[64], where[PATH_MAX];
      snprintf(proc, sizeof proc, "/proc/self/fd/%d", dir);
      ssize_t wl = readlink(proc, where, sizeof where - 1);
      where[wl < 0 ? 0 : wl] = '\0';
      snprintf(planted, size, "%s/%s", strcmp(where, "/") == 0 ? "" : where, name);
    }
    if ((size_t)snprintf(spliced, sizeof spliced, "%s%s", target, p) >= sizeof spliced) {
      errno = ENAMETOOLONG;
      break;
    }
    memcpy(rest, spliced, strlen(spliced) + 1);
    p = rest;
    if (target[0] == '/') {
      close(dir);
      dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
  }
  int saved = errno;
  if (dir >= 0)
    close(dir);
  errno = saved;
  return -1;
}

/* Opens (creating or emptying) the report file before anything runs.
 * 0, or EXIT_USAGE after saying why. */
static int report_open(const char *path, const struct cli_sandbox *sb, struct report_file *rf) {
  const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
  char planted[2 * PATH_MAX];
  struct write_dirs w = {0};
  int dir = -1, in = 1;
  rf->fd = -1;
  rf->created = false;
  if (!*name)
    errno = EISDIR;
  else if (load_write_dirs(sb, &w) < 0)
    errno = ENOMEM;
  else if ((dir = open_report_dir(path, &w, planted, sizeof planted)) >= 0 && planted[0])
    in = in_write_dirs(dir, &w);
  free(w.v);
  if (dir >= 0 && in == 0) {
    fprintf(stderr,
            "corral exec: --report `%s` leads out of the write roots through the symbolic link "
            "`%s`, which a sandboxed command could have made: refused\n",
            path, planted);
    close(dir);
    return EXIT_USAGE;
  }
  if (dir >= 0 && in > 0) {
    /* O_NONBLOCK: a FIFO left at PATH with no reader fails instead of
     * blocking corral before the command has even started. */
    int flags = O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    rf->fd = openat(dir, name, flags | O_CREAT | O_EXCL, 0644);
    rf->created = rf->fd >= 0;
    if (rf->fd < 0 && errno == EEXIST)
      rf->fd = openat(dir, name, flags);
    /* Emptied now: if corral dies during the run, no stale report remains
     * to be taken for this run's. */
    if (rf->fd >= 0 && (fstat(rf->fd, &rf->st) < 0 ||
                        (S_ISREG(rf->st.st_mode) && ftruncate(rf->fd, 0) < 0))) {
      close(rf->fd);
      rf->fd = -1;
    }
  }
  if (rf->fd >= 0) {
    close(dir);
    return 0;
  }
  int saved = errno;
  struct stat st;
  bool known = dir >= 0 && fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (known && saved == ELOOP && S_ISLNK(st.st_mode))
    fprintf(stderr,
            "corral exec: --report `%s` is a symbolic link: refused (give the file's own path)\n",
            path);
  else if (known && saved == ENXIO && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
    fprintf(stderr, "corral exec: --report `%s` is a %s that no one reads: refused\n", path,
            S_ISFIFO(st.st_mode) ? "FIFO" : "socket");
  else
    fprintf(stderr, "corral exec: --report `%s`: %s\n", path, strerror(saved));
  if (dir >= 0)
    close(dir);
  return EXIT_USAGE;
}

static bool still_named(const char *path, const struct report_file *rf) {
  struct stat now;
  return fstatat(AT_FDCWD, path, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
         now.st_dev == rf->st.st_dev && now.st_ino == rf->st.st_ino;
}

/* Nothing ran: a file made for the report goes again. */
static void report_discard(const char *path, struct report_file *rf) {
  if (rf->created && still_named(path, rf))
    unlink(path);
  close(rf->fd);
}

/* Writes the outcome through the descriptor opened before the run, if PATH
 * still names that file.  Returns the exit code to use. */
static int report_write(const char *path, struct report_file *rf, const corral_outcome *out,
                        int rc) {
  if (!still_named(path, rf)) {
    fprintf(stderr,
            "corral exec: --report `%s` was replaced while the command ran; the report was not "
            "written there\n",
            path);
    close(rf->fd);
    return rc == 0 ? EXIT_SETUP : rc;
  }
  char *json = corral_outcome_to_json(out);
  bool ok = json != NULL;
  struct stat now;
  if (ok && S_ISREG(rf->st.st_mode)) {
    /* The command may have written into the file and changed its mode
     * (made it writable to others, to forge the report later). */
    ok = ftruncate(rf->fd, 0) == 0 && fstat(rf->fd, &now) == 0 &&
         ((now.st_mode & 07777) == (rf->st.st_mode & 07777) ||
          fchmod(rf->fd, rf->st.st_mode & 07777) == 0);
  }
  ok = ok && write_all(rf->fd, json, strlen(json)) == 0 && write_all(rf->fd, "\n", 1) == 0;
  int saved = json ? errno : ENOMEM;
  if (close(rf->fd) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  free(json);
  if (!ok) {
    fprintf(stderr, "corral exec: --report `%s`: %s\n", path, strerror(saved));
    if (rc == 0)
      rc = EXIT_SETUP;
  }
  return rc;
}

/* Relays caller <-> PTY until the program ends; forwards signals. */
static void relay(corral_exec *e, int master, int sfd) {
  char buf[65536];
  bool in_open = true;
  for (;;) {
    struct pollfd p[4] = {{.fd = master, .events = POLLIN},
                          {.fd = in_open ? STDIN_FILENO : -1, .events = POLLIN},
                          {.fd = sfd, .events = POLLIN},
                          {.fd = corral_exec_fd(e), .events = POLLIN}};
    if (poll(p, 4, -1) < 0 && errno != EINTR)
      return;
    if (p[0].revents) {
      ssize_t n = read(master, buf, sizeof buf);
      if (n > 0)
        write_all(STDOUT_FILENO, buf, (size_t)n);
      else if (n < 0 && errno == EIO)
        return; /* every holder of the PTY is gone */
    }
    if (p[1].revents) {
      ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
      if (n > 0)
        write_all(master, buf, (size_t)n);
      else if (n == 0)
        in_open = false;
    }
    if (p[2].revents) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == sizeof si) {
        if (si.ssi_signo == SIGWINCH) {
          struct winsize ws;
          if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
            ioctl(master, TIOCSWINSZ, &ws);
        } else {
          corral_exec_signal(e, (int)si.ssi_signo);
        }
      }
    }
    if (p[3].revents) {
      /* The program ended: pass on what its PTY still holds. */
      ssize_t n;
      fcntl(master, F_SETFL, O_NONBLOCK);
      while ((n = read(master, buf, sizeof buf)) > 0)
        write_all(STDOUT_FILENO, buf, (size_t)n);
      return;
    }
  }
}

static void wait_forwarding(corral_exec *e, int sfd) {
  for (;;) {
    struct pollfd p[2] = {{.fd = sfd, .events = POLLIN},
                          {.fd = corral_exec_fd(e), .events = POLLIN}};
    if (poll(p, 2, -1) < 0 && errno != EINTR)
      return;
    if (p[0].revents) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == sizeof si)
        if (si.ssi_signo != SIGWINCH)
          corral_exec_signal(e, (int)si.ssi_signo);
    }
    if (p[1].revents)
      return;
  }
}

int cmd_exec(int argc, char **argv) {
  struct exec_args args = {0};
  int first = cli_parse("corral exec", exec_usage, exec_options,
                        sizeof exec_options / sizeof exec_options[0], argc, argv, on_option, &args);
  if (first == -2)
    return 0;
  if (first < 0)
    return EXIT_USAGE;
  if (first >= argc) {
    fprintf(stderr, "corral exec: no command given\nTry `corral exec --help`.\n");
    return EXIT_USAGE;
  }
  struct cli_sandbox sb;
  corral_request req;
  int rc = cli_sandbox_prepare(&args.pf, CORRAL_MODE_INTERACTIVE, argc - first, argv + first, &sb, &req);
  if (rc)
    return rc;
  struct report_file report = {.fd = -1};
  if (args.report && (rc = report_open(args.report, &sb, &report)) != 0) {
    corral_request_free(&req);
    cli_sandbox_close(&sb, &args.pf);
    return rc;
  }

  sigset_t mask;
  sigemptyset(&mask);
  int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH};
  for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++)
    sigaddset(&mask, fwd[i]);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  signal(SIGPIPE, SIG_IGN);

  corral_exec_options o = {.request = &req, .adapter = sb.adapter, .stdio = {0, 1, 2}};
  int master = -1;
  save_terminals();
  atexit(restore_terminal);
  int fatal[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
  for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
    signal(fatal[i], fatal_signal);
  if (isatty(STDIN_FILENO)) {
    o.pty = true; /* shaped like the caller's terminal, which turns raw once it is */
    modes_saved = tcgetattr(STDIN_FILENO, &saved_modes) == 0;
  }
  corral_exec *e = NULL;
  corral_error err = {0};
  int started = corral_exec_start(&o, &e, &err);
  /* Raw only with a terminal of the program's own to relay to. */
  if (modes_saved && started == 0 && corral_exec_pty(e) >= 0) {
    struct termios raw = saved_modes;
    cfmakeraw(&raw);
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
  }
  if (started < 0) {
    restore_terminal();
    fprintf(stderr, "corral exec: %s\n", err.message);
    rc = EXIT_USAGE;
    if (args.report)
      report_discard(args.report, &report);
  } else {
    master = corral_exec_pty(e);
    if (master >= 0)
      relay(e, master, sfd);
    else
      wait_forwarding(e, sfd);
    corral_outcome out;
    corral_exec_finish(e, &out);
    restore_terminal();
    rc = corral_outcome_exit_code(&out);
    cli_report_outcome(&out);
    if (args.report)
      rc = report_write(args.report, &report, &out, rc);
    corral_outcome_free(&out);
  }
  corral_request_free(&req);
  cli_sandbox_close(&sb, &args.pf);
  close(sfd);
  return rc;
}
