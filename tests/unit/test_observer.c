/* The change observer: snapshots of a temporary tree, changed, diffed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "corral.h"
#include "watcher.h"

static char root[256];

/* Each test runs three ways: snapshots before and after (the library's
 * corral_snapshot_*), a watcher of the run's own (corral run), and a
 * watcher kept from before the test's tree was made (corral mcp: what
 * happens between runs is not the next run's). */
enum mode { SNAPSHOTS, EVENTS, KEPT };
static enum mode mode;
static struct watcher *kept;


static void sh(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  char full[4200];
  snprintf(full, sizeof full, "cd %s && %s", root, cmd);
  assert_int_equal(system(full), 0);
}

static int setup(void **state) {
  (void)state;
  /* tmpfs where there is one: ext4 slows down creating files right after
   * deleting as many (its allocator skips recently freed inodes), and each
   * test makes and removes up to 20,001. */
  snprintf(root, sizeof root, "%s/corral-observer-XXXXXX",
           access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
  assert_non_null(mkdtemp(root));
  if (mode == KEPT)
    assert_non_null(kept = watcher_open(root));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  watcher_free(kept);
  kept = NULL;
  return system(cmd);
}

static corral_snapshot *snap(void) {
  corral_snapshot *s = NULL;
  corral_error err = {0};
  assert_int_equal(corral_snapshot_take(root, NULL, 0, &s, &err), 0);
  return s;
}

/* "C path" / "M path" / "D path" lines, in report order. */
static char *describe(const corral_outcome *o) {
  static char buf[8192];
  buf[0] = '\0';
  for (size_t i = 0; i < o->nchanges; i++) {
    char line[600];
    snprintf(line, sizeof line, "%c %s%s", "?CMD"[o->changes[i].kind], o->changes[i].path,
             i + 1 < o->nchanges ? "\n" : "");
    strcat(buf, line);
  }
  return buf;
}

struct seen {
  corral_snapshot *snap;
  struct observation *obs;
};

static struct seen begin(void) {
  struct seen b = {0};
  if (mode == SNAPSHOTS)
    b.snap = snap();
  else
    assert_non_null(b.obs = observe_begin(mode == KEPT || kept ? kept : NULL, root));
  return b;
}

static void end(struct seen b, corral_outcome *o) {
  corral_outcome_init(o);
  if (b.obs) {
    observe_end(b.obs, o);
    return;
  }
  corral_error err = {0};
  corral_snapshot *after = snap();
  assert_int_equal(corral_snapshot_diff(b.snap, after, o, &err), 0);
  corral_snapshot_free(b.snap);
  corral_snapshot_free(after);
}

static void test_created_modified_deleted_sorted(void **state) {
  (void)state;
  sh("mkdir -p a/b c && echo 1 > a/b/keep && echo 2 > a/b/edit && echo 3 > c/gone && echo 4 > top");
  struct seen a = begin();
  sh("echo new > a/b/new && echo changed > a/b/edit && rm c/gone && mkdir -p z/y && echo 5 > z/y/f");
  corral_outcome o;
  end(a, &o);
  assert_true(o.changes_present);
  assert_string_equal(describe(&o), "M a/b/edit\nC a/b/new\nD c/gone\nC z\nC z/y\nC z/y/f");
  corral_outcome_free(&o);
}

static void test_control_dirs_skipped_at_depth(void **state) {
  (void)state;
  sh("mkdir -p .git p/q/.git p/.agents r/.corral && echo x > p/q/.git/HEAD");
  struct seen a = begin();
  sh("echo y > .git/new && echo y > p/q/.git/HEAD && echo z > p/.agents/a && echo w > r/.corral/b");
  corral_outcome o;
  end(a, &o);
  assert_string_equal(describe(&o), "");
  assert_int_equal(o.nchanges, 0);
  assert_true(o.changes_present);
  corral_outcome_free(&o);
}

static void test_generated_trees_aggregated(void **state) {
  (void)state;
  sh("mkdir -p node_modules/left-pad sub/dist && touch node_modules/left-pad/index.js");
  struct seen a = begin();
  sh("mkdir node_modules/react node_modules/vue && touch sub/dist/out.js && "
     "mkdir coverage && for i in $(seq 300); do touch coverage/f$i; done && "
     "touch node_modules/left-pad/deep-change");
  corral_outcome o;
  end(a, &o);
  assert_string_equal(describe(&o), "C coverage/\nM node_modules/\nM sub/dist/");
  assert_true(o.changes[0].aggregated);
  assert_int_equal(o.changes[0].count, -1); /* above 256 */
  assert_int_equal(o.changes[1].count, 3);
  assert_int_equal(o.changes[2].count, 1);
  corral_outcome_free(&o);
}

static void test_mtime_restoring_modification(void **state) {
  (void)state;
  sh("echo aaaa > f && touch -d '2001-01-01' f");
  struct seen a = begin();
  /* Same size, old mtime restored: only ctime (and content) tell. */
  sh("cp -p f ref && echo bbbb > f && touch -r ref f && rm ref");
  corral_outcome o;
  end(a, &o);
  assert_string_equal(describe(&o), "M f");
  corral_outcome_free(&o);
}

static void test_identical_rewrite_is_reported(void **state) {
  (void)state;
  sh("echo same > f");
  struct seen a = begin();
  sh("echo same > f");
  corral_outcome o;
  end(a, &o);
  assert_string_equal(describe(&o), "M f"); /* documented: any write counts */
  corral_outcome_free(&o);
}

static void test_symlink_not_followed(void **state) {
  (void)state;
  struct seen a = begin();
  sh("ln -s / rootlink && ln -s /etc etclink");
  corral_outcome o;
  end(a, &o);
  assert_string_equal(describe(&o), "C etclink\nC rootlink");
  corral_outcome_free(&o);
}

static void test_over_the_bound_gives_no_report(void **state) {
  (void)state;
  if (mode == EVENTS)
    skip(); /* as the kept watcher, which also takes the 20,001 files' events */
  sh("mkdir many && cd many && seq 1 20001 | xargs touch");
  struct seen a = begin();
  sh("touch many/extra");
  corral_outcome o;
  end(a, &o);
  if (mode != SNAPSHOTS) { /* the watcher's bound is its index's, far above */
    assert_string_equal(describe(&o), "C many/extra");
    corral_outcome_free(&o);
    return;
  }
  assert_false(o.changes_present);
  assert_int_equal(o.nchanges, 0);
  assert_non_null(o.changes_skipped);
  assert_non_null(strstr(o.changes_skipped, "20000"));
  char *json = corral_outcome_to_json(&o);
  assert_non_null(strstr(json, "\"changesSkipped\""));
  assert_null(strstr(json, "\"changes\":"));
  free(json);
  corral_outcome_free(&o);
}

/* A run that changes more paths than a report lists gives none.  The
 * events are taken as they come, as corral mcp's loop takes them (all at
 * the end, the kernel's queue overflows: the overflow test covers that). */
static void test_too_many_changes_give_no_report(void **state) {
  (void)state;
  if (mode != KEPT)
    skip();
  sh("mkdir many");
  struct seen a = begin();
  for (int i = 0; i < 20; i++) {
    sh("cd many && seq %d %d | xargs touch", i * 1000 + 1, i * 1000 + (i == 19 ? 1001 : 1000));
    watcher_process(kept);
  }
  corral_outcome o;
  end(a, &o);
  assert_false(o.changes_present);
  assert_null(o.changes_scanned);
  assert_non_null(o.changes_skipped);
  assert_non_null(strstr(o.changes_skipped, "more than 20000 paths"));
  corral_outcome_free(&o);
}

/* Past the watcher's bound on names nothing is reported, and the index is
 * dropped: a run after it reads nothing of the tree (the cost stops
 * growing), until the watcher tries again. */
static void test_watcher_bound(void **state) {
  (void)state;
  if (mode == SNAPSHOTS)
    skip();
  watcher_limit_for_tests(500);
  sh("mkdir big && cd big && seq 1 600 | xargs touch");
  struct seen a = begin();
  sh("touch big/extra");
  corral_outcome o;
  end(a, &o);
  watcher_limit_for_tests(0);
  assert_false(o.changes_present);
  assert_non_null(o.changes_skipped);
  assert_non_null(strstr(o.changes_skipped, "more than 500 files"));
  corral_outcome_free(&o);
}

/* A tree the command made far deeper than any real project (and than the
 * stack or the descriptor table would allow a recursive walk): the
 * snapshot says it gave up, in both snapshots and in a diff, and nothing
 * crashes.  Just under the bound, the change deep down is reported. */
static void test_deep_tree_is_bounded(void **state) {
  (void)state;
  sh("python3 -c 'import os\nos.mkdir(\"deep\"); os.chdir(\"deep\")\n"
     "for i in range(3000): os.mkdir(\"d\"); os.chdir(\"d\")'");
  struct seen a = begin();
  sh("touch deep/new");
  corral_outcome o;
  end(a, &o);
  assert_false(o.changes_present);
  assert_non_null(o.changes_skipped);
  assert_non_null(strstr(o.changes_skipped, "levels deep"));
  corral_outcome_free(&o);
  sh("rm -rf deep && python3 -c 'import os\nos.mkdir(\"deep\"); os.chdir(\"deep\")\n"
     "for i in range(100): os.mkdir(\"d\"); os.chdir(\"d\")'");
  if (mode == KEPT) { /* a kept watcher that gave up tries again only minutes later */
    watcher_free(kept);
    assert_non_null(kept = watcher_open(root));
  }
  a = begin();
  sh("cd deep && touch $(python3 -c 'print(\"/\".join([\"d\"] * 100))')/leaf");
  end(a, &o);
  assert_true(o.changes_present);
  assert_int_equal(o.nchanges, 1);
  assert_int_equal(o.changes[0].kind, CORRAL_CHANGE_CREATED);
  corral_outcome_free(&o);
}

static void test_unreadable_directory_skipped(void **state) {
  (void)state;
  if (geteuid() == 0)
    skip(); /* root reads everything; the user variant of the suite covers it */
  sh("mkdir -p locked && echo x > locked/f && chmod 000 locked");
  struct seen a = begin();
  sh("echo y > visible");
  corral_outcome o;
  end(a, &o);
  assert_string_equal(describe(&o), "C visible");
  sh("chmod 755 locked");
  corral_outcome_free(&o);
}

/* ------------------------------------------------ events against snapshots */

static unsigned long rnd_state;
static unsigned rnd(unsigned n) {
  rnd_state = rnd_state * 6364136223846793005ul + 1442695040888963407ul;
  return (unsigned)(rnd_state >> 33) % n;
}

static char out_dir[300]; /* outside the root: where directories move out to and in from */
static char oplog[65536];

static void logop(const char *fmt, ...) {
  size_t l = strlen(oplog);
  va_list ap;
  va_start(ap, fmt);
  if (l < sizeof oplog - 200)
    vsnprintf(oplog + l, sizeof oplog - l, fmt, ap);
  va_end(ap);
}

/* A directory of the small namespace the changes play in. */
static void some_dir(char *buf, size_t size) {
  static const char *const dirs[] = {"", "d0", "d1", "d0/d1", "d1/d2", "d0/d1/d2", "node_modules",
                                     "d2"};
  snprintf(buf, size, "%s/%s", root, dirs[rnd(sizeof dirs / sizeof *dirs)]);
}

static void some_name(char *buf, size_t size, const char *kind) {
  char d[400];
  some_dir(d, sizeof d);
  snprintf(buf, size, "%s/%s%u", d, kind, rnd(3));
}

/* One random change, whatever it makes of the tree (most may fail). */
static void one_change(bool creating) {
  char a[600], b[600];
  unsigned op = creating ? rnd(2) * 4 : rnd(15);
  some_name(a, sizeof a, op == 4 || op == 5 || op == 6 || op == 7 || op == 9 ? "d" : "f");
  logop("%u %s\n", op, a + strlen(root));
  switch (op) {
  case 0: { /* create or append */
    int fd = open(a, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0 && write(fd, "x", 1) == 1)
      close(fd);
    else if (fd >= 0)
      close(fd);
    break;
  }
  case 1: { /* rewrite in place, old mtime put back */
    struct stat st;
    int fd = open(a, O_WRONLY);
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0 && pwrite(fd, "y", 1, 0) == 1) {
      struct timespec t[2] = {st.st_atim, st.st_mtim};
      futimens(fd, t);
    }
    if (fd >= 0)
      close(fd);
    break;
  }
  case 2:
    unlink(a);
    break;
  case 3:
    some_name(b, sizeof b, "f");
    rename(a, b);
    break;
  case 4:
    mkdir(a, 0755);
    break;
  case 5:
    rmdir(a);
    break;
  case 6:
    some_name(b, sizeof b, "d");
    rename(a, b);
    break;
  case 7: /* a directory moves out, or one moves in */
    snprintf(b, sizeof b, "%s/o%u", out_dir, rnd(3));
    if (rename(a, b) < 0)
      rename(b, a);
    break;
  case 8:
    chmod(a, rnd(2) ? 0600 : 0644);
    break;
  case 9: {
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", a);
    assert_int_equal(system(cmd), 0);
    break;
  }
  case 10: /* a file becomes a directory */
    if (unlink(a) == 0)
      mkdir(a, 0755);
    break;
  case 11: { /* the same bytes again */
    int fd = open(a, O_WRONLY | O_TRUNC);
    if (fd >= 0 && write(fd, "x", 1) == 1)
      close(fd);
    else if (fd >= 0)
      close(fd);
    break;
  }
  case 12: { /* opened for writing, nothing written: no change */
    int fd = open(a, O_WRONLY);
    if (fd >= 0)
      close(fd);
    break;
  }
  case 13:
    snprintf(b, sizeof b, "%s/node_modules/p%u", root, rnd(3));
    if (unlink(b) < 0)
      close(open(b, O_WRONLY | O_CREAT, 0644));
    break;
  default:
    symlink("target", a);
    break;
  }
}

