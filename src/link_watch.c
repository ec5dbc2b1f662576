/*
 * link_watch.c — init hears every hard link the command makes.
 *
 * The change report (watcher.c) follows a file through the directory it
 * was written in.  A hard link gives a workspace file a second name where
 * no watch is yet (a directory just made, another write root), and a write
 * through that name shows in no event.  Links are rare, so when one is
 * made the run compares every indexed file; what it must never do is miss
 * one.  A seccomp filter, loaded by init after the sandbox's setup and
 * inherited by the command, hands link and linkat to init (a user
 * notification), which notes the fact and lets the call go on.  The call's
 * arguments are not read: that a link was made is the kernel's word, where
 * it was made would be the command's.
 *
 * Every ABI the sandbox's own filter admits is covered: a 32-bit or x32
 * binary's link is a link too.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "launch.h"

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP 1
#endif

struct abi_calls {
  unsigned arch;
  unsigned nr[2]; /* link, linkat; 0 where the ABI has no such call */
};

static const struct abi_calls abis[] = {
#if defined(__x86_64__)
    {AUDIT_ARCH_X86_64, {86, 265}},
    {AUDIT_ARCH_X86_64, {0x40000000u | 86, 0x40000000u | 265}}, /* x32 */
    {AUDIT_ARCH_I386, {9, 303}},
#elif defined(__aarch64__)
    {AUDIT_ARCH_AARCH64, {0, 37}},
    {AUDIT_ARCH_ARM, {9, 330}},
#endif
};

int link_watch_start(void) {
#if defined(__x86_64__) || defined(__aarch64__)
  /* Per ABI: load the arch, skip the block unless it matches, load nr,
   * one test per call; then allow.  Jumps are relative. */
  struct sock_filter f[64];
  size_t k = 0;
  for (size_t i = 0; i < ARRAY_SIZE(abis); i++) {
    size_t calls = 0;
    for (size_t c = 0; c < 2; c++)
      calls += abis[i].nr[c] != 0;
    f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    f[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, abis[i].arch, 0,
                                        (unsigned char)(1 + calls)), k++;
    f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    for (size_t c = 0; c < 2; c++)
      if (abis[i].nr[c])
        k++; /* filled below, once the notifying return's place is known */
  }
  size_t allow = k, notify = k + 1;
  f[allow] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  f[notify] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF);
  k = 0;
  for (size_t i = 0; i < ARRAY_SIZE(abis); i++) {
    k += 3;
    for (size_t c = 0; c < 2; c++)
      if (abis[i].nr[c]) {
        f[k] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, abis[i].nr[c],
                                            (unsigned char)(notify - k - 1), 0);
        k++;
      }
  }
  /* A block whose arch matched but no call did falls into the next block,
   * whose arch test fails in turn: every path ends at allow or notify. */
  struct sock_fprog prog = {.len = (unsigned short)(notify + 1), .filter = f};
  int fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                        &prog);
  if (fd < 0)
    return -1;
  /* The command sleeps in its link until init answers: woken on the same
   * CPU, the answer costs a tenth of a cross-CPU wake-up here.  Kernels
   * before 6.6 do without. */
  ioctl(fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0);
  return fd;
#else
  errno = ENOSYS;
  return -1;
#endif
}

bool link_watch_answer(int fd) {
  struct seccomp_notif req;
  memset(&req, 0, sizeof req);
  if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
    return false; /* the caller died, or another wake-up took it */
  struct seccomp_notif_resp resp;
  memset(&resp, 0, sizeof resp);
  resp.id = req.id;
  resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
  ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
  return true;
}
