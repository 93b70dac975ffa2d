/*
 * cost.c - the static worst-case cost estimate of a program, as the API
 * server computes CompilationResult.MaxCost for a DRA selector (cel-go's
 * checker/cost.go driven by the Kubernetes CostEstimator and DRA's size
 * estimator); "too complex, exceeds cost limit" is reported when it is
 * above CEL_COST_LIMIT.
 *
 * The estimate walks the checked AST and mirrors cel-go's expansion of the
 * macros: a comprehension costs its range and accumulator initialiser, its
 * result, and (loop condition + step) times the range's maximum size.
 * Sizes come from literals, from the DRA bounds of the device (driver <= 63
 * characters, <= 32 domains and ids, attribute values <= 64 characters or
 * elements), from scalar types, or are unknown (saturating arithmetic then
 * makes the estimate effectively unbounded, exactly as upstream).  Note
 * that the estimate sees the unoptimised program: constant list literals
 * still cost 10 here, while the runtime (cel-go OptOptimize) folds them.
 */
#include "cel_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct est {
    uint64_t min, max;
} est;

static const est UNKNOWN = {0, UINT64_MAX};

static uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t mul_sat(uint64_t a, uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; }
static uint64_t fac_sat(uint64_t a, double f)
{
    double x = (double)a;
    if (x > 0 && f > 0 && x > 18446744073709551615.0 / f)
        return UINT64_MAX;
    double c = ceil(x * f);
    return c >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)c;
}

static est fixed(uint64_t v) { return (est){v, v}; }
static est add(est a, est b) { return (est){add_sat(a.min, b.min), add_sat(a.max, b.max)}; }
static est mul(est a, est b) { return (est){mul_sat(a.min, b.min), mul_sat(a.max, b.max)}; }
static est fac(est a, double f) { return (est){fac_sat(a.min, f), fac_sat(a.max, f)}; }
static est uni(est a, est b)
{
    return (est){a.min < b.min ? a.min : b.min, a.max > b.max ? a.max : b.max};
}

/* Path elements the DRA size estimator understands. */
enum { P_DEVICE = 1, P_ATTRS, P_CAPS, P_DRIVER, P_MULTI, P_VALUES, P_KEYS, P_ITEMS, P_INDICES, P_FIELD };
#define PATH_MAX_LEN 12

typedef struct path {
    uint8_t n;
    uint8_t e[PATH_MAX_LEN];
} path;

typedef struct entry {
    bool set;
    est key, val;
} entry;

typedef struct info {
    est cost;
    bool has_size;
    est size;
    path p;
    entry ent;
} info;

typedef struct local {
    path p;
    bool has_size;
    est size;
    entry ent;
} local;

typedef struct E {
    cel_env *env;
    local *locals;
    uint32_t nlocals;
    int depth;
} E;

static path push_path(path p, uint8_t el)
{
    if (p.n == 0 || p.n >= PATH_MAX_LEN) {
        p.n = 0; /* no path: the estimator cannot size it */
        return p;
    }
    p.e[p.n++] = el;
    return p;
}

/* DRA sizeEstimator over the newest device declaration. */
enum { T_DEV, T_OUTER_ATTR, T_INNER_ATTR, T_ATTR, T_OUTER_CAP, T_INNER_CAP, T_QTY, T_DOMAIN, T_ID,
       T_DRIVER, T_MULTI };

static bool dra_size(const path *p, est *out)
{
    if (p->n == 0 || p->e[0] != P_DEVICE)
        return false;
    int t = T_DEV;
    for (uint8_t i = 1; i < p->n; i++) {
        int el = p->e[i];
        switch (el) {
        case P_VALUES:
        case P_ITEMS:
            switch (t) {
            case T_OUTER_ATTR: t = T_INNER_ATTR; break;
            case T_INNER_ATTR: t = T_ATTR; break;
            case T_OUTER_CAP: t = T_INNER_CAP; break;
            case T_INNER_CAP: t = T_QTY; break;
            default: return false;
            }
            break;
        case P_KEYS:
            switch (t) {
            case T_OUTER_ATTR:
            case T_OUTER_CAP: t = T_DOMAIN; break;
            case T_INNER_ATTR:
            case T_INNER_CAP: t = T_ID; break;
            default: return false;
            }
            break;
        default:
            if (t == T_DEV) {
                if (el == P_ATTRS)
                    t = T_OUTER_ATTR;
                else if (el == P_CAPS)
                    t = T_OUTER_CAP;
                else if (el == P_DRIVER)
                    t = T_DRIVER;
                else if (el == P_MULTI)
                    t = T_MULTI;
                else
                    return false;
            } else if (t == T_INNER_ATTR) {
                t = T_ATTR; /* any id of an attribute map */
            } else {
                return false;
            }
        }
    }
    uint64_t max;
    switch (t) {
    case T_OUTER_ATTR:
    case T_INNER_ATTR:
    case T_OUTER_CAP:
    case T_INNER_CAP: max = 32; break;
    case T_ATTR: max = 64; break;
    case T_DOMAIN:
    case T_DRIVER: max = 63; break;
    case T_ID: max = 32; break;
    case T_MULTI: max = 1; break;
    default: return false; /* the device object, quantities */
    }
    *out = (est){0, max};
    return true;
}

