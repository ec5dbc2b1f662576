/*
 * sessions — the process manager's costs.
 *   sessions echo ROUNDS   round trip: write a line to `cat` in a PTY, read
 *                          the echo and cat's copy; median and p90 in ms
 *   sessions idle SECONDS  64 idle sessions: CPU time the manager used
 *                          while waiting on them (ms), and a reference
 *   sessions flood         64 sessions flooding output, not drained by the
 *                          caller: peak RSS (KiB) against the bound
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "corral.h"

#include "bench.h"

static corral_adapter *adapter;

static long start(corral_sessions *m, const char *script, bool tty) {
  corral_request r;
  corral_request_init(&r);
  r.origin = CORRAL_ORIGIN_MCP_SERVER;
  r.mode = CORRAL_MODE_INTERACTIVE;
  const char *args[] = {"-c", script};
  corral_request_set_command(&r, "/bin/sh", args, 2);
  corral_request_set_working_directory(&r, "/tmp");
  corral_request_add_workspace_root(&r, "/tmp");
  corral_session_options o;
  corral_session_options_init(&o);
  o.request = &r;
  o.adapter = adapter;
  o.tty = tty;
  o.yield_ms = 100;
  corral_session_result res;
  if (corral_session_start(m, &o, &res, NULL) < 0 || !res.session_id) {
    fprintf(stderr, "start failed\n");
    exit(1);
  }
  long id = res.session_id;
  corral_session_result_free(&res);
  corral_request_free(&r);
  return id;
}

static double cpu_ms(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  adapter = corral_adapter_new_direct(CORRAL_LEVEL_DISABLED, NULL);
  corral_sessions *m = corral_sessions_new();
  if (strcmp(argv[1], "echo") == 0 && argc == 3) {
    int rounds = atoi(argv[2]);
    long id = start(m, "exec cat", true);
    double *t = calloc((size_t)rounds, sizeof *t);
    for (int i = 0; i < rounds; i++) {
      char line[32];
      int n = snprintf(line, sizeof line, "ping%d\n", i);
      double t0 = now_ms();
      corral_session_result res;
      /* A yield of 0 returns as soon as the write is done and what is
       * there is read; poll until the echo is in. */
      corral_session_continue(m, id, line, (size_t)n, false, 0, &res, NULL);
      size_t got = res.output_len;
      corral_session_result_free(&res);
      /* The terminal's echo and cat's own copy, each "pingN\r\n": the
       * round trip goes through the process, not only the line discipline. */
      while (got < 2 * ((size_t)n + 1)) {
        corral_sessions_process(m, 5);
        corral_session_continue(m, id, NULL, 0, false, 0, &res, NULL);
        got += res.output_len;
        corral_session_result_free(&res);
      }
      t[i] = now_ms() - t0;
    }
    qsort(t, (size_t)rounds, sizeof *t, cmp_double);
    printf("%.4f %.4f\n", t[rounds / 2], t[rounds * 9 / 10]);
  } else if (strcmp(argv[1], "idle") == 0 && argc == 3) {
    for (int i = 0; i < 64; i++)
      start(m, "exec sleep 600", i % 2 == 0);
    int secs = atoi(argv[2]);
    double c0 = cpu_ms(), t0 = now_ms();
    while (now_ms() - t0 < secs * 1000.0)
      corral_sessions_process(m, (int)(secs * 1000.0 - (now_ms() - t0)) + 1);
    printf("%.3f\n", cpu_ms() - c0);
  } else if (strcmp(argv[1], "flood") == 0) {
    for (int i = 0; i < 64; i++)
      start(m, "exec yes flood-flood-flood-flood", false);
    double t0 = now_ms();
    while (now_ms() - t0 < 5000)
      corral_sessions_process(m, 100);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%ld %d\n", ru.ru_maxrss, 64 * 2048 + 16384);
  } else {
    return 2;
  }
  corral_sessions_free(m);
  corral_adapter_free(adapter);
  return 0;
}
