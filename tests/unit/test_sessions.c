/* The process manager: the sequences that matter to an agent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"
#include "sessions.h"

static corral_adapter *direct;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void req_sh(corral_request *r, const char *script) {
  corral_request_init(r);
  r->origin = CORRAL_ORIGIN_MCP_SERVER;
  r->mode = CORRAL_MODE_INTERACTIVE;
  const char *args[] = {"-c", script};
  corral_request_set_command(r, "/bin/sh", args, 2);
  corral_request_set_working_directory(r, "/tmp");
  corral_request_add_workspace_root(r, "/tmp");
}

static void start(corral_sessions *m, const char *script, bool tty, int64_t yield,
                  corral_session_result *res) {
  corral_request req;
  req_sh(&req, script);
  corral_session_options o;
  corral_session_options_init(&o);
  o.request = &req;
  o.adapter = direct;
  o.tty = tty;
  o.yield_ms = yield;
  corral_error err = {0};
  assert_int_equal(corral_session_start(m, &o, res, &err), 0);
  corral_request_free(&req);
}

static void cont(corral_sessions *m, long id, const char *input, bool interrupt, int64_t yield,
                 corral_session_result *res) {
  corral_error err = {0};
  int r = corral_session_continue(m, id, input, input ? strlen(input) : 0, interrupt, yield, res,
                                  &err);
  if (r != 0)
    fail_msg("continue %ld: %s", id, err.message);
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p++)
    n++;
  return n;
}

static bool process_gone(const char *pattern) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "pgrep -f '%s' >/dev/null", pattern);
  return system(cmd) != 0;
}

static void test_yield_then_continue(void **state) {
  (void)state;
  corral_sessions *m = corral_sessions_new();
  corral_session_result r;
  start(m, "printf first; sleep 0.05; printf second", false, 1, &r);
  assert_true(r.session_id >= CORRAL_SESSION_FIRST_ID);
  assert_false(r.exited);
  assert_int_equal(r.outcome.state, CORRAL_STATE_RETAINED);
  char all[256];
  snprintf(all, sizeof all, "%s", r.output);
  long id = r.session_id;
  corral_session_result_free(&r);
  cont(m, id, NULL, false, 2000, &r);
  assert_true(r.exited);
  assert_int_equal(r.session_id, 0);
  assert_int_equal(r.outcome.kind, CORRAL_KIND_SUCCESS);
  strncat(all, r.output, sizeof all - strlen(all) - 1);
  assert_string_equal(all, "firstsecond"); /* each word exactly once */
  corral_session_result_free(&r);
  /* ended within the yield: removed at once, no live id */
  start(m, "echo quick", false, 2000, &r);
  assert_int_equal(r.session_id, 0);
  assert_true(r.exited);
  assert_string_equal(r.output, "quick\n");
  corral_session_result_free(&r);
  corral_sessions_free(m);
}

static void test_interrupt_sleep(void **state) {
  (void)state;
  corral_sessions *m = corral_sessions_new();
  corral_session_result r;
  start(m, "exec sleep 3011", false, 10, &r);
  long id = r.session_id;
  assert_true(id > 0);
  corral_session_result_free(&r);
  double t0 = now_s();
  cont(m, id, NULL, true, 0, &r);
  assert_true(now_s() - t0 < 1.0);
  assert_true(r.interrupted);
  assert_true(r.exited);
  assert_int_equal(r.outcome.kind, CORRAL_KIND_CANCELLED);
  assert_true(process_gone("^sleep 3011$"));
  corral_session_result_free(&r);
  corral_sessions_free(m);
}

static void test_pty_read_line(void **state) {
  (void)state;
  corral_sessions *m = corral_sessions_new();
  corral_session_result r;
  start(m, "read line; echo got:$line", true, 100, &r);
  long id = r.session_id;
  assert_true(r.tty);
  corral_session_result_free(&r);
  cont(m, id, "hello\n", false, 2000, &r);
  /* On a loaded machine the answer may come after the yield: poll on (what
   * a poll returns is new output only), for at most 10 s more. */
  char seen[4096];
  snprintf(seen, sizeof seen, "%s", r.output);
  for (int i = 0; i < 10 && !strstr(seen, "got:hello") && !r.exited; i++) {
    corral_session_result_free(&r);
    cont(m, id, NULL, false, 1000, &r);
    strncat(seen, r.output, sizeof seen - strlen(seen) - 1);
  }
  assert_non_null(strstr(seen, "got:hello"));
  corral_session_result_free(&r);
  corral_sessions_free(m);
}

