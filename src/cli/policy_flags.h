/*
 * policy_flags.h — the policy flags shared by `run`, `exec`, `policy` and
 * `mcp`: one table, one handler, one way to build the policy and adapter.
 */
#ifndef CORRAL_CLI_POLICY_FLAGS_H
#define CORRAL_CLI_POLICY_FLAGS_H

#include "corral.h"
#include "options.h"

enum {
  PF_POLICY = 100,
  PF_WORKSPACE,
  PF_ALLOW_WRITE,
  PF_DENY_WRITE,
  PF_DENY_READ,
  PF_ALLOW_READ,
  PF_READ_ROOT,
  PF_NETWORK,
  PF_NO_TEMP,
  PF_READ_ONLY,
  PF_BLOCK_UNIX,
  PF_NO_REFUSALS,
  PF_ALLOW_DEGRADED,
  PF_UNSANDBOXED,
  PF_BACKEND,
  PF_ALLOW_PROTECTED,
  PF_MAX_PROCS, /* the limits, in corral_limit's order */
  PF_MEMORY,
  PF_CPU_TIME,
  PF_MAX_FILE_SIZE,
  PF_MAX_OPEN_FILES,
  PF_ALLOW_DOMAIN,
  PF_DENY_DOMAIN,
  PF_ALLOW_ADDRESS,
};

#define POLICY_FLAG_OPTIONS                                                                   \
  {"policy", "FILE", PF_POLICY,                                                               \
   "policy file (default: $XDG_CONFIG_HOME/corral/policy.json, else built-in defaults)"},     \
      {"workspace", "DIR", PF_WORKSPACE,                                                      \
       "a workspace root, writable (repeatable; default: the current directory)"},            \
      {"allow-write", "PATH", PF_ALLOW_WRITE, "also writable (repeatable; default: none)"},                  \
      {"deny-write", "PATH", PF_DENY_WRITE, "read-only even inside a write root (repeatable; default: none)"}, \
      {"deny-read", "PATH", PF_DENY_READ,                                                     \
       "unreadable: a directory shows empty, a file cannot be read (repeatable; default: "  \
       "the secret stores)"},            \
      {"allow-read", "PATH", PF_ALLOW_READ, "readable again inside a --deny-read or secret store (repeatable)"}, \
      {"allow-protected", "PATH", PF_ALLOW_PROTECTED,                                         \
       "writable although protected: a `.agents`, a repository's `.git` (repeatable)"},      \
      {"read-root", "PATH", PF_READ_ROOT,                                                     \
       "restrict reads to the platform roots, the write roots and these (default: all of /)"},       \
      {"network", "deny|allow|filter", PF_NETWORK,                                            \
       "network access (default: deny; loopback inside still works; filter: by name "         \
       "through corral's proxy)"},                                                           \
      {"allow-domain", "HOST[:PORT]", PF_ALLOW_DOMAIN,                                        \
       "reachable through the proxy: a host or *.domain, ports 80 and 443 without one "       \
       "(repeatable; implies --network filter)"},                                            \
      {"deny-domain", "HOST[:PORT][=REASON]", PF_DENY_DOMAIN,                                 \
       "refused even if allowed, with the reason shown (repeatable)"},                        \
      {"allow-address", "CIDR", PF_ALLOW_ADDRESS,                                             \
       "an allowed name may resolve here although private, loopback or this host's "          \
       "(repeatable)"},                                                                      \
      {"no-temp", NULL, PF_NO_TEMP, "do not make /tmp and $TMPDIR writable"},                  \
      {"read-only", NULL, PF_READ_ONLY, "the workspace roots are read-only too"},              \
      {"block-unix-sockets", NULL, PF_BLOCK_UNIX, "creating AF_UNIX sockets fails"},           \
      {"no-refusals", NULL, PF_NO_REFUSALS,                                                   \
       "do not record what the sandbox refuses (faster for commands that write many files)"}, \
      {"allow-degraded", NULL, PF_ALLOW_DEGRADED,                                             \
       "if this kernel cannot enforce, run unenforced and say so (default: refuse)"},         \
      {"unsandboxed", NULL, PF_UNSANDBOXED,                                                   \
       "run without any sandbox; the outcome says enforcement is degraded"},                  \
      {"backend", "auto|linux|landlock", PF_BACKEND,                                          \
       "which sandbox (default: auto: linux, or landlock where namespaces cannot be used)"},  \
      {"max-procs", "N|none", PF_MAX_PROCS,                                                   \
       "processes and threads of the run at once (default: 4096)"},                           \
      {"memory", "SIZE|none", PF_MEMORY,                                                      \
       "resident memory of the whole run, e.g. 2G (default: half of this machine's)"},        \
      {"cpu-time", "SECONDS|none", PF_CPU_TIME, "CPU time of the whole run (default: none)"}, \
      {"max-file-size", "SIZE|none", PF_MAX_FILE_SIZE,                                        \
       "size of any one file written (default: 8G)"},                                         \
      {"max-open-files", "N|none", PF_MAX_OPEN_FILES,                                         \
       "open files of each process (default: the caller's limit)"}

