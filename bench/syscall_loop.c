/*
 * syscall_loop — one-byte writes to /dev/null in a loop, the cheapest real
 * system call a program makes; prints the mean nanoseconds per call.
 * Usage: syscall_loop [CALLS]  (default 5,000,000)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench.h"

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 5000000;
  int fd = open("/dev/null", O_WRONLY);
  if (fd < 0 || n <= 0)
    return 1;
  double t0 = now_ms();
  for (long i = 0; i < n; i++)
    if (write(fd, "x", 1) != 1)
      return 1;
  printf("%.1f\n", (now_ms() - t0) * 1e6 / (double)n);
  return 0;
}