static bool scalar_type(const cel_type *t)
{
    return t && (t->k == TK_BOOL || t->k == TK_DOUBLE || t->k == TK_INT || t->k == TK_UINT);
}

static est value_size(cel_v v)
{
    switch (v.t) {
    case CV_STRING: return fixed(cel_utf8_count(v.u.s, v.n));
    case CV_BYTES: return fixed(v.n);
    case CV_LIST: return fixed(v.n);
    case CV_MAP: return fixed(v.sub == MK_PLAIN ? v.u.m->n : 0);
    default: return fixed(1);
    }
}

/* computeSize: computed > literal > path estimator > scalar type > local */
static bool size_of(E *x, const cel_node *n, const info *in, est *out)
{
    if (in->has_size) {
        *out = in->size;
        return true;
    }
    if (n->k == N_LIT && n->val.t != CV_TYPE) {
        *out = value_size(n->val);
        return true;
    }
    if (dra_size(&in->p, out))
        return true;
    if (scalar_type(n->ty)) {
        *out = fixed(1);
        return true;
    }
    if (n->k == N_LOCAL && n->slot < x->nlocals && x->locals[n->slot].has_size) {
        *out = x->locals[n->slot].size;
        return true;
    }
    return false;
}

static est size_or_unknown(E *x, const cel_node *n, const info *in)
{
    est s;
    return size_of(x, n, in, &s) ? s : UNKNOWN;
}

static info estimate(E *x, const cel_node *n);

static bool fname(const cel_node *n, const char *s)
{
    return n->nlen == strlen(s) && !memcmp(n->name, s, n->nlen);
}

static uint8_t field_code(const char *f, uint32_t n)
{
    if (n == 10 && !memcmp(f, "attributes", 10))
        return P_ATTRS;
    if (n == 8 && !memcmp(f, "capacity", 8))
        return P_CAPS;
    if (n == 6 && !memcmp(f, "driver", 6))
        return P_DRIVER;
    if (n == 24 && !memcmp(f, "allowMultipleAllocations", 24))
        return P_MULTI;
    return P_FIELD;
}

