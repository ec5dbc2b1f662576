/*
 * runner.c — captured execution: run a request to its end, keep the first
 * 1 MiB of stdout and of stderr, and classify how it ended.
 *
 * One poll loop owns every descriptor: the two output pipes, the stdin pipe
 * while data remains, the report pipe, init's pidfd and the cancellation
 * eventfd.  The deadline is the poll timeout.  The loop ends when init has
 * been reaped and both output pipes reached EOF (init kills its whole tree
 * before it exits, so EOF follows promptly).
 *
 * Output beyond the limit is still read — a command must never block on a
 * full pipe — but spliced into /dev/null without copying it.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>

#include "adapter.h"
#include "internal.h"
#include "json_util.h"
#include "proxy.h"
#include "runner.h"
#include "watcher.h"

#define READ_CHUNK (64 * 1024)
/* How long output may stay open after init is gone (nothing should hold it). */
#define DRAIN_AFTER_EXIT_MS 2000
/* How long init gets to end the tree before the supervisor SIGKILLs it. */
#define ESCALATE_MS (LAUNCH_GRACE_MS + 2000)

void corral_run_options_init(corral_run_options *o) {
  memset(o, 0, sizeof *o);
  o->stdin_fd = o->stdout_fd = o->stderr_fd = -1;
}

void corral_result_init(corral_result *r) { memset(r, 0, sizeof *r); }

void corral_result_free(corral_result *r) {
  if (!r)
    return;
  free(r->stdout_data);
  free(r->stderr_data);
  corral_outcome_free(&r->outcome);
  corral_result_init(r);
}

struct capture {
  int fd;
  int pass; /* the caller's copy of the stream (stdout_fd), or -1 */
  char *data;
  size_t len, cap;
  bool truncated;
};

/* Writes all of it to the caller's copy; false when that is gone. */
static bool pass_on(struct capture *c, const char *data, size_t len) {
  while (c->pass >= 0 && len > 0) {
    ssize_t n = write(c->pass, data, len);
    if (n < 0 && errno == EAGAIN) {
      struct pollfd p = {.fd = c->pass, .events = POLLOUT};
      poll(&p, 1, -1);
      continue;
    }
    if (n < 0 && errno != EINTR) {
      c->pass = -1;
      return errno != EPIPE;
    }
    if (n > 0)
      data += n, len -= (size_t)n;
  }
  return true;
}

/* Reads what is available; returns false at EOF or on a hard error, and
 * when the caller's copy was closed (the command's end is closed then:
 * it gets EPIPE, as in a pipeline). */
static bool capture_read(struct capture *c, int devnull) {
  for (;;) {
    ssize_t n;
    if (c->len < CORRAL_CAPTURE_LIMIT) {
      if (c->len == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : READ_CHUNK;
        if (ncap > CORRAL_CAPTURE_LIMIT)
          ncap = CORRAL_CAPTURE_LIMIT;
        char *grown = realloc(c->data, ncap + 1);
        if (!grown)
          return false;
        c->data = grown;
        c->cap = ncap;
      }
      n = read(c->fd, c->data + c->len, c->cap - c->len);
      if (n > 0 && !pass_on(c, c->data + c->len, (size_t)n))
        goto gone;
      if (n > 0)
        c->len += (size_t)n;
    } else {
      /* Past the bound: into the caller's copy, or away, without a copy
       * through user space where splice can. */
      int to = c->pass >= 0 ? c->pass : devnull;
      n = to >= 0 ? splice(c->fd, NULL, to, NULL, 1 << 20, SPLICE_F_NONBLOCK) : -1;
      if (n < 0 && errno == EPIPE && to == c->pass)
        goto gone;
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        char scratch[READ_CHUNK];
        n = read(c->fd, scratch, sizeof scratch);
        if (n > 0 && !pass_on(c, scratch, (size_t)n))
          goto gone;
      }
      if (n > 0)
        c->truncated = true;
    }
    if (n == 0)
      return false;
    if (n < 0)
      return errno == EAGAIN || errno == EINTR;
  }
gone:
  close(c->fd);
  c->fd = -1;
  return false;
}

/* Adds corral's own line (a denial, say) after what the command wrote; it
 * counts against the same bound. */
static void capture_append(struct capture *c, const char *text) {
  size_t n = strlen(text);
  pass_on(c, text, n);
  if (c->len + n > CORRAL_CAPTURE_LIMIT) {
    c->truncated = true;
    return;
  }
  char *grown = realloc(c->data, c->len + n + 1);
  if (!grown)
    return;
  c->data = grown;
  c->cap = c->len + n;
  memcpy(c->data + c->len, text, n);
  c->len += n;
}

