/*
 * cli.h - the draengine command: one function per subcommand, each in its
 * own file (cmd_<name>.c), plus the shared helpers they use.
 *
 * Exit codes are part of the contract: 0 success, 1 "could not be satisfied"
 * (allocate) or a failed check (policy test, lint), 2 invalid input or usage,
 * 3 internal error.
 */
#ifndef CLI_H
#define CLI_H

#include "../base/de.h"

#include <stdio.h>

#define CLI_EXIT_OK 0
#define CLI_EXIT_UNSAT 1
#define CLI_EXIT_INVALID 2
#define CLI_EXIT_INTERNAL 3

typedef int (*cli_cmd_fn)(int argc, char **argv);

typedef struct cli_cmd {
    const char *name;
    const char *summary;
    cli_cmd_fn fn;
} cli_cmd;

int cli_cmd_version(int argc, char **argv);
int cli_cmd_help(int argc, char **argv);
int cli_cmd_inspect(int argc, char **argv);
int cli_cmd_cel(int argc, char **argv);
int cli_cmd_allocate(int argc, char **argv);
int cli_cmd_sim(int argc, char **argv);
int cli_cmd_sysfs(int argc, char **argv);
int cli_cmd_run(int argc, char **argv);
int cli_cmd_serve(int argc, char **argv);
int cli_cmd_snapshot(int argc, char **argv);
int cli_cmd_policy(int argc, char **argv);
int cli_cmd_bench(int argc, char **argv);

/* Benchmarks: each prints lines "BENCH <figure> <value> <unit>" to out and
 * returns 0 on success. Registered in bench.c. */
typedef int (*cli_bench_fn)(FILE *out, int argc, char **argv);

/* Print "draengine <cmd>: <msg>" to stderr (with the de_err message). */
void cli_errorf(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The end of a getopt_long loop: an unknown flag (getopt's '?') is reported
 * with the usage on stderr, CLI_EXIT_INVALID returned; an operand left after
 * the flags is reported, true returned. */
int cli_unknown_flag(const char *cmd, char **argv, void (*usage)(FILE *));
bool cli_operands_left(const char *cmd, int argc, char **argv);
/* Exit code for a de_rc. */
int cli_exit_for(de_rc rc);

extern const char *const cli_version_string;

#endif
