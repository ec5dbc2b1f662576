/*
 * mcp.c — `corral mcp`: the MCP server on stdio, one JSON-RPC message per
 * line.  One process, one loop: stdin, the sessions' descriptors and the
 * signals are watched together; nothing but protocol goes to stdout.
 * stdin EOF, SIGTERM, SIGINT or SIGHUP: every session is stopped, exit 0.
 * What the user approves through the client widens the policy built here,
 * by exactly the approved scopes (widen, below).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli.h"
#include "corral.h"
#include "mcp/mcp.h"
#include "netrules.h"
#include "policy.h"
#include "options.h"
#include "policy_flags.h"

#define LINE_MAX_BYTES (16u << 20)

enum { OPT_SHELL = 1, OPT_APPROVAL_TIMEOUT };
static const struct cli_option mcp_options[] = {
    {"shell", "PATH", OPT_SHELL, "the shell exec_command runs commands with (default: /bin/sh)"},
    {"approval-timeout", "SECONDS", OPT_APPROVAL_TIMEOUT,
     "how long a question to the user waits for its answer, then taken as no (default: 120)"},
    POLICY_FLAG_OPTIONS,
};
static const char mcp_usage[] =
    "usage: corral mcp [--workspace DIR]... [--policy FILE] [--shell PATH]\n"
    "                  [--approval-timeout SECONDS] [policy options]\n"
    "Serves the Model Context Protocol on stdin/stdout: the tools exec_command,\n"
    "write_stdin, list_sessions and stop_session run commands in corral's sandbox.\n"
    "The policy comes from these options and the user's config only: a client\n"
    "cannot loosen it.  A client that can ask its user (elicitation) is asked\n"
    "when a command is refused; what the user allows, once or for the session,\n"
    "widens the policy by exactly that path or host:port.";

struct mcp_args {
  const char *shell;
  long approval_timeout; /* seconds */
  struct policy_flags pf;
};

static int on_option(void *ctx, int id, const char *value) {
  struct mcp_args *a = ctx;
  if (id == OPT_SHELL) {
    if (value[0] != '/' || access(value, X_OK) != 0) {
      fprintf(stderr, "corral mcp: --shell `%s`: not an executable absolute path\n", value);
      return -1;
    }
    a->shell = value;
    return 0;
  }
  if (id == OPT_APPROVAL_TIMEOUT) {
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < 1 || v > 3600) {
      fprintf(stderr, "corral mcp: --approval-timeout `%s`: seconds from 1 to 3600\n", value);
      return -1;
    }
    a->approval_timeout = v;
    return 0;
  }
  return policy_flag(&a->pf, id, value) == 0 ? 0 : -1;
}

static bool stdout_broken;

static void send_line(void *ctx, const char *line, size_t len) {
  (void)ctx;
  struct iovec iov[2] = {{(void *)line, len}, {"\n", 1}};
  size_t total = len + 1, done = 0;
  while (!stdout_broken && done < total) {
    ssize_t n = writev(STDOUT_FILENO, iov, 2);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN) {
        struct pollfd p = {.fd = STDOUT_FILENO, .events = POLLOUT};
        poll(&p, 1, 1000);
        continue;
      }
      stdout_broken = true; /* the client went away */
      break;
    }
    done += (size_t)n;
    /* advance the iovecs past what was written */
    size_t skip = (size_t)n;
    for (int i = 0; i < 2; i++) {
      size_t k = skip < iov[i].iov_len ? skip : iov[i].iov_len;
      iov[i].iov_base = (char *)iov[i].iov_base + k;
      iov[i].iov_len -= k;
      skip -= k;
    }
  }
}

/* What a grant may widen and how: the server's own policy, copied, with
 * each capability as the option that allows exactly it (--allow-write,
 * --allow-protected, --allow-domain host:port); the adapter is chosen as
 * for the server's own.  Checks refuse what a grant could not change. */
struct widen_ctx {
  const struct policy_flags *pf;
  const corral_policy *policy;
};

