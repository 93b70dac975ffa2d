/*
 * al_explain.c - why a claim set could not be allocated on a node, in terms a
 * user can act on.  Upstream says only "cannot allocate all claims"; here each
 * request is checked on its own (how many devices the class and selectors
 * match, how many of those are in use, tainted, short of capacity or of
 * shared counters), and when every request could be served alone the
 * combination is blamed: first on a matchAttribute or distinctAttribute
 * constraint that no choice of devices can satisfy (worked out from the
 * usable devices and their values, below), else on what rejected devices
 * during the search (constraints, counters, compatibility groups).
 *
 * Runs only after a failed search, never in the hot path.
 */
#include "al_int.h"
#include "../base/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Describe one (sub)request; returns true when it cannot be served alone.
 * With `usable` set (DE_BITS_WORDS(ndev) words, zeroed) the devices it could
 * take on its own are marked there. */
static bool describe_rq(al_call *c, al_rq *rq, de_buf *b, uint64_t *usable_out)
{
    al_ntab *t = c->t;
    uint32_t match = 0, inuse = 0, tainted = 0, cap = 0, counters = 0, groups = 0, noattr = 0,
             usable = 0, blocked = 0, nodeops = 0, nofacts = 0;
    const char *failed_policy = NULL;
    uint64_t *usable_set = usable_out;
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
        if (dv->flags & AL_DF_NODEOPS) {
            nodeops++;
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
            const char *pf = c->a->hooks.facts_failed
                                 ? c->a->hooks.facts_failed(c->a->hooks.ctx, c->a->g, dv->devid)
                                 : NULL;
            if (pf) {
                nofacts++;
                if (!failed_policy)
                    failed_policy = pf;
            }
            continue;
        }
        usable++;
        if (usable_set)
            de_bit_set(usable_set, d);
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
    if (nodeops)
        de_buf_printf(b, ", %u skip node operations (%s)", nodeops,
                      c->a->f_skipops ? "the node does not declare DRAOptionalNodeOperations"
                                      : "DRAOptionalNodeOperations is off");
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
        if (nofacts)
            de_buf_printf(b, ": policy %s failed on %u of them (their derived attributes are missing)",
                          failed_policy, nofacts);
    }
    bool short_ = rq->all ? (match == 0 || usable < match) : (int64_t)usable < rq->need;
    de_buf_printf(b, " -> %u usable%s", usable, short_ ? "" : " (enough on its own)");
    return short_;
}

/* ---- constraints no choice of devices can satisfy -------------------------------------
 *
 * After a failed search in which every request could be served alone, each
 * matchAttribute and distinctAttribute constraint is checked against the
 * devices its requests could use (describe_rq's "usable" sets).  A constraint
 * is blamed only when no choice can satisfy it even with nothing else in the
 * way, so the blame is never wrong; what this cannot decide (derived
 * attributes, list values under distinctAttribute, allocationMode All under
 * distinctAttribute) is left to the search's counters below.
 *   matchAttribute: some value v must be carried by `need` usable devices of
 *     every request it covers (every device for allocationMode All; list
 *     values carry each element with DRAListTypeAttributes, nothing without
 *     it); when each request has one alternative, the requests must also get
 *     distinct devices (a bipartite matching; shareable devices serve many).
 *   distinctAttribute (1.37 compares each device with every one before it):
 *     each request needs as many values among its usable devices as it
 *     needs devices, and the requests together need pairwise different
 *     values (a matching of their devices to values).
 */

typedef struct cval {
    uint8_t kind; /* scalar de_vkind */
    uint64_t v;
} cval;

static int cval_cmp(const void *x, const void *y)
{
    const cval *a = x, *b = y;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return a->v < b->v ? -1 : a->v > b->v;
}