static void test_pty_cat_echo_and_eof(void **state) {
  (void)state;
  corral_sessions *m = corral_sessions_new();
  corral_session_result r;
  start(m, "exec cat", true, 100, &r);
  long id = r.session_id;
  corral_session_result_free(&r);
  cont(m, id, "abc\n", false, 300, &r);
  assert_int_equal(count(r.output, "abc"), 2); /* the terminal's echo and cat's copy */
  assert_false(r.exited);
  corral_session_result_free(&r);
  cont(m, id, "\x04", false, 2000, &r); /* ^D */
  assert_true(r.exited);
  assert_int_equal(r.outcome.kind, CORRAL_KIND_SUCCESS);
  corral_session_result_free(&r);
  corral_sessions_free(m);
}

static void test_pipe_stdin(void **state) {
  (void)state;
  corral_sessions *m = corral_sessions_new();
  corral_session_result r;
  start(m, "while read l; do echo \"got:$l\"; done", false, 10, &r);
  long id = r.session_id;
  assert_false(r.tty);
  corral_session_result_free(&r);
  cont(m, id, "shout\n", false, 300, &r);
  assert_string_equal(r.output, "got:shout\n");
  corral_session_result_free(&r);
  corral_error err = {0};
  assert_int_equal(corral_session_stop(m, id, &err), 0);
  /* writing to a session that has ended says stdin is closed */
  start(m, "sleep 0.1", false, 0, &r);
  id = r.session_id;
  corral_session_result_free(&r);
  for (int i = 0; i < 10; i++)
    corral_sessions_process(m, 30);
  assert_int_equal(corral_session_continue(m, id, "x", 1, false, 0, &r, &err), CORRAL_EINVALID);
  assert_non_null(strstr(err.message, "stdin is closed"));
  corral_sessions_free(m);
}

/* A command that closes its stdin: writing to it must not kill this
 * process with SIGPIPE (whose default action is to end it). */
static void test_closed_stdin_no_sigpipe(void **state) {
  (void)state;
  signal(SIGPIPE, SIG_DFL);
  corral_sessions *m = corral_sessions_new();
  corral_session_result r;
  start(m, "exec 0<&-; sleep 2", false, 200, &r);
  long id = r.session_id;
  corral_session_result_free(&r);
  cont(m, id, "into the void\n", false, 200, &r); /* EPIPE, survived */
  corral_session_result_free(&r);
  corral_error err = {0};
  corral_session_stop(m, id, &err);
  corral_sessions_free(m);
}

static void test_output_bound(void **state) {
  (void)state;
  corral_sessions *m = corral_sessions_new();
  corral_session_result r;
  /* 3 MiB, marked at the end, while nobody collects. */
  start(m, "sleep 0.2; head -c 3145728 /dev/zero | tr '\\0' x; printf END; sleep 5", false, 10, &r);
  long id = r.session_id;
  corral_session_result_free(&r);
  for (int i = 0; i < 40; i++)
    corral_sessions_process(m, 50); /* the manager drains while no call is active */
  cont(m, id, NULL, false, 100, &r);
  /* The head (512 KiB) and the newest 2 MiB; the middle is dropped. */
  assert_true(r.dropped);
  assert_true(r.output_len <= CORRAL_SESSION_OUTPUT_MAX + CORRAL_SESSION_OUTPUT_MAX / 4);
  assert_true(r.output_len >= CORRAL_SESSION_OUTPUT_MAX + CORRAL_SESSION_OUTPUT_MAX / 4 - 4);
  assert_int_equal(r.output[0], 'x');
  assert_memory_equal(r.output + r.output_len - 3, "END", 3);
  corral_session_result_free(&r);
  cont(m, id, NULL, false, 10, &r);
  assert_false(r.dropped); /* reported once */
  corral_session_result_free(&r);
  corral_sessions_free(m);
}

