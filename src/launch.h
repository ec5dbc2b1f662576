/*
 * launch.h — starting a command under corral's init, and the report that
 * comes back on a channel the command cannot write to.
 *
 * Every adapter launches the same way: the supervisor clones an init process
 * (with the adapter's namespace flags), the adapter's setup runs inside it,
 * and init forks the command.  Init reaps, forwards signals, ends the whole
 * tree on request, and writes fixed-size records on the report pipe, which
 * is close-on-exec so the command never holds it.
 */
#ifndef CORRAL_LAUNCH_H
#define CORRAL_LAUNCH_H

#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "corral.h"
#include "run_limits.h"

/* Records init (or the adapter's setup inside it) writes.  Each record is
 * written with one write() of less than PIPE_BUF bytes, so it is atomic. */
enum report_type {
  REPORT_LAUNCHED = 1,  /* the command's execve succeeded */
  REPORT_EXEC_FAILED,   /* value: errno; text: the step (`chdir`, `execve`) */
  REPORT_SETUP_FAILED,  /* value: errno; text: which step failed, and how */
  REPORT_DENIAL,        /* value: capability kind; text: the exact scope */
  REPORT_EXITED,        /* value: the command's wait status; aux: 1 if killed by init */
  REPORT_LIMIT,         /* value: corral_limit; aux: 1 if observed is an upper bound,
                           2 if no process could start; text: "<limit> <observed>" */
  REPORT_USAGE,         /* text: "<peak memory bytes> <cpu ms> <peak tasks>" */
  REPORT_LINKS,         /* value: 1 init hears the command's hard links, 2 one was made */
  REPORT_REFUSED,       /* value: capability kind, 0 for "more were dropped"; aux: how
                           many times; text: "<refusal_why> <op> <name length> <name>
                           <scope>" (refusals.c) */
};

#define REPORT_MAGIC 0x636f7272u /* "corr" */
#define REPORT_TEXT_MAX 480

struct report_record {
  uint32_t magic;
  uint32_t type;
  int32_t value;
  int32_t aux;
  char text[REPORT_TEXT_MAX];
};

/* What the observer of refused operations (refusals.c) checks a write or
 * a connection against: the plan's, borrowed from the adapter. */
struct refusal_plan {
  char **write_roots; /* writable, but for: */
  size_t nwrite_roots;
  char **read_only;   /* read-only inside them (--deny-write, carve-outs) */
  size_t nread_only;
  char **protected_names; /* a component of these below a root: protected metadata */
  size_t nprotected;
  char **secrets;     /* the secret stores (deny-read): never a grant's to open */
  size_t nsecrets;
  bool network_closed; /* nothing beyond loopback */
  bool network_filter; /* names only, through corral's proxy */
};
enum refusal_why {
  REFUSED_OUTSIDE = 1, /* a write outside the write roots */
  REFUSED_READ_ONLY,   /* a write to a read-only path inside them */
  REFUSED_PROTECTED,   /* a write to protected metadata */
  REFUSED_NET_CLOSED,  /* a connection with the network closed */
  REFUSED_NET_FILTER,  /* a connection not through the proxy */
  REFUSED_KERNEL,      /* a write to the kernel's own files (/proc, /sys) */
  REFUSED_SECRET,      /* a write in a secret store, covered in the sandbox */
};
#define REFUSALS_MAX 32        /* distinct records a run keeps; more are counted */
#define REFUSAL_SCOPE_MAX 400  /* a longer path is cut, and said to be */
#define REFUSAL_NAME_MAX 64

/* What the runner learns from the report, once the process tree is gone. */
typedef struct launch_report {
  bool readable;           /* false: malformed, or init ended without EXITED */
  bool launched;           /* a REPORT_LAUNCHED record arrived (init saw execve succeed) */
  bool adapter_launched;   /* set by an adapter's finish when the plan says it owns launch */
  bool exec_failed;
  int exec_errno;
  char exec_step[64];
  bool setup_failed;
  int setup_errno;
  char setup_step[REPORT_TEXT_MAX];
  bool exited;
  int wait_status;
  corral_denial denial;    /* first denial; owned strings */
  corral_limit_hit limit;  /* the limit that ended the run */
  bool limit_bound;        /* its observed value is an upper bound */
  bool limit_pids_full;    /* no process could start */
  corral_usage usage;
  char protected_paths[8][REPORT_TEXT_MAX]; /* protected paths the command created */
  size_t nprotected;
  bool links_heard;        /* init heard the command's hard links (refusals.c) */
  bool link_made;          /* and the command made one */
  struct launch_refusal {  /* what the sandbox refused (refusals.c) */
    int kind, why;         /* corral_capability_kind, enum refusal_why */
    long count;
    char op[16];
    char scope[REFUSAL_SCOPE_MAX];
    char name[REFUSAL_NAME_MAX];
  } refused[REFUSALS_MAX];
  size_t nrefused;
  long refused_dropped;
  char stderr_note[600];   /* appended to the command's stderr by the runner */
  char problem[256];       /* why the report is unreadable */
} launch_report;