static cval cval_at(const de_attrval *v, uint32_t i)
{
    int k = de_vkind_scalar(v->kind);
    bool list = de_vkind_is_list(v->kind);
    cval r = {(uint8_t)k, 0};
    switch (k) {
    case DE_V_INT: r.v = (uint64_t)(list ? v->u.ints[i] : v->u.i); break;
    case DE_V_BOOL: r.v = list ? v->u.bools[i] : v->u.b; break;
    default: r.v = list ? v->u.strs[i] : v->u.s; break;
    }
    return r;
}

/* The attribute device d offers constraint k, and how many values it holds
 * (*n, read with cval_at; 0 when it has none); *list when it is a list.
 * Read in place: these run inside the matching loops, once per device and
 * candidate value, where a copy in the call's bounded arena each time ran
 * it dry (40 slices of 128 devices on one node aborted `allocate`). */
static const de_attrval *dev_attr(al_call *c, al_cons *k, uint32_t d, uint32_t *n, bool *list)
{
    bool found;
    const de_attrval *v = al_cons_value(c, k, d, &found);
    *n = 0;
    *list = found && de_vkind_is_list(v->kind);
    if (!found || v->kind == DE_V_NONE)
        return NULL;
    if (*list && !c->a->f_list)
        return NULL; /* scalar mode: a list equals nothing */
    *n = *list ? v->n : 1;
    return v;
}

static bool has_value(al_call *c, al_cons *k, uint32_t d, cval want)
{
    uint32_t n;
    bool list;
    const de_attrval *v = dev_attr(c, k, d, &n, &list);
    for (uint32_t i = 0; i < n; i++) {
        cval x = cval_at(v, i);
        if (!cval_cmp(&x, &want))
            return true;
    }
    return false;
}

static const char *cval_text(al_call *c, cval v)
{
    switch (v.kind) {
    case DE_V_INT: return de_arena_printf(c->ar, "%lld", (long long)(int64_t)v.v);
    case DE_V_BOOL: return v.v ? "true" : "false";
    default: return al_str(c->a, (uint32_t)v.v);
    }
}

/* One request a constraint covers: its alternatives and their usable sets. */
typedef struct creq {
    al_req *rr;
    uint64_t **usable;
} creq;

/* The requests of claim ci that constraint k covers: a request counts only
 * when k applies to every one of its alternatives (else it can avoid k).
 * Returns false when the analysis cannot decide (derived attributes). */
static bool covered(al_call *c, uint32_t ci, al_cons *k, uint64_t ***usable, creq *out, uint32_t *n)
{
    al_claimc *cc = &c->claims[ci];
    *n = 0;
    for (uint32_t ri = 0; ri < cc->nreq; ri++) {
        al_req *rr = &cc->req[ri];
        bool all_apply = true;
        for (uint32_t s = 0; s < rr->nrq && all_apply; s++) {
            al_rq *rq = &rr->rq[s];
            all_apply = al_cons_applies(k, rq);
            for (uint32_t i = 0; i < rq->nderived; i++)
                if (rq->derived[i].domain == k->domain && rq->derived[i].id == k->id)
                    return false;
        }
        if (all_apply)
            out[(*n)++] = (creq){rr, usable[ri]};
    }
    return true;
}

static int64_t devices_needed(const al_rq *rq) { return rq->all ? (int64_t)rq->nall : rq->need; }

/* matchAttribute: can alternative rq get its devices with value v? */
static bool alt_supports(al_call *c, al_cons *k, al_rq *rq, const uint64_t *usable, cval v)
{
    uint32_t nd = c->t->ndev;
    if (rq->all) {
        for (uint32_t i = 0; i < rq->nall; i++)
            if (!de_bit_get(usable, rq->all_devs[i]) || !has_value(c, k, rq->all_devs[i], v))
                return false;
        return rq->nall > 0;
    }
    int64_t cnt = 0;
    for (size_t d = de_bits_next(usable, nd, 0); d < nd && cnt < rq->need; d = de_bits_next(usable, nd, d + 1))
        cnt += has_value(c, k, (uint32_t)d, v);
    return cnt >= rq->need;
}

