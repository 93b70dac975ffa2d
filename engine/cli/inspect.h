/*
 * inspect.h - `draengine inspect` split for --watch: the report over a
 * device graph (cmd_inspect.c) and the watch loop that applies file events
 * to one long-lived graph and prints the report again, or the part of it a
 * change touched (inspect_watch.c).
 */
#ifndef CLI_INSPECT_H
#define CLI_INSPECT_H

#include "../model/dg.h"
#include "../policy/polgraph.h"

#include <jansson.h>
#include <stdio.h>

/* Who holds an allocated device (one entry per allocation result). */
typedef struct cli_holder {
    uint32_t pool, device, claim;
    bool admin, shared;
} cli_holder;

/* One report over g; holders sorted by (pool, device, claim). */
typedef struct cli_inspect {
    dg_graph *g;
    de_interner *in;
    cli_holder *holders;
    uint32_t nholders;
    const pol_set *pol;         /* --policies: the set whose facts the graph holds, or NULL */
    const pol_verdict *verdict; /* its verdict (with pol) */
} cli_inspect;

/* Fill c for g with the current holders; cli_inspect_fini frees them. */
void cli_inspect_init(cli_inspect *c, dg_graph *g);
void cli_inspect_fini(cli_inspect *c);

/* The whole report: printed on out as a table, or returned as JSON (not
 * printed) when json. */
json_t *cli_inspect_report(const cli_inspect *c, bool json, FILE *out);

/* The table after a change: the summary line, then the blocks of the given
 * nodes (interned names; sorted here), "no longer present" for those that
 * are gone, and with `network` the pools that are not node-local. */
void cli_inspect_changes(const cli_inspect *c, uint32_t *nodes, uint32_t nnodes, bool network, FILE *out);

/* What kube-controller-manager's DRA controllers would do (inspect_ctl.c):
 * the status of each ResourcePoolStatusRequest, and the pods the device
 * taint eviction controller would delete.  With root, added to it as
 * "poolStatusRequests" and "evictions"; else printed on out (nothing when
 * there is nothing to say). */
void cli_inspect_pool_status(const cli_inspect *c, json_t *root, FILE *out);
void cli_inspect_evictions(const cli_inspect *c, json_t *root, FILE *out);

/* inspect --watch (inspect_watch.c): runs until SIGINT/SIGTERM; the exit code. */
int cli_inspect_watch(const char **paths, int npaths, bool json, const de_gates *gates);

#endif
