/* run.c — the captured runner: run a command in the sandbox, print what it
 * printed and how it ended.  Build: cc run.c $(pkg-config --cflags --libs corral)
 * Usage: ./run CMD [ARGS...] */
#include <corral.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CMD [ARGS...]\n", argv[0]);
    return 2;
  }
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd))
    return 2;
  corral_request req;
  corral_request_init(&req);
  req.origin = CORRAL_ORIGIN_BACKGROUND_TASK;
  req.mode = CORRAL_MODE_CAPTURED;
  corral_request_set_command(&req, argv[1], (const char *const *)argv + 2, (size_t)argc - 2);
  corral_request_set_working_directory(&req, cwd);
  corral_request_add_workspace_root(&req, cwd);

  corral_policy *policy = corral_policy_new(); /* the built-in defaults */
  corral_error err;
  corral_adapter *adapter = corral_adapter_new_default(policy, 0, &err);
  if (!adapter)
    fprintf(stderr, "no sandbox: %s\n", err.message); /* corral_run then fails closed */

  corral_run_options opts;
  corral_run_options_init(&opts);
  opts.request = &req;
  opts.adapter = adapter;
  opts.timeout_ms = 10000;
  opts.flags = CORRAL_RUN_CHANGES;
  corral_result res;
  int rc = 2;
  if (corral_run(&opts, &res, &err) == 0) {
    fwrite(res.stdout_data, 1, res.stdout_len, stdout);
    char *json = corral_outcome_to_json(&res.outcome);
    printf("outcome: %s\n", json);
    free(json);
    rc = corral_outcome_exit_code(&res.outcome);
  } else {
    fprintf(stderr, "corral_run: %s\n", err.message);
  }
  corral_result_free(&res);
  corral_adapter_free(adapter);
  corral_policy_free(policy);
  corral_request_free(&req);
  return rc;
}