/* What snapshots say changed since `before` (freed here): the reference
 * a report from events is held to. */
static void report_since(corral_snapshot *before, corral_outcome *want) {
  corral_error err = {0};
  corral_snapshot *after = snap();
  corral_outcome_init(want);
  assert_int_equal(corral_snapshot_diff(before, after, want, &err), 0);
  corral_snapshot_free(before);
  corral_snapshot_free(after);
}

/* The coarse clock the kernel stamps files with ticks at most this often. */
static void past_a_tick(void) { usleep(20000); }

/* Random creations, modifications (with and without the old mtime put
 * back), deletions, renames, directory moves within, out of and into the
 * tree: the report from events is the report from snapshots before and
 * after, run after run. */
static void test_random_changes_match_snapshots(void **state) {
  (void)state;
  if (mode == SNAPSHOTS)
    skip();
  const char *seed = getenv("CORRAL_SEED");
  rnd_state = seed ? strtoul(seed, NULL, 10) : (unsigned long)time(NULL);
  unsigned long first = rnd_state;
  snprintf(out_dir, sizeof out_dir, "%s-out", root);
  assert_int_equal(mkdir(out_dir, 0755), 0);
  for (int trial = 0; trial < 30; trial++) {
    oplog[0] = '\0';
    for (int i = 0; i < 40; i++)
      one_change(true);
    for (int round = 0; round < 4; round++) {
      for (unsigned i = rnd(6); i > 0; i--) /* between runs: nobody's */
        one_change(false);
      logop("-- run\n");
      past_a_tick();
      corral_snapshot *before = snap();
      struct seen a = begin();
      for (unsigned i = 1 + rnd(30); i > 0; i--)
        one_change(false);
      corral_outcome o, want;
      end(a, &o);
      report_since(before, &want);
      char *got = strdup(describe(&o));
      if (strcmp(got, describe(&want)) != 0 || o.changes_scanned) {
        fprintf(stderr, "changes made:\n%s", oplog); /* longer than cmocka's message */
        fail_msg("seed %lu, trial %d, round %d (%s):\nevents:\n%s\nsnapshots:\n%s\nchanges:\n%s",
                 first, trial, round, o.changes_scanned ? o.changes_scanned : "from events",
                 got, describe(&want), "(above)");
      }
      for (size_t i = 0; i < o.nchanges; i++)
        assert_int_equal(o.changes[i].count, want.changes[i].count);
      free(got);
      corral_outcome_free(&o);
      corral_outcome_free(&want);
    }
  }
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", out_dir);
  assert_int_equal(system(cmd), 0);
}

