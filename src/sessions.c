/*
 * sessions.c — the process manager: retained processes an agent can poll,
 * type into, interrupt and stop.
 *
 * Life of a session:
 *
 *     start ──> running ──(pidfd readable: init reaped)──> draining
 *                  │                                          │ output EOF
 *                  │ interrupt / stop / evict                 v
 *                  └──> ending (SIGTERM, grace, SIGKILL) ──> finished
 *                                                             │ last poll,
 *                                                             │ or 30 s
 *                                                             v
 *                                                          removed
 *
 * Invariants:
 *   1. every signal goes through the session's pidfd (launch_*), never a
 *      numeric pid: a reaped or reused pid is never signalled;
 *   2. one epoll set holds every descriptor; nothing polls or spins, so an
 *      idle session costs no CPU;
 *   3. output is returned exactly once: a result takes what waits — the
 *      first FIRST_KEEP bytes since the last result, and the newest
 *      CORRAL_SESSION_OUTPUT_MAX after them, the middle dropped — and
 *      `dropped` is reported once;
 *   4. a collect returns by its deadline even while processes flood
 *      output: every wakeup reads a bounded amount, then checks the clock;
 *   5. a finished session is concluded exactly once (adapter finish,
 *      classification, cleanup) and its descriptors closed then.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>

#include "adapter.h"
#include "internal.h"
#include "json_util.h"
#include "proxy.h"
#include "runner.h"
#include "sessions.h"
#include "watcher.h"

#define RETAIN_MS 30000
#define FIRST_YIELD_MAX_MS 30000
#define POLL_YIELD_MAX_MS 300000
#define WRITE_MAX_MS 30000
#define STOP_ALL_MS 3000
#define ESCALATE_MS (LAUNCH_GRACE_MS + 2000)
#define READ_BUDGET (256 * 1024) /* per wakeup per session: invariant 4 */
#define RUNNING_BEFORE_EVICT 8
#define EVICTED_MESSAGE "[corral] session evicted: too many sessions"

enum { EV_OUT = 1, EV_PID, EV_REPORT, EV_IN, EV_CANCEL, EV_WATCH };

/* Workspace roots whose watchers are kept (sessions observe their first). */
#define WATCHERS_MAX 4

/* The head of what waits, kept whatever follows. */
#define FIRST_KEEP (CORRAL_SESSION_OUTPUT_MAX / 4)

/* A byte ring that keeps the newest CORRAL_SESSION_OUTPUT_MAX bytes. */
struct ring {
  char *buf;
  size_t cap, head, len;
};

struct session {
  long id;
  corral_request req;
  corral_adapter *adapter;
  launch_plan plan;
  launch_child child;
  struct report_buf report;
  bool link_said; /* its link told to every run beside it (observe_unsure_all) */
  struct run_facts facts;
  int out_fd, in_fd;
  bool tty;
  char *first; /* the first FIRST_KEEP bytes since the last result */
  size_t first_len;
  struct ring out; /* and the newest after them */
  bool dropped;
  char tail[CORRAL_SESSION_TAIL];
  size_t tail_len;
  char *command;
  int64_t started_ms, last_used_ms; /* realtime, for listings */
  int64_t last_used_mono;           /* for LRU choices */
  bool reaped, out_eof, finished, ending, interrupted;
  int64_t escalate_at, drain_until, finished_at;
  corral_outcome outcome;           /* final once finished */
  struct observation *seen;         /* with CORRAL_RUN_CHANGES, until concluded */
  struct proxy *proxy;              /* network mode filter: its own thread, until concluded */
  char *pending;                    /* input not written yet */
  size_t pending_len, pending_off;
  int64_t write_deadline;
};

struct corral_sessions {
  int epfd;
  struct session *s[CORRAL_SESSIONS_MAX];
  size_t n;
  long next_id;
  long evicted[CORRAL_SESSIONS_MAX]; /* recent evictions, so a later poll hears why */
  size_t nevicted;
  int64_t retain_ms;                 /* RETAIN_MS; tests shorten it */
  struct watcher *watchers[WATCHERS_MAX];
  size_t nwatchers;
};

void sessions_set_retention(corral_sessions *m, int64_t ms) { m->retain_ms = ms; }

static int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ------------------------------------------------------------ output */