/* Kuhn's augmenting path for one slot (one device of one request) over the
 * devices its request can use, with value v when k is set; owner[d] is the
 * slot holding device d (-1 free). */
typedef struct mctx {
    al_call *c;
    al_cons *k;                 /* NULL: any value */
    const al_rq *const *slot_rq;
    const uint64_t *const *slot_usable;
    int32_t *owner;
    uint8_t *seen;
    cval v;
} mctx;

static bool augment(mctx *m, uint32_t slot)
{
    const al_rq *rq = m->slot_rq[slot];
    const uint64_t *usable = m->slot_usable[slot];
    uint32_t nd = m->c->t->ndev;
    for (size_t d = de_bits_next(usable, nd, 0); d < nd; d = de_bits_next(usable, nd, d + 1)) {
        if (m->seen[d] || (m->k && !has_value(m->c, m->k, (uint32_t)d, m->v)))
            continue;
        if ((m->c->t->devs[d].flags & AL_DF_MULTI) || rq->admin)
            return true; /* shareable: serves any number of slots */
        m->seen[d] = 1;
        if (m->owner[d] < 0 || augment(m, (uint32_t)m->owner[d])) {
            m->owner[d] = (int32_t)slot;
            return true;
        }
    }
    return false;
}

/* How many of the slots get a device of their own (maximum matching). */
static uint32_t assign_slots(al_call *c, al_cons *k, cval v, const al_rq *const *slot_rq,
                             const uint64_t *const *slot_usable, uint32_t nslots)
{
    uint32_t nd = c->t->ndev, got = 0;
    mctx m = {c, k, slot_rq, slot_usable, AL_NEW(c->ar, int32_t, nd ? nd : 1), AL_NEW(c->ar, uint8_t, nd ? nd : 1), v};
    for (uint32_t d = 0; d < nd; d++)
        m.owner[d] = -1;
    for (uint32_t s = 0; s < nslots; s++) {
        memset(m.seen, 0, nd ? nd : 1);
        got += augment(&m, s);
    }
    return got;
}

/* Each request of one alternative gets its own devices with value v. */
static bool match_assignable(al_call *c, al_cons *k, const creq *reqs, uint32_t n, cval v)
{
    uint32_t nslots = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (reqs[i].rr->nrq != 1 || reqs[i].rr->rq[0].all)
            return true; /* alternatives or All: counted per request only */
        nslots += (uint32_t)reqs[i].rr->rq[0].need;
    }
    const al_rq **srq = AL_NEW(c->ar, const al_rq *, nslots ? nslots : 1);
    const uint64_t **su = AL_NEW(c->ar, const uint64_t *, nslots ? nslots : 1);
    for (uint32_t i = 0, s = 0; i < n; i++)
        for (int64_t j = 0; j < reqs[i].rr->rq[0].need; j++, s++) {
            srq[s] = &reqs[i].rr->rq[0];
            su[s] = reqs[i].usable[0];
        }
    return assign_slots(c, k, v, srq, su, nslots) == nslots;
}

/* Without constraints, can every request of every claim get its own
 * devices?  *need and *got say how many slots there are and how many can be
 * served at once; false means the requests compete for too few devices.
 * Requests with alternatives make it undecidable here (true). */
