/*
 * proxy.c — the supervisor's proxy engine for network mode `filter`
 * (proxy.h says what it is for).
 *
 * One epoll set: the handover socket, the two listeners, the lookups'
 * socket, a timer, and both ends of every connection.  Each connection
 * goes HEAD (reading the request) -> LOOKUP (names resolved in a thread of
 * its own: getaddrinfo blocks) -> CONNECT (non-blocking, from the host's
 * namespace) -> RELAY, or to CLOSING with the refusal written first.
 * Buffers are taken only while bytes are in flight, so an idle tunnel
 * costs its two descriptors and this struct.  Connections are freed after
 * the batch of events that may still name them.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>

#include "internal.h"
#include "proxy.h"
#include "runner.h"

#define BUF_SIZE (256 * 1024)
/* The head buffer: a request head, and room for what its rewriting adds
 * (a Host line, Connection: close). */
#define HEAD_CAP (PROXY_HEAD_MAX + 512)
/* Kernel socket buffers of the supervisor's sockets are bounded too (left
 * alone they grow to tcp_rmem's and tcp_wmem's maxima, megabytes each):
 * large for the first few connections, for bulk transfers, small for the
 * rest, so a run's connections hold at most about 8 x 4 MiB + 4,088 x
 * 256 KiB of the host's memory. */
#define SOCKBUF_BIG (512 * 1024)
#define SOCKBUF_SMALL (32 * 1024)
#define BIG_CONNS 8
#define CONN_MAX 4096                /* connections at once, per run (and the descriptors') */
#define BUFFERED_MAX (64 << 20)      /* bytes in flight, per run */
#define HEAD_TIMEOUT_MS 10000        /* to send the request */
#define CONNECT_TIMEOUT_MS 20000     /* lookup and connect */
#define LOOKUPS_MAX 8                /* threads resolving at once */
#define LINGER_MS 2000               /* reading away a refused client's bytes */
/* Pipes for splicing, per run.  They count against the user's pipe
 * allowance (fs.pipe-user-pages-soft, 64 MiB by default; past it the
 * user's new pipes get one page): the first few are 1 MiB, for bulk
 * transfers, the rest the default 64 KiB, at most a quarter of the
 * allowance in all; past PIPES_MAX, bytes go through buffers. */
#define PIPES_MAX 128
#define PIPES_BIG 8
#define PIPE_BYTES (1 << 20)
#define ADDRS_MAX 8

enum tag_kind { T_HANDOVER = 1, T_LISTEN, T_LOOKUP, T_TIMER, T_CLIENT, T_UPSTREAM };

struct tag {
  enum tag_kind kind;
  struct conn *c;
  int fd;
  bool socks; /* T_LISTEN: which one */
};

struct buf {
  char *data; /* BUF_SIZE bytes while in use */
  size_t off, len;
  int pr, pw;   /* relaying: a pipe the bytes are spliced through, or -1 */
  size_t piped; /* bytes in it */
};

/* Bytes a direction holds, in the buffer or the pipe. */
static size_t held(const struct buf *b) { return b->len + b->piped; }

enum conn_state { S_HEAD, S_LOOKUP, S_CONNECT, S_RELAY, S_CLOSING, S_DEAD };

struct lookup;

struct conn {
  struct proxy *px;
  struct conn *next, *prev;
  struct conn *qnext;        /* waiting for a lookup thread, or starved */
  struct tag ct, ut;
  int cfd, ufd;
  uint32_t cmask, umask;     /* what epoll has for each (0: not added) */
  bool socks, waiting, starved;
  bool greeted;              /* SOCKS: the greeting is answered */
  bool tunnel_reply;         /* CONNECT: "200" once the upstream is connected */
  enum conn_state st;
  char *head;                /* the request so far (HEAD_CAP bytes); then what goes */
  size_t hlen;               /* upstream first: [pre_off, hlen) */
  size_t pre_off;
  char note[1100];           /* corral's own answer to the client (a refusal, a 200) */
  size_t note_off, note_len;
  bool big;                  /* one of the few with large socket buffers */
  char host[NET_HOST_MAX + 1];
  int port;
  struct sockaddr_storage addrs[ADDRS_MAX];
  socklen_t alens[ADDRS_MAX];
  int naddrs, tried;
  int64_t deadline;          /* -1: none (relaying) */
  struct buf up, down;       /* client -> upstream, upstream -> client */
  bool c_eof, u_eof;         /* read ends done */
  bool c_shut, u_shut;       /* write ends shut after the other side's EOF */
  struct lookup *lk;
};

/* Shared with the lookup threads: the socket they answer on, and whether
 * the proxy is still there to read it (under the lock). */
struct lookups {
  pthread_mutex_t lock;
  bool closed;
  int refs;
  int sock[2];
};

struct lookup {
  struct lookups *sh;
  struct conn *c; /* NULL once the connection is gone (main thread only) */
  char host[NET_HOST_MAX + 1];
  struct addrinfo *res;
  int rc;
};

struct record {
  char scope[NET_HOST_MAX + 16];
  char *reason;
  long count;
};