/* More events than the kernel queues: the run says it fell back to a scan,
 * and its report is still exact.  A kept watcher that overflows between
 * runs builds its index again, and the next run is watched as before. */
static void test_overflowed_queue_falls_back(void **state) {
  (void)state;
  const char *knob = "/proc/sys/fs/inotify/max_queued_events";
  char saved[32] = "";
  FILE *f = fopen(knob, "r");
  if (mode == SNAPSHOTS || geteuid() != 0 || !f || !fgets(saved, sizeof saved, f)) {
    if (f)
      fclose(f);
    skip(); /* only root sets the queue's size, for watchers made meanwhile */
  }
  fclose(f);
  sh("mkdir -p a b && touch a/keep a/edit b/gone");
  past_a_tick();
  f = fopen(knob, "w");
  fputs("16", f);
  fclose(f);
  struct watcher *w = watcher_open(root);
  f = fopen(knob, "w");
  fputs(saved, f);
  fclose(f);
  assert_non_null(w);
  struct watcher *was = kept;
  kept = w;
  struct seen a = begin();
  sh("for i in $(seq 100); do touch a/new$i; done; echo x >> a/edit; rm b/gone");
  corral_outcome o;
  end(a, &o);
  if (mode == EVENTS) { /* the same watcher, as a kept one: the test made it */
    assert_non_null(o.changes_scanned);
    assert_non_null(strstr(o.changes_scanned, "overflowed"));
    assert_int_equal(o.nchanges, 102);
    assert_string_equal(o.changes[0].path, "a/edit");
    assert_int_equal(o.changes[0].kind, CORRAL_CHANGE_MODIFIED);
    assert_string_equal(o.changes[101].path, "b/gone");
    assert_int_equal(o.changes[101].kind, CORRAL_CHANGE_DELETED);
  }
  corral_outcome_free(&o);
  sh("for i in $(seq 100); do rm a/new$i; done"); /* overflows between runs */
  past_a_tick();
  a = begin();
  sh("echo y >> a/keep");
  end(a, &o);
  assert_null(o.changes_scanned);
  assert_string_equal(describe(&o), "M a/keep");
  corral_outcome_free(&o);
  kept = was;
  watcher_free(w);
}

