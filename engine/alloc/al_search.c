/*
 * al_search.c - the depth-first search with backtracking (upstream's
 * allocateOne / allocateDevice) and al_allocate().
 *
 * The control flow is upstream's, step for step: claims in order, requests in
 * spec order, firstAvailable subrequests in list order, device slots
 * 0..count-1; a slot considers candidates after the previous slot's device
 * (combinations), the next request starts over; the 32-results limit is
 * checked on entering a slot and reported upwards ("MaxSize") so that a
 * firstAvailable parent tries its next subrequest; the first complete
 * assignment wins.  Per candidate, in order: in use, selectable (CEL errors
 * are raised here), capacity, then allocateDevice: in use again,
 * partitionable-off, counters, compatibility groups, taints, constraints,
 * mark, capacity again.  A candidate rejected after it charged counters,
 * added constraint values or was marked gives all of it back, as 1.37's
 * allocator does (its rollbackDevice).  v0.36.2 kept the counters charged on
 * a taint, constraint or capacity rejection (and the constraints and mark on a
 * capacity one), so a later alternative could find its counters spent: the
 * real kube-scheduler 1.37.2 beside draengine (spec/e2e/diff, seed 6) placed
 * two GPUs of one NUMA node on a MIG host where the leak left none.  No
 * conformance vector depends on the leak.  Likewise undoing the share of a
 * multi-allocatable device that charged its counters (the first share) gives
 * them back, which v0.36.2 did not.
 *
 * Pruning.  A failed subtree normally leaves no trace, but upstream has a few
 * stateful quirks (the list-intersection that does not widen, lazy CEL
 * errors, All-mode constraint errors; v0.36.2's distinctAttribute map was
 * one, 1.37's stack of values is not).
 * The call is "pure" when none of them can fire; then the search may skip
 * subtrees that provably cannot succeed without changing which solution is
 * found first (the first-fit order is untouched; only dead ends are cut):
 *  - statically rejected devices (tainted, partitionable-off, skipped for
 *    compatibility groups) are not visited;
 *  - a placement is undone at once when some remaining slot of the claim
 *    cannot be filled by the devices still free and compatible with the
 *    matchAttribute values already fixed, or a request under
 *    distinctAttribute needs more devices than the free ones offer values
 *    not yet held (forward checking);
 *  - a claim set with a request that no free device can ever serve fails
 *    before searching.
 * Cutting a subtree can turn upstream's internal "MaxSize" answer into a
 * plain failure; that only ever skips subtrees without solutions, so the
 * first solution is the same (see the comment at prune_ok).
 */
#include "al_int.h"

#include <stdio.h>
#include <stdlib.h>

/* Arena block whose bytes the caller writes before reading (al_zalloc's
 * cap rule: fatal past the 1 GiB bookkeeping cap). */
static inline void *raw_new(de_arena *ar, size_t n)
{
    void *p = de_arena_alloc(ar, n ? n : 1);
    if (!p)
        al_oom(n);
    return p;
}

typedef struct placed {
    al_rq *rq;
    uint32_t dev;
    bool multi;
    bool counted; /* this placement charged the device's counters */
    uint32_t gmark;
    dg_consumed *cons;
    uint32_t ncons;
    uint32_t nres;
} placed;

bool al_dev_in_use(const al_call *c, uint32_t dev)
{
    return de_bit_get(c->t->inuse, dev) || c->busy_cnt[dev] > 0;
}

bool al_taint_blocks(const al_dev *dv, const al_rq *rq)
{
    if (!(dv->flags & AL_DF_TAINTED))
        return false;
    for (uint32_t i = 0; i < dv->ntaints; i++) {
        const dg_taint *x = &dv->taints[i];
        if (x->effect != DG_EFFECT_NO_SCHEDULE && x->effect != DG_EFFECT_NO_EXECUTE)
            continue;
        bool ok = false;
        for (uint32_t j = 0; j < rq->x->ntolerations && !ok; j++)
            ok = dg_tolerates(&rq->x->tolerations[j], x);
        if (!ok)
            return true;
    }
    return false;
}

