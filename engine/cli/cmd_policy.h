/*
 * cmd_policy.h - what the `draengine policy` subcommands share: their flags
 * (each subcommand has its own table; a flag another subcommand takes is
 * still unknown to it) and the options they fill.
 */
#ifndef CLI_CMD_POLICY_H
#define CLI_CMD_POLICY_H

#include "../policy/pol.h"
#include "flags.h"

#include <stdio.h>

enum {
    PF_HELP = 1,
    PF_VERBOSE,
    PF_EXIT_CODE,
    PF_INSTR,
    PF_DEADLINE,
    PF_MEMORY,
    PF_FAILURE,
    PF_FROM,
    PF_TO,
    PF_NODE,
    PF_POLICIES,
    PF_OUTPUT,
    PF_GATES,
    PF_ITER,
    PF_FILE,
};

#define PF_COMMON_FLAGS                                                                   \
    {"help", 'h', CLI_ARG_NONE, PF_HELP, NULL}, {"v", 'v', CLI_ARG_LEVEL, PF_VERBOSE, "verbose"}
#define PF_LIMIT_FLAGS                                                                    \
    {"instructions", 0, CLI_ARG_REQUIRED, PF_INSTR, NULL},                                \
        {"deadline-ms", 0, CLI_ARG_REQUIRED, PF_DEADLINE, NULL},                          \
        {"memory-mb", 0, CLI_ARG_REQUIRED, PF_MEMORY, NULL},                              \
        {"failure", 0, CLI_ARG_REQUIRED, PF_FAILURE, NULL}

/* Help text of PF_LIMIT_FLAGS. */
extern const char policy_limit_help[];

typedef struct policy_opts {
    char who[32]; /* "policy diff", for messages */
    pol_config cfg;
    int verbose;
    bool exit_code;
    const char *from, *to, *node, *policies, *gates;
    const char *out; /* -o, "text" unless given */
    const char *files[64];
    int nfiles;
    const char *pos[8];
    int npos;
    int iterations;
} policy_opts;

/* Parse one subcommand's arguments with its table (ending in a zeroed
 * entry).  1: --help was printed; -1: a usage error was printed; 0: go on. */
int policy_parse(int argc, char **argv, policy_opts *o, const char *sub, const cli_flag *flags,
                 void (*help)(FILE *));

/* The policy directory: --policies DIR or the one operand, else dflt
 * (NULL: required); NULL after printing a usage error. */
const char *policy_dir_arg(policy_opts *o, const char *sub, const char *dflt);
/* o->out is one of formats (NULL-terminated), or a usage error is printed. */
bool policy_want_format(policy_opts *o, const char *const *formats);

#endif