/* A file changed through another name of it — a hard link made in a
 * generated tree (never indexed), even one removed before the end — is
 * reported under the name the workspace knows it by; so is a link left
 * from an earlier run, and a plain second name.  The events are taken as
 * the loops of corral run and corral mcp take them, as they come. */
static void test_hard_links_are_one_file(void **state) {
  (void)state;
  if (mode != KEPT)
    skip();
  sh("mkdir src && echo hi > src/a && echo hi > src/main.c");
  past_a_tick();
  struct seen a = begin();
  sh("mkdir -p t/.cache");
  watcher_process(kept);
  sh("ln src/a t/.cache/y && echo evil >> t/.cache/y && rm -r t");
  corral_outcome o;
  end(a, &o);
  assert_string_equal(describe(&o), "M src/a");
  corral_outcome_free(&o);
  sh("mkdir node_modules && ln src/main.c node_modules/.x && ln src/main.c b");
  past_a_tick();
  a = begin();
  sh("echo pwned >> node_modules/.x");
  end(a, &o);
  assert_string_equal(describe(&o), "M b\nM src/main.c"); /* b is a third name */
  corral_outcome_free(&o);
  past_a_tick();
  a = begin();
  sh("echo again >> b");
  end(a, &o);
  assert_string_equal(describe(&o), "M b\nM src/main.c");
  corral_outcome_free(&o);
}