static bool all_assignable(al_call *c, uint64_t ****usable, uint32_t *need, uint32_t *got)
{
    uint32_t nslots = 0;
    *need = *got = 0;
    for (uint32_t ci = 0; ci < c->nclaims; ci++)
        for (uint32_t ri = 0; ri < c->claims[ci].nreq; ri++) {
            const al_req *rr = &c->claims[ci].req[ri];
            if (rr->nrq != 1)
                return true;
            nslots += (uint32_t)devices_needed(&rr->rq[0]);
        }
    const al_rq **srq = AL_NEW(c->ar, const al_rq *, nslots ? nslots : 1);
    const uint64_t **su = AL_NEW(c->ar, const uint64_t *, nslots ? nslots : 1);
    uint32_t s = 0;
    for (uint32_t ci = 0; ci < c->nclaims; ci++)
        for (uint32_t ri = 0; ri < c->claims[ci].nreq; ri++) {
            const al_rq *rq = &c->claims[ci].req[ri].rq[0];
            for (int64_t j = 0; j < devices_needed(rq); j++, s++) {
                srq[s] = rq;
                su[s] = usable[ci][ri][0];
            }
        }
    *need = nslots;
    *got = assign_slots(c, NULL, (cval){0, 0}, srq, su, nslots);
    return *got == nslots;
}

/* Distinct values offered by the usable devices of the covered requests
 * (sorted); *any_list when one of them is a list. */
static cval *values_of(al_call *c, al_cons *k, const creq *reqs, uint32_t n, bool first_only, uint32_t *nv,
                       bool *any_list)
{
    uint32_t nd = c->t->ndev, cap = 16, cnt = 0;
    cval *all = de_xmalloc(cap * sizeof *all);
    *any_list = false;
    for (uint32_t i = 0; i < (first_only ? DE_MIN(n, 1u) : n); i++)
        for (uint32_t s = 0; s < reqs[i].rr->nrq; s++)
            for (size_t d = de_bits_next(reqs[i].usable[s], nd, 0); d < nd;
                 d = de_bits_next(reqs[i].usable[s], nd, d + 1)) {
                uint32_t m;
                bool list;
                const de_attrval *v = dev_attr(c, k, (uint32_t)d, &m, &list);
                *any_list |= list;
                for (uint32_t j = 0; j < m; j++) {
                    if (cnt == cap) {
                        cap *= 2;
                        all = de_xrealloc(all, cap * sizeof *all);
                    }
                    all[cnt++] = cval_at(v, j);
                }
            }
    if (cnt)
        qsort(all, cnt, sizeof *all, cval_cmp);
    uint32_t u = 0;
    for (uint32_t i = 0; i < cnt; i++)
        if (!u || cval_cmp(&all[u - 1], &all[i]))
            all[u++] = all[i];
    cval *out = AL_NEW(c->ar, cval, u ? u : 1);
    memcpy(out, all, u * sizeof *out);
    free(all);
    *nv = u;
    return out;
}

static void values_text(al_call *c, const cval *vs, uint32_t n, de_buf *b)
{
    for (uint32_t i = 0; i < n && i < 8; i++)
        de_buf_printf(b, "%s%s", i ? ", " : "", cval_text(c, vs[i]));
    if (n > 8)
        de_buf_printf(b, " (+%u)", n - 8);
    if (!n)
        de_buf_puts(b, "none");
}

static bool match_infeasible(al_call *c, al_cons *k, const creq *reqs, uint32_t n, de_buf *why)
{
    int64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        int64_t least = INT64_MAX;
        for (uint32_t s = 0; s < reqs[i].rr->nrq; s++)
            least = DE_MIN(least, devices_needed(&reqs[i].rr->rq[s]));
        total += least;
    }
    if (!n || total <= 1)
        return false; /* one device always satisfies it */
    uint32_t nv;
    bool any_list;
    const cval *vs = values_of(c, k, reqs, n, true, &nv, &any_list);
    for (uint32_t vi = 0; vi < nv; vi++) {
        bool all_ok = true;
        for (uint32_t i = 0; i < n && all_ok; i++) {
            bool ok = false;
            for (uint32_t s = 0; s < reqs[i].rr->nrq && !ok; s++)
                ok = alt_supports(c, k, &reqs[i].rr->rq[s], reqs[i].usable[s], vs[vi]);
            all_ok = ok;
        }
        if (all_ok && match_assignable(c, k, reqs, n, vs[vi]))
            return false;
    }
    const cval *every = values_of(c, k, reqs, n, false, &nv, &any_list);
    de_buf_puts(why, "no value is carried by enough usable devices to give each of its requests its own (values on usable devices: ");
    values_text(c, every, nv, why);
    de_buf_puts(why, ")");
    return true;
}

