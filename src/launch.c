/*
 * launch.c — corral's init and the channel it reports on.
 *
 * The supervisor clones init (with the adapter's namespace flags); init runs
 * the adapter's setup, forks the command and stays until the tree is gone.
 *
 * Protocol between supervisor and init (numbered as the code does it):
 *   sync 1  supervisor: clone3(CLONE_PIDFD | adapter flags) -> init.  The
 *           supervisor has no part in the setup (init writes its own
 *           uid/gid maps) and goes on to wait for the report.
 *   sync 2  init: adapter's init_setup; failure -> REPORT_SETUP_FAILED, exit.
 *   sync 3  init: spawns the command (CLONE_VM | CLONE_VFORK); a failed
 *           execve leaves its errno in init's memory -> REPORT_LAUNCHED or
 *           REPORT_EXEC_FAILED.
 *   sync 4  init: reaps; forwards SIGINT SIGTERM SIGHUP SIGQUIT to the command
 *           (in a pid namespace, only those from outside it: the command
 *           may not steer its own supervision);
 *           SIGUSR1 (or the supervisor's death) ends the whole tree; a
 *           protected name created in a watched directory kills it at once
 *           and is reported as a denial.  When
 *           the command ends, whatever it left behind is killed, and
 *           REPORT_EXITED carries its wait status.
 *
 * Invariants:
 *   1. Code that runs in init or in the command before execve allocates
 *      nothing and calls no stdio: the supervisor may be multithreaded, and
 *      a lock held by another thread at clone time is never released.
 *   2. Init never returns into library code; it _exits.
 *   3. The report pipe is close-on-exec: the command cannot write to it;
 *      init is not dumpable (launch_hide_self), so it cannot be reopened
 *      through /proc or taken with pidfd_getfd either.
 *   4. Outside a pid namespace init is a child subreaper, so orphans (even
 *      ones that called setsid) come back to it and can be ended.
 */
#include "launch.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <linux/sched.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <linux/keyctl.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <termios.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "internal.h"
#include "proxy.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* ------------------------------------------------------------- report */

/* Records init holds back to write at once: each write wakes the
 * supervisor, and on a busy machine each wake-up costs a wait for a CPU.
 * Eight records fit one atomic pipe write (PIPE_BUF). */
static struct report_record held[8];
static size_t nheld;
static bool holding;

static void report_put(int fd, const void *buf, size_t len) {
  ssize_t w;
  do
    w = write(fd, buf, len);
  while (w < 0 && errno == EINTR);
}

/* Writes what is held, in one write, and holds no more. */
static void report_release(int fd) {
  holding = false;
  if (nheld)
    report_put(fd, held, nheld * sizeof *held);
  nheld = 0;
}

void report_write(int fd, enum report_type type, int value, int aux, const char *text) {
  struct report_record rec;
  memset(&rec, 0, sizeof rec);
  rec.magic = REPORT_MAGIC;
  rec.type = (uint32_t)type;
  rec.value = value;
  rec.aux = aux;
  if (text) {
    size_t n = strlen(text);
    if (n >= sizeof rec.text)
      n = sizeof rec.text - 1;
    memcpy(rec.text, text, n);
  }
  if (holding && nheld == ARRAY_SIZE(held))
    report_release(fd), holding = true; /* in order: what is held goes first */
  if (holding)
    held[nheld++] = rec;
  else
    report_put(fd, &rec, sizeof rec);
}

bool launch_report_link_made(const struct report_buf *rb) {
  launch_report rep = {0};
  launch_report_parse(&rep, rb->data, rb->len);
  bool made = rep.link_made;
  launch_report_free(&rep);
  return made;
}

bool launch_report_links_unsure(const struct report_buf *rb) {
  launch_report rep = {0};
  launch_report_parse(&rep, rb->data, rb->len);
  bool unsure = !rep.readable || !rep.links_heard || rep.link_made;
  launch_report_free(&rep);
  return unsure;
}

void launch_report_free(launch_report *r) {
  free(r->denial.capability.scope);
  free(r->denial.reason);
  memset(&r->denial, 0, sizeof r->denial);
}

