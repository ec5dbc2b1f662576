/* strv.c — small string-vector helpers used by the contract and adapters. */
#include <ctype.h>

#include "internal.h"

char *xstrdup_or_null(const char *s) { return s ? strdup(s) : NULL; }

bool str_blank(const char *s) {
  if (!s)
    return true;
  for (; *s; s++)
    if (!isspace((unsigned char)*s))
      return false;
  return true;
}

void strv_free(char **v, size_t n) {
  if (!v)
    return;
  for (size_t i = 0; i < n; i++)
    free(v[i]);
  free(v);
}

char **strv_copy(const char *const *v, size_t n) {
  char **out = calloc(n + 1, sizeof *out);
  if (!out)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    out[i] = strdup(v[i] ? v[i] : "");
    if (!out[i]) {
      strv_free(out, i);
      return NULL;
    }
  }
  return out;
}

int strv_push(char ***v, size_t *n, const char *s) {
  char **grown = realloc(*v, (*n + 2) * sizeof **v);
  if (!grown)
    return -ENOMEM;
  *v = grown;
  grown[*n] = strdup(s);
  if (!grown[*n])
    return -ENOMEM;
  (*n)++;
  grown[*n] = NULL;
  return 0;
}

const char *env_lookup(char *const *env, size_t n, const char *key) {
  size_t klen = strlen(key);
  for (size_t i = 0; i < n; i++)
    if (strncmp(env[i], key, klen) == 0 && env[i][klen] == '=')
      return env[i] + klen + 1;
  return NULL;
}