struct proxy {
  const struct net_rules *rules;
  int ep, timer, handover;
  int listen[2];
  struct tag handover_tag, listen_tag[2], lookup_tag, timer_tag;
  struct conn *conns, *dead, *queue, *starved;
  size_t nconns, pending, buffered, npipes, nbig, conn_max;
  bool paused; /* out of descriptors: the listeners wait for a connection to close */
  int nlookups;
  bool timer_armed;
  struct lookups *lookups;
  struct net_range *own;
  size_t nown;
  bool own_known;
  struct record records[PROXY_DENIALS_MAX];
  size_t nrecords;
  long dropped;
  char (*hosts)[2][NET_HOST_MAX + 1]; /* CORRAL_PROXY_HOSTS: name, address */
  size_t nhosts;
  pthread_t thread;
  int stop; /* eventfd: the thread's end; -1 when no thread runs */
};

/* ------------------------------------------------------------ records */

static void record(struct proxy *p, const char *host, int port, const char *why) {
  char scope[sizeof p->records[0].scope];
  snprintf(scope, sizeof scope, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
  for (size_t i = 0; i < p->nrecords; i++)
    if (strcmp(p->records[i].scope, scope) == 0 && strcmp(p->records[i].reason, why) == 0) {
      p->records[i].count++;
      return;
    }
  char *r = p->nrecords < PROXY_DENIALS_MAX ? strdup(why) : NULL;
  if (!r) {
    p->dropped++;
    return;
  }
  struct record *rec = &p->records[p->nrecords++];
  snprintf(rec->scope, sizeof rec->scope, "%s", scope);
  rec->reason = r;
  rec->count = 1;
}

/* ------------------------------------------------------------ epoll */

/* An end that wants nothing is out of the set: the set is level-triggered,
 * and a half-closed or hung-up socket would be reported over and over. */
static void set_mask(struct proxy *p, int fd, struct tag *t, uint32_t *have, uint32_t want) {
  if (fd < 0 || *have == want)
    return;
  struct epoll_event ev = {.events = want, .data.ptr = t};
  if (!want)
    epoll_ctl(p->ep, EPOLL_CTL_DEL, fd, NULL);
  else if (*have == 0)
    epoll_ctl(p->ep, EPOLL_CTL_ADD, fd, &ev);
  else
    epoll_ctl(p->ep, EPOLL_CTL_MOD, fd, &ev);
  *have = want;
}

static void add_fd(struct proxy *p, int fd, struct tag *t) {
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = t};
  epoll_ctl(p->ep, EPOLL_CTL_ADD, fd, &ev);
}

static void arm_timer(struct proxy *p, bool on) {
  if (on == p->timer_armed)
    return;
  struct itimerspec its = {{on ? 1 : 0, 0}, {on ? 1 : 0, 0}};
  timerfd_settime(p->timer, 0, &its, NULL);
  p->timer_armed = on;
}

/* ------------------------------------------------------------ buffers */

static bool buf_take(struct proxy *p, struct conn *c, struct buf *b) {
  if (b->data)
    return true;
  if (p->buffered + BUF_SIZE > BUFFERED_MAX || !(b->data = malloc(BUF_SIZE))) {
    if (!c->starved) {
      c->starved = true;
      c->qnext = p->starved;
      p->starved = c;
    }
    return false;
  }
  p->buffered += BUF_SIZE;
  b->off = b->len = 0;
  return true;
}

static void pipe_drop(struct proxy *p, struct buf *b) {
  if (b->pr < 0)
    return;
  close(b->pr);
  close(b->pw);
  b->pr = b->pw = -1;
  b->piped = 0;
  p->npipes--;
}

static bool pipe_take(struct proxy *p, struct buf *b) {
  int fds[2];
  if (p->npipes >= PIPES_MAX || pipe2(fds, O_NONBLOCK | O_CLOEXEC) < 0)
    return false;
  if (p->npipes < PIPES_BIG)
    fcntl(fds[1], F_SETPIPE_SZ, PIPE_BYTES);
  b->pr = fds[0];
  b->pw = fds[1];
  p->npipes++;
  return true;
}

static void buf_drop(struct proxy *p, struct buf *b) {
  if (!b->data)
    return;
  free(b->data);
  b->data = NULL;
  b->off = b->len = 0;
  p->buffered -= BUF_SIZE;
}

/* corral's own answers, ahead of anything relayed: in the connection's
 * own room, so that no shortage of buffers can lose one. */
static void note_put(struct conn *c, const void *data, size_t n) {
  if (n > sizeof c->note - c->note_len)
    n = sizeof c->note - c->note_len;
  memcpy(c->note + c->note_len, data, n);
  c->note_len += n;
}

/* Sends data[*off, len) to fd; false on a hard error. */
static bool send_part(int fd, const char *data, size_t *off, size_t len) {
  while (*off < len) {
    ssize_t n = send(fd, data + *off, len - *off, MSG_NOSIGNAL);
    if (n < 0)
      return errno == EAGAIN || errno == EINTR;
    *off += (size_t)n;
  }
  return true;
}

static bool note_flush(struct conn *c) {
  bool ok = send_part(c->cfd, c->note, &c->note_off, c->note_len);
  if (c->note_off == c->note_len)
    c->note_off = c->note_len = 0;
  return ok;
}

/* What goes upstream before anything relayed: the rewritten head and the
 * bytes that came after it. */
static bool pre_flush(struct conn *c) {
  if (!c->head)
    return true;
  bool ok = send_part(c->ufd, c->head, &c->pre_off, c->hlen);
  if (c->pre_off == c->hlen) {
    free(c->head);
    c->head = NULL;
  }
  return ok;
}

static size_t to_client(const struct conn *c) { return c->note_len - c->note_off + held(&c->down); }
static size_t to_upstream(const struct conn *c) {
  return (c->head && c->st != S_HEAD ? c->hlen - c->pre_off : 0) + held(&c->up);
}

