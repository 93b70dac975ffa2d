/*
 * memo.c - the score memo: a score hook's answers remembered by what the
 * hook read.
 *
 * A score hook is a function of its inputs (the node view and the placement's
 * device views); what it returns can only depend on the values it actually
 * reads.  While a score call runs under a trace, the views (view.c) record
 * every read - node.free_devices, #placement, device.attributes[k] for
 * device i, ... - and its value, computed here from the same inputs.  The
 * answer is then filed in a trie per policy: a trie node is the read the
 * hook makes next, its edges are the values that read gave, a leaf is the
 * answer.  Since a deterministic hook that has made the same reads with the
 * same values so far makes the same next read, a later call walks the trie
 * by evaluating each node's read on its own inputs in C; reaching a leaf is
 * the answer without entering Lua.
 *
 * The point: binpack reads node.devices, node.free_devices and #placement,
 * so every node with the same counts shares one answer; numa-score reads a
 * few NUMA attributes of each placed device.  Node names, device names and
 * everything else a hook does not look at stop mattering.

 */
#include "../base/map.h"
#include "pol_int.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
#define MAX_READS 256
#define MAX_BYTES ((size_t)32 << 20) /* per policy: the trie stops growing there */

enum { MV_NIL = 0, MV_INT, MV_BOOL, MV_STR, MV_VER, MV_BLOB };

typedef struct mval {
    uint8_t kind;
    uint32_t len;          /* MV_BLOB */
    uint64_t v;            /* scalar, interned id, or the blob's hash */
    const uint8_t *blob;
} mval;

typedef struct mop {
    uint8_t op;
    uint32_t dev, a, b;
} mop;

typedef struct tread {
    mop op;
    mval val;
} tread;

struct pol_trace {
    const pol_nodeinfo *node;
    const de_devview *place;
    uint32_t n;
    tread *r;
    uint32_t nr, cap;
    uint32_t nabsent;      /* reads of absent keys: counted, not recorded */
    bool impure;
    de_arena *ar;          /* blobs of the current call */
};

enum { MN_UNSET = 0, MN_READ, MN_LEAF };

typedef struct mnode {
    mop op;
    uint8_t kind;
    double result;
    uint32_t nedges, first;
} mnode;

typedef struct medge {
    uint32_t from, to;
    uint32_t next;         /* next edge of the same node, NONE = end */
    mval val;
} medge;

struct pol_memo {
    mnode *nodes;
    uint32_t nn, capn;
    medge *edges;
    uint32_t ne, cape;
    de_map emap;           /* edge key + probe -> edge + 1 */
    de_arena *ar;          /* edge blobs */
    de_arena *scratch;     /* blobs of one lookup */
    unsigned inputs;       /* POL_MEMO_* of the reads filed so far */
    bool off;
};

/* ---- values ------------------------------------------------------------------------ */

typedef struct blob {
    uint8_t *p;
    size_t n, cap;
} blob;