void launch_report_free(launch_report *r);

/* The report's bytes as they arrive, bounded (a longer report is itself a
 * reason to distrust it). */
#define REPORT_MAX (256 * sizeof(struct report_record))
struct report_buf {
  char *data; /* REPORT_MAX bytes */
  size_t len;
  bool eof, overflow;
};
int report_buf_init(struct report_buf *rb); /* 0 or -ENOMEM */
void report_buf_free(struct report_buf *rb);
/* Reads what the non-blocking report pipe holds. */
void report_buf_read(struct report_buf *rb, int fd);
/* Has init said the tree is gone (REPORT_EXITED)?  Then nothing but init
 * itself is left, and its own exit (namespace and inotify teardown, which
 * can take milliseconds) need not be waited for. */
bool report_buf_exited(const struct report_buf *rb);

/* Reaps init later when it has reported but not finished exiting: tries
 * now, and again at the next call (no zombie outlives the next run). */
void launch_reap_later(pid_t pid);
void launch_reap_deferred(void);
/* Parses the records in buf[0..len); sets readable=false on garbage. */
void launch_report_parse(launch_report *r, const void *buf, size_t len);

/* May a write through a second name of a workspace file have gone
 * unheard by the change report?  Yes when the command made a hard link,
 * or when its links were not heard at all (refusals.c). */
bool launch_report_links_unsure(const struct report_buf *rb);
/* Has the command made a hard link (so far)? */
bool launch_report_link_made(const struct report_buf *rb);

/* In init, after the sandbox's setup: a seccomp filter, inherited by the
 * command, that hands init every link and linkat and, with `refusals`, the
 * calls that write by path or reach an address; its listener, or -1 with
 * errno (a kernel without user notifications, or a listener already
 * above: corral inside corral). */
int calls_watch_start(bool refusals);
enum { CALL_HEARD = 1, CALL_LINK = 2 };
/* Looks at the waiting call (against rp, when not NULL) and lets it go
 * on: 0 when none was waiting, else CALL_HEARD, with CALL_LINK for a link. */
int calls_watch_answer(int fd, const struct refusal_plan *rp);
/* The refusals heard, as REPORT_REFUSED records. */
void calls_watch_report(int report_fd);

/* Writes one record; async-signal-safe (used inside init). */
void report_write(int fd, enum report_type type, int value, int aux, const char *text);

struct launch_plan;
struct net_rules;
/* Adapter hooks.  `init_setup` runs inside init before the command is forked;
 * it must not allocate (the caller may be multithreaded) and reports failure
 * with REPORT_SETUP_FAILED before returning -1. */
typedef int (*launch_init_setup_fn)(const struct launch_plan *plan, int report_fd);
/* Runs in the command's process after the fork, before its execve, under
 * the same rules; for what must hold for the command but not for init
 * (the landlock-only adapter's domain, which init must stay outside of). */
typedef int (*launch_command_setup_fn)(const struct launch_plan *plan, int report_fd);