static void copy_text(char *dst, size_t size, const char *src) {
  size_t n = strnlen(src, REPORT_TEXT_MAX - 1);
  if (n >= size)
    n = size - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

void launch_report_parse(launch_report *r, const void *buf, size_t len) {
  const struct report_record *rec = buf;
  r->readable = true;
  if (len % sizeof *rec) {
    r->readable = false;
    snprintf(r->problem, sizeof r->problem, "report has a partial record (%zu bytes)", len);
    return;
  }
  for (size_t i = 0; i < len / sizeof *rec; i++, rec++) {
    if (rec->magic != REPORT_MAGIC || rec->text[REPORT_TEXT_MAX - 1] != '\0') {
      r->readable = false;
      snprintf(r->problem, sizeof r->problem, "report record %zu is malformed", i);
      return;
    }
    switch (rec->type) {
    case REPORT_LAUNCHED:
      r->launched = true;
      break;
    case REPORT_EXEC_FAILED:
      r->exec_failed = true;
      r->exec_errno = rec->value;
      copy_text(r->exec_step, sizeof r->exec_step, rec->text);
      break;
    case REPORT_SETUP_FAILED:
      if (!r->setup_failed) {
        r->setup_failed = true;
        r->setup_errno = rec->value;
        copy_text(r->setup_step, sizeof r->setup_step, rec->text);
      }
      break;
    case REPORT_DENIAL:
      if (rec->value == CORRAL_CAP_PROTECTED_METADATA &&
          r->nprotected < ARRAY_SIZE(r->protected_paths))
        copy_text(r->protected_paths[r->nprotected++], REPORT_TEXT_MAX, rec->text);
      if (!r->denial.present) {
        r->denial.present = true;
        r->denial.capability.kind = (corral_capability_kind)rec->value;
        r->denial.capability.scope = strdup(rec->text);
      }
      break;
    case REPORT_EXITED:
      r->exited = true;
      r->wait_status = rec->value;
      break;
    case REPORT_LIMIT: {
      long long value, observed;
      char tail;
      if (rec->value < 1 || rec->value >= CORRAL_LIMIT_COUNT ||
          sscanf(rec->text, "%lld %lld%c", &value, &observed, &tail) != 2 || value < 0 ||
          observed < 0) {
        r->readable = false;
        snprintf(r->problem, sizeof r->problem, "report record %zu: a malformed limit", i);
        return;
      }
      r->limit = (corral_limit_hit){true, (corral_limit)rec->value, value, observed};
      r->limit_bound = rec->aux & 1;
      r->limit_pids_full = rec->aux & 2;
      break;
    }
    case REPORT_USAGE: {
      long long mem, cpu, tasks;
      char tail;
      if (sscanf(rec->text, "%lld %lld %lld%c", &mem, &cpu, &tasks, &tail) != 3 || mem < 0 ||
          cpu < 0 || tasks < 0) {
        r->readable = false;
        snprintf(r->problem, sizeof r->problem, "report record %zu: a malformed usage", i);
        return;
      }
      r->usage = (corral_usage){true, mem, cpu, tasks};
      break;
    }
    case REPORT_LINKS:
      r->links_heard |= rec->value == 1;
      r->link_made |= rec->value == 2;
      break;
    case REPORT_REFUSED: {
      int why, at = 0, nat = 0;
      size_t nlen;
      if (rec->value == 0) {
        r->refused_dropped += rec->aux > 0 ? rec->aux : 0;
        break;
      }
      struct launch_refusal *f = &r->refused[r->nrefused];
      if (r->nrefused == REFUSALS_MAX || rec->aux < 1 ||
          sscanf(rec->text, "%d %15s %zu%n", &why, f->op, &nlen, &nat) != 3 || !nat ||
          rec->text[nat++] != ' ' || nlen >= sizeof f->name ||
          strlen(rec->text + nat) < nlen + 1 || rec->text[nat + nlen] != ' ' ||
          (at = nat + (int)nlen + 1, false) ||
          why < REFUSED_OUTSIDE || why > REFUSED_SECRET ||
          rec->value >= CORRAL_CAP_UNRESTRICTED || !rec->text[at] ||
          strlen(rec->text + at) >= sizeof f->scope) {
        r->readable = false;
        snprintf(r->problem, sizeof r->problem, "report record %zu: a malformed refusal", i);
        return;
      }
      f->kind = rec->value;
      f->why = why;
      f->count = rec->aux;
      snprintf(f->scope, sizeof f->scope, "%s", rec->text + at);
      snprintf(f->name, sizeof f->name, "%.*s", (int)nlen, rec->text + nat);
      r->nrefused++;
      break;
    }
    default:
      r->readable = false;
      snprintf(r->problem, sizeof r->problem, "report record %zu has unknown type %u", i,
               rec->type);
      return;
    }
  }
}

int report_buf_init(struct report_buf *rb) {
  memset(rb, 0, sizeof *rb);
  rb->data = malloc(REPORT_MAX);
  return rb->data ? 0 : -ENOMEM;
}

bool report_buf_exited(const struct report_buf *rb) {
  const struct report_record *rec = (const void *)rb->data;
  for (size_t i = 0; i < rb->len / sizeof *rec; i++)
    if (rec[i].magic == REPORT_MAGIC && rec[i].type == REPORT_EXITED)
      return true;
  return false;
}

void report_buf_free(struct report_buf *rb) {
  free(rb->data);
  rb->data = NULL;
}

void report_buf_read(struct report_buf *rb, int fd) {
  for (;;) {
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n == 0) {
      rb->eof = true;
      return;
    }
    if (n < 0) {
      if (errno != EINTR)
        return;
      continue;
    }
    if (rb->len + (size_t)n > REPORT_MAX) {
      rb->overflow = true;
      continue;
    }
    memcpy(rb->data + rb->len, buf, (size_t)n);
    rb->len += (size_t)n;
  }
}

/* ------------------------------------------------------------ plans */

void launch_plan_free(launch_plan *plan) {
  strv_free(plan->argv, plan->argc);
  strv_free(plan->envp, plan->envc);
  free(plan->cwd);
  memset(plan, 0, sizeof *plan);
}

/* ------------------------------------------------ inside init (no malloc) */

/* The process's argv and environment strings as the kernel laid them out
 * (one block, argv first), captured when the library is loaded: glibc
 * passes argc, argv and envp to constructors. */
static char *strings_start, *strings_end;

__attribute__((constructor)) static void capture_process_strings(int argc, char **argv,
                                                                 char **envp) {
  if (argc < 1 || !argv || !argv[0])
    return;
  char *end = argv[0];
  for (int i = 0; i < argc && argv[i] == end; i++)
    end = argv[i] + strlen(argv[i]) + 1;
  for (char **e = envp; e && *e && *e == end; e++) /* contiguous, as exec lays them */
    end = *e + strlen(*e) + 1;
  strings_start = argv[0];
  strings_end = end;
}

int launch_hide_self(void) {
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
    return -1;
  if (strings_start && strings_end > strings_start)
    memset(strings_start, 0, (size_t)(strings_end - strings_start));
  return 0;
}