/* Paths longer than the index holds give no report, and say why: never a
 * report that leaves them out in silence. */
static void test_long_paths_are_said(void **state) {
  (void)state;
  if (mode == SNAPSHOTS)
    skip();
  struct seen a = begin();
  sh("python3 -c 'import os\nfor i in range(17): os.mkdir(\"n\" * 250); os.chdir(\"n\" * 250)\n"
     "open(\"payload\", \"w\").write(\"x\")'");
  corral_outcome o;
  end(a, &o);
  assert_false(o.changes_present);
  assert_non_null(o.changes_skipped);
  assert_non_null(strstr(o.changes_skipped, "paths longer than"));
  corral_outcome_free(&o);
}

/* A directory that could not be read when it was made is watched once it
 * can be; a directory moved inside a new one of its own name leaves the
 * events complete (no scan). */
static void test_directories_seen_late(void **state) {
  (void)state;
  if (mode != KEPT)
    skip();
  sh("mkdir -p a");
  past_a_tick();
  struct seen b = begin();
  sh("mkdir -m 0 d");
  watcher_process(kept);
  sh("chmod 755 d && echo secret > d/payload");
  sh("mkdir a/n && mv a tmp && mkdir a && mv tmp a/n");
  corral_outcome o;
  end(b, &o);
  assert_null(o.changes_scanned);
  assert_string_equal(describe(&o), "C a/n\nC a/n/n\nC d\nC d/payload");
  corral_outcome_free(&o);
  b = begin();
  sh("echo more >> d/payload");
  end(b, &o);
  assert_string_equal(describe(&o), "M d/payload");
  corral_outcome_free(&o);
}