/* distinctAttribute: request slots -> values matching (Kuhn), adjacency on
 * the fly.  Each request has as many slots as the fewest devices one of its
 * possible alternatives needs; a slot takes a value that one of those
 * alternatives' usable devices carries. */
typedef struct dctx {
    al_call *c;
    al_cons *k;
    const creq *reqs;
    const bool *ok_alt; /* [req * maxalt + s] */
    uint32_t maxalt;
    const cval *vals;
    uint32_t nv;
    const uint32_t *slot_req; /* per slot: its request */
    int32_t *owner;           /* per value: slot */
    uint8_t *seen;
} dctx;

static bool req_has_value(dctx *m, uint32_t r, cval v)
{
    uint32_t nd = m->c->t->ndev;
    for (uint32_t s = 0; s < m->reqs[r].rr->nrq; s++) {
        if (!m->ok_alt[r * m->maxalt + s])
            continue;
        const uint64_t *u = m->reqs[r].usable[s];
        for (size_t d = de_bits_next(u, nd, 0); d < nd; d = de_bits_next(u, nd, d + 1))
            if (has_value(m->c, m->k, (uint32_t)d, v))
                return true;
    }
    return false;
}

static bool daugment(dctx *m, uint32_t slot)
{
    for (uint32_t vi = 0; vi < m->nv; vi++) {
        if (m->seen[vi] || !req_has_value(m, m->slot_req[slot], m->vals[vi]))
            continue;
        m->seen[vi] = 1;
        if (m->owner[vi] < 0 || daugment(m, (uint32_t)m->owner[vi])) {
            m->owner[vi] = (int32_t)slot;
            return true;
        }
    }
    return false;
}

/* Different values among the usable devices of one alternative, counted up
 * to `upto`. */
static uint32_t alt_values(al_call *c, al_cons *k, const uint64_t *usable, uint32_t upto)
{
    uint32_t nd = c->t->ndev, n = 0;
    cval *seen = AL_NEW(c->ar, cval, upto ? upto : 1);
    for (size_t d = de_bits_next(usable, nd, 0); d < nd && n < upto; d = de_bits_next(usable, nd, d + 1)) {
        uint32_t m;
        bool list;
        const de_attrval *v = dev_attr(c, k, (uint32_t)d, &m, &list);
        if (!m)
            continue;
        cval dv = cval_at(v, 0);
        bool dup = false;
        for (uint32_t i = 0; i < n && !dup; i++)
            dup = !cval_cmp(&dv, &seen[i]);
        if (!dup)
            seen[n++] = dv;
    }
    return n;
}

