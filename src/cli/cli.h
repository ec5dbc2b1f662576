/* cli.h — the subcommands of the corral binary, one file each. */
#ifndef CORRAL_CLI_H
#define CORRAL_CLI_H

#define EXIT_USAGE 2
#define EXIT_TIMEOUT 124
#define EXIT_SETUP 125

int cmd_run(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_exec(int argc, char **argv);

#endif
