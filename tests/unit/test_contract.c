/* Validation rules of the execution contract, each checked both ways. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "launch.h"
#include "run_limits.h"

static void valid_request(corral_request *r) {
  corral_request_init(r);
  r->origin = CORRAL_ORIGIN_HOOK;
  r->mode = CORRAL_MODE_CAPTURED;
  const char *args[] = {"-c", "true"};
  assert_int_equal(corral_request_set_command(r, "sh", args, 2), 0);
  assert_int_equal(corral_request_set_working_directory(r, "/tmp"), 0);
  assert_int_equal(corral_request_add_workspace_root(r, "/tmp"), 0);
  assert_int_equal(corral_request_add_capability(r, CORRAL_CAP_WORKSPACE_WRITE, "/tmp"), 0);
}

static void expect_invalid(const corral_request *r, const char *field) {
  corral_error err = {0};
  assert_int_equal(corral_request_validate(r, &err), CORRAL_EINVALID);
  assert_non_null(strstr(err.message, field));
}

static void test_request_valid(void **state) {
  (void)state;
  corral_request r;
  valid_request(&r);
  corral_error err = {0};
  assert_int_equal(corral_request_validate(&r, &err), 0);
  corral_request_free(&r);
}

static void test_request_rules(void **state) {
  (void)state;
  corral_request r;

  valid_request(&r);
  r.origin = 0;
  expect_invalid(&r, "origin");
  r.origin = 99;
  expect_invalid(&r, "origin");
  corral_request_free(&r);

  valid_request(&r);
  r.mode = 0;
  expect_invalid(&r, "mode");
  corral_request_free(&r);

  valid_request(&r);
  corral_request_set_command(&r, "  \t", NULL, 0);
  expect_invalid(&r, "command.name");
  corral_request_free(&r);

  valid_request(&r);
  corral_request_set_working_directory(&r, "");
  expect_invalid(&r, "workingDirectory");
  corral_request_free(&r);

  corral_request_init(&r);
  r.origin = CORRAL_ORIGIN_PLUGIN;
  r.mode = CORRAL_MODE_DURABLE;
  corral_request_set_command(&r, "x", NULL, 0);
  corral_request_set_working_directory(&r, "/");
  expect_invalid(&r, "workspaceRoots");
  corral_request_add_workspace_root(&r, "/w");
  corral_request_add_workspace_root(&r, " ");
  expect_invalid(&r, "workspaceRoots[1]");
  corral_request_free(&r);

  valid_request(&r);
  corral_request_add_capability(&r, 42, NULL);
  expect_invalid(&r, "capabilities[1].kind");
  corral_request_free(&r);
}

static void set_denial(corral_outcome *o) {
  o->denial.present = true;
  o->denial.capability.kind = CORRAL_CAP_PROTECTED_METADATA;
  o->denial.capability.scope = strdup("/w/.agents");
  o->denial.source = CORRAL_SOURCE_CONFIGURED_POLICY;
  o->denial.reason = strdup("blocked creation of protected path /w/.agents");
  o->denial.next_action = CORRAL_NEXT_REQUEST_APPROVAL;
  o->denial.recoverable = true;
}

static int check(corral_state s, corral_kind k, void (*tweak)(corral_outcome *)) {
  corral_outcome o;
  corral_outcome_init(&o);
  o.state = s;
  o.kind = k;
  if (tweak)
    tweak(&o);
  corral_error err = {0};
  int r = corral_outcome_validate(&o, &err);
  corral_outcome_free(&o);
  return r;
}

static void with_pid(corral_outcome *o) { o->process_id = 42; }
static void with_exit0(corral_outcome *o) { o->exit = (corral_exit){true, 0, 0}; }
static void with_exit1(corral_outcome *o) { o->exit = (corral_exit){true, 1, 0}; }
static void with_denial(corral_outcome *o) { set_denial(o); }
static void with_blank_reason(corral_outcome *o) {
  set_denial(o);
  free(o->denial.reason);
  o->denial.reason = strdup(" ");
}
static void with_bad_source(corral_outcome *o) {
  set_denial(o);
  o->denial.source = 0;
}
static void with_bad_next(corral_outcome *o) {
  set_denial(o);
  o->denial.next_action = 17;
}
static void with_bad_cap(corral_outcome *o) {
  set_denial(o);
  o->denial.capability.kind = 0;
}

static void test_outcome_rules(void **state) {
  (void)state;
  /* running / retained: kind running and a process id */
  assert_int_equal(check(CORRAL_STATE_RUNNING, CORRAL_KIND_RUNNING, with_pid), 0);
  assert_int_equal(check(CORRAL_STATE_RETAINED, CORRAL_KIND_RUNNING, with_pid), 0);
  assert_int_equal(check(CORRAL_STATE_RUNNING, CORRAL_KIND_RUNNING, NULL), CORRAL_EINVALID);
  assert_int_equal(check(CORRAL_STATE_RETAINED, CORRAL_KIND_SUCCESS, with_pid), CORRAL_EINVALID);
  /* completed: success and exit 0 */
  assert_int_equal(check(CORRAL_STATE_COMPLETED, CORRAL_KIND_SUCCESS, with_exit0), 0);
  assert_int_equal(check(CORRAL_STATE_COMPLETED, CORRAL_KIND_SUCCESS, with_exit1),
                   CORRAL_EINVALID);
  assert_int_equal(check(CORRAL_STATE_COMPLETED, CORRAL_KIND_SUCCESS, NULL), CORRAL_EINVALID);
  assert_int_equal(check(CORRAL_STATE_COMPLETED, CORRAL_KIND_TIMED_OUT, with_exit0),
                   CORRAL_EINVALID);
  /* denied: a denied kind and a valid denial */
  assert_int_equal(check(CORRAL_STATE_DENIED, CORRAL_KIND_ENFORCEMENT_DENIED, with_denial), 0);
  assert_int_equal(check(CORRAL_STATE_DENIED, CORRAL_KIND_POLICY_DENIED, with_denial), 0);
  assert_int_equal(check(CORRAL_STATE_DENIED, CORRAL_KIND_APPLICATION_FAILURE, with_denial),
                   CORRAL_EINVALID);
  assert_int_equal(check(CORRAL_STATE_DENIED, CORRAL_KIND_POLICY_DENIED, NULL), CORRAL_EINVALID);
  assert_int_equal(check(CORRAL_STATE_DENIED, CORRAL_KIND_POLICY_DENIED, with_blank_reason),
                   CORRAL_EINVALID);
  assert_int_equal(check(CORRAL_STATE_DENIED, CORRAL_KIND_POLICY_DENIED, with_bad_source),
                   CORRAL_EINVALID);
  assert_int_equal(check(CORRAL_STATE_DENIED, CORRAL_KIND_POLICY_DENIED, with_bad_next),
                   CORRAL_EINVALID);
  assert_int_equal(check(CORRAL_STATE_DENIED, CORRAL_KIND_POLICY_DENIED, with_bad_cap),
                   CORRAL_EINVALID);
  /* failed: not running/success, and an exit */
  assert_int_equal(check(CORRAL_STATE_FAILED, CORRAL_KIND_APPLICATION_FAILURE, with_exit1), 0);
  assert_int_equal(check(CORRAL_STATE_FAILED, CORRAL_KIND_TIMED_OUT, with_exit1), 0);
  assert_int_equal(check(CORRAL_STATE_FAILED, CORRAL_KIND_APPLICATION_FAILURE, NULL),
                   CORRAL_EINVALID);
  assert_int_equal(check(CORRAL_STATE_FAILED, CORRAL_KIND_SUCCESS, with_exit1), CORRAL_EINVALID);
  assert_int_equal(check(CORRAL_STATE_FAILED, CORRAL_KIND_RUNNING, with_exit1), CORRAL_EINVALID);
  /* cancelled: kind cancelled */
  assert_int_equal(check(CORRAL_STATE_CANCELLED, CORRAL_KIND_CANCELLED, NULL), 0);
  assert_int_equal(check(CORRAL_STATE_CANCELLED, CORRAL_KIND_TIMED_OUT, NULL), CORRAL_EINVALID);
  /* steps before launch are not outcomes */
  corral_state not_outcomes[] = {CORRAL_STATE_REQUESTED, CORRAL_STATE_EVALUATED,
                                 CORRAL_STATE_AWAITING_APPROVAL, CORRAL_STATE_PREPARED};
  for (size_t i = 0; i < 4; i++)
    assert_int_equal(check(not_outcomes[i], CORRAL_KIND_SUCCESS, with_exit0), CORRAL_EINVALID);
  assert_int_equal(check(0, CORRAL_KIND_SUCCESS, with_exit0), CORRAL_EINVALID);
  assert_int_equal(check(CORRAL_STATE_COMPLETED, 0, with_exit0), CORRAL_EINVALID);
}

