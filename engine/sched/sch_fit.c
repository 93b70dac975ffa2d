/*
 * sch_fit.c - node fit beyond devices for `serve`: the allocator's
 * (al_node_fit, engine/alloc/al_fit.c), the same filters, reasons and node
 * usage `allocate` uses, mapped to the scheduler's wait reasons, and the
 * least-allocated score.
 */
#include "sch_int.h"

#include <stdio.h>

unsigned sch_fit(sch_sched *s, const dg_pod *p, const al_amount *req, uint32_t nreq, const dg_node *n, char *why,
                 size_t cap, double *score)
{
    if (score)
        *score = 0;
    al_fit f;
    unsigned bit = al_node_fit(s->al, p, req, nreq, n, &f);
    if (bit) {
        al_fit_text(&f, why, cap);
        /* a pod naming its node is bound already; serve never filters one */
        return bit == AL_FIT_NODE_NAME ? SCH_FIT_SELECTOR : bit;
    }
    if (score)
        *score = al_least_allocated(s->al, req, nreq, n);
    return 0;
}