static void ring_push(struct session *s, const char *data, size_t n) {
  struct ring *r = &s->out;
  /* The tail for listings keeps the last bytes of everything. */
  if (n >= CORRAL_SESSION_TAIL) {
    memcpy(s->tail, data + n - CORRAL_SESSION_TAIL, CORRAL_SESSION_TAIL);
    s->tail_len = CORRAL_SESSION_TAIL;
  } else {
    size_t keep = s->tail_len + n > CORRAL_SESSION_TAIL ? CORRAL_SESSION_TAIL - n : s->tail_len;
    memmove(s->tail, s->tail + s->tail_len - keep, keep);
    memcpy(s->tail + keep, data, n);
    s->tail_len = keep + n;
  }
  /* The head fills first, while nothing has gone past it: head and ring
   * stay one stream in order. */
  if (s->first_len < FIRST_KEEP && r->len == 0 && !s->dropped &&
      (s->first || (s->first = malloc(FIRST_KEEP)))) {
    size_t k = n < FIRST_KEEP - s->first_len ? n : FIRST_KEEP - s->first_len;
    memcpy(s->first + s->first_len, data, k);
    s->first_len += k;
    data += k;
    n -= k;
    if (!n)
      return;
  }
  if (n >= CORRAL_SESSION_OUTPUT_MAX) { /* only the newest part can stay */
    s->dropped = s->dropped || r->len > 0 || n > CORRAL_SESSION_OUTPUT_MAX;
    data += n - CORRAL_SESSION_OUTPUT_MAX;
    n = CORRAL_SESSION_OUTPUT_MAX;
    r->len = 0;
    r->head = 0;
  }
  if (r->len + n > r->cap && r->cap < CORRAL_SESSION_OUTPUT_MAX) {
    /* Grow lazily (most sessions print little), keeping the bytes in order. */
    size_t cap = r->cap ? r->cap : 16384;
    while (cap < r->len + n && cap < CORRAL_SESSION_OUTPUT_MAX)
      cap *= 2;
    if (cap > CORRAL_SESSION_OUTPUT_MAX)
      cap = CORRAL_SESSION_OUTPUT_MAX;
    char *nb = malloc(cap);
    if (nb) {
      for (size_t i = 0; i < r->len; i++)
        nb[i] = r->buf[(r->head + i) % r->cap];
      free(r->buf);
      r->buf = nb;
      r->cap = cap;
      r->head = 0;
    }
  }
  if (!r->cap)
    return;
  if (r->len + n > r->cap) { /* drop the oldest */
    size_t drop = r->len + n - r->cap;
    r->head = (r->head + drop) % r->cap;
    r->len -= drop;
    s->dropped = true;
  }
  size_t pos = (r->head + r->len) % r->cap;
  size_t first = n < r->cap - pos ? n : r->cap - pos;
  memcpy(r->buf + pos, data, first);
  memcpy(r->buf, data + first, n - first);
  r->len += n;
}

/* Moves the ring's bytes into the result (invariant 3). */
static void take_output(struct session *s, corral_session_result *res) {
  struct ring *r = &s->out;
  size_t f = s->first_len;
  res->output = malloc(f + r->len + 1);
  if (!res->output)
    return;
  if (f)
    memcpy(res->output, s->first, f);
  for (size_t i = 0; i < r->len; i++)
    res->output[f + i] = r->buf[(r->head + i) % r->cap];
  res->output[f + r->len] = '\0';
  res->output_len = f + r->len;
  s->first_len = 0;
  res->dropped = s->dropped;
  s->dropped = false;
  r->len = 0;
  r->head = 0;
}

static void read_output(struct session *s) {
  char buf[65536];
  size_t budget = READ_BUDGET;
  while (!s->out_eof && budget > 0) {
    ssize_t n = read(s->out_fd, buf, sizeof buf);
    if (n > 0) {
      ring_push(s, buf, (size_t)n);
      budget -= (size_t)n < budget ? (size_t)n : budget;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      return;
    s->out_eof = true; /* 0, or EIO from a PTY whose last slave closed */
  }
}

/* ------------------------------------------------------------ epoll */

static void watch(corral_sessions *m, int fd, struct session *s, int kind, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.u64 = ((uint64_t)s->id << 4) | (uint64_t)kind};
  if (epoll_ctl(m->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 && errno == EEXIST)
    epoll_ctl(m->epfd, EPOLL_CTL_MOD, fd, &ev);
}

static void unwatch(corral_sessions *m, int fd) {
  if (fd >= 0)
    epoll_ctl(m->epfd, EPOLL_CTL_DEL, fd, NULL);
}

/* The watcher of `root`, made on first use and kept: its index is built
 * once, and each run after costs what it changed.  Its descriptor is in the
 * epoll set, so events are applied while the caller waits.  NULL (the run
 * watches on its own) when every kept watcher is busy with another root. */
static struct watcher *watcher_for(corral_sessions *m, const char *root) {
  struct watcher *w = NULL;
  for (size_t i = 0; i < m->nwatchers && !w; i++)
    if (strcmp(watcher_root(m->watchers[i]), root) == 0)
      w = m->watchers[i];
  if (!w && m->nwatchers == WATCHERS_MAX) {
    for (size_t i = 0; i < m->nwatchers; i++)
      if (!watcher_busy(m->watchers[i])) {
        unwatch(m, watcher_fd(m->watchers[i]));
        watcher_free(m->watchers[i]);
        m->watchers[i] = m->watchers[--m->nwatchers];
        break;
      }
    if (m->nwatchers == WATCHERS_MAX)
      return NULL;
  }
  if (!w && !(w = watcher_open(root)))
    return NULL;
  if (m->nwatchers == 0 || w != m->watchers[m->nwatchers - 1]) {
    bool kept = false;
    for (size_t i = 0; i < m->nwatchers; i++)
      kept |= m->watchers[i] == w;
    if (!kept)
      m->watchers[m->nwatchers++] = w;
  }
  int fd = watcher_fd(w); /* made later when inotify failed at first */
  if (fd >= 0) {
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = ((uint64_t)fd << 4) | EV_WATCH};
    epoll_ctl(m->epfd, EPOLL_CTL_ADD, fd, &ev); /* EEXIST: there already */
  }
  return w;
}

