/*
 * Captured execution: every classification branch (a test adapter forces
 * report errors, denials and setup failures), output bounds, stdin, and
 * process-tree ending.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adapter.h"
#include "corral.h"
#include "internal.h"
#include "linux/linux.h"
#include "linux/seccomp_rules.h"

/* ------------------------------------------------------- test adapter */

struct test_adapter {
  bool fail_prepare;
  bool fail_finish;
  bool deny;
  bool owns_launch;
  bool say_launched;
  bool fail_setup;
};

static int t_init_setup(const launch_plan *plan, int report_fd) {
  (void)plan;
  report_write(report_fd, REPORT_SETUP_FAILED, EPERM, 0, "test: mounting the world");
  return -1;
}

static int t_prepare(corral_adapter *ad, const corral_request *req, launch_plan *plan,
                     corral_enforcement *enf, corral_error *err) {
  struct test_adapter *t = ad->data;
  if (t->fail_prepare)
    return error_set(err, CORRAL_ESETUP, 0, "step `landlock`: not supported");
  int r = plan_from_request(req, plan, err);
  if (r < 0)
    return r;
  plan->adapter_owns_launch = t->owns_launch;
  if (t->fail_setup)
    plan->init_setup = t_init_setup;
  return enforcement_set(enf, "test", CORRAL_LEVEL_NATIVE, NULL);
}

static int t_finish(corral_adapter *ad, launch_plan *plan, launch_report *rep,
                    corral_error *err) {
  struct test_adapter *t = ad->data;
  (void)plan;
  if (t->fail_finish)
    return error_set(err, CORRAL_EREPORT, 0, "test report is garbage");
  if (t->deny) {
    rep->denial.present = true;
    rep->denial.capability.kind = CORRAL_CAP_PROTECTED_METADATA;
    rep->denial.capability.scope = strdup("/w/.agents");
    rep->denial.source = CORRAL_SOURCE_CONFIGURED_POLICY;
    rep->denial.reason = strdup("blocked creation of protected path /w/.agents");
    rep->denial.recoverable = true;
    rep->denial.next_action = CORRAL_NEXT_REQUEST_APPROVAL;
  }
  if (t->say_launched)
    rep->adapter_launched = rep->launched;
  return 0;
}

static const struct adapter_ops test_ops = {.prepare = t_prepare, .finish = t_finish};

static struct test_adapter cfg;
static corral_adapter *test_adapter(void) { return adapter_new("test", &test_ops, &cfg); }

/* ---------------------------------------------------------- helpers */

static void sh_request(corral_request *r, const char *script) {
  corral_request_init(r);
  r->origin = CORRAL_ORIGIN_INTERACTIVE_COMMAND;
  r->mode = CORRAL_MODE_CAPTURED;
  const char *args[] = {"-c", script};
  corral_request_set_command(r, "/bin/sh", args, 2);
  corral_request_set_working_directory(r, "/tmp");
  corral_request_add_workspace_root(r, "/tmp");
}

static void run_with(corral_adapter *ad, const char *script, int64_t timeout_ms,
                     corral_result *res) {
  corral_request req;
  sh_request(&req, script);
  corral_run_options o;
  corral_run_options_init(&o);
  o.request = &req;
  o.adapter = ad;
  o.timeout_ms = timeout_ms;
  corral_error err = {0};
  assert_int_equal(corral_run(&o, res, &err), 0);
  corral_error verr = {0};
  if (corral_outcome_validate(&res->outcome, &verr) != 0)
    fail_msg("outcome invalid: %s", verr.message);
  corral_request_free(&req);
}

static void run_sh(const char *script, int64_t timeout_ms, corral_result *res) {
  corral_adapter *ad = test_adapter();
  run_with(ad, script, timeout_ms, res);
  free(ad);
}

static void reset(void **state) {
  (void)state;
  memset(&cfg, 0, sizeof cfg);
}

static bool pid_alive(pid_t pid) { return kill(pid, 0) == 0; }

/* ------------------------------------------------------------ tests */

static void test_success(void **state) {
  reset(state);
  corral_result res;
  run_sh("printf out; printf err >&2", 0, &res);
  assert_int_equal(res.outcome.state, CORRAL_STATE_COMPLETED);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_SUCCESS);
  assert_string_equal(res.stdout_data, "out");
  assert_string_equal(res.stderr_data, "err");
  assert_true(res.outcome.launched);
  assert_string_equal(res.outcome.enforcement.backend, "test");
  assert_true(res.outcome.process_id > 0);
  corral_result_free(&res);
}

