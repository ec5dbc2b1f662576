/*
 * corral.h — run commands inside a sandbox and say honestly what happened.
 *
 * One public header. Everything exported is prefixed `corral_`.
 *
 * Conventions (as in libuv):
 *  - Fallible functions return 0 (or a count) on success and a negative
 *    errno-style code on failure; `corral_strerror()` names the code.  Those
 *    that take a `corral_error *err` (always last) also fill it with a message
 *    that says what corral was doing, e.g. "decoding request: field `mode`:
 *    unknown value `batch`".  `err` may be NULL.
 *  - Plain data (the execution contract) lives in public structs with an
 *    `_init` / `_free` pair.  Strings inside them are owned by the struct and
 *    freed by its `_free`; the setters below copy what they are given.
 *  - Objects with behaviour (adapters, cancellation) are opaque, with
 *    `_new` / `_free` pairs.
 *  - Times are milliseconds in int64_t.
 *
 * Threads and the process:
 *  - corral_run may run in several threads at once; an adapter is not
 *    changed by a run and may be shared by them.  A session manager
 *    (corral_sessions) belongs to one thread at a time: call its functions
 *    from one thread (several managers may live in several threads).
 *  - Each run or session starts a child of this process (the sandbox's
 *    init): SIGCHLD is delivered for it, and corral reaps it by its pid or
 *    pidfd.  A SIGCHLD handler of the embedding program must reap only its
 *    own children (waitpid with their pids, never -1), or corral loses the
 *    status it reports.  corral installs no signal handler.
 *  - SIGPIPE is blocked in the calling thread while corral_run runs and
 *    while a manager writes to a command's stdin, and one raised there is
 *    taken before the mask is restored: a command that closes its input
 *    cannot end the embedding program.
 */
#ifndef CORRAL_H
#define CORRAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CORRAL_EXTERN __attribute__((visibility("default")))
#else
#define CORRAL_EXTERN
#endif

#define CORRAL_VERSION_MAJOR 0
#define CORRAL_VERSION_MINOR 1
#define CORRAL_VERSION_PATCH 0
#define CORRAL_VERSION_STRING "0.1.0"

CORRAL_EXTERN const char *corral_version(void);

/* ------------------------------------------------------------------ errors */

/* Error codes are negative errno values; these add corral's own. */
#define CORRAL_EBADJSON (-4001)  /* input is not JSON, or not the expected shape */
#define CORRAL_EINVALID (-4002)  /* a request/outcome breaks a validation rule */
#define CORRAL_ENOADAPTER (-4003) /* no adapter can enforce this request */
#define CORRAL_EREPORT (-4004)   /* an adapter's report could not be read */
#define CORRAL_ESETUP (-4005)    /* a sandbox setup step failed */

typedef struct corral_error {
  int code;          /* negative code, 0 when no error was recorded */
  int sys_errno;     /* errno of the failing system call, or 0 */
  char message[1024];
} corral_error;

CORRAL_EXTERN const char *corral_strerror(int code);

/* ---------------------------------------------------------- the contract */

/* Every enum starts at 1 so that 0 always means "not set" (invalid). */
typedef enum corral_origin {
  CORRAL_ORIGIN_INTERACTIVE_COMMAND = 1,
  CORRAL_ORIGIN_HOOK,
  CORRAL_ORIGIN_PLUGIN,
  CORRAL_ORIGIN_MCP_SERVER,
  CORRAL_ORIGIN_BACKGROUND_TASK,
} corral_origin;

typedef enum corral_mode {
  CORRAL_MODE_CAPTURED = 1,
  CORRAL_MODE_INTERACTIVE,
  CORRAL_MODE_DURABLE,
} corral_mode;

typedef enum corral_capability_kind {
  CORRAL_CAP_FILESYSTEM_READ = 1,
  CORRAL_CAP_WORKSPACE_WRITE,
  CORRAL_CAP_PROTECTED_METADATA,
  CORRAL_CAP_EXTERNAL_NETWORK,
  CORRAL_CAP_ISOLATED_LOOPBACK,
  CORRAL_CAP_HOST_VISIBLE_BINDING,
  CORRAL_CAP_PROCESS_SPAWN,
  CORRAL_CAP_PROCESS_CONTROL,
  CORRAL_CAP_ENVIRONMENT,
  CORRAL_CAP_UNRESTRICTED,
} corral_capability_kind;