static struct session *find(const corral_sessions *m, long id) {
  for (size_t i = 0; i < m->n; i++)
    if (m->s[i]->id == id)
      return m->s[i];
  return NULL;
}

/* ------------------------------------------------------ lifecycle */

static void close_input(corral_sessions *m, struct session *s) {
  if (s->in_fd >= 0) {
    unwatch(m, s->in_fd);
    close(s->in_fd);
    s->in_fd = -1;
  }
  free(s->pending);
  s->pending = NULL;
  s->pending_len = s->pending_off = 0;
}

/* Invariant 5: the one place a session becomes finished. */
static void conclude(corral_sessions *m, struct session *s) {
  if (s->finished)
    return;
  if (!s->report.eof)
    report_buf_read(&s->report, s->child.report_fd);
  char note[600];
  conclude_outcome(s->adapter, &s->plan, &s->report, &s->facts, s->req.name, &s->outcome, note,
                   sizeof note);
  if (note[0])
    ring_push(s, note, strlen(note));
  proxy_thread_stop(s->proxy);
  proxy_conclude(s->proxy, &s->outcome);
  proxy_free(s->proxy);
  s->proxy = NULL;
  if (s->seen) {
    if (launch_report_links_unsure(&s->report))
      observe_unsure(s->seen);
    observe_end(s->seen, &s->outcome);
    s->seen = NULL;
  }
  unwatch(m, s->out_fd);
  unwatch(m, s->child.pidfd);
  unwatch(m, s->child.report_fd);
  close_input(m, s);
  close(s->out_fd);
  if (!s->reaped)
    launch_reap_later(s->child.pid); /* it reported; its own exit may still run */
  close(s->child.pidfd);
  close(s->child.report_fd);
  s->out_fd = s->child.pidfd = s->child.report_fd = -1;
  if (s->adapter->ops->cleanup)
    s->adapter->ops->cleanup(s->adapter, &s->plan);
  launch_plan_free(&s->plan);
  report_buf_free(&s->report);
  s->finished = true;
  s->finished_at = mono_ms();
}

static void reap(struct session *s) {
  int status;
  if (!s->reaped && waitpid(s->child.pid, &status, WNOHANG) == s->child.pid) {
    s->reaped = true;
    s->facts.init_reaped = true;
    s->facts.init_status = status;
    s->drain_until = mono_ms() + 2000;
  }
}

/* Drives a session forward after events: reap, drain, conclude. */
static void advance(corral_sessions *m, struct session *s) {
  if (s->finished)
    return;
  int64_t now = mono_ms();
  if (s->ending && !s->reaped && now >= s->escalate_at && !s->facts.init_killed) {
    s->facts.init_killed = true;
    launch_kill(&s->child);
  }
  /* Init reaped, or init reported that the tree is gone: then drain
   * and conclude without waiting for init's own exit. */
  if (!s->reaped && !s->drain_until && report_buf_exited(&s->report))
    s->drain_until = now + 2000;
  if (s->reaped || s->drain_until) {
    read_output(s);
    if (s->out_eof || now >= s->drain_until)
      conclude(m, s);
  }
}

/* A run that never ran or never concluded: what it saw is nobody's. */
static void drop_observation(struct session *s) {
  if (!s->seen)
    return;
  corral_outcome none;
  corral_outcome_init(&none);
  observe_end(s->seen, &none);
  corral_outcome_free(&none);
  s->seen = NULL;
}

static void free_session(struct session *s) {
  free(s->out.buf);
  free(s->first);
  free(s->command);
  free(s->pending);
  drop_observation(s);
  proxy_free(s->proxy);
  corral_outcome_free(&s->outcome);
  corral_request_free(&s->req);
  free(s);
}

static void remove_session(corral_sessions *m, struct session *s) {
  for (size_t i = 0; i < m->n; i++)
    if (m->s[i] == s) {
      m->s[i] = m->s[--m->n];
      break;
    }
  free_session(s);
}