/* Cost of one overload of a call (cel-go functionCost), args included. */
static est overload_cost(E *x, const cel_node *n, const cel_overload *o, const cel_node **argn,
                         const info *argi, int na, est argsum, bool *rsz_set, est *rsz)
{
    const char *fn = cel_funcs(NULL)[o->fn].name;
    const char *id = o->id;
    bool member = o->member;
    const cel_node *tn = member ? argn[0] : NULL;
    const info *ti = member ? &argi[0] : NULL;
    const cel_node **an = member ? argn + 1 : argn;
    const info *ai = member ? argi + 1 : argi;
    int nargs = member ? na - 1 : na;
    /* DRA includes: linear in the 48 values of an attribute */
    if (!strcmp(fn, "includes") && tn)
        return add((est){0, 48}, argsum);
    /* Kubernetes CostEstimator */
    if (tn && (!strcmp(fn, "lowerAscii") || !strcmp(fn, "upperAscii") || !strcmp(fn, "substring") ||
               !strcmp(fn, "trim"))) {
        est sz = size_or_unknown(x, tn, ti);
        *rsz_set = true;
        *rsz = sz;
        return add(fac(sz, 0.1), argsum);
    }
    if (tn && (!strcmp(fn, "replace") || !strcmp(fn, "split")))
        return add(fac(size_or_unknown(x, tn, ti), 0.2), argsum);
    if (tn && !strcmp(fn, "join")) {
        est ls = size_or_unknown(x, tn, ti);
        est sz = mul(ls, UNKNOWN);
        return add(fac(sz, 0.1), argsum);
    }
    if (tn && nargs >= 1 && (!strcmp(fn, "find") || !strcmp(fn, "findAll"))) {
        est sz = size_or_unknown(x, tn, ti);
        est str = fac(add(sz, fixed(1)), 0.1);
        est re = fac(size_or_unknown(x, an[0], &ai[0]), 0.25);
        return add(mul(str, re), argsum);
    }
    if (nargs >= 1 && (!strcmp(fn, "quantity") || !strcmp(fn, "isQuantity") || !strcmp(fn, "semver") ||
                       !strcmp(fn, "isSemver")))
        return add(fac(size_or_unknown(x, an[0], &ai[0]), 0.1), argsum);
    static const char *const one[] = {"sign", "asInteger", "isInteger", "asApproximateFloat",
                                      "isGreaterThan", "isLessThan", "compareTo", "add",
                                      "sub", "major", "minor", "patch"};
    for (size_t i = 0; i < DE_ARRAY_LEN(one); i++)
        if (!strcmp(fn, one[i]))
            return add(fixed(1), argsum);
    if (!strcmp(fn, "_==_") && na == 2 && argn[0]->ty && argn[1]->ty && argn[0]->ty->k == argn[1]->ty->k &&
        (argn[0]->ty->k == TK_QTY || argn[0]->ty->k == TK_SEMVER))
        return add(fixed(1), argsum);
    /* cel-go defaults */
    if (!strcmp(id, "string_to_bytes") || !strcmp(id, "bytes_to_string"))
        return add(fac(size_or_unknown(x, an[0], &ai[0]), 0.1), argsum);
    if ((!strcmp(id, "starts_with_string") || !strcmp(id, "ends_with_string")) && nargs == 1)
        return add(fac(size_or_unknown(x, an[0], &ai[0]), 0.1), argsum);
    if (!strcmp(id, "in_list") && nargs == 2)
        return add(size_or_unknown(x, an[1], &ai[1]), argsum);
    if (!strcmp(id, "matches_string") && tn && nargs == 1) {
        est str = fac(add(size_or_unknown(x, tn, ti), fixed(1)), 0.1);
        est re = fac(size_or_unknown(x, an[0], &ai[0]), 0.25);
        return add(mul(str, re), argsum);
    }
    if (!strcmp(id, "contains_string") && tn && nargs == 1) {
        est s = fac(size_or_unknown(x, tn, ti), 0.1);
        est sub = fac(size_or_unknown(x, an[0], &ai[0]), 0.1);
        return add(mul(s, sub), argsum);
    }
    if ((!strcmp(id, "add_string") || !strcmp(id, "add_bytes") || !strcmp(id, "add_list")) && na == 2) {
        est rs = add(size_or_unknown(x, argn[0], &argi[0]), size_or_unknown(x, argn[1], &argi[1]));
        *rsz_set = true;
        *rsz = rs;
        if (!strcmp(id, "add_list"))
            return add(fixed(1), argsum);
        return add(fac(rs, 0.1), argsum);
    }
    static const char *const trav[] = {"equals", "not_equals", "less_string", "greater_string",
                                       "less_equals_string", "greater_equals_string", "less_bytes",
                                       "greater_bytes", "less_equals_bytes", "greater_equals_bytes"};
    bool is_trav = false;
    for (size_t i = 0; i < DE_ARRAY_LEN(trav); i++)
        is_trav = is_trav || !strcmp(id, trav[i]);
    if (na == 2 && is_trav) {
        est l = size_or_unknown(x, argn[0], &argi[0]), r = size_or_unknown(x, argn[1], &argi[1]);
        uint64_t smax = l.max < r.max ? l.max : r.max;
        return add(fac((est){smax > 0 ? 1 : 0, smax}, 0.1), argsum);
    }
    (void)n;
    return add(fixed(1), argsum);
}

static info est_call(E *x, const cel_node *n)
{
    info r = {0};
    const cel_node *argn[9];
    info argi[9];
    int na = 0;
    est sum = {0, 0}, argsum = {0, 0};
    if (n->a) {
        argn[na] = n->a;
        argi[na] = estimate(x, n->a);
        sum = add(sum, argi[na].cost);
        na++;
    }
    for (uint32_t i = 0; i < n->nargs && na < 9; i++) {
        argn[na] = n->args[i];
        argi[na] = estimate(x, n->args[i]);
        argsum = add(argsum, argi[na].cost);
        na++;
    }
    if (fname(n, "dyn") && n->nargs == 1) { /* maybeUnwrapDynCall */
        r = argi[na - 1];
        r.cost = add(fixed(1), argi[na - 1].cost);
        return r;
    }
    const cel_overload *ovs = cel_overloads(NULL);
    est fn = {UINT64_MAX, 0};
    bool rsz_set = false;
    est rsz = {0, 0};
    for (uint16_t k = 0; k < n->novl; k++) {
        const cel_overload *o = &ovs[n->ovl[k]];
        bool s = false;
        est sz = {0, 0};
        fn = uni(fn, overload_cost(x, n, o, argn, argi, na, argsum, &s, &sz));
        if (s) {
            rsz = rsz_set ? uni(rsz, sz) : sz;
            rsz_set = true;
        }
        if (!strcmp(o->id, "index_list") || !strcmp(o->id, "index_map")) {
            bool list = !strcmp(o->id, "index_list");
            rsz_set = argi[0].ent.set;
            rsz = argi[0].ent.val;
            r.p = push_path(argi[0].p, list ? P_ITEMS : P_VALUES);
        }
    }
    if (!n->novl)
        fn = fixed(0);
    r.cost = add(sum, fn);
    if (rsz_set) {
        r.has_size = true;
        r.size = rsz;
    }
    return r;
}

