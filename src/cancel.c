/* cancel.c — a cancellation token a signal handler or another thread may fire. */
#include <stdatomic.h>
#include <sys/eventfd.h>

#include "internal.h"
#include "runner.h"

struct corral_cancel {
  int fd;             /* eventfd: readable once triggered, for poll loops */
  atomic_bool fired;
};

corral_cancel *corral_cancel_new(void) {
  corral_cancel *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (c->fd < 0) {
    free(c);
    return NULL;
  }
  atomic_init(&c->fired, false);
  return c;
}

void corral_cancel_trigger(corral_cancel *c) {
  if (!c)
    return;
  int saved = errno;
  atomic_store(&c->fired, true);
  uint64_t one = 1;
  ssize_t w = write(c->fd, &one, sizeof one);
  (void)w;
  errno = saved;
}

bool corral_cancel_triggered(const corral_cancel *c) {
  return c && atomic_load(&((corral_cancel *)c)->fired);
}

int cancel_fd(const corral_cancel *c) { return c ? c->fd : -1; }

void corral_cancel_free(corral_cancel *c) {
  if (!c)
    return;
  close(c->fd);
  free(c);
}