static void capture_take(struct capture *c, char **data, size_t *len, bool *truncated) {
  if (!c->data)
    c->data = calloc(1, 1);
  if (c->data)
    c->data[c->len] = '\0';
  *data = c->data;
  *len = c->data ? c->len : 0;
  *truncated = c->truncated;
  c->data = NULL;
}

static int make_pipe(int p[2], corral_error *err) {
  if (pipe2(p, O_CLOEXEC) < 0)
    return error_sys(err, "creating an output pipe");
  fcntl(p[0], F_SETFL, O_NONBLOCK);
  return 0;
}

struct loop {
  struct capture out, errc;
  int stdin_w;
  const char *stdin_data;
  size_t stdin_left;
  struct report_buf report;
  struct watcher *watch; /* the change report's, applied as the command runs */
  struct proxy *proxy;   /* network mode filter: the run's connections */
};

static void write_stdin(struct loop *l) {
  while (l->stdin_left > 0) {
    ssize_t n = write(l->stdin_w, l->stdin_data, l->stdin_left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN)
        return;
      break; /* EPIPE: the command closed its stdin; the rest is not wanted */
    }
    l->stdin_data += n;
    l->stdin_left -= (size_t)n;
  }
  close(l->stdin_w);
  l->stdin_w = -1;
}

