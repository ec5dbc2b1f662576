/*
 * exec.c — streaming execution: the program talks to the caller's own
 * descriptors; corral starts it, forwards signals, waits and reports.
 *
 * A command that never started (no adapter, prepare or launch failed) still
 * gets a handle: its fd is a pipe already at EOF, and finish returns the
 * sandbox_setup_failure outcome.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>

#include "adapter.h"
#include "internal.h"
#include "json_util.h"
#include "proxy.h"
#include "runner.h"

struct corral_exec {
  corral_request req;
  corral_adapter *adapter;
  launch_plan plan;
  bool prepared, launched;
  launch_child child;
  struct report_buf report;
  struct run_facts facts;
  corral_outcome outcome;
  char why[1200];
  int never_fd; /* read end of a closed pipe: readable at once */
  int pty;      /* with options.pty: the terminal's master, or -1 */
  struct proxy *proxy; /* network mode filter, driven by a thread of its own */
};

int corral_exec_start(const corral_exec_options *o, corral_exec **out, corral_error *err) {
  *out = NULL;
  if (!o || !o->request)
    return error_set(err, -EINVAL, EINVAL, "corral_exec_start: no request");
  int r = corral_request_validate(o->request, err);
  if (r < 0)
    return error_prefix(err, "invalid request");
  corral_exec *e = calloc(1, sizeof *e);
  if (!e)
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  if (request_copy(o->request, &e->req) < 0) {
    free(e);
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  }
  e->adapter = o->adapter;
  e->child.pid = e->child.pidfd = e->child.report_fd = e->never_fd = e->pty = -1;
  e->child.pty_sock = e->child.proxy_sock = -1;
  launch_reap_deferred();
  *out = e;

  corral_error lerr = {0};
  if (!e->adapter) {
    snprintf(e->why, sizeof e->why, "no sandbox adapter is available: the command was not run");
  } else if (e->adapter->ops->prepare(e->adapter, &e->req, &e->plan, &e->outcome.enforcement,
                                      &lerr) < 0) {
    e->prepared = true;
    snprintf(e->why, sizeof e->why, "preparing the %s sandbox: %s", e->adapter->name,
             lerr.message);
  } else {
    e->prepared = true;
    int stdio[3] = {o->stdio[0], o->stdio[1], o->stdio[2]}, slave = -1;
    e->plan.tty = o->tty || o->pty;
    if (o->pty && e->plan.own_dev) {
      e->plan.pty_inside = true; /* init makes it in the sandbox's devpts */
    } else if (o->pty && launch_pty_host(o->stdio[0], 0, 0, &e->pty, &slave) == 0) {
      stdio[0] = stdio[1] = stdio[2] = slave;
    } else if (o->pty) {
      e->plan.tty = o->tty;
    }
    if (report_buf_init(&e->report) < 0 ||
        launch_start(&e->plan, stdio[0], stdio[1], stdio[2], &e->child, &lerr) < 0) {
      snprintf(e->why, sizeof e->why, "starting the %s sandbox: %s", e->adapter->name,
               lerr.message[0] ? lerr.message : "out of memory");
    } else {
      e->launched = true;
      e->proxy = proxy_for_run(e->plan.proxy, e->child.proxy_sock, true);
      if (e->plan.pty_inside) /* shaped like stdio[0] before the program starts */
        e->pty = launch_pty_receive(&e->child, o->stdio[0], 0, 0);
    }
    if (slave >= 0)
      close(slave); /* the program holds it now */
  }
  if (!e->launched) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) == 0) {
      close(p[1]);
      e->never_fd = p[0];
    }
  }
  e->facts.adapter_owns_launch = e->plan.adapter_owns_launch;
  e->facts.process_id = e->child.pid;
  return 0;
}

int corral_exec_fd(const corral_exec *e) { return e->launched ? e->child.pidfd : e->never_fd; }

int corral_exec_pty(const corral_exec *e) { return e->pty; }

int corral_exec_signal(corral_exec *e, int sig) {
  if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP && sig != SIGQUIT)
    return -EINVAL;
  if (!e->launched)
    return -ESRCH;
  /* init forwards these four to the program (launch.c, sync 4) */
  launch_signal(&e->child, sig);
  return 0;
}

static void exec_free(corral_exec *e) {
  if (e->child.pidfd >= 0)
    close(e->child.pidfd);
  if (e->child.report_fd >= 0)
    close(e->child.report_fd);
  if (e->never_fd >= 0)
    close(e->never_fd);
  if (e->pty >= 0)
    close(e->pty);
  proxy_free(e->proxy);
  if (e->prepared && e->adapter->ops->cleanup)
    e->adapter->ops->cleanup(e->adapter, &e->plan);
  launch_plan_free(&e->plan);
  report_buf_free(&e->report);
  corral_outcome_free(&e->outcome);
  corral_request_free(&e->req);
  free(e);
}

int corral_exec_finish(corral_exec *e, corral_outcome *out) {
  corral_outcome_init(out);
  if (!e->launched) {
    launch_report rep = {0};
    e->facts.never_ran = true;
    e->facts.why = e->why;
    classify_outcome(&e->facts, &rep, e->req.name, &e->outcome);
  } else {
    /* Wait for init to report the end (or to exit without a report). */
    while (!e->facts.init_reaped && !report_buf_exited(&e->report)) {
      struct pollfd p[2] = {{.fd = e->child.pidfd, .events = POLLIN},
                            {.fd = e->child.report_fd, .events = POLLIN}};
      int n = poll(p, e->report.eof ? 1 : 2, -1);
      if (n < 0 && errno != EINTR)
        break;
      if (p[1].revents)
        report_buf_read(&e->report, e->child.report_fd);
      int status;
      if (waitpid(e->child.pid, &status, WNOHANG) == e->child.pid) {
        e->facts.init_reaped = true;
        e->facts.init_status = status;
      }
    }
    report_buf_read(&e->report, e->child.report_fd);
    if (!e->facts.init_reaped)
      launch_reap_later(e->child.pid);
    char note[600];
    conclude_outcome(e->adapter, &e->plan, &e->report, &e->facts, e->req.name, &e->outcome,
                     note, sizeof note);
    proxy_thread_stop(e->proxy);
    proxy_conclude(e->proxy, &e->outcome);
    /* stdout and stderr belong to the program: no note is written there */
  }
  *out = e->outcome;
  memset(&e->outcome, 0, sizeof e->outcome);
  exec_free(e);
  return 0;
}
