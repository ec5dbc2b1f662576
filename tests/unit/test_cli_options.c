/* The CLI flag parser, tested on its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cli/options.h"

static const struct cli_option opts[] = {
    {"json", NULL, 1, "json"},
    {"timeout", "SECONDS", 2, "timeout"},
};

struct seen {
  int json;
  const char *timeout;
};

static int handler(void *ctx, int id, const char *value) {
  struct seen *s = ctx;
  if (id == 1)
    s->json++;
  if (id == 2)
    s->timeout = value;
  return 0;
}

static int parse(int argc, char **argv, struct seen *s) {
  memset(s, 0, sizeof *s);
  return cli_parse("t", "usage", opts, 2, argc, argv, handler, s);
}

static void test_parse(void **state) {
  (void)state;
  struct seen s;
  char *a1[] = {"run", "--json", "--timeout", "5", "--", "ls", "--json"};
  assert_int_equal(parse(7, a1, &s), 5);
  assert_int_equal(s.json, 1);
  assert_string_equal(s.timeout, "5");
  char *a2[] = {"run", "--timeout=2.5", "ls", "-l"};
  assert_int_equal(parse(4, a2, &s), 2);
  assert_string_equal(s.timeout, "2.5");
  char *a3[] = {"run", "--bogus", "ls"};
  assert_int_equal(parse(3, a3, &s), -1);
  char *a4[] = {"run", "--timeout"};
  assert_int_equal(parse(2, a4, &s), -1);
  char *a5[] = {"run", "--json=1"};
  assert_int_equal(parse(2, a5, &s), -1);
  char *a6[] = {"run", "-x"};
  assert_int_equal(parse(2, a6, &s), -1);
  long long ms;
  assert_int_equal(cli_parse_seconds("--timeout", "1.5", &ms), 0);
  assert_int_equal(ms, 1500);
  assert_int_equal(cli_parse_seconds("--timeout", "0", &ms), -1);
  assert_int_equal(cli_parse_seconds("--timeout", "abc", &ms), -1);
  assert_int_equal(cli_parse_seconds("--timeout", "nan", &ms), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_parse)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
