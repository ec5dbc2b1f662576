/*
 * refusals.c — init hears the command's hard links, writes and
 * connections, and records the ones the sandbox refuses.
 *
 * A seccomp filter, loaded by init after the sandbox's setup and inherited
 * by the command, hands init (a user notification) the calls that change
 * the file system by path and the calls that reach an address.  Init looks
 * at each while the caller waits, then lets it go on: the kernel's walls
 * (read-only mounts, the closed network namespace) stay the only
 * enforcement, and this only says what they refused.
 *
 * Two facts come out of it:
 *   - a hard link was made (link, linkat).  That is the kernel's word: the
 *     change report (watcher.c) then compares every file.  Nothing of the
 *     call's arguments is needed for it.
 *   - a write or a connection the sandbox refuses.  The path or address is
 *     read from the command's memory and resolved as the command sees it
 *     (its cwd and descriptors, through /proc); a write is a refusal when
 *     the mount it lands on is read-only (fstatvfs, the kernel's word on
 *     the mount) and the plan does not make it writable; a connection,
 *     when it leaves loopback and the plan closes the network.  What the
 *     command names is its to choose, so a record is a hint for people and
 *     agents, never an input to a decision of corral's.
 *
 * Init must not allocate here (the supervisor may be multithreaded): the
 * records are a fixed table, identical ones counted, and written to the
 * report at the end.  Every ABI the sandbox's own filter admits is
 * covered: a 32-bit or x32 binary's write is a write too.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/net.h>
#include <arpa/inet.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "launch.h"
#include "policy.h"

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP 1
#endif
#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif

/* What a call does, and where its path is. */
enum call {
  C_LINK = 1, /* link(old, new) */
  C_LINKAT,   /* linkat(olddir, old, newdir, new, flags) */
  C_OPEN,     /* open(path, flags) */
  C_OPENAT,   /* openat(dir, path, flags) */
  C_OPENAT2,  /* openat2(dir, path, how) */
  C_CREAT,    /* creat(path) */
  C_MAKE,     /* mkdir, mknod, symlink's target name: (path) at arg k */
  C_MAKEAT,   /* mkdirat, mknodat: (dir, path) */
  C_SYMLINKAT, /* symlinkat(target, dir, path) */
  C_REMOVE,   /* unlink, rmdir (path) */
  C_REMOVEAT, /* unlinkat(dir, path, flags) */
  C_RENAME,   /* rename(old, new) */
  C_RENAMEAT, /* renameat, renameat2 (olddir, old, newdir, new) */
  C_CHANGE,   /* truncate, chmod, chown, utime(s), setxattr...: (path), following links */
  C_LCHANGE,  /* lchown, lsetxattr, lremovexattr: (path), not following */
  C_CHANGEAT, /* fchmodat, fchownat (dir, path, ..., flags at arg k), futimesat, utimensat */
  C_XATTRAT,  /* setxattrat, removexattrat (dir, path, at_flags) */
  C_CONNECT,  /* connect, sendto: (fd, addr, len) or sendto's (.., addr at 4, len at 5) */
  C_SENDTO,
  C_SOCKETCALL, /* i386's: (call, args) */
};

/* A condition in the filter, so that the common calls that cannot be
 * refused (reads) never wait on init. */
enum cond { ALWAYS, FLAGS, NONZERO, SOCKETCALL };

struct call_nr {
  unsigned nr;
  unsigned char call, cond, arg; /* arg: which argument the condition reads */
  unsigned char aux;             /* C_CHANGEAT: the flags' argument (0: none) */
};

#define OPEN_WRITES (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)

