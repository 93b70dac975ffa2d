/*
 * trip.c - within a revision's first pass over the devices, a hook that
 * keeps exceeding its budget is not called again.
 *
 * A call that times out costs its whole deadline (100 ms for derive), one
 * over its instruction budget some milliseconds.  A derive hook that looped
 * on every device made `run --policies` spend 13 minutes on the built-in
 * cluster's 7,808 devices before refusing the revision.  In that pass
 * (pol_set_prepare) any failure on a current device refuses the revision
 * (verdict.c), so after TRIP_AFTER budget failures of one hook of one
 * policy in a row, its further calls fail at once with the same reason,
 * listed in the failures section as "not run".  The verdict is the same;
 * only the list of failures is shorter to compute.  Outside that pass
 * (serve's devices that arrive later, score and admit calls) every call
 * runs: there a failure costs one device or one node its facts, not the
 * revision, and a slow minute of the machine must not cost more.  The
 * count needs no clock, so the outcome of a pass does not depend on the
 * machine's speed beyond the budget failures themselves.
 */
#include "pol_int.h"

#include <stdio.h>
#include <string.h>

enum { TRIP_AFTER = 3 };

static bool costly(pol_reason r)
{
    return r == POL_R_TIMEOUT || r == POL_R_INSTRUCTIONS || r == POL_R_MEMORY;
}

bool pol_trip_skips(const pol_set *s, const pol_policy *p, int hook)
{
    return s->preparing && p->trip_n[hook] >= TRIP_AFTER;
}

void pol_trip_note(const pol_set *s, pol_policy *p, int hook, pol_reason r, int line)
{
    if (!s->preparing)
        return;
    if (!costly(r)) {
        p->trip_n[hook] = 0;
        return;
    }
    if (p->trip_n[hook] < TRIP_AFTER)
        p->trip_n[hook]++;
    p->trip_reason[hook] = (uint8_t)r;
    p->trip_line[hook] = line;
}

void pol_trip_reset(pol_set *s)
{
    for (uint32_t i = 0; i < s->npols; i++) {
        pol_policy *p = s->pols[i];
        memset(p->trip_n, 0, sizeof p->trip_n);
    }
}

pol_reason pol_trip_failure(const pol_policy *p, int hook, char *msg, size_t cap, pol_failure *first)
{
    pol_reason r = (pol_reason)p->trip_reason[hook];
    snprintf(msg, cap, "not run: the hook failed so on its last %d calls", TRIP_AFTER);
    if (first && first->reason == POL_R_NONE) {
        first->reason = r;
        de_err_clear(&first->err);
        de_errf(&first->err, DE_EPOLICY, "policy %s (revision %.12s) hook %s: %s: %s", p->name, p->revision,
                pol_hook_names[hook], pol_reason_str(r), msg);
        snprintf(first->err.file, sizeof first->err.file, "%s", p->file);
        first->err.line = p->trip_line[hook];
    }
    return r;
}
