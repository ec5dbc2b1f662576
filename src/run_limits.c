/*
 * run_limits.c — defaults, parsing, and init's side of the limits (run_limits.h).
 */
#include "run_limits.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/sysinfo.h>
#include <sys/timerfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "internal.h"
#include "launch.h"

#define KIB 1024LL
#define MIB (1024LL * KIB)
#define GIB (1024LL * MIB)

/* Far above what a parallel build, a JVM or a Go test binary uses at once
 * (hundreds), far below the 32,768 pids of a default kernel: a fork or
 * thread bomb stops long before the host's pids run out. */
#define DEFAULT_PROCESSES 4096
/* Larger than any ordinary build output (a debug link of a very large
 * program is a few GiB); a runaway writer stops there. */
#define DEFAULT_FILE_SIZE (8 * GIB)

/* ------------------------------------------------------------ defaults */

/* A number from a small file of the caller's cgroup ("max": none). */
static int64_t read_limit_file(const char *path) {
  char buf[64];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  char *end;
  long long v = strtoll(buf, &end, 10);
  return end != buf && v > 0 ? (int64_t)v : 0;
}

/* The lowest memory limit on the way from the caller's cgroup to the root
 * (v2 memory.max, v1 memory.limit_in_bytes), 0 when none.  Allocates
 * nothing: init computes it (limits_plan leaves it to the first look). */
static int64_t cgroup_memory_limit(void) {
  char text[4096];
  int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
  ssize_t len = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
  if (fd >= 0)
    close(fd);
  if (len <= 0)
    return 0;
  text[len] = '\0';
  int64_t lowest = 0;
  for (char *line = text, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next)
      *next++ = '\0';
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || c2[1] != '/')
      continue;
    *c2 = '\0';
    const char *controllers = c1 + 1, *base, *file;
    if (!*controllers)
      base = "/sys/fs/cgroup", file = "memory.max";
    else if (strstr(controllers, "memory"))
      base = "/sys/fs/cgroup/memory", file = "memory.limit_in_bytes";
    else
      continue;
    char *dir = c2 + 1;
    for (;;) {
      char path[4400];
      snprintf(path, sizeof path, "%s%s/%s", base, strcmp(dir, "/") == 0 ? "" : dir, file);
      int64_t v = read_limit_file(path);
      /* v1 says "no limit" with a number near 2^63. */
      if (v > 0 && v < (INT64_C(1) << 60) && (!lowest || v < lowest))
        lowest = v;
      char *slash = strrchr(dir, '/');
      if (!slash || slash == dir)
        break;
      *slash = '\0';
    }
  }
  return lowest;
}

/* Half of what this process may use (the machine's memory, or its
 * cgroup's limit when lower): room for the agent and the rest of the
 * host, while a JVM or a large link still fits. */
static int64_t memory_half(void) {
  struct sysinfo si;
  int64_t total = sysinfo(&si) == 0 ? (int64_t)si.totalram * si.mem_unit : 0;
  int64_t cg = cgroup_memory_limit();
  if (cg && (!total || cg < total))
    total = cg;
  return total / 2;
}

static int64_t memory_default;
static pthread_once_t memory_once = PTHREAD_ONCE_INIT;
static void find_memory_default(void) { memory_default = memory_half(); }

int64_t limits_default(corral_limit which) {
  switch (which) {
  case CORRAL_LIMIT_PROCESSES:
    return DEFAULT_PROCESSES;
  case CORRAL_LIMIT_MEMORY:
    pthread_once(&memory_once, find_memory_default);
    return memory_default;
  case CORRAL_LIMIT_FILE_SIZE:
    return DEFAULT_FILE_SIZE;
  default: /* CPU time: a deadline bounds a run's time already; open files: the caller's */
    return 0;
  }
}