static void mark(al_call *c, uint32_t claim, uint32_t dev, bool on)
{
    uint64_t *mine = c->claims[claim].mine;
    if (on) {
        if (!de_bit_get(mine, dev)) {
            de_bit_set(mine, dev);
            c->busy_cnt[dev]++;
        }
    } else if (de_bit_get(mine, dev)) {
        de_bit_clr(mine, dev);
        c->busy_cnt[dev]--;
    }
}

/* upstream allocateDevice; AL_S_OK with *p filled, AL_S_FAIL, or AL_S_ERR */
static int allocate_device(al_call *c, al_rq *rq, uint32_t dev, bool must, placed *p)
{
    al_allocator *a = c->a;
    al_claimc *cc = &c->claims[rq->claim];
    const al_dev *dv = &c->t->devs[dev];
    bool multi = dv->flags & AL_DF_MULTI;
    if (dv->flags & (AL_DF_BLOCKED | AL_DF_NODEOPS))
        return AL_S_FAIL;
    if (!multi && rq->admin && de_bit_get(cc->mine, dev))
        return AL_S_FAIL;
    if (!rq->admin && al_dev_in_use(c, dev))
        return AL_S_FAIL;
    if (!a->f_part && (dv->flags & AL_DF_COUNTERS))
        return AL_S_FAIL;
    if (a->f_part && !a->f_cgroups && (dv->flags & AL_DF_COUNTERS) && al_cgroups_skip_disabled(c, dev))
        return AL_S_FAIL;
    bool counted = false;
    if ((dv->flags & AL_DF_COUNTERS) && !(multi && al_capacity_in_use(c, dev))) {
        if (!al_counters_take(c, dev)) {
            c->rej_counters++;
            return AL_S_FAIL;
        }
        counted = true;
    }
    uint32_t gmark = c->nundo;
    if (a->f_cgroups && (dv->flags & AL_DF_COUNTERS) && !al_cgroups_take(c, dev, &gmark)) {
        if (counted)
            al_counters_release(c, dev);
        c->rej_groups++;
        return AL_S_FAIL;
    }
    if (dv->pscope && !al_pgroups_take(c, dev)) {
        al_undo_to(c, gmark);
        if (counted)
            al_counters_release(c, dev);
        c->rej_groups++;
        return AL_S_FAIL;
    }
    if ((dv->flags & AL_DF_TAINTED) && a->f_taints && al_taint_blocks(dv, rq)) {
        al_undo_to(c, gmark);
        if (counted)
            al_counters_release(c, dev);
        c->rej_taint++;
        return AL_S_FAIL;
    }
    for (uint32_t i = 0; i < rq->ncons; i++) {
        bool ok;
        if (al_cons_add(c, &cc->cons[rq->cons[i]], rq, dev, &ok) != DE_OK)
            return AL_S_ERR;
        if (ok)
            continue;
        if (must) {
            de_errf(c->e, DE_EINVAL,
                    "claim %s, request %s: cannot add device %s/%s/%s because a claim constraint would not be satisfied",
                    al_kobj(c, cc), al_str(a, rq->is_sub ? rq->sub_name : rq->base_name),
                    al_str(a, dv->s->driver), al_str(a, dv->s->pool), al_str(a, dv->name));
            return AL_S_ERR;
        }
        for (uint32_t j = i; j-- > 0;)
            al_cons_remove(c, &cc->cons[rq->cons[j]], rq, dev);
        al_undo_to(c, gmark);
        if (counted)
            al_counters_release(c, dev);
        c->rej_constraint++;
        return AL_S_FAIL;
    }
    if (!multi)
        mark(c, rq->claim, dev, true);
    dg_consumed *cons = NULL;
    uint32_t ncons = 0;
    if (a->f_cc) {
        if (al_capacity_fits(c, rq, dev) != 1) {
            if (!multi)
                mark(c, rq->claim, dev, false);
            for (uint32_t j = rq->ncons; j-- > 0;)
                al_cons_remove(c, &cc->cons[rq->cons[j]], rq, dev);
            al_undo_to(c, gmark);
            if (counted)
                al_counters_release(c, dev);
            c->rej_capacity++;
            return AL_S_FAIL;
        }
        if (multi) {
            al_capacity_consumed(c, rq, dev, &cons, &ncons);
            al_acap_insert(c, dev, cons, ncons);
        }
    }
    al_resent *r = &c->res[rq->claim][c->nres[rq->claim]];
    memset(r, 0, sizeof *r);
    r->rq = rq;
    r->dev = dev;
    r->shared = multi;
    r->admin = rq->admin;
    r->consumed = ncons ? cons : NULL;
    r->nconsumed = ncons;
    p->rq = rq;
    p->dev = dev;
    p->multi = multi;
    p->counted = counted;
    p->gmark = gmark;
    p->cons = cons;
    p->ncons = ncons;
    p->nres = c->nres[rq->claim]++;
    return AL_S_OK;
}

