/*
 * gitconfig.c — the little of git's files corral reads to protect a
 * repository: config values (core.hooksPath, include paths), .gitmodules
 * paths and a .git file's "gitdir:" line.
 *
 * The files lie in write roots, where an earlier command may have put
 * anything: they are read only when they are regular files (no symlink to
 * /dev/zero, no FIFO to block on) of bounded size, and parsed without
 * trusting a length or a line.
 */
#include <ctype.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/stat.h>

#include "../internal.h"
#include "linux.h"

char *read_small_file(const char *path, size_t max) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  struct stat st;
  if (fd < 0)
    return NULL;
  char *text = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= max &&
      (text = malloc((size_t)st.st_size + 1))) {
    size_t len = 0;
    ssize_t n;
    while (len < (size_t)st.st_size &&
           (n = read(fd, text + len, (size_t)st.st_size - len)) > 0)
      len += (size_t)n;
    text[len] = '\0';
  }
  close(fd);
  return text;
}

/* One value: quotes removed, \" \\ \t \n unescaped, a comment (# or ;)
 * outside quotes ending it, blanks around it dropped; in place. */
static char *config_value(char *v) {
  char *out = v, *start = v;
  bool quoted = false;
  while (*v == ' ' || *v == '\t')
    v++;
  for (; *v && *v != '\n'; v++) {
    if (*v == '"') {
      quoted = !quoted;
    } else if (!quoted && (*v == '#' || *v == ';')) {
      break;
    } else if (*v == '\\' && v[1]) {
      v++;
      *out++ = *v == 't' ? '\t' : *v == 'n' ? '\n' : *v;
    } else {
      *out++ = *v;
    }
  }
  while (out > start && (out[-1] == ' ' || out[-1] == '\t' || out[-1] == '\r'))
    out--;
  *out = '\0';
  return start;
}

void gitconfig_each(char *text, const char *section, const char *key,
                    void (*fn)(const char *value, void *ctx), void *ctx) {
  bool in_section = false;
  size_t slen = strlen(section), klen = strlen(key);
  for (char *line = text, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next)
      *next++ = '\0';
    char *p = line + strspn(line, " \t");
    if (*p == '[') { /* [section], [section "sub"], [section.sub]; a key may follow */
      char *end = strchr(p, ']');
      if (!end)
        continue;
      size_t n = strcspn(p + 1, " \t.\"]");
      in_section = n == slen && strncasecmp(p + 1, section, slen) == 0;
      p = end + 1 + strspn(end + 1, " \t");
    }
    if (!in_section || strncasecmp(p, key, klen) != 0)
      continue;
    p += klen;
    if (isalnum((unsigned char)*p) || *p == '-')
      continue; /* a longer key */
    p += strspn(p, " \t");
    if (*p != '=')
      continue;
    char *v = config_value(p + 1);
    if (*v)
      fn(v, ctx);
  }
}