void limits_resolve(const int64_t policy[CORRAL_LIMIT_COUNT], int64_t out[CORRAL_LIMIT_COUNT]) {
  out[0] = 0;
  for (int i = 1; i < CORRAL_LIMIT_COUNT; i++)
    out[i] = policy[i] == CORRAL_LIMIT_NONE ? 0
             /* Reading the cgroup would cost every launch ~0.1 ms: init
              * finds the memory default at its first look. */
             : policy[i] == CORRAL_LIMIT_DEFAULT && i == CORRAL_LIMIT_MEMORY ? LIMITS_MEMORY_HALF
             : policy[i] == CORRAL_LIMIT_DEFAULT ? limits_default((corral_limit)i)
                                                 : policy[i];
}

int64_t limits_value(const int64_t v[CORRAL_LIMIT_COUNT], corral_limit which) {
  return which == CORRAL_LIMIT_MEMORY && v[which] == LIMITS_MEMORY_HALF ? limits_default(which)
                                                                        : v[which];
}

/* ------------------------------------------------------------- words */

int limits_parse(corral_limit which, const char *text, int64_t *out, const char **why) {
  if (strcmp(text, "none") == 0) {
    *out = CORRAL_LIMIT_NONE;
    return 0;
  }
  if (strcmp(text, "default") == 0) {
    *out = CORRAL_LIMIT_DEFAULT;
    return 0;
  }
  char *end;
  errno = 0;
  if (which == CORRAL_LIMIT_CPU_TIME) {
    double s = strtod(text, &end);
    if (end == text || *end || errno || !(s > 0 && s <= 1e9)) {
      *why = "expected a positive number of seconds, or `none`";
      return -EINVAL;
    }
    int64_t ms = (int64_t)(s * 1000);
    *out = (double)ms < s * 1000 ? ms + 1 : ms; /* up to a whole millisecond */
    return 0;
  }
  if (text[0] < '0' || text[0] > '9') {
    *why = which == CORRAL_LIMIT_MEMORY || which == CORRAL_LIMIT_FILE_SIZE
               ? "expected a size (512M, 2G, bytes), or `none`"
               : "expected a positive whole number, or `none`";
    return -EINVAL;
  }
  unsigned long long v = strtoull(text, &end, 10);
  long long unit = 1;
  if (which == CORRAL_LIMIT_MEMORY || which == CORRAL_LIMIT_FILE_SIZE) {
    static const char units[] = "KMGT";
    const char *u = *end ? strchr(units, *end & ~0x20) : NULL;
    if (u) {
      for (const char *p = units; p <= u; p++)
        unit *= 1024;
      end++;
      if (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0)
        end += strlen(end);
    }
  }
  if (*end || errno || v == 0 || v > (unsigned long long)(INT64_MAX / unit) ||
      (which != CORRAL_LIMIT_MEMORY && which != CORRAL_LIMIT_FILE_SIZE && v > INT32_MAX)) {
    *why = which == CORRAL_LIMIT_MEMORY || which == CORRAL_LIMIT_FILE_SIZE
               ? "expected a size (512M, 2G, bytes), or `none`"
               : "expected a positive whole number, or `none`";
    return -EINVAL;
  }
  *out = (int64_t)v * unit;
  return 0;
}

const char *limits_format(corral_limit which, int64_t v, char *buf, size_t size) {
  if (which == CORRAL_LIMIT_CPU_TIME)
    snprintf(buf, size, "%.3g s", (double)v / 1000);
  else if ((which == CORRAL_LIMIT_MEMORY || which == CORRAL_LIMIT_FILE_SIZE) && v >= GIB)
    snprintf(buf, size, "%.1f GiB", (double)v / (double)GIB);
  else if (which == CORRAL_LIMIT_MEMORY || which == CORRAL_LIMIT_FILE_SIZE)
    snprintf(buf, size, "%.1f MiB", (double)v / (double)MIB);
  else
    snprintf(buf, size, "%" PRId64, v);
  return buf;
}

void run_limits_words(const corral_limit_hit *hit, char *value, size_t vsize, char *seen,
                      size_t ssize) {
  limits_format(hit->which, hit->value, value, vsize);
  limits_format(hit->which, hit->observed, seen, ssize);
}

