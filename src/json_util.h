/* json_util.h — jansson helpers shared by the contract, policy and MCP code. */
#ifndef CORRAL_JSON_UTIL_H
#define CORRAL_JSON_UTIL_H

#include <jansson.h>
#include <stdio.h>

#include "corral.h"

/* Parses a whole document that must be an object; errors name the byte. */
int json_parse_document(const char *text, size_t len, json_t **out, const char *what,
                        corral_error *err);
/* Typed field readers: absent or null leaves *dst unchanged; a wrong type
 * fails with CORRAL_EBADJSON naming `path`. */
int json_get_string(json_t *obj, const char *key, const char *path, char **dst,
                    corral_error *err);
int json_get_bool(json_t *obj, const char *key, const char *path, bool *dst, corral_error *err);
int json_get_int(json_t *obj, const char *key, const char *path, long *dst, bool *present,
                 corral_error *err);

json_t *request_to_json_value(const corral_request *req);
json_t *outcome_to_json_value(const corral_outcome *out);
/* Deep copies (through the codec); 0 or a negative code. */
int request_copy(const corral_request *src, corral_request *dst);
int outcome_copy(const corral_outcome *src, corral_outcome *dst);
/* Serialises compactly and drops the reference; NULL on ENOMEM. */
char *json_dump_compact(json_t *value);

/* utf8.c: a copy where every invalid UTF-8 sequence is U+FFFD (so the text
 * is always valid JSON); *valid says whether the input already was. */
char *utf8_sanitize(const char *data, size_t len, size_t *out_len, bool *valid);
/* Length of the longest prefix of data[0..len) that does not split a UTF-8
 * character (invalid bytes count as single characters). */
size_t utf8_prefix_len(const char *data, size_t len);
/* Writes s for a terminal: control characters (C0, DEL, C1), backslash and
 * bytes that are not UTF-8 as \xNN, so that a name cannot move the cursor,
 * erase lines or pass for several. */
void fputs_for_terminal(const char *s, FILE *f);
/* The same into out (cut to size); true when s is shown as it is. */
bool text_for_terminal(const char *s, char *out, size_t size);
char *base64_encode(const void *data, size_t len);

#endif