/* The calls of each ABI; `X` numbers are shared by x86_64 and x32. */
#define X86_64_CALLS(o)                                                                     \
  {o | 86, C_LINK, ALWAYS, 0, 0}, {o | 265, C_LINKAT, ALWAYS, 0, 0},                        \
      {o | 2, C_OPEN, FLAGS, 1, 0}, {o | 257, C_OPENAT, FLAGS, 2, 0},                       \
      {o | 437, C_OPENAT2, ALWAYS, 0, 0}, {o | 85, C_CREAT, ALWAYS, 0, 0},                  \
      {o | 83, C_MAKE, ALWAYS, 0, 0}, {o | 133, C_MAKE, ALWAYS, 0, 0},                      \
      {o | 88, C_MAKE, ALWAYS, 0, 1}, {o | 258, C_MAKEAT, ALWAYS, 0, 0},                    \
      {o | 259, C_MAKEAT, ALWAYS, 0, 0}, {o | 266, C_SYMLINKAT, ALWAYS, 0, 0},              \
      {o | 87, C_REMOVE, ALWAYS, 0, 0}, {o | 84, C_REMOVE, ALWAYS, 0, 0},                   \
      {o | 263, C_REMOVEAT, ALWAYS, 0, 0}, {o | 82, C_RENAME, ALWAYS, 0, 0},                \
      {o | 264, C_RENAMEAT, ALWAYS, 0, 0}, {o | 316, C_RENAMEAT, ALWAYS, 0, 0},             \
      {o | 76, C_CHANGE, ALWAYS, 0, 0}, {o | 90, C_CHANGE, ALWAYS, 0, 0},                   \
      {o | 92, C_CHANGE, ALWAYS, 0, 0}, {o | 132, C_CHANGE, ALWAYS, 0, 0},                  \
      {o | 235, C_CHANGE, ALWAYS, 0, 0}, {o | 188, C_CHANGE, ALWAYS, 0, 0},                 \
      {o | 197, C_CHANGE, ALWAYS, 0, 0}, {o | 94, C_LCHANGE, ALWAYS, 0, 0},                 \
      {o | 189, C_LCHANGE, ALWAYS, 0, 0}, {o | 198, C_LCHANGE, ALWAYS, 0, 0},               \
      {o | 268, C_CHANGEAT, ALWAYS, 0, 0}, {o | 452, C_CHANGEAT, ALWAYS, 0, 3},             \
      {o | 260, C_CHANGEAT, ALWAYS, 0, 4}, {o | 261, C_CHANGEAT, ALWAYS, 0, 0},             \
      {o | 280, C_CHANGEAT, NONZERO, 1, 3}, {o | 463, C_XATTRAT, ALWAYS, 0, 0},             \
      {o | 466, C_XATTRAT, ALWAYS, 0, 0}, {o | 42, C_CONNECT, ALWAYS, 0, 0}, {                \
    o | 44, C_SENDTO, NONZERO, 4, 0                                                         \
  }

struct abi {
  unsigned arch;
  const struct call_nr *calls;
  size_t n;
};

#if defined(__x86_64__)
static const struct call_nr x86_64_calls[] = {X86_64_CALLS(0), X86_64_CALLS(0x40000000u)};
static const struct call_nr i386_calls[] = {
    {9, C_LINK, ALWAYS, 0, 0},        {303, C_LINKAT, ALWAYS, 0, 0},
    {5, C_OPEN, FLAGS, 1, 0},         {295, C_OPENAT, FLAGS, 2, 0},
    {437, C_OPENAT2, ALWAYS, 0, 0},   {8, C_CREAT, ALWAYS, 0, 0},
    {39, C_MAKE, ALWAYS, 0, 0},       {14, C_MAKE, ALWAYS, 0, 0},
    {83, C_MAKE, ALWAYS, 0, 1},       {296, C_MAKEAT, ALWAYS, 0, 0},
    {297, C_MAKEAT, ALWAYS, 0, 0},    {304, C_SYMLINKAT, ALWAYS, 0, 0},
    {10, C_REMOVE, ALWAYS, 0, 0},     {40, C_REMOVE, ALWAYS, 0, 0},
    {301, C_REMOVEAT, ALWAYS, 0, 0},  {38, C_RENAME, ALWAYS, 0, 0},
    {302, C_RENAMEAT, ALWAYS, 0, 0},  {353, C_RENAMEAT, ALWAYS, 0, 0},
    {92, C_CHANGE, ALWAYS, 0, 0},     {193, C_CHANGE, ALWAYS, 0, 0},
    {15, C_CHANGE, ALWAYS, 0, 0},     {182, C_CHANGE, ALWAYS, 0, 0},
    {212, C_CHANGE, ALWAYS, 0, 0},    {30, C_CHANGE, ALWAYS, 0, 0},
    {271, C_CHANGE, ALWAYS, 0, 0},    {226, C_CHANGE, ALWAYS, 0, 0},
    {235, C_CHANGE, ALWAYS, 0, 0},    {16, C_LCHANGE, ALWAYS, 0, 0},
    {198, C_LCHANGE, ALWAYS, 0, 0},   {227, C_LCHANGE, ALWAYS, 0, 0},
    {236, C_LCHANGE, ALWAYS, 0, 0},   {306, C_CHANGEAT, ALWAYS, 0, 0},
    {452, C_CHANGEAT, ALWAYS, 0, 3},  {298, C_CHANGEAT, ALWAYS, 0, 4},
    {299, C_CHANGEAT, ALWAYS, 0, 0},  {320, C_CHANGEAT, NONZERO, 1, 3},  {412, C_CHANGEAT, NONZERO, 1, 3},
    {463, C_XATTRAT, ALWAYS, 0, 0},   {466, C_XATTRAT, ALWAYS, 0, 0},
    {362, C_CONNECT, ALWAYS, 0, 0},
    {369, C_SENDTO, NONZERO, 4, 0},   {102, C_SOCKETCALL, SOCKETCALL, 0, 0},
};
static const struct abi abis[] = {
    {AUDIT_ARCH_X86_64, x86_64_calls, ARRAY_SIZE(x86_64_calls)},
    {AUDIT_ARCH_I386, i386_calls, ARRAY_SIZE(i386_calls)},
};
#elif defined(__aarch64__)
static const struct call_nr aarch64_calls[] = {
    {37, C_LINKAT, ALWAYS, 0, 0},    {56, C_OPENAT, FLAGS, 2, 0},   {437, C_OPENAT2, ALWAYS, 0, 0},
    {34, C_MAKEAT, ALWAYS, 0, 0},    {33, C_MAKEAT, ALWAYS, 0, 0},  {36, C_SYMLINKAT, ALWAYS, 0, 0},
    {35, C_REMOVEAT, ALWAYS, 0, 0},  {38, C_RENAMEAT, ALWAYS, 0, 0}, {276, C_RENAMEAT, ALWAYS, 0, 0},
    {45, C_CHANGE, ALWAYS, 0, 0},    {5, C_CHANGE, ALWAYS, 0, 0},   {14, C_CHANGE, ALWAYS, 0, 0},
    {6, C_LCHANGE, ALWAYS, 0, 0},    {15, C_LCHANGE, ALWAYS, 0, 0}, {53, C_CHANGEAT, ALWAYS, 0, 0},
    {452, C_CHANGEAT, ALWAYS, 0, 3}, {54, C_CHANGEAT, ALWAYS, 0, 4}, {88, C_CHANGEAT, NONZERO, 1, 3},
    {463, C_XATTRAT, ALWAYS, 0, 0},  {466, C_XATTRAT, ALWAYS, 0, 0}, {203, C_CONNECT, ALWAYS, 0, 0},
    {206, C_SENDTO, NONZERO, 4, 0},
};
/* 32-bit arm: only its links are heard (its numbers for the rest are not
 * checked here); a run of an arm binary compares every file regardless. */