pid_t launch_clone3(unsigned long flags, int *pidfd) {
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.flags = flags | (pidfd ? CLONE_PIDFD : 0);
  args.pidfd = (uint64_t)(uintptr_t)pidfd;
  args.exit_signal = SIGCHLD;
  return (pid_t)syscall(SYS_clone3, &args, sizeof args);
}

void launch_pin_here(struct launch_pin *pin) {
  pin->pinned = false;
  int cpu = sched_getcpu();
  if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof pin->was, &pin->was) < 0 ||
      CPU_COUNT(&pin->was) < 2 || !CPU_ISSET(cpu, &pin->was))
    return;
  cpu_set_t here;
  CPU_ZERO(&here);
  CPU_SET(cpu, &here);
  pin->pinned = sched_setaffinity(0, sizeof here, &here) == 0;
}

void launch_unpin(const struct launch_pin *pin) {
  if (pin->pinned)
    sched_setaffinity(0, sizeof pin->was, &pin->was);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
    ;
}

/* The PATH search execvp does, with the command's own PATH rather than the
 * supervisor's.  Returns the errno that explains the failure. */
/* execve, and for a file the kernel cannot run itself (a script without
 * "#!") the shell, as execvp and every shell do.  On the command's own
 * small stack: no allocation, so a very long argv skips the shell. */
static void exec_file(const char *file, char *const argv[], char *const envp[]) {
  execve(file, argv, envp);
  if (errno != ENOEXEC)
    return;
  size_t argc = 0;
  while (argv[argc] && argc < 1024)
    argc++;
  if (argv[argc]) {
    errno = ENOEXEC;
    return;
  }
  char *sh_argv[argc + 2];
  sh_argv[0] = (char *)"sh";
  sh_argv[1] = (char *)file;
  for (size_t i = 1; i <= argc; i++)
    sh_argv[i + 1] = argv[i];
  execve("/bin/sh", sh_argv, envp);
  errno = ENOEXEC;
}

static int exec_search(const char *name, char *const argv[], char *const envp[]) {
  if (strchr(name, '/')) {
    exec_file(name, argv, envp);
    return errno;
  }
  const char *path = "/usr/local/bin:/usr/bin:/bin";
  size_t klen = 5;
  for (char *const *e = envp; *e; e++)
    if (strncmp(*e, "PATH=", klen) == 0) {
      path = *e + klen;
      break;
    }
  size_t nlen = strlen(name);
  bool saw_eacces = false;
  int last = ENOENT;
  for (const char *p = path;; p++) {
    const char *end = strchrnul(p, ':');
    char full[PATH_MAX];
    size_t dlen = (size_t)(end - p);
    if (dlen + nlen + 2 <= sizeof full) {
      memcpy(full, p, dlen);
      size_t off = dlen;
      if (dlen == 0)
        full[off++] = '.'; /* an empty entry means the current directory */
      full[off++] = '/';
      memcpy(full + off, name, nlen + 1);
      exec_file(full, argv, envp);
      switch (errno) {
      case EACCES:
        saw_eacces = true;
        break;
      case ENOENT:
      case ENOTDIR:
      case ELOOP:
      case ENAMETOOLONG:
        break;
      default:
        return errno; /* found something, and it cannot run */
      }
      last = errno;
    }
    if (*end == '\0')
      break;
    p = end;
  }
  return saw_eacces ? EACCES : (last == ENOTDIR ? ENOENT : last);
}

/* Sends sig to every descendant of init.  In a pid namespace init is pid 1
 * and kill(-1) reaches exactly the namespace; outside one, walk the tree
 * through /proc/<pid>/task/<tid>/children (breadth first, fixed storage). */
static pid_t tree_pids[8192];

/* Appends the pids in /proc/<pid>/task/<tid>/children (every thread's),
 * read whole: a parent of thousands fills many buffers, and a number may
 * straddle two of them. */
static size_t read_children(pid_t pid, size_t n) {
  char path[64];
  char dents[4096];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return n;
  long got;
  while ((got = syscall(SYS_getdents64, dfd, dents, sizeof dents)) > 0) {
    for (long off = 0; off < got;) {
      struct dirent64 *d = (struct dirent64 *)(dents + off);
      off += d->d_reclen;
      if (d->d_name[0] < '0' || d->d_name[0] > '9')
        continue;
      char cpath[96], buf[4096];
      snprintf(cpath, sizeof cpath, "/proc/%d/task/%s/children", (int)pid, d->d_name);
      int fd = open(cpath, O_RDONLY | O_CLOEXEC);
      if (fd < 0)
        continue;
      long v = -1; /* the number being read, across reads */
      ssize_t r;
      while ((r = read(fd, buf, sizeof buf)) > 0 && n < ARRAY_SIZE(tree_pids))
        for (ssize_t i = 0; i < r && n < ARRAY_SIZE(tree_pids); i++) {
          if (buf[i] >= '0' && buf[i] <= '9') {
            v = (v < 0 ? 0 : v * 10) + (buf[i] - '0');
          } else if (v >= 0) {
            tree_pids[n++] = (pid_t)v;
            v = -1;
          }
        }
      if (v >= 0 && n < ARRAY_SIZE(tree_pids))
        tree_pids[n++] = (pid_t)v;
      close(fd);
    }
  }
  close(dfd);
  return n;
}

static void kill_tree(const launch_plan *plan, int sig) {
  pid_t self = getpid();
  /* In a Landlock domain of its own, kill(-1) from init reaches only the
   * domains nested in it: the command's tree, wherever it went. */
  if (self == 1 || plan->init_scoped) {
    kill(-1, sig);
    return;
  }
  size_t n = read_children(self, 0);
  for (size_t i = 0; i < n; i++) {
    kill(tree_pids[i], sig);
    n = read_children(tree_pids[i], n);
  }
}