static int widen_check(const corral_policy *policy, const corral_capability *c, char *why,
                       size_t whylen) {
  char host[NET_HOST_MAX + 1];
  int port;
  const char *reason;
  if (c->kind == CORRAL_CAP_EXTERNAL_NETWORK) {
    if (!mcp_host_port(c->scope, host, &port)) {
      snprintf(why, whylen, "`%s` is not host:port", c->scope);
      return -1;
    }
    if (policy->network_allow) {
      snprintf(why, whylen, "the network is open to every command already");
      return -1;
    }
    const char *no = net_rules_check(&policy->net, host, port, &reason);
    /* net_rules_check's words for a deny entry: an allow entry loses to it. */
    if (no && strncmp(no, "denied", 6) == 0) {
      snprintf(why, whylen,
               "the policy denies %s by name (a deny entry): a grant does not lift that",
               c->scope);
      return -1;
    }
    /* An address the proxy's guard refuses stays refused by name too. */
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1)
      in4->sin_family = AF_INET;
    else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1)
      in6->sin6_family = AF_INET6;
    const char *guard = ss.ss_family ? net_address_check(&policy->net, (struct sockaddr *)&ss,
                                                         NULL, 0)
                                     : NULL;
    if (guard) {
      snprintf(why, whylen,
               "%s is %s, which the proxy refuses whatever the names allow (--allow-address "
               "does, not a grant)",
               host, guard);
      return -1;
    }
    if (!no && policy->network_filter) {
      snprintf(why, whylen,
               "%s is allowed by name already: what refused it is the address it resolves to, "
               "which a grant does not change (--allow-address does)",
               c->scope);
      return -1;
    }
    return 0;
  }
  /* Not a directory that holds a secret store, nor one inside a store:
   * made writable, a store missing there would be the command's to make —
   * planted for the tools outside to trust (~/.ssh/authorized_keys, a
   * credential_process in ~/.aws/config) — and a store there is still
   * covered, so the grant would change nothing for it. */
  struct profile pr;
  corral_error perr = {0};
  char *roots[] = {c->scope};
  if (profile_resolve(policy, roots, 1, &pr, &perr) < 0) {
    snprintf(why, whylen, "which secret stores %s holds cannot be told: %s", c->scope,
             perr.message);
    return -1;
  }
  {
    int held = -1;
    for (size_t i = 0; i < pr.deny_read.n && held < 0; i++)
      if (path_is_under(pr.deny_read.v[i], c->scope) || path_is_under(c->scope, pr.deny_read.v[i]))
        held = (int)i;
    if (held >= 0)
      snprintf(why, whylen,
               "%s holds or lies in the secret store %s, which a grant never opens: name a "
               "directory without one",
               c->scope, pr.deny_read.v[held]);
    profile_free(&pr);
    if (held >= 0)
      return -1;
  }
  const struct path_list *dw = &policy->lists[CORRAL_POLICY_DENY_WRITE];
  for (size_t i = 0; i < dw->n; i++)
    if (dw->v[i][0] == '/' && path_is_under(c->scope, dw->v[i])) {
      snprintf(why, whylen,
               "%s lies in %s, which the policy keeps read-only (a deny-write entry): a grant "
               "does not lift that",
               c->scope, dw->v[i]);
      return -1;
    }
  return 0;
}

