/*
 * cmd_sysfs.c - `draengine sysfs`: print the ResourceSlice(s) a DRA driver
 * would publish for this machine's PCI devices.
 */
#include "../../drivers/sysfs/sfs.h"
#include "cli.h"
#include "objout.h"

#include <getopt.h>
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
    static const struct option longopts[] = {
        {"driver", required_argument, NULL, 'd'},
        {"node", required_argument, NULL, 'n'},
        {"root", required_argument, NULL, 'r'},
        {"class-prefix", required_argument, NULL, 'c'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    sfs_opts o = {0};
    const char *prefixes[SFS_MAX_CLASS_PREFIXES];
    cli_ofmt fmt = CLI_OFMT_YAML;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'd':
            o.driver = optarg;
            break;
        case 'n':
            o.node = optarg;
            break;
        case 'r':
            o.root = optarg;
            break;
        case 'c':
            if (o.nclass_prefixes == SFS_MAX_CLASS_PREFIXES) {
                cli_errorf("sysfs", "at most %d --class-prefix flags", SFS_MAX_CLASS_PREFIXES);
                return CLI_EXIT_INVALID;
            }
            prefixes[o.nclass_prefixes++] = optarg;
            break;
        case 'o':
            if (!cli_ofmt_parse(optarg, &fmt)) {
                cli_errorf("sysfs", "-o: unknown format \"%s\" (yaml or json)", optarg);
                return CLI_EXIT_INVALID;
            }
            break;
        case 'h':
            usage(stdout);
            return CLI_EXIT_OK;
        default:
            return cli_unknown_flag("sysfs", argv, usage);
        }
    }
    if (cli_operands_left("sysfs", argc, argv))
        return CLI_EXIT_INVALID;
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
