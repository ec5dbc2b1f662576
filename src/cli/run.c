/*
 * run.c — `corral run`: one command, captured, with an honest exit code.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json_util.h"
#include "corral.h"
#include "options.h"
#include "policy_flags.h"

enum { OPT_JSON = 1, OPT_TIMEOUT, OPT_CHANGES, OPT_REQUEST };

static const struct cli_option run_options[] = {
    {"json", NULL, OPT_JSON, "print the whole result (stdout, stderr, outcome) as one JSON object"},
    {"timeout", "SECONDS", OPT_TIMEOUT,
     "end the whole process tree after SECONDS (default: no limit); exit 124"},
    {"changes", NULL, OPT_CHANGES,
     "report the files the command created, modified or deleted in the workspace"},
    {"request", "FILE", OPT_REQUEST,
     "run the request FILE describes (the execution contract's JSON; `-`: stdin) "
     "instead of CMD"},
    POLICY_FLAG_OPTIONS,
};

static const char run_usage[] =
    "usage: corral run [options] [--] CMD [ARGS...]\n"
    "       corral run [options] --request FILE\n"
    "Runs CMD in the sandbox, prints its stdout and stderr, and exits with its code\n"
    "(128+N after signal N; 124 timed out; 125 sandbox setup failed or denied;\n"
    "126 not executable; 127 not found; 2 bad usage).";

struct run_args {
  bool json;
  bool changes;
  const char *request;
  long long timeout_ms;
  struct policy_flags pf;
};

static int on_run_option(void *ctx, int id, const char *value) {
  struct run_args *a = ctx;
  switch (id) {
  case OPT_JSON:
    a->json = true;
    return 0;
  case OPT_TIMEOUT:
    return cli_parse_seconds("--timeout", value, &a->timeout_ms);
  case OPT_CHANGES:
    a->changes = true;
    return 0;
  case OPT_REQUEST:
    a->request = value;
    return 0;
  }
  return policy_flag(&a->pf, id, value) == 0 ? 0 : -1;
}

static corral_cancel *cancel_token;

/* fd 0 may be closed when corral itself was started without stdin. */
static bool fcntl_ok(int fd) { return fcntl(fd, F_GETFD) >= 0; }

static void on_signal(int sig) {
  (void)sig;
  corral_cancel_trigger(cancel_token);
}

static int write_all(int fd, const char *data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

/* A short summary for people; --json carries the full list. */
static void print_changes(const corral_outcome *o) {
  if (!o->changes_present) {
    if (o->changes_skipped)
      fprintf(stderr, "corral: no change report: %s\n", o->changes_skipped);
    return;
  }
  size_t counts[4] = {0};
  for (size_t i = 0; i < o->nchanges; i++)
    counts[o->changes[i].kind]++;
  fprintf(stderr, "corral: %zu created, %zu modified, %zu deleted\n",
          counts[CORRAL_CHANGE_CREATED], counts[CORRAL_CHANGE_MODIFIED],
          counts[CORRAL_CHANGE_DELETED]);
  for (size_t i = 0; i < o->nchanges && i < 20; i++)
  {
    fprintf(stderr, "  %c ", "?CMD"[o->changes[i].kind]);
    fputs_for_terminal(o->changes[i].path, stderr); /* the command chose the name */
    fputc('\n', stderr);
  }
  if (o->nchanges > 20)
    fprintf(stderr, "  ... and %zu more (use --json for all)\n", o->nchanges - 20);
}

int cmd_run(int argc, char **argv) {
  struct run_args args = {0};
  int first = cli_parse("corral run", run_usage, run_options,
                        sizeof run_options / sizeof run_options[0], argc, argv, on_run_option,
                        &args);
  if (first == -2)
    return 0;
  if (first < 0)
    return EXIT_USAGE;
  if (first >= argc && !args.request) {
    fprintf(stderr, "corral run: no command given\nTry `corral run --help`.\n");
    return EXIT_USAGE;
  }
  if (first < argc && args.request) {
    fprintf(stderr, "corral run: a command and --request both given\n");
    return EXIT_USAGE;
  }

  struct cli_sandbox sb;
  corral_request req;
  int rc = args.request ? cli_sandbox_from_request(&args.pf, args.request, &sb, &req)
                        : cli_sandbox_prepare(&args.pf, CORRAL_MODE_CAPTURED, argc - first,
                                              argv + first, &sb, &req);
  if (rc)
    return rc;

  cancel_token = corral_cancel_new();
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);

  corral_run_options opts;
  corral_run_options_init(&opts);
  opts.request = &req;
  opts.adapter = sb.adapter;
  opts.timeout_ms = args.timeout_ms;
  opts.cancel = cancel_token;
  if (args.changes)
    opts.flags |= CORRAL_RUN_CHANGES;
  /* Without --json the output goes through as it comes, all of it; only
   * the JSON result keeps a bounded copy. */
  if (!args.json) {
    opts.stdout_fd = fcntl_ok(STDOUT_FILENO) ? STDOUT_FILENO : -1;
    opts.stderr_fd = fcntl_ok(STDERR_FILENO) ? STDERR_FILENO : -1;
  }
  /* Piped input goes to the command; a terminal does not (captured mode is
   * not interactive: `corral exec` is). */
  if (!isatty(STDIN_FILENO) && fcntl_ok(STDIN_FILENO))
    opts.stdin_fd = STDIN_FILENO;

  corral_result res;
  corral_error err = {0};
  if (corral_run(&opts, &res, &err) < 0) {
    fprintf(stderr, "corral run: %s\n", err.message);
    rc = EXIT_USAGE;
  } else {
    rc = corral_outcome_exit_code(&res.outcome);
    if (args.json) {
      char *json = corral_result_to_json(&res);
      if (!json || write_all(STDOUT_FILENO, json, strlen(json)) < 0 ||
          write_all(STDOUT_FILENO, "\n", 1) < 0)
        rc = EXIT_SETUP;
      free(json);
    } else {
      const corral_outcome *o = &res.outcome;
      if (args.changes)
        print_changes(o);
      cli_report_outcome(o);
    }
  }
  corral_result_free(&res);
  corral_request_free(&req);
  cli_sandbox_close(&sb, &args.pf);
  corral_cancel_free(cancel_token);
  return rc;
}
