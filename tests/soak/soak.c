/*
 * soak — many runs and sessions through the library, then checks that
 * nothing was left behind in this (the supervisor's) process: descriptors,
 * children (zombies), mounts, flock leases, runtime temp directories.
 * Usage: soak RUNS SESSION_ROUNDS.  Prints one line of figures; exit 1 on
 * a leak.
 */
#include <dirent.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "corral.h"
#include "launch.h"

static int count_dir(const char *path) {
  DIR *d = opendir(path);
  int n = 0;
  if (!d)
    return -1;
  for (struct dirent *de; (de = readdir(d));)
    n += de->d_name[0] != '.';
  closedir(d);
  return n - 1; /* the directory's own descriptor */
}

static int count_lines(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  char line[4096];
  int n = 0;
  if (!f)
    return -1;
  while (fgets(line, sizeof line, f))
    n += !needle || strstr(line, needle) != NULL;
  fclose(f);
  return n;
}

static int children(void) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  int c = 0;
  for (char *s = strtok(buf, " \n"); s; s = strtok(NULL, " \n"))
    c++;
  return c;
}

static int my_locks(void) {
  char pid[32];
  snprintf(pid, sizeof pid, " %d ", (int)getpid());
  return count_lines("/proc/locks", pid);
}

static int runtime_temps(void) {
  glob_t g;
  int n = glob("/tmp/corral-runtime-*", 0, NULL, &g) == 0 ? (int)g.gl_pathc : 0;
  globfree(&g);
  return n;
}

struct state {
  int fds, mounts, children, locks, temps;
};

static void snapshot(struct state *s) {
  launch_reap_deferred();
  s->fds = count_dir("/proc/self/fd");
  s->mounts = count_lines("/proc/self/mountinfo", NULL);
  s->children = children();
  s->locks = my_locks();
  s->temps = runtime_temps();
}

static int compare(const char *what, const struct state *a, const struct state *b) {
  int bad = a->fds != b->fds || a->mounts != b->mounts || b->children != 0 ||
            a->locks != b->locks || a->temps != b->temps;
  printf("%s: fds %d->%d, mounts %d->%d, children %d, flock leases %d->%d, runtime temps %d->%d%s\n",
         what, a->fds, b->fds, a->mounts, b->mounts, b->children, a->locks, b->locks, a->temps,
         b->temps, bad ? "  LEAK" : "");
  return bad;
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 1000, rounds = argc > 2 ? atoi(argv[2]) : 20;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd))
    return 2;
  corral_policy *p = corral_policy_new();
  corral_adapter *ad = corral_adapter_new_default(p, 0, NULL);
  if (!ad)
    return 2;
  corral_request req;
  corral_request_init(&req);
  req.origin = CORRAL_ORIGIN_BACKGROUND_TASK;
  req.mode = CORRAL_MODE_CAPTURED;
  corral_request_set_command(&req, "true", NULL, 0);
  corral_request_set_working_directory(&req, cwd);
  corral_request_add_workspace_root(&req, cwd);

  struct state before, after;
  int bad = 0;
  /* one run first, so lazy one-time allocations are not counted as growth */
  corral_run_options o;
  corral_run_options_init(&o);
  o.request = &req;
  o.adapter = ad;
  corral_result res;
  corral_run(&o, &res, NULL);
  corral_result_free(&res);
  usleep(100000);
  snapshot(&before);
  int failures = 0;
  for (int i = 0; i < runs; i++) {
    corral_run(&o, &res, NULL);
    failures += res.outcome.kind != CORRAL_KIND_SUCCESS;
    corral_result_free(&res);
  }
  usleep(200000); /* the last init finishes its own exit */
  snapshot(&after);
  printf("%d sequential runs, %d not successful\n", runs, failures);
  bad |= compare("runs", &before, &after) || failures;

  req.mode = CORRAL_MODE_INTERACTIVE;
  const char *args[] = {"-c", "exec sleep 600"};
  corral_request_set_command(&req, "/bin/sh", args, 2);
  snapshot(&before);
  for (int r = 0; r < rounds; r++) {
    corral_sessions *m = corral_sessions_new();
    for (int i = 0; i < CORRAL_SESSIONS_MAX; i++) {
      corral_session_options so;
      corral_session_options_init(&so);
      so.request = &req;
      so.adapter = ad;
      so.tty = i % 2;
      corral_session_result sr;
      if (corral_session_start(m, &so, &sr, NULL) < 0 || !sr.session_id)
        failures++;
      corral_session_result_free(&sr);
    }
    long *ids;
    size_t n;
    corral_sessions_stop_all(m, &ids, &n);
    failures += n != CORRAL_SESSIONS_MAX;
    free(ids);
    corral_sessions_free(m);
  }
  usleep(300000);
  snapshot(&after);
  printf("%d rounds of %d sessions started and stopped, %d failures\n", rounds,
         CORRAL_SESSIONS_MAX, failures);
  bad |= compare("sessions", &before, &after) || failures;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("peak RSS of the supervisor: %ld KiB\n", ru.ru_maxrss);
  corral_request_free(&req);
  corral_adapter_free(ad);
  corral_policy_free(p);
  return bad ? 1 : 0;
}