static void undo_device(al_call *c, placed *p)
{
    al_claimc *cc = &c->claims[p->rq->claim];
    for (uint32_t i = 0; i < p->rq->ncons; i++)
        al_cons_remove(c, &cc->cons[p->rq->cons[i]], p->rq, p->dev);
    if (p->multi) {
        if (p->ncons)
            al_acap_remove(c, p->dev, p->cons, p->ncons);
    } else {
        mark(c, p->rq->claim, p->dev, false);
    }
    al_undo_to(c, p->gmark);
    if (p->counted)
        al_counters_release(c, p->dev);
    c->nres[p->rq->claim] = p->nres;
}

/* ---- pruning (pure calls only) ------------------------------------------------------ */

/* A device that the candidate loop could take for rq right now, ignoring
 * counters, capacity and constraints. */
static inline bool free_for(const al_call *c, const al_rq *rq, uint32_t d)
{
    if (rq->admin)
        return !de_bit_get(c->claims[rq->claim].mine, d);
    return !de_bit_get(c->t->inuse, d) && !c->busy_cnt[d];
}

/* A distinctAttribute constraint's count of different values among the
 * devices rq could still take: `need` devices need `need` values, none of
 * them already held (the search cannot succeed otherwise: with 7 values
 * among 64 devices, a request of 8 would try every way of picking 7 before
 * failing).  Counted only for need <= AL_MAX_RESULTS: a larger request ends
 * in MaxSize before it places a device. */
typedef struct dcount {
    al_cons *k;
    uint32_t n;
    de_attrval v[AL_MAX_RESULTS];
} dcount;

static bool distinct_takes(al_call *c, dcount *dc, uint32_t d, int64_t need)
{
    bool found;
    const de_attrval *v = al_cons_value(c, dc->k, d, &found);
    if (!found)
        return false; /* distinctAttribute needs the attribute */
    for (uint32_t i = 0; i < dc->k->ndev; i++)
        if (al_values_equal(v, &dc->k->held[i].v))
            return false;
    bool seen = false;
    for (uint32_t i = 0; i < dc->n && !seen; i++)
        seen = al_values_equal(v, &dc->v[i]);
    if (!seen && dc->n < need)
        dc->v[dc->n++] = *v;
    return true;
}

/* Can rq still get `need` devices from [from, ndev)? */
static bool rq_feasible(al_call *c, al_rq *rq, uint32_t from, int64_t need)
{
    if (need <= 0 || rq->all)
        return true;
    al_claimc *cc = &c->claims[rq->claim];
    al_cons *bound[64];
    dcount dist[4];
    uint32_t nb = 0, nds = 0;
    for (uint32_t i = 0; i < rq->ncons && nb < 64; i++) {
        al_cons *k = &cc->cons[rq->cons[i]];
        if (k->kind == AL_CK_MATCH)
            bound[nb++] = k; /* unbound: the device must at least have the attribute */
        else if (nds < DE_ARRAY_LEN(dist) && need <= AL_MAX_RESULTS) {
            dist[nds].k = k; /* its v[] is written before it is read */
            dist[nds++].n = 0;
        }
    }
    int64_t n = 0;
    const uint64_t *st = rq->stat;
    for (size_t d = de_bits_next(st, c->t->ndev, from); d < c->t->ndev;
         d = de_bits_next(st, c->t->ndev, d + 1)) {
        if (!free_for(c, rq, (uint32_t)d))
            continue;
        bool ok = true;
        for (uint32_t i = 0; i < nb && ok; i++) {
            bool found;
            const de_attrval *v = al_cons_value(c, bound[i], (uint32_t)d, &found);
            ok = found && (!bound[i]->ndev || al_values_equal(v, &bound[i]->first));
        }
        for (uint32_t i = 0; i < nds && ok; i++)
            ok = distinct_takes(c, &dist[i], (uint32_t)d, need);
        if (!ok || ++n < need)
            continue;
        bool enough = true;
        for (uint32_t i = 0; i < nds && enough; i++)
            enough = dist[i].n >= need;
        if (enough)
            return true;
    }
    return false;
}

