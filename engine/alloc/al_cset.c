/*
 * al_cset.c - candidate sets: which devices of a node table a (class,
 * request selectors) combination selects - upstream's isSelectable, evaluated
 * once per device and kept as bitsets.
 *
 * Upstream evaluates selectors lazily, device by device, in search order, and
 * a CEL error aborts the whole Allocate call - but only if the search reaches
 * that device.  We evaluate eagerly (memoised per device generation) and
 * record failures as "poison" bits with their message; the search raises the
 * message when it reaches a poison device, which is exactly when upstream
 * would have evaluated it.
 *
 * Order of checks per device, as upstream: a device with bindingConditions is
 * not selectable while DRADeviceBindingConditions/DRAResourceClaimDeviceStatus
 * are off; then the class selectors, then the request selectors (each list
 * short-circuits on the first false); then per-device node selection.  An
 * attribute without a value (or a list attribute while DRAListTypeAttributes
 * is off) makes every selector fail on that device ("unsupported attribute
 * value"), as upstream's device conversion does.
 */
#include "al_int.h"

#include <stdio.h>
#include <stdlib.h>

static uint64_t selset_key(uint32_t class_name, const dg_selector *sels, uint32_t n)
{
    uint64_t h = de_hash_u64(0x5e15e7ULL ^ class_name);
    for (uint32_t i = 0; i < n; i++)
        h = de_hash_u64(h ^ ((uint64_t)sels[i].expr << 1 | sels[i].has_cel));
    return h ^ n;
}

/*
 * `device.driver == "X"` alone, or followed by `&& ...` where the rest has no
 * `||` and no `?` anywhere: the top level is then a chain of &&, so a device
 * of another driver makes the selector false without evaluating it (CEL's
 * && is false as soon as one side is false, errors on the other side
 * included).  Conservative by construction: anything else is evaluated.
 */
static uint32_t driver_prefix(al_allocator *a, const char *e)
{
    while (*e == ' ' || *e == '\t' || *e == '\n' || *e == '\r')
        e++;
    static const char pre[] = "device.driver";
    if (strncmp(e, pre, sizeof pre - 1))
        return 0;
    e += sizeof pre - 1;
    while (*e == ' ' || *e == '\t')
        e++;
    if (e[0] != '=' || e[1] != '=')
        return 0;
    e += 2;
    while (*e == ' ' || *e == '\t')
        e++;
    char q = *e;
    if (q != '"' && q != '\'')
        return 0;
    const char *v = ++e;
    while (*e && *e != q && *e != '\\')
        e++;
    if (*e != q)
        return 0;
    size_t n = (size_t)(e - v);
    e++;
    while (*e == ' ' || *e == '\t' || *e == '\n' || *e == '\r')
        e++;
    if (*e && (e[0] != '&' || e[1] != '&' || strstr(e, "||") || strchr(e, '?')))
        return 0;
    return de_intern(a->in, v, n);
}

static void selset_compile(al_allocator *a, al_selset *s, const dg_selector *rsel, uint32_t nr)
{
    for (uint32_t k = 0; k < s->nclass + s->nreq; k++)
        free(s->compile_err[k]);
    free(s->compile_err);
    free(s->progs);
    free(s->driver_eq);
    uint32_t cid = dg_class_find(a->g, s->class_name);
    s->cls = cid == DG_NONE ? NULL : dg_class_get(a->g, cid);
    s->nclass = s->cls ? s->cls->nselectors : 0;
    s->nreq = nr;
    uint32_t n = s->nclass + s->nreq;
    s->progs = de_xcalloc(n ? n : 1, sizeof *s->progs);
    s->compile_err = de_xcalloc(n ? n : 1, sizeof *s->compile_err);
    s->driver_eq = de_xcalloc(n ? n : 1, sizeof *s->driver_eq);
    for (uint32_t k = 0; k < n; k++) {
        const dg_selector *sel = k < s->nclass ? &s->cls->selectors[k] : &rsel[k - s->nclass];
        if (!sel->has_cel) {
            s->compile_err[k] = de_xstrdup("CEL expression empty (unsupported selector type?)");
            continue;
        }
        de_err e;
        de_err_clear(&e);
        const char *txt = al_str(a, sel->expr);
        s->driver_eq[k] = driver_prefix(a, txt);
        if (cel_compile(a->cel, txt, de_intern_len(a->in, sel->expr), &s->progs[k], &e) != DE_OK) {
            s->compile_err[k] = de_xstrdup(e.msg[0] ? e.msg : "compile failed");
            s->progs[k] = NULL;
        }
    }
}