/* States the lifecycle knows.  The first six are outcomes; the last four
 * are steps before launch and are never valid as an outcome. */
typedef enum corral_state {
  CORRAL_STATE_COMPLETED = 1,
  CORRAL_STATE_DENIED,
  CORRAL_STATE_FAILED,
  CORRAL_STATE_CANCELLED,
  CORRAL_STATE_RUNNING,
  CORRAL_STATE_RETAINED,
  CORRAL_STATE_REQUESTED,
  CORRAL_STATE_EVALUATED,
  CORRAL_STATE_AWAITING_APPROVAL,
  CORRAL_STATE_PREPARED,
} corral_state;

typedef enum corral_kind {
  CORRAL_KIND_RUNNING = 1,
  CORRAL_KIND_SUCCESS,
  CORRAL_KIND_POLICY_DENIED,
  CORRAL_KIND_ENFORCEMENT_DENIED,
  CORRAL_KIND_APPLICATION_FAILURE,
  CORRAL_KIND_SANDBOX_SETUP_FAILURE,
  CORRAL_KIND_EXECUTABLE_NOT_FOUND,
  CORRAL_KIND_CANCELLED,
  CORRAL_KIND_TIMED_OUT,
  CORRAL_KIND_ENFORCEMENT_DEGRADED,
} corral_kind;

typedef enum corral_denial_source {
  CORRAL_SOURCE_CONFIGURED_POLICY = 1,
  CORRAL_SOURCE_PLATFORM_SANDBOX,
  CORRAL_SOURCE_APPROVAL,
} corral_denial_source;

typedef enum corral_next_action {
  CORRAL_NEXT_NONE = 1,
  CORRAL_NEXT_REQUEST_APPROVAL,
  CORRAL_NEXT_CHANGE_COMMAND,
  CORRAL_NEXT_ENABLE_SANDBOX,
} corral_next_action;

typedef enum corral_level {
  CORRAL_LEVEL_NATIVE = 1,
  CORRAL_LEVEL_DEGRADED,
  CORRAL_LEVEL_DISABLED,
} corral_level;

typedef enum corral_change_kind {
  CORRAL_CHANGE_CREATED = 1,
  CORRAL_CHANGE_MODIFIED,
  CORRAL_CHANGE_DELETED,
} corral_change_kind;

/* Which name table to use with corral_enum_name / corral_enum_parse. */
typedef enum corral_enum {
  CORRAL_ENUM_ORIGIN = 1,
  CORRAL_ENUM_MODE,
  CORRAL_ENUM_CAPABILITY,
  CORRAL_ENUM_STATE,
  CORRAL_ENUM_KIND,
  CORRAL_ENUM_SOURCE,
  CORRAL_ENUM_NEXT_ACTION,
  CORRAL_ENUM_LEVEL,
  CORRAL_ENUM_CHANGE,
  CORRAL_ENUM_LIMIT,
} corral_enum;

/* The contract's JSON spelling of a value ("interactive_command"), or NULL
 * when the value is not in the table.  The string is static. */
CORRAL_EXTERN const char *corral_enum_name(corral_enum which, int value);
/* The value for a JSON spelling, or 0 when unknown. */
CORRAL_EXTERN int corral_enum_parse(corral_enum which, const char *name);

/* The limits on a run (policy: `limits`; outcome: `limit`).  JSON names:
 * "processes", "memory", "cpu_time", "file_size", "open_files". */
typedef enum corral_limit {
  CORRAL_LIMIT_PROCESSES = 1, /* processes and threads at once, the whole run */
  CORRAL_LIMIT_MEMORY,        /* bytes resident, the whole run */
  CORRAL_LIMIT_CPU_TIME,      /* milliseconds of CPU, the whole run */
  CORRAL_LIMIT_FILE_SIZE,     /* bytes, any one file written */
  CORRAL_LIMIT_OPEN_FILES,    /* descriptors, each process */
} corral_limit;
#define CORRAL_LIMIT_COUNT 6 /* one more than the last value: arrays indexed by it */

