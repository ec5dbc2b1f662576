/*
 * options.h — the CLI's flag parser.  Each subcommand declares its flags in
 * one table; the parser and `--help` both read that table, so the help can
 * never mention a flag the parser does not accept, or miss one it does.
 */
#ifndef CORRAL_CLI_OPTIONS_H
#define CORRAL_CLI_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

struct cli_option {
  const char *name;     /* long name without "--" */
  const char *arg;      /* name of its value ("SECONDS"), NULL for a switch */
  int id;               /* passed to the handler */
  const char *help;     /* one line, with the default */
};

/* Called once per flag; returns 0, or -1 after printing a message to stderr. */
typedef int (*cli_handler)(void *ctx, int id, const char *value);

/* Parses flags up to the first operand or "--".  Returns the index of the
 * first operand, -1 on a usage error (message printed), -2 when --help was
 * given (help printed to stdout). */
/* The subcommand being parsed ("corral run"), for messages about options. */
extern const char *cli_command;
int cli_parse(const char *prog, const char *usage, const struct cli_option *opts, size_t nopts,
              int argc, char **argv, cli_handler handler, void *ctx);

void cli_print_help(FILE *out, const char *usage, const struct cli_option *opts, size_t nopts);

/* Strict number parsing for flag values: "1.5" seconds -> 1500 ms. */
int cli_parse_seconds(const char *flag, const char *value, long long *ms);

#endif