void al_selsets_free(al_allocator *a)
{
    for (uint32_t i = 0; i < a->nselsets; i++) {
        al_selset *s = a->selsets[i];
        for (uint32_t k = 0; k < s->nclass + s->nreq; k++)
            free(s->compile_err[k]);
        free(s->compile_err);
        free(s->progs);
        free(s->driver_eq);
        free(s->maybe_free);
        free(s->rexpr);
        free(s->rhascel);
        free(s);
    }
    a->nselsets = 0;
    de_map_clear(&a->selset_by_key);
    a->cc_gen++; /* compiled claims point at them (al_ccache.c) */
}

al_selset *al_selset_get(al_allocator *a, uint32_t class_name, const dg_selector *sels,
                         uint32_t nsels)
{
    uint64_t key = selset_key(class_name, sels, nsels), v;
    al_selset *s;
    /* the map is keyed by hash; confirm and chain on collision by probing */
    for (uint64_t k = key;; k = de_hash_u64(k + 1)) {
        if (!de_map_get(&a->selset_by_key, k, &v)) {
            s = de_xcalloc(1, sizeof *s);
            s->key = k;
            s->class_name = class_name;
            if (a->nselsets == a->capselsets) {
                a->capselsets = a->capselsets ? a->capselsets * 2 : 16;
                a->selsets = de_xrealloc(a->selsets, a->capselsets * sizeof *a->selsets);
            }
            a->selsets[a->nselsets++] = s;
            de_map_put(&a->selset_by_key, k, a->nselsets);
            s->rexpr = de_xcalloc(nsels ? nsels : 1, sizeof *s->rexpr);
            s->rhascel = de_xcalloc(nsels ? nsels : 1, 1);
            for (uint32_t i = 0; i < nsels; i++) {
                s->rexpr[i] = sels[i].expr;
                s->rhascel[i] = sels[i].has_cel;
            }
            selset_compile(a, s, sels, nsels);
            s->node_epoch = a->epoch;
            s->gen = 1;
            return s;
        }
        s = a->selsets[v - 1];
        bool same = s->class_name == class_name && s->nreq == nsels;
        for (uint32_t i = 0; i < nsels && same; i++)
            same = s->rexpr[i] == sels[i].expr && s->rhascel[i] == sels[i].has_cel;
        if (same) {
            if (s->node_epoch != a->epoch || s->stale) {
                /* the class changed (or everything did): recompile; the
                 * candidate sets made from the old programs are re-evaluated
                 * on their next use (al_cset_get compares gen) */
                selset_compile(a, s, sels, nsels);
                free(s->maybe_free);
                s->maybe_free = NULL;
                s->mf_cap = 0;
                s->node_epoch = a->epoch;
                s->stale = false;
                s->gen++;
            }
            return s;
        }
    }
}

static char *enhance(de_arena *ar, const char *msg)
{
    if (strstr(msg, "no such key:"))
        return de_arena_printf(ar, "%s. consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() for optional fields",
                               msg);
    return de_arena_strdup(ar, msg);
}