typedef struct corral_capability {
  corral_capability_kind kind;
  char *scope; /* owned; may be NULL */
} corral_capability;

typedef struct corral_request {
  corral_origin origin;
  corral_mode mode;
  char *name;          /* command.name: program to run (searched in PATH) */
  char **args;         /* command.args: arguments after the name */
  size_t nargs;
  char **env;          /* command.env: the whole environment, "KEY=VALUE" */
  size_t nenv;
  bool env_set;        /* false: inherit the caller's environment */
  char *working_directory;
  char **workspace_roots;
  size_t nroots;
  corral_capability *capabilities;
  size_t ncapabilities;
  char *approval_session_id;     /* approval.sessionId, may be NULL */
  long approval_policy_version;  /* approval.policyVersion (zero's is 1) */
  bool approval_set;             /* an approval object was given */
} corral_request;

CORRAL_EXTERN void corral_request_init(corral_request *req);
CORRAL_EXTERN void corral_request_free(corral_request *req);
/* Setters copy their arguments. Return 0 or -ENOMEM. */
CORRAL_EXTERN int corral_request_set_command(corral_request *req, const char *name,
                                             const char *const *args, size_t nargs);
CORRAL_EXTERN int corral_request_set_env(corral_request *req, const char *const *env,
                                         size_t nenv);
CORRAL_EXTERN int corral_request_set_working_directory(corral_request *req, const char *dir);
CORRAL_EXTERN int corral_request_add_workspace_root(corral_request *req, const char *root);
CORRAL_EXTERN int corral_request_add_capability(corral_request *req,
                                                corral_capability_kind kind,
                                                const char *scope);
/* Checks every rule of the contract; the message names the first field that
 * breaks one.  Returns 0 or CORRAL_EINVALID. */
CORRAL_EXTERN int corral_request_validate(const corral_request *req, corral_error *err);

typedef struct corral_exit {
  bool present;
  int code;   /* exit code, -1 when the command never ran */
  int signal; /* terminating signal, 0 when it exited ("SIGKILL" in JSON) */
  char *signal_text; /* owned, may be NULL: exit.signal as decoded when it
                        names no signal known here (kept, not invented) */
} corral_exit;

typedef struct corral_denial {
  bool present;
  corral_capability capability; /* kind and the exact scope denied */
  corral_denial_source source;
  char *reason; /* owned */
  bool recoverable;
  corral_next_action next_action;
  long count; /* in `denials`: how many times it was refused (0 or 1: once) */
} corral_denial;

typedef struct corral_enforcement {
  bool present;
  char *backend; /* owned: "linux", "landlock", "direct", ... */
  corral_level level;
  char *level_text; /* owned, may be NULL: a level not known here (zero's
                       "unelevated"), kept as decoded; level is then 0 */
  bool degraded;
  char *downgrade_reason; /* owned, may be NULL */
} corral_enforcement;

typedef struct corral_change {
  char *path; /* owned; relative, "/" separated, "name/" when aggregated */
  corral_change_kind kind;
  bool aggregated;
  long count; /* direct children of an aggregated tree, -1 above 256 */
} corral_change;

/* The limit that ended a run (a denial of process_spawn says so too). */
typedef struct corral_limit_hit {
  bool present;
  corral_limit which;
  int64_t value;    /* the limit, in the unit of `which` */
  int64_t observed; /* what was seen when it ended the run (the limit itself
                       when the kernel stopped the process at it) */
} corral_limit_hit;

/* What a run used, from corral's own init (outside the command's reach). */
typedef struct corral_usage {
  bool present;
  int64_t peak_memory_bytes; /* highest resident memory seen, the whole run */
  int64_t cpu_time_ms;       /* user + system time of every process */
  int64_t peak_processes;    /* most processes and threads seen at once */
} corral_usage;