static const struct call_nr arm_calls[] = {{9, C_LINK, ALWAYS, 0, 0},
                                           {330, C_LINKAT, ALWAYS, 0, 0}};
static const struct abi abis[] = {
    {AUDIT_ARCH_AARCH64, aarch64_calls, ARRAY_SIZE(aarch64_calls)},
    {AUDIT_ARCH_ARM, arm_calls, ARRAY_SIZE(arm_calls)},
};
#endif

/* ------------------------------------------------------------ the filter */

#if defined(__x86_64__) || defined(__aarch64__)
#define FILTER_MAX 512
struct prog {
  struct sock_filter f[FILTER_MAX];
  size_t n;
  bool too_long;
};

static size_t emit(struct prog *p, struct sock_filter ins) {
  if (p->n >= FILTER_MAX) {
    p->too_long = true;
    return p->n;
  }
  p->f[p->n] = ins;
  return p->n++;
}

/* A jump at `at` to `to` (its true branch, or its false one). */
static void aim(struct prog *p, size_t at, size_t to, bool true_branch) {
  size_t off = to - at - 1;
  if (at >= p->n || to <= at || off > 255) {
    p->too_long = true;
    return;
  }
  if (true_branch)
    p->f[at].jt = (unsigned char)off;
  else
    p->f[at].jf = (unsigned char)off;
}

#define LOAD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define ARG_LO(k) (offsetof(struct seccomp_data, args) + (k) * 8)

/* The calls used[lo..hi), sorted by nr, found by a binary search (each
 * test's place in tests[]), every other nr allowed.  A search, not a list:
 * the kernel runs the filter for each nr once when it is loaded, to cache
 * the ones always allowed, and a list of 90 tests made that cost more
 * than the rest of a launch. */
static void emit_search(struct prog *p, const struct call_nr **used, size_t *tests, size_t lo,
                        size_t hi) {
  if (hi - lo <= 4) {
    for (size_t i = lo; i < hi; i++)
      tests[i] = emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, used[i]->nr, 0, 0));
    emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    return;
  }
  size_t mid = lo + (hi - lo) / 2;
  size_t split = emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, used[mid]->nr, 0, 0));
  emit_search(p, used, tests, lo, mid);
  aim(p, split, p->n, true);
  emit_search(p, used, tests, mid, hi);
}

/* One block per ABI: its calls found by nr, each to its condition or
 * straight to notify; anything else allowed.  With links_only, the two
 * link calls alone. */
