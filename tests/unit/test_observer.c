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

static char root[256];

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
  snprintf(root, sizeof root, "/tmp/corral-observer-XXXXXX");
  assert_non_null(mkdtemp(root));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
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

static void diff(corral_snapshot *a, corral_snapshot *b, corral_outcome *o) {
  corral_outcome_init(o);
  corral_error err = {0};
  assert_int_equal(corral_snapshot_diff(a, b, o, &err), 0);
  corral_snapshot_free(a);
  corral_snapshot_free(b);
}

static void test_created_modified_deleted_sorted(void **state) {
  (void)state;
  sh("mkdir -p a/b c && echo 1 > a/b/keep && echo 2 > a/b/edit && echo 3 > c/gone && echo 4 > top");
  corral_snapshot *a = snap();
  sh("echo new > a/b/new && echo changed > a/b/edit && rm c/gone && mkdir -p z/y && echo 5 > z/y/f");
  corral_outcome o;
  diff(a, snap(), &o);
  assert_true(o.changes_present);
  assert_string_equal(describe(&o), "M a/b/edit\nC a/b/new\nD c/gone\nC z\nC z/y\nC z/y/f");
  corral_outcome_free(&o);
}

static void test_control_dirs_skipped_at_depth(void **state) {
  (void)state;
  sh("mkdir -p .git p/q/.git p/.agents r/.corral && echo x > p/q/.git/HEAD");
  corral_snapshot *a = snap();
  sh("echo y > .git/new && echo y > p/q/.git/HEAD && echo z > p/.agents/a && echo w > r/.corral/b");
  corral_outcome o;
  diff(a, snap(), &o);
  assert_string_equal(describe(&o), "");
  assert_int_equal(o.nchanges, 0);
  assert_true(o.changes_present);
  corral_outcome_free(&o);
}

static void test_generated_trees_aggregated(void **state) {
  (void)state;
  sh("mkdir -p node_modules/left-pad sub/dist && touch node_modules/left-pad/index.js");
  corral_snapshot *a = snap();
  sh("mkdir node_modules/react node_modules/vue && touch sub/dist/out.js && "
     "mkdir coverage && for i in $(seq 300); do touch coverage/f$i; done && "
     "touch node_modules/left-pad/deep-change");
  corral_outcome o;
  diff(a, snap(), &o);
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
  corral_snapshot *a = snap();
  /* Same size, old mtime restored: only ctime (and content) tell. */
  sh("cp -p f ref && echo bbbb > f && touch -r ref f && rm ref");
  corral_outcome o;
  diff(a, snap(), &o);
  assert_string_equal(describe(&o), "M f");
  corral_outcome_free(&o);
}

static void test_identical_rewrite_is_reported(void **state) {
  (void)state;
  sh("echo same > f");
  corral_snapshot *a = snap();
  sh("echo same > f");
  corral_outcome o;
  diff(a, snap(), &o);
  assert_string_equal(describe(&o), "M f"); /* documented: any write counts */
  corral_outcome_free(&o);
}

static void test_symlink_not_followed(void **state) {
  (void)state;
  corral_snapshot *a = snap();
  sh("ln -s / rootlink && ln -s /etc etclink");
  corral_outcome o;
  diff(a, snap(), &o);
  assert_string_equal(describe(&o), "C etclink\nC rootlink");
  corral_outcome_free(&o);
}

static void test_over_the_bound_gives_no_report(void **state) {
  (void)state;
  sh("mkdir many && cd many && seq 1 20001 | xargs touch");
  corral_snapshot *a = snap();
  sh("touch many/extra");
  corral_outcome o;
  diff(a, snap(), &o);
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

/* A tree the command made far deeper than any real project (and than the
 * stack or the descriptor table would allow a recursive walk): the
 * snapshot says it gave up, in both snapshots and in a diff, and nothing
 * crashes.  Just under the bound, the change deep down is reported. */
static void test_deep_tree_is_bounded(void **state) {
  (void)state;
  sh("python3 -c 'import os\nos.mkdir(\"deep\"); os.chdir(\"deep\")\n"
     "for i in range(3000): os.mkdir(\"d\"); os.chdir(\"d\")'");
  corral_snapshot *a = snap();
  sh("touch deep/new");
  corral_outcome o;
  diff(a, snap(), &o);
  assert_false(o.changes_present);
  assert_non_null(o.changes_skipped);
  assert_non_null(strstr(o.changes_skipped, "levels deep"));
  corral_outcome_free(&o);
  sh("rm -rf deep && python3 -c 'import os\nos.mkdir(\"deep\"); os.chdir(\"deep\")\n"
     "for i in range(100): os.mkdir(\"d\"); os.chdir(\"d\")'");
  a = snap();
  sh("cd deep && touch $(python3 -c 'print(\"/\".join([\"d\"] * 100))')/leaf");
  diff(a, snap(), &o);
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
  corral_snapshot *a = snap();
  sh("echo y > visible");
  corral_outcome o;
  diff(a, snap(), &o);
  assert_string_equal(describe(&o), "C visible");
  sh("chmod 755 locked");
  corral_outcome_free(&o);
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
      cmocka_unit_test_setup_teardown(test_unreadable_directory_skipped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_deep_tree_is_bounded, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