struct init_state {
  pid_t command;
  bool command_done;
  int command_status;
  int watch_fd; /* inotify over the directories of plan->watch, or -1 */
  const launch_plan *plan;
  struct limits_watch limits;
};

/* The run's processes (init not among them) into tree_pids; how many.  The
 * list stops at the process limit: past it the run ends anyway, and a look
 * must not cost what a fork bomb has made (without a pid namespace, a file
 * or two for each of its processes, while it grows). */
static size_t list_tree(const struct init_state *st) {
  pid_t self = getpid();
  int64_t max = st->plan->limits.v[CORRAL_LIMIT_PROCESSES];
  size_t cap = max > 0 && (uint64_t)max < ARRAY_SIZE(tree_pids) ? (size_t)max : ARRAY_SIZE(tree_pids);
  if (self != 1) {
    size_t n = read_children(self, 0);
    for (size_t i = 0; i < n && n < cap; i++)
      n = read_children(tree_pids[i], n);
    return n;
  }
  struct dir_iter it;
  size_t n = 0;
  dir_rewind(&it, st->limits.proc_fd);
  for (const char *name; (name = dir_next(&it, NULL)) && n < cap;) {
    char *end;
    long pid = strtol(name, &end, 10);
    if (*end == '\0' && pid > 1)
      tree_pids[n++] = (pid_t)pid;
  }
  return n;
}

/* For each of plan->watch: the watch on its directory (one directory, one
 * wd, however many paths are in it) and the path as it was at start
 * (st_nlink 0: absent).  Init's own memory, off its stack. */
struct watched {
  int wd;
  struct stat was;
};
/* One per plan->watch entry: made by the supervisor before the clone
 * (init allocates nothing), init's own copy from then on. */
static struct watched *watched;

/* Another user's creation is not the command's: a protected name that
 * another user (or root, for an ordinary caller) made in a shared write
 * root such as /tmp neither ends the command nor is removed.  One gone
 * again cannot be told apart and counts.  (A process of the same user
 * outside the sandbox cannot be told from the command by owner.) */
static bool someone_elses(const char *path) {
  struct stat sb;
  return lstat(path, &sb) == 0 && sb.st_uid != geteuid();
}

/* Reports every protected path of the command's that exists now and did
 * not at start (or was something else then: a .git symlink replaced);
 * true if there was one. */
static bool sweep_protected(const struct init_state *st, int report_fd) {
  bool hit = false;
  for (size_t k = 0; k < st->plan->nwatch; k++) {
    struct stat sb;
    const struct stat *was = &watched[k].was;
    if (lstat(st->plan->watch[k], &sb) == 0 && sb.st_uid == geteuid() &&
        (!was->st_nlink || sb.st_ino != was->st_ino || sb.st_dev != was->st_dev ||
         (sb.st_mode & S_IFMT) != (was->st_mode & S_IFMT))) {
      report_write(report_fd, REPORT_DENIAL, CORRAL_CAP_PROTECTED_METADATA, 0, st->plan->watch[k]);
      hit = true;
    }
  }
  return hit;
}

/* Reports every protected name created in a watched directory; true if
 * there was one.  The events stay queued even when the name is removed
 * again at once, so that counts too.  A command that floods a watched
 * directory overflows the queue and events are lost: then every protected
 * path is looked at instead. */
static bool check_protected(struct init_state *st, int report_fd) {
  char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
  bool hit = false, overflow = false;
  ssize_t n;
  while (st->watch_fd >= 0 && (n = read(st->watch_fd, buf, sizeof buf)) > 0) {
    for (char *p = buf; p < buf + n;) {
      struct inotify_event *ev = (struct inotify_event *)p;
      p += sizeof *ev + ev->len;
      if (ev->mask & IN_Q_OVERFLOW)
        overflow = true;
      if (!ev->len)
        continue;
      for (size_t k = 0; k < st->plan->nwatch; k++) {
        const char *w = st->plan->watch[k];
        if (watched[k].wd == ev->wd && strcmp(strrchr(w, '/') + 1, ev->name) == 0 &&
            !someone_elses(w)) {
          report_write(report_fd, REPORT_DENIAL, CORRAL_CAP_PROTECTED_METADATA, 0, w);
          hit = true;
        }
      }
    }
  }
  if (overflow && !hit)
    hit = sweep_protected(st, report_fd);
  return hit;
}

static void reap(struct init_state *st) {
  int status;
  pid_t p;
  while ((p = waitpid(-1, &status, WNOHANG | __WALL)) > 0)
    if (p == st->command) {
      st->command_done = true;
      st->command_status = status;
    }
}

static int status_to_code(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return 125;
}

/* Ends every remaining process (SIGKILL, repeated until none is left: a
 * process may fork between the walk and the kill) and reports. */
static _Noreturn void finish(struct init_state *st, int report_fd, bool killed) {
  /* A create just before the end counts too, and what exists at the end
   * was created, whatever the events said. */
  if (st->plan->nwatch && !check_protected(st, report_fd))
    sweep_protected(st, report_fd);
  for (;;) {
    kill_tree(st->plan, SIGKILL);
    reap(st);
    if (waitpid(-1, NULL, WNOHANG | __WALL) < 0 && errno == ECHILD)
      break;
    sleep_ms(1);
  }
  int status = st->command_done ? st->command_status : SIGKILL;
  holding = true; /* the last records and what was held: one wake-up */
  limits_report(&st->limits, WIFSIGNALED(status), report_fd);
  calls_watch_report(report_fd);
  report_write(report_fd, REPORT_EXITED, status, killed, NULL);
  report_release(report_fd);
  _exit(status_to_code(status));
}