static bool req_feasible(al_call *c, al_req *rr)
{
    for (uint32_t s = 0; s < rr->nrq; s++)
        if (rq_feasible(c, &rr->rq[s], 0, rr->rq[s].need))
            return true;
    return false;
}

/*
 * Forward check after a placement: the current request still needs
 * `left` devices after position `from`, and every later request of the claim
 * needs its devices.  Returning false cuts a subtree that cannot succeed.
 * Upstream might have answered "MaxSize" from inside it instead of "fail";
 * MaxSize only prunes alternatives with the same subrequest choices, which
 * all exceed the limit too, so no solution is lost and the first one found
 * is unchanged.
 */
static bool prune_ok(al_call *c, al_rq *rq, int64_t left, uint32_t from)
{
    if (!rq_feasible(c, rq, from, left))
        return false;
    al_claimc *cc = &c->claims[rq->claim];
    for (uint32_t r = rq->req + 1; r < cc->nreq; r++)
        if (!req_feasible(c, &cc->req[r]))
            return false;
    return true;
}

/* ---- the search ---------------------------------------------------------------------- */

static int solve(al_call *c, uint32_t ci, uint32_t ri, uint32_t si, int64_t k, bool in_sub,
                 uint32_t start)
{
    /* the clock is read every 1024 steps (a step is well under a microsecond) */
    if (c->deadline && (c->steps & 1023) == 1023 && de_now_ns() > c->deadline) {
        de_errf(c->e, DE_ETIMEOUT, "node %s: timed out trying to allocate devices", al_str(c->a, c->node_name));
        return AL_S_ERR;
    }
    if (++c->steps > c->max_steps) {
        de_errf(c->e, DE_EBUDGET,
                "search limit reached on node %s: more than %llu steps; the claims allow too many combinations (raise --max-search-steps)",
                al_str(c->a, c->node_name), (unsigned long long)c->max_steps);
        return AL_S_ERR;
    }
    if (ci >= c->nclaims)
        return AL_S_OK;
    al_claimc *cc = &c->claims[ci];
    if (ri >= cc->nreq) {
        int r = solve(c, ci + 1, 0, 0, 0, false, 0);
        return r == AL_S_MAXSIZE ? AL_S_FAIL : r;
    }
    al_req *rr = &cc->req[ri];
    if (!in_sub && rr->has_subs) {
        bool all_exceeded = true;
        for (uint32_t s = 0; s < rr->nrq; s++) {
            int r = solve(c, ci, ri, s, 0, true, 0);
            if (r == AL_S_MAXSIZE)
                continue;
            all_exceeded = false;
            if (r == AL_S_ERR)
                return r;
            if (r == AL_S_OK) {
                rr->chosen = (int32_t)s;
                return AL_S_OK;
            }
        }
        return all_exceeded ? AL_S_MAXSIZE : AL_S_FAIL;
    }
    al_rq *rq = &rr->rq[si];
    if (rq->all && rq->nall == 0)
        return AL_S_FAIL;
    if (k >= rq->need)
        return solve(c, ci, ri + 1, 0, 0, false, 0);
    if ((int64_t)c->nres[ci] + rq->need - k > AL_MAX_RESULTS)
        return AL_S_MAXSIZE;
    if (rq->all) {
        placed p;
        int r = allocate_device(c, rq, rq->all_devs[k], true, &p);
        if (r != AL_S_OK)
            return r;
        r = solve(c, ci, ri, si, k + 1, in_sub, 0);
        if (r != AL_S_OK)
            undo_device(c, &p);
        return r;
    }
    const uint64_t *cand = c->pure ? rq->stat : rq->iter;
    uint32_t nd = c->t->ndev;
    /* pure calls: matchAttribute values already fixed filter the candidates
     * before anything is charged (the rejection would leave no trace) */
    al_cons *bound[8];
    uint32_t nb = 0;
    for (uint32_t i = 0; c->pure && i < rq->ncons && nb < 8; i++) {
        al_cons *kc = &cc->cons[rq->cons[i]];
        if (kc->kind == AL_CK_MATCH && kc->ndev)
            bound[nb++] = kc;
    }
    /* candidates word by word in index order; devices other claims hold
     * (t->inuse: no graph event comes during a search) are masked out a
     * word at a time, as al_dev_in_use would turn each down */
    const uint64_t *inuse = c->t->inuse;
    for (uint32_t w = start >> 6, nw = c->nwords; w < nw; w++) {
        uint64_t x = cand[w];
        if (w == start >> 6)
            x &= ~0ULL << (start & 63);
        if (!rq->admin)
            x &= ~inuse[w];
        for (; x; x &= x - 1) {
            uint32_t dev = (uint32_t)(w * 64 + (uint32_t)__builtin_ctzll(x));
            if (dev >= nd)
                break;
            if (rq->admin ? de_bit_get(cc->mine, dev) : c->busy_cnt[dev] > 0)
                continue;
            bool match = true;
            for (uint32_t i = 0; i < nb && match; i++) {
                bool found;
                const de_attrval *v = al_cons_value(c, bound[i], dev, &found);
                match = found && al_values_equal(v, &bound[i]->first);
            }
            if (!match) {
                c->rej_constraint++; /* for the explanation only */
                continue;
            }
            bool ok;
            if (al_selectable(c, rq, dev, &ok) != DE_OK)
                return AL_S_ERR;
            if (!ok)
                continue;
            if (c->a->f_cc && al_capacity_fits(c, rq, dev) != 1)
                continue;
            placed p;
            int r = allocate_device(c, rq, dev, false, &p);
            if (r == AL_S_ERR)
                return r;
            if (r != AL_S_OK)
                continue;
            if (c->pure && !prune_ok(c, rq, rq->need - k - 1, dev + 1)) {
                c->a->stats.pruned++;
                undo_device(c, &p);
                continue;
            }
            r = solve(c, ci, ri, si, k + 1, in_sub, dev + 1);
            if (r == AL_S_OK)
                return r;
            undo_device(c, &p);
            if (r != AL_S_FAIL)
                return r;
        }
    }
    return AL_S_FAIL;
}