/* ------------------------------------------------------------- plans */

/* pid_max belongs to each pid namespace from Linux 6.14 on.  Before, the
 * file is the host's, which a root caller's init could write: never
 * written there. */
static bool pid_max_namespaced(void) {
  struct utsname u;
  int major = 0, minor = 0;
  if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2)
    return false;
  return major > 6 || (major == 6 && minor >= 14);
}

void limits_plan(struct run_limits *rl, const int64_t v[CORRAL_LIMIT_COUNT],
                 unsigned long clone_flags) {
  memset(rl, 0, sizeof *rl);
  memcpy(rl->v, v, sizeof rl->v);
  bool pid_ns = clone_flags & CLONE_NEWPID, user_ns = clone_flags & CLONE_NEWUSER;
  /* Outside a user namespace RLIMIT_NPROC counts every process of the
   * caller's on the host, not the run's; and it exempts real uid 0, which
   * the namespace's pid_max holds instead (for others it would add only a
   * launch cost). */
  rl->nproc = user_ns && getuid() != 0 && v[CORRAL_LIMIT_PROCESSES];
  rl->pid_max = pid_ns && !rl->nproc && v[CORRAL_LIMIT_PROCESSES] && pid_max_namespaced();
  rl->own_shm = pid_ns;
  cpu_set_t cpus; /* the CPUs the run may use: a system call, no file to read */
  int n = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  rl->ncpu = n > 0 ? n : 1;
  rl->clk_tck = sysconf(_SC_CLK_TCK);
  if (rl->clk_tck <= 0)
    rl->clk_tck = 100;
  rl->page_size = sysconf(_SC_PAGESIZE);
}

const char *limits_mechanism(const struct run_limits *rl, corral_limit which) {
  if (!rl->v[which])
    return "none";
  switch (which) {
  case CORRAL_LIMIT_PROCESSES:
    return rl->pid_max && rl->nproc ? "kernel (pid namespace's pid_max, RLIMIT_NPROC)"
           : rl->pid_max            ? "kernel (pid namespace's pid_max)"
           : rl->nproc              ? "kernel (RLIMIT_NPROC in the user namespace)"
                                    : "corral's watch of the run's processes";
  case CORRAL_LIMIT_MEMORY:
    return "corral's watch of the run's resident memory";
  case CORRAL_LIMIT_CPU_TIME:
    return "kernel (RLIMIT_CPU, each process) and corral's watch (the whole run)";
  case CORRAL_LIMIT_FILE_SIZE:
    return "kernel (RLIMIT_FSIZE)";
  case CORRAL_LIMIT_OPEN_FILES:
    return "kernel (RLIMIT_NOFILE)";
  }
  return "none";
}

/* ------------------------------------------------------ inside init */

static int write_small(const char *path, int64_t value) {
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%" PRId64 "\n", value);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t w = write(fd, buf, (size_t)n);
  int e = errno;
  close(fd);
  errno = e;
  return w == n ? 0 : -1;
}

int limits_init_spawning(void) {
  /* Opened before init's calls are watched (refusals.c): init must not
   * open a file for writing once they are, it would wait on itself. */
  return getpid() != 1 ? open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC) : -1;
}

void limits_init_spawned(int fd) {
  /* 0 again, as it was (not below the minimum it was given: that needs a
   * privilege) — where it can: without a pid namespace, init killed first
   * would leave no one to end the command's tree.  In one, init's /proc
   * entries are root's by now (it is not dumpable) and it stays preferred
   * with the command: there its death ends the whole namespace. */
  if (fd >= 0) {
    ssize_t w = write(fd, "0\n", 2);
    (void)w;
    close(fd);
  }
}

/* The lowest pid_max the kernel takes (RESERVED_PIDS + 1). */
#define PID_MAX_MIN 301

