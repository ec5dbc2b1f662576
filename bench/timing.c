/*
 * timing — runs several commands in alternation and prints the median wall
 * time of each, so that ratios come from the same moments of a noisy
 * machine.  Usage: timing ROUNDS CMD1 ... ::: CMD2 ... [::: CMD3 ...]
 * Output: one line per command: "median_ms p90_ms".
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

static double run(char **argv) {
  double t0 = now_ms();
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0), dup2(null, 1), dup2(null, 2);
    execvp(argv[0], argv);
    _exit(127);
  }
  int status;
  waitpid(pid, &status, 0);
  double t = now_ms() - t0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "timing: `%s` failed (status %d)\n", argv[0], status);
    exit(1);
  }
  return t;
}

int main(int argc, char **argv) {
  if (argc < 3)
    return 2;
  int rounds = atoi(argv[1]);
  char **cmds[16];
  int ncmd = 0;
  cmds[ncmd++] = argv + 2;
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], ":::") == 0) {
      argv[i] = NULL;
      if (ncmd < 16)
        cmds[ncmd++] = argv + i + 1;
    }
  double *t = calloc((size_t)(rounds * ncmd), sizeof *t);
  for (int w = 0; w < 5; w++) /* warm the caches */
    for (int c = 0; c < ncmd; c++)
      run(cmds[c]);
  for (int r = 0; r < rounds; r++)
    for (int c = 0; c < ncmd; c++)
      t[c * rounds + r] = run(cmds[c]);
  for (int c = 0; c < ncmd; c++) {
    qsort(t + c * rounds, (size_t)rounds, sizeof *t, cmp_double);
    printf("%.4f %.4f\n", t[c * rounds + rounds / 2], t[c * rounds + rounds * 9 / 10]);
  }
  free(t);
  return 0;
}
