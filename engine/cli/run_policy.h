/*
 * run_policy.h - the policy host as `draengine run` uses it: load a policy
 * directory, compute every device's facts into the graph (derived
 * attributes), and plug the admit/groups/score hooks into the allocator.
 */
#ifndef CLI_RUN_POLICY_H
#define CLI_RUN_POLICY_H

#include "../alloc/al.h"
#include "../model/dg.h"

typedef struct run_policy run_policy;

run_policy *run_policy_load(const char *dir, dg_graph *g, al_allocator *al, de_err *e);
void run_policy_free(run_policy *p);
uint32_t run_policy_count(const run_policy *p);
const char *run_policy_revision(const run_policy *p);
/* The verdict on the loaded revision (policy_out.h): false, with the
 * failures on stderr, when it is refused. */
bool run_policy_judge(const run_policy *p, const char *dir);
/* The policy statistics line on stderr when a hook failed. */
void run_policy_stats(const run_policy *p);

#endif