static void b_add(blob *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = de_xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void b_u32(blob *b, uint32_t v) { b_add(b, &v, sizeof v); }
static void b_u64(blob *b, uint64_t v) { b_add(b, &v, sizeof v); }

static void b_attrval(blob *b, const de_attrval *v)
{
    b_u32(b, v->kind);
    switch (v->kind) {
    case DE_V_INT:
        b_u64(b, (uint64_t)v->u.i);
        break;
    case DE_V_BOOL:
        b_u32(b, v->u.b);
        break;
    case DE_V_STRING:
    case DE_V_VERSION:
        b_u32(b, v->u.s);
        break;
    case DE_V_INTS:
        b_u32(b, v->n);
        for (uint32_t i = 0; i < v->n; i++)
            b_u64(b, (uint64_t)v->u.ints[i]);
        break;
    case DE_V_BOOLS:
        b_u32(b, v->n);
        for (uint32_t i = 0; i < v->n; i++)
            b_u32(b, v->u.bools[i]);
        break;
    case DE_V_STRINGS:
    case DE_V_VERSIONS:
        b_u32(b, v->n);
        for (uint32_t i = 0; i < v->n; i++)
            b_u32(b, v->u.strs[i]);
        break;
    default:
        break;
    }
}

static void b_qty(blob *b, const de_qty *q)
{
    b_u64(b, (uint64_t)q->mant);
    b_u64(b, (uint64_t)(q->mant >> 64));
    b_u32(b, (uint32_t)q->exp);
    b_u32(b, (uint32_t)q->gscale);
    b_u32(b, q->gdec);
    b_u32(b, q->fmt);
}

static mval blob_val(blob *b, de_arena *ar)
{
    mval m = {.kind = MV_BLOB, .len = (uint32_t)b->n};
    m.v = de_hash_bytes(b->p, b->n);
    uint8_t *p = de_arena_alloc(ar, b->n ? b->n : 1);
    if (p && b->n)
        memcpy(p, b->p, b->n);
    m.blob = p;
    free(b->p);
    return m;
}

static mval attr_val(const de_attr *at, de_arena *ar)
{
    mval m = {0};
    if (!at)
        return m;
    switch (at->v.kind) {
    case DE_V_INT:
        m.kind = MV_INT;
        m.v = (uint64_t)at->v.u.i;
        return m;
    case DE_V_BOOL:
        m.kind = MV_BOOL;
        m.v = at->v.u.b;
        return m;
    case DE_V_STRING:
        m.kind = MV_STR;
        m.v = at->v.u.s;
        return m;
    case DE_V_VERSION:
        m.kind = MV_VER;
        m.v = at->v.u.s;
        return m;
    default: {
        blob b = {0};
        b_attrval(&b, &at->v);
        return blob_val(&b, ar);
    }
    }
}

/* What one read gives on these inputs (the value the view showed). */
static mval eval(const mop *op, const pol_nodeinfo *node, const de_devview *pl, uint32_t n, de_arena *ar)
{
    mval m = {0};
    const de_devview *d = op->dev < n ? &pl[op->dev] : NULL;
    switch (op->op) {
    case POL_READ_NPLACE:
        m.kind = MV_INT;
        m.v = n;
        return m;
    case POL_READ_NODE_NAME:
        m.kind = MV_STR;
        m.v = node->name;
        return m;
    case POL_READ_NODE_DEVICES:
        m.kind = MV_INT;
        m.v = node->devices;
        return m;
    case POL_READ_NODE_FREE:
        m.kind = MV_INT;
        m.v = node->free_devices;
        return m;
    case POL_READ_NODE_LABELS: {
        blob b = {0};
        b_u32(&b, node->nlabels);
        for (uint32_t i = 0; i < node->nlabels; i++) {
            b_u32(&b, node->label_keys[i]);
            b_u32(&b, node->label_values[i]);
        }
        return blob_val(&b, ar);
    }
    default:
        break;
    }
    if (!d)
        return m;
    switch (op->op) {
    case POL_READ_DEV_DRIVER:
        m.kind = MV_STR;
        m.v = d->driver;
        return m;
    case POL_READ_DEV_POOL:
        m.kind = MV_STR;
        m.v = d->pool;
        return m;
    case POL_READ_DEV_NAME:
        m.kind = MV_STR;
        m.v = d->name;
        return m;
    case POL_READ_DEV_NODE:
        m.kind = MV_STR;
        m.v = d->node;
        return m;
    case POL_READ_DEV_MULTI:
        m.kind = MV_BOOL;
        m.v = d->allow_multi == 1;
        return m;
    case POL_READ_DEV_ATTR:
        return attr_val(de_devview_attr(d, op->a == POL_READ_BARE ? d->driver : op->a, op->b), ar);
    case POL_READ_DEV_CAP: {
        const de_cap *c = de_devview_cap(d, op->a == POL_READ_BARE ? d->driver : op->a, op->b);
        if (!c)
            return m;
        blob b = {0};
        b_qty(&b, &c->value);
        return blob_val(&b, ar);
    }
    case POL_READ_DEV_ATTRS: {
        blob b = {0};
        b_u32(&b, d->nattrs);
        for (uint32_t i = 0; i < d->nattrs; i++) {
            b_u32(&b, d->attrs[i].domain);
            b_u32(&b, d->attrs[i].name);
            b_attrval(&b, &d->attrs[i].v);
        }
        b_u32(&b, d->nderived);
        for (uint32_t i = 0; i < d->nderived; i++) {
            b_u32(&b, d->derived[i].domain);
            b_u32(&b, d->derived[i].name);
            b_attrval(&b, &d->derived[i].v);
        }
        return blob_val(&b, ar);
    }
    case POL_READ_DEV_CAPS: {
        blob b = {0};
        b_u32(&b, d->ncaps);
        for (uint32_t i = 0; i < d->ncaps; i++) {
            b_u32(&b, d->caps[i].domain);
            b_u32(&b, d->caps[i].name);
            b_qty(&b, &d->caps[i].value);
        }
        return blob_val(&b, ar);
    }
    default:
        return m;
    }
}

static bool val_eq(const mval *x, const mval *y)
{
    return x->kind == y->kind && x->v == y->v && x->len == y->len &&
           (x->kind != MV_BLOB || !x->len || !memcmp(x->blob, y->blob, x->len));
}

static bool op_eq(const mop *x, const mop *y)
{
    return x->op == y->op && x->dev == y->dev && x->a == y->a && x->b == y->b;
}

/* ---- tracing (called by the views) ------------------------------------------------ */

/*
 * A read of a key no device has (a = POL_READ_ABSENT) gives nil on every
 * input for as long as the memo lives (it is dropped when the key is
 * interned: pol_memo_sync_absent), so it is not recorded: the other reads
 * and their values already decide which absent keys a deterministic hook
 * reads, and in which order.  Such reads are what vendor-name lookups make
 * on clusters without those vendors (numa-score's V.numa_node tries five
 * names per device), and each recorded one was a step of every lookup.
 * They still count for pol_trace_reads.
 */
void pol_trace_read(pol_vm *vm, uint8_t op, uint32_t dev, uint32_t a, uint32_t b)
{
    pol_trace *t = vm->trace;
    if (!t || t->impure)
        return;
    if (a == POL_READ_ABSENT && (op == POL_READ_DEV_ATTR || op == POL_READ_DEV_CAP)) {
        t->nabsent++;
        return;
    }
    if (t->nr == MAX_READS) {
        t->impure = true;
        return;
    }
    if (t->nr == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 32;
        t->r = de_xrealloc(t->r, t->cap * sizeof *t->r);
    }
    tread *r = &t->r[t->nr++];
    r->op = (mop){op, dev, a, b};
    r->val = eval(&r->op, t->node, t->place, t->n, t->ar);
}

void pol_trace_impure(pol_vm *vm)
{
    if (vm->trace)
        vm->trace->impure = true;
}

/* ---- keys no device has (view.c: trace_key) ------------------------------------- */

#define MAX_ABSENT 64
#define MAX_ABSENT_KEY 256

struct pol_absent {
    char *key[MAX_ABSENT];
    size_t len[MAX_ABSENT];
    uint32_t n;
    uint32_t interned;     /* de_intern_count when they were last all absent */
};

uint32_t pol_trace_absent(pol_vm *vm, const char *key, size_t n)
{
    if (!vm->trace || vm->trace->impure || n > MAX_ABSENT_KEY)
        return UINT32_MAX;
    if (!vm->absent) {
        vm->absent = de_xcalloc(1, sizeof *vm->absent);
        vm->absent->interned = de_intern_count(vm->in);
    }
    struct pol_absent *t = vm->absent;
    for (uint32_t i = 0; i < t->n; i++)
        if (t->len[i] == n && !memcmp(t->key[i], key, n))
            return i;
    if (t->n == MAX_ABSENT)
        return UINT32_MAX;
    t->key[t->n] = de_xmalloc(n + 1);
    memcpy(t->key[t->n], key, n);
    t->key[t->n][n] = 0;
    t->len[t->n] = n;
    return t->n++;
}

static bool interned_key(de_interner *in, const char *k, size_t n)
{
    const char *slash = memchr(k, '/', n);
    if (!slash)
        return de_intern_find(in, k, n) != UINT32_MAX;
    return de_intern_find(in, k, (size_t)(slash - k)) != UINT32_MAX &&
           de_intern_find(in, slash + 1, n - (size_t)(slash - k) - 1) != UINT32_MAX;
}

static void absent_free(pol_vm *vm)
{
    if (!vm->absent)
        return;
    for (uint32_t i = 0; i < vm->absent->n; i++)
        free(vm->absent->key[i]);
    free(vm->absent);
    vm->absent = NULL;
}

bool pol_trace_pure(const pol_vm *vm) { return vm->trace && !vm->trace->impure; }

uint32_t pol_trace_reads(const pol_vm *vm) { return vm->trace ? vm->trace->nr + vm->trace->nabsent : 0; }

void pol_memo_sync_absent(pol_vm *vm, pol_memo **m, pol_memo **m2)
{
    struct pol_absent *t = vm->absent;
    if (!t)
        return;
    uint32_t now = de_intern_count(vm->in);
    if (now == t->interned)
        return; /* nothing interned since: every key is still absent */
    t->interned = now;
    for (uint32_t i = 0; i < t->n; i++)
        if (interned_key(vm->in, t->key[i], t->len[i])) {
            /* answers recorded with that key as nil may be wrong now */
            pol_memo_free(*m);
            *m = NULL;
            pol_memo_free(*m2);
            *m2 = NULL;
            absent_free(vm);
            return;
        }
}

bool pol_trace_on(const pol_vm *vm)
{
    return vm->trace && !vm->trace->impure;
}

/* ---- the trie ------------------------------------------------------------------------ */

/* Bumped whenever filed answers stop counting: a memo freed (a reload, a
 * key recorded as absent interned) or switched off.  Caches of memo answers
 * (pol_set_score_memo) compare it; one counter for the process, so a drop
 * in one set only flushes another set's cache too early, never too late. */
static _Atomic uint64_t memo_drops;

uint64_t pol_memo_drops(void)
{
    return memo_drops;
}

static uint64_t edge_key(uint32_t from, const mval *v)
{
    return de_hash_u64(((uint64_t)from << 8 | v->kind) ^ de_hash_u64(v->v + v->len));
}

/* Nodes with few edges are searched along their list, others by hash. */
#define FEW_EDGES 8

static uint32_t find_edge(const pol_memo *m, uint32_t from, const mval *v)
{
    const mnode *x = &m->nodes[from];
    if (x->nedges <= FEW_EDGES) {
        for (uint32_t e = x->first; e != NONE; e = m->edges[e].next) {
            const mval *y = &m->edges[e].val;
            if (y->v == v->v && y->kind == v->kind && y->len == v->len &&
                (v->kind != MV_BLOB || !v->len || !memcmp(y->blob, v->blob, v->len)))
                return e;
        }
        return NONE;
    }
    uint64_t k = edge_key(from, v), e;
    for (; de_map_get(&m->emap, k, &e); k++) {
        const medge *ed = &m->edges[e - 1];
        if (ed->from == from && val_eq(&ed->val, v))
            return (uint32_t)e - 1;
    }
    return NONE;
}

static uint32_t new_node(pol_memo *m)
{
    if (m->nn == m->capn) {
        m->capn = m->capn ? m->capn * 2 : 64;
        m->nodes = de_xrealloc(m->nodes, m->capn * sizeof *m->nodes);
    }
    m->nodes[m->nn] = (mnode){.kind = MN_UNSET, .first = NONE};
    return m->nn++;
}

static uint32_t add_edge(pol_memo *m, uint32_t from, const mval *v)
{
    uint32_t to = new_node(m);
    if (m->ne == m->cape) {
        m->cape = m->cape ? m->cape * 2 : 64;
        m->edges = de_xrealloc(m->edges, m->cape * sizeof *m->edges);
    }
    uint32_t e = m->ne++;
    medge *ed = &m->edges[e];
    ed->from = from;
    ed->to = to;
    ed->val = *v;
    ed->next = m->nodes[from].first;
    if (v->kind == MV_BLOB && v->len) {
        uint8_t *p = de_arena_alloc(m->ar, v->len);
        memcpy(p, v->blob, v->len);
        ed->val.blob = p;
    }
    uint64_t k = edge_key(from, v);
    while (de_map_get(&m->emap, k, NULL))
        k++;
    de_map_put(&m->emap, k, (uint64_t)e + 1);
    mnode *x = &m->nodes[from];
    x->first = e;
    x->nedges++;
    return to;
}

static size_t memo_bytes(const pol_memo *m)
{
    return m->capn * sizeof *m->nodes + m->cape * sizeof *m->edges + de_arena_reserved(m->ar) +
           m->emap.cap * 17;
}

pol_memo *pol_memo_new(void)
{
    pol_memo *m = de_xcalloc(1, sizeof *m);
    de_map_init(&m->emap);
    m->ar = de_arena_new_sized(0, 4096);
    m->scratch = de_arena_new_sized(0, 4096);
    return m;
}

void pol_memo_free(pol_memo *m)
{
    if (!m)
        return;
    memo_drops++;
    free(m->nodes);
    free(m->edges);
    de_map_destroy(&m->emap);
    de_arena_free(m->ar);
    de_arena_free(m->scratch);
    free(m);
}

/* The common reads without building a value: a scalar attribute or count. */
static inline bool eval_fast(const mop *op, const pol_nodeinfo *node, const de_devview *pl, uint32_t n, mval *m)
{
    m->len = 0;
    m->blob = NULL;
    switch (op->op) {
    case POL_READ_NPLACE:
        m->kind = MV_INT;
        m->v = n;
        return true;
    case POL_READ_NODE_DEVICES:
        m->kind = MV_INT;
        m->v = node->devices;
        return true;
    case POL_READ_NODE_FREE:
        m->kind = MV_INT;
        m->v = node->free_devices;
        return true;
    case POL_READ_DEV_ATTR: {
        if (op->dev >= n)
            return false;
        const de_devview *d = &pl[op->dev];
        const de_attr *at = op->a == POL_READ_ABSENT
                                ? NULL
                                : de_devview_attr(d, op->a == POL_READ_BARE ? d->driver : op->a, op->b);
        if (!at) {
            m->kind = MV_NIL;
            m->v = 0;
            return true;
        }
        switch (at->v.kind) {
        case DE_V_INT:
            m->kind = MV_INT;
            m->v = (uint64_t)at->v.u.i;
            return true;
        case DE_V_BOOL:
            m->kind = MV_BOOL;
            m->v = at->v.u.b;
            return true;
        case DE_V_STRING:
            m->kind = MV_STR;
            m->v = at->v.u.s;
            return true;
        default:
            return false;
        }
    }
    default:
        return false;
    }
}

bool pol_memo_get(pol_memo *m, const pol_nodeinfo *node, const de_devview *pl, uint32_t n, double *out,
                  bool *counts)
{
    if (!m->nn)
        return false;
    bool scratch = false, only = true;
    uint32_t cur = 0;
    for (;;) {
        const mnode *x = &m->nodes[cur];
        if (x->kind == MN_LEAF) {
            *out = x->result;
            if (counts)
                *counts = only;
            if (scratch)
                de_arena_reset(m->scratch);
            return true;
        }
        if (x->kind != MN_READ)
            break;
        only &= x->op.op == POL_READ_NPLACE || x->op.op == POL_READ_NODE_DEVICES || x->op.op == POL_READ_NODE_FREE;
        mval v;
        if (!eval_fast(&x->op, node, pl, n, &v)) {
            v = eval(&x->op, node, pl, n, m->scratch);
            scratch = true;
        }
        /* most nodes have one edge */
        uint32_t e = x->first;
        if (e == NONE)
            break;
        const medge *ed = &m->edges[e];
        if (x->nedges != 1 || ed->val.kind != v.kind || ed->val.v != v.v || ed->val.len != v.len ||
            (v.kind == MV_BLOB && v.len && memcmp(ed->val.blob, v.blob, v.len))) {
            e = find_edge(m, cur, &v);
            if (e == NONE)
                break;
        }
        cur = m->edges[e].to;
    }
    if (scratch)
        de_arena_reset(m->scratch);
    return false;
}

/* File a traced answer; an answer that contradicts the trie switches the
 * memo off (the hook is not a function of what it reads). */
static void memo_put(pol_memo *m, const pol_trace *t, double result)
{
    if (m->off)
        return;
    if (memo_bytes(m) > MAX_BYTES)
        return;
    if (!m->nn)
        new_node(m);
    uint32_t cur = 0;
    for (uint32_t i = 0; i < t->nr; i++) {
        mnode *x = &m->nodes[cur];
        if (x->kind == MN_UNSET) {
            x->kind = MN_READ;
            x->op = t->r[i].op;
        } else if (x->kind != MN_READ || !op_eq(&x->op, &t->r[i].op)) {
            m->off = true;
            memo_drops++;
            return;
        }
        if (t->r[i].op.op >= POL_READ_DEV_DRIVER)
            m->inputs |= POL_MEMO_DEVICES;
        else if (t->r[i].op.op == POL_READ_NODE_LABELS)
            m->inputs |= POL_MEMO_LABELS;
        uint32_t e = find_edge(m, cur, &t->r[i].val);
        cur = e == NONE ? add_edge(m, cur, &t->r[i].val) : m->edges[e].to;
    }
    mnode *x = &m->nodes[cur];
    if (x->kind == MN_UNSET) {
        x->kind = MN_LEAF;
        x->result = result;
    } else if (x->kind != MN_LEAF || !(x->result == result || (x->result != x->result && result != result))) {
        m->off = true;
        memo_drops++;
    }
}

pol_trace *pol_trace_begin(pol_vm *vm, const pol_nodeinfo *node, const de_devview *pl, uint32_t n)
{
    pol_trace *t = vm->trace_buf;
    if (!t) {
        t = vm->trace_buf = de_xcalloc(1, sizeof *t);
        t->ar = de_arena_new_sized(0, 4096);
    }
    de_arena_reset(t->ar);
    t->node = node;
    t->place = pl;
    t->n = n;
    t->nr = 0;
    t->nabsent = 0;
    t->impure = false;
    vm->trace = t;
    /* #placement and placement[i] are plain table reads: the count is
     * always read */
    pol_trace_read(vm, POL_READ_NPLACE, 0, 0, 0);
    return t;
}

void pol_trace_end(pol_vm *vm, pol_memo *m, bool ok, double result)
{
    pol_trace *t = vm->trace;
    vm->trace = NULL;
    if (t && ok && !t->impure && m)
        memo_put(m, t, result);
}

void pol_trace_free(pol_vm *vm)
{
    absent_free(vm);
    pol_trace *t = vm->trace_buf;
    if (!t)
        return;
    free(t->r);
    de_arena_free(t->ar);
    free(t);
    vm->trace_buf = NULL;
    vm->trace = NULL;
}

bool pol_memo_off(const pol_memo *m)
{
    return m->off;
}

unsigned pol_memo_inputs(const pol_memo *m)
{
    return m->inputs;
}

uint32_t pol_memo_size(const pol_memo *m)
{
    return m->nn;
}