static void abi_block(struct prog *p, const struct abi *a, bool links_only, bool x32) {
  size_t arch = emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, a->arch, 0, 0));
  emit(p, (struct sock_filter)LOAD(offsetof(struct seccomp_data, nr)));
  size_t tests[128], nt = 0;
  const struct call_nr *used[128];
  for (size_t i = 0; i < a->n && nt < ARRAY_SIZE(tests); i++) {
    if ((links_only && a->calls[i].call != C_LINK && a->calls[i].call != C_LINKAT) ||
        (!x32 && (a->calls[i].nr & 0x40000000u)))
      continue;
    size_t k = nt++; /* in order of nr, for the search */
    for (; k > 0 && used[k - 1]->nr > a->calls[i].nr; k--)
      used[k] = used[k - 1];
    used[k] = &a->calls[i];
  }
  emit_search(p, used, tests, 0, nt);
  struct {
    size_t at;
    bool on_true;
  } to_notify[3 * ARRAY_SIZE(tests)];
  size_t nn = 0;
#define JUMP_IF(k, on_true_)                                                                 \
  (to_notify[nn].on_true = (on_true_),                                                      \
   to_notify[nn++].at = emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | (k), 0, 0, 0)))
  for (size_t i = 0; i < nt; i++) {
    const struct call_nr *c = used[i];
    if (c->cond == ALWAYS) {
      to_notify[nn].at = tests[i];
      to_notify[nn++].on_true = true;
      continue;
    }
    aim(p, tests[i], p->n, true);
    emit(p, (struct sock_filter)LOAD(ARG_LO(c->arg)));
    if (c->cond == FLAGS) {
      JUMP_IF(BPF_JSET | BPF_K, true);
      p->f[p->n - 1].k = OPEN_WRITES;
    } else if (c->cond == NONZERO) { /* a pointer: either half */
      JUMP_IF(BPF_JEQ | BPF_K, false);
      emit(p, (struct sock_filter)LOAD(ARG_LO(c->arg) + 4));
      JUMP_IF(BPF_JEQ | BPF_K, false);
    } else { /* i386's socketcall: connect and sendto */
      static const unsigned calls[] = {SYS_CONNECT, SYS_SENDTO};
      for (size_t k = 0; k < ARRAY_SIZE(calls); k++) {
        JUMP_IF(BPF_JEQ | BPF_K, true);
        p->f[p->n - 1].k = calls[k];
      }
    }
    emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  }
#undef JUMP_IF
  size_t notify = emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF));
  for (size_t i = 0; i < nn; i++)
    aim(p, to_notify[i].at, notify, to_notify[i].on_true);
  aim(p, arch, p->n, false); /* another arch: the next block */
}
#endif

int calls_watch_start(bool refusals) {
#if defined(__x86_64__) || defined(__aarch64__)
  static struct prog p;
  p.n = 0;
  p.too_long = false;
  /* A kernel built without x32 fails its calls with ENOSYS after the
   * filter has seen them: heard, they would be refusals that were not. */
  bool x32 = true;
#if defined(__x86_64__)
  x32 = syscall(0x40000000L | SYS_getpid) >= 0 || errno != ENOSYS;
#endif
  for (size_t i = 0; i < ARRAY_SIZE(abis); i++) {
    emit(&p, (struct sock_filter)LOAD(offsetof(struct seccomp_data, arch)));
    abi_block(&p, &abis[i], !refusals, x32);
  }
  emit(&p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  if (p.too_long) {
    errno = E2BIG;
    return -1;
  }
  struct sock_fprog prog = {.len = (unsigned short)p.n, .filter = p.f};
  int fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                        &prog);
  if (fd < 0)
    return -1;
  /* The command sleeps in its call until init answers: woken on the same
   * CPU, the answer costs a tenth of a cross-CPU wake-up here.  Kernels
   * before 6.6 do without. */
  ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0);
  return fd;
#else
  (void)refusals;
  errno = ENOSYS;
  return -1;
#endif
}

/* ------------------------------------------------------------ the calls */

/* The records: identical ones counted, at most REFUSALS_MAX kept. */
struct refusal {
  int kind; /* corral_capability_kind */
  int why;  /* enum refusal_why */
  long count;
  char op[16];
  char scope[REFUSAL_SCOPE_MAX]; /* the place refused: a directory for what is made in it */
  char name[REFUSAL_NAME_MAX];   /* the first name made or removed there ("" for the place) */
};
static struct refusal table[REFUSALS_MAX];
static size_t nrefusals;
static long dropped;

static void keep(const struct refusal *n) {
  for (size_t i = 0; i < nrefusals; i++)
    if (table[i].kind == n->kind && strcmp(table[i].scope, n->scope) == 0) {
      table[i].count++;
      return;
    }
  if (nrefusals == REFUSALS_MAX) {
    dropped++;
    return;
  }
  table[nrefusals] = *n;
  table[nrefusals++].count = 1;
}

/* What one call was refused (a rename: both ends), kept once the call is
 * known to be still the caller's. */
static struct refusal pending[2];
static size_t npending;

/* A place longer than a record holds is cut, and said to be ("..."):
 * never granted as it is. */