struct policy_flags {
  const char *policy_file;
  char **lists[9]; /* by corral_policy_list, each NULL-terminated */
  size_t nlists[9];
  char **workspaces;
  size_t nworkspaces;
  int network; /* 0 unset, 1 deny, 2 allow, 3 filter */
  char **domains; /* --allow-domain / --deny-domain, in order: "+entry" or "-entry[=reason]" */
  size_t ndomains;
  char **addresses; /* --allow-address */
  size_t naddresses;
  bool no_temp, read_only, block_unix, no_refusals, allow_degraded, unsandboxed;
  bool given;              /* any policy option was given (they beat a request's) */
  const char *unsandboxed_why; /* why there is no sandbox, when not --unsandboxed */
  int backend; /* 0 auto, 1 linux, 2 landlock */
  int64_t limits[CORRAL_LIMIT_COUNT]; /* by corral_limit */
  bool limit_given[CORRAL_LIMIT_COUNT];
};

/* Handles a PF_* id; returns 1 when the id is not a policy flag. */
int policy_flag(struct policy_flags *pf, int id, const char *value);
void policy_flags_free(struct policy_flags *pf);

/* Loads the policy file (or the user's), then applies the flags.  Prints
 * a message and returns NULL on error (exit 2). */
corral_policy *policy_flags_build(const struct policy_flags *pf, char **roots, size_t nroots);
/* The workspace roots: --workspace values, or the current directory. */
int policy_flags_roots(const struct policy_flags *pf, char ***roots, size_t *nroots);
/* The adapter for these flags; prints the reason and returns NULL when
 * none can be had (the caller then reports sandbox_setup_failure). */
corral_adapter *policy_flags_adapter(const struct policy_flags *pf, const corral_policy *policy,
                                     char *why, size_t whylen);

/* What every subcommand that runs things sets up from the flags. */
struct cli_sandbox {
  char **roots; /* resolved workspace roots */
  size_t nroots;
  corral_policy *policy;
  corral_adapter *adapter; /* NULL: none can be had (the reason was printed) */
};

/* Resolves the roots, builds the policy and, with `with_adapter`, the
 * adapter.  Returns 0, or EXIT_USAGE after printing why. */
int cli_sandbox_open(const struct policy_flags *pf, bool with_adapter, struct cli_sandbox *sb);
/* A request for argv[0..argc) in the current directory with the roots.
 * 0, or -1 after printing why. */
int cli_sandbox_request(const struct cli_sandbox *sb, corral_mode mode, int argc, char **argv,
                        corral_request *req);
/* Both of the above for a command line; on failure everything is freed and
 * the exit code returned. */
int cli_sandbox_prepare(struct policy_flags *pf, corral_mode mode, int argc, char **argv,
                        struct cli_sandbox *sb, corral_request *req);
/* The same for a request in JSON (zero's contract) read from `file` ("-":
 * stdin): decoded, validated, captured mode only; its workspace roots and
 * capabilities become flags (README: what each capability opens), those
 * given on the command line winning.  Returns 0, or EXIT_USAGE after
 * printing the decoder's or validator's message. */
int cli_sandbox_from_request(struct policy_flags *pf, const char *file, struct cli_sandbox *sb,
                             corral_request *req);
/* Frees the sandbox and the flags. */
void cli_sandbox_close(struct cli_sandbox *sb, struct policy_flags *pf);
/* {"processes": "kernel (...)", ...}: what enforces each of the policy's
 * limits under the linux adapter (namespaces) or the landlock one. */
struct json_t;
struct json_t *cli_limits_json(const corral_policy *policy, bool namespaces);
/* Tells a person on stderr what the outcome's exit code alone does not say. */
void cli_report_outcome(const corral_outcome *o);

#endif