typedef struct corral_outcome {
  corral_state state;
  corral_kind kind;
  long process_id; /* the OS pid, 0 when none */
  char *process_ref; /* owned, may be NULL: processId when it is not the OS
                        pid — a live session's id, or the text decoded */
  corral_exit exit;
  corral_denial denial;
  corral_enforcement enforcement;
  corral_change *changes;
  size_t nchanges;
  bool changes_present;  /* false: no change report was asked for or made */
  bool launched;         /* did the requested program itself start? */
  bool launched_known;   /* false: nobody said (a decoded zero outcome) */
  char *message;         /* owned, may be NULL: why, in words (not in the Go contract) */
  char *changes_skipped; /* owned, may be NULL: why there is no change report */
  corral_limit_hit limit; /* a limit ended the run (not in the Go contract) */
  corral_usage usage;     /* not in the Go contract */
  char *changes_scanned;  /* owned, may be NULL: why the change report came
                             from scanning the workspace, not from the
                             kernel's change events */
  corral_denial *denials; /* owned: every refusal of the run the sandbox
                             recorded (network mode filter), in order */
  size_t ndenials;
  long denials_dropped;   /* distinct refusals past the bound, not listed */
} corral_outcome;

CORRAL_EXTERN void corral_outcome_init(corral_outcome *out);
CORRAL_EXTERN void corral_outcome_free(corral_outcome *out);
/* Returns 0 or CORRAL_EINVALID with the broken rule in err. */
CORRAL_EXTERN int corral_outcome_validate(const corral_outcome *out, corral_error *err);

/* JSON codec.  Decoding is strict about types and values, ignores unknown
 * fields, and names the field (or the byte position) that is wrong.
 * Encoders return a NUL-terminated string the caller frees with free(). */
CORRAL_EXTERN int corral_request_from_json(const char *json, size_t len, corral_request *req,
                                           corral_error *err);
CORRAL_EXTERN char *corral_request_to_json(const corral_request *req);
CORRAL_EXTERN int corral_outcome_from_json(const char *json, size_t len, corral_outcome *out,
                                           corral_error *err);
CORRAL_EXTERN char *corral_outcome_to_json(const corral_outcome *out);

/* ----------------------------------------------------------- adapters */

/* An adapter turns a request into a prepared launch and enforces it.
 * Opaque; created by one of the constructors below, freed by the caller. */
typedef struct corral_adapter corral_adapter;

/* The direct adapter enforces nothing.  With CORRAL_LEVEL_DISABLED the policy
 * turned the sandbox off; with CORRAL_LEVEL_DEGRADED the caller accepted
 * running unenforced and `reason` (copied, required) says why. */
CORRAL_EXTERN corral_adapter *corral_adapter_new_direct(corral_level level, const char *reason);
CORRAL_EXTERN void corral_adapter_free(corral_adapter *adapter);
CORRAL_EXTERN const char *corral_adapter_name(const corral_adapter *adapter);


/* ------------------------------------------------------------- policy */

/* A policy says what the sandbox allows.  Built-in defaults: enforce; read
 * everything; write the workspace roots, /tmp and $TMPDIR; network denied.
 * Never read from inside a workspace, so a repository cannot loosen its own
 * sandbox. */
typedef struct corral_policy corral_policy;

typedef enum corral_policy_list {
  CORRAL_POLICY_ALLOW_READ = 1, /* re-include inside a deny-read path */
  CORRAL_POLICY_DENY_READ,      /* a directory shows empty, a file is unreadable */
  CORRAL_POLICY_ALLOW_WRITE,    /* an extra write root */
  CORRAL_POLICY_DENY_WRITE,     /* read-only, even inside a write root */
  CORRAL_POLICY_READ_ROOTS,     /* what is visible; default "/" */
  CORRAL_POLICY_PROTECTED_NAMES, /* metadata names protected in write roots */
  CORRAL_POLICY_SENSITIVE_ENV,  /* extra environment variables to remove */
  CORRAL_POLICY_ALLOW_PROTECTED, /* protected paths that may be written (`/w/.agents`) */
} corral_policy_list;

CORRAL_EXTERN corral_policy *corral_policy_new(void);
CORRAL_EXTERN void corral_policy_free(corral_policy *policy);
/* Merges a JSON policy file over the current values.  Unknown fields are an
 * error (a typo must not loosen a sandbox).  Returns 0, -errno when the file
 * cannot be read, or CORRAL_EBADJSON naming the file and the field. */
CORRAL_EXTERN int corral_policy_load_file(corral_policy *policy, const char *path,
                                          corral_error *err);