/* SIGTERM to the whole tree, up to LAUNCH_GRACE_MS for it to go, then kill. */
static _Noreturn void terminate_tree(struct init_state *st, int sfd, int report_fd) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  kill_tree(st->plan, SIGTERM);
  if (!st->command_done)
    kill(st->command, SIGCONT); /* a stopped command cannot handle SIGTERM */
  for (;;) {
    reap(st);
    if (waitpid(-1, NULL, WNOHANG | __WALL) < 0 && errno == ECHILD)
      break;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long spent = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    if (spent >= LAUNCH_GRACE_MS)
      break;
    struct pollfd pfd = {.fd = sfd, .events = POLLIN};
    if (poll(&pfd, 1, (int)(LAUNCH_GRACE_MS - spent)) > 0) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == sizeof si)
        ;
    }
  }
  finish(st, report_fd, true);
}

/* Moves fd to at least `min`, close-on-exec; returns the new number. */
static int move_fd_above(int fd, int min) {
  int n = fcntl(fd, F_DUPFD_CLOEXEC, min);
  return n;
}

/* What the command child leaves for init when execve fails.  The child
 * shares init's memory (CLONE_VM | CLONE_VFORK) and init sleeps until the
 * execve succeeds or the child exits, so no pipe is needed. */
struct command_start {
  const launch_plan *plan;
  int report_fd;
  struct launch_pin pin; /* init's CPUs, the command's too */
  int err;   /* 0: execve succeeded */
  char step; /* 'c' chdir, 'e' execve, 's' the adapter's command_setup (reported) */
};

static int command_main(void *arg) {
  struct command_start *cs = arg;
  const launch_plan *plan = cs->plan;
  launch_unpin(&cs->pin);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  setsid(); /* no controlling terminal: nothing can be injected into the caller's */
  if (plan->tty)
    ioctl(0, TIOCSCTTY, 0); /* the session's own PTY becomes the controlling terminal */
  syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  limits_command_apply(&plan->limits);
  if (plan->command_setup && plan->command_setup(plan, cs->report_fd) < 0) {
    cs->err = EPERM;
    cs->step = 's';
  } else if (plan->cwd && chdir(plan->cwd) < 0) {
    cs->err = errno;
    cs->step = 'c';
  } else {
    cs->err = exec_search(plan->argv[0], plan->argv, plan->envp);
    cs->step = 'e';
  }
  _exit(cs->err == ENOENT && cs->step == 'e' ? 127 : 126);
}

/* One byte and `n` descriptors (at most 2) to the supervisor, on a socket
 * of init's; what sendmsg returned.  No allocation (init's rules). */
static ssize_t send_fds(int sock, char byte, const int *fds, size_t n) {
  char ctrl[CMSG_SPACE(2 * sizeof(int))] __attribute__((aligned(8)));
  memset(ctrl, 0, sizeof ctrl);
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl,
                       .msg_controllen = CMSG_SPACE(n * sizeof(int))};
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(n * sizeof(int));
  memcpy(CMSG_DATA(c), fds, n * sizeof(int));
  ssize_t r;
  do
    r = sendmsg(sock, &msg, MSG_NOSIGNAL);
  while (r < 0 && errno == EINTR);
  return r;
}

/* The command's terminal, made in the sandbox's own devpts so that its
 * /dev/pts/N exists inside (ttyname, `tty`, programs that reopen their
 * terminal by name): the master goes to the supervisor (SCM_RIGHTS), which
 * shapes it and says go.  0, or -1 after reporting. */
static int pty_inside(int sock, int report_fd, int stdio[3]) {
  int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC), unlock = 0, n = -1;
  char slave[32];
  if (m < 0 || ioctl(m, TIOCSPTLCK, &unlock) < 0 || ioctl(m, TIOCGPTN, &n) < 0) {
    report_write(report_fd, REPORT_SETUP_FAILED, errno, 0, "terminal: the sandbox's /dev/ptmx");
    return -1;
  }
  snprintf(slave, sizeof slave, "/dev/pts/%d", n);
  int s = open(slave, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (s < 0) {
    report_write(report_fd, REPORT_SETUP_FAILED, errno, 0, "terminal: its /dev/pts entry");
    return -1;
  }
  ssize_t r = send_fds(sock, 't', &m, 1);
  char byte;
  close(m);
  /* Go (or the supervisor's end closed: it is gone, and so is the run). */
  do
    r = read(sock, &byte, 1);
  while (r < 0 && errno == EINTR);
  close(sock);
  if (r != 1) {
    report_write(report_fd, REPORT_SETUP_FAILED, r < 0 ? errno : EPIPE, 0,
                 "terminal: handing it over");
    return -1;
  }
  stdio[0] = stdio[1] = stdio[2] = s;
  return 0;
}

/* Network mode filter: the proxies' listeners, made here in the sandbox's
 * network namespace (init is in it after the adapter's setup) and sent
 * to the supervisor, which accepts and relays from outside.  The command
 * starts after they listen, so it cannot take their ports first.  0, or
 * -1 after reporting. */
static int proxy_listen(int sock, int report_fd) {
  static const unsigned short ports[2] = {PROXY_HTTP_PORT, PROXY_SOCKS_PORT};
  int fds[2] = {-1, -1}, one = 1;
  for (int i = 0; i < 2; i++) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(ports[i]),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fds[i] < 0 || setsockopt(fds[i], SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fds[i], (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fds[i], 512) < 0) {
      report_write(report_fd, REPORT_SETUP_FAILED, errno, 0,
                   i ? "network: the SOCKS proxy's listener" : "network: the HTTP proxy's listener");
      return -1;
    }
  }
  ssize_t r = send_fds(sock, 'p', fds, 2);
  int e = errno;
  close(fds[0]), close(fds[1]), close(sock);
  if (r != 1) {
    report_write(report_fd, REPORT_SETUP_FAILED, e, 0, "network: handing the proxies over");
    return -1;
  }
  return 0;
}

