/* Validation rules of the execution contract, each checked both ways. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_request_valid), cmocka_unit_test(test_request_rules),
      cmocka_unit_test(test_outcome_rules), cmocka_unit_test(test_enum_names),
      cmocka_unit_test(test_exit_codes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
