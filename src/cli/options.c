/* options.c — one table per subcommand drives both parsing and --help. */
#include "options.h"

#include <errno.h>
#include <math.h> /* isfinite, a macro: no libm needed */
#include <stdlib.h>
#include <string.h>

void cli_print_help(FILE *out, const char *usage, const struct cli_option *opts, size_t nopts) {
  fprintf(out, "%s\n\nOptions:\n", usage);
  for (size_t i = 0; i < nopts; i++) {
    char left[80];
    snprintf(left, sizeof left, "--%s%s%s", opts[i].name, opts[i].arg ? " " : "",
             opts[i].arg ? opts[i].arg : "");
    fprintf(out, "  %-30s %s\n", left, opts[i].help);
  }
  fprintf(out, "  %-30s %s\n", "-h, --help", "show this help and exit");
}

const char *cli_command = "corral";

int cli_parse(const char *prog, const char *usage, const struct cli_option *opts, size_t nopts,
              int argc, char **argv, cli_handler handler, void *ctx) {
  cli_command = prog; /* every message about an option names the subcommand */
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0)
      return i + 1;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      cli_print_help(stdout, usage, opts, nopts);
      return -2;
    }
    if (a[0] != '-' || a[1] == '\0')
      return i;
    if (a[1] != '-') {
      fprintf(stderr, "%s: unknown option `%s`\nTry `%s --help`.\n", prog, a, prog);
      return -1;
    }
    const char *name = a + 2;
    const char *eq = strchr(name, '=');
    size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
    const struct cli_option *o = NULL;
    for (size_t k = 0; k < nopts; k++)
      if (strlen(opts[k].name) == nlen && strncmp(opts[k].name, name, nlen) == 0)
        o = &opts[k];
    if (!o) {
      fprintf(stderr, "%s: unknown option `--%.*s`\nTry `%s --help`.\n", prog, (int)nlen, name,
              prog);
      return -1;
    }
    const char *value = NULL;
    if (o->arg) {
      if (eq)
        value = eq + 1;
      else if (i + 1 < argc)
        value = argv[++i];
      else {
        fprintf(stderr, "%s: option `--%s` needs a value (%s)\nTry `%s --help`.\n", prog,
                o->name, o->arg, prog);
        return -1;
      }
    } else if (eq) {
      fprintf(stderr, "%s: option `--%s` takes no value\nTry `%s --help`.\n", prog, o->name,
              prog);
      return -1;
    }
    if (handler(ctx, o->id, value) < 0)
      return -1;
  }
  return i;
}

int cli_parse_seconds(const char *flag, const char *value, long long *ms) {
  char *end;
  errno = 0;
  double s = strtod(value, &end);
  if (errno || end == value || *end || !isfinite(s) || s <= 0 || s > 31536000.0) {
    fprintf(stderr, "%s: %s: `%s` is not a positive number of seconds\n", cli_command, flag,
            value);
    return -1;
  }
  double whole = s * 1000.0;
  *ms = (long long)whole + ((double)(long long)whole < whole); /* rounded up */
  return 0;
}
