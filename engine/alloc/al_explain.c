/*
 * al_explain.c - why a claim set could not be allocated on a node, in terms a
 * user can act on.  Upstream says only "cannot allocate all claims"; here each
 * request is checked on its own (how many devices the class and selectors
 * match, how many of those are in use, tainted, short of capacity or of
 * shared counters), and when every request could be served alone the
 * combination is blamed on what rejected devices during the search
 * (constraints, counters, compatibility groups).
 *
 * Runs only after a failed search, never in the hot path.
 */
#include "al_int.h"
#include "../base/buf.h"

#include <stdio.h>

/* A claim's name, or with explain_marks a mark "\x01<index>\x02" the node
 * choice cache fills in with the names of the pod at hand (al_choose.c). */
static const char *claim_name(al_call *c, uint32_t ci)
{
    if (c->a->explain_marks)
        return de_arena_printf(c->ar, "\x01%u\x02", ci);
    return al_str(c->a, c->claims[ci].c->meta.name);
}

static const char *class_of(al_call *c, const al_rq *rq)
{
    return al_str(c->a, rq->x->class_name);
}

static const char *cons_list(al_call *c, const al_claimc *cc)
{
    de_buf b;
    de_buf_init(&b, 4096);
    for (uint32_t k = 0; k < cc->ncons; k++) {
        const al_cons *x = &cc->cons[k];
        de_buf_printf(&b, "%s%s=%s", k ? ", " : "",
                      x->kind == AL_CK_MATCH ? "matchAttribute" : "distinctAttribute",
                      al_str(c->a, x->name));
        if (x->nreqs) {
            de_buf_puts(&b, " over [");
            for (uint32_t i = 0; i < x->nreqs; i++)
                de_buf_printf(&b, "%s%s", i ? ", " : "", al_str(c->a, x->reqs[i]));
            de_buf_puts(&b, "]");
        }
    }
    const char *s = de_arena_strdup(c->ar, de_buf_str(&b));
    de_buf_free(&b);
    return s;
}

/* Describe one (sub)request; returns true when it cannot be served alone. */
static bool describe_rq(al_call *c, al_rq *rq, de_buf *b)
{
    al_ntab *t = c->t;
    uint32_t match = 0, inuse = 0, tainted = 0, cap = 0, counters = 0, groups = 0, noattr = 0,
             usable = 0, blocked = 0;
    const al_claimc *cc = &c->claims[rq->claim];
    for (size_t d = de_bits_next(rq->cs->cand, t->ndev, 0); d < t->ndev;
         d = de_bits_next(rq->cs->cand, t->ndev, d + 1)) {
        const al_dev *dv = &t->devs[d];
        match++;
        if (dv->flags & AL_DF_BLOCKED) {
            blocked++;
            continue;
        }
        if (!rq->admin && de_bit_get(t->inuse, d)) {
            inuse++;
            continue;
        }
        if (c->a->f_taints && al_taint_blocks(dv, rq)) {
            tainted++;
            continue;
        }
        if (c->a->f_cc && al_capacity_fits(c, rq, (uint32_t)d) != 1) {
            cap++;
            continue;
        }
        if ((dv->flags & AL_DF_COUNTERS) && !c->a->f_part) {
            counters++;
            continue;
        }
        if ((dv->flags & AL_DF_COUNTERS) && !c->a->f_cgroups && al_cgroups_skip_disabled(c, (uint32_t)d)) {
            groups++;
            continue;
        }
        /* matchAttribute / distinctAttribute need the attribute */
        bool has_all = true;
        if (!rq->nderived) {
            de_devview view;
            dg_device_view(c->a->g, dv->devid, &view);
            for (uint32_t k = 0; k < rq->ncons && has_all; k++) {
                const al_cons *x = &cc->cons[rq->cons[k]];
                has_all = al_lookup_attr(c, (uint32_t)d, x->domain, x->id, &view) != NULL;
            }
        }
        if (!has_all) {
            noattr++;
            continue;
        }
        usable++;
    }
    const char *name = al_str(c->a, rq->full_name);
    if (rq->all)
        de_buf_printf(b, "request %s (all devices of class %s): %u match", name, class_of(c, rq), match);
    else
        de_buf_printf(b, "request %s (%lld x class %s): %u of %u devices on the node match the class and selectors",
                      name, (long long)rq->need, class_of(c, rq), match, t->ndev);
    if (blocked)
        de_buf_printf(b, ", %u blocked (a compatibility groups policy failed on them)", blocked);
    if (inuse)
        de_buf_printf(b, ", %u in use by other claims", inuse);
    if (tainted)
        de_buf_printf(b, ", %u tainted without a matching toleration", tainted);
    if (cap)
        de_buf_printf(b, ", %u without enough free capacity", cap);
    if (counters)
        de_buf_printf(b, ", %u partitionable (DRAPartitionableDevices is off)", counters);
    if (groups)
        de_buf_printf(b, ", %u declare compatibilityGroups (DRADeviceCompatibilityGroups is off)", groups);
    if (noattr) {
        de_buf_printf(b, ", %u lack the attribute of a constraint (", noattr);
        for (uint32_t k = 0; k < rq->ncons; k++)
            de_buf_printf(b, "%s%s", k ? ", " : "", al_str(c->a, cc->cons[rq->cons[k]].name));
        de_buf_puts(b, ")");
    }
    bool short_ = rq->all ? (match == 0 || usable < match) : (int64_t)usable < rq->need;
    de_buf_printf(b, " -> %u usable%s", usable, short_ ? "" : " (enough on its own)");
    return short_;
}