/* Loads $XDG_CONFIG_HOME/corral/policy.json (or ~/.config/...) if it exists. */
CORRAL_EXTERN int corral_policy_load_user(corral_policy *policy, corral_error *err);
/* Appends a path (copied; `~` expanded when the profile is resolved). */
CORRAL_EXTERN int corral_policy_add(corral_policy *policy, corral_policy_list list,
                                    const char *value);
/* Replaces a list with nothing (e.g. before setting protected names). */
CORRAL_EXTERN void corral_policy_clear(corral_policy *policy, corral_policy_list list);
CORRAL_EXTERN void corral_policy_set_enforce(corral_policy *policy, bool enforce);
CORRAL_EXTERN void corral_policy_set_network(corral_policy *policy, bool allow);
/* Network mode `filter`: the command reaches the network only through
 * corral's proxy, by name, to the hosts the domain entries allow. */
CORRAL_EXTERN void corral_policy_set_network_filter(corral_policy *policy);
/* A domain entry ("host", "*.domain", "host:port", "[v6]:port"); deny
 * entries win over allow entries and may carry a reason (or NULL).
 * 0, CORRAL_EINVALID for a malformed entry, or -ENOMEM. */
CORRAL_EXTERN int corral_policy_add_domain(corral_policy *policy, const char *entry, bool deny,
                                           const char *reason, corral_error *err);
/* An address range ("10.1.0.0/16", "127.0.0.1") an allowed name may
 * resolve to although it is loopback, private, link-local or the host's. */
CORRAL_EXTERN int corral_policy_allow_addresses(corral_policy *policy, const char *range,
                                                corral_error *err);
CORRAL_EXTERN void corral_policy_set_block_unix_sockets(corral_policy *policy, bool block);
/* Whether init records the writes and connections the sandbox refuses
 * (outcome.denials); on by default.  Off, a write-heavy command runs
 * faster, and a refusal shows only in the command's own errors. */
CORRAL_EXTERN void corral_policy_set_record_refusals(corral_policy *policy, bool record);
CORRAL_EXTERN void corral_policy_set_temp(corral_policy *policy, bool writable);
CORRAL_EXTERN void corral_policy_set_workspace_writable(corral_policy *policy, bool writable);
/* A limit on every run: `value` > 0 in the limit's unit (bytes, ms, a
 * count), CORRAL_LIMIT_DEFAULT for the built-in default (README: Limits),
 * CORRAL_LIMIT_NONE for none.  -EINVAL for anything else. */
#define CORRAL_LIMIT_DEFAULT 0
#define CORRAL_LIMIT_NONE (-1)
CORRAL_EXTERN int corral_policy_set_limit(corral_policy *policy, corral_limit which,
                                          int64_t value);
/* The effective permission profile for a request's workspace roots, as
 * JSON (caller frees), or NULL with err set (a path cannot be resolved). */
CORRAL_EXTERN char *corral_policy_profile_json(const corral_policy *policy,
                                               const char *const *workspace_roots,
                                               size_t nroots, corral_error *err);

/* Chooses the adapter for a policy on this machine: the Linux adapter when
 * the kernel can enforce; `direct` at level disabled when the policy's mode
 * is disabled.  When it cannot enforce: NULL with the reason in err, unless
 * CORRAL_ALLOW_DEGRADED, which then gives `direct` at level degraded with
 * that reason.  The policy is copied. */
#define CORRAL_ALLOW_DEGRADED 0x1u
CORRAL_EXTERN corral_adapter *corral_adapter_new_default(const corral_policy *policy,
                                                         unsigned flags, corral_error *err);
/* The landlock-only adapter (no namespaces): writes, network and scoping
 * enforced; refuses what it cannot express unless CORRAL_ALLOW_DEGRADED. */
CORRAL_EXTERN corral_adapter *corral_adapter_new_landlock(const corral_policy *policy,
                                                          unsigned flags, corral_error *err);
/* The Linux namespace adapter, whatever the machine; NULL with err when the
 * policy cannot be compiled (e.g. a seccomp program). The policy is copied. */
CORRAL_EXTERN corral_adapter *corral_adapter_new_linux(const corral_policy *policy,
                                                       corral_error *err);

/* ------------------------------------------------------ cancellation */

/* A cancellation token.  corral_cancel_trigger is async-signal-safe and
 * thread-safe, so a signal handler may call it. */