/* ---- purity ---------------------------------------------------------------------------- */

static bool any_bits(const uint64_t *b, uint32_t nw)
{
    return de_bits_any(b, nw);
}

/* Decide whether failed subtrees can leave traces (see the header comment),
 * and build each request's iteration and static candidate sets. */
static void prepare(al_call *c)
{
    al_allocator *a = c->a;
    al_ntab *t = c->t;
    bool pure = true;
    for (uint32_t ci = 0; ci < c->nclaims; ci++) {
        al_claimc *cc = &c->claims[ci];
        if (cc->ncons && a->f_list)
            pure = false; /* list-mode matchAttribute's intersection */
        for (uint32_t ri = 0; ri < cc->nreq; ri++)
            for (uint32_t s = 0; s < cc->req[ri].nrq; s++) {
                al_rq *rq = &cc->req[ri].rq[s];
                /* every word of both set below */
                rq->iter = raw_new(c->ar, sizeof(uint64_t) * c->nwords);
                rq->stat = raw_new(c->ar, sizeof(uint64_t) * c->nwords);
                if (any_bits(rq->cs->poison, c->nwords) || rq->nderived ||
                    (rq->all && rq->ncons))
                    pure = false;
                /* candidates word by word, in index order (a bit at a time
                 * through de_bits_next was most of this loop's cost) */
                for (uint32_t w = 0; w < c->nwords; w++) {
                    uint64_t x = rq->cs->cand[w], st = x & t->plain[w];
                    rq->iter[w] = x | rq->cs->poison[w];
                    /* plain candidates pass as they are; the others are
                     * looked at one by one, in index order */
                    for (x &= ~t->plain[w]; x; x &= x - 1) {
                        uint32_t b = (uint32_t)__builtin_ctzll(x);
                        size_t d = (size_t)w * 64 + b;
                        if (d >= t->ndev)
                            break;
                        const al_dev *dv = &t->devs[d];
                        uint16_t fl = dv->flags;
                        if (fl & AL_DF_COUNTERS) {
                            if (!a->f_part)
                                continue;
                            if (!a->f_cgroups && al_cgroups_skip_disabled(c, (uint32_t)d))
                                continue;
                        }
                        if (rq->all && (fl & AL_DF_MULTI))
                            pure = false;
                        /* taints last and only on tainted devices: the check
                         * has no side effect, and most devices have no taint */
                        if (fl & (AL_DF_BLOCKED | AL_DF_NODEOPS))
                            continue;
                        if ((fl & AL_DF_TAINTED) && a->f_taints && al_taint_blocks(dv, rq))
                            continue;
                        st |= 1ULL << b;
                    }
                    rq->stat[w] = st;
                }
            }
    }
    c->pure = pure;
}

