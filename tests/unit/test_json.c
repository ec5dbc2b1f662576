/* The JSON codec: round trips, field names, and messages for bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "corral.h"
#include "json_util.h"

static const char full_request[] =
    "{\"origin\":\"mcp_server\",\"mode\":\"interactive\","
    "\"command\":{\"name\":\"npm\",\"args\":[\"test\",\"--\",\"-x\"],\"env\":[\"A=1\",\"B=two=2\"]},"
    "\"workingDirectory\":\"/w/app\",\"workspaceRoots\":[\"/w\",\"/x\"],"
    "\"capabilities\":[{\"kind\":\"workspace_write\",\"scope\":\"/w\"},{\"kind\":\"unrestricted\"}],"
    "\"approval\":{\"sessionId\":\"s-1\",\"policyVersion\":7}}";

static void test_request_round_trip(void **state) {
  (void)state;
  corral_request r;
  corral_error err = {0};
  assert_int_equal(corral_request_from_json(full_request, strlen(full_request), &r, &err), 0);
  assert_int_equal(r.origin, CORRAL_ORIGIN_MCP_SERVER);
  assert_int_equal(r.mode, CORRAL_MODE_INTERACTIVE);
  assert_string_equal(r.name, "npm");
  assert_int_equal(r.nargs, 3);
  assert_string_equal(r.args[2], "-x");
  assert_int_equal(r.nenv, 2);
  assert_string_equal(r.env[1], "B=two=2");
  assert_string_equal(r.workspace_roots[1], "/x");
  assert_int_equal(r.ncapabilities, 2);
  assert_null(r.capabilities[1].scope);
  assert_int_equal(r.approval_policy_version, 7);
  char *json = corral_request_to_json(&r);
  assert_string_equal(json, full_request);

  /* and once more: decode(encode(x)) == x */
  corral_request r2;
  assert_int_equal(corral_request_from_json(json, strlen(json), &r2, &err), 0);
  char *json2 = corral_request_to_json(&r2);
  assert_string_equal(json, json2);
  free(json);
  free(json2);
  corral_request_free(&r);
  corral_request_free(&r2);
}

static void test_env_object_and_unknown_fields(void **state) {
  (void)state;
  const char *in = "{\"origin\":\"hook\",\"mode\":\"captured\",\"future\":{\"x\":[1,2]},"
                   "\"command\":{\"name\":\"env\",\"env\":{\"K\":\"v\"},\"extra\":1},"
                   "\"workingDirectory\":\"/\",\"workspaceRoots\":[\"/\"]}";
  corral_request r;
  corral_error err = {0};
  assert_int_equal(corral_request_from_json(in, strlen(in), &r, &err), 0);
  assert_true(r.env_set);
  assert_string_equal(r.env[0], "K=v");
  assert_int_equal(corral_request_validate(&r, &err), 0);
  corral_request_free(&r);
}

static void expect_bad(const char *in, const char *needle) {
  corral_request r;
  corral_error err = {0};
  int rc = corral_request_from_json(in, strlen(in), &r, &err);
  assert_int_equal(rc, CORRAL_EBADJSON);
  if (!strstr(err.message, needle))
    fail_msg("message `%s` does not mention `%s`", err.message, needle);
}

static void test_request_bad_json(void **state) {
  (void)state;
  expect_bad("{\"origin\": hook}", "byte 15");
  expect_bad("", "byte 0");
  expect_bad("[1]", "object");
  expect_bad("{\"origin\":\"robot\"}", "field `origin`: unknown value `robot`");
  expect_bad("{\"mode\":3}", "field `mode`: expected a string");
  expect_bad("{\"command\":[]}", "field `command`");
  expect_bad("{\"command\":{\"args\":[\"a\",2]}}", "field `command.args[1]`");
  expect_bad("{\"command\":{\"env\":[\"NOEQUALS\"]}}", "field `command.env[0]`");
  expect_bad("{\"workspaceRoots\":\"/w\"}", "field `workspaceRoots`");
  expect_bad("{\"capabilities\":[{\"kind\":\"root\"}]}", "field `capabilities[0].kind`");
  expect_bad("{\"approval\":{\"sessionId\":5}}", "field `approval.sessionId`");
  expect_bad("{\"origin\":\"hook\",\"origin\":\"hook\"}", "duplicate");
  expect_bad("{\"command\":{\"name\":\"a\\u0000b\"}}", "NUL");
  expect_bad("{\"origin\":\"\xff\"}", "byte");
}

