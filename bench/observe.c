/*
 * observe — the change observer against `git status --porcelain` on the same
 * tree, alternating: the fingerprint taken before launch, and the
 * fingerprint plus diff taken after exit with 100 files modified between.
 * Usage: observe ROOT ROUNDS.  Prints medians in ms: git before after.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"

#include "bench.h"

static double git_status(const char *root) {
  double t0 = now_ms();
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    if (chdir(root) < 0)
      _exit(1);
    execlp("git", "git", "status", "--porcelain", (char *)NULL);
    _exit(127);
  }
  waitpid(pid, NULL, 0);
  return now_ms() - t0;
}

static void touch_100(const char *root, int round) {
  for (int i = 0; i < 100; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/d%04d/f00.txt", root, i * 10);
    FILE *f = fopen(path, "a");
    if (f) {
      fprintf(f, "round %d\n", round);
      fclose(f);
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 3)
    return 2;
  const char *root = argv[1];
  int rounds = atoi(argv[2]);
  double *g = calloc((size_t)rounds, sizeof *g), *b = calloc((size_t)rounds, sizeof *b),
         *a = calloc((size_t)rounds, sizeof *a);
  size_t changes = 0;
  for (int r = -1; r < rounds; r++) { /* round -1 warms the caches */
    system("true");
    double tg = git_status(root);
    double t0 = now_ms();
    corral_snapshot *before = NULL, *after = NULL;
    if (corral_snapshot_take(root, NULL, 0, &before, NULL) < 0)
      return 1;
    double t1 = now_ms();
    touch_100(root, r);
    double t2 = now_ms();
    corral_outcome o;
    corral_outcome_init(&o);
    if (corral_snapshot_take(root, NULL, 0, &after, NULL) < 0 ||
        corral_snapshot_diff(before, after, &o, NULL) < 0)
      return 1;
    double t3 = now_ms();
    changes = o.nchanges;
    corral_outcome_free(&o);
    corral_snapshot_free(before);
    corral_snapshot_free(after);
    if (r >= 0)
      g[r] = tg, b[r] = t1 - t0, a[r] = t3 - t2;
  }
  qsort(g, (size_t)rounds, sizeof *g, cmp_double);
  qsort(b, (size_t)rounds, sizeof *b, cmp_double);
  qsort(a, (size_t)rounds, sizeof *a, cmp_double);
  printf("%.3f %.3f %.3f %zu\n", g[rounds / 2], b[rounds / 2], a[rounds / 2], changes);
  return 0;
}
