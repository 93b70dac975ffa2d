/*
 * run_policy.c - see run_policy.h.  Placeholder until the policy host
 * lands: asking for policies is an error that says so.
 */
#include "run_policy.h"

struct run_policy {
    int unused;
};

run_policy *run_policy_load(const char *dir, dg_graph *g, al_allocator *al, de_err *e)
{
    (void)g;
    (void)al;
    de_errf(e, DE_ENOTFOUND, "%s: the policy host is not in this build yet (use --no-policies)", dir);
    return NULL;
}

void run_policy_free(run_policy *p) { (void)p; }
uint32_t run_policy_count(const run_policy *p) { (void)p; return 0; }
const char *run_policy_revision(const run_policy *p) { (void)p; return ""; }