static void begin_ending(struct session *s) {
  if (s->ending || s->reaped)
    return;
  s->ending = true;
  s->escalate_at = mono_ms() + ESCALATE_MS;
  launch_terminate(&s->child);
}

static void expire(corral_sessions *m) {
  int64_t now = mono_ms();
  for (size_t i = 0; i < m->n;) {
    struct session *s = m->s[i];
    if (s->finished && now - s->finished_at >= m->retain_ms)
      remove_session(m, s);
    else
      i++;
  }
}

/* Handles what epoll reports, waiting at most timeout_ms. */
/* A write to a command's stdin: a command that closed it must not kill the
 * embedding program with SIGPIPE.  Blocked in this thread for the write,
 * and one raised by it taken before the mask is restored. */
static ssize_t write_input(int fd, const void *buf, size_t n) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  ssize_t w = write(fd, buf, n);
  int e = errno;
  if (w < 0 && e == EPIPE && !sigismember(&old, SIGPIPE)) {
    struct timespec zero = {0, 0};
    sigtimedwait(&pipe_set, NULL, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = e;
  return w;
}

static int process(corral_sessions *m, int timeout_ms, int cancel_fd, bool *cancelled) {
  struct epoll_event ev[32];
  int n = epoll_wait(m->epfd, ev, 32, timeout_ms);
  if (n < 0)
    return errno == EINTR ? 0 : -errno;
  for (int i = 0; i < n; i++) {
    int kind = (int)(ev[i].data.u64 & 15);
    if (kind == EV_CANCEL) {
      if (cancelled)
        *cancelled = true;
      continue;
    }
    if (kind == EV_WATCH) {
      for (size_t k = 0; k < m->nwatchers; k++)
        if ((uint64_t)watcher_fd(m->watchers[k]) == ev[i].data.u64 >> 4)
          watcher_process(m->watchers[k]);
      continue;
    }
    struct session *s = find(m, (long)(ev[i].data.u64 >> 4));
    if (!s || s->finished)
      continue;
    switch (kind) {
    case EV_OUT:
      read_output(s);
      if (s->out_eof)
        unwatch(m, s->out_fd);
      break;
    case EV_PID:
      reap(s);
      unwatch(m, s->child.pidfd);
      break;
    case EV_REPORT:
      report_buf_read(&s->report, s->child.report_fd);
      /* Said as soon as it is made: the calls running beside this one
       * compare every file too. */
      if (s->seen && !s->link_said && launch_report_link_made(&s->report)) {
        s->link_said = true;
        observe_unsure_all(s->seen);
      }
      if (s->report.eof)
        unwatch(m, s->child.report_fd);
      break;
    case EV_IN:
      while (s->pending && s->pending_off < s->pending_len) {
        ssize_t w =
            write_input(s->in_fd, s->pending + s->pending_off, s->pending_len - s->pending_off);
        if (w > 0) {
          s->pending_off += (size_t)w;
          continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
          break;
        close_input(m, s); /* EPIPE: the reader is gone */
        break;
      }
      if (s->pending && s->pending_off == s->pending_len) {
        free(s->pending);
        s->pending = NULL;
        s->pending_len = s->pending_off = 0;
        unwatch(m, s->in_fd);
      }
      break;
    }
  }
  (void)cancel_fd;
  for (size_t i = 0; i < m->n; i++)
    advance(m, m->s[i]);
  return 0;
}

/* Runs the loop until `deadline` or until `s` finished (and, with
 * `until_written`, its input is written).  Invariant 4: the deadline is
 * checked after every wakeup. */
static void pump(corral_sessions *m, struct session *s, int64_t deadline, corral_cancel *cancel,
                 bool *cancelled, bool until_written) {
  int cfd = cancel_fd(cancel);
  if (cfd >= 0)
    watch(m, cfd, &(struct session){.id = 0}, EV_CANCEL, EPOLLIN);
  for (;;) {
    int64_t now = mono_ms();
    if (s->finished || now >= deadline || (until_written && !s->pending))
      break;
    if (cancelled && *cancelled)
      break;
    int64_t wake = deadline;
    if (s->ending && !s->reaped && s->escalate_at < wake)
      wake = s->escalate_at;
    if ((s->reaped || s->drain_until) && s->drain_until < wake)
      wake = s->drain_until;
    process(m, (int)clamp(wake - now, 0, 1 << 30), cfd, cancelled);
  }
  if (cfd >= 0)
    unwatch(m, cfd);
}

/* Ends a session's tree (SIGTERM, grace, SIGKILL through its pidfd) and
 * waits for it; a finished session is left as it is (invariant 1). */
static void interrupt_session(corral_sessions *m, struct session *s);

/* Keeps the loop going until the pending input is written, the process
 * ends, or the write's own bound passes. */
static void pump_until_written(corral_sessions *m, struct session *s) {
  pump(m, s, s->write_deadline, NULL, NULL, true);
}

/* Waits for a session that is ending to finish (bounded). */
static void finish_ending(corral_sessions *m, struct session *s) {
  pump(m, s, mono_ms() + ESCALATE_MS + 3000, NULL, NULL, false);
  if (!s->finished) { /* init never answered: SIGKILL it and conclude anyway */
    launch_kill(&s->child);
    waitpid(s->child.pid, NULL, 0);
    s->reaped = true;
    s->facts.init_killed = true;
    conclude(m, s);
  }
}

static void interrupt_session(corral_sessions *m, struct session *s) {
  if (s->finished)
    return;
  s->interrupted = true;
  s->facts.cancelled = true;
  begin_ending(s);
  finish_ending(m, s);
}

/* ------------------------------------------------------------ results */

void corral_session_result_init(corral_session_result *r) { memset(r, 0, sizeof *r); }

void corral_session_result_free(corral_session_result *r) {
  if (!r)
    return;
  free(r->output);
  corral_outcome_free(&r->outcome);
  corral_session_result_init(r);
}

void corral_session_options_init(corral_session_options *o) { memset(o, 0, sizeof *o); }


/* Fills a result from a session; a finished session is removed (its last
 * poll), a live one reports running. */
static void fill_result(corral_sessions *m, struct session *s, corral_session_result *res) {
  take_output(s, res);
  res->tty = s->tty;
  res->interrupted = s->interrupted;
  if (s->finished) {
    res->exited = true;
    res->session_id = 0;
    outcome_copy(&s->outcome, &res->outcome);
    remove_session(m, s);
    return;
  }
  /* Live, it is retained by the manager: zero's shape for that is state
   * `retained` with the session's id as processId. */
  res->session_id = s->id;
  res->outcome.state = CORRAL_STATE_RETAINED;
  res->outcome.kind = CORRAL_KIND_RUNNING;
  res->outcome.process_id = s->child.pid;
  char id[32];
  snprintf(id, sizeof id, "%ld", s->id);
  free(res->outcome.process_ref);
  res->outcome.process_ref = strdup(id);
  res->outcome.launched = res->outcome.launched_known = true;
  corral_outcome tmp;
  corral_outcome_init(&tmp);
  if (outcome_copy(&s->outcome, &tmp) == 0) { /* the enforcement, prepared at start */
    res->outcome.enforcement = tmp.enforcement;
    memset(&tmp.enforcement, 0, sizeof tmp.enforcement);
  }
  corral_outcome_free(&tmp);
}

/* ------------------------------------------------------------ manager */

corral_sessions *corral_sessions_new(void) {
  corral_sessions *m = calloc(1, sizeof *m);
  if (!m)
    return NULL;
  m->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (m->epfd < 0) {
    free(m);
    return NULL;
  }
  m->next_id = CORRAL_SESSION_FIRST_ID;
  m->retain_ms = RETAIN_MS;
  return m;
}

void corral_sessions_free(corral_sessions *m) {
  if (!m)
    return;
  long *ids = NULL;
  size_t n = 0;
  corral_sessions_stop_all(m, &ids, &n);
  free(ids);
  while (m->n)
    remove_session(m, m->s[0]);
  for (size_t i = 0; i < m->nwatchers; i++)
    watcher_free(m->watchers[i]);
  close(m->epfd);
  free(m);
}

int corral_sessions_fd(const corral_sessions *m) { return m->epfd; }

int64_t corral_sessions_timeout(const corral_sessions *m) {
  int64_t now = mono_ms(), best = -1;
  for (size_t i = 0; i < m->n; i++) {
    const struct session *s = m->s[i];
    int64_t t = -1;
    if (s->finished)
      t = s->finished_at + m->retain_ms;
    else if (s->reaped || s->drain_until)
      t = s->drain_until;
    else if (s->ending)
      t = s->escalate_at;
    if (t >= 0 && (best < 0 || t < best))
      best = t;
  }
  return best < 0 ? -1 : clamp(best - now, 0, INT64_MAX / 2);
}

int corral_sessions_process(corral_sessions *m, int64_t timeout_ms) {
  launch_reap_deferred();
  int r = process(m, timeout_ms < 0 ? -1 : (int)clamp(timeout_ms, 0, INT32_MAX), -1, NULL);
  expire(m);
  return r;
}

/* Makes room for one more session (see the header for the order). */
static void make_room(corral_sessions *m) {
  expire(m);
  if (m->n < CORRAL_SESSIONS_MAX)
    return;
  struct session *lru = NULL;
  size_t running = 0;
  for (size_t i = 0; i < m->n; i++) {
    struct session *s = m->s[i];
    if (!s->finished)
      running++;
    else if (!lru || s->last_used_mono < lru->last_used_mono)
      lru = s;
  }
  if (lru) {
    remove_session(m, lru);
    return;
  }
  if (running <= RUNNING_BEFORE_EVICT)
    return;
  for (size_t i = 0; i < m->n; i++)
    if (!lru || m->s[i]->last_used_mono < lru->last_used_mono)
      lru = m->s[i];
  ring_push(lru, "\n" EVICTED_MESSAGE "\n", strlen(EVICTED_MESSAGE) + 2);
  begin_ending(lru);
  finish_ending(m, lru);
  m->evicted[m->nevicted++ % CORRAL_SESSIONS_MAX] = lru->id;
  remove_session(m, lru);
}

static char *command_line(const corral_request *req) {
  size_t len = strlen(req->name) + 1;
  for (size_t i = 0; i < req->nargs; i++)
    len += strlen(req->args[i]) + 1;
  char *s = malloc(len);
  if (!s)
    return NULL;
  strcpy(s, req->name);
  for (size_t i = 0; i < req->nargs; i++)
    strcat(strcat(s, " "), req->args[i]);
  return s;
}

/* Starts the process; on failure the session's outcome says why. */
static void launch(corral_sessions *m, struct session *s, const corral_session_options *o) {
  corral_error err = {0};
  char why[1200];
  s->facts.timeout_ms = 0;
  if (!s->adapter) {
    s->facts.never_ran = true;
    s->facts.why = "no sandbox adapter is available: the command was not run";
    goto failed;
  }
  if (s->adapter->ops->prepare(s->adapter, &s->req, &s->plan, &s->outcome.enforcement, &err) < 0) {
    snprintf(why, sizeof why, "preparing the %s sandbox: %s", s->adapter->name, err.message);
    goto failed_cleanup;
  }
  int child_in = -1, child_out = -1;
  s->tty = false;
  /* A terminal of the sandbox's own where it has a /dev of its own (its
   * /dev/pts/N is there), else one of the host's. */
  bool inside = o->tty && s->plan.own_dev;
  if (inside) {
    s->tty = true;
    s->plan.pty_inside = true;
  } else if (o->tty && launch_pty_host(-1, o->rows, o->cols, &s->out_fd, &child_out) == 0) {
    s->tty = true;
    s->in_fd = fcntl(s->out_fd, F_DUPFD_CLOEXEC, 0);
    child_in = child_out;
  } else {
    /* Pipes (asked for, or no PTY could be opened): stdout and stderr
     * merged, the launch attributes those of a non-terminal. */
    int out[2], in[2];
    if (pipe2(out, O_CLOEXEC) < 0) {
      snprintf(why, sizeof why, "creating the output pipe: %s", strerror(errno));
      goto failed_cleanup;
    }
    if (pipe2(in, O_CLOEXEC) < 0) {
      close(out[0]), close(out[1]);
      snprintf(why, sizeof why, "creating the input pipe: %s", strerror(errno));
      goto failed_cleanup;
    }
    s->out_fd = out[0];
    child_out = out[1];
    child_in = in[0];
    s->in_fd = in[1];
  }
  s->plan.tty = s->tty;
  if (o->flags & CORRAL_RUN_CHANGES) {
    const char *root = s->req.workspace_roots[0];
    s->seen = observe_begin(watcher_for(m, root), root);
  }
  int r = report_buf_init(&s->report) < 0 ? -ENOMEM
          : launch_start(&s->plan, child_in, child_out, child_out, &s->child, &err);
  if (child_in != child_out && child_in >= 0)
    close(child_in);
  if (child_out >= 0)
    close(child_out);
  if (r == 0 && inside) {
    /* Init made the terminal; without it (init ended first), a closed pipe
     * stands in, and the report says why. */
    s->out_fd = launch_pty_receive(&s->child, -1, o->rows, o->cols);
    int p[2];
    if (s->out_fd < 0 && pipe2(p, O_CLOEXEC) == 0)
      close(p[1]), s->out_fd = p[0];
    s->in_fd = s->out_fd >= 0 ? fcntl(s->out_fd, F_DUPFD_CLOEXEC, 0) : -1;
  }
  fcntl(s->out_fd, F_SETFL, O_NONBLOCK);
  fcntl(s->in_fd, F_SETFL, O_NONBLOCK);
  if (r < 0) {
    snprintf(why, sizeof why, "starting the %s sandbox: %s", s->adapter->name, err.message);
    close(s->out_fd);
    close(s->in_fd);
    s->out_fd = s->in_fd = -1;
    report_buf_free(&s->report);
    drop_observation(s);
    goto failed_cleanup;
  }
  s->facts.adapter_owns_launch = s->plan.adapter_owns_launch;
  s->facts.process_id = s->child.pid;
  s->proxy = proxy_for_run(s->plan.proxy, s->child.proxy_sock, true);
  watch(m, s->out_fd, s, EV_OUT, EPOLLIN);
  watch(m, s->child.pidfd, s, EV_PID, EPOLLIN);
  watch(m, s->child.report_fd, s, EV_REPORT, EPOLLIN);
  return;

failed_cleanup:
  if (s->adapter->ops->cleanup)
    s->adapter->ops->cleanup(s->adapter, &s->plan);
  launch_plan_free(&s->plan);
  s->facts.never_ran = true;
  s->facts.why = why;
failed:;
  launch_report rep = {0};
  classify_outcome(&s->facts, &rep, s->req.name, &s->outcome);
  s->facts.why = NULL;
  s->finished = true;
  s->finished_at = mono_ms();
  s->out_fd = s->in_fd = -1;
}

int corral_session_start(corral_sessions *m, const corral_session_options *o,
                         corral_session_result *res, corral_error *err) {
  corral_session_result_init(res);
  if (!m || !o || !o->request)
    return error_set(err, -EINVAL, EINVAL, "corral_session_start: no request");
  if (o->flags & ~CORRAL_RUN_CHANGES)
    return error_set(err, -EINVAL, EINVAL, "corral_session_start: unknown flag bits %#x",
                     o->flags & ~CORRAL_RUN_CHANGES);
  int r = corral_request_validate(o->request, err);
  if (r < 0)
    return error_prefix(err, "invalid request");
  make_room(m);
  if (m->n >= CORRAL_SESSIONS_MAX)
    return error_set(err, -EBUSY, EBUSY, "too many sessions (%d) and none can be evicted",
                     CORRAL_SESSIONS_MAX);
  struct session *s = calloc(1, sizeof *s);
  if (!s || request_copy(o->request, &s->req) < 0 || !(s->command = command_line(o->request))) {
    if (s)
      free_session(s);
    return error_set(err, -ENOMEM, ENOMEM, "out of memory");
  }
  s->out_fd = s->in_fd = -1;
  s->child.pidfd = s->child.report_fd = -1;
  s->adapter = o->adapter;
  s->id = m->next_id++;
  s->started_ms = s->last_used_ms = real_ms();
  s->last_used_mono = mono_ms();
  m->s[m->n++] = s;
  launch(m, s, o);
  bool cancelled = false;
  int64_t yield = clamp(o->yield_ms, 0, FIRST_YIELD_MAX_MS);
  pump(m, s, mono_ms() + yield, o->cancel, &cancelled, false);
  if (cancelled) /* the caller gave up: end the process, keep what it printed */
    interrupt_session(m, s);
  fill_result(m, s, res);
  return 0;
}

static int unknown(corral_sessions *m, long id, corral_error *err) {
  for (size_t i = 0; i < CORRAL_SESSIONS_MAX && i < m->nevicted; i++)
    if (m->evicted[i] == id)
      return error_set(err, CORRAL_EINVALID, 0, "session %ld: %s", id, EVICTED_MESSAGE);
  return error_set(err, CORRAL_EINVALID, 0, "unknown session %ld", id);
}

int corral_session_continue(corral_sessions *m, long id, const void *input, size_t len,
                            bool interrupt, int64_t yield_ms, corral_session_result *res,
                            corral_error *err) {
  corral_session_result_init(res);
  expire(m);
  struct session *s = find(m, id);
  if (!s)
    return unknown(m, id, err);
  s->last_used_ms = real_ms();
  s->last_used_mono = mono_ms();
  if (interrupt) {
    interrupt_session(m, s);
    fill_result(m, s, res);
    return 0;
  }
  int64_t now = mono_ms();
  int64_t yield;
  if (len > 0) {
    if (s->finished || s->in_fd < 0)
      return error_set(err, CORRAL_EINVALID, 0,
                       "session %ld: stdin is closed (the process %s)", id,
                       s->finished ? "has exited" : "closed its input");
    char *grown = realloc(s->pending, s->pending_len + len);
    if (!grown)
      return error_set(err, -ENOMEM, ENOMEM, "out of memory");
    memcpy(grown + s->pending_len, input, len);
    s->pending = grown;
    s->pending_len += len;
    s->write_deadline = now + WRITE_MAX_MS;
    watch(m, s->in_fd, s, EV_IN, EPOLLOUT);
    yield = clamp(yield_ms, 0, WRITE_MAX_MS);
    /* The write first (bounded on its own), then output until the yield
     * that started with the call. */
    pump_until_written(m, s);
    pump(m, s, now + yield, NULL, NULL, false);
  } else {
    yield = clamp(yield_ms, 0, POLL_YIELD_MAX_MS);
    pump(m, s, now + yield, NULL, NULL, false);
  }
  fill_result(m, s, res);
  return 0;
}

/* What a control key does: in a tty session the keystroke itself (`key`),
 * in a pipe session ^C's SIGINT to the group or ^D's end of input; then
 * output for the yield. */
static int control_key(corral_sessions *m, long id, char key, int64_t yield_ms,
                       corral_session_result *res, corral_error *err) {
  struct session *s = find(m, id);
  if (!s || s->tty || s->finished) {
    bool type = s && s->tty && !s->finished;
    return corral_session_continue(m, id, type ? &key : NULL, type, false, yield_ms, res, err);
  }
  corral_session_result_init(res);
  s->last_used_ms = real_ms();
  s->last_used_mono = mono_ms();
  if (key == '\x03') {
    launch_signal(&s->child, SIGINT); /* init sends it to the command's group */
  } else {
    if (s->pending_len > s->pending_off)
      pump_until_written(m, s);
    close_input(m, s);
  }
  pump(m, s, mono_ms() + clamp(yield_ms, 0, WRITE_MAX_MS), NULL, NULL, false);
  fill_result(m, s, res);
  return 0;
}

int corral_session_interrupt(corral_sessions *m, long id, int64_t yield_ms,
                             corral_session_result *res, corral_error *err) {
  return control_key(m, id, '\x03', yield_ms, res, err);
}

int corral_session_eof(corral_sessions *m, long id, int64_t yield_ms, corral_session_result *res,
                       corral_error *err) {
  return control_key(m, id, '\x04', yield_ms, res, err);
}

int corral_session_running(const corral_sessions *m, long id) {
  const struct session *s = find(m, id);
  if (!s)
    return CORRAL_EINVALID;
  return s->finished ? 0 : 1;
}

int corral_sessions_list(corral_sessions *m, corral_session_info **out, size_t *n) {
  expire(m);
  *out = calloc(m->n ? m->n : 1, sizeof **out);
  *n = 0;
  if (!*out)
    return -ENOMEM;
  for (size_t i = 0; i < m->n; i++) {
    struct session *s = m->s[i];
    corral_session_info *inf = &(*out)[(*n)++];
    inf->id = s->id;
    inf->command = strdup(s->command);
    inf->working_directory = strdup(s->req.working_directory);
    inf->started_ms = s->started_ms;
    inf->last_used_ms = s->last_used_ms;
    inf->tty = s->tty;
    inf->running = !s->reaped && !s->finished; /* a zombie is not running */
    inf->exit = s->finished ? s->outcome.exit : (corral_exit){0};
    inf->tail = malloc(s->tail_len + 1);
    if (inf->tail) {
      memcpy(inf->tail, s->tail, s->tail_len);
      inf->tail[s->tail_len] = '\0';
      inf->tail_len = s->tail_len;
    }
    inf->dropped = s->dropped;
  }
  return 0;
}

void corral_session_info_free(corral_session_info *info, size_t n) {
  for (size_t i = 0; info && i < n; i++) {
    free(info[i].command);
    free(info[i].working_directory);
    free(info[i].tail);
  }
  free(info);
}

int corral_session_stop(corral_sessions *m, long id, corral_error *err) {
  struct session *s = find(m, id);
  if (!s)
    return unknown(m, id, err);
  interrupt_session(m, s);
  remove_session(m, s);
  return 0;
}

static int by_id(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return x < y ? -1 : x > y;
}

int corral_sessions_stop_all(corral_sessions *m, long **ids, size_t *n) {
  *ids = calloc(m->n ? m->n : 1, sizeof **ids);
  *n = 0;
  if (!*ids)
    return -ENOMEM;
  for (size_t i = 0; i < m->n; i++) {
    struct session *s = m->s[i];
    if (s->finished)
      continue;
    (*ids)[(*n)++] = s->id;
    s->interrupted = true;
    s->facts.cancelled = true;
    begin_ending(s);
  }
  /* Everyone got SIGTERM at once; wait for them together, 3 s in all. */
  int64_t deadline = mono_ms() + STOP_ALL_MS;
  for (;;) {
    bool pending = false;
    for (size_t i = 0; i < m->n; i++)
      pending = pending || !m->s[i]->finished;
    int64_t now = mono_ms();
    if (!pending || now >= deadline)
      break;
    process(m, (int)clamp(deadline - now, 0, 100), -1, NULL);
  }
  for (size_t i = 0; i < m->n; i++)
    if (!m->s[i]->finished) {
      launch_kill(&m->s[i]->child);
      m->s[i]->reaped = true;
      m->s[i]->facts.init_killed = true;
      waitpid(m->s[i]->child.pid, NULL, 0);
      conclude(m, m->s[i]);
    }
  while (m->n) {
    size_t k;
    for (k = 0; k < m->n && !m->s[k]->interrupted; k++)
      ;
    if (k == m->n)
      break;
    remove_session(m, m->s[k]);
  }
  if (*n > 1)
    qsort(*ids, *n, sizeof **ids, by_id);
  return 0;
}