static void sockbufs(struct conn *c, int fd) {
  int size = c->big ? SOCKBUF_BIG : SOCKBUF_SMALL;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
}

/* An upstream socket is closed at once, its queued bytes dropped (a
 * graceful close would leave them in the host's memory, orphaned). */
static void close_abort(int fd) {
  struct linger l = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close(fd);
}

/* ------------------------------------------------------------ connections */

static void update(struct conn *c);

static void conn_close(struct conn *c) {
  struct proxy *p = c->px;
  if (c->st == S_DEAD)
    return;
  if (c->st != S_RELAY)
    p->pending--;
  c->st = S_DEAD;
  if (c->cfd >= 0)
    close(c->cfd); /* closing removes it from the epoll set */
  if (c->ufd >= 0)
    close_abort(c->ufd);
  c->cfd = c->ufd = -1;
  if (c->big)
    p->nbig--;
  if (p->paused) { /* a descriptor came free: the listeners take connections again */
    p->paused = false;
    for (int i = 0; i < 2; i++)
      if (p->listen[i] >= 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &p->listen_tag[i]};
        epoll_ctl(p->ep, EPOLL_CTL_MOD, p->listen[i], &ev);
      }
  }
  buf_drop(p, &c->up);
  buf_drop(p, &c->down);
  pipe_drop(p, &c->up);
  pipe_drop(p, &c->down);
  free(c->head);
  c->head = NULL;
  if (c->lk)
    c->lk->c = NULL; /* the thread's answer is dropped when it comes */
  c->lk = NULL;
  if (c->next)
    c->next->prev = c->prev;
  if (c->prev)
    c->prev->next = c->next;
  else
    p->conns = c->next;
  /* Off the waiting and starved queues too. */
  for (struct conn **q = &p->queue; *q; q = &(*q)->qnext)
    if (*q == c) {
      *q = c->qnext;
      break;
    }
  for (struct conn **q = &p->starved; *q; q = &(*q)->qnext)
    if (*q == c) {
      *q = c->qnext;
      break;
    }
  p->nconns--;
  c->next = p->dead;
  p->dead = c;
}

/* Closes once what `down` holds is written (or the deadline passes). */
static void close_after(struct conn *c) {
  struct proxy *p = c->px;
  if (c->ufd >= 0) {
    close_abort(c->ufd);
    c->ufd = -1;
    c->umask = 0;
  }
  if (c->lk) { /* a lookup in flight: its answer is dropped when it comes */
    c->lk->c = NULL;
    c->lk = NULL;
  }
  free(c->head);
  c->head = NULL;
  buf_drop(p, &c->up);
  buf_drop(p, &c->down); /* what was relayed but not yet written goes */
  pipe_drop(p, &c->down);
  if (c->st == S_RELAY)
    p->pending++;
  c->st = S_CLOSING;
  c->deadline = mono_ms() + HEAD_TIMEOUT_MS;
  update(c);
}

/* Says no on the wire, records it, and closes once that is written. */
static void refuse(struct conn *c, int status, const char *why, const char *detail,
                   bool denial) {
  struct proxy *p = c->px;
  char line[700];
  if (denial && c->host[0]) /* the policy said no: a fact for the outcome */
    record(p, c->host, c->port, detail ? detail : why);
  if (c->socks) {
    unsigned char rep[10] = {5, (unsigned char)status, 0, 1};
    note_put(c, rep, sizeof rep);
  } else {
    int n = c->host[0] ? snprintf(line, sizeof line, "corral: connection to %s:%d refused: %s\n",
                                  c->host, c->port, detail ? detail : why)
                       : snprintf(line, sizeof line, "corral: bad proxy request: %s\n", why);
    char head[900];
    const char *text = status == 403   ? "Forbidden"
                       : status == 408 ? "Request Timeout"
                       : status == 431 ? "Request Header Fields Too Large"
                       : status == 502 ? "Bad Gateway"
                       : status == 503 ? "Service Unavailable"
                       : status == 504 ? "Gateway Timeout"
                                       : "Bad Request";
    int h = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     "Content-Length: %d\r\n\r\n%s",
                     status, text, n, line);
    note_put(c, head, (size_t)h);
  }
  close_after(c);
}

/* Writes what b holds to fd; false on a hard error. */
static bool flush(struct proxy *p, int fd, struct buf *b) {
  while (b->len) {
    ssize_t n = send(fd, b->data + b->off, b->len, MSG_NOSIGNAL);
    if (n < 0)
      return errno == EAGAIN || errno == EINTR;
    b->off += (size_t)n;
    b->len -= (size_t)n;
  }
  buf_drop(p, b);
  return true;
}

/* The interest each end has now, from the state and the buffers. */
static void update(struct conn *c) {
  struct proxy *p = c->px;
  uint32_t cw = 0, uw = 0;
  switch (c->st) {
  case S_HEAD:
    cw = EPOLLIN;
    break;
  case S_LOOKUP:
    break;
  case S_CONNECT:
    uw = EPOLLOUT;
    break;
  case S_RELAY:
    if (!to_upstream(c) && !c->c_eof && !c->starved)
      cw |= EPOLLIN;
    if (to_client(c))
      cw |= EPOLLOUT;
    if (!to_client(c) && !c->u_eof && !c->starved)
      uw |= EPOLLIN;
    if (to_upstream(c))
      uw |= EPOLLOUT;
    break;
  case S_CLOSING:
    if (to_client(c)) {
      cw = EPOLLOUT;
      break;
    }
    /* Written: the client is told the end, and what it still sends is
     * read away for a moment, so that closing with unread bytes does not
     * reset the connection before it has read the answer. */
    if (!c->c_shut) {
      shutdown(c->cfd, SHUT_WR);
      c->c_shut = true;
      c->deadline = mono_ms() + LINGER_MS;
    }
    cw = EPOLLIN;
    break;
  case S_DEAD:
    return;
  }
  set_mask(p, c->cfd, &c->ct, &c->cmask, cw);
  if (c->ufd >= 0)
    set_mask(p, c->ufd, &c->ut, &c->umask, uw);
}