/* In a pure call, a request that can never be served means no solution. */
static bool statically_impossible(al_call *c)
{
    for (uint32_t ci = 0; ci < c->nclaims; ci++) {
        al_claimc *cc = &c->claims[ci];
        for (uint32_t ri = 0; ri < cc->nreq; ri++) {
            al_req *rr = &cc->req[ri];
            bool ok = false;
            for (uint32_t s = 0; s < rr->nrq && !ok; s++) {
                al_rq *rq = &rr->rq[s];
                if (rq->all) {
                    ok = rq->nall > 0;
                    for (uint32_t i = 0; i < rq->nall && ok && !rq->admin; i++)
                        ok = !de_bit_get(c->t->inuse, rq->all_devs[i]);
                } else {
                    /* stat has no bit at or past ndev (prepare) */
                    int64_t n = 0;
                    const uint64_t *inuse = c->t->inuse;
                    for (uint32_t w = 0; w < c->nwords && n < rq->need; w++) {
                        uint64_t x = rq->admin ? rq->stat[w] : rq->stat[w] & ~inuse[w];
                        /* one more needed: any bit will do (without -mpopcnt
                         * the count is a libgcc call) */
                        n += rq->need - n == 1 ? x != 0 : __builtin_popcountll(x);
                    }
                    ok = n >= rq->need;
                }
            }
            if (!ok)
                return true;
        }
    }
    return false;
}

/* ---- al_allocate ------------------------------------------------------------------------ */

static void call_init(al_call *c, al_allocator *a, al_ntab *t, de_arena *ar, uint32_t node_name)
{
    memset(c, 0, sizeof *c);
    c->a = a;
    c->t = t;
    c->ar = ar;
    c->node_name = node_name;
    c->nwords = t->nwords;
    uint32_t nd = t->ndev ? t->ndev : 1;
    /* the per-device arrays in one block */
    size_t sz = nd * (sizeof(uint32_t) + sizeof(de_qty *) + sizeof(bool) + sizeof(uint32_t *) +
                      sizeof(int32_t) + sizeof(uint32_t *)) + 64;
    char *blk = al_zalloc(ar, sz);
    c->acap = (de_qty **)blk;
    c->capkeys = (uint32_t **)(c->acap + nd);
    c->dev_slots = (uint32_t **)(c->capkeys + nd);
    c->busy_cnt = (uint32_t *)(c->dev_slots + nd);
    c->dev_cg = (int32_t *)(c->busy_cnt + nd);
    c->acap_present = (bool *)(c->dev_cg + nd);
    memset(c->dev_cg, 0xff, nd * sizeof *c->dev_cg); /* -1: not prepared */
    /* cgrp_idx, cgskip, pgrp_idx: an all-zero de_map is an empty one
     * (de_map_init), as the memset above left them */
    c->max_steps = a->opts.max_steps;
    c->deadline = a->opts.filter_timeout_ns ? de_now_ns() + a->opts.filter_timeout_ns : 0;
}

