/* sessions.c — an interactive session: start `cat` in a PTY, type a line,
 * read the echo, end it with ^D.
 * Build: cc sessions.c $(pkg-config --cflags --libs corral) */
#include <corral.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void) {
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd))
    return 2;
  corral_request req;
  corral_request_init(&req);
  req.origin = CORRAL_ORIGIN_INTERACTIVE_COMMAND;
  req.mode = CORRAL_MODE_INTERACTIVE;
  corral_request_set_command(&req, "cat", NULL, 0);
  corral_request_set_working_directory(&req, cwd);
  corral_request_add_workspace_root(&req, cwd);
  corral_policy *policy = corral_policy_new();
  corral_adapter *adapter = corral_adapter_new_default(policy, 0, NULL);
  corral_sessions *m = corral_sessions_new();

  corral_session_options so;
  corral_session_options_init(&so);
  so.request = &req;
  so.adapter = adapter;
  so.tty = true;
  so.yield_ms = 200;
  corral_session_result r;
  corral_error err;
  if (corral_session_start(m, &so, &r, &err) < 0 || !r.session_id) {
    fprintf(stderr, "start: %s\n", r.outcome.message ? r.outcome.message : err.message);
    return 1;
  }
  long id = r.session_id;
  printf("session %ld started\n", id);
  corral_session_result_free(&r);

  corral_session_continue(m, id, "hello\n", 6, false, 300, &r, &err);
  printf("typed hello, got %zu bytes: %s", r.output_len, strstr(r.output, "hello") ? "echoed\n" : "?\n");
  corral_session_result_free(&r);

  corral_session_continue(m, id, "\x04", 1, false, 2000, &r, &err); /* ^D: cat ends */
  printf("exited: %s, exit code %d\n", r.exited ? "yes" : "no", r.outcome.exit.code);
  int rc = r.exited && r.outcome.exit.code == 0 ? 0 : 1;
  corral_session_result_free(&r);
  corral_sessions_free(m);
  corral_adapter_free(adapter);
  corral_policy_free(policy);
  corral_request_free(&req);
  return rc;
}