/* Runs the prepared plan; fills facts and the loop's captures and report. */
static int supervise(const corral_run_options *o, launch_plan *plan, struct loop *l,
                     struct run_facts *f, corral_error *err) {
  int outp[2], errp[2], inp[2] = {-1, -1};
  cleanup_close int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  cleanup_close int stdin_child = -1;
  int r;
  if ((r = make_pipe(outp, err)) < 0)
    return r;
  if ((r = make_pipe(errp, err)) < 0) {
    close(outp[0]), close(outp[1]);
    return r;
  }
  /* A large pipe means fewer wakeups when a command floods its output. */
  fcntl(outp[1], F_SETPIPE_SZ, 1 << 20);
  l->out.fd = outp[0];
  l->errc.fd = errp[0];
  l->out.pass = o->stdout_fd;
  l->errc.pass = o->stderr_fd;
  if (o->stdin_fd >= 0) {
    stdin_child = fcntl(o->stdin_fd, F_DUPFD_CLOEXEC, 3);
  } else if (o->stdin_len > 0) {
    if (pipe2(inp, O_CLOEXEC) < 0) {
      r = error_sys(err, "creating the stdin pipe");
      goto out;
    }
    fcntl(inp[1], F_SETFL, O_NONBLOCK);
    stdin_child = inp[0];
    l->stdin_w = inp[1];
    l->stdin_data = o->stdin_data;
    l->stdin_left = o->stdin_len;
  } else {
    stdin_child = fcntl(devnull, F_DUPFD_CLOEXEC, 3);
  }
  if (stdin_child < 0) {
    r = error_sys(err, "preparing the command's stdin");
    goto out;
  }

  launch_child child;
  r = launch_start(plan, stdin_child, outp[1], errp[1], &child, err);
  close(outp[1]), close(errp[1]);
  outp[1] = errp[1] = -1;
  if (r < 0)
    goto out;
  f->adapter_owns_launch = plan->adapter_owns_launch;
  f->process_id = child.pid;
  l->proxy = proxy_for_run(plan->proxy, child.proxy_sock, false); /* polled below */

  int64_t deadline = o->timeout_ms > 0 ? mono_ms() + o->timeout_ms : -1;
  int64_t escalate_at = -1, drain_until = -1;
  bool out_open = true, err_open = true, ending = false;
  int cfd = cancel_fd(o->cancel);
  for (;;) {
    /* Done when the output is closed and init either exited or reported
     * that the tree is gone (its own exit is then not waited for). */
    if (!out_open && !err_open && (f->init_reaped || report_buf_exited(&l->report)))
      break;
    struct pollfd p[8];
    int n = 0, i_out = -1, i_err = -1, i_in = -1, i_rep = -1, i_pid = -1, i_can = -1, i_w = -1;
    int i_px = -1;
    if (out_open)
      p[i_out = n++] = (struct pollfd){.fd = l->out.fd, .events = POLLIN};
    if (err_open)
      p[i_err = n++] = (struct pollfd){.fd = l->errc.fd, .events = POLLIN};
    if (l->stdin_w >= 0)
      p[i_in = n++] = (struct pollfd){.fd = l->stdin_w, .events = POLLOUT};
    if (!l->report.eof)
      p[i_rep = n++] = (struct pollfd){.fd = child.report_fd, .events = POLLIN};
    if (!f->init_reaped)
      p[i_pid = n++] = (struct pollfd){.fd = child.pidfd, .events = POLLIN};
    if (cfd >= 0 && !ending)
      p[i_can = n++] = (struct pollfd){.fd = cfd, .events = POLLIN};
    /* Events applied while they come, not all at the end: a directory the
     * command makes is watched within moments, not after it is gone. */
    if (l->watch && watcher_fd(l->watch) >= 0)
      p[i_w = n++] = (struct pollfd){.fd = watcher_fd(l->watch), .events = POLLIN};
    if (l->proxy)
      p[i_px = n++] = (struct pollfd){.fd = proxy_fd(l->proxy), .events = POLLIN};

    int64_t now = mono_ms(), wake = -1;
    if (!ending && deadline >= 0)
      wake = deadline;
    if (escalate_at >= 0 && !f->init_reaped)
      wake = escalate_at;
    if (drain_until >= 0)
      wake = drain_until;
    int timeout = wake < 0 ? -1 : (int)(wake > now ? wake - now : 0);
    int ready = poll(p, (nfds_t)n, timeout);
    if (ready < 0 && errno != EINTR) {
      r = error_sys(err, "waiting for the command");
      launch_kill(&child);
      waitpid(child.pid, NULL, 0);
      break;
    }
    now = mono_ms();
    if (i_out >= 0 && p[i_out].revents)
      out_open = capture_read(&l->out, devnull);
    if (i_err >= 0 && p[i_err].revents)
      err_open = capture_read(&l->errc, devnull);
    if (i_in >= 0 && p[i_in].revents)
      write_stdin(l);
    if (i_rep >= 0 && p[i_rep].revents)
      report_buf_read(&l->report, child.report_fd);
    if (i_w >= 0 && p[i_w].revents)
      watcher_process(l->watch);
    if (i_px >= 0 && p[i_px].revents)
      proxy_process(l->proxy);
    if (i_can >= 0 && p[i_can].revents && !ending) {
      f->cancelled = true;
      ending = true;
      launch_terminate(&child);
      escalate_at = now + ESCALATE_MS;
    }
    if (!ending && deadline >= 0 && now >= deadline) {
      f->timed_out = true;
      ending = true;
      launch_terminate(&child);
      escalate_at = now + ESCALATE_MS;
    }
    if (escalate_at >= 0 && now >= escalate_at && !f->init_reaped && !f->init_killed) {
      f->init_killed = true;
      launch_kill(&child);
    }
    if (i_pid >= 0 && p[i_pid].revents) {
      int status;
      if (waitpid(child.pid, &status, WNOHANG) == child.pid) {
        f->init_reaped = true;
        f->init_status = status;
        drain_until = now + DRAIN_AFTER_EXIT_MS;
        report_buf_read(&l->report, child.report_fd);
      }
    }
    if (drain_until >= 0 && now >= drain_until)
      break; /* something outside the tree holds the pipes; stop waiting */
  }
  if (!l->report.eof)
    report_buf_read(&l->report, child.report_fd);
  if (!f->init_reaped)
    launch_reap_later(child.pid);
  close(child.pidfd);
  close(child.report_fd);
out:
  if (outp[1] >= 0)
    close(outp[1]);
  if (errp[1] >= 0)
    close(errp[1]);
  return r;
}

static int never_ran(corral_result *res, struct run_facts *f, const char *why,
                     const corral_request *req) {
  launch_report rep = {0};
  f->never_ran = true;
  f->why = why;
  return classify_outcome(f, &rep, req->name, &res->outcome);
}