/* most calls never touch the group maps: no three free(NULL) each */
static void map_done(de_map *m)
{
    if (m->cap)
        de_map_destroy(m);
}

static void call_done(al_call *c)
{
    map_done(&c->cgrp_idx);
    map_done(&c->cgskip);
    map_done(&c->pgrp_idx);
    for (uint32_t i = 0; i < c->ncg; i++)
        de_map_destroy(&c->cg[i].slot);
}

static de_rc run(al_call *c, const uint32_t *claims, uint32_t nclaims, al_outcome *out, de_err *e)
{
    al_allocator *a = c->a;
    c->e = e;
    /* policy admission first: a refused claim is unsatisfiable, not an error */
    if (a->has_hooks && a->hooks.admit)
        for (uint32_t i = 0; i < nclaims; i++) {
            de_err why;
            de_err_clear(&why);
            de_rc rc = a->hooks.admit(a->hooks.ctx, a->g, claims[i], &why);
            if (rc == DE_EPOLICY) {
                const dg_claim *cl = dg_claim_get(a->g, claims[i]);
                out->why.summary = de_arena_printf(c->ar, "claim %s refused by policy: %s",
                                                   cl ? al_str(a, cl->meta.name) : "?", why.msg);
                return DE_EUNSAT;
            }
            if (rc != DE_OK) {
                *e = why;
                if (!e->rc)
                    e->rc = rc;
                return rc;
            }
        }
    DE_TRY(al_call_compile(c, claims, nclaims, e));
    c->res = AL_NEW(c->ar, al_resent *, nclaims ? nclaims : 1);
    c->nres = AL_NEW(c->ar, uint32_t, nclaims ? nclaims : 1);
    /* not zeroed: allocate_device clears each entry as it fills it, and
     * nothing reads past nres (33 entries a claim would be 1 KiB of memset) */
    for (uint32_t i = 0; i < nclaims; i++)
        c->res[i] = raw_new(c->ar, sizeof(al_resent) * (AL_MAX_RESULTS + 1));
    prepare(c);
    int r;
    if (c->pure && statically_impossible(c))
        r = AL_S_FAIL;
    else
        r = solve(c, 0, 0, 0, 0, false, 0);
    out->steps = c->steps;
    a->stats.steps += c->steps;
    if (r == AL_S_ERR)
        return e->rc ? e->rc : DE_EINTERNAL;
    if (r == AL_S_MAXSIZE)
        return de_errf(e, DE_EINVAL, "allocation max size exceeded");
    if (r != AL_S_OK) {
        if (!a->no_explain)
            al_explain(c, &out->why);
        if (al_ntab_any_invalid(a, c->t)) {
            const char *s = out->why.summary;
            out->invalid_pools = true;
            return de_errf(e, DE_EINVAL, "invalid resource pools were encountered%s%s",
                           s ? ": " : "", s ? s : "");
        }
        return DE_EUNSAT;
    }
    return al_build_results(c, out, e);
}

de_rc al_allocate(al_allocator *a, uint32_t node_name, const uint32_t *claims, uint32_t nclaims,
                  de_arena *arena, al_outcome *out, de_err *e)
{
    memset(out, 0, sizeof *out);
    al_sync(a);
    al_ntab *t = al_ntab_get(a, node_name, e);
    if (!t)
        return e->rc ? e->rc : DE_EINTERNAL;
    return al_allocate_tab(a, t, claims, nclaims, arena, out, e);
}

de_rc al_allocate_tab(al_allocator *a, al_ntab *t, const uint32_t *claims, uint32_t nclaims, de_arena *arena,
                      al_outcome *out, de_err *e)
{
    memset(out, 0, sizeof *out);
    a->stats.allocate_calls++;
    al_call c;
    call_init(&c, a, t, arena, t->node_name);
    de_rc rc = run(&c, claims, nclaims, out, e);
    call_done(&c);
    return rc;
}