int limits_init_apply(const struct run_limits *rl, int report_fd) {
  /* The host's OOM killer takes the run's processes before anything of the
   * host's (the agent among them).  Raising one's own score needs no
   * privilege; the command inherits it, and init takes its own back once
   * the command runs (limits_init_spawned).  A command that lowers its own
   * again only undoes this for itself. */
  write_small("/proc/self/oom_score_adj", 1000);
  /* Init and its helpers (gone before the command starts, but their pids
   * may be taken still) are not the command's; the command gets the rest.
   * Below the kernel's minimum the watch holds the exact number.  Where the
   * file cannot be written (a container's read-only /proc/sys), the watch
   * holds it alone. */
  if (rl->pid_max) {
    int64_t want = rl->v[CORRAL_LIMIT_PROCESSES] + 3;
    if (want < PID_MAX_MIN)
      want = PID_MAX_MIN;
    if (want < 4194304 && write_small("/proc/sys/kernel/pid_max", want) < 0 && errno != EROFS &&
        errno != EACCES && errno != EPERM) {
      report_write(report_fd, REPORT_SETUP_FAILED, errno, 0,
                   "limits: the pid namespace's pid_max");
      return -1;
    }
  }
  return 0;
}

static void set_limit(int resource, rlim_t value, rlim_t hard_extra) {
  struct rlimit cur, want;
  if (getrlimit(resource, &cur) < 0)
    return;
  want.rlim_cur = value;
  want.rlim_max = value + hard_extra;
  /* Never above what the caller has: raising needs a privilege. */
  if (cur.rlim_max != RLIM_INFINITY && want.rlim_max > cur.rlim_max)
    want.rlim_max = cur.rlim_max;
  if (want.rlim_cur > want.rlim_max)
    want.rlim_cur = want.rlim_max;
  setrlimit(resource, &want);
}

void limits_init_nproc(const struct run_limits *rl) {
  /* Init is counted too: it shares the command's user in the namespace. */
  if (rl->nproc)
    set_limit(RLIMIT_NPROC, (rlim_t)rl->v[CORRAL_LIMIT_PROCESSES] + 1, 0);
}

void limits_command_apply(const struct run_limits *rl) {
  const int64_t *v = rl->v;
  if (v[CORRAL_LIMIT_FILE_SIZE])
    set_limit(RLIMIT_FSIZE, (rlim_t)v[CORRAL_LIMIT_FILE_SIZE], 0);
  if (v[CORRAL_LIMIT_OPEN_FILES])
    set_limit(RLIMIT_NOFILE, (rlim_t)v[CORRAL_LIMIT_OPEN_FILES], 0);
  /* One process alone: SIGXCPU a second past the limit (the watch ends the
   * run at the limit itself, and so says why), SIGKILL a second later. */
  if (v[CORRAL_LIMIT_CPU_TIME])
    set_limit(RLIMIT_CPU, (rlim_t)((v[CORRAL_LIMIT_CPU_TIME] + 999) / 1000 + 1), 1);
}

/* The exact memory of several processes: the proportional share of each
 * (Pss and SwapPss in /proc/PID/smaps_rollup: a page shared after a fork
 * counts once in all).  Reading it walks the process's page tables under
 * its memory lock, which the process can hold for as long as it likes: so
 * a helper, forked by init, reads it and writes the sum on a pipe, and
 * init waits for that at most EXACT_WAIT_MS.  A process whose share cannot
 * be read (not dumpable) counts with its resident size. */
#define EXACT_WAIT_MS 500

/* A small /proc file of a process, NUL-terminated; its length or -1. */
static ssize_t read_proc(int proc_fd, pid_t pid, const char *name, char *buf, size_t size) {
  char path[48];
  snprintf(path, sizeof path, "%d/%s", (int)pid, name);
  int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;
  if (fd >= 0)
    close(fd);
  if (n >= 0)
    buf[n] = '\0';
  return n;
}

