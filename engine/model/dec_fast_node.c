/*
 * dec_fast_node.c - the snapshot fast path for Nodes (dec_fast.c does
 * ResourceSlices): a cluster snapshot holds a Node for every node with
 * devices, and through jansson, the validating checker and the full decoder
 * each Node cost about 250,000 instructions, more than all its slices.
 *
 * The shape handled: v1 Node; metadata as dec_fx_meta reads it; spec
 * unschedulable and taints (key, value, effect, timeAdded); status
 * allocatable and capacity (maps of quantity strings).  The full decoder
 * reads the rest of spec and status leniently (they are the kubelet's and
 * the node controller's, never refused), so other members there are read
 * only as far as it takes to know they are JSON the full path would accept:
 * plain strings, integers, booleans, null, and arrays and objects of them.
 * Anything else - another top-level field, annotations, declaredFeatures,
 * an escape in a string, a fraction - returns "not handled" and the item
 * goes to jansson and dec_node, which also word every error.
 */
#include "dec_fast.h"

static uint64_t plain_value(fx *f, int depth);

static uint64_t plain_object(fx *f, int depth)
{
    objit it;
    if (!obj_begin(f, &it))
        return 0;
    const char *k;
    size_t kn;
    while (next_key(f, &it, &k, &kn)) {
        uint64_t h = plain_value(f, depth + 1);
        if (f->bail)
            return 0;
        member(&it, k, kn, h);
    }
    if (f->bail)
        return 0;
    return obj_hash(&it);
}

/* A value the full decoder ignores: checked to be JSON jansson accepts
 * (a subset of it), hashed, dropped. */
static uint64_t plain_value(fx *f, int depth)
{
    if (depth > 8)
        BAIL(f);
    ws(f);
    if (f->p >= f->end)
        BAIL(f);
    char c = *f->p;
    if (c == '"') {
        const char *s;
        size_t n;
        if (!str(f, &s, &n))
            return 0;
        return hstr(f, s, n);
    }
    if (c == '{')
        return plain_object(f, depth);
    if (c == '[') {
        arrit ai;
        if (!arr_begin(f, &ai))
            return 0;
        while (arr_next(f, &ai)) {
            uint64_t h = plain_value(f, depth + 1);
            if (f->bail)
                return 0;
            elem(&ai, h);
        }
        if (f->bail)
            return 0;
        return arr_hash(&ai);
    }
    if (c == 't' || c == 'f') {
        bool b;
        uint64_t h;
        if (!boolean(f, &b, &h))
            return 0;
        return h;
    }
    if (c == 'n') {
        if (f->end - f->p < 4 || memcmp(f->p, "null", 4))
            BAIL(f);
        f->p += 4;
        return 8;
    }
    int64_t v;
    uint64_t h;
    if (!integer(f, &v, &h))
        return 0;
    return h;
}

/* "allocatable" or "capacity": resource name -> quantity string */
static uint64_t amounts(fx *f, dg_resource_amount **out, uint32_t *n)
{
    objit it;
    if (!obj_begin(f, &it))
        return 0;
    dg_resource_amount tmp[40];
    const char *k, *s;
    size_t kn, sn;
    while (next_key(f, &it, &k, &kn)) {
        if (!str(f, &s, &sn))
            return 0;
        dg_resource_amount *a = &tmp[it.nkeys - 1];
        a->name = dec_intern(f->d, k, kn);
        if (!dec_fx_qty(f, NULL, s, sn, &a->value))
            return 0;
        member(&it, k, kn, hstr(f, s, sn));
    }
    if (f->bail)
        return 0;
    *n = (uint32_t)it.nkeys;
    *out = NULL;
    if (it.nkeys && !(*out = keep(f, tmp, (size_t)it.nkeys, sizeof *tmp)))
        BAIL(f);
    return obj_hash(&it);
}

static uint64_t taints(fx *f, dg_node *n)
{
    arrit ai;
    if (!arr_begin(f, &ai))
        return 0;
    dg_node_taint tmp[32];
    uint32_t cnt = 0;
    while (arr_next(f, &ai)) {
        if (cnt == DE_ARRAY_LEN(tmp))
            BAIL(f);
        dg_node_taint *t = &tmp[cnt];
        memset(t, 0, sizeof *t);
        objit it;
        if (!obj_begin(f, &it))
            return 0;
        const char *k, *s;
        size_t kn, sn;
        uint64_t h;
        while (next_key(f, &it, &k, &kn)) {
            if (KEY("key") || KEY("value") || KEY("effect")) {
                uint32_t *dst = KEY("key") ? &t->key : KEY("value") ? &t->value : &t->effect;
                if (!str_id(f, dst, &h, &s, &sn))
                    return 0;
            } else if (KEY("timeAdded")) {
                if (!str(f, &s, &sn))
                    return 0;
                h = hstr(f, s, sn);
            } else {
                BAIL(f);
            }
            member(&it, k, kn, h);
        }
        if (f->bail)
            return 0;
        elem(&ai, obj_hash(&it));
        cnt++;
    }
    if (f->bail)
        return 0;
    n->ntaints = cnt;
    if (cnt && !(n->taints = keep(f, tmp, cnt, sizeof *tmp)))
        BAIL(f);
    return arr_hash(&ai);
}