static void note(int kind, int why, const char *op, const char *scope, const char *name) {
  if (npending == ARRAY_SIZE(pending))
    return;
  struct refusal *r = &pending[npending++];
  r->kind = kind;
  r->why = why;
  snprintf(r->op, sizeof r->op, "%s", op);
  if (snprintf(r->scope, sizeof r->scope, "%s", scope) >= (int)sizeof r->scope)
    memcpy(r->scope + sizeof r->scope - 4, "...", 4);
  if (snprintf(r->name, sizeof r->name, "%s", name) >= (int)sizeof r->name)
    memcpy(r->name + sizeof r->name - 4, "...", 4);
}

void calls_watch_report(int report_fd) {
  for (size_t i = 0; i < nrefusals; i++) {
    char text[REPORT_TEXT_MAX];
    snprintf(text, sizeof text, "%d %s %zu %s %s", table[i].why, table[i].op,
             strlen(table[i].name), table[i].name, table[i].scope);
    report_write(report_fd, REPORT_REFUSED, table[i].kind,
                 table[i].count > INT32_MAX ? INT32_MAX : (int)table[i].count, text);
  }
  if (dropped)
    report_write(report_fd, REPORT_REFUSED, 0, dropped > INT32_MAX ? INT32_MAX : (int)dropped,
                 "");
}

/* The caller's memory, through /proc/PID/mem (the sandbox's own filter,
 * which init is under too, refuses process_vm_readv).  The descriptor of
 * the last caller is kept: most calls come from one process.  One that
 * reads nothing (the process exec'd, or its pid is another's now) is
 * opened again once. */
static int mem_fd = -1;
static pid_t mem_pid;

static ssize_t read_mem(pid_t pid, uint64_t addr, void *buf, size_t size) {
  for (int attempt = 0; attempt < 2; attempt++) {
    if (mem_fd < 0 || mem_pid != pid || attempt) {
      if (mem_fd >= 0)
        close(mem_fd);
      char path[48];
      snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
      mem_fd = open(path, O_RDONLY | O_CLOEXEC);
      mem_pid = pid;
      if (mem_fd < 0)
        return -1;
    }
    ssize_t n = pread(mem_fd, buf, size, (off_t)addr);
    if (n > 0)
      return n;
  }
  return -1;
}

/* A string of the caller's (a read stops at an unmapped page, so one
 * that ends just before one is whole).  false: unreadable, or longer than
 * size. */
static bool read_string(pid_t pid, uint64_t addr, char *buf, size_t size) {
  ssize_t n = addr ? read_mem(pid, addr, buf, size) : -1;
  return n > 0 && memchr(buf, '\0', (size_t)n);
}

static bool read_bytes(pid_t pid, uint64_t addr, void *buf, size_t size) {
  return addr && read_mem(pid, addr, buf, size) == (ssize_t)size;
}

/* The path as init can open it: absolute as given, else below the
 * caller's cwd or its descriptor `dir` (its own /proc entries). */
static bool as_seen(pid_t pid, long dir, const char *path, char *out, size_t size) {
  int n;
  /* Its /proc/self is not init's (gnulib's fchmodat goes through it). */
  if (strncmp(path, "/proc/self/", 11) == 0)
    n = snprintf(out, size, "/proc/%d/%s", (int)pid, path + 11);
  else if (strncmp(path, "/proc/thread-self/", 18) == 0)
    n = snprintf(out, size, "/proc/%d/%s", (int)pid, path + 18);
  else if (path[0] == '/') /* from its root (a chroot's), not init's */
    n = snprintf(out, size, "/proc/%d/root%s", (int)pid, path);
  else if ((int)dir == AT_FDCWD)
    n = snprintf(out, size, "/proc/%d/cwd/%s", (int)pid, path);
  else if (dir >= 0 && dir <= INT32_MAX)
    n = snprintf(out, size, "/proc/%d/fd/%ld/%s", (int)pid, dir, path);
  else
    return false;
  return n > 0 && (size_t)n < size;
}

/* What a refused write's place is to the plan. */
static int why_refused(const struct refusal_plan *rp, const char *real) {
  for (size_t i = 0; i < rp->nsecrets; i++)
    if (path_is_under(real, rp->secrets[i]))
      return REFUSED_SECRET;
  const char *root = NULL;
  for (size_t i = 0; i < rp->nwrite_roots; i++)
    if (path_is_under(real, rp->write_roots[i]))
      root = rp->write_roots[i];
  if (!root) /* the kernel's settings are never a write root's to give */
    return path_is_under(real, "/proc") || path_is_under(real, "/sys") ? REFUSED_KERNEL
                                                                       : REFUSED_OUTSIDE;
  /* A protected name below the root (.agents, .corral), or a repository's
   * .git, whose config and hooks are read-only. */
  for (const char *p = real + strlen(root); *p; p++) {
    if (*p != '/')
      continue;
    const char *name = p + 1, *end = strchr(name, '/');
    size_t len = end ? (size_t)(end - name) : strlen(name);
    if (len == 4 && strncmp(name, ".git", 4) == 0)
      return REFUSED_PROTECTED;
    for (size_t k = 0; k < rp->nprotected; k++)
      if (strlen(rp->protected_names[k]) == len && strncmp(name, rp->protected_names[k], len) == 0)
        return REFUSED_PROTECTED;
  }
  for (size_t i = 0; i < rp->nread_only; i++)
    if (path_is_under(real, rp->read_only[i]))
      return REFUSED_READ_ONLY;
  return 0; /* writable to the plan: read-only for another reason, not the sandbox's */
}

