/*
 * run_policy.c - see run_policy.h: a policy host without watching (the
 * run is a batch job), its facts published into the graph before the first
 * pod arrives, and its hooks installed in the allocator.
 */
#include "run_policy.h"

#include "policy_out.h"

#include "../policy/polgraph.h"

#include <stdlib.h>

struct run_policy {
    pol_host *h;
};

run_policy *run_policy_load(const char *dir, dg_graph *g, al_allocator *al, de_err *e)
{
    pol_host_opts o;
    pol_host_opts_default(&o);
    o.watch = false;
    o.rescan_ns = 0;
    o.cfg.log = pol_log_to_engine;
    pol_host *h = NULL;
    if (pol_host_new(dir, g, &o, &h, e) != DE_OK)
        return NULL;
    al_hooks hooks;
    pol_host_al_hooks(h, &hooks);
    al_set_hooks(al, &hooks);
    run_policy *p = de_xcalloc(1, sizeof *p);
    p->h = h;
    return p;
}

void run_policy_free(run_policy *p)
{
    if (!p)
        return;
    pol_host_free(p->h);
    free(p);
}

uint32_t run_policy_count(const run_policy *p) { return pol_set_count(pol_host_active(p->h)); }
const char *run_policy_revision(const run_policy *p) { return pol_set_revision(pol_host_active(p->h)); }

bool run_policy_judge(const run_policy *p, const char *dir) { return cli_policies_judge("run", dir, p->h); }
void run_policy_stats(const run_policy *p) { cli_policy_stats(stderr, "run", pol_host_active(p->h), false); }
