/*
 * pending.c - TEMPORARY scaffolding while the foundation lands: weak
 * definitions of the subcommands whose modules are still being written.
 * Each module's strong definition replaces its entry here at link time.
 * This file is deleted once every subcommand exists.
 */
#include "cli.h"

#include <stdio.h>

#define PENDING(fn, name)                                                              \
    __attribute__((weak)) int fn(int argc, char **argv)                                \
    {                                                                                  \
        (void)argc;                                                                    \
        (void)argv;                                                                    \
        fprintf(stderr, "draengine %s: not available in this build yet\n", name);     \
        return CLI_EXIT_INTERNAL;                                                      \
    }

