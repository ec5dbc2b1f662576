/*
 * run_limits.h — the limits on a run (processes, memory, CPU time, file size,
 * open files): their defaults, and how corral's init holds the run to them.
 *
 * Mechanisms, from the kernel's own walls to init's watch:
 *  - processes: the pid namespace's own pid_max (Linux 6.14 and later: no
 *    pid above it can be allocated in the namespace, for root too), and
 *    RLIMIT_NPROC where the kernel counts it per user namespace (a caller
 *    other than root: it exempts real uid 0);
 *  - file size, open files and each process's CPU time: rlimits, set in
 *    the command's process before its execve (inherited by all it starts;
 *    a hard limit cannot be raised without CAP_SYS_RESOURCE, which nothing
 *    inside has);
 *  - the whole run's memory, CPU time and process count: init samples the
 *    run's processes (/proc/PID/stat, which no process can hold up) on a
 *    timer whose period shrinks as a limit comes near, and ends the whole
 *    run when one is crossed (memory made exact first by a helper, which a
 *    process can hold up: then the upper bound decides).  The kernel's
 *    OOM killer is also told to prefer the run's processes to the host's.
 * Init reports a crossing (REPORT_LIMIT) and, at the end, what the run used
 * (REPORT_USAGE) on the report channel, which the command cannot write.
 */
#ifndef CORRAL_RUN_LIMITS_H
#define CORRAL_RUN_LIMITS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "corral.h"

/* What init enforces for one run; made by the supervisor (limits_plan). */
struct run_limits {
  int64_t v[CORRAL_LIMIT_COUNT]; /* by corral_limit; 0: none */
  bool pid_max;  /* write the pid namespace's pid_max (a pid namespace, 6.14+, root) */
  bool nproc;    /* RLIMIT_NPROC counts only the run (a user namespace, not root) */
  bool own_shm;  /* /dev/shm is the sandbox's tmpfs: its use counts as memory */
  int ncpu;      /* CPUs online: how fast CPU time can grow */
  long clk_tck;  /* /proc's unit of CPU time */
  long page_size;
};

/* ---------------------------------------------------------- supervisor */

/* The built-in default of a limit (0: none); README: Limits says why. */
int64_t limits_default(corral_limit which);
/* A policy's values (CORRAL_LIMIT_DEFAULT / _NONE / a value) made final,
 * but for the memory default, which stays LIMITS_MEMORY_HALF: init works
 * it out (limits_default's value) off the launch's path. */
#define LIMITS_MEMORY_HALF (-2)
void limits_resolve(const int64_t policy[CORRAL_LIMIT_COUNT], int64_t out[CORRAL_LIMIT_COUNT]);
/* A resolved limit's value for people (LIMITS_MEMORY_HALF worked out). */
int64_t limits_value(const int64_t v[CORRAL_LIMIT_COUNT], corral_limit which);
/* Parses a limit as a person writes it: "none", "default", or a value —
 * a count, bytes with an optional K/M/G/T suffix (powers of 1024), or
 * seconds (decimals allowed) for cpu_time.  0, or -EINVAL with `why`. */
int limits_parse(corral_limit which, const char *text, int64_t *out, const char **why);
/* A value as a person reads it ("512 MiB", "30 s", "4096"); returns buf. */
const char *limits_format(corral_limit which, int64_t value, char *buf, size_t size);
/* The policy file's key for a limit ("cpuTime"); policy.c. */
const char *limits_json_key(corral_limit which);
/* A crossing's limit and observed value in words, for messages. */
void run_limits_words(const corral_limit_hit *hit, char *value, size_t vsize, char *seen,
                      size_t ssize);
/* The plan for a launch with these namespaces. */
void limits_plan(struct run_limits *rl, const int64_t v[CORRAL_LIMIT_COUNT],
                 unsigned long clone_flags);
/* What enforces a limit under such a plan, in words. */
const char *limits_mechanism(const struct run_limits *rl, corral_limit which);

/* ---------------------------------------------------- inside init (no malloc) */

/* First thing in init: the pid namespace's pid_max, and the OOM killer's
 * preference.  0, or -1 after reporting the failed step. */
int limits_init_apply(const struct run_limits *rl, int report_fd);
/* In init once the command is spawned: its own OOM preference given back,
 * through what limits_init_spawning opened before. */
int limits_init_spawning(void);
void limits_init_spawned(int fd);
/* In init before the command starts: RLIMIT_NPROC (inherited by it). */
void limits_init_nproc(const struct run_limits *rl);
/* In the command's process before execve: the other rlimits. */
void limits_command_apply(const struct run_limits *rl);

struct limits_watch {
  const struct run_limits *rl;
  int timer_fd;  /* -1 when nothing is watched */
  int proc_fd;   /* /proc as init sees it */
  int loadavg_fd; /* its /proc/loadavg (in a pid namespace), or -1 */
  int shm_fd;     /* the sandbox's own /dev/shm (O_PATH), or -1 */
  long last_pid;  /* the namespace's last pid at the last look */
  bool rescan;    /* a process went: list them again */
  bool looked;    /* the first look was made (what it opens is open) */
  int64_t memory; /* the memory limit (the default worked out at the first look) */
  int64_t peak_memory, peak_tasks, last_cpu_ms;
  corral_limit hit; /* 0 until a limit is crossed */
  int64_t observed;
  bool observed_bound; /* observed is an upper bound (the exact one could not be had) */
  bool pids_full;      /* the probe found the pid space full */
  int64_t last_tasks;  /* at the last look */
  pid_t exact_pid;      /* the helper reading the exact memory (run_limits.c), or 0 */
  int exact_fd;         /* its answer, or -1 */
  int64_t exact_started;
};

/* Opens the timer (when a limit needs watching).  0, or -1 after reporting. */
int limits_watch_start(struct limits_watch *w, const struct run_limits *rl, int report_fd);
/* Must the run's processes be listed again before the next look (some
 * started, or one went)?  The first time, always. */
bool limits_watch_rescan(struct limits_watch *w);
/* One look at the run's processes (pids[0..n), init not among them): the
 * peaks, and w->hit when a limit is crossed; re-arms the timer. */
void limits_watch_tick(struct limits_watch *w, const pid_t *pids, size_t n);
/* Writes REPORT_LIMIT (when crossed) and REPORT_USAGE, once the tree is
 * gone; killed_by_signal: the command ended by a signal. */
void limits_report(struct limits_watch *w, bool killed_by_signal, int report_fd);

#endif