static void test_outcome_round_trip(void **state) {
  (void)state;
  const char *in =
      "{\"state\":\"denied\",\"kind\":\"enforcement_denied\",\"processId\":\"4242\","
      "\"exit\":{\"code\":-1,\"signal\":\"SIGKILL\"},"
      "\"denial\":{\"capability\":{\"kind\":\"protected_metadata\",\"scope\":\"/w/.agents\"},"
      "\"source\":\"configured_policy\",\"reason\":\"blocked\",\"recoverable\":true,"
      "\"nextAction\":\"request_approval\"},"
      "\"enforcement\":{\"backend\":\"linux\",\"level\":\"native\"},"
      "\"changes\":[{\"path\":\"a/b.txt\",\"kind\":\"created\"},"
      "{\"path\":\"node_modules/\",\"kind\":\"modified\",\"aggregated\":true,\"count\":-1}],"
      "\"launched\":true,\"message\":\"why\"}";
  corral_outcome o;
  corral_error err = {0};
  assert_int_equal(corral_outcome_from_json(in, strlen(in), &o, &err), 0);
  assert_int_equal(corral_outcome_validate(&o, &err), 0);
  assert_int_equal(o.exit.signal, 9);
  assert_int_equal(o.process_id, 4242);
  assert_string_equal(o.denial.capability.scope, "/w/.agents");
  assert_int_equal(o.changes[1].count, -1);
  char *out = corral_outcome_to_json(&o);
  assert_string_equal(out, in);
  free(out);
  corral_outcome_free(&o);
}

/* What zero writes: no `launched` (not invented on the way back), a level
 * corral does not know, a signal name it does not know, a live session's
 * id as processId, an empty enforcement. */
static void test_outcome_from_zero(void **state) {
  (void)state;
  static const char *const kept[] = {
      "{\"state\":\"failed\",\"kind\":\"application_failure\",\"processId\":\"77\","
      "\"exit\":{\"code\":-1,\"signal\":\"killed\"},"
      "\"enforcement\":{\"backend\":\"seatbelt\",\"level\":\"unelevated\",\"degraded\":true,"
      "\"downgradeReason\":\"no admin\"}}",
      "{\"state\":\"retained\",\"kind\":\"running\",\"processId\":\"sess-9\","
      "\"enforcement\":{}}",
      "{\"state\":\"failed\",\"kind\":\"sandbox_setup_failure\",\"exit\":{\"code\":-1},"
      "\"enforcement\":{},\"launched\":false}",
  };
  for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
    corral_outcome o;
    corral_error err = {0};
    assert_int_equal(corral_outcome_from_json(kept[i], strlen(kept[i]), &o, &err), 0);
    assert_int_equal(corral_outcome_validate(&o, &err), 0);
    char *out = corral_outcome_to_json(&o);
    assert_string_equal(out, kept[i]);
    free(out);
    corral_outcome_free(&o);
  }
  /* An earlier corral's integers are read too. */
  const char *old = "{\"state\":\"failed\",\"kind\":\"application_failure\",\"processId\":5,"
                    "\"exit\":{\"code\":-1,\"signal\":15}}";
  corral_outcome o;
  corral_error err = {0};
  assert_int_equal(corral_outcome_from_json(old, strlen(old), &o, &err), 0);
  char *out = corral_outcome_to_json(&o);
  assert_string_equal(out, "{\"state\":\"failed\",\"kind\":\"application_failure\","
                           "\"processId\":\"5\",\"exit\":{\"code\":-1,\"signal\":\"SIGTERM\"},"
                           "\"enforcement\":{}}");
  free(out);
  corral_outcome_free(&o);
}

