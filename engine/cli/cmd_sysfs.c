/*
 * cmd_sysfs.c - `draengine sysfs`: print the ResourceSlice(s) a DRA driver
 * would publish for this machine's PCI devices.
 */
#include "../../drivers/sysfs/sfs.h"
#include "../base/log.h"
#include "cli.h"
#include "flags.h"
#include "objout.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: draengine sysfs --driver NAME [--node NAME] [--root DIR]\n"
            "                       [--class-prefix 0xCC[SS[PP]]]... [-o yaml|json]\n"
            "\n"
            "Discover this machine's PCI devices from sysfs and print the ResourceSlices a\n"
            "DRA driver named NAME would publish for them: one pool named after the node,\n"
            "at most 128 devices per slice, devices named pci-<domain>-<bus>-<dev>-<fn> with\n"
            "resource.kubernetes.io/pciBusID, pcieRoot and numaNode (when the kernel knows\n"
            "it), plus vendorID, deviceID, class and kernelDriver.\n"
            "\n"
            "  --driver NAME        DRA driver name (a DNS subdomain), required\n"
            "  --node NAME          node (and pool) name; default: this host's name\n"
            "  --root DIR           sysfs root (default /sys), for tests and snapshots\n"
            "  --class-prefix P     keep devices whose PCI class starts with P (repeatable),\n"
            "                       e.g. 0x03 displays/GPUs, 0x0200 Ethernet, 0x0207 InfiniBand,\n"
            "                       0x12 accelerators; default: every device but bridges (0x06)\n"
            "  -o FORMAT            yaml (default) or json (a v1 List)\n");
}

static de_rc collect(void *ctx, json_t *obj, de_err *e)
{
    (void)e;
    return json_array_append(ctx, obj) == 0 ? DE_OK : DE_ENOMEM;
}

int cli_cmd_sysfs(int argc, char **argv)
{
    static const cli_flag flags[] = {
        {"driver", 0, CLI_ARG_REQUIRED, 'd', NULL},
        {"node", 0, CLI_ARG_REQUIRED, 'n', NULL},
        {"root", 0, CLI_ARG_REQUIRED, 'r', NULL},
        {"class-prefix", 0, CLI_ARG_REQUIRED, 'c', NULL},
        {"output", 'o', CLI_ARG_REQUIRED, 'o', NULL},
        {"help", 'h', CLI_ARG_NONE, 'h', NULL},
        {"v", 'v', CLI_ARG_LEVEL, 'v', "verbose"},
        {0},
    };
    sfs_opts o = {0};
    const char *prefixes[SFS_MAX_CLASS_PREFIXES];
    cli_ofmt fmt = CLI_OFMT_YAML;
    int c;
    cli_args args;
    cli_args_init(&args, "sysfs", argc, argv, 1);
    const char *optval;
    int verbose = 0;
    while ((c = cli_args_next(&args, flags, &optval)) != CLI_ARGS_END) {
        switch (c) {
        case 'd':
            o.driver = optval;
            break;
        case 'n':
            o.node = optval;
            break;
        case 'r':
            o.root = optval;
            break;
        case 'c':
            if (o.nclass_prefixes == SFS_MAX_CLASS_PREFIXES) {
                cli_errorf("sysfs", "at most %d --class-prefix flags", SFS_MAX_CLASS_PREFIXES);
                return CLI_EXIT_INVALID;
            }
            prefixes[o.nclass_prefixes++] = optval;
            break;
        case 'o':
            if (!cli_ofmt_parse(optval, &fmt)) {
                cli_errorf("sysfs", "-o: unknown format \"%s\" (yaml or json)", optval);
                return CLI_EXIT_INVALID;
            }
            break;
        case 'h':
            usage(stdout);
            return CLI_EXIT_OK;
        case 'v':
            if (!cli_flag_level("sysfs", optval, &verbose))
                return CLI_EXIT_INVALID;
            de_log_set_verbosity(verbose);
            break;
        case CLI_ARGS_OPERAND:
            cli_errorf("sysfs", "unexpected argument \"%s\"", optval);
            return CLI_EXIT_INVALID;
        default:
            usage(stderr);
            return CLI_EXIT_INVALID;
        }
    }
    if (!o.driver) {
        cli_errorf("sysfs", "--driver NAME is required");
        usage(stderr);
        return CLI_EXIT_INVALID;
    }
    o.class_prefixes = prefixes;
    de_err e;
    de_err_clear(&e);
    /* Collect first so that a sysfs error does not leave half a document. */
    json_t *all = json_array();
    de_rc rc = sfs_discover(&o, collect, all, &e);
    if (rc == DE_OK) {
        cli_objout out;
        size_t i;
        json_t *obj;
        cli_objout_begin(&out, stdout, fmt);
        json_array_foreach(all, i, obj) {
            if ((rc = cli_objout_write(&out, obj, &e)) != DE_OK)
                break;
        }
        if (rc == DE_OK)
            rc = cli_objout_end(&out, &e);
    }
    json_decref(all);
    if (rc != DE_OK) {
        cli_errorf("sysfs", "%s", e.msg);
        return cli_exit_for(rc);
    }
    return CLI_EXIT_OK;
}