static bool distinct_infeasible(al_call *c, al_cons *k, const creq *reqs, uint32_t n, de_buf *why)
{
    uint32_t nv, maxalt = 1;
    bool any_list;
    const cval *vs = values_of(c, k, reqs, n, false, &nv, &any_list);
    if (!n || any_list)
        return false;
    for (uint32_t i = 0; i < n; i++)
        maxalt = DE_MAX(maxalt, reqs[i].rr->nrq);
    bool *ok_alt = AL_NEW(c->ar, bool, (size_t)n * maxalt);
    uint32_t *demand = AL_NEW(c->ar, uint32_t, n);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        int64_t least = INT64_MAX;
        for (uint32_t s = 0; s < reqs[i].rr->nrq; s++) {
            al_rq *rq = &reqs[i].rr->rq[s];
            if (rq->all)
                return false; /* how many devices All takes: not decided here */
            /* every device of the request needs a value of its own */
            uint32_t need = (uint32_t)DE_MIN(rq->need, (int64_t)AL_MAX_RESULTS + 1);
            ok_alt[i * maxalt + s] = alt_values(c, k, reqs[i].usable[s], need) >= need;
            if (ok_alt[i * maxalt + s])
                least = DE_MIN(least, (int64_t)need);
        }
        if (least == INT64_MAX) {
            const al_rq *rq0 = &reqs[i].rr->rq[0];
            de_buf_printf(why, "request %s needs %lld devices with different values, but its usable devices "
                          "offer fewer: ", al_str(c->a, rq0->base_name), (long long)rq0->need);
            values_text(c, vs, nv, why);
            return true;
        }
        demand[i] = (uint32_t)least;
        total += least;
    }
    if (total > nv) {
        de_buf_printf(why, "%u requests need %llu devices with different values, but their usable devices "
                      "offer only %u: ", n, (unsigned long long)total, nv);
        values_text(c, vs, nv, why);
        return true;
    }
    uint32_t *slot_req = AL_NEW(c->ar, uint32_t, total ? total : 1);
    uint32_t ns = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < demand[i]; j++)
            slot_req[ns++] = i;
    dctx m = {c, k, reqs, ok_alt, maxalt, vs, nv, slot_req, AL_NEW(c->ar, int32_t, nv ? nv : 1),
              AL_NEW(c->ar, uint8_t, nv ? nv : 1)};
    for (uint32_t vi = 0; vi < nv; vi++)
        m.owner[vi] = -1;
    for (uint32_t sl = 0; sl < ns; sl++) {
        memset(m.seen, 0, nv ? nv : 1);
        if (!daugment(&m, sl)) {
            de_buf_printf(why, "%u requests need %u devices with different values, but their usable devices "
                          "offer only ", n, ns);
            values_text(c, vs, nv, why);
            return true;
        }
    }
    return false;
}

/* Blame every constraint of every claim that cannot be satisfied; true when
 * one was (summary and detail lines appended). */
static bool blame_constraints(al_call *c, uint64_t ****usable, de_buf *sum, de_buf *det)
{
    bool any = false;
    for (uint32_t ci = 0; ci < c->nclaims; ci++) {
        al_claimc *cc = &c->claims[ci];
        creq *reqs = AL_NEW(c->ar, creq, cc->nreq ? cc->nreq : 1);
        for (uint32_t x = 0; x < cc->ncons; x++) {
            al_cons *k = &cc->cons[x];
            uint32_t n;
            if (!covered(c, ci, k, usable[ci], reqs, &n))
                continue;
            de_buf why;
            de_buf_init(&why, 4096);
            bool bad = k->kind == AL_CK_MATCH ? match_infeasible(c, k, reqs, n, &why)
                                              : distinct_infeasible(c, k, reqs, n, &why);
            if (bad) {
                const char *kind = k->kind == AL_CK_MATCH ? "matchAttribute" : "distinctAttribute";
                de_buf_printf(sum, "%sno combination satisfies %s %s (claim %s", any ? "; " : "", kind,
                              al_str(c->a, k->name), claim_name(c, ci));
                for (uint32_t i = 0; i < k->nreqs; i++)
                    de_buf_printf(sum, "%s%s", i ? ", " : ", requests ", al_str(c->a, k->reqs[i]));
                de_buf_puts(sum, ")");
                de_buf_printf(det, "claim %s: %s %s: %s\n", claim_name(c, ci), kind, al_str(c->a, k->name),
                              de_buf_str(&why));
                any = true;
            }
            de_buf_free(&why);
        }
    }
    return any;
}