/* A command renaming a big directory back and forth makes each rename a
 * rescan of it: past a budget the events are given up for a scan (said),
 * and the report is still exact. */
static void test_rename_storm_is_bounded(void **state) {
  (void)state;
  if (mode != EVENTS)
    skip();
  sh("mkdir src && cd src && seq 1 2000 | xargs touch");
  past_a_tick();
  corral_snapshot *before = snap();
  struct seen a = begin();
  sh("python3 -c 'import os\nfor i in range(200): os.rename(\"src\", \"src2\"); "
     "os.rename(\"src2\", \"src\")\nopen(\"src/new\", \"w\")'");
  corral_outcome o, want;
  end(a, &o);
  assert_non_null(o.changes_scanned);
  assert_non_null(strstr(o.changes_scanned, "faster than"));
  report_since(before, &want);
  char *got = strdup(describe(&o));
  assert_string_equal(got, describe(&want));
  free(got);
  corral_outcome_free(&o);
  corral_outcome_free(&want);
}

/* Hard links where no event of theirs is heard — written through after
 * the name is gone, inside a protected-name directory the command made, or
 * (as a user) in a directory corral cannot read — make the run compare
 * every indexed file, so the file they are another name of still shows. */
static void test_links_unheard(void **state) {
  (void)state;
  if (mode == SNAPSHOTS)
    skip();
  sh("mkdir src && echo hi > src/a && echo hi > src/b && echo hi > src/c && mkdir -m 0300 locked");
  past_a_tick();
  struct seen a = begin();
  sh("python3 -c 'import os\nos.link(\"src/a\", \"t\")\nfd = os.open(\"t\", os.O_WRONLY)\n"
     "os.unlink(\"t\")\nos.write(fd, b\"x\")'");
  sh("mkdir -p sub/.git && ln src/b sub/.git/x && echo x >> sub/.git/x");
  corral_outcome o;
  end(a, &o);
  assert_string_equal(describe(&o), "M src/a\nM src/b\nC sub");
  corral_outcome_free(&o);
  if (geteuid() != 0) { /* root reads every directory */
    past_a_tick();
    a = begin();
    sh("ln src/c locked/x && echo x >> locked/x");
    end(a, &o);
    assert_string_equal(describe(&o), "M src/c");
    corral_outcome_free(&o);
  }
  sh("chmod 755 locked");
}