/* Evaluate one device: 1 selectable, 0 not, -1 error (message in *msg). */
static int eval_device(al_allocator *a, al_ntab *t, al_selset *ss, uint32_t i, char **msg,
                       uint8_t *kind, bool *class_ok)
{
    const al_dev *dv = &t->devs[i];
    *class_ok = ss->nclass == 0;
    if ((dv->flags & AL_DF_BINDING) && !a->f_bind)
        return 0;
    uint32_t n = ss->nclass + ss->nreq;
    de_devview view;
    bool have_view = false;
    const char *bad_attr = NULL;
    /* the device id, only formatted for messages */
#define idbuf de_arena_printf(al_ntab_ar(t), "%s/%s/%s", al_str(a, dv->s->driver), al_str(a, dv->s->pool), \
                              al_str(a, dv->name))
    for (uint32_t k = 0; k < n; k++) {
        bool is_class = k < ss->nclass;
        uint32_t idx = is_class ? k : k - ss->nclass;
        if (k == ss->nclass)
            *class_ok = true;
        if (!ss->progs[k]) {
            *kind = is_class ? 0 : 1;
            if (is_class)
                *msg = de_arena_printf(al_ntab_ar(t), "class %s: selector #%u: CEL compile error: %s",
                                       al_str(a, ss->class_name), idx, ss->compile_err[k]);
            else
                *msg = de_arena_printf(al_ntab_ar(t), "selector #%u: CEL compile error: %s", idx,
                                       ss->compile_err[k]);
            return -1;
        }
        if (!have_view) {
            dg_device_view(a->g, dv->devid, &view);
            have_view = true;
            for (uint32_t m = 0; m < view.nattrs && !bad_attr; m++) {
                const de_attr *at = &view.attrs[m];
                if (at->v.kind == DE_V_NONE || (de_vkind_is_list(at->v.kind) && !a->f_list)) {
                    bad_attr = at->bare ? de_arena_printf(al_ntab_ar(t), "%s", al_str(a, at->name))
                                        : de_arena_printf(al_ntab_ar(t), "%s/%s", al_str(a, at->domain),
                                                          al_str(a, at->name));
                }
            }
        }
        const char *err = NULL;
        bool ok = false;
        de_err e;
        de_err_clear(&e);
        if (bad_attr) {
            err = de_arena_printf(al_ntab_ar(t), "attribute %s: unsupported attribute value", bad_attr);
        } else if (ss->driver_eq[k] && ss->driver_eq[k] != dv->s->driver) {
            return 0; /* another driver: false whatever the rest says */
        } else {
            de_arena_reset(a->scratch);
            a->stats.cel_evals++;
            if (cel_eval_selector_memo(a->cel, a->memo, ss->progs[k], &view, a->scratch, &ok, &e) !=
                DE_OK)
                err = e.msg[0] ? e.msg : "evaluation failed";
        }
        if (err) {
            *kind = is_class ? 0 : 1;
            char *m2 = enhance(al_ntab_ar(t), err);
            const char *pf = a->hooks.facts_failed ? a->hooks.facts_failed(a->hooks.ctx, a->g, dv->devid) : NULL;
            if (pf)
                m2 = de_arena_printf(al_ntab_ar(t), "%s (policy %s failed on this device: its derived attributes are "
                                            "missing)", m2, pf);
            if (is_class)
                *msg = de_arena_printf(al_ntab_ar(t), "class %s: selector #%u on device %s: CEL runtime error: %s",
                                       al_str(a, ss->class_name), idx, idbuf, m2);
            else
                *msg = de_arena_printf(al_ntab_ar(t), "selector #%u on device %s: CEL runtime error: %s", idx,
                                       idbuf, m2);
            return -1;
        }
        if (!ok)
            return 0;
    }
    *class_ok = true;
    if (dv->flags & AL_DF_PERDEV) {
        if (dv->node_ok < 0) {
            *kind = 0;
            *msg = de_arena_printf(al_ntab_ar(t), "failed to parse node selector of device %s", idbuf);
            return -1;
        }
        return dv->node_ok;
    }
    return 1;