static int64_t share_of(int proc_fd, pid_t pid, long page_size) {
  char buf[2048];
  ssize_t n = read_proc(proc_fd, pid, "smaps_rollup", buf, sizeof buf);
  if (n <= 0) {
    /* Not ours to read (a process that made itself not dumpable, or one
     * running a binary it cannot read): its resident size, never 0. */
    long long size, resident = 0;
    if (read_proc(proc_fd, pid, "statm", buf, sizeof buf) > 0)
      sscanf(buf, "%lld %lld", &size, &resident);
    return resident * page_size;
  }
  int64_t kb = 0;
  for (char *line = buf; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
    if (strncmp(line, "Pss:", 4) == 0 || strncmp(line, "SwapPss:", 8) == 0)
      kb += strtoll(strchr(line, ':') + 1, NULL, 10);
  return kb * 1024;
}

static void exact_start(struct limits_watch *w, const pid_t *pids, size_t n) {
  int p[2];
  if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
    return;
  pid_t h = fork();
  if (h == 0) {
    close(p[0]);
    int64_t sum = 0;
    for (size_t i = 0; i < n; i++)
      sum += share_of(w->proc_fd, pids[i], w->rl->page_size);
    ssize_t ignored = write(p[1], &sum, sizeof sum);
    (void)ignored;
    _exit(0);
  }
  close(p[1]);
  if (h < 0) {
    close(p[0]);
    return;
  }
  w->exact_pid = h;
  w->exact_fd = p[0];
  w->exact_started = mono_ms();
}

/* 1: *sum is the exact share; 0: not yet; -1: the helper is gone or took
 * too long (killed): only the upper bound is known. */
static void exact_abandon(struct limits_watch *w) {
  kill(w->exact_pid, SIGKILL); /* init's reap collects it */
  close(w->exact_fd);
  w->exact_fd = -1;
  w->exact_pid = 0;
}

static int exact_result(struct limits_watch *w, int64_t *sum) {
  ssize_t r = read(w->exact_fd, sum, sizeof *sum);
  int state = r == (ssize_t)sizeof *sum ? 1
              : (r == 0 || mono_ms() - w->exact_started > EXACT_WAIT_MS) ? -1
                                                                         : 0;
  if (state)
    exact_abandon(w);
  return state;
}

int limits_watch_start(struct limits_watch *w, const struct run_limits *rl, int report_fd) {
  memset(w, 0, sizeof *w);
  w->rl = rl;
  w->timer_fd = w->proc_fd = w->loadavg_fd = w->shm_fd = w->exact_fd = -1;
  w->memory = rl->v[CORRAL_LIMIT_MEMORY];
  const int64_t *v = rl->v;
  if (!v[CORRAL_LIMIT_PROCESSES] && !v[CORRAL_LIMIT_MEMORY] && !v[CORRAL_LIMIT_CPU_TIME])
    return 0;
  w->proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  w->last_pid = -1;
  w->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (w->proc_fd < 0 || w->timer_fd < 0) {
    report_write(report_fd, REPORT_SETUP_FAILED, errno, 0, "limits: watching the run");
    return -1;
  }
  struct itimerspec its = {.it_value = {0, 20 * 1000000L}};
  timerfd_settime(w->timer_fd, 0, &its, NULL);
  return 0;
}

struct sample {
  int64_t tasks, memory, cpu_ticks, shm;
};

/* Is the run's pid space full right now?  A process that cannot start a
 * child is the fact: a fork bomb churning below the cap (its processes
 * die as fast as new ones start) never shows the cap to a count.  Init
 * carries the same RLIMIT_NPROC as the command for this. */
static int probe_child(void *arg) {
  (void)arg;
  _exit(0);
}
static char probe_stack[16 * 1024] __attribute__((aligned(16)));

static bool pids_exhausted(void) {
  pid_t p = clone(probe_child, probe_stack + sizeof probe_stack, CLONE_VM | CLONE_VFORK | SIGCHLD,
                  NULL);
  if (p < 0)
    return errno == EAGAIN;
  waitpid(p, NULL, __WALL);
  return false;
}

/* The resident pages of a process as one of its live threads (not the
 * leader) shows them: rss is the whole memory's. */
static long long thread_rss(int proc_fd, pid_t pid) {
  char path[48], buf[1024];
  snprintf(path, sizeof path, "%d/task", (int)pid);
  int dfd = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return 0;
  struct dir_iter it;
  dir_start(&it, dfd);
  long long rss = 0;
  for (const char *name; (name = dir_next(&it, NULL)) && !rss;) {
    if (strtol(name, NULL, 10) == pid)
      continue;
    snprintf(path, sizeof path, "%s/stat", name);
    int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
      close(fd);
    if (n <= 0)
      continue;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    for (int i = 2; p && i < 24; i++) /* to field 24 */
      p = strchr(p + 1, ' ');
    rss = p ? strtoll(p + 1, NULL, 10) : 0;
  }
  close(dfd);
  return rss;
}

/* The stat files of the first processes stay open between looks (a read
 * at offset 0 makes a fresh one): an idle run's look opens nothing. */
#define CACHED_STATS 256
static int stat_fd[CACHED_STATS];
static pid_t stat_pid[CACHED_STATS];

static void stat_cache_reset(void) {
  for (size_t i = 0; i < CACHED_STATS; i++) {
    if (stat_pid[i] > 0)
      close(stat_fd[i]);
    stat_pid[i] = 0;
  }
}

/* /proc/PID/stat: fields after the command name, which may hold spaces
 * and parentheses (so the last ')' ends it).  false: the process is gone
 * (a cached file of a reaped process says ESRCH, also when its pid has
 * been taken again). */
static bool add_process(int proc_fd, size_t slot, pid_t pid, struct sample *s, long page_size) {
  char path[32], buf[1024];
  int fd = slot < CACHED_STATS && stat_pid[slot] == pid ? stat_fd[slot] : -1;
  if (fd < 0) {
    snprintf(path, sizeof path, "%d/stat", (int)pid);
    if ((fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC)) < 0)
      return false;
    if (slot < CACHED_STATS) {
      if (stat_pid[slot] > 0)
        close(stat_fd[slot]);
      stat_fd[slot] = fd;
      stat_pid[slot] = pid;
    }
  }
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (slot >= CACHED_STATS)
    close(fd);
  if (n <= 0)
    return false;
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  if (!p)
    return true;
  p++;
  /* Field 3 is the state; 14-17 utime stime cutime cstime; 20 threads; 24 rss. */
  long long f[25] = {0};
  char state = 0;
  for (int i = 3; i <= 24 && *p; i++) {
    while (*p == ' ')
      p++;
    char *end;
    if (i == 3)
      state = *p;
    else
      f[i] = strtoll(p, &end, 10);
    while (*p && *p != ' ')
      p++;
  }
  /* A leader that exited while its other threads run shows no memory: the
   * memory is theirs to show. */
  if (state == 'Z' && f[20] > 1)
    f[24] = thread_rss(proc_fd, pid);
  s->tasks += f[20] > 0 ? f[20] : 1;
  s->cpu_ticks += f[14] + f[15] + f[16] + f[17];
  if (f[24] > 0)
    s->memory += f[24] * page_size;
  return true;
}

