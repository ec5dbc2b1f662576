/* main.c — the corral binary: a table of subcommands over libcorral. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "corral.h"

struct subcommand {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *summary;
};

static const struct subcommand subcommands[] = {
    {"run", cmd_run, "run one command in the sandbox and capture its output"},
    {"exec", cmd_exec, "run one command in the sandbox, connected live to this terminal"},
    {"policy", cmd_policy, "print the effective permission profile as JSON"},
    {"mcp", cmd_mcp, "serve exec_command and write_stdin to MCP clients on stdio"},
    {"doctor", cmd_doctor, "report what this kernel can enforce"},
};

static void usage(FILE *out) {
  fprintf(out, "usage: corral <command> [options] [-- CMD ARGS...]\n\nCommands:\n");
  for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
    fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
  fprintf(out, "\nOptions:\n  -h, --help   show this help and exit\n"
               "  --version    print the version and exit\n"
               "\n`corral <command> --help` describes each command.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("corral %s\n", corral_version());
    return 0;
  }
  for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
    if (strcmp(subcommands[i].name, cmd) == 0)
      return subcommands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "corral: unknown command `%s`\nTry `corral --help`.\n", cmd);
  return EXIT_USAGE;
}
