/*
 * cmd_sim.c - `draengine sim`: write the manifests of a simulated cluster
 * (DeviceClasses, Nodes, ResourceSlices) built from real hardware shapes.
 */
#include "../../drivers/sim/sim.h"
#include "../base/log.h"
#include "cli.h"
#include "flags.h"
#include "objout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: draengine sim [--nodes N] [--shape NAME[:WEIGHT][,...]]... [--seed S]\n"
            "                     [-o yaml|json] [--no-classes] [--no-nodes] [--list-shapes]\n"
            "\n"
            "Write the DeviceClasses, Nodes and ResourceSlices of a simulated cluster whose\n"
            "nodes publish what the real DRA drivers publish on that hardware.\n"
            "\n"
            "  --shape LIST    shapes with optional weights, e.g. dgx-h100:3,aws-p5:1\n"
            "                  (repeatable; default: a mix of every shape)\n"
            "  --nodes N       total nodes, spread over the shapes by weight\n"
            "                  (default: the sum of the weights)\n"
            "  --seed S        PRNG seed (decimal or 0x hex, default 1); same seed, same bytes\n"
            "  -o FORMAT       yaml (default, one document per object) or json (a v1 List)\n"
            "  --no-classes    leave out the DeviceClasses\n"
            "  --no-nodes      leave out the core v1 Node objects\n"
            "  --list-shapes   list the shapes and exit\n");
}

static void list_shapes(void)
{
    printf("%-14s %-5s %-5s %-5s %s\n", "SHAPE", "GPUS", "NICS", "CPUS", "DESCRIPTION");
    for (size_t i = 0; i < sim_shape_count(); i++) {
        const sim_shape_info *s = sim_shape_at(i);
        printf("%-14s %-5u %-5u %-5u %s\n", s->name, s->gpus, s->nics, s->cpus, s->summary);
    }
}

int cli_cmd_sim(int argc, char **argv)
{
    static const cli_flag flags[] = {
        {"nodes", 'n', CLI_ARG_REQUIRED, 'n', NULL},
        {"shape", 0, CLI_ARG_REQUIRED, 's', "shapes"},
        {"seed", 0, CLI_ARG_REQUIRED, 'S', NULL},
        {"output", 'o', CLI_ARG_REQUIRED, 'o', NULL},
        {"no-classes", 0, CLI_ARG_NONE, 'C', NULL},
        {"no-nodes", 0, CLI_ARG_NONE, 'N', NULL},
        {"list-shapes", 0, CLI_ARG_NONE, 'l', NULL},
        {"help", 'h', CLI_ARG_NONE, 'h', NULL},
        {"v", 'v', CLI_ARG_LEVEL, 'v', "verbose"},
        {0},
    };
    sim_opts o = {.seed = 1};
    cli_ofmt fmt = CLI_OFMT_YAML;
    char *mix = NULL;
    size_t mixlen = 0;
    uint64_t v;
    int c, rc = CLI_EXIT_OK;
    cli_args args;
    cli_args_init(&args, "sim", argc, argv, 1);
    const char *optval;
    int verbose = 0;
    while ((c = cli_args_next(&args, flags, &optval)) != CLI_ARGS_END) {
        switch (c) {
        case 'n':
            if (!cli_flag_u64("sim", "--nodes", optval, 1, SIM_MAX_NODES, &v)) {
                free(mix);
                return CLI_EXIT_INVALID;
            }
            o.nodes = (uint32_t)v;
            break;
        case 's': {
            size_t l = strlen(optval);
            mix = de_xrealloc(mix, mixlen + l + 2);
            if (mixlen)
                mix[mixlen++] = ',';
            memcpy(mix + mixlen, optval, l + 1);
            mixlen += l;
            break;
        }
        case 'S':
            if (!cli_flag_u64("sim", "--seed", optval, 0, UINT64_MAX, &o.seed)) {
                free(mix);
                return CLI_EXIT_INVALID;
            }
            break;
        case 'o':
            if (!cli_ofmt_parse(optval, &fmt)) {
                cli_errorf("sim", "-o: unknown format \"%s\" (yaml or json)", optval);
                free(mix);
                return CLI_EXIT_INVALID;
            }
            break;
        case 'C':
            o.no_classes = true;
            break;
        case 'N':
            o.no_nodes = true;
            break;
        case 'l':
            list_shapes();
            free(mix);
            return CLI_EXIT_OK;
        case 'h':
            usage(stdout);
            free(mix);
            return CLI_EXIT_OK;
        case 'v':
            if (!cli_flag_level("sim", optval, &verbose)) {
                free(mix);
                return CLI_EXIT_INVALID;
            }
            de_log_set_verbosity(verbose);
            break;
        case CLI_ARGS_OPERAND:
            cli_errorf("sim", "unexpected argument \"%s\"", optval);
            free(mix);
            return CLI_EXIT_INVALID;
        default:
            usage(stderr);
            free(mix);
            return CLI_EXIT_INVALID;
        }
    }
    o.mix = mix;
    de_err e;
    de_err_clear(&e);
    sim_cluster *cl = sim_new(&o, &e);
    free(mix);
    if (!cl) {
        cli_errorf("sim", "%s", e.msg);
        return cli_exit_for(e.rc);
    }
    cli_objout out;
    cli_objout_begin(&out, stdout, fmt);
    de_rc r = sim_emit_all(cl, cli_objout_write, &out, &e);
    if (r == DE_OK)
        r = cli_objout_end(&out, &e);
    if (r != DE_OK) {
        cli_errorf("sim", "%s", e.msg);
        rc = cli_exit_for(r);
    }
    sim_free(cl);
    return rc;
}