/* Hard links made where no watch was yet, the events read only at the
 * end: in a directory gone before it could be scanned, in a generated
 * tree found by a scan, in a plain new directory, and in a generated tree
 * written before its watch.  The file they are another name of shows. */
static void test_links_before_the_watch(void **state) {
  (void)state;
  if (mode == SNAPSHOTS)
    skip();
  sh("mkdir src && for f in a b c d; do echo hi > src/$f; done");
  past_a_tick();
  const char *cases[][2] = {
      {"mkdir -p t/.cache && ln src/a t/.cache/y && echo evil >> t/.cache/y && rm -r t", "M src/a"},
      {"mkdir -p u/.cache && ln src/b u/.cache/y && echo evil >> u/.cache/y",
       "M src/b\nC u\nC u/.cache/"},
      {"mkdir v && ln src/c v/l && echo evil >> v/l", "M src/c\nC v\nC v/l"},
      {"mkdir node_modules && ln src/d node_modules/x && echo evil >> node_modules/x",
       "C node_modules/\nM src/d"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct seen a = begin();
    sh("%s", cases[i][0]);
    corral_outcome o;
    end(a, &o);
    assert_string_equal(describe(&o), cases[i][1]);
    corral_outcome_free(&o);
    past_a_tick();
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_created_modified_deleted_sorted, setup, teardown),
      cmocka_unit_test_setup_teardown(test_control_dirs_skipped_at_depth, setup, teardown),
      cmocka_unit_test_setup_teardown(test_generated_trees_aggregated, setup, teardown),
      cmocka_unit_test_setup_teardown(test_mtime_restoring_modification, setup, teardown),
      cmocka_unit_test_setup_teardown(test_identical_rewrite_is_reported, setup, teardown),
      cmocka_unit_test_setup_teardown(test_symlink_not_followed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_over_the_bound_gives_no_report, setup, teardown),
      cmocka_unit_test_setup_teardown(test_too_many_changes_give_no_report, setup, teardown),
      cmocka_unit_test_setup_teardown(test_watcher_bound, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unreadable_directory_skipped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_deep_tree_is_bounded, setup, teardown),
      cmocka_unit_test_setup_teardown(test_random_changes_match_snapshots, setup, teardown),
      cmocka_unit_test_setup_teardown(test_overflowed_queue_falls_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_hard_links_are_one_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_long_paths_are_said, setup, teardown),
      cmocka_unit_test_setup_teardown(test_directories_seen_late, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rename_storm_is_bounded, setup, teardown),
      cmocka_unit_test_setup_teardown(test_links_unheard, setup, teardown),
      cmocka_unit_test_setup_teardown(test_links_before_the_watch, setup, teardown),
  };
  static const char *const names[] = {"snapshots", "events", "kept watcher"};
  int failed = 0;
  for (mode = SNAPSHOTS; mode <= KEPT; mode++)
    failed += _cmocka_run_group_tests(names[mode], tests, sizeof tests / sizeof *tests, NULL, NULL);
  return failed;
}