/* ------------------------------------------------------------ lookups */

static void lookups_unref(struct lookups *sh) {
  pthread_mutex_lock(&sh->lock);
  bool last = --sh->refs == 0;
  pthread_mutex_unlock(&sh->lock);
  if (last) {
    close(sh->sock[1]);
    pthread_mutex_destroy(&sh->lock);
    free(sh);
  }
}

static void lookup_free(struct lookup *lk) {
  if (lk->res)
    freeaddrinfo(lk->res);
  free(lk);
}

static void *lookup_thread(void *arg) {
  struct lookup *lk = arg;
  struct lookups *sh = lk->sh;
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  lk->rc = getaddrinfo(lk->host, NULL, &hints, &lk->res);
  pthread_mutex_lock(&sh->lock);
  bool sent = !sh->closed && send(sh->sock[1], &lk, sizeof lk, MSG_NOSIGNAL) == sizeof lk;
  pthread_mutex_unlock(&sh->lock);
  if (!sent)
    lookup_free(lk);
  lookups_unref(sh);
  return NULL;
}

static void connect_next(struct conn *c);

/* The addresses a name gave: every one is checked (one that may not be
 * reached refuses the name: it could be given the next time). */
static void addresses_ready(struct conn *c, const struct addrinfo *res) {
  struct proxy *p = c->px;
  if (!p->own_known) {
    p->own = net_own_addresses(&p->nown);
    p->own_known = true;
  }
  c->naddrs = 0;
  for (const struct addrinfo *a = res; a; a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6)
      continue;
    const char *why = net_address_check(p->rules, a->ai_addr, p->own, p->nown);
    if (why) {
      char text[INET6_ADDRSTRLEN] = "", detail[400];
      const void *in = a->ai_family == AF_INET
                           ? (const void *)&((struct sockaddr_in *)(void *)a->ai_addr)->sin_addr
                           : (const void *)&((struct sockaddr_in6 *)(void *)a->ai_addr)->sin6_addr;
      inet_ntop(a->ai_family, in, text, sizeof text);
      snprintf(detail, sizeof detail, "%s resolves to %s, %s (allow it with --allow-address)",
               c->host, text, why);
      refuse(c, c->socks ? 2 : 403, why, detail, true);
      return;
    }
    if (c->naddrs < ADDRS_MAX) {
      memcpy(&c->addrs[c->naddrs], a->ai_addr, a->ai_addrlen);
      c->alens[c->naddrs] = a->ai_addrlen;
      if (a->ai_family == AF_INET)
        ((struct sockaddr_in *)(void *)&c->addrs[c->naddrs])->sin_port = htons((uint16_t)c->port);
      else
        ((struct sockaddr_in6 *)(void *)&c->addrs[c->naddrs])->sin6_port = htons((uint16_t)c->port);
      c->naddrs++;
    }
  }
  if (!c->naddrs) {
    refuse(c, c->socks ? 4 : 502, "the name has no address", NULL, false);
    return;
  }
  c->st = S_CONNECT;
  c->tried = 0;
  connect_next(c);
}

/* A name in the test override (CORRAL_PROXY_HOSTS), or an IP literal:
 * answered here, without a thread. */
static bool lookup_here(struct conn *c) {
  struct proxy *p = c->px;
  const char *addr = NULL;
  for (size_t i = 0; i < p->nhosts; i++)
    if (strcmp(p->hosts[i][0], c->host) == 0)
      addr = p->hosts[i][1];
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_NUMERICHOST}, *res = NULL;
  if (getaddrinfo(addr ? addr : c->host, NULL, &hints, &res) != 0)
    return false;
  addresses_ready(c, res);
  freeaddrinfo(res);
  return true;
}

static void start_lookup(struct conn *c) {
  struct proxy *p = c->px;
  if (c->st != S_LOOKUP) /* lookup and connect, from here on */
    c->deadline = mono_ms() + CONNECT_TIMEOUT_MS;
  c->st = S_LOOKUP;
  update(c);
  if (lookup_here(c))
    return;
  if (p->nlookups >= LOOKUPS_MAX) {
    c->waiting = true;
    struct conn **q = &p->queue;
    while (*q)
      q = &(*q)->qnext;
    c->qnext = NULL;
    *q = c;
    return;
  }
  struct lookup *lk = calloc(1, sizeof *lk);
  pthread_t t;
  pthread_attr_t attr;
  if (!lk) {
    refuse(c, c->socks ? 1 : 503, "out of memory", NULL, false);
    return;
  }
  snprintf(lk->host, sizeof lk->host, "%s", c->host);
  lk->c = c;
  lk->sh = p->lookups;
  pthread_mutex_lock(&p->lookups->lock);
  p->lookups->refs++;
  pthread_mutex_unlock(&p->lookups->lock);
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  /* The thread must not take signals meant for the supervisor's loop. */
  sigset_t all, was;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &was);
  int e = pthread_create(&t, &attr, lookup_thread, lk);
  pthread_sigmask(SIG_SETMASK, &was, NULL);
  pthread_attr_destroy(&attr);
  if (e) {
    lookups_unref(p->lookups);
    free(lk);
    refuse(c, c->socks ? 1 : 503, "no thread to resolve the name", NULL, false);
    return;
  }
  c->lk = lk;
  p->nlookups++;
}