/* How a call meets the place it names. */
enum place {
  TARGET,  /* changes the file itself (chmod, truncate, ...) */
  IN_DIR,  /* removes or renames a name in its directory */
  MAKE,    /* makes a name in its directory (a name there fails with EEXIST first) */
  OPEN,    /* opens for writing: the file when it is there, else its directory */
};

/* A device, a pipe or a socket is written on a read-only mount too. */
static bool special(unsigned mode) {
  return S_ISCHR(mode) || S_ISBLK(mode) || S_ISFIFO(mode) || S_ISSOCK(mode);
}

/* The real path of an O_PATH descriptor; false when it has none. */
static bool real_path(int fd, char *out, size_t size) {
  char self[48];
  snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(self, out, size - 1);
  if (n <= 0 || out[0] != '/')
    return false;
  out[n] = '\0';
  return true;
}

/* Where the mount is read-only, the sandbox refused (its walls are
 * mounts); where the plan lets the command write, something else did,
 * and nothing is said. */
static void refused_at(const struct refusal_plan *rp, const char *op, int fd, const char *name) {
  char real[PATH_MAX + 8];
  if (!real_path(fd, real, sizeof real))
    return;
  int why = why_refused(rp, real);
  if (why)
    note(why == REFUSED_PROTECTED ? CORRAL_CAP_PROTECTED_METADATA : CORRAL_CAP_WORKSPACE_WRITE,
         why, op, real, name);
}

/* Would the mount refuse the caller a write here (`mode`: W_OK, with
 * X_OK for a directory made or removed in)?  The kernel answers access
 * with EROFS only once the caller's own permissions pass, so a write its
 * permissions refuse anyway (another user's directory) is not the
 * sandbox's.  Kernels before 5.8 cannot ask that of a descriptor: there
 * the mount alone. */
static bool mount_refuses(int fd, int mode) {
  if (faccessat(fd, "", mode, AT_EACCESS | AT_EMPTY_PATH) == 0)
    return false;
  if (errno == EROFS)
    return true;
  if (errno != ENOSYS && errno != EINVAL)
    return false;
  struct statvfs vfs;
  return fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY);
}

/* Checks the place `path` (as_seen) names.  One walk of the path (the
 * directory's, or the file's), then calls on what it found: most calls,
 * in a writable place, cost that alone. */