static void push_local(E *x, uint32_t slot, local l)
{
    if (slot >= x->nlocals) {
        uint32_t nn = slot + 8;
        x->locals = de_xrealloc(x->locals, nn * sizeof *x->locals);
        memset(x->locals + x->nlocals, 0, (nn - x->nlocals) * sizeof *x->locals);
        x->nlocals = nn;
    }
    x->locals[slot] = l;
}

static info est_comprehension(E *x, const cel_node *n)
{
    info r = {0};
    info rg = estimate(x, n->a);
    est sum = rg.cost;
    bool is_map_range = n->a->ty && n->a->ty->k == TK_MAP;
    /* accumulator initialiser: literals cost 0, the empty list of map/filter 10 */
    if (n->k == N_MAP_M || n->k == N_MAP_FILTER || n->k == N_FILTER)
        sum = add(sum, fixed(10));
    local it = {0};
    it.p = push_path(rg.p, is_map_range ? P_KEYS : P_ITEMS);
    if (rg.ent.set) {
        it.has_size = true;
        it.size = is_map_range ? rg.ent.key : rg.ent.val;
    }
    push_local(x, n->slot, it);
    info b = estimate(x, n->b);
    info c = n->c ? estimate(x, n->c) : (info){0};
    est loop = {0, 0}, step;
    switch (n->k) {
    case N_ALL:
        loop = fixed(2);
        step = (est){1, add_sat(1, b.cost.max)};
        break;
    case N_EXISTS:
        loop = fixed(3);
        step = (est){1, add_sat(1, b.cost.max)};
        break;
    case N_EXISTS_ONE:
        step = add(b.cost, (est){1, 2});
        break;
    case N_MAP_M:
        step = add(fixed(12), b.cost);
        break;
    case N_MAP_FILTER:
        step = add(b.cost, uni(add(fixed(12), c.cost), fixed(1)));
        break;
    default: /* filter */
        step = add(b.cost, uni(fixed(13), fixed(1)));
        break;
    }
    est result = n->k == N_EXISTS_ONE ? fixed(2) : fixed(1);
    sum = add(sum, result);
    est cnt = size_or_unknown(x, n->a, &rg);
    sum = add(sum, mul(cnt, add(step, loop)));
    r.cost = sum;
    if (n->k == N_MAP_M || n->k == N_MAP_FILTER || n->k == N_FILTER) {
        r.has_size = true;
        r.size = cnt;
    } else {
        r.has_size = true;
        r.size = fixed(1);
    }
    return r;
}

