/*
 * main.c - draengine entry point: dispatch to subcommands.
 */
#include "cli.h"
#include "flags.h"

#include "../base/dir.h"
#include "../base/jalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const cli_version_string = "draengine 0.1.0 (Kubernetes resource.k8s.io/v1, 1.37 semantics)";

static const cli_cmd commands[] = {
    {"inspect", "load manifests and print a per-node summary of devices", cli_cmd_inspect},
    {"allocate", "allocate pending ResourceClaims offline from manifests", cli_cmd_allocate},
    {"cel", "evaluate a CEL device selector (or --batch JSON lines)", cli_cmd_cel},
    {"run", "the main job: a simulated cluster filled by a stream of claims", cli_cmd_run},
    {"sim", "write the manifests of a simulated cluster of real hardware shapes", cli_cmd_sim},
    {"sysfs", "print a ResourceSlice for this machine's PCI devices", cli_cmd_sysfs},
    {"serve", "run as a Kubernetes scheduler against an API server", cli_cmd_serve},
    {"snapshot", "read a live cluster's DRA objects into one file for diff, allocate, inspect", cli_cmd_snapshot},
    {"policy", "policy tooling: test, lint, diff, bench", cli_cmd_policy},
    {"bench", "run named benchmarks (BENCH <figure> <value> <unit>)", cli_cmd_bench},
    {"version", "print the version", cli_cmd_version},
    {"help", "show help for draengine or a subcommand", cli_cmd_help},
};

void cli_errorf(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "draengine %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* What a directory walk skipped (a symlink loop, a FIFO named x.yaml, a
 * dangling link): a warning on stderr, the run goes on. */
static void notice_to_stderr(void *ctx, const char *path, const char *what)
{
    fprintf(stderr, "draengine %s: warning: %s: %s\n", (const char *)ctx, path, what);
}

int cli_unknown_flag(const char *cmd, char **argv, void (*usage)(FILE *))
{
    cli_errorf(cmd, "unknown or incomplete flag \"%s\"", argv[optind - 1]);
    usage(stderr);
    return CLI_EXIT_INVALID;
}

bool cli_operands_left(const char *cmd, int argc, char **argv)
{
    if (optind >= argc)
        return false;
    cli_errorf(cmd, "unexpected argument \"%s\"", argv[optind]);
    return true;
}

int cli_exit_for(de_rc rc)
{
    switch (rc) {
    case DE_OK:
        return CLI_EXIT_OK;
    case DE_EUNSAT:
        return CLI_EXIT_UNSAT;
    case DE_EINTERNAL:
    case DE_ENOMEM:
        return CLI_EXIT_INTERNAL;
    default:
        return CLI_EXIT_INVALID;
    }
}

static void usage(FILE *out)
{
    fprintf(out, "usage: draengine <command> [flags]\n\n"
                 "draengine is a Kubernetes Dynamic Resource Allocation engine: a device graph,\n"
                 "a Kubernetes-exact allocator and Lua policies.\n\ncommands:\n");
    for (size_t i = 0; i < DE_ARRAY_LEN(commands); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'draengine <command> --help' for the flags of a command.\n");
}

/* The flags of the two commands without options of their own: --help and
 * -v, as everywhere; anything else is refused.  Returns 1 after --help, -1
 * after an error, 0 with *operand the operand (or NULL). */
static int plain_args(const char *cmd, int argc, char **argv, const char *help, const char **operand)
{
    static const cli_flag flags[] = {
        {"help", 'h', CLI_ARG_NONE, 1, NULL}, {"v", 'v', CLI_ARG_LEVEL, 2, "verbose"}, {0}};
    cli_args a;
    cli_args_init(&a, cmd, argc, argv, 1);
    const char *v;
    int id, level;
    *operand = NULL;
    while ((id = cli_args_next(&a, flags, &v)) != CLI_ARGS_END) {
        if (id == CLI_ARGS_ERROR)
            return -1;
        if (id == 1) {
            printf("%s", help);
            return 1;
        }
        if (id == 2 && !cli_flag_level(cmd, v, &level))
            return -1;
        if (id == CLI_ARGS_OPERAND) {
            if (*operand || !strcmp(cmd, "version")) {
                cli_errorf(cmd, "unexpected argument \"%s\"", v);
                return -1;
            }
            *operand = v;
        }
    }
    return 0;
}

int cli_cmd_version(int argc, char **argv)
{
    const char *op;
    int r = plain_args("version", argc, argv, "usage: draengine version\n\nPrint the draengine version.\n", &op);
    if (r)
        return r > 0 ? CLI_EXIT_OK : CLI_EXIT_INVALID;
    printf("%s\n", cli_version_string);
    return 0;
}

int cli_cmd_help(int argc, char **argv)
{
    const char *op;
    int r = plain_args("help", argc, argv,
                       "usage: draengine help [COMMAND]\n\nShow the commands, or the flags of one command.\n", &op);
    if (r)
        return r > 0 ? CLI_EXIT_OK : CLI_EXIT_INVALID;
    if (op) {
        for (size_t k = 0; k < DE_ARRAY_LEN(commands); k++) {
            if (!strcmp(op, commands[k].name)) {
                char *args[] = {(char *)op, "--help", NULL};
                return commands[k].fn(2, args);
            }
        }
        fprintf(stderr, "draengine help: unknown command \"%s\"\n", op);
        usage(stderr);
        return CLI_EXIT_INVALID;
    }
    usage(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    de_jalloc_install();
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_INVALID;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version"))
        return cli_cmd_version(1, argv + 1);
    for (size_t i = 0; i < DE_ARRAY_LEN(commands); i++)
        if (!strcmp(cmd, commands[i].name)) {
            de_notice_sink(notice_to_stderr, (void *)commands[i].name);
            return commands[i].fn(argc - 1, argv + 1);
        }
    fprintf(stderr, "draengine: unknown command \"%s\"\n\n", cmd);
    usage(stderr);
    return CLI_EXIT_INVALID;
}