static void check_place(const struct refusal_plan *rp, const char *op, const char *path,
                        enum place how, bool follow) {
  char where[PATH_MAX + 64];
  snprintf(where, sizeof where, "%s", path);
  size_t len = strlen(where);
  while (len > 1 && where[len - 1] == '/')
    where[--len] = '\0';
  if (how == TARGET) {
    int fd = open(where, O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
    struct stat st;
    if (fd >= 0 && mount_refuses(fd, W_OK) && fstat(fd, &st) == 0 && !special(st.st_mode))
      refused_at(rp, op, fd, "");
    if (fd >= 0)
      close(fd);
    return;
  }
  char *slash = strrchr(where, '/');
  if (!slash)
    return;
  const char *name = slash + 1;
  if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strlen(name) > NAME_MAX)
    return; /* the kernel refuses those itself */
  *slash = '\0';
  int dir = open(slash == where ? "/" : where, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    return;
  bool ro = mount_refuses(dir, W_OK | X_OK);
  struct statx there, self;
  bool exists = (how == MAKE || how == OPEN) &&
                statx(dir, name, AT_STATX_DONT_SYNC | (follow ? 0 : AT_SYMLINK_NOFOLLOW),
                      STATX_TYPE | STATX_MNT_ID, &there) == 0;
  if (how == IN_DIR || (how == MAKE && !exists) || (how == OPEN && !exists)) {
    if (ro)
      refused_at(rp, op, dir, name);
  } else if (how == OPEN && !special(there.stx_mode)) {
    /* The file itself: on the directory's mount, or on its own (a file
     * made read-only alone, a symlink to elsewhere). */
    bool same = statx(dir, "", AT_EMPTY_PATH, STATX_MNT_ID, &self) == 0 &&
                (there.stx_mask & self.stx_mask & STATX_MNT_ID) &&
                there.stx_mnt_id == self.stx_mnt_id;
    if (!same || ro) {
      int fd = openat(dir, name, O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
      if (fd >= 0 && mount_refuses(fd, W_OK))
        refused_at(rp, op, fd, "");
      if (fd >= 0)
        close(fd);
    }
  }
  close(dir);
}

/* A place named by (dir, path at addr), checked as above. */
static void check_path(const struct refusal_plan *rp, pid_t pid, const char *op, long dir,
                       uint64_t addr, enum place how, bool follow, bool empty_is_dir) {
  char path[PATH_MAX], seen[PATH_MAX + 64];
  if (!read_string(pid, addr, path, sizeof path))
    return;
  if (!path[0]) { /* AT_EMPTY_PATH: the descriptor itself */
    if (!empty_is_dir || (int)dir == AT_FDCWD)
      return;
    snprintf(seen, sizeof seen, "/proc/%d/fd/%ld", (int)pid, dir);
    check_place(rp, op, seen, TARGET, true);
    return;
  }
  if (as_seen(pid, dir, path, seen, sizeof seen))
    check_place(rp, op, seen, how, follow);
}

/* An open for writing: the file itself when it is there, else where it
 * would be made (O_TMPFILE: in the directory named). */
static void check_open(const struct refusal_plan *rp, pid_t pid, long dir, uint64_t addr,
                       uint64_t flags) {
  if (!(flags & OPEN_WRITES))
    return;
  char path[PATH_MAX], seen[PATH_MAX + 64];
  if (!read_string(pid, addr, path, sizeof path) || !path[0] ||
      !as_seen(pid, dir, path, seen, sizeof seen))
    return;
  bool tmpfile = (flags & __O_TMPFILE) == __O_TMPFILE;
  /* Read-only with O_CREAT writes nothing to a file that is there: only
   * its making can be refused. */
  bool makes_only = (flags & O_ACCMODE) == O_RDONLY && !(flags & O_TRUNC) && !tmpfile;
  check_place(rp, "write", seen, tmpfile ? TARGET : makes_only ? MAKE : OPEN,
              !(flags & O_NOFOLLOW));
}

static bool is_loopback(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
  static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
    return true;
  return memcmp(in6->sin6_addr.s6_addr, mapped, 12) == 0 && in6->sin6_addr.s6_addr[12] == 127;
}

static bool is_any(const struct sockaddr_storage *ss) {
  if (ss->ss_family == AF_INET)
    return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == htonl(INADDR_ANY);
  return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

/* A connection (or a datagram) to an address: refused
 * when it leaves loopback and the network is closed (the sandbox's
 * network namespace has loopback alone: no route).  Any address is not:
 * a connection to it reaches loopback.  A bind is not heard: one to an
 * address that is not this host's fails whatever the network. */
static void check_address(const struct refusal_plan *rp, pid_t pid, uint64_t addr,
                          uint64_t len) {
  if (!rp->network_closed || !addr || len < sizeof(sa_family_t))
    return;
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  size_t want = len > sizeof ss ? sizeof ss : (size_t)len;
  if (!read_bytes(pid, addr, &ss, want))
    return;
  if ((ss.ss_family != AF_INET || want < sizeof(struct sockaddr_in)) &&
      (ss.ss_family != AF_INET6 || want < sizeof(struct sockaddr_in6)))
    return;
  if (is_loopback(&ss) || is_any(&ss)) /* any address: this host, its loopback here */
    return;
  char host[INET6_ADDRSTRLEN], scope[INET6_ADDRSTRLEN + 16];
  unsigned port;
  if (ss.ss_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
    snprintf(scope, sizeof scope, "%s:%u", host, port);
  } else {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
    snprintf(scope, sizeof scope, "[%s]:%u", host, port);
  }
  note(CORRAL_CAP_EXTERNAL_NETWORK, rp->network_filter ? REFUSED_NET_FILTER : REFUSED_NET_CLOSED,
       "connect", scope, "");
}

static const struct call_nr *call_of(const struct seccomp_data *d) {
#if defined(__x86_64__) || defined(__aarch64__)
  for (size_t i = 0; i < ARRAY_SIZE(abis); i++)
    if (abis[i].arch == d->arch)
      for (size_t k = 0; k < abis[i].n; k++)
        if (abis[i].calls[k].nr == (unsigned)d->nr)
          return &abis[i].calls[k];
#endif
  (void)d;
  return NULL;
}

/* The flags of a *at call that may not follow the last link. */
static bool follows(const struct call_nr *c, const uint64_t *a) {
  return !c->aux || !(a[c->aux] & AT_SYMLINK_NOFOLLOW);
}

static void check_call(const struct refusal_plan *rp, pid_t pid, const struct seccomp_data *d,
                       const struct call_nr *c) {
  const uint64_t *a = (const uint64_t *)d->args;
  bool compat = d->arch == AUDIT_ARCH_I386 || d->arch == AUDIT_ARCH_ARM;
  /* A 32-bit caller's descriptors and flags are 32-bit: AT_FDCWD is
   * 0xffffff9c there. */
  long dir0 = compat ? (long)(int32_t)a[0] : (long)(int)a[0];
  long dir1 = compat ? (long)(int32_t)a[1] : (long)(int)a[1];
  long dir2 = compat ? (long)(int32_t)a[2] : (long)(int)a[2];
  switch (c->call) {
  case C_LINK:
    check_path(rp, pid, "create", AT_FDCWD, a[1], MAKE, false, false);
    break;
  case C_LINKAT:
    check_path(rp, pid, "create", dir2, a[3], MAKE, false, false);
    break;
  case C_OPEN:
    check_open(rp, pid, AT_FDCWD, a[0], a[1]);
    break;
  case C_OPENAT:
    check_open(rp, pid, dir0, a[1], a[2]);
    break;
  case C_OPENAT2: {
    uint64_t how;
    if (read_bytes(pid, a[2], &how, sizeof how))
      check_open(rp, pid, dir0, a[1], how);
    break;
  }
  case C_CREAT:
    check_open(rp, pid, AT_FDCWD, a[0], O_CREAT | O_WRONLY | O_TRUNC);
    break;
  case C_MAKE:
    check_path(rp, pid, "create", AT_FDCWD, a[c->aux], MAKE, false, false);
    break;
  case C_MAKEAT:
    check_path(rp, pid, "create", dir0, a[1], MAKE, false, false);
    break;
  case C_SYMLINKAT:
    check_path(rp, pid, "create", dir1, a[2], MAKE, false, false);
    break;
  case C_REMOVE:
    check_path(rp, pid, "remove", AT_FDCWD, a[0], IN_DIR, false, false);
    break;
  case C_REMOVEAT:
    check_path(rp, pid, "remove", dir0, a[1], IN_DIR, false, false);
    break;
  case C_RENAME:
    check_path(rp, pid, "rename", AT_FDCWD, a[0], IN_DIR, false, false);
    check_path(rp, pid, "rename", AT_FDCWD, a[1], IN_DIR, false, false);
    break;
  case C_RENAMEAT:
    check_path(rp, pid, "rename", dir0, a[1], IN_DIR, false, false);
    check_path(rp, pid, "rename", dir2, a[3], IN_DIR, false, false);
    break;
  case C_CHANGE:
    check_path(rp, pid, "change", AT_FDCWD, a[0], TARGET, true, false);
    break;
  case C_LCHANGE:
    check_path(rp, pid, "change", AT_FDCWD, a[0], TARGET, false, false);
    break;
  case C_CHANGEAT:
    check_path(rp, pid, "change", dir0, a[1], TARGET, follows(c, a), true);
    break;
  case C_XATTRAT:
    check_path(rp, pid, "change", dir0, a[1], TARGET, !(a[2] & AT_SYMLINK_NOFOLLOW), true);
    break;
  case C_CONNECT:
    check_address(rp, pid, a[1], a[2]);
    break;
  case C_SENDTO:
    check_address(rp, pid, a[4], a[5]);
    break;
  case C_SOCKETCALL: { /* the real arguments are in the caller's memory, 32-bit */
    uint32_t args[6];
    if (!read_bytes(pid, a[1], args, sizeof args))
      break;
    if (a[0] == SYS_SENDTO)
      check_address(rp, pid, args[4], args[5]);
    else if (a[0] == SYS_CONNECT)
      check_address(rp, pid, args[1], args[2]);
    break;
  }
  default:
    break;
  }
}

int calls_watch_answer(int fd, const struct refusal_plan *rp) {
  struct seccomp_notif req;
  memset(&req, 0, sizeof req);
  if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
    return 0; /* the caller died, or another wake-up took it */
  const struct call_nr *c = call_of(&req.data);
  int heard = CALL_HEARD;
  /* Looked at while the caller waits, so that its cwd and descriptors are
   * the call's; the notification still valid afterwards says the memory
   * read was that caller's, not a process that took its pid. */
  if (c && (c->call == C_LINK || c->call == C_LINKAT))
    heard |= CALL_LINK;
  npending = 0;
  if (rp && c)
    check_call(rp, (pid_t)req.pid, &req.data, c);
  if (npending && ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) == 0)
    for (size_t i = 0; i < npending; i++)
      keep(&pending[i]);
  struct seccomp_notif_resp resp;
  memset(&resp, 0, sizeof resp);
  resp.id = req.id;
  resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  return heard;
}
