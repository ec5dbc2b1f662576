/* error.c — errors that say what corral was doing, not only what failed. */
#include <stdio.h>

#include "internal.h"

static void vformat(char *dst, size_t size, const char *fmt, va_list ap) {
  vsnprintf(dst, size, fmt, ap);
}

int error_set(corral_error *err, int code, int sys_errno, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vformat(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    err->code = code;
    err->sys_errno = sys_errno;
  }
  return code;
}

int error_sys(corral_error *err, const char *fmt, ...) {
  int e = errno ? errno : EIO;
  if (err) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vformat(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(err->message, sizeof err->message, "%s: %s", what, strerror(e));
    err->code = -e;
    err->sys_errno = e;
  }
  return -e;
}

int error_prefix(corral_error *err, const char *fmt, ...) {
  if (!err)
    return CORRAL_EINVALID;
  char context[512], old[sizeof err->message];
  va_list ap;
  va_start(ap, fmt);
  vformat(context, sizeof context, fmt, ap);
  va_end(ap);
  memcpy(old, err->message, sizeof old);
  snprintf(err->message, sizeof err->message, "%s: %s", context, old);
  return err->code;
}

void error_clear(corral_error *err) {
  if (err) {
    err->code = 0;
    err->sys_errno = 0;
    err->message[0] = '\0';
  }
}

const char *corral_strerror(int code) {
  switch (code) {
  case 0:
    return "success";
  case CORRAL_EBADJSON:
    return "JSON input that does not decode (its syntax, or a field's type or value)";
  case CORRAL_EINVALID:
    return "invalid request or outcome";
  case CORRAL_ENOADAPTER:
    return "no sandbox adapter can enforce this request";
  case CORRAL_EREPORT:
    return "the sandbox report could not be read";
  case CORRAL_ESETUP:
    return "the sandbox could not be set up";
  default:
    if (code < 0 && code > -4096)
      return strerror(-code);
    return "unknown error";
  }
}

const char *corral_version(void) { return CORRAL_VERSION_STRING; }