typedef struct corral_cancel corral_cancel;
CORRAL_EXTERN corral_cancel *corral_cancel_new(void);
CORRAL_EXTERN void corral_cancel_trigger(corral_cancel *cancel);
CORRAL_EXTERN bool corral_cancel_triggered(const corral_cancel *cancel);
CORRAL_EXTERN void corral_cancel_free(corral_cancel *cancel);


/* ------------------------------------------------- interactive sessions */

/* A process manager for long-running commands (dev servers, REPLs, test
 * watchers): start with a yield, then continue (write input, poll,
 * interrupt), list, stop.  Event driven (epoll, pidfd): an idle session
 * costs no CPU.  Single-threaded: call it from one thread.
 *
 * Bounds: CORRAL_SESSIONS_MAX sessions (least recently used finished one
 * dropped first; a running one only when more than 8 run, and it is told
 * why); undrained output per session: its first 512 KiB and the newest
 * CORRAL_SESSION_OUTPUT_MAX after them, the middle dropped (and said); finished sessions retained 30 s for a last poll.  A first
 * yield is clamped to 30 s, an empty poll to 5 min, a write to 30 s. */
#define CORRAL_SESSIONS_MAX 64
#define CORRAL_SESSION_FIRST_ID 1000
#define CORRAL_SESSION_OUTPUT_MAX (2 * 1024 * 1024)
#define CORRAL_SESSION_TAIL 4096

typedef struct corral_sessions corral_sessions;

typedef struct corral_session_options {
  const corral_request *request; /* not owned; copied */
  corral_adapter *adapter;       /* not owned; must outlive the session; NULL: never runs */
  bool tty;                      /* a PTY (pipes if none can be opened) */
  unsigned short rows, cols;     /* 0: 24 x 80 */
  int64_t yield_ms;              /* how long to collect output before returning */
  corral_cancel *cancel;         /* not owned, may be NULL: ends the start early */
  unsigned flags;                /* CORRAL_RUN_CHANGES: changes reported at the end */
} corral_session_options;

typedef struct corral_session_result {
  long session_id;     /* the live id, or 0 when the process has ended */
  char *output;        /* owned, NUL-terminated: output not returned before */
  size_t output_len;
  bool dropped;        /* older output was dropped since the last result */
  bool exited;         /* the process ended; outcome is final */
  bool interrupted;    /* the process tree was ended by an interrupt or cancel */
  bool tty;            /* the session has a PTY (false: pipes) */
  corral_outcome outcome; /* running while alive; the classified outcome once ended */
} corral_session_result;

typedef struct corral_session_info {
  long id;
  char *command;           /* owned: the command line, for display */
  char *working_directory; /* owned */
  int64_t started_ms, last_used_ms; /* Unix time in ms */
  bool tty;
  bool running;
  corral_exit exit;        /* when not running */
  char *tail;              /* owned: the last CORRAL_SESSION_TAIL bytes of output */
  size_t tail_len;
  bool dropped;            /* output was dropped and not yet reported */
} corral_session_info;

CORRAL_EXTERN corral_sessions *corral_sessions_new(void);
/* Stops every session (as corral_sessions_stop_all) and frees. */
CORRAL_EXTERN void corral_sessions_free(corral_sessions *m);
/* A descriptor that is readable when the manager has work (output to
 * drain, a process to reap); call corral_sessions_process then.  For
 * embedding in another event loop. */
CORRAL_EXTERN int corral_sessions_fd(const corral_sessions *m);
/* Does pending work, waiting at most timeout_ms (0: none, negative:
 * until there is some).  Returns how many events it handled (0: none came
 * in time), or a negative errno when waiting failed. */
CORRAL_EXTERN int corral_sessions_process(corral_sessions *m, int64_t timeout_ms);
/* Milliseconds until the manager needs to run again (a retention or a
 * grace period ends), or -1 when nothing is due. */
CORRAL_EXTERN int64_t corral_sessions_timeout(const corral_sessions *m);

CORRAL_EXTERN void corral_session_options_init(corral_session_options *o);
CORRAL_EXTERN void corral_session_result_init(corral_session_result *r);
CORRAL_EXTERN void corral_session_result_free(corral_session_result *r);

