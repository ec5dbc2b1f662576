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
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "corral.h"
#include "options.h"
#include "policy_flags.h"

enum { OPT_REPORT = 1 };
static const struct cli_option exec_options[] = {
    {"report", "FILE", OPT_REPORT,
     "write the outcome as JSON to FILE when the program ends (stdout is the program's)"},
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

static struct termios saved_modes;
static bool modes_saved;

static void restore_terminal(void) {
  if (modes_saved)
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_modes);
  modes_saved = false;
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

/* Opens a PTY sized like the caller's terminal. */
static int open_pty(int *master, int *slave) {
  int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  char name[128];
  if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof name) != 0) {
    if (m >= 0)
      close(m);
    return -1;
  }
  int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (s < 0) {
    close(m);
    return -1;
  }
  struct termios t;
  if (tcgetattr(STDIN_FILENO, &t) == 0)
    tcsetattr(s, TCSANOW, &t); /* the program starts with the caller's modes */
  struct winsize ws;
  if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
    ioctl(m, TIOCSWINSZ, &ws);
  *master = m;
  *slave = s;
  return 0;
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

  sigset_t mask;
  sigemptyset(&mask);
  int fwd[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH};
  for (size_t i = 0; i < sizeof fwd / sizeof fwd[0]; i++)
    sigaddset(&mask, fwd[i]);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  signal(SIGPIPE, SIG_IGN);

  corral_exec_options o = {.request = &req, .adapter = sb.adapter, .stdio = {0, 1, 2}};
  int master = -1, slave = -1;
  if (isatty(STDIN_FILENO) && open_pty(&master, &slave) == 0) {
    o.tty = true;
    o.stdio[0] = o.stdio[1] = o.stdio[2] = slave;
    if (tcgetattr(STDIN_FILENO, &saved_modes) == 0) {
      modes_saved = true;
      atexit(restore_terminal);
      int fatal[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
      for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        signal(fatal[i], fatal_signal);
      struct termios raw = saved_modes;
      cfmakeraw(&raw);
      tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw);
    }
  }
  corral_exec *e = NULL;
  corral_error err = {0};
  if (corral_exec_start(&o, &e, &err) < 0) {
    restore_terminal();
    fprintf(stderr, "corral exec: %s\n", err.message);
    rc = EXIT_USAGE;
  } else {
    if (slave >= 0)
      close(slave); /* the program holds it now */
    if (master >= 0)
      relay(e, master, sfd);
    else
      wait_forwarding(e, sfd);
    corral_outcome out;
    corral_exec_finish(e, &out);
    restore_terminal();
    rc = corral_outcome_exit_code(&out);
    cli_report_outcome(&out);
    if (args.report) {
      char *json = corral_outcome_to_json(&out);
      FILE *f = fopen(args.report, "we");
      if (!f || !json || fprintf(f, "%s\n", json) < 0 || fclose(f) != 0) {
        fprintf(stderr, "corral exec: --report `%s`: %s\n", args.report, strerror(errno));
        if (rc == 0)
          rc = EXIT_SETUP;
      }
      free(json);
    }
    corral_outcome_free(&out);
  }
  if (master >= 0)
    close(master);
  corral_request_free(&req);
  cli_sandbox_close(&sb, &args.pf);
  close(sfd);
  return rc;
}