static void test_floods_do_not_delay(void **state) {
  (void)state;
  corral_sessions *m = corral_sessions_new();
  corral_session_result r;
  long ids[8];
  for (int i = 0; i < 8; i++) {
    start(m, "exec yes flood", false, 0, &r);
    ids[i] = r.session_id;
    corral_session_result_free(&r);
  }
  for (int round = 0; round < 5; round++) {
    double t0 = now_s();
    cont(m, ids[round % 8], NULL, false, 100, &r);
    double spent = now_s() - t0;
    if (spent > 0.5) /* the yield, plus scheduling on a loaded 2-core machine */
      fail_msg("a 100 ms collect took %.0f ms", spent * 1000);
    assert_true(r.output_len > 0);
    corral_session_result_free(&r);
  }
  long *stopped;
  size_t n;
  assert_int_equal(corral_sessions_stop_all(m, &stopped, &n), 0);
  assert_int_equal(n, 8);
  free(stopped);
  corral_sessions_free(m);
}

static void test_eviction(void **state) {
  (void)state;
  corral_sessions *m = corral_sessions_new();
  corral_session_result r;
  long first = 0;
  for (int i = 0; i < CORRAL_SESSIONS_MAX; i++) {
    start(m, "exec sleep 3022", false, 0, &r);
    if (i == 0)
      first = r.session_id;
    corral_session_result_free(&r);
  }
  /* touch the first so the second is the least recently used */
  cont(m, first, NULL, false, 0, &r);
  corral_session_result_free(&r);
  start(m, "exec sleep 3022", false, 0, &r);
  assert_true(r.session_id > 0);
  corral_session_result_free(&r);
  corral_error err = {0};
  assert_int_equal(corral_session_continue(m, first + 1, NULL, 0, false, 0, &r, &err),
                   CORRAL_EINVALID);
  assert_non_null(strstr(err.message, "session evicted: too many sessions"));
  corral_session_result_free(&r);
  corral_session_info *info;
  size_t n;
  assert_int_equal(corral_sessions_list(m, &info, &n), 0);
  assert_int_equal(n, CORRAL_SESSIONS_MAX);
  corral_session_info_free(info, n);
  /* with a finished one around, that one goes first */
  long *stopped;
  assert_int_equal(corral_sessions_stop_all(m, &stopped, &n), 0);
  assert_int_equal(n, CORRAL_SESSIONS_MAX);
  for (size_t i = 1; i < n; i++)
    assert_true(stopped[i - 1] < stopped[i]); /* sorted */
  free(stopped);
  assert_true(process_gone("^sleep 3022$"));
  corral_sessions_free(m);
}

static void test_retention(void **state) {
  (void)state;
  corral_sessions *m = corral_sessions_new();
  sessions_set_retention(m, 1000);
  corral_session_result r;
  start(m, "sleep 0.1; echo done", false, 0, &r);
  long id = r.session_id;
  corral_session_result_free(&r);
  for (int i = 0; i < 200 && corral_session_running(m, id) == 1; i++)
    corral_sessions_process(m, 20); /* until reaped and finished: then retained */
  assert_int_equal(corral_session_running(m, id), 0);
  corral_session_info *info;
  size_t n;
  corral_sessions_list(m, &info, &n);
  assert_int_equal(n, 1);
  assert_false(info[0].running);
  assert_non_null(strstr(info[0].tail, "done"));
  corral_session_info_free(info, n);
  usleep(1200000);
  corral_sessions_process(m, 0);
  corral_sessions_list(m, &info, &n);
  assert_int_equal(n, 0);
  corral_session_info_free(info, n);
  corral_error err = {0};
  assert_int_equal(corral_session_continue(m, id, NULL, 0, false, 0, &r, &err), CORRAL_EINVALID);
  assert_non_null(strstr(err.message, "unknown session"));
  corral_sessions_free(m);
}