/* The last pid the namespace handed out, from /proc/loadavg as init reads
 * it (its own pid namespace's): unchanged, nothing was started since the
 * last look, and the list of processes can be kept.  -1 when unknown. */
static long last_pid(int fd) {
  char buf[128];
  ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  const char *sp = strrchr(buf, ' ');
  return sp ? strtol(sp + 1, NULL, 10) : -1;
}

/* What only a look needs is opened at the first one: most commands end
 * before it, and the launch does not pay for it. */
static void first_look(struct limits_watch *w) {
  w->looked = true;
  if (w->memory == LIMITS_MEMORY_HALF)
    w->memory = memory_half();
  /* Outside a pid namespace the last pid is the host's: no use. */
  if (getpid() == 1)
    w->loadavg_fd = openat(w->proc_fd, "loadavg", O_RDONLY | O_CLOEXEC);
  if (w->rl->own_shm)
    w->shm_fd = open("/dev/shm", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

bool limits_watch_rescan(struct limits_watch *w) {
  if (!w->looked)
    first_look(w);
  long last = last_pid(w->loadavg_fd);
  bool again = w->rescan || last < 0 || last != w->last_pid;
  w->last_pid = last;
  w->rescan = false;
  return again;
}

static int64_t rusage_ms(const struct rusage *ru) {
  return (int64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000 +
         (ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1000;
}

/* How fast memory can grow, for the next look: fresh pages touched (a
 * burst faster than this passes the limit by what it makes until the next
 * look, at most TICK_MAX_MS later; past half the machine's memory, the OOM
 * killer's preference for the run is what is left). */
#define MEMORY_RATE_PER_MS (4 * MIB)
#define TICK_MIN_MS 10
/* With the kernel capping processes, nothing but memory and CPU time is
 * urgent; the watch alone must catch a fork bomb sooner. */
#define TICK_MAX_MS 2000
#define TICK_MAX_UNCAPPED_MS 100

/* The process limit, from a count of processes (n, before their threads
 * are read: a fork bomb is ended without reading thousands of files) or of
 * tasks.  With the kernel holding the cap, the count may stay below it
 * while the pid space is full: then a probe says so. */
static bool processes_crossed(struct limits_watch *w, int64_t count) {
  int64_t max = w->rl->v[CORRAL_LIMIT_PROCESSES];
  if (!max)
    return false;
  if (count >= max)
    return true;
  w->pids_full = (w->rl->pid_max || w->rl->nproc) && count >= max / 4 && pids_exhausted();
  return w->pids_full;
}

static void crossed(struct limits_watch *w, corral_limit which, int64_t observed) {
  w->hit = which;
  w->observed = observed;
}

void limits_watch_tick(struct limits_watch *w, const pid_t *pids, size_t n) {
  const struct run_limits *rl = w->rl;
  const int64_t *v = rl->v;
  uint64_t expirations;
  if (w->hit || (read(w->timer_fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN))
    return;
  if ((int64_t)n > w->peak_tasks)
    w->peak_tasks = (int64_t)n;
  if (processes_crossed(w, (int64_t)n)) {
    crossed(w, CORRAL_LIMIT_PROCESSES, (int64_t)n);
    return;
  }
  struct sample s = {0};
  for (size_t i = 0; i < n; i++)
    if (!add_process(w->proc_fd, i, pids[i], &s, rl->page_size))
      w->rescan = true; /* one went: the next look lists them again */
  if (s.tasks > w->peak_tasks)
    w->peak_tasks = s.tasks;
  if (s.tasks > (int64_t)n && processes_crossed(w, s.tasks)) {
    crossed(w, CORRAL_LIMIT_PROCESSES, s.tasks);
    return;
  }
  struct statfs sf;
  if (w->shm_fd >= 0 && fstatfs(w->shm_fd, &sf) == 0)
    s.shm = (int64_t)(sf.f_blocks - sf.f_bfree) * sf.f_bsize;
  s.memory += s.shm;
  if (s.memory > w->peak_memory)
    w->peak_memory = s.memory;
  /* The sum of resident sizes counts a page that several processes share
   * after a fork in each of them: with more than one, only an upper bound.
   * Past the limit it is made exact (exact_start) before it ends the run,
   * unless the exact share cannot be had in time: then the bound decides,
   * and the host is safe either way. */
  bool memory_crossed = w->memory && s.memory > w->memory, exact_pending = false;
  bool bound = n > 1; /* one process: its resident size is its own */
  if (memory_crossed && bound) {
    if (w->exact_fd < 0)
      exact_start(w, pids, n);
    int64_t exact;
    int got = w->exact_fd >= 0 ? exact_result(w, &exact) : -1; /* no helper: the bound */
    if (got == 1)
      s.memory = exact + s.shm, bound = false;
    exact_pending = got == 0;
    memory_crossed = !exact_pending && s.memory > w->memory;
  } else if (w->exact_fd >= 0) {
    exact_abandon(w); /* below the limit again: its answer is moot */
  }
  struct rusage ru;
  int64_t cpu = s.cpu_ticks * 1000 / rl->clk_tck;
  if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
    cpu += rusage_ms(&ru);
  w->last_cpu_ms = cpu;
  if (memory_crossed) {
    w->observed_bound = bound;
    return crossed(w, CORRAL_LIMIT_MEMORY, s.memory);
  }
  if (v[CORRAL_LIMIT_CPU_TIME] && cpu >= v[CORRAL_LIMIT_CPU_TIME])
    return crossed(w, CORRAL_LIMIT_CPU_TIME, cpu);
  /* The next look comes before the nearest limit could have been reached;
   * with the watch alone holding the process count, at once while it grows
   * (a fork bomb gets one look's time, not many). */
  bool capped = rl->pid_max || rl->nproc || !v[CORRAL_LIMIT_PROCESSES];
  int64_t next = capped ? TICK_MAX_MS : s.tasks > w->last_tasks ? TICK_MIN_MS : TICK_MAX_UNCAPPED_MS;
  w->last_tasks = s.tasks;
  if (w->memory) {
    int64_t ms = (w->memory - s.memory) / MEMORY_RATE_PER_MS;
    if (ms < next)
      next = ms;
  }
  if (v[CORRAL_LIMIT_CPU_TIME]) {
    int64_t ms = (v[CORRAL_LIMIT_CPU_TIME] - cpu) / rl->ncpu;
    if (ms < next)
      next = ms;
  }
  if (next < TICK_MIN_MS || exact_pending)
    next = TICK_MIN_MS;
  struct itimerspec its = {.it_value = {next / 1000, (next % 1000) * 1000000L}};
  timerfd_settime(w->timer_fd, 0, &its, NULL);
}

void limits_report(struct limits_watch *w, bool killed_by_signal, int report_fd) {
  char text[96];
  /* Every process is reaped now: the children's usage is the run's. */
  struct rusage ru;
  int64_t cpu = w->last_cpu_ms, peak = w->peak_memory;
  if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
    if (rusage_ms(&ru) > cpu)
      cpu = rusage_ms(&ru);
    if ((int64_t)ru.ru_maxrss * 1024 > peak)
      peak = (int64_t)ru.ru_maxrss * 1024;
  }
  /* A command that RLIMIT_CPU ended between two looks: the kernel's count
   * of what the run used is the fact (the signal that ended it is not: a
   * process can send itself SIGXCPU). */
  if (!w->hit && w->rl->v[CORRAL_LIMIT_CPU_TIME] && cpu >= w->rl->v[CORRAL_LIMIT_CPU_TIME] &&
      killed_by_signal) {
    w->hit = CORRAL_LIMIT_CPU_TIME;
    w->observed = cpu;
  }
  if (w->hit) {
    snprintf(text, sizeof text, "%" PRId64 " %" PRId64,
             w->hit == CORRAL_LIMIT_MEMORY ? w->memory : w->rl->v[w->hit], w->observed);
    report_write(report_fd, REPORT_LIMIT, (int)w->hit,
                 (w->observed_bound ? 1 : 0) | (w->pids_full ? 2 : 0), text);
  }
  snprintf(text, sizeof text, "%" PRId64 " %" PRId64 " %" PRId64, peak, cpu,
           w->peak_tasks ? w->peak_tasks : 1);
  report_write(report_fd, REPORT_USAGE, 0, 0, text);
  if (w->timer_fd >= 0)
    close(w->timer_fd);
  if (w->proc_fd >= 0)
    close(w->proc_fd);
  if (w->loadavg_fd >= 0)
    close(w->loadavg_fd);
  if (w->shm_fd >= 0)
    close(w->shm_fd);
  if (w->exact_fd >= 0)
    close(w->exact_fd);
  stat_cache_reset();
  w->timer_fd = w->proc_fd = w->loadavg_fd = w->shm_fd = -1;
}