static void test_application_failure_and_signal(void **state) {
  reset(state);
  corral_result res;
  run_sh("exit 3", 0, &res);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_APPLICATION_FAILURE);
  assert_int_equal(res.outcome.exit.code, 3);
  assert_int_equal(corral_outcome_exit_code(&res.outcome), 3);
  corral_result_free(&res);
  run_sh("kill -TERM $$", 0, &res);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_APPLICATION_FAILURE);
  assert_int_equal(res.outcome.exit.signal, SIGTERM);
  assert_int_equal(corral_outcome_exit_code(&res.outcome), 143);
  corral_result_free(&res);
}

static void test_report_unreadable(void **state) {
  reset(state);
  cfg.fail_finish = true;
  corral_result res;
  run_sh("exit 0", 0, &res);
  assert_int_equal(res.outcome.state, CORRAL_STATE_FAILED);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_SANDBOX_SETUP_FAILURE);
  assert_non_null(strstr(res.outcome.message, "test report is garbage"));
  corral_result_free(&res);
}

static void test_denial_beats_timeout(void **state) {
  reset(state);
  cfg.deny = true;
  corral_result res;
  run_sh("sleep 5", 100, &res);
  assert_int_equal(res.outcome.state, CORRAL_STATE_DENIED);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_ENFORCEMENT_DENIED);
  assert_string_equal(res.outcome.denial.capability.scope, "/w/.agents");
  assert_int_equal(corral_outcome_exit_code(&res.outcome), 125);
  corral_result_free(&res);
}

static void test_setup_step_failure(void **state) {
  reset(state);
  cfg.fail_setup = true;
  corral_result res;
  run_sh("echo should-not-run", 0, &res);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_SANDBOX_SETUP_FAILURE);
  assert_false(res.outcome.launched);
  assert_string_equal(res.stdout_data, "");
  assert_non_null(strstr(res.outcome.message, "mounting the world"));
  corral_result_free(&res);
}

static void test_prepare_failure(void **state) {
  reset(state);
  cfg.fail_prepare = true;
  corral_result res;
  run_sh("echo no", 0, &res);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_SANDBOX_SETUP_FAILURE);
  assert_int_equal(res.outcome.exit.code, -1);
  assert_non_null(strstr(res.outcome.message, "landlock"));
  corral_result_free(&res);
}

static void test_no_adapter_and_wrong_mode(void **state) {
  reset(state);
  corral_result res;
  run_with(NULL, "touch /tmp/corral-must-not-exist", 0, &res);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_SANDBOX_SETUP_FAILURE);
  assert_int_equal(res.outcome.exit.code, -1);
  assert_false(res.outcome.launched);
  assert_non_null(strstr(res.outcome.message, "no sandbox adapter"));
  corral_result_free(&res);

  corral_request req;
  sh_request(&req, "true");
  req.mode = CORRAL_MODE_INTERACTIVE;
  corral_run_options o;
  corral_run_options_init(&o);
  o.request = &req;
  o.adapter = test_adapter();
  corral_error err = {0};
  assert_int_equal(corral_run(&o, &res, &err), 0);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_SANDBOX_SETUP_FAILURE);
  assert_non_null(strstr(res.outcome.message, "interactive"));
  corral_result_free(&res);
  free(o.adapter);
  corral_request_free(&req);
}

static void test_owned_launch(void **state) {
  reset(state);
  cfg.owns_launch = true;
  corral_result res;
  run_sh("true", 0, &res);
  assert_false(res.outcome.launched); /* the adapter said nothing */
  corral_result_free(&res);
  cfg.say_launched = true;
  run_sh("true", 0, &res);
  assert_true(res.outcome.launched);
  corral_result_free(&res);
}

static void run_argv(const char *name, corral_result *res) {
  corral_request req;
  corral_request_init(&req);
  req.origin = CORRAL_ORIGIN_HOOK;
  req.mode = CORRAL_MODE_CAPTURED;
  corral_request_set_command(&req, name, NULL, 0);
  corral_request_set_working_directory(&req, "/tmp");
  corral_request_add_workspace_root(&req, "/tmp");
  corral_adapter *ad = test_adapter();
  corral_run_options o;
  corral_run_options_init(&o);
  o.request = &req;
  o.adapter = ad;
  corral_error err = {0};
  assert_int_equal(corral_run(&o, res, &err), 0);
  free(ad);
  corral_request_free(&req);
}

