/*
 * sch_fit.c - node fit beyond devices for `serve`: the allocator's
 * (al_node_fit, engine/alloc/al_fit.c), the same filters, reasons and node
 * usage `allocate` uses, mapped to the scheduler's wait reasons, and the
 * least-allocated score.
 */
#include "sch_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* KEP-5517 on one node after Allocate: the pod's claims (claims[0..nall),
 * pod order, plus `ext`, the cycle's KEP-5004 claim for this node or
 * DG_NONE) with the nuse pending ones (pend) allocated as in o.  0 = fits
 * (out filled from the cycle arena), else SCH_FIT_* with the reasons in
 * why; a hard error (upstream's) in *rc. */
unsigned sch_nar(sch_sched *s, const dg_pod *p, const uint32_t *claims, uint32_t nall, uint32_t ext,
                 const uint32_t *pend, const al_outcome *o, uint32_t nuse, const al_amount *req, uint32_t nreq,
                 const dg_node *n, al_nar *out, char *why, size_t cap, de_rc *rc, de_err *e)
{
    *rc = DE_OK;
    memset(out, 0, sizeof *out);
    if (!al_gates(s->al)->on[DE_GATE_NODE_ALLOCATABLE_RESOURCES])
        return 0;
    uint32_t *all = de_arena_alloc(s->cycle, (nall + 1) * sizeof *all), na = nall;
    memcpy(all, claims, nall * sizeof *all);
    if (ext != DG_NONE)
        all[na++] = ext;
    al_nar_pod np = {p, dg_pod_find(s->g, p->meta.ns, p->meta.name), all, na, pend, o ? o->claims : NULL,
                     o ? nuse : 0, req, nreq};
    al_fit f;
    *rc = al_nar_fit(s->al, &np, n, s->cycle, out, &f, e);
    if (*rc != DE_OK || !f.bit)
        return 0;
    al_fit_text(&f, why, cap);
    return f.bit;
}

unsigned sch_node_fit(sch_sched *s, uint32_t pod, uint32_t node, char *why, size_t cap)
{
    const dg_pod *p = dg_pod_get(s->g, pod);
    const dg_node *n = dg_node_get(s->g, node);
    if (!p || !n) {
        snprintf(why, cap, "no such pod or node");
        return SCH_FIT_SELECTOR;
    }
    al_amount *req = NULL;
    uint32_t nreq = al_pod_requests(p, &req);
    unsigned bits = sch_fit(s, p, req, nreq, n, why, cap, NULL);
    free(req);
    if (!bits)
        why[0] = 0;
    return bits;
}