static void lookups_answered(struct proxy *p) {
  struct lookup *lk;
  while (recv(p->lookups->sock[0], &lk, sizeof lk, MSG_DONTWAIT) == sizeof lk) {
    p->nlookups--;
    struct conn *c = lk->c;
    if (c && c->st == S_LOOKUP) {
      c->lk = NULL;
      if (lk->rc != 0)
        refuse(c, c->socks ? 4 : 502, "the name could not be resolved", NULL, false);
      else
        addresses_ready(c, lk->res);
    }
    lookup_free(lk);
    while (p->queue && p->nlookups < LOOKUPS_MAX) {
      struct conn *w = p->queue;
      p->queue = w->qnext;
      w->waiting = false;
      if (w->st == S_LOOKUP)
        start_lookup(w);
    }
  }
}

/* ------------------------------------------------------------ connect */

static void connected(struct conn *c) {
  struct proxy *p = c->px;
  int one = 1;
  setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  p->pending--;
  c->st = S_RELAY;
  c->deadline = -1;
  static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";
  static const unsigned char granted[10] = {5, 0, 0, 1};
  if (c->socks)
    note_put(c, granted, sizeof granted);
  else if (c->tunnel_reply)
    note_put(c, established, sizeof established - 1);
  if (!pre_flush(c) || !note_flush(c)) {
    conn_close(c);
    return;
  }
  update(c);
}

static void connect_next(struct conn *c) {
  while (c->tried < c->naddrs) {
    int i = c->tried++;
    if (c->ufd >= 0) {
      close_abort(c->ufd);
      c->ufd = -1;
      c->umask = 0;
    }
    c->ufd = socket(c->addrs[i].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->ufd < 0)
      continue;
    sockbufs(c, c->ufd);
    if (connect(c->ufd, (struct sockaddr *)&c->addrs[i], c->alens[i]) == 0) {
      connected(c);
      return;
    }
    if (errno == EINPROGRESS) {
      update(c);
      return;
    }
  }
  refuse(c, c->socks ? 5 : 502, "the host did not accept the connection", NULL, false);
}

static void connect_done(struct conn *c) {
  int e = 0;
  socklen_t l = sizeof e;
  if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &e, &l) < 0)
    e = errno;
  if (e == 0)
    connected(c);
  else
    connect_next(c);
}

/* ------------------------------------------------------------ requests */

static void checked(struct conn *c) {
  const char *reason;
  const char *why = net_rules_check(c->px->rules, c->host, c->port, &reason);
  if (why) {
    char detail[600];
    snprintf(detail, sizeof detail, "%s%s%s", why, reason ? ": " : "", reason ? reason : "");
    refuse(c, c->socks ? 2 : 403, why, detail, true);
    return;
  }
  start_lookup(c);
}

/* The request so far: complete, refused, or more to read. */
static void head_parse(struct conn *c) {
  if (c->socks) {
    struct socks_request rq;
    int rep, r = proxy_parse_socks((unsigned char *)c->head, c->hlen, &rq, &rep);
    if (rq.greeting_len && c->hlen >= rq.greeting_len && !c->greeted) {
      if (!rq.no_auth) { /* 0xff: no method offered is acceptable */
        static const unsigned char none[2] = {5, 0xff};
        note_put(c, none, sizeof none);
        close_after(c);
        return;
      }
      static const unsigned char ok[2] = {5, 0};
      note_put(c, ok, sizeof ok);
      c->greeted = true;
      if (!note_flush(c)) {
        conn_close(c);
        return;
      }
    }
    if (r < 0) { /* no host is kept from a malformed request */
      refuse(c, rep, rep == 2 ? "not a host name" : "a malformed SOCKS5 request", NULL, false);
      return;
    }
    if (r != 1) {
      if (c->hlen >= PROXY_HEAD_MAX)
        refuse(c, 1, "the request is too long", NULL, false);
      return;
    }
    snprintf(c->host, sizeof c->host, "%s", rq.host);
    c->port = rq.port;
    c->pre_off = rq.request_len; /* bytes after the request: the tunnel's first */
    checked(c);
    return;
  }
  struct http_request rq;
  const char *why = NULL;
  int status;
  int r = proxy_parse_http(c->head, c->hlen, &rq, &why, &status);
  if (r == 0)
    return;
  if (r < 0) {
    refuse(c, status, why, NULL, false);
    return;
  }
  snprintf(c->host, sizeof c->host, "%s", rq.host);
  c->port = rq.port;
  /* What goes upstream first, in the head buffer: the rewritten head of a
   * plain request, and any bytes that came after the head. */
  size_t rest = c->hlen - rq.head_len;
  if (rq.forward) {
    if (rq.forward_len + rest > HEAD_CAP) { /* cannot be: the rewriting adds less */
      free(rq.forward);
      refuse(c, 431, "the request head is too long", NULL, false);
      return;
    }
    memmove(c->head + rq.forward_len, c->head + rq.head_len, rest);
    memcpy(c->head, rq.forward, rq.forward_len);
    c->hlen = rq.forward_len + rest;
    c->pre_off = 0;
    free(rq.forward);
  } else {
    c->pre_off = rq.head_len;
  }
  c->tunnel_reply = rq.connect;
  checked(c);
}