/* As zero writes a request: policyVersion an integer, no args, env or
 * capabilities when there are none, workspaceRoots null when none. */
static void test_request_from_zero(void **state) {
  (void)state;
  const char *in = "{\"origin\":\"interactive_command\",\"mode\":\"captured\","
                   "\"command\":{\"name\":\"ls\"},\"workingDirectory\":\"/w\","
                   "\"workspaceRoots\":[\"/w\"],\"approval\":{\"policyVersion\":1}}";
  corral_request r;
  corral_error err = {0};
  assert_int_equal(corral_request_from_json(in, strlen(in), &r, &err), 0);
  assert_int_equal(corral_request_validate(&r, &err), 0);
  assert_false(r.env_set);
  char *json = corral_request_to_json(&r);
  assert_string_equal(json, in);
  free(json);
  corral_request_free(&r);
  in = "{\"approval\":{\"policyVersion\":\"1\"}}";
  assert_int_equal(corral_request_from_json(in, strlen(in), &r, &err), CORRAL_EBADJSON);
  assert_non_null(strstr(err.message, "approval.policyVersion"));
}

static void test_outcome_bad(void **state) {
  (void)state;
  corral_outcome o;
  corral_error err = {0};
  const char *in = "{\"state\":\"done\"}";
  assert_int_equal(corral_outcome_from_json(in, strlen(in), &o, &err), CORRAL_EBADJSON);
  assert_non_null(strstr(err.message, "field `state`"));
  in = "{\"changes\":[{\"path\":\"x\",\"kind\":\"renamed\"}]}";
  assert_int_equal(corral_outcome_from_json(in, strlen(in), &o, &err), CORRAL_EBADJSON);
  assert_non_null(strstr(err.message, "changes[0].kind"));
  in = "{\"exit\":{\"code\":\"1\"}}";
  assert_int_equal(corral_outcome_from_json(in, strlen(in), &o, &err), CORRAL_EBADJSON);
  assert_non_null(strstr(err.message, "exit.code"));
  in = "{\"state\":\"prepared\",\"kind\":\"success\",\"exit\":{\"code\":0}}";
  assert_int_equal(corral_outcome_from_json(in, strlen(in), &o, &err), 0);
  assert_int_equal(corral_outcome_validate(&o, &err), CORRAL_EINVALID);
  assert_non_null(strstr(err.message, "not an outcome"));
  corral_outcome_free(&o);
}

static void test_utf8(void **state) {
  (void)state;
  bool valid;
  size_t n;
  char *s = utf8_sanitize("a\xff" "b\xc3\xa9\xed\xa0\x80", 8, &n, &valid);
  assert_false(valid);
  assert_string_equal(s, "a\xef\xbf\xbd" "b\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  free(s);
  s = utf8_sanitize("h\xe2\x82\xac", 4, &n, &valid);
  assert_true(valid);
  free(s);
  assert_int_equal(utf8_prefix_len("ab\xe2\x82", 4), 2);
  assert_int_equal(utf8_prefix_len("ab\xe2\x82\xac", 5), 5);
  assert_int_equal(utf8_prefix_len("ab", 2), 2);
  char *b = base64_encode("hello!?", 7);
  assert_string_equal(b, "aGVsbG8hPw==");
  free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_request_round_trip), cmocka_unit_test(test_env_object_and_unknown_fields),
      cmocka_unit_test(test_request_bad_json),   cmocka_unit_test(test_outcome_round_trip),
      cmocka_unit_test(test_outcome_bad),        cmocka_unit_test(test_utf8),
      cmocka_unit_test(test_outcome_from_zero),  cmocka_unit_test(test_request_from_zero),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