static void test_exec_errors(void **state) {
  reset(state);
  corral_result res;
  run_argv("corral-no-such-program-xyz", &res);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_EXECUTABLE_NOT_FOUND);
  assert_false(res.outcome.launched);
  assert_int_equal(corral_outcome_exit_code(&res.outcome), 127);
  corral_result_free(&res);

  /* A program that itself exits 127 was found: not executable_not_found. */
  run_sh("exit 127", 0, &res);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_APPLICATION_FAILURE);
  assert_true(res.outcome.launched);
  corral_result_free(&res);

  char path[] = "/tmp/corral-noexec-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "#!/bin/sh\n", 10), 10);
  close(fd);
  chmod(path, 0644);
  run_argv(path, &res);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_APPLICATION_FAILURE);
  assert_int_equal(res.outcome.exit.code, 126);
  assert_false(res.outcome.launched);
  assert_non_null(strstr(res.outcome.message, "cannot execute"));
  corral_result_free(&res);
  unlink(path);
}

static void test_truncation_boundary(void **state) {
  reset(state);
  corral_result res;
  /* Exactly 1 MiB on both streams: kept whole, not truncated. */
  run_sh("head -c 1048576 /dev/zero | tr '\\0' a; head -c 1048576 /dev/zero | tr '\\0' b >&2",
         0, &res);
  assert_int_equal(res.stdout_len, CORRAL_CAPTURE_LIMIT);
  assert_int_equal(res.stderr_len, CORRAL_CAPTURE_LIMIT);
  assert_false(res.stdout_truncated);
  assert_false(res.stderr_truncated);
  assert_int_equal(res.stdout_data[CORRAL_CAPTURE_LIMIT - 1], 'a');
  corral_result_free(&res);
  /* One byte more on each: the first 1 MiB kept, the flag set. */
  run_sh("head -c 1048577 /dev/zero | tr '\\0' a; head -c 1048577 /dev/zero | tr '\\0' b >&2",
         0, &res);
  assert_int_equal(res.stdout_len, CORRAL_CAPTURE_LIMIT);
  assert_int_equal(res.stderr_len, CORRAL_CAPTURE_LIMIT);
  assert_true(res.stdout_truncated);
  assert_true(res.stderr_truncated);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_SUCCESS);
  corral_result_free(&res);
  /* Much more: still read to the end (the writer never blocks). */
  run_sh("head -c 50000000 /dev/zero; echo done >&2", 0, &res);
  assert_true(res.stdout_truncated);
  assert_string_equal(res.stderr_data, "done\n");
  corral_result_free(&res);
}

static void test_stdin(void **state) {
  reset(state);
  corral_request req;
  sh_request(&req, "cat; echo end");
  corral_run_options o;
  corral_run_options_init(&o);
  o.request = &req;
  o.adapter = test_adapter();
  /* Bigger than a pipe buffer, so delivery needs the event loop. */
  size_t n = 300000;
  char *data = malloc(n);
  for (size_t i = 0; i < n; i++)
    data[i] = (char)('a' + i % 26);
  o.stdin_data = data;
  o.stdin_len = n;
  corral_result res;
  corral_error err = {0};
  assert_int_equal(corral_run(&o, &res, &err), 0);
  assert_int_equal(res.stdout_len, n + 4);
  assert_memory_equal(res.stdout_data, data, n);
  corral_result_free(&res);
  /* A command that ignores its stdin must not hurt us (SIGPIPE). */
  corral_request_free(&req);
  sh_request(&req, "exec 0<&-; echo closed");
  assert_int_equal(corral_run(&o, &res, &err), 0);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_SUCCESS);
  corral_result_free(&res);
  free(o.adapter);
  free(data);
  corral_request_free(&req);
}

static pid_t read_pid(const char *path) {
  for (int i = 0; i < 100; i++) {
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (f) {
      if (fscanf(f, "%d", &pid) != 1)
        pid = 0;
      fclose(f);
    }
    if (pid > 0)
      return pid;
    usleep(10000);
  }
  return -1;
}

static void test_timeout_kills_detached_grandchild(void **state) {
  reset(state);
  char path[] = "/tmp/corral-gc-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  char script[512];
  /* The grandchild leaves the session and ignores SIGTERM: only SIGKILL
   * after the grace period ends it. */
  snprintf(script, sizeof script,
           "setsid sh -c 'trap \"\" TERM; echo $$ > %s; exec sleep 60' & sleep 60", path);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  corral_result res;
  run_sh(script, 300, &res);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_int_equal(res.outcome.state, CORRAL_STATE_FAILED);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_TIMED_OUT);
  assert_int_equal(corral_outcome_exit_code(&res.outcome), 124);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  assert_true(secs < 3.0);
  pid_t gc = read_pid(path);
  assert_true(gc > 0);
  assert_false(pid_alive(gc));
  corral_result_free(&res);
  unlink(path);
}

