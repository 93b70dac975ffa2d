/*
 * al_memo.c - serve's Filter memo: per pod signature, per node, the outcome
 * of the Filter step as of the node's generation (design in al.h, above
 * al_memo_open).
 *
 * Tables are flat arrays by canonical node rank (about 30 bytes a node), at
 * most MEMO_TABLES of them, the least recently used replaced.  The node
 * generations are al_choose.c's: al_node_changed keeps them once the
 * chooser exists, which al_choice_sig makes; a table made before that
 * starts empty anyway.  Entries are checked against a->ngen on every read,
 * so nothing needs to visit the tables when a node changes.
 *
 * Before the first read of a decision the allocator catches up with what no
 * event reports at once (al_sync: policy revision, device refreshes; the
 * pods' usage; the node order), as al_allocate would on its first node:
 * otherwise an entry could be read under a generation that is about to
 * move.
 */
#include "al_int.h"

#include <stdlib.h>

#define MEMO_TABLES 16

typedef struct ment {
    uint64_t gen;   /* the node's generation + 1; 0: empty */
    int64_t k8s;
    double rscore;
    unsigned bits;
} ment;

struct al_memo_tab {
    uint64_t hash;
    uint32_t *sig;
    uint32_t nsig;
    uint64_t epoch, order_gen, choice_gen, used;
    uint32_t n;
    ment *e;
};

struct al_memo {
    al_memo_tab *t[MEMO_TABLES];
    uint32_t n;
    uint64_t tick;
    bool off;
};

static struct al_memo *memo_get(al_allocator *a)
{
    if (!a->fmemo)
        a->fmemo = de_xcalloc(1, sizeof *a->fmemo);
    return a->fmemo;
}

void al_set_memo(al_allocator *a, bool on)
{
    memo_get(a)->off = !on;
}

static void tab_free(al_memo_tab *t)
{
    if (t) {
        free(t->sig);
        free(t->e);
        free(t);
    }
}

void al_memo_free(al_allocator *a)
{
    struct al_memo *m = a->fmemo;
    if (!m)
        return;
    for (uint32_t i = 0; i < m->n; i++)
        tab_free(m->t[i]);
    free(m);
    a->fmemo = NULL;
}

void al_memo_reset(al_allocator *a, al_memo_tab *t)
{
    if (t->n != a->nnodes) {
        free(t->e);
        t->n = a->nnodes;
        t->e = de_xmalloc((t->n ? t->n : 1) * sizeof *t->e);
    }
    memset(t->e, 0, (t->n ? t->n : 1) * sizeof *t->e);
    t->epoch = a->epoch;
    t->order_gen = a->order_gen;
    t->choice_gen = a->choice_gen;
    a->stats.memo_tables++;
}

al_memo_tab *al_memo_open(al_allocator *a, const dg_pod *pod, uint32_t podid, const uint32_t *claims,
                          uint32_t nclaims, const al_amount *req, uint32_t nreq)
{
    struct al_memo *m = memo_get(a);
    if (m->off)
        return NULL;
    al_sync(a);
    al_usage_prepare(a);
    al_node_order(a);
    if (!a->nnodes || a->node_stub)
        return NULL; /* no Node objects: serve never schedules there */
    if (!al_all_admitted(a, claims, nclaims))
        return NULL; /* refused everywhere, in words the claim's own */
    al_podctx pc = {.pod = pod, .podid = podid, .claims = claims, .nclaims = nclaims, .req = req, .nreq = nreq};
    const uint32_t *sig;
    uint32_t nsig;
    uint64_t h = al_choice_sig(a, &pc, &sig, &nsig);
    if (!a->ngen)
        return NULL;
    al_memo_tab *t = NULL;
    for (uint32_t i = 0; i < m->n && !t; i++)
        if (m->t[i]->hash == h && m->t[i]->nsig == nsig && !memcmp(m->t[i]->sig, sig, nsig * sizeof *sig))
            t = m->t[i];
    if (!t) {
        uint32_t slot = m->n;
        if (m->n == MEMO_TABLES) {
            slot = 0;
            for (uint32_t i = 1; i < m->n; i++)
                if (m->t[i]->used < m->t[slot]->used)
                    slot = i;
            tab_free(m->t[slot]);
        } else {
            m->n++;
        }
        t = m->t[slot] = de_xcalloc(1, sizeof *t);
        t->hash = h;
        t->nsig = nsig;
        t->sig = de_xmalloc((nsig ? nsig : 1) * sizeof *sig);
        memcpy(t->sig, sig, nsig * sizeof *sig);
        al_memo_reset(a, t);
    } else if (t->epoch != a->epoch || t->order_gen != a->order_gen || t->choice_gen != a->choice_gen ||
               t->n != a->nnodes) {
        al_memo_reset(a, t);
    }
    t->used = ++m->tick;
    return t;
}

static bool rank_of(al_allocator *a, const al_memo_tab *t, uint32_t node_name, uint32_t *r)
{
    uint64_t v;
    if (!de_map_get(&a->rank_by_name, node_name, &v) || v - 1 >= t->n)
        return false;
    *r = (uint32_t)v - 1;
    return true;
}

bool al_memo_get(al_allocator *a, al_memo_tab *t, uint32_t node_name, al_memo_ent *out)
{
    uint32_t r;
    if (!rank_of(a, t, node_name, &r))
        return false;
    const ment *x = &t->e[r];
    if (x->gen != a->ngen[r] + 1)
        return false;
    out->bits = x->bits;
    out->rscore = x->rscore;
    out->k8s = x->k8s;
    a->stats.memo_hits++;
    return true;
}

void al_memo_put(al_allocator *a, al_memo_tab *t, uint32_t node_name, const al_memo_ent *in)
{
    uint32_t r;
    if (!rank_of(a, t, node_name, &r))
        return;
    t->e[r] = (ment){a->ngen[r] + 1, in->k8s, in->rscore, in->bits};
    a->stats.memo_puts++;
}
