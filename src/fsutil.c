/* fsutil.c — small filesystem helpers shared by the supervisor and init. */
#include <stdio.h>
#include <sys/stat.h>

#include "internal.h"

int mkdir_p(const char *path, mode_t mode) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
    errno = ENAMETOOLONG;
    return -1;
  }
  /* Usually the parents exist: one mkdir then. */
  if (mkdir(buf, mode) == 0 || errno == EEXIST)
    return 0;
  if (errno != ENOENT)
    return -1;
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(buf, 0755) < 0 && errno != EEXIST)
      return -1;
    *p = '/';
  }
  return mkdir(buf, mode) < 0 && errno != EEXIST ? -1 : 0;
}