static void client_head(struct conn *c) {
  ssize_t n = recv(c->cfd, c->head + c->hlen, PROXY_HEAD_MAX - c->hlen, 0);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
    conn_close(c);
    return;
  }
  if (n > 0) {
    c->hlen += (size_t)n;
    head_parse(c);
  }
}

/* ------------------------------------------------------------ relay */

/* From `from` into b's buffer, then on to `to`: where no pipe can be had. */
static bool pump_copy(struct conn *c, int from, int to, struct buf *b, bool *eof) {
  struct proxy *p = c->px;
  if (!b->len && !*eof) {
    if (!buf_take(p, c, b))
      return true;
    ssize_t n = recv(from, b->data, BUF_SIZE, 0);
    if (n == 0)
      *eof = true;
    else if (n < 0 && errno != EAGAIN && errno != EINTR)
      return false;
    else if (n > 0)
      b->off = 0, b->len = (size_t)n;
    if (!b->len)
      buf_drop(p, b);
  }
  return !b->len || flush(p, to, b);
}

/* From `from` through b's pipe to `to`, without copying the bytes through
 * this process; a few rounds while both sides keep up. */
static bool pump_splice(int from, int to, struct buf *b, bool *eof) {
  for (int round = 0; round < 8; round++) {
    bool moved = false;
    if (!b->piped && !*eof) {
      ssize_t n = splice(from, NULL, b->pw, NULL, PIPE_BYTES, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
      if (n == 0)
        *eof = true;
      else if (n > 0)
        b->piped = (size_t)n, moved = true;
      else if (errno != EAGAIN && errno != EINTR)
        return false;
    }
    if (b->piped) {
      ssize_t n = splice(b->pr, NULL, to, NULL, b->piped, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
      if (n > 0)
        b->piped -= (size_t)n, moved = true;
      else if (n < 0 && errno != EAGAIN && errno != EINTR)
        return false;
    }
    if (!moved || b->piped || *eof)
      break;
  }
  return true;
}

static bool pump(struct conn *c, int from, int to, struct buf *b, bool *eof, bool *shut) {
  struct proxy *p = c->px;
  /* corral's own bytes first: its answer to the client, the head upstream. */
  bool first = b == &c->down ? note_flush(c) : pre_flush(c);
  if (!first)
    return false;
  if (b == &c->down ? c->note_len : c->head != NULL)
    return true; /* still being written */
  if (b->len && !flush(p, to, b))
    return false;
  if (!b->len) {
    bool ok = b->pr >= 0 || pipe_take(p, b) ? pump_splice(from, to, b, eof)
                                             : pump_copy(c, from, to, b, eof);
    if (!ok)
      return false;
  }
  if (*eof && !held(b) && !*shut) {
    shutdown(to, SHUT_WR);
    *shut = true;
  }
  return true;
}

static void relay(struct conn *c) {
  if (!pump(c, c->cfd, c->ufd, &c->up, &c->c_eof, &c->u_shut) ||
      !pump(c, c->ufd, c->cfd, &c->down, &c->u_eof, &c->c_shut)) {
    conn_close(c);
    return;
  }
  if (c->c_shut && c->u_shut) {
    conn_close(c);
    return;
  }
  update(c);
}

/* Buffers came free: the starved connections try again. */
static void wake_starved(struct proxy *p) {
  while (p->starved && p->buffered + BUF_SIZE <= BUFFERED_MAX) {
    struct conn *c = p->starved;
    p->starved = c->qnext;
    c->starved = false;
    if (c->st == S_RELAY)
      relay(c);
    else
      update(c);
  }
}

/* ------------------------------------------------------------ events */

static void accept_all(struct proxy *p, int fd, bool socks) {
  for (;;) {
    int s = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (s < 0 && (errno == EMFILE || errno == ENFILE)) {
      /* Out of descriptors: the listeners wait until a connection closes
       * (the level-triggered set would spin on them meanwhile). */
      p->paused = true;
      for (int i = 0; i < 2; i++)
        if (p->listen[i] >= 0) {
          struct epoll_event ev = {.events = 0, .data.ptr = &p->listen_tag[i]};
          epoll_ctl(p->ep, EPOLL_CTL_MOD, p->listen[i], &ev);
        }
      return;
    }
    if (s < 0)
      return;
    struct conn *c = p->nconns < p->conn_max ? calloc(1, sizeof *c) : NULL;
    char *head = c ? malloc(HEAD_CAP) : NULL;
    if (!head) {
      static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
                                 "Content-Length: 37\r\n\r\ncorral: too many proxy connections\r\n\r\n";
      if (!socks)
        send(s, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      close(s);
      free(c);
      continue;
    }
    int one = 1; /* small answers (a 200, a SOCKS reply) go out at once */
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->px = p;
    c->big = p->nbig < BIG_CONNS;
    p->nbig += c->big;
    sockbufs(c, s);
    c->cfd = s;
    c->ufd = -1;
    c->socks = socks;
    c->head = head;
    c->up.pr = c->up.pw = c->down.pr = c->down.pw = -1;
    c->ct = (struct tag){T_CLIENT, c, -1, false};
    c->ut = (struct tag){T_UPSTREAM, c, -1, false};
    c->deadline = mono_ms() + HEAD_TIMEOUT_MS;
    c->next = p->conns;
    if (p->conns)
      p->conns->prev = c;
    p->conns = c;
    p->nconns++;
    p->pending++;
    update(c);
  }
}

static void take_listeners(struct proxy *p) {
  char byte, ctrl[CMSG_SPACE(2 * sizeof(int))] __attribute__((aligned(8)));
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctrl,
                       .msg_controllen = sizeof ctrl};
  ssize_t r = recvmsg(p->handover, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (r < 0 && errno == EAGAIN)
    return;
  struct cmsghdr *cm = r == 1 ? CMSG_FIRSTHDR(&msg) : NULL;
  if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
      cm->cmsg_len == CMSG_LEN(2 * sizeof(int))) {
    memcpy(p->listen, CMSG_DATA(cm), sizeof p->listen);
    for (int i = 0; i < 2; i++) {
      fcntl(p->listen[i], F_SETFL, O_NONBLOCK);
      p->listen_tag[i] = (struct tag){T_LISTEN, NULL, p->listen[i], i == 1};
      add_fd(p, p->listen[i], &p->listen_tag[i]);
    }
  }
  close(p->handover); /* one message, or init is gone */
  p->handover = -1;
}

static void tick(struct proxy *p) {
  uint64_t n;
  if (read(p->timer, &n, sizeof n) < 0 && errno != EAGAIN)
    return;
  int64_t now = mono_ms();
  for (struct conn *c = p->conns, *next; c; c = next) {
    next = c->next;
    if (c->deadline < 0 || now < c->deadline)
      continue;
    if (c->st == S_HEAD)
      refuse(c, c->socks ? 1 : 408, "the request took longer than 10 s to send", NULL, false);
    else if (c->st == S_CLOSING)
      conn_close(c);
    else
      refuse(c, c->socks ? 4 : 504, "the host did not answer in time", NULL, false);
  }
}

/* Reads away what a refused client still sends; false at its end. */
static bool drain(struct conn *c) {
  char scratch[4096];
  for (int i = 0; i < 16; i++) {
    ssize_t n = recv(c->cfd, scratch, sizeof scratch, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
      return false;
    if (n < 0)
      return true;
  }
  return true;
}

static void on_conn(struct conn *c, bool upstream, uint32_t ev) {
  switch (c->st) {
  case S_HEAD:
    if (!upstream)
      client_head(c);
    break;
  case S_CONNECT:
    if (upstream)
      connect_done(c);
    break;
  case S_RELAY:
    relay(c);
    break;
  case S_CLOSING:
    if (upstream)
      break;
    if (ev & EPOLLERR)
      conn_close(c);
    else if (!note_flush(c))
      conn_close(c);
    else if (!c->note_len && c->c_shut && !drain(c))
      conn_close(c);
    else
      update(c);
    break;
  default:
    break;
  }
}

void proxy_process(struct proxy *p) {
  struct epoll_event ev[64];
  int n = epoll_wait(p->ep, ev, 64, 0);
  for (int i = 0; i < n; i++) {
    struct tag *t = ev[i].data.ptr;
    switch (t->kind) {
    case T_HANDOVER:
      take_listeners(p);
      break;
    case T_LISTEN:
      accept_all(p, t->fd, t->socks);
      break;
    case T_LOOKUP:
      lookups_answered(p);
      break;
    case T_TIMER:
      tick(p);
      break;
    case T_CLIENT:
    case T_UPSTREAM:
      if (t->c->st != S_DEAD)
        on_conn(t->c, t->kind == T_UPSTREAM, ev[i].events);
      break;
    }
  }
  while (p->dead) {
    struct conn *c = p->dead;
    p->dead = c->next;
    free(c);
  }
  wake_starved(p);
  arm_timer(p, p->pending > 0);
}

/* ------------------------------------------------------------ the proxy */

/* CORRAL_PROXY_HOSTS names a file of "address name..." lines (the format
 * of /etc/hosts) that the proxy resolves before the system does: for
 * tests, which must not change the machine's own resolution. */
static void load_hosts(struct proxy *p) {
  const char *path = getenv("CORRAL_PROXY_HOSTS");
  FILE *f = path && *path ? fopen(path, "re") : NULL;
  if (!f)
    return;
  char line[1024];
  while (fgets(line, sizeof line, f) && p->nhosts < 256) {
    char *save = NULL, *addr = strtok_r(line, " \t\r\n", &save);
    if (!addr || addr[0] == '#')
      continue;
    for (char *name; (name = strtok_r(NULL, " \t\r\n", &save)) && p->nhosts < 256;) {
      void *g = realloc(p->hosts, (p->nhosts + 1) * sizeof *p->hosts);
      if (!g)
        break;
      p->hosts = g;
      if (!net_host_normalize(name, strlen(name), p->hosts[p->nhosts][0]))
        continue;
      snprintf(p->hosts[p->nhosts][1], sizeof p->hosts[0][1], "%s", addr);
      p->nhosts++;
    }
  }
  fclose(f);
}

/* Each connection holds two descriptors: the soft limit is raised to the
 * hard one, as servers do. */
static size_t enough_descriptors(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
    return 16;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  /* Two per connection, beside the pipes and what the process has. */
  rlim_t spare = rl.rlim_cur > 256 + 2 * PIPES_MAX ? rl.rlim_cur - 256 - 2 * PIPES_MAX : 32;
  return spare / 2 < CONN_MAX ? spare / 2 : CONN_MAX;
}

static void nss_builtin(void);

/* glibc's own: which NSS services a database uses, in place of
 * nsswitch.conf's line.  corral is a static binary, and the modules a
 * static glibc would load (mdns, resolve, mymachines) are the system's
 * shared objects, of another build: lookups use the two built in. */
extern int __nss_configure_lookup(const char *db, const char *service_line);
static void nss_builtin(void) { __nss_configure_lookup("hosts", "files dns"); }

struct proxy *proxy_new(const struct net_rules *rules) {
  static pthread_once_t nss_once = PTHREAD_ONCE_INIT;
  pthread_once(&nss_once, nss_builtin);
  struct proxy *p = calloc(1, sizeof *p);
  struct lookups *sh = calloc(1, sizeof *sh);
  if (!p || !sh) {
    free(p);
    free(sh);
    return NULL;
  }
  p->rules = rules;
  p->handover = p->listen[0] = p->listen[1] = p->stop = -1;
  p->ep = epoll_create1(EPOLL_CLOEXEC);
  p->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  pthread_mutex_init(&sh->lock, NULL);
  sh->refs = 1;
  p->lookups = sh;
  if (p->ep < 0 || p->timer < 0 ||
      socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sh->sock) < 0) {
    sh->sock[0] = sh->sock[1] = -1;
    proxy_free(p);
    return NULL;
  }
  p->timer_tag = (struct tag){T_TIMER, NULL, p->timer, false};
  p->lookup_tag = (struct tag){T_LOOKUP, NULL, sh->sock[0], false};
  add_fd(p, p->timer, &p->timer_tag);
  add_fd(p, sh->sock[0], &p->lookup_tag);
  load_hosts(p);
  p->conn_max = enough_descriptors();
  return p;
}

void proxy_attach(struct proxy *p, int sock) {
  if (sock < 0)
    return;
  p->handover = sock;
  p->handover_tag = (struct tag){T_HANDOVER, NULL, sock, false};
  add_fd(p, sock, &p->handover_tag);
}

int proxy_fd(const struct proxy *p) { return p->ep; }

int proxy_conclude(struct proxy *p, corral_outcome *out) {
  if (!p || (!p->nrecords && !p->dropped))
    return 0;
  for (size_t i = 0; i < p->nrecords; i++) {
    char text[900];
    snprintf(text, sizeof text, "connection to %s refused: %s", p->records[i].scope,
             p->records[i].reason);
    if (outcome_add_denial(out, CORRAL_CAP_EXTERNAL_NETWORK, p->records[i].scope, text, true,
                           p->records[i].count) < 0)
      return -ENOMEM;
  }
  out->denials_dropped += p->dropped;
  outcome_denied_after_refusal(out);
  return 0;
}

static void *proxy_thread(void *arg) {
  struct proxy *p = arg;
  for (;;) {
    struct pollfd fds[2] = {{.fd = p->ep, .events = POLLIN}, {.fd = p->stop, .events = POLLIN}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR)
      break;
    if (fds[1].revents)
      break;
    if (fds[0].revents)
      proxy_process(p);
  }
  return NULL;
}

bool proxy_thread_start(struct proxy *p) {
  p->stop = eventfd(0, EFD_CLOEXEC);
  if (p->stop < 0)
    return false;
  sigset_t all, was;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &was);
  int e = pthread_create(&p->thread, NULL, proxy_thread, p);
  pthread_sigmask(SIG_SETMASK, &was, NULL);
  if (e) {
    close(p->stop);
    p->stop = -1;
    return false;
  }
  return true;
}

void proxy_thread_stop(struct proxy *p) {
  if (!p || p->stop < 0)
    return;
  uint64_t one = 1;
  ssize_t ignored = write(p->stop, &one, sizeof one);
  (void)ignored;
  pthread_join(p->thread, NULL);
  close(p->stop);
  p->stop = -1;
  proxy_process(p); /* what came while it stopped */
}

struct proxy *proxy_for_run(const struct net_rules *rules, int sock, bool threaded) {
  struct proxy *p = rules ? proxy_new(rules) : NULL;
  if (p)
    proxy_attach(p, sock); /* it owns the socket now */
  else if (sock >= 0)
    close(sock);
  if (p && threaded && !proxy_thread_start(p)) {
    proxy_free(p); /* closes the handover too */
    p = NULL;
  }
  return p;
}

void proxy_free(struct proxy *p) {
  if (!p)
    return;
  proxy_thread_stop(p);
  while (p->conns)
    conn_close(p->conns);
  while (p->dead) {
    struct conn *c = p->dead;
    p->dead = c->next;
    free(c);
  }
  struct lookups *sh = p->lookups;
  if (sh) {
    /* Answers already sent are freed here; a thread still resolving sees
     * `closed` and frees its own. */
    pthread_mutex_lock(&sh->lock);
    sh->closed = true;
    struct lookup *lk;
    while (sh->sock[0] >= 0 && recv(sh->sock[0], &lk, sizeof lk, MSG_DONTWAIT) == sizeof lk)
      lookup_free(lk);
    pthread_mutex_unlock(&sh->lock);
    if (sh->sock[0] >= 0)
      close(sh->sock[0]);
    lookups_unref(sh);
  }
  for (int i = 0; i < 2; i++)
    if (p->listen[i] >= 0)
      close(p->listen[i]);
  if (p->handover >= 0)
    close(p->handover);
  if (p->timer >= 0)
    close(p->timer);
  if (p->ep >= 0)
    close(p->ep);
  for (size_t i = 0; i < p->nrecords; i++)
    free(p->records[i].reason);
  free(p->own);
  free(p->hosts);
  free(p);
}
