/*
 * probe — attempts one forbidden thing and prints what happened, so the
 * security tests can run it inside the sandbox.  Exit 0: the attempt
 * SUCCEEDED (bad inside a sandbox); exit 1: it failed, with the errno name
 * printed; exit 2: bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int result(long r, const char *what) {
  if (r < 0) {
    printf("%s: failed: %s\n", what, strerrorname_np(errno));
    return 1;
  }
  printf("%s: succeeded\n", what);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 2;
  const char *c = argv[1];
  if (strcmp(c, "ptrace") == 0 && argc == 3)
    return result(ptrace(PTRACE_ATTACH, atoi(argv[2]), 0, 0), "ptrace attach");
  if (strcmp(c, "ptrace-child") == 0) {
    pid_t pid = fork();
    if (pid == 0) {
      pause();
      _exit(0);
    }
    int rc = result(ptrace(PTRACE_ATTACH, pid, 0, 0), "ptrace attach sibling");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return rc;
  }
  if (strcmp(c, "io_uring") == 0) {
    char params[120] = {0};
    return result(syscall(SYS_io_uring_setup, 4, params), "io_uring_setup");
  }
  if (strcmp(c, "process_vm_readv") == 0) {
    char buf[8];
    struct iovec l = {buf, sizeof buf}, r = {buf, sizeof buf};
    return result(syscall(SYS_process_vm_readv, getppid(), &l, 1, &r, 1, 0), "process_vm_readv");
  }
  if (strcmp(c, "tiocsti") == 0) {
    char ch = 'x';
    int fd = open("/dev/tty", O_RDWR);
    if (fd < 0)
      fd = 0;
    return result(ioctl(fd, TIOCSTI, &ch), "TIOCSTI");
  }
  if (strcmp(c, "unix-socket") == 0)
    return result(socket(AF_UNIX, SOCK_STREAM, 0), "socket(AF_UNIX)");
  if (strcmp(c, "socketpair") == 0) {
    int sv[2];
    return result(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), "socketpair(AF_UNIX)");
  }
  if (strcmp(c, "unix-connect") == 0 && argc == 3) {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0)
      return result(-1, "socket(AF_UNIX)");
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", argv[2]);
    return result(connect(s, (struct sockaddr *)&a, sizeof a), "connect(unix)");
  }
  if (strcmp(c, "kill") == 0 && argc == 3)
    return result(kill(atoi(argv[2]), SIGTERM), "kill");
  if (strcmp(c, "unshare-user") == 0)
    return result(unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)");
  return 2;
}