int corral_run(const corral_run_options *o, corral_result *res, corral_error *err) {
  corral_result_init(res);
  if (!o || !o->request)
    return error_set(err, -EINVAL, EINVAL, "corral_run: no request");
  if (o->flags & ~CORRAL_RUN_CHANGES)
    return error_set(err, -EINVAL, EINVAL, "corral_run: unknown flag bits %#x",
                     o->flags & ~CORRAL_RUN_CHANGES);
  int r = corral_request_validate(o->request, err);
  if (r < 0)
    return error_prefix(err, "invalid request");

  const corral_request *req = o->request;
  struct run_facts f = {.timeout_ms = o->timeout_ms};
  char why[1200];
  if (!o->adapter)
    return never_ran(res, &f, "no sandbox adapter is available: the command was not run", req);
  if (req->mode != CORRAL_MODE_CAPTURED) {
    snprintf(why, sizeof why, "mode `%s` cannot run as a captured command: the command was not run",
             corral_enum_name(CORRAL_ENUM_MODE, (int)req->mode));
    return never_ran(res, &f, why, req);
  }

  corral_adapter *ad = o->adapter;
  launch_plan plan = {0};
  launch_reap_deferred();
  corral_error perr = {0};
  r = ad->ops->prepare(ad, req, &plan, &res->outcome.enforcement, &perr);
  if (r < 0) {
    snprintf(why, sizeof why, "preparing the %s sandbox: %s", ad->name, perr.message);
    never_ran(res, &f, why, req);
    goto cleanup;
  }

  /* A command that closes its stdin early must not kill us with SIGPIPE. */
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);

  /* The workspace is observed from before launch, not after: a file
   * created while the sandbox starts must count. */
  struct observation *seen =
      (o->flags & CORRAL_RUN_CHANGES) ? observe_begin(NULL, req->workspace_roots[0]) : NULL;

  struct loop l = {.out.fd = -1, .out.pass = -1, .errc.fd = -1, .errc.pass = -1, .stdin_w = -1,
                   .watch = observe_watcher(seen)};
  corral_error lerr = {0};
  r = report_buf_init(&l.report) == 0 ? supervise(o, &plan, &l, &f, &lerr) : -ENOMEM;
  if (o->flags & CORRAL_RUN_CHANGES) {
    if (launch_report_links_unsure(&l.report))
      observe_unsure(seen);
    observe_end(seen, &res->outcome);
  }

  if (!sigismember(&old_set, SIGPIPE)) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
      ;
  }
  pthread_sigmask(SIG_SETMASK, &old_set, NULL);

  if (r < 0) {
    snprintf(why, sizeof why, "starting the %s sandbox: %s", ad->name,
             lerr.message[0] ? lerr.message : strerror(-r));
    never_ran(res, &f, why, req);
  } else {
    char note[600];
    conclude_outcome(ad, &plan, &l.report, &f, req->name, &res->outcome, note, sizeof note);
    if (note[0])
      capture_append(&l.errc, note);
    if (proxy_conclude(l.proxy, &res->outcome) < 0)
      capture_append(&l.errc, "corral: out of memory listing the proxy's refusals\n");
  }
  proxy_free(l.proxy);
  capture_take(&l.out, &res->stdout_data, &res->stdout_len, &res->stdout_truncated);
  capture_take(&l.errc, &res->stderr_data, &res->stderr_len, &res->stderr_truncated);
  if (l.out.fd >= 0)
    close(l.out.fd);
  if (l.errc.fd >= 0)
    close(l.errc.fd);
  if (l.stdin_w >= 0)
    close(l.stdin_w);
  report_buf_free(&l.report);

cleanup:
  if (ad->ops->cleanup)
    ad->ops->cleanup(ad, &plan);
  launch_plan_free(&plan);
  return 0;
}

char *corral_result_to_json(const corral_result *res) {
  json_t *o = json_object();
  const char *names[2] = {"stdout", "stderr"};
  const char *b64names[2] = {"stdoutBase64", "stderrBase64"};
  const char *data[2] = {res->stdout_data, res->stderr_data};
  size_t lens[2] = {res->stdout_len, res->stderr_len};
  for (int i = 0; i < 2; i++) {
    bool valid;
    size_t n;
    char *text = utf8_sanitize(data[i] ? data[i] : "", lens[i], &n, &valid);
    if (!text) {
      json_decref(o);
      return NULL;
    }
    json_object_set_new(o, names[i], json_stringn(text, n));
    free(text);
    if (!valid) {
      char *b64 = base64_encode(data[i], lens[i]);
      if (b64)
        json_object_set_new(o, b64names[i], json_string(b64));
      free(b64);
    }
  }
  json_object_set_new(o, "truncated",
                      json_pack("{s:b,s:b}", "stdout", res->stdout_truncated, "stderr",
                                res->stderr_truncated));
  json_object_set_new(o, "outcome", outcome_to_json_value(&res->outcome));
  return json_dump_compact(o);
}