/* The command runs on this stack until its execve; init is suspended
 * meanwhile (vfork semantics), so one static stack serves. */
static char command_stack[64 * 1024] __attribute__((aligned(16)));

static _Noreturn void init_main(const launch_plan *plan, int stdio[3], int report_fd,
                                int pty_sock, int proxy_sock, pid_t parent,
                                struct watched *watch_table) {
  watched = watch_table;
  bool pid_ns = (plan->clone_flags & CLONE_NEWPID) != 0;
  struct init_state st = {.command = -1, .watch_fd = -1, .plan = plan};
  st.limits.timer_fd = st.limits.proc_fd = -1;

  /* Handlers installed by the embedding program are not ours to run. */
  for (int s = 1; s < NSIG; s++)
    if (s != SIGKILL && s != SIGSTOP)
      signal(s, SIG_DFL);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT), sigaddset(&mask, SIGTERM), sigaddset(&mask, SIGHUP);
  sigaddset(&mask, SIGQUIT), sigaddset(&mask, SIGUSR1), sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGPIPE);
  sigprocmask(SIG_SETMASK, &mask, NULL);

  /* The supervisor's death ends the tree: in a pid namespace the kernel
   * kills everything with init; outside, SIGUSR1 makes init end it. */
  prctl(PR_SET_PDEATHSIG, pid_ns ? SIGKILL : SIGUSR1);
  if (!pid_ns && getppid() != parent)
    _exit(125);
  if (!pid_ns)
    prctl(PR_SET_CHILD_SUBREAPER, 1);

  /* The caller's keyrings are not the command's: a new, empty session
   * keyring (the keyring system calls are refused inside too: seccomp).
   * ENOSYS: a kernel without keys; EPERM: an outer seccomp (corral's own,
   * for corral inside corral) refuses them already, to both. */
  if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS &&
      errno != EPERM) {
    report_write(report_fd, REPORT_SETUP_FAILED, errno, 0, "keyring: join a new session keyring");
    _exit(125);
  }
  /* sync 2: the limits that need init's privilege in its namespaces, then
   * the adapter's setup inside init. */
  if (limits_init_apply(&plan->limits, report_fd) < 0)
    _exit(125);
  if (plan->init_setup && plan->init_setup(plan, report_fd) < 0)
    _exit(125);
  /* Init is a copy of the supervisor: its memory holds the caller's heap
   * and environment, its descriptors the report pipe.  Not dumpable, its
   * /proc entries (mem, environ, fd) and pidfd_getfd need CAP_SYS_PTRACE
   * over the host's user namespace, which nothing inside has; and its
   * argv and environment strings, which /proc/PID/cmdline shows to
   * anyone, are wiped (init uses neither). */
  if (launch_hide_self() < 0) {
    report_write(report_fd, REPORT_SETUP_FAILED, errno, 0, "init: make not dumpable");
    _exit(125);
  }

  if (plan->proxy && proxy_listen(proxy_sock, report_fd) < 0)
    _exit(125);
  if (plan->pty_inside && pty_inside(pty_sock, report_fd, stdio) < 0)
    _exit(125);

  /* Descriptors: stdio to 0-2 (via copies above 2, since they may overlap),
   * the report pipe kept, everything else from the supervisor closed. */
  int high[3];
  for (int i = 0; i < 3; i++)
    high[i] = move_fd_above(stdio[i], 10);
  report_fd = move_fd_above(report_fd, 10);
  for (int i = 0; i < 3; i++)
    dup2(high[i], i);
  int rfd = fcntl(report_fd, F_DUPFD_CLOEXEC, 3);
  syscall(SYS_close_range, 3U, (unsigned)rfd - 1, 0U);
  syscall(SYS_close_range, (unsigned)rfd + 1, ~0U, 0U);
  report_fd = rfd;

  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    report_write(report_fd, REPORT_SETUP_FAILED, errno, 0, "init: signalfd");
    _exit(125);
  }
  /* The watch lives in init, not the supervisor: tearing down an inotify
   * instance waits for an SRCU grace period, and init's exit is not waited
   * for once it has reported. */
  if (plan->nwatch) {
    st.watch_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (st.watch_fd < 0) {
      report_write(report_fd, REPORT_SETUP_FAILED, errno, 0,
                   errno == EMFILE ? "protected paths: inotify_init1 (the limit is "
                                     "fs.inotify.max_user_instances)"
                                   : "protected paths: inotify_init1");
      _exit(125);
    }
    for (size_t k = 0; k < plan->nwatch; k++) {
      /* Every path is absolute with a parent: the adapter made them. */
      char dir[PATH_MAX];
      const char *w = plan->watch[k];
      snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(w, '/') - w), w);
      if (lstat(w, &watched[k].was) < 0)
        watched[k].was.st_nlink = 0;
      /* The names of one directory come together: one watch serves them. */
      size_t dlen = strlen(dir);
      if (k > 0 && strncmp(plan->watch[k - 1], dir, dlen) == 0 &&
          strrchr(plan->watch[k - 1], '/') == plan->watch[k - 1] + dlen) {
        watched[k].wd = watched[k - 1].wd;
        continue;
      }
      /* Fail closed: an unwatched protected path could be planted. */
      if ((watched[k].wd = inotify_add_watch(st.watch_fd, dir,
                                             IN_CREATE | IN_MOVED_TO | IN_ONLYDIR)) < 0) {
        report_write(report_fd, REPORT_SETUP_FAILED, errno, 0,
                     errno == ENOSPC ? "protected paths: inotify watch (the limit is "
                                       "fs.inotify.max_user_watches)"
                                     : "protected paths: inotify watch");
        _exit(125);
      }
    }
  }

  /* After the setup: /proc is the sandbox's own.  Init takes the
   * command's RLIMIT_NPROC too, so that its probe sees the command's cap. */
  if (limits_watch_start(&st.limits, &plan->limits, report_fd) < 0)
    _exit(125);
  limits_init_nproc(&plan->limits);
  /* Last before the command: from here on init itself makes no link,
   * writes nothing by path and connects nowhere (it would wait on its own
   * answer).  Without the filter the run is not failed: its change report
   * compares every file instead, and it records no refusals. */
  int oom = limits_init_spawning();
  int links = plan->watch_links || plan->refusals ? calls_watch_start(plan->refusals != NULL) : -1;
  bool linked = false;

  /* sync 3: the command, spawned the way posix_spawn does it: no copy of
   * init's memory, and init resumes only after execve (or _exit). */
  struct command_start cs = {.plan = plan, .report_fd = report_fd};
  launch_pin_here(&cs.pin); /* init sleeps until the execve */
  pid_t pid = clone(command_main, command_stack + sizeof command_stack,
                    CLONE_VM | CLONE_VFORK | SIGCHLD, &cs);
  launch_unpin(&cs.pin);
  if (pid < 0) {
    report_write(report_fd, REPORT_SETUP_FAILED, errno, 0, "init: spawn of the command");
    _exit(125);
  }
  st.command = pid;
  limits_init_spawned(oom);
  if (cs.step == 's')
    ; /* command_setup reported the failed step itself */
  else if (cs.err)
    report_write(report_fd, REPORT_EXEC_FAILED, cs.err, 0, cs.step == 'c' ? "chdir" : "execve");
  else {
    /* Held until init wakes for something else: a short command's
     * launch and end then reach the supervisor in one write. */
    holding = true;
    report_write(report_fd, REPORT_LAUNCHED, 0, 0, NULL);
    if (links >= 0)
      report_write(report_fd, REPORT_LINKS, 1, 0, NULL);
  }
  /* Init keeps no copy of the command's stdio: EOF on the supervisor's
   * pipes must depend on the command's tree alone. */
  close(0), close(1), close(2);

  /* sync 4: supervise. */
  size_t ntree = 0; /* the run's processes in tree_pids, for the limits' watch */
  for (;;) {
    struct signalfd_siginfo si;
    struct pollfd pfd[4] = {{.fd = sfd, .events = POLLIN},
                            {.fd = st.watch_fd, .events = POLLIN},
                            {.fd = st.limits.timer_fd, .events = POLLIN},
                            {.fd = links, .events = POLLIN}};
    if (poll(pfd, 4, -1) < 0 && errno != EINTR)
      terminate_tree(&st, sfd, report_fd);
    if ((pfd[3].revents & POLLIN) &&
        (calls_watch_answer(links, plan->refusals) & CALL_LINK) && !linked) {
      linked = true;
      report_write(report_fd, REPORT_LINKS, 2, 0, NULL);
    }
    if (!(pfd[0].revents & POLLIN))
      report_release(report_fd); /* a look or a watch event: not the end */
    if (pfd[1].revents && check_protected(&st, report_fd))
      finish(&st, report_fd, true); /* no grace: stopped at once */
    if (pfd[2].revents) {
      if (limits_watch_rescan(&st.limits))
        ntree = list_tree(&st);
      limits_watch_tick(&st.limits, tree_pids, ntree);
    }
    if (st.limits.hit)
      finish(&st, report_fd, true); /* a limit crossed: no grace either */
    if (!(pfd[0].revents & POLLIN))
      continue;
    ssize_t r = read(sfd, &si, sizeof si);
    if (r != sizeof si) {
      if (r < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      terminate_tree(&st, sfd, report_fd);
    }
    /* In a pid namespace, a signal with a sender pid came from inside (the
     * supervisor's show none): the command may not end or steer its own
     * supervision. */
    if (pid_ns && si.ssi_signo != SIGCHLD && si.ssi_pid != 0)
      continue;
    switch (si.ssi_signo) {
    case SIGCHLD:
      reap(&st);
      if (st.command_done)
        finish(&st, report_fd, false);
      report_release(report_fd);
      break;
    case SIGUSR1:
      terminate_tree(&st, sfd, report_fd);
    case SIGPIPE:
      break;
    default:
      report_release(report_fd);
      /* To the command's process group (it is a session leader), as a
       * terminal delivers ^C: a shell's children get it too. */
      if (!st.command_done && kill(-st.command, (int)si.ssi_signo) < 0)
        kill(st.command, (int)si.ssi_signo);
      break;
    }
  }
}