typedef struct launch_plan {
  char **argv;      /* owned: argv[0] is the command name as requested */
  size_t argc;
  char **envp;      /* owned: the complete environment */
  size_t envc;
  char *cwd;        /* owned */
  unsigned long clone_flags;    /* namespaces for init (CLONE_NEW*) */
  bool adapter_owns_launch;     /* only a LAUNCHED record says "launched" */
  bool tty;                     /* stdin is a terminal: make it the controlling one */
  /* The adapter builds a /dev of its own (with its own devpts), where a
   * terminal made inside has its /dev/pts/N name. */
  bool own_dev;
  /* Init makes the command's terminal in the sandbox's devpts and hands its
   * master over (launch_pty_receive); stdio given to launch_start is not
   * used.  Only with own_dev. */
  bool pty_inside;
  /* Network mode filter: init listens on the sandbox's loopback for the
   * proxies (proxy.h) and hands the listeners to the supervisor
   * (child->proxy_sock) before the command starts; these are the rules
   * the supervisor's proxy holds connections to (borrowed), NULL: none. */
  const struct net_rules *proxy;
  launch_init_setup_fn init_setup;
  launch_command_setup_fn command_setup; /* or NULL */
  /* Init is alone in a Landlock domain that scopes signals, the command's
   * domain nested in it: kill(-1) from init reaches exactly the command's
   * tree, and nothing in that tree can signal init. */
  bool init_scoped;
  /* Paths that must not be created (protected metadata that is missing):
   * init watches their directories with inotify, and a create, mkdir,
   * symlink or rename onto one kills the tree at once and is reported as a
   * protected_metadata denial with the path.  Borrowed from the adapter. */
  char **watch;
  size_t nwatch;
  /* Init hears the command's hard links (refusals.c); needs no_new_privs
   * set by the adapter's setup. */
  bool watch_links;
  /* And records the writes and connections the sandbox refuses, against
   * these (borrowed from the adapter); NULL: none. */
  const struct refusal_plan *refusals;
  struct run_limits limits;     /* all 0: none (run_limits.h) */
  void *adapter_data;           /* the adapter's, freed by its cleanup */
} launch_plan;

void launch_plan_free(launch_plan *plan);

/* clone3 with a pidfd (when pidfd is not NULL) and SIGCHLD; fork-like. */
pid_t launch_clone3(unsigned long flags, int *pidfd);

/* The calling thread held to the CPU it is on, across a clone whose parent
 * is about to sleep: the child inherits that and is queued there, where it
 * runs as soon as the parent sleeps.  Left to the kernel, a child on a busy
 * machine is queued on another CPU, and waits there for the running task's
 * slice to end (up to a tick: 4 ms at 250 Hz) — a wait at each hand-off.
 * Both take their CPUs back at once, the child as its first act
 * (launch_unpin).  Nothing when the thread may use only one CPU. */
struct launch_pin {
  cpu_set_t was;
  bool pinned;
};
void launch_pin_here(struct launch_pin *pin);
void launch_unpin(const struct launch_pin *pin);

typedef struct launch_child {
  pid_t pid;       /* init's pid, as the supervisor sees it */
  int pidfd;       /* signals go through this, never through pid */
  int report_fd;   /* read end of the report pipe, non-blocking */
  int pty_sock;    /* with pty_inside: where init hands the master over, else -1 */
  int proxy_sock;  /* with proxy: where init hands the listeners over, else -1 */
} launch_child;

/* Starts init with stdio on the given descriptors (not consumed).
 * Returns 0 or a negative code with err naming the step. */
int launch_start(const launch_plan *plan, int stdin_fd, int stdout_fd, int stderr_fd,
                 launch_child *child, corral_error *err);

/* With pty_inside: the master of the command's terminal, made by init in
 * the sandbox's devpts and shaped here (launch_pty_shape) before init lets
 * the command start; -1 when init ended first (its report says why) or
 * 10 s passed. */
int launch_pty_receive(launch_child *child, int like, unsigned short rows, unsigned short cols);
/* A terminal of the host's: master and slave, the slave with the modes of
 * `like` (a terminal, or -1) and the size of `like`, else rows x cols
 * (0: 24 x 80).  0 or -1 with errno. */
int launch_pty_host(int like, unsigned short rows, unsigned short cols, int *master, int *slave);
/* The modes and size of `like` (else rows x cols) on a terminal's master. */
void launch_pty_shape(int master, int like, unsigned short rows, unsigned short cols);

/* Asks init to end the whole tree: SIGTERM to every process, a grace period,
 * then SIGKILL.  Safe after init has exited (the pidfd says ESRCH). */
void launch_terminate(const launch_child *child);
/* Sends one of SIGINT, SIGTERM, SIGHUP, SIGQUIT to init, which forwards
 * it to the command. */
void launch_signal(const launch_child *child, int sig);
/* Last resort when init does not answer: SIGKILL init itself. */
void launch_kill(const launch_child *child);

/* Inside init (or its helpers): not dumpable, so no core, no /proc access
 * (mem, environ, fd) and no pidfd_getfd for anyone without CAP_SYS_PTRACE
 * over the host's user namespace; and the argv and environment strings
 * inherited from the supervisor, which /proc/PID/cmdline shows to anyone,
 * wiped.  0, or -1 with errno. */
int launch_hide_self(void);

/* Grace between SIGTERM and SIGKILL when a tree is ended. */
#define LAUNCH_GRACE_MS 200


#endif