static void test_background_left_behind_is_ended(void **state) {
  reset(state);
  char path[] = "/tmp/corral-bg-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  char script[256];
  snprintf(script, sizeof script, "(setsid sleep 60 >/dev/null 2>&1 & echo $! > %s); exit 0",
           path);
  corral_result res;
  run_sh(script, 0, &res);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_SUCCESS);
  pid_t bg = read_pid(path);
  assert_true(bg > 0);
  assert_false(pid_alive(bg));
  corral_result_free(&res);
  unlink(path);
}

static void *cancel_later(void *arg) {
  usleep(100000);
  corral_cancel_trigger(arg);
  return NULL;
}

static void test_cancel(void **state) {
  reset(state);
  corral_request req;
  sh_request(&req, "sleep 30 & sleep 30");
  corral_run_options o;
  corral_run_options_init(&o);
  o.request = &req;
  o.adapter = test_adapter();
  o.cancel = corral_cancel_new();
  pthread_t th;
  pthread_create(&th, NULL, cancel_later, o.cancel);
  corral_result res;
  corral_error err = {0};
  assert_int_equal(corral_run(&o, &res, &err), 0);
  pthread_join(th, NULL);
  assert_int_equal(res.outcome.state, CORRAL_STATE_CANCELLED);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_CANCELLED);
  assert_true(corral_cancel_triggered(o.cancel));
  corral_result_free(&res);
  corral_cancel_free(o.cancel);
  free(o.adapter);
  corral_request_free(&req);
}

static void test_bad_arguments(void **state) {
  reset(state);
  corral_result res;
  corral_error err = {0};
  assert_int_equal(corral_run(NULL, &res, &err), -EINVAL);
  corral_request req;
  corral_request_init(&req);
  corral_run_options o;
  corral_run_options_init(&o);
  o.request = &req;
  assert_int_equal(corral_run(&o, &res, &err), CORRAL_EINVALID);
  assert_non_null(strstr(err.message, "origin"));
  sh_request(&req, "true");
  o.flags = 0x80;
  assert_int_equal(corral_run(&o, &res, &err), -EINVAL);
  corral_request_free(&req);
}

static void test_result_json_binary(void **state) {
  reset(state);
  corral_result res;
  run_sh("printf 'ok\\377\\000x'", 0, &res);
  char *json = corral_result_to_json(&res);
  assert_non_null(json);
  assert_non_null(strstr(json, "\"stdout\":\"ok\xef\xbf\xbd\\u0000x\""));
  assert_non_null(strstr(json, "\"stdoutBase64\":\"b2v/AHg=\""));
  assert_non_null(strstr(json, "\"truncated\":{\"stdout\":false,\"stderr\":false}"));
  free(json);
  corral_result_free(&res);
}

static void test_direct_adapter(void **state) {
  reset(state);
  assert_null(corral_adapter_new_direct(CORRAL_LEVEL_DEGRADED, NULL));
  assert_null(corral_adapter_new_direct(CORRAL_LEVEL_NATIVE, "x"));
  corral_adapter *ad = corral_adapter_new_direct(CORRAL_LEVEL_DEGRADED, "asked for");
  corral_result res;
  run_with(ad, "echo hi", 0, &res);
  assert_int_equal(res.outcome.kind, CORRAL_KIND_SUCCESS);
  assert_string_equal(res.outcome.enforcement.backend, "direct");
  assert_true(res.outcome.enforcement.degraded);
  assert_string_equal(res.outcome.enforcement.downgrade_reason, "asked for");
  corral_result_free(&res);
  corral_adapter_free(ad);
  ad = corral_adapter_new_direct(CORRAL_LEVEL_DISABLED, NULL);
  run_with(ad, "true", 0, &res);
  assert_int_equal(res.outcome.enforcement.level, CORRAL_LEVEL_DISABLED);
  assert_false(res.outcome.enforcement.degraded);
  corral_result_free(&res);
  corral_adapter_free(ad);
}

static void test_no_fd_leak(void **state) {
  reset(state);
  int before = open("/dev/null", O_RDONLY);
  close(before);
  corral_result res;
  for (int i = 0; i < 50; i++) {
    run_sh("true", 0, &res);
    corral_result_free(&res);
  }
  int after = open("/dev/null", O_RDONLY);
  close(after);
  assert_int_equal(before, after);
  /* and the command sees only 0, 1, 2 */
  run_sh("ls /proc/self/fd | wc -l", 0, &res);
  assert_string_equal(res.stdout_data, "4\n"); /* 0 1 2 and ls's own directory fd */
  corral_result_free(&res);
}

