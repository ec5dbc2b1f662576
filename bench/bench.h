/* bench.h — what the benchmark drivers share: a clock and a sort order. */
#ifndef CORRAL_BENCH_H
#define CORRAL_BENCH_H

#include <time.h>

static inline double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* For qsort over doubles (medians, percentiles). */
static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#endif