/* ----------------------------------------------------------- supervisor */

int launch_start(const launch_plan *plan, int stdin_fd, int stdout_fd, int stderr_fd,
                 launch_child *child, corral_error *err) {
  int report[2], pty[2] = {-1, -1}, px[2] = {-1, -1};
  child->pid = -1;
  child->pidfd = -1;
  child->report_fd = -1;
  child->pty_sock = -1;
  child->proxy_sock = -1;
  if (plan->pty_inside && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pty) < 0)
    return error_sys(err, "creating the terminal's socket");
  if (plan->proxy && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, px) < 0) {
    int e = errno;
    if (pty[0] >= 0)
      close(pty[0]), close(pty[1]);
    errno = e;
    return error_sys(err, "creating the proxies' socket");
  }
  if (pipe2(report, O_CLOEXEC) < 0) {
    int e = errno;
    if (pty[0] >= 0)
      close(pty[0]), close(pty[1]);
    if (px[0] >= 0)
      close(px[0]), close(px[1]);
    errno = e;
    return error_sys(err, "creating the report pipe");
  }
  pid_t parent = getpid();
  int pidfd = -1;
  struct watched *table = calloc(plan->nwatch ? plan->nwatch : 1, sizeof *table);
  if (!table) {
    close(report[0]), close(report[1]);
    if (pty[0] >= 0)
      close(pty[0]), close(pty[1]);
    if (px[0] >= 0)
      close(px[0]), close(px[1]);
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  }
  /* sync 1 */
  pid_t pid = launch_clone3(plan->clone_flags, &pidfd);
  if (pid < 0) {
    int e = errno;
    free(table);
    close(report[0]), close(report[1]);
    if (pty[0] >= 0)
      close(pty[0]), close(pty[1]);
    if (px[0] >= 0)
      close(px[0]), close(px[1]);
    errno = e;
    return error_sys(err, "clone3 of the sandbox init (flags %#lx)", plan->clone_flags);
  }
  if (pid == 0) {
    int stdio[3] = {stdin_fd, stdout_fd, stderr_fd};
    close(report[0]);
    if (pty[0] >= 0)
      close(pty[0]);
    if (px[0] >= 0)
      close(px[0]);
    init_main(plan, stdio, report[1], pty[1], px[1], parent, table);
  }
  free(table); /* init has its own copy */
  close(report[1]);
  if (pty[1] >= 0)
    close(pty[1]);
  if (px[1] >= 0)
    close(px[1]);
  child->pty_sock = pty[0];
  child->proxy_sock = px[0];
  fcntl(report[0], F_SETFL, O_NONBLOCK);
  child->pid = pid;
  child->pidfd = pidfd;
  child->report_fd = report[0];
  return 0;
}