/* Starts a session and collects output for the yield.  Returns 0 with a
 * result (a setup failure is an outcome, not an error), or a negative code
 * for unusable arguments. */
CORRAL_EXTERN int corral_session_start(corral_sessions *m, const corral_session_options *o,
                                       corral_session_result *res, corral_error *err);
/* Writes `input` (may be empty: a poll), or with `interrupt` ends the
 * session's whole process tree, then collects output for the yield.  An
 * unknown id is CORRAL_EINVALID with the id in the message. */
CORRAL_EXTERN int corral_session_continue(corral_sessions *m, long id, const void *input,
                                          size_t len, bool interrupt, int64_t yield_ms,
                                          corral_session_result *res, corral_error *err);
/* What ^C does at a terminal, then output for the yield: a PTY session
 * gets the keystroke (its line discipline interrupts the foreground job; a
 * shell survives), a pipe session's process group gets SIGINT. */
CORRAL_EXTERN int corral_session_interrupt(corral_sessions *m, long id, int64_t yield_ms,
                                           corral_session_result *res, corral_error *err);
/* What ^D does: a PTY session gets the keystroke, a pipe session's stdin
 * is closed (after what waits to be written), so that a reader sees EOF;
 * then output for the yield. */
CORRAL_EXTERN int corral_session_eof(corral_sessions *m, long id, int64_t yield_ms,
                                     corral_session_result *res, corral_error *err);
CORRAL_EXTERN int corral_sessions_list(corral_sessions *m, corral_session_info **out,
                                       size_t *n);
/* 1 while the session's process runs, 0 once it ended (a last poll is
 * waiting), CORRAL_EINVALID for an unknown id.  Never blocks. */
CORRAL_EXTERN int corral_session_running(const corral_sessions *m, long id);
CORRAL_EXTERN void corral_session_info_free(corral_session_info *info, size_t n);
/* Ends a session's tree (SIGTERM, grace, SIGKILL through its pidfd) and
 * removes it.  CORRAL_EINVALID for an unknown id. */
CORRAL_EXTERN int corral_session_stop(corral_sessions *m, long id, corral_error *err);
/* Ends every unfinished session, waiting at most 3 s in all; *ids (caller
 * frees) gets the ids that were stopped, sorted. */
CORRAL_EXTERN int corral_sessions_stop_all(corral_sessions *m, long **ids, size_t *n);


/* ------------------------------------------------- streaming execution */

/* A command whose stdin, stdout and stderr are the caller's own
 * descriptors (no capture, no bound, no buffering): stdio servers, language
 * servers, shells.  Start it, wait for it (or poll its fd), forward
 * signals, then finish it to get the outcome. */
typedef struct corral_exec corral_exec;

typedef struct corral_exec_options {
  const corral_request *request; /* not owned; copied */
  corral_adapter *adapter;       /* not owned; must outlive the exec; NULL: never runs */
  int stdio[3];                  /* not owned: the program's 0, 1, 2 */
  bool tty;                      /* stdio[0] is a terminal: make it the controlling one */
  /* Instead of stdio, a terminal of the program's own, with the modes and
   * size of stdio[0] (the caller's terminal): made inside the sandbox
   * where it has a /dev of its own, so that the program finds it at its
   * /dev/pts/N name, else a host's one.  Relay through corral_exec_pty. */
  bool pty;
} corral_exec_options;

/* Returns 0 and a handle even when the sandbox could not be set up (then
 * finish says so); a negative code only for unusable arguments. */
CORRAL_EXTERN int corral_exec_start(const corral_exec_options *o, corral_exec **out,
                                    corral_error *err);
/* Readable when the program has ended (or never started). */
CORRAL_EXTERN int corral_exec_fd(const corral_exec *e);
/* With options.pty: the master of the program's terminal (owned by the
 * handle, closed by corral_exec_finish), or -1 when it never started. */
CORRAL_EXTERN int corral_exec_pty(const corral_exec *e);
/* Sends SIGINT, SIGTERM, SIGHUP or SIGQUIT to the program (through its init). */
CORRAL_EXTERN int corral_exec_signal(corral_exec *e, int sig);
/* Waits for the end, fills the outcome, frees the handle. */
CORRAL_EXTERN int corral_exec_finish(corral_exec *e, corral_outcome *out);