static void test_stale_pid_never_signalled(void **state) {
  (void)state;
  corral_sessions *m = corral_sessions_new();
  corral_session_result r;
  start(m, "exit 3", false, 0, &r);
  long id = r.session_id;
  corral_session_result_free(&r);
  if (id) {
    for (int i = 0; i < 10; i++)
      corral_sessions_process(m, 20); /* reaped: its pid may now be anyone's */
    corral_error err = {0};
    assert_int_equal(corral_session_stop(m, id, &err), 0); /* no signal, no error */
  }
  corral_sessions_free(m);
}

static void test_unknown_id(void **state) {
  (void)state;
  corral_sessions *m = corral_sessions_new();
  corral_session_result r;
  corral_error err = {0};
  assert_int_equal(corral_session_continue(m, 4242, "x", 1, false, 0, &r, &err),
                   CORRAL_EINVALID);
  assert_non_null(strstr(err.message, "4242"));
  assert_int_equal(corral_session_stop(m, 4243, &err), CORRAL_EINVALID);
  assert_non_null(strstr(err.message, "4243"));
  corral_sessions_free(m);
}

static void test_sandboxed_session(void **state) {
  (void)state;
  corral_policy *p = corral_policy_new();
  corral_error err = {0};
  corral_adapter *ad = corral_adapter_new_default(p, 0, &err);
  assert_non_null(ad);
  corral_sessions *m = corral_sessions_new();
  corral_request req;
  req_sh(&req, "read x; echo $x > /etc/corral-session-probe; echo status=$?; "
               "echo $CORRAL_SANDBOXED");
  corral_session_options o;
  corral_session_options_init(&o);
  o.request = &req;
  o.adapter = ad;
  o.yield_ms = 50;
  corral_session_result r;
  assert_int_equal(corral_session_start(m, &o, &r, &err), 0);
  long id = r.session_id;
  assert_true(id > 0);
  assert_string_equal(r.outcome.enforcement.backend, corral_adapter_name(ad));
  corral_session_result_free(&r);
  cont(m, id, "evil\n", false, 3000, &r);
  assert_true(r.exited);
  assert_non_null(strstr(r.output, "status=2"));
  assert_non_null(strstr(r.output, "1\n"));
  assert_int_equal(access("/etc/corral-session-probe", F_OK), -1);
  corral_session_result_free(&r);
  corral_request_free(&req);
  corral_sessions_free(m);
  corral_adapter_free(ad);
  corral_policy_free(p);
}

static void test_cancel_while_starting(void **state) {
  (void)state;
  corral_sessions *m = corral_sessions_new();
  corral_request req;
  req_sh(&req, "echo begun; exec sleep 3033");
  corral_cancel *c = corral_cancel_new();
  corral_cancel_trigger(c);
  corral_session_options o;
  corral_session_options_init(&o);
  o.request = &req;
  o.adapter = direct;
  o.yield_ms = 5000;
  o.cancel = c;
  corral_session_result r;
  double t0 = now_s();
  assert_int_equal(corral_session_start(m, &o, &r, NULL), 0);
  assert_true(now_s() - t0 < 2.0);
  assert_true(r.interrupted);
  assert_int_equal(r.session_id, 0);
  assert_true(process_gone("^sleep 3033$"));
  corral_session_result_free(&r);
  corral_cancel_free(c);
  corral_request_free(&req);
  corral_sessions_free(m);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  direct = corral_adapter_new_direct(CORRAL_LEVEL_DISABLED, NULL);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_yield_then_continue),
      cmocka_unit_test(test_interrupt_sleep),
      cmocka_unit_test(test_pty_read_line),
      cmocka_unit_test(test_pty_cat_echo_and_eof),
      cmocka_unit_test(test_pipe_stdin),
      cmocka_unit_test(test_output_bound), cmocka_unit_test(test_closed_stdin_no_sigpipe),
      cmocka_unit_test(test_floods_do_not_delay),
      cmocka_unit_test(test_eviction),
      cmocka_unit_test(test_retention),
      cmocka_unit_test(test_stale_pid_never_signalled),
      cmocka_unit_test(test_unknown_id),
      cmocka_unit_test(test_sandboxed_session),
      cmocka_unit_test(test_cancel_while_starting),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  corral_adapter_free(direct);
  return rc;
}