static void test_enum_names(void **state) {
  (void)state;
  assert_string_equal(corral_enum_name(CORRAL_ENUM_ORIGIN, CORRAL_ORIGIN_MCP_SERVER),
                      "mcp_server");
  assert_string_equal(corral_enum_name(CORRAL_ENUM_CAPABILITY, CORRAL_CAP_HOST_VISIBLE_BINDING),
                      "host_visible_binding");
  assert_string_equal(corral_enum_name(CORRAL_ENUM_KIND, CORRAL_KIND_ENFORCEMENT_DEGRADED),
                      "enforcement_degraded");
  assert_string_equal(corral_enum_name(CORRAL_ENUM_STATE, CORRAL_STATE_AWAITING_APPROVAL),
                      "awaiting_approval");
  assert_null(corral_enum_name(CORRAL_ENUM_MODE, 0));
  assert_null(corral_enum_name(CORRAL_ENUM_MODE, 4));
  assert_int_equal(corral_enum_parse(CORRAL_ENUM_NEXT_ACTION, "enable_sandbox"),
                   CORRAL_NEXT_ENABLE_SANDBOX);
  assert_int_equal(corral_enum_parse(CORRAL_ENUM_NEXT_ACTION, "Enable_Sandbox"), 0);
}

static void test_exit_codes(void **state) {
  (void)state;
  corral_outcome o;
  corral_outcome_init(&o);
  o.kind = CORRAL_KIND_TIMED_OUT;
  assert_int_equal(corral_outcome_exit_code(&o), 124);
  o.kind = CORRAL_KIND_SANDBOX_SETUP_FAILURE;
  assert_int_equal(corral_outcome_exit_code(&o), 125);
  o.kind = CORRAL_KIND_ENFORCEMENT_DENIED;
  assert_int_equal(corral_outcome_exit_code(&o), 125);
  o.kind = CORRAL_KIND_EXECUTABLE_NOT_FOUND;
  assert_int_equal(corral_outcome_exit_code(&o), 127);
  o.kind = CORRAL_KIND_APPLICATION_FAILURE;
  o.exit = (corral_exit){true, 3, 0};
  assert_int_equal(corral_outcome_exit_code(&o), 3);
  o.exit = (corral_exit){true, -1, 15};
  assert_int_equal(corral_outcome_exit_code(&o), 143);
}