static int widen(void *ctx, const corral_capability *caps, size_t n, corral_adapter **adapter,
                 char *why, size_t whylen) {
  struct widen_ctx *w = ctx;
  corral_error err = {0};
  if (!w->policy || w->pf->unsandboxed) {
    snprintf(why, whylen, "the server has no sandbox policy to widen");
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    if (widen_check(w->policy, &caps[i], why, whylen) < 0)
      return -1;
  if (!adapter)
    return 0;
  corral_policy *p = policy_copy(w->policy);
  int r = p ? 0 : -ENOMEM;
  for (size_t i = 0; i < n && r == 0; i++)
    switch (caps[i].kind) {
    case CORRAL_CAP_EXTERNAL_NETWORK:
      /* By name through the proxy, never the whole network: a policy of
       * `deny` becomes `filter` with this one entry. */
      if (!p->network_filter)
        corral_policy_set_network_filter(p);
      r = corral_policy_add_domain(p, caps[i].scope, false, NULL, &err);
      break;
    case CORRAL_CAP_WORKSPACE_WRITE:
      r = corral_policy_add(p, CORRAL_POLICY_ALLOW_WRITE, caps[i].scope);
      break;
    case CORRAL_CAP_PROTECTED_METADATA:
      r = corral_policy_add(p, CORRAL_POLICY_ALLOW_PROTECTED, caps[i].scope);
      break;
    default:
      snprintf(why, whylen, "%s cannot be granted",
               corral_enum_name(CORRAL_ENUM_CAPABILITY, (int)caps[i].kind));
      corral_policy_free(p);
      return -1;
    }
  if (r < 0) {
    snprintf(why, whylen, "%s", err.message[0] ? err.message : "out of memory");
    corral_policy_free(p);
    return -1;
  }
  *adapter = policy_flags_adapter(w->pf, p, why, whylen);
  corral_policy_free(p); /* the adapter has its own copy */
  return *adapter ? 0 : -1;
}

int cmd_mcp(int argc, char **argv) {
  struct mcp_args args = {.shell = "/bin/sh", .approval_timeout = MCP_APPROVAL_TIMEOUT_MS / 1000};
  int first = cli_parse("corral mcp", mcp_usage, mcp_options,
                        sizeof mcp_options / sizeof mcp_options[0], argc, argv, on_option, &args);
  if (first == -2)
    return 0;
  if (first < 0)
    return EXIT_USAGE;
  if (first < argc) {
    fprintf(stderr, "corral mcp: unexpected argument `%s`\nTry `corral mcp --help`.\n",
            argv[first]);
    return EXIT_USAGE;
  }
  /* Without an adapter the server still serves, failing closed: every
   * exec_command reports sandbox_setup_failure. */
  struct cli_sandbox sb;
  int rc = cli_sandbox_open(&args.pf, true, &sb);
  if (rc) {
    cli_sandbox_close(&sb, &args.pf);
    return rc;
  }

  signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM), sigaddset(&mask, SIGINT), sigaddset(&mask, SIGHUP);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);

  struct mcp_server server;
  if (mcp_server_init(&server, sb.adapter, sb.roots, sb.nroots, args.shell) < 0) {
    fprintf(stderr, "corral mcp: out of memory\n");
    rc = EXIT_SETUP;
    goto out;
  }
  server.send = send_line;
  struct widen_ctx wctx = {.pf = &args.pf, .policy = sb.policy};
  server.widen = widen;
  server.widen_ctx = &wctx;
  server.approval_timeout_ms = (int64_t)args.approval_timeout * 1000;
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN};
  ev.data.u32 = 1;
  /* A regular file or /dev/null as stdin cannot be polled (EPERM), but is
   * always ready: read it on every turn instead. */
  bool stdin_always_ready = epoll_ctl(ep, EPOLL_CTL_ADD, STDIN_FILENO, &ev) < 0;
  ev.data.u32 = 2;
  epoll_ctl(ep, EPOLL_CTL_ADD, corral_sessions_fd(server.sessions), &ev);
  ev.data.u32 = 3;
  epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);

  char *buf = malloc(65536);
  size_t len = 0, cap = 65536;
  bool eof = false, skipping = false;
  while (!eof && !stdout_broken && buf) {
    int64_t t2l = corral_sessions_timeout(server.sessions);
    int t1 = mcp_timeout(&server), t2 = t2l < 0 ? -1 : t2l > INT32_MAX ? INT32_MAX : (int)t2l;
    int timeout = t1 < 0 ? t2 : t2 < 0 ? t1 : (t1 < t2 ? t1 : t2);
    struct epoll_event evs[5];
    int n = epoll_wait(ep, evs, 4, stdin_always_ready ? 0 : timeout);
    if (n < 0)
      n = 0;
    if (stdin_always_ready)
      evs[n++] = (struct epoll_event){.events = EPOLLIN, .data.u32 = 1};
    for (int i = 0; i < n; i++) {
      if (evs[i].data.u32 == 3) {
        eof = true; /* a signal: shut down like on EOF */
      } else if (evs[i].data.u32 == 2) {
        corral_sessions_process(server.sessions, 0);
      } else {
        for (;;) {
          if (len == cap) {
            if (cap >= LINE_MAX_BYTES) { /* an endless line: drop it, answer once */
              server.send(NULL, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
                                "\"message\":\"message longer than 16 MiB\"}}", 95);
              len = 0;
              skipping = true;
            } else {
              char *g = realloc(buf, cap * 2);
              if (!g)
                break;
              buf = g;
              cap *= 2;
            }
          }
          ssize_t r = read(STDIN_FILENO, buf + len, cap - len);
          if (r == 0) {
            eof = true;
            break;
          }
          if (r < 0) {
            if (errno == EINTR)
              continue;
            if (errno != EAGAIN)
              eof = true;
            break;
          }
          size_t start = 0, scan = len;
          len += (size_t)r;
          for (size_t k = scan; k < len; k++)
            if (buf[k] == '\n') {
              if (!skipping)
                mcp_handle_line(&server, buf + start, k - start);
              skipping = false;
              start = k + 1;
            }
          memmove(buf, buf + start, len - start);
          len -= start;
        }
      }
    }
    mcp_tick(&server);
  }
  if (len && !skipping && buf)
    mcp_handle_line(&server, buf, len); /* a last line without newline */
  /* Calls still waiting get up to a second to finish, then an answer with
   * what there is: a client that closed stdin still reads stdout. */
  for (int i = 0; i < 100 && server.npending && !stdout_broken; i++) {
    corral_sessions_process(server.sessions, 10);
    mcp_tick(&server);
  }
  mcp_tick_until(&server, INT64_MAX);
  free(buf);
  close(ep);
  mcp_server_close(&server); /* stops every session: no process is left */
out:
  cli_sandbox_close(&sb, &args.pf);
  close(sfd);
  return rc;
}