/* ------------------------------------------------- change observer */

/* A fingerprint of a workspace root: every file, directory and symlink
 * (lstat data; content for files changed within the last seconds), with
 * `.git` and protected names skipped at any depth and generated trees
 * (node_modules, .pnpm-store, .yarn, dist, coverage, .cache) counted, not
 * entered.  Bounded at CORRAL_OBSERVE_MAX_FILES entries: beyond that the
 * snapshot is marked incomplete and a diff reports nothing rather than
 * something wrong. */
#define CORRAL_OBSERVE_MAX_FILES 20000
typedef struct corral_snapshot corral_snapshot;

/* `protected_names` (not owned, may be NULL: ".agents", ".corral") are
 * skipped like `.git`.  Returns 0 or a negative code (root unreadable). */
CORRAL_EXTERN int corral_snapshot_take(const char *root, const char *const *protected_names,
                                       size_t nnames, corral_snapshot **out, corral_error *err);
/* Fills out->changes (sorted by path) with what changed from `before` to
 * `after`, or sets out->changes_skipped when either was incomplete. */
CORRAL_EXTERN int corral_snapshot_diff(const corral_snapshot *before,
                                       const corral_snapshot *after, corral_outcome *out,
                                       corral_error *err);
CORRAL_EXTERN void corral_snapshot_free(corral_snapshot *snap);

/* ------------------------------------------------- captured execution */

#define CORRAL_CAPTURE_LIMIT (1024 * 1024) /* bytes kept of each stream */

typedef struct corral_run_options {
  const corral_request *request; /* not owned; mode must be captured */
  corral_adapter *adapter;       /* not owned; NULL: the command never runs */
  const void *stdin_data;        /* not owned; delivered then closed */
  size_t stdin_len;
  int stdin_fd;                  /* >= 0: used as the command's stdin instead (not closed) */
  int64_t timeout_ms;            /* <= 0: no deadline */
  corral_cancel *cancel;         /* not owned, may be NULL */
  unsigned flags;                /* CORRAL_RUN_* bits; others are rejected */
  /* >= 0: everything the command writes to stdout (stderr) is also written
   * here as it comes, whole and in order (not closed); the result still
   * keeps only the first CORRAL_CAPTURE_LIMIT bytes.  When writing there
   * fails with EPIPE, the command's own stdout (stderr) is closed, as a
   * pipeline would close it. */
  int stdout_fd, stderr_fd;
} corral_run_options;

/* Report the files the command created, modified or deleted in the first
 * workspace root (outcome.changes). */
#define CORRAL_RUN_CHANGES 0x1u

CORRAL_EXTERN void corral_run_options_init(corral_run_options *opts);

typedef struct corral_result {
  char *stdout_data; /* owned; the first CORRAL_CAPTURE_LIMIT bytes, NUL-terminated */
  size_t stdout_len;
  bool stdout_truncated;
  char *stderr_data; /* owned; as stdout */
  size_t stderr_len;
  bool stderr_truncated;
  corral_outcome outcome;
} corral_result;

CORRAL_EXTERN void corral_result_init(corral_result *res);
CORRAL_EXTERN void corral_result_free(corral_result *res);

/* Runs a captured request to its end.  Returns 0 whenever an outcome was
 * produced — including sandbox_setup_failure, denials, timeouts — and a
 * negative code only when the arguments are unusable (then `res` holds no
 * outcome).  The caller frees `res` with corral_result_free in both cases. */
CORRAL_EXTERN int corral_run(const corral_run_options *opts, corral_result *res,
                             corral_error *err);

/* The JSON form of a result: {stdout, stderr, truncated, outcome}.  stdout and
 * stderr are valid UTF-8 (invalid bytes become U+FFFD); when they were not,
 * `stdoutBase64` / `stderrBase64` carry the exact bytes.  Caller frees. */
CORRAL_EXTERN char *corral_result_to_json(const corral_result *res);

/* The exit code a front end should use for an outcome: the command's own,
 * 128+N after signal N, or 124/125/126/127 (see README). */
CORRAL_EXTERN int corral_outcome_exit_code(const corral_outcome *out);

#ifdef __cplusplus
}
#endif
#endif /* CORRAL_H */