static void *idle_thread(void *arg) {
  (void)arg;
  pause();
  return NULL;
}

/* unshare(CLONE_NEWUSER) is refused to a multithreaded process, clone is
 * not: an embedding program with threads still gets the Linux sandbox. */
static void test_linux_adapter_with_threads(void **state) {
  reset(state);
  pthread_t th;
  pthread_create(&th, NULL, idle_thread, NULL);
  corral_policy *p = corral_policy_new();
  corral_error err = {0};
  corral_adapter *ad = corral_adapter_new_linux(p, &err);
  assert_non_null(ad);
  corral_result res;
  run_with(ad, "echo threads-ok; echo x > /etc/corral-thread-probe", 0, &res);
  assert_string_equal(res.stdout_data, "threads-ok\n");
  assert_string_equal(res.outcome.enforcement.backend, "linux");
  assert_true(res.outcome.launched);
  assert_int_equal(access("/etc/corral-thread-probe", F_OK), -1);
  corral_result_free(&res);
  corral_adapter_free(ad);
  corral_policy_free(p);
  pthread_cancel(th);
  pthread_join(th, NULL);
}

static void *run_ten(void *arg) {
  corral_adapter *ad = arg;
  long ok = 0;
  for (int i = 0; i < 10; i++) {
    corral_request req;
    sh_request(&req, "echo $$");
    corral_run_options o;
    corral_run_options_init(&o);
    o.request = &req;
    o.adapter = ad;
    corral_result res;
    if (corral_run(&o, &res, NULL) == 0 && res.outcome.kind == CORRAL_KIND_SUCCESS &&
        atoi(res.stdout_data) > 1 && atoi(res.stdout_data) < 8) /* its own pid namespace */
      ok++;
    corral_result_free(&res);
    corral_request_free(&req);
  }
  return (void *)ok;
}

/* Runs from several threads at once share nothing they should not. */
static void test_concurrent_runs(void **state) {
  reset(state);
  corral_policy *p = corral_policy_new();
  corral_adapter *ad = corral_adapter_new_linux(p, NULL);
  assert_non_null(ad);
  pthread_t th[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&th[i], NULL, run_ten, ad);
  long total = 0;
  for (int i = 0; i < 4; i++) {
    void *ok;
    pthread_join(th[i], &ok);
    total += (long)ok;
  }
  assert_int_equal(total, 40);
  corral_adapter_free(ad);
  corral_policy_free(p);
}

/* The program the build embedded is the one libseccomp makes here and now
 * (a stale or foreign one would be a silently different sandbox). */
static void test_seccomp_embedded_is_current(void **state) {
  (void)state;
  for (int v = 0; v < 4; v++) {
    struct profile pr = {.block_unix = v & 1};
    struct sock_fprog built = {0}, now = {0};
    assert_int_equal(seccomp_program(&pr, v & 2, &built, NULL), 0);
    assert_int_equal(seccomp_compile(v & 1, v & 2, &now, NULL), 0);
    assert_int_equal(built.len, now.len);
    assert_memory_equal(built.filter, now.filter, now.len * sizeof *now.filter);
    free(built.filter);
    free(now.filter);
  }
}

int main(void) {
  signal(SIGPIPE, SIG_DFL);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_success),
      cmocka_unit_test(test_application_failure_and_signal),
      cmocka_unit_test(test_report_unreadable),
      cmocka_unit_test(test_denial_beats_timeout),
      cmocka_unit_test(test_setup_step_failure),
      cmocka_unit_test(test_prepare_failure),
      cmocka_unit_test(test_no_adapter_and_wrong_mode),
      cmocka_unit_test(test_owned_launch),
      cmocka_unit_test(test_exec_errors),
      cmocka_unit_test(test_truncation_boundary),
      cmocka_unit_test(test_stdin),
      cmocka_unit_test(test_timeout_kills_detached_grandchild),
      cmocka_unit_test(test_background_left_behind_is_ended),
      cmocka_unit_test(test_cancel),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_result_json_binary),
      cmocka_unit_test(test_direct_adapter),
      cmocka_unit_test(test_no_fd_leak),
      cmocka_unit_test(test_linux_adapter_with_threads),
      cmocka_unit_test(test_concurrent_runs),
      cmocka_unit_test(test_seccomp_embedded_is_current),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