static uint64_t spec(fx *f, dg_node *n)
{
    objit it;
    if (!obj_begin(f, &it))
        return 0;
    const char *k;
    size_t kn;
    uint64_t h;
    while (next_key(f, &it, &k, &kn)) {
        if (KEY("unschedulable")) {
            bool b;
            if (!boolean(f, &b, &h))
                return 0;
            n->unschedulable = b;
        } else if (KEY("taints")) {
            h = taints(f, n);
        } else {
            h = plain_value(f, 1);
        }
        if (f->bail)
            return 0;
        member(&it, k, kn, h);
    }
    if (f->bail)
        return 0;
    return obj_hash(&it);
}

static uint64_t status(fx *f, dg_node *n)
{
    objit it;
    if (!obj_begin(f, &it))
        return 0;
    const char *k;
    size_t kn;
    uint64_t h;
    dg_resource_amount *cap = NULL;
    uint32_t ncap = 0;
    bool alloc = false;
    while (next_key(f, &it, &k, &kn)) {
        if (KEY("allocatable")) {
            h = amounts(f, &n->allocatable, &n->nallocatable);
            alloc = true;
        } else if (KEY("capacity")) {
            h = amounts(f, &cap, &ncap);
        } else if (KEY("declaredFeatures")) {
            BAIL(f);
        } else {
            h = plain_value(f, 1);
        }
        if (f->bail)
            return 0;
        member(&it, k, kn, h);
    }
    if (f->bail)
        return 0;
    /* dec_node: allocatable when there is one, else capacity */
    if (!alloc) {
        n->allocatable = cap;
        n->nallocatable = ncap;
    }
    return obj_hash(&it);
}

int dec_fast_node(dec *d, dec_fast_memo *m, const char *text, size_t len, dg_node **out, size_t *used,
                  uint64_t *hash)
{
    fx f;
    fx_init(&f, text, len, d, m, hash != NULL);
    dg_node *n = DEC_NEW(d, dg_node, 1);
    if (!n)
        return 0;
    memset(n, 0, sizeof *n);
    objit it;
    if (!obj_begin(&f, &it))
        return 0;
    const char *k, *v;
    size_t kn, vn;
    uint64_t h;
    bool api = false, kind = false, md = false;
    while (next_key(&f, &it, &k, &kn)) {
        if (KEY("apiVersion")) {
            if (!str(&f, &v, &vn) || vn != 2 || memcmp(v, "v1", 2))
                return 0;
            api = true;
            h = hstr(&f, v, vn);
        } else if (KEY("kind")) {
            if (!str(&f, &v, &vn) || vn != 4 || memcmp(v, "Node", 4))
                return 0;
            kind = true;
            h = hstr(&f, v, vn);
        } else if (KEY("metadata")) {
            h = dec_fx_meta(&f, &n->meta);
            md = true;
        } else if (KEY("spec")) {
            h = spec(&f, n);
        } else if (KEY("status")) {
            h = status(&f, n);
        } else {
            return 0;
        }
        if (f.bail)
            return 0;
        member(&it, k, kn, h);
    }
    if (f.bail || !api || !kind || !md)
        return 0;
    *out = n;
    *used = (size_t)(f.p - text);
    if (hash)
        *hash = obj_hash(&it);
    return 1;
}

dg_kind dec_fast_kind(const char *text, size_t len)
{
    /* apiVersion and kind, when they open the object (they almost always
     * do): enough to pick the decoder without trying both */
    fx f;
    fx_init(&f, text, len, NULL, NULL, false);
    objit it;
    const char *k, *av = NULL, *kd = NULL;
    size_t kn, avn = 0, kdn = 0;
    if (!obj_begin(&f, &it))
        return DG_KIND_NONE;
    for (int i = 0; i < 2 && next_key(&f, &it, &k, &kn); i++) {
        if (KEY("apiVersion") && str(&f, &av, &avn))
            continue;
        if (KEY("kind") && str(&f, &kd, &kdn))
            continue;
        return DG_KIND_NONE;
    }
    if (!av || !kd)
        return DG_KIND_NONE;
    if (kdn == 13 && !memcmp(kd, "ResourceSlice", 13))
        return DG_KIND_RESOURCE_SLICE;
    if (kdn == 4 && !memcmp(kd, "Node", 4) && avn == 2 && !memcmp(av, "v1", 2))
        return DG_KIND_NODE;
    return DG_KIND_OTHER;
}