void al_explain(al_call *c, al_why *why)
{
    al_allocator *a = c->a;
    al_ntab *t = c->t;
    de_buf sum, det;
    de_buf_init(&sum, 8192);
    de_buf_init(&det, 65536);
    bool blamed = false;
    if (t->ndev == 0 && !t->npools) {
        de_buf_printf(&sum, "no ResourceSlice offers devices to node %s", al_str(a, c->node_name));
        blamed = true;
    }
    for (uint32_t p = 0; p < t->npools; p++) {
        const al_pool *pl = &t->pools[p];
        if (pl->state == AL_POOL_INCOMPLETE)
            de_buf_printf(&det, "pool %s/%s is incomplete (being updated): not used\n", al_str(a, pl->driver),
                          al_str(a, pl->name));
        else if (pl->state == AL_POOL_INVALID)
            de_buf_printf(&det, "pool %s/%s is invalid (%s): not used\n", al_str(a, pl->driver),
                          al_str(a, pl->name), pl->invalid_reason ? pl->invalid_reason : "?");
    }
    for (uint32_t ci = 0; ci < c->nclaims && !blamed; ci++) {
        al_claimc *cc = &c->claims[ci];
        const char *cn = claim_name(c, ci);
        for (uint32_t ri = 0; ri < cc->nreq; ri++) {
            al_req *rr = &cc->req[ri];
            bool all_short = true;
            de_buf one;
            de_buf_init(&one, 8192);
            for (uint32_t s = 0; s < rr->nrq; s++) {
                if (s)
                    de_buf_puts(&one, "; or ");
                if (!describe_rq(c, &rr->rq[s], &one))
                    all_short = false;
            }
            de_buf_printf(&det, "claim %s: %s\n", cn, de_buf_str(&one));
            if (all_short && !blamed) {
                de_buf_printf(&sum, "claim %s, %s", cn, de_buf_str(&one));
                blamed = true;
            }
            de_buf_free(&one);
        }
    }
    if (!blamed) {
        const char *sep = "";
        de_buf_puts(&sum, "every request can be served alone, but not all together");
        uint32_t ncons = 0;
        for (uint32_t ci = 0; ci < c->nclaims; ci++)
            ncons += c->claims[ci].ncons;
        de_buf_puts(&sum, ": ");
        if (c->rej_constraint) {
            for (uint32_t ci = 0; ci < c->nclaims; ci++)
                if (c->claims[ci].ncons) {
                    de_buf_printf(&sum, "%sno combination satisfies claim %s's constraints (%s)", sep,
                                  claim_name(c, ci), cons_list(c, &c->claims[ci]));
                    sep = "; ";
                }
        }
        if (c->rej_counters) {
            de_buf_printf(&sum, "%sshared counters of partitionable devices are exhausted", sep);
            sep = "; ";
        }
        if (c->rej_groups) {
            de_buf_printf(&sum, "%sdevices are incompatible (compatibility groups)", sep);
            sep = "; ";
        }
        if (c->rej_taint && !*sep) {
            de_buf_printf(&sum, "%sdevices are tainted", sep);
            sep = "; ";
        }
        if (!*sep)
            de_buf_puts(&sum, "the requests compete for the same devices");
        (void)ncons;
    }
    why->summary = de_arena_strdup(c->ar, de_buf_str(&sum));
    /* the detail only adds something with several lines (or pool notes) */
    uint32_t lines = 0;
    for (size_t i = 0; i < det.len; i++)
        lines += det.p[i] == '\n';
    why->detail = lines > 1 ? de_arena_strdup(c->ar, de_buf_str(&det)) : NULL;
    de_buf_free(&sum);
    de_buf_free(&det);
}