static void send_signal(const launch_child *child, int sig) {
  if (child->pidfd >= 0)
    syscall(SYS_pidfd_send_signal, child->pidfd, sig, NULL, 0);
}

void launch_terminate(const launch_child *child) { send_signal(child, SIGUSR1); }

static int pty_master(launch_child *child) {
  struct pollfd p = {.fd = child->pty_sock, .events = POLLIN};
  if (poll(&p, 1, 10000) <= 0)
    return -1;
  char byte, ctrl[CMSG_SPACE(sizeof(int))] __attribute__((aligned(8)));
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl,
                       .msg_controllen = sizeof ctrl};
  ssize_t r = recvmsg(child->pty_sock, &msg, MSG_CMSG_CLOEXEC);
  struct cmsghdr *c = r == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
  int fd = -1;
  if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
      c->cmsg_len == CMSG_LEN(sizeof(int)))
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

int launch_pty_receive(launch_child *child, int like, unsigned short rows, unsigned short cols) {
  if (child->pty_sock < 0)
    return -1;
  int master = pty_master(child);
  if (master >= 0) {
    launch_pty_shape(master, like, rows, cols);
    ssize_t ignored = send(child->pty_sock, "g", 1, MSG_NOSIGNAL); /* go */
    (void)ignored;
  }
  close(child->pty_sock);
  child->pty_sock = -1;
  return master;
}

void launch_pty_shape(int master, int like, unsigned short rows, unsigned short cols) {
  struct termios t;
  /* On Linux a master's modes are its slave's. */
  if (like >= 0 && tcgetattr(like, &t) == 0)
    tcsetattr(master, TCSANOW, &t);
  struct winsize ws = {.ws_row = rows ? rows : 24, .ws_col = cols ? cols : 80};
  if (like >= 0)
    ioctl(like, TIOCGWINSZ, &ws);
  ioctl(master, TIOCSWINSZ, &ws);
}

int launch_pty_host(int like, unsigned short rows, unsigned short cols, int *master, int *slave) {
  int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  char name[128];
  if (m < 0)
    return -1;
  int s = grantpt(m) == 0 && unlockpt(m) == 0 && ptsname_r(m, name, sizeof name) == 0
              ? open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)
              : -1;
  if (s < 0) {
    int e = errno;
    close(m);
    errno = e;
    return -1;
  }
  launch_pty_shape(m, like, rows, cols);
  *master = m;
  *slave = s;
  return 0;
}
void launch_signal(const launch_child *child, int sig) { send_signal(child, sig); }
/* Inits that reported but had not finished exiting; shared by every
 * runner, session manager and exec in the process, whatever thread. */
static pid_t deferred[64];
static size_t ndeferred;
static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;

static void reap_deferred_locked(void) {
  for (size_t i = 0; i < ndeferred;) {
    pid_t r = waitpid(deferred[i], NULL, WNOHANG);
    if (r == deferred[i] || (r < 0 && errno == ECHILD))
      deferred[i] = deferred[--ndeferred];
    else
      i++;
  }
}

void launch_reap_deferred(void) {
  pthread_mutex_lock(&deferred_lock);
  reap_deferred_locked();
  pthread_mutex_unlock(&deferred_lock);
}

void launch_reap_later(pid_t pid) {
  if (waitpid(pid, NULL, WNOHANG) == pid)
    return;
  pthread_mutex_lock(&deferred_lock);
  reap_deferred_locked();
  bool kept = ndeferred < ARRAY_SIZE(deferred);
  if (kept)
    deferred[ndeferred++] = pid;
  pthread_mutex_unlock(&deferred_lock);
  if (!kept)
    waitpid(pid, NULL, 0); /* never more than a bounded number of zombies */
}void launch_kill(const launch_child *child) { send_signal(child, SIGKILL); }