static info estimate(E *x, const cel_node *n)
{
    info r = {0};
    if (++x->depth > 2000) {
        r.cost = UNKNOWN;
        x->depth--;
        return r;
    }
    switch (n->k) {
    case N_LIT:
        if (n->val.t == CV_TYPE) {
            r.cost = fixed(1); /* a type name is an identifier upstream */
        } else if (n->val.t == CV_LIST || n->val.t == CV_MAP) {
            /* a folded literal: still built at runtime in the estimate */
            r.cost = fixed(n->val.t == CV_LIST ? 10 : 30);
            r.ent.set = true;
            if (n->val.t == CV_LIST) {
                est v = n->val.n ? (est){UINT64_MAX, 0} : (est){0, 0};
                for (uint32_t i = 0; i < n->val.n; i++)
                    v = uni(v, value_size(n->val.u.items[i]));
                r.ent.key = fixed(1);
                r.ent.val = v;
            } else {
                const cel_map *m = n->val.sub == MK_PLAIN ? n->val.u.m : NULL;
                uint32_t cnt = m ? m->n : 0;
                est k = cnt ? (est){UINT64_MAX, 0} : (est){0, 0}, v = k;
                for (uint32_t i = 0; i < cnt; i++) {
                    k = uni(k, value_size(m->keys[i]));
                    v = uni(v, value_size(m->vals[i]));
                }
                r.ent.key = k;
                r.ent.val = v;
            }
        } else if (n->flags & NF_FOLDED) {
            r.cost = fixed(1);
        }
        break;
    case N_LOCAL:
        r.cost = fixed(1);
        if (n->slot < x->nlocals) {
            r.p = x->locals[n->slot].p;
            r.ent = x->locals[n->slot].ent;
        }
        break;
    case N_GLOBAL:
        r.cost = fixed(1);
        break;
    case N_DEVICE:
        r.cost = fixed(1);
        r.p.n = 1;
        r.p.e[0] = P_DEVICE;
        break;
    case N_SELECT: {
        info o = estimate(x, n->a);
        r.cost = o.cost;
        int k = n->a->ty ? n->a->ty->k : TK_DYN;
        if (k == TK_MAP || k == TK_DEVICE || k == TK_PARAM || k == TK_QTY || k == TK_SEMVER)
            r.cost = add(r.cost, fixed(1));
        r.p = push_path(o.p, field_code(n->name, n->nlen));
        break;
    }
    case N_HAS:
        r.cost = estimate(x, n->a).cost;
        break;
    case N_DEVMAP:
        r.cost = fixed(3);
        r.p = (path){3, {P_DEVICE, n->flags == MK_ATTR_DOM ? P_ATTRS : P_CAPS, P_VALUES}};
        break;
    case N_ATTR:
    case N_CAP:
        r.cost = fixed(4);
        r.p = (path){4, {P_DEVICE, n->k == N_ATTR ? P_ATTRS : P_CAPS, P_VALUES, P_FIELD}};
        break;
    case N_CALL:
        r = est_call(x, n);
        break;
    case N_LIST: {
        est sum = {0, 0}, v = n->nargs ? (est){UINT64_MAX, 0} : (est){0, 0};
        for (uint32_t i = 0; i < n->nargs; i++) {
            info e = estimate(x, n->args[i]);
            sum = add(sum, e.cost);
            v = uni(v, size_or_unknown(x, n->args[i], &e));
        }
        r.cost = add(sum, fixed(10));
        r.ent = (entry){true, fixed(1), v};
        break;
    }
    case N_MAP: {
        est sum = {0, 0}, k = n->nargs ? (est){UINT64_MAX, 0} : (est){0, 0}, v = k;
        for (uint32_t i = 0; i + 1 < n->nargs; i += 2) {
            info ke = estimate(x, n->args[i]), ve = estimate(x, n->args[i + 1]);
            sum = add(add(sum, ke.cost), ve.cost);
            k = uni(k, size_or_unknown(x, n->args[i], &ke));
            v = uni(v, size_or_unknown(x, n->args[i + 1], &ve));
        }
        r.cost = add(sum, fixed(30));
        r.ent = (entry){true, k, v};
        break;
    }
    case N_AND:
    case N_OR: {
        info l = estimate(x, n->a), rr = estimate(x, n->b);
        r.cost = (est){l.cost.min, add_sat(l.cost.max, rr.cost.max)};
        break;
    }
    case N_COND: {
        info c = estimate(x, n->a), t = estimate(x, n->b), f = estimate(x, n->c);
        r.cost = add(c.cost, uni(t.cost, f.cost));
        est ts, fs;
        if (size_of(x, n->b, &t, &ts) && size_of(x, n->c, &f, &fs)) {
            r.has_size = true;
            r.size = uni(ts, fs);
        }
        break;
    }
    case N_ALL:
    case N_EXISTS:
    case N_EXISTS_ONE:
    case N_MAP_M:
    case N_MAP_FILTER:
    case N_FILTER:
        r = est_comprehension(x, n);
        break;
    case N_BIND: {
        info init = estimate(x, n->a);
        local l = {0};
        l.p = init.p;
        l.ent = init.ent;
        est s;
        if (size_of(x, n->a, &init, &s)) {
            l.has_size = true;
            l.size = s;
        }
        push_local(x, n->slot, l);
        info body = estimate(x, n->b);
        r = body;
        r.cost = add(add(fixed(10), init.cost), body.cost);
        break;
    }
    default:
        break;
    }
    x->depth--;
    return r;
}

uint64_t cel_estimate(cel_env *env, const cel_prog *p)
{
    E x = {0};
    x.env = env;
    info r = estimate(&x, p->root);
    free(x.locals);
    return r.cost.max;
}