/* A limit as a person writes it: each unit, and what is refused. */
static void test_limits_parse(void **state) {
  (void)state;
  int64_t v;
  const char *why = NULL;
  assert_int_equal(limits_parse(CORRAL_LIMIT_MEMORY, "512M", &v, &why), 0);
  assert_int_equal(v, 512LL << 20);
  assert_int_equal(limits_parse(CORRAL_LIMIT_MEMORY, "2GiB", &v, &why), 0);
  assert_int_equal(v, 2LL << 30);
  assert_int_equal(limits_parse(CORRAL_LIMIT_FILE_SIZE, "4096", &v, &why), 0);
  assert_int_equal(v, 4096);
  assert_int_equal(limits_parse(CORRAL_LIMIT_CPU_TIME, "1.5", &v, &why), 0);
  assert_int_equal(v, 1500);
  assert_int_equal(limits_parse(CORRAL_LIMIT_CPU_TIME, "0.0001", &v, &why), 0);
  assert_int_equal(v, 1); /* up to a whole millisecond, never 0 (= default) */
  assert_int_equal(limits_parse(CORRAL_LIMIT_PROCESSES, "none", &v, &why), 0);
  assert_int_equal(v, CORRAL_LIMIT_NONE);
  assert_int_equal(limits_parse(CORRAL_LIMIT_PROCESSES, "default", &v, &why), 0);
  assert_int_equal(v, CORRAL_LIMIT_DEFAULT);
  const char *bad[] = {"0", "-5", "lots", "12Q", "", "1.5", "99999999999", " 7"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_int_equal(limits_parse(CORRAL_LIMIT_PROCESSES, bad[i], &v, &why), -EINVAL);
  assert_int_equal(limits_parse(CORRAL_LIMIT_MEMORY, "99999999999T", &v, &why), -EINVAL);
  assert_int_equal(limits_parse(CORRAL_LIMIT_CPU_TIME, "nan", &v, &why), -EINVAL);
  assert_int_equal(limits_parse(CORRAL_LIMIT_CPU_TIME, "inf", &v, &why), -EINVAL);
}

/* limit and usage survive the codec (copies go through it). */
static void test_limit_round_trip(void **state) {
  (void)state;
  corral_outcome o, back;
  corral_outcome_init(&o);
  o.state = CORRAL_STATE_DENIED;
  o.kind = CORRAL_KIND_ENFORCEMENT_DENIED;
  o.limit = (corral_limit_hit){true, CORRAL_LIMIT_MEMORY, 1LL << 33, (1LL << 33) + 5};
  o.usage = (corral_usage){true, 123456789012LL, 42, 7};
  char *json = corral_outcome_to_json(&o);
  assert_non_null(strstr(json, "\"limit\":{\"name\":\"memory\""));
  assert_int_equal(corral_outcome_from_json(json, strlen(json), &back, NULL), 0);
  assert_true(back.limit.present && back.limit.which == CORRAL_LIMIT_MEMORY);
  assert_int_equal(back.limit.value, 1LL << 33);
  assert_int_equal(back.limit.observed, (1LL << 33) + 5);
  assert_int_equal(back.usage.peak_memory_bytes, 123456789012LL);
  assert_int_equal(back.usage.cpu_time_ms, 42);
  assert_int_equal(back.usage.peak_processes, 7);
  free(json);
  corral_outcome_free(&back);
  corral_error err = {0};
  const char *wrong = "{\"state\":\"denied\",\"kind\":\"enforcement_denied\",\"limit\":{\"name\":\"disk\"}}";
  assert_int_equal(corral_outcome_from_json(wrong, strlen(wrong), &back, &err), CORRAL_EBADJSON);
  assert_non_null(strstr(err.message, "limit.name"));
  corral_outcome_free(&back);
}

/* The report's limit and usage records are init's, yet read strictly. */
static void test_limit_records(void **state) {
  (void)state;
  struct report_record rec[2];
  memset(rec, 0, sizeof rec);
  rec[0].magic = rec[1].magic = REPORT_MAGIC;
  rec[0].type = REPORT_LIMIT;
  rec[0].value = CORRAL_LIMIT_PROCESSES;
  strcpy(rec[0].text, "4096 4100");
  rec[1].type = REPORT_USAGE;
  strcpy(rec[1].text, "1000 20 3");
  launch_report r = {0};
  launch_report_parse(&r, rec, sizeof rec);
  assert_true(r.readable && r.limit.present && r.usage.present);
  assert_int_equal(r.limit.observed, 4100);
  assert_int_equal(r.usage.peak_processes, 3);
  const char *bad[] = {"4096", "4096 x", "1 2 3", "-1 5"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    launch_report b = {0};
    strcpy(rec[0].text, bad[i]);
    launch_report_parse(&b, rec, sizeof rec[0]);
    assert_false(b.readable);
  }
  rec[0].value = 99;
  strcpy(rec[0].text, "1 1");
  launch_report b = {0};
  launch_report_parse(&b, rec, sizeof rec[0]);
  assert_false(b.readable);
}

/* Refusal records: the name is length-prefixed (it may hold spaces), the
 * scope is the rest; anything else makes the report unreadable. */
static void test_refusal_records(void **state) {
  (void)state;
  struct report_record rec;
  memset(&rec, 0, sizeof rec);
  rec.magic = REPORT_MAGIC;
  rec.type = REPORT_REFUSED;
  rec.value = CORRAL_CAP_WORKSPACE_WRITE;
  rec.aux = 3;
  strcpy(rec.text, "1 write 5 a b c /etc/x y");
  launch_report r = {0};
  launch_report_parse(&r, &rec, sizeof rec);
  assert_true(r.readable);
  assert_int_equal(r.nrefused, 1);
  assert_string_equal(r.refused[0].name, "a b c");
  assert_string_equal(r.refused[0].scope, "/etc/x y");
  assert_int_equal(r.refused[0].count, 3);
  assert_int_equal(r.refused[0].why, REFUSED_OUTSIDE);
  const char *bad[] = {"1 write 9 a /etc", "1 write 0 ", "9 write 0  /etc", "1 write x /etc",
                       "0 write 0  /etc", "1 write 1 a/etc", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    launch_report b = {0};
    strcpy(rec.text, bad[i]);
    launch_report_parse(&b, &rec, sizeof rec);
    assert_false(b.readable);
  }
  rec.aux = 0; /* never refused, yet recorded */
  strcpy(rec.text, "1 write 0  /etc");
  launch_report b = {0};
  launch_report_parse(&b, &rec, sizeof rec);
  assert_false(b.readable);
  rec.value = 0; /* the count of those dropped */
  rec.aux = 7;
  strcpy(rec.text, "");
  launch_report d = {0};
  launch_report_parse(&d, &rec, sizeof rec);
  assert_true(d.readable);
  assert_int_equal(d.refused_dropped, 7);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_request_valid), cmocka_unit_test(test_request_rules),
      cmocka_unit_test(test_outcome_rules), cmocka_unit_test(test_enum_names),
      cmocka_unit_test(test_exit_codes), cmocka_unit_test(test_limits_parse),
      cmocka_unit_test(test_limit_round_trip), cmocka_unit_test(test_limit_records),
      cmocka_unit_test(test_refusal_records),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