#undef idbuf
}

/* (Re)evaluate device i of a candidate set. */
static void cset_eval(al_allocator *a, al_ntab *t, al_cset *c, uint32_t i)
{
    if (de_bit_get(c->cand, i)) {
        de_bit_clr(c->cand, i);
        c->ncand--;
    }
    de_bit_clr(c->poison, i);
    char *msg = NULL;
    uint8_t kind = 0;
    bool class_ok = false;
    int r = eval_device(a, t, c->ss, i, &msg, &kind, &class_ok);
    if (class_ok)
        de_bit_set(c->clsok, i);
    else
        de_bit_clr(c->clsok, i);
    if (r <= 0 && a->hooks.facts_failed && a->hooks.facts_failed(a->hooks.ctx, a->g, t->devs[i].devid))
        de_bit_set(c->nofacts, i);
    else
        de_bit_clr(c->nofacts, i);
    if (r > 0) {
        de_bit_set(c->cand, i);
        c->ncand++;
    } else if (r < 0) {
        if (!c->poison_msg) {
            c->poison_msg = al_tmem_alloc(a, t->ndev * sizeof *c->poison_msg);
            c->poison_kind = al_tmem_alloc(a, t->ndev);
        }
        de_bit_set(c->poison, i);
        c->poison_msg[i] = msg;
        c->poison_kind[i] = kind;
    }
}

al_cset *al_cset_make(al_allocator *a, al_ntab *t, al_selset *ss)
{
    al_cset *c = NULL;
    for (uint32_t i = 0; i < t->ncsets; i++)
        if (t->csets[i]->key == ss->key) {
            c = t->csets[i];
            if (c->ss_gen == ss->gen)
                return c;
            break; /* its class changed: evaluate again in place */
        }
    size_t nbits = 4 * (size_t)t->nwords * sizeof(uint64_t);
    if (!c) {
        if (t->ncsets == t->capcsets) {
            /* slab records of 2, 4, 8... entries: most tables see a class or two */
            uint32_t cap = t->capcsets ? t->capcsets * 2 : 2;
            al_cset **v = al_tmem_alloc(a, cap * sizeof *v);
            if (t->ncsets)
                memcpy(v, t->csets, t->ncsets * sizeof *v);
            if (t->csets)
                al_tmem_release(a, t->csets, t->capcsets * sizeof *t->csets);
            t->csets = v;
            t->capcsets = cap;
        }
        c = al_tmem_alloc(a, sizeof *c);
        t->csets[t->ncsets++] = c;
        memset(c, 0, sizeof *c);
        c->cand = al_tmem_alloc(a, nbits);
    } else {
        if (c->poison_msg) {
            al_tmem_release(a, c->poison_msg, t->ndev * sizeof *c->poison_msg);
            al_tmem_release(a, c->poison_kind, t->ndev);
        }
        uint64_t *bits = c->cand;
        memset(c, 0, sizeof *c);
        memset(bits, 0, nbits);
        c->cand = bits;
    }
    /* one record: cand, poison, clsok, nofacts (al_ntab_clear frees it by cand) */
    c->poison = c->cand + t->nwords;
    c->clsok = c->poison + t->nwords;
    c->nofacts = c->clsok + t->nwords;
    c->key = ss->key;
    c->ss = ss;
    c->ss_gen = ss->gen;
    for (uint32_t i = 0; i < t->ndev; i++)
        cset_eval(a, t, c, i);
    a->stats.candidate_sets_built++;
    return c;
}

void al_cset_refresh(al_allocator *a, al_ntab *t, uint32_t dev)
{
    for (uint32_t i = 0; i < t->ncsets; i++) {
        al_cset *c = t->csets[i];
        if (c->ss_gen == c->ss->gen && !c->ss->stale)
            cset_eval(a, t, c, dev);
    }
}