/* an incomplete or invalid pool, for the details */
static void pool_problem(al_allocator *a, de_buf *det, const al_pool *pl)
{
    if (pl->state == AL_POOL_INCOMPLETE)
        de_buf_printf(det, "pool %s/%s is incomplete (being updated): not used\n", al_str(a, pl->driver),
                      al_str(a, pl->name));
    else if (pl->state == AL_POOL_INVALID)
        de_buf_printf(det, "pool %s/%s is invalid (%s): not used\n", al_str(a, pl->driver), al_str(a, pl->name),
                      pl->invalid_reason ? pl->invalid_reason : "?");
}

void al_explain(al_call *c, al_why *why)
{
    al_allocator *a = c->a;
    al_ntab *t = c->t;
    de_buf sum, det;
    de_buf_init(&sum, 8192);
    de_buf_init(&det, 65536);
    bool blamed = false;
    if (t->ndev == 0 && al_ntab_no_pools(a, t)) {
        de_buf_printf(&sum, "no ResourceSlice offers devices to node %s", al_str(a, c->node_name));
        blamed = true;
    }
    /* the table's pools merged with the foreign counter pools' problems
     * (al_fpools.c), in the order of upstream's pool list */
    uint32_t fcur = 0;
    al_pool fp;
    for (uint32_t p = 0; p <= t->npools; p++) {
        const al_pool *own = p < t->npools ? &t->pools[p] : NULL;
        while (al_fprob_next(a, t, &fcur, own, &fp))
            pool_problem(a, &det, &fp);
        if (own)
            pool_problem(a, &det, own);
    }
    /* usable[claim][request][alternative]: what each could take alone */
    uint32_t nw = DE_BITS_WORDS(t->ndev ? t->ndev : 1);
    uint64_t ****usable = AL_NEW(c->ar, uint64_t ***, c->nclaims ? c->nclaims : 1);
    for (uint32_t ci = 0; ci < c->nclaims && !blamed; ci++) {
        al_claimc *cc = &c->claims[ci];
        const char *cn = claim_name(c, ci);
        usable[ci] = AL_NEW(c->ar, uint64_t **, cc->nreq ? cc->nreq : 1);
        for (uint32_t ri = 0; ri < cc->nreq; ri++) {
            al_req *rr = &cc->req[ri];
            bool all_short = true;
            de_buf one;
            de_buf_init(&one, 8192);
            usable[ci][ri] = AL_NEW(c->ar, uint64_t *, rr->nrq ? rr->nrq : 1);
            for (uint32_t s = 0; s < rr->nrq; s++) {
                if (s)
                    de_buf_puts(&one, "; or ");
                usable[ci][ri][s] = AL_NEW(c->ar, uint64_t, nw);
                if (!describe_rq(c, &rr->rq[s], &one, usable[ci][ri][s]))
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
        de_buf_puts(&sum, ": ");
        uint32_t need, got;
        bool proven = false;
        if (!all_assignable(c, usable, &need, &got)) {
            de_buf_printf(&sum, "the requests need %u devices between them, but at most %u of them can be served at once",
                          need, got);
            proven = true;
        } else {
            proven = blame_constraints(c, usable, &sum, &det);
        }
        if (proven)
            sep = "; ";
        else if (c->rej_constraint) {
            for (uint32_t ci = 0; ci < c->nclaims; ci++)
                if (c->claims[ci].ncons) {
                    de_buf_printf(&sum, "%sno combination satisfies claim %s's constraints (%s)", sep,
                                  claim_name(c, ci), cons_list(c, &c->claims[ci]));
                    sep = "; ";
                }
        }
        if (c->rej_counters && !proven) {
            de_buf_printf(&sum, "%sshared counters of partitionable devices are exhausted", sep);
            sep = "; ";
        }
        if (c->rej_groups && !proven) {
            de_buf_printf(&sum, "%sdevices are incompatible (compatibility groups)", sep);
            sep = "; ";
        }
        if (c->rej_taint && !*sep) {
            de_buf_printf(&sum, "%sdevices are tainted", sep);
            sep = "; ";
        }
        if (!*sep)
            de_buf_puts(&sum, "the requests compete for the same devices");
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
