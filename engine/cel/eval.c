/*
 * eval.c - the CEL evaluator: a recursive walk over the checked AST.
 *
 * Errors are values and propagate through strict calls (the leftmost error
 * argument wins); && and || are commutative over errors; macros follow
 * cel-go's comprehensions, including what they cost.  Cost is counted the
 * way cel-go's runtime cost tracker counts it under Kubernetes (a variable
 * or a field/index step 1, constants 0, has() 0, list literal 10, map
 * literal 30, calls by the rule check.c resolved per call node), and the limit is
 * checked after every step; exceeding it aborts the whole evaluation with a
 * longjmp, since CEL has no construct that may absorb it.
 *
 * A comprehension charges what cel-go's expansion would: the loop
 * condition and step per iteration (`all`: @not_strictly_false(@result)
 * and @result && p; `exists`: its negation; `exists_one`, `map`, `filter`:
 * a constant condition and a conditional step that appends to the
 * accumulator), then the result.  cel.bind is a loop over an empty constant
 * list, so only its initialiser and body cost anything.
 */
#include "cel_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

_Noreturn void cel_abort(cel_ctx *c, de_rc rc, const char *msg)
{
    c->abort_rc = rc;
    c->abort_msg = msg;
    longjmp(c->abort, 1);
}

void *cel_alloc(cel_ctx *c, size_t n)
{
    void *p = de_arena_alloc(c->a, n ? n : 1);
    if (!p)
        cel_abort(c, DE_ENOMEM, "CEL evaluation exceeded its memory limit");
    return p;
}

static cel_v verr(cel_ctx *c, const cel_node *at, int kind, const char *fmt, va_list ap)
{
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    cel_errv *e = cel_alloc(c, sizeof *e);
    size_t n = strlen(buf);
    char *m = cel_alloc(c, n + 1);
    memcpy(m, buf, n + 1);
    e->msg = m;
    e->pos = at ? at->pos : 0;
    e->kind = (uint8_t)kind;
    cel_v v = {.t = CV_ERR};
    v.u.err = e;
    return v;
}

cel_v cel_err(cel_ctx *c, const cel_node *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cel_v v = verr(c, at, CE_GENERIC, fmt, ap);
    va_end(ap);
    return v;
}

cel_v cel_err_kind(cel_ctx *c, const cel_node *at, int kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cel_v v = verr(c, at, kind, fmt, ap);
    va_end(ap);
    return v;
}

cel_v cel_no_overload(cel_ctx *c, const cel_node *at)
{
    if (at && at->k == N_CALL && at->name)
        return cel_err_kind(c, at, CE_NO_OVERLOAD, "no such overload: %.*s", (int)at->nlen, at->name);
    return cel_err_kind(c, at, CE_NO_OVERLOAD, "no such overload");
}

cel_v cel_maybe_no_overload(cel_ctx *c, const cel_node *at, cel_v arg)
{
    return arg.t == CV_ERR ? arg : cel_no_overload(c, at);
}

/* ---- cost ---------------------------------------------------------------------- */

uint64_t cel_actual_size(cel_v v)
{
    switch (v.t) {
    case CV_STRING: return cel_utf8_count(v.u.s, v.n);
    case CV_BYTES: return v.n;
    case CV_LIST: return v.n;
    case CV_MAP:
        if (v.sub == MK_PLAIN)
            return v.u.m->n;
        return 1; /* lazy device maps: counted by the caller when it matters */
    case CV_DEVICE: return 4;
    default: return 1;
    }
}

static uint64_t ceil_f(double x) { return (uint64_t)ceil(x); }

/* Kubernetes traversalCost: strings by length, containers by content. */
static uint64_t traversal(cel_v v, int depth)
{
    switch (v.t) {
    case CV_STRING:
    case CV_BYTES: return (uint64_t)((double)v.n * 0.1);
    case CV_LIST: {
        uint64_t s = 0;
        for (uint32_t i = 0; i < v.n && depth < 64; i++)
            s += traversal(v.u.items[i], depth + 1);
        return s;
    }
    case CV_MAP:
        if (v.sub == MK_PLAIN) {
            uint64_t s = 0;
            for (uint32_t i = 0; i < v.u.m->n && depth < 64; i++)
                s += traversal(v.u.m->keys[i], depth + 1) + traversal(v.u.m->vals[i], depth + 1);
            return s;
        }
        return 1;
    default: return 1;
    }
}

/* ceil(0.1 * size) for a string or bytes: every size from 1 to 10 costs 1,
 * so short values (the usual attribute) need no code point count. */
static inline uint64_t tenth(cel_v v)
{
    if ((v.t == CV_STRING || v.t == CV_BYTES) && v.n <= 10)
        return v.n ? 1 : 0;
    return ceil_f((double)cel_actual_size(v) * 0.1);
}

static uint64_t rule_cost(int rule, const cel_v *args, int nargs, cel_v result)
{
    switch (rule) {
    case CK_ONE: return 1;
    case CK_TRAVERSE0: return nargs >= 1 ? traversal(args[0], 0) : 1;
    case CK_SIZE0_01: return tenth(args[0]);
    case CK_SIZE0_02: return ceil_f((double)cel_actual_size(args[0]) * 2 * 0.1);
    case CK_RESULT_02: return ceil_f((double)cel_actual_size(result) * 2 * 0.1);
    case CK_REGEX:
        return ceil_f((1.0 + (double)cel_actual_size(args[0])) * 0.1) *
               ceil_f((double)cel_actual_size(args[1]) * 0.25);
    case CK_TRAVERSE_MIN: {
        cel_v x = args[0], y = args[1];
        bool sx = x.t == CV_STRING || x.t == CV_BYTES, sy = y.t == CV_STRING || y.t == CV_BYTES;
        if (sx && sy && (x.n == 0 || y.n == 0))
            return 0;
        if (sx && sy && (x.n <= 10 || y.n <= 10))
            return 1; /* the shorter one has 1..10 code points */
        uint64_t a = cel_actual_size(x), b = cel_actual_size(y);
        return ceil_f((double)(a < b ? a : b) * 0.1);
    }
    case CK_IN_LIST: return cel_actual_size(args[1]);
    case CK_ADD_STR: return ceil_f((double)(cel_actual_size(args[0]) + cel_actual_size(args[1])) * 0.1);
    case CK_CONTAINS:
        return ceil_f((double)cel_actual_size(args[0]) * 0.1) * ceil_f((double)cel_actual_size(args[1]) * 0.1);
    default: return 1;
    }
}

/* ---- calls ------------------------------------------------------------------------ */

static bool rt_match(const cel_type *t, cel_v v)
{
    switch (t->k) {
    case TK_DYN:
    case TK_ANY:
    case TK_PARAM:
    case TK_ERROR: return true;
    case TK_NULL: return v.t == CV_NULL;
    case TK_BOOL: return v.t == CV_BOOL;
    case TK_INT: return v.t == CV_INT;
    case TK_UINT: return v.t == CV_UINT;
    case TK_DOUBLE: return v.t == CV_DOUBLE;
    case TK_STRING: return v.t == CV_STRING;
    case TK_BYTES: return v.t == CV_BYTES;
    case TK_LIST: return v.t == CV_LIST;
    case TK_MAP: return v.t == CV_MAP || v.t == CV_DEVICE;
    case TK_TYPE: return v.t == CV_TYPE;
    case TK_QTY: return v.t == CV_QTY;
    case TK_SEMVER: return v.t == CV_SEMVER;
    case TK_DEVICE: return v.t == CV_DEVICE;
    default: return false;
    }
}

static cel_v eval_call(cel_ctx *c, const cel_node *n)
{
    cel_v args[8];
    int na = 0;
    if (n->a)
        args[na++] = cel_eval_node(c, n->a);
    for (uint32_t i = 0; i < n->nargs && na < 8; i++)
        args[na++] = cel_eval_node(c, n->args[i]);
    for (int i = 0; i < na; i++)
        if (args[i].t == CV_ERR)
            return args[i];
    /* the overload was resolved at compile time (check.c: resolve) unless
     * several candidates remain; then the runtime types choose */
    const cel_overload *o = n->o1;
    if (!o) {
        const cel_overload *ovs = cel_overloads(NULL);
        for (uint16_t k = 0; k < n->novl && !o; k++) {
            const cel_overload *cand = &ovs[n->ovl[k]];
            bool ok = true;
            for (int i = 0; i < na && ok; i++)
                ok = rt_match(cand->params[i], args[i]);
            if (ok)
                o = cand;
        }
        if (!o)
            return cel_no_overload(c, n);
    }
    cel_v r;
    switch (o->lib) {
    case CL_STD: r = cel_call_std(c, n, o->impl, args, na); break;
    case CL_STR: r = cel_call_str(c, n, o->impl, args, na); break;
    default: r = cel_call_k8s(c, n, o->impl, args, na); break;
    }
    if (n->flags & NF_CONST_SET)
        return r;
    int rule = n->crule;
    if (rule == CK_EQ_K8S)
        rule = (args[0].t == CV_QTY || args[0].t == CV_SEMVER) ? CK_ONE : n->crule_alt;
    cel_charge(c, rule_cost(rule, args, na, r));
    return r;
}

/* ---- selection ---------------------------------------------------------------------- */

static cel_v select_field(cel_ctx *c, const cel_node *n, cel_v v)
{
    if (v.t == CV_ERR)
        return v;
    if (v.t == CV_DEVICE)
        return cel_device_field_at(c, n, v, n->dfield);
    if (v.t == CV_MAP) {
        cel_v out;
        if (cel_map_find(c, v, cv_str(n->name, n->nlen), &out))
            return out;
        return cel_err_kind(c, n, CE_NO_SUCH_KEY, "no such key: %.*s", (int)n->nlen, n->name);
    }
    return cel_err(c, n, "type '%s' does not support field selection", cel_type_name(cel_type_of(v)));
}

static cel_v has_field(cel_ctx *c, const cel_node *n, cel_v v)
{
    if (v.t == CV_ERR)
        return v;
    if (v.t == CV_DEVICE)
        return cv_bool(n->dfield != CD_UNKNOWN);
    if (v.t == CV_MAP) {
        cel_v out;
        return cv_bool(cel_map_find(c, v, cv_str(n->name, n->nlen), &out));
    }
    return cel_err(c, n, "invalid type for field selection: %s", cel_type_name(cel_type_of(v)));
}

/* ---- logic --------------------------------------------------------------------------- */

static cel_v eval_logic(cel_ctx *c, const cel_node *n, bool is_and)
{
    bool absorb = !is_and; /* && is decided by false, || by true */
    cel_v l = cel_eval_node(c, n->a);
    if (l.t == CV_BOOL && l.u.b == absorb)
        return l;
    cel_v r = cel_eval_node(c, n->b);
    if (r.t == CV_BOOL && r.u.b == absorb)
        return r;
    if (l.t == CV_BOOL && r.t == CV_BOOL)
        return cv_bool(!absorb);
    if (l.t != CV_BOOL)
        return l.t == CV_ERR ? l : cel_no_overload(c, n);
    return r.t == CV_ERR ? r : cel_no_overload(c, n);
}

/* ---- comprehensions ---------------------------------------------------------------------- */

typedef struct acc {
    cel_v *items;
    uint32_t n, cap;
} acc;

static void acc_push(cel_ctx *c, acc *a, cel_v v)
{
    if (a->n == a->cap) {
        uint32_t nc = a->cap ? a->cap * 2 : 8;
        cel_v *ni = cel_alloc(c, nc * sizeof *ni);
        if (a->n)
            memcpy(ni, a->items, a->n * sizeof *ni);
        a->items = ni;
        a->cap = nc;
    }
    a->items[a->n++] = v;
}

static cel_v eval_comprehension(cel_ctx *c, const cel_node *n)
{
    cel_v range = cel_eval_node(c, n->a);
    if (range.t == CV_ERR)
        return range;
    bool is_map = range.t == CV_MAP || range.t == CV_DEVICE;
    if (range.t != CV_LIST && !is_map)
        return cel_err(c, n->a, "got '%s', expected iterable type", cel_go_type_name(range));
    if (range.t == CV_DEVICE)
        range = cel_materialize(c, range);
    uint32_t count = is_map ? cel_map_size(c, range) : range.n;
    cel_v *slot = &c->slots[n->slot];

    switch (n->k) {
    case N_ALL:
    case N_EXISTS: {
        bool is_all = n->k == N_ALL;
        cel_v accu = cv_bool(is_all);
        for (uint32_t i = 0; i < count; i++) {
            /* loop condition: @not_strictly_false(@result) (exists: of !@result) */
            cel_charge(c, is_all ? 2 : 3);
            if (accu.t == CV_BOOL && accu.u.b != is_all)
                break;
            *slot = is_map ? cel_map_key_at(c, range, i) : range.u.items[i];
            cel_charge(c, 1); /* @result in the step */
            cel_v p = cel_eval_node(c, n->b);
            /* step: @result && p  (exists: @result || p) */
            bool absorb = !is_all;
            if (accu.t == CV_BOOL && accu.u.b == absorb) {
                /* unreachable: the condition stopped the loop */
            } else if (p.t == CV_BOOL && p.u.b == absorb) {
                accu = p;
            } else if (accu.t == CV_BOOL && p.t == CV_BOOL) {
                accu = cv_bool(!absorb);
            } else if (accu.t != CV_BOOL) {
                /* keep the first error */
            } else {
                accu = p.t == CV_ERR ? p : cel_no_overload(c, n->b);
            }
        }
        cel_charge(c, 1); /* result: @result */
        return accu;
    }
    case N_EXISTS_ONE: {
        int64_t cnt = 0;
        cel_v err = {.t = CV_NULL};
        for (uint32_t i = 0; i < count; i++) {
            *slot = is_map ? cel_map_key_at(c, range, i) : range.u.items[i];
            cel_v p = cel_eval_node(c, n->b);
            if (err.t == CV_ERR) {
                cel_charge(c, 1);
                continue;
            }
            if (p.t == CV_BOOL) {
                if (p.u.b) {
                    cel_charge(c, 2);
                    cnt++;
                } else {
                    cel_charge(c, 1);
                }
            } else {
                err = p.t == CV_ERR ? p : cel_no_overload(c, n->b);
            }
        }
        cel_charge(c, 2); /* @result == 1 */
        if (err.t == CV_ERR)
            return err;
        return cv_bool(cnt == 1);
    }
    case N_MAP_M:
    case N_MAP_FILTER:
    case N_FILTER: {
        acc out = {0};
        for (uint32_t i = 0; i < count; i++) {
            cel_v elem = is_map ? cel_map_key_at(c, range, i) : range.u.items[i];
            *slot = elem;
            if (n->k != N_MAP_M) {
                cel_v p = cel_eval_node(c, n->b);
                if (p.t != CV_BOOL)
                    return p.t == CV_ERR ? p : cel_no_overload(c, n->b);
                if (!p.u.b) {
                    cel_charge(c, 1);
                    continue;
                }
            }
            cel_v t;
            if (n->k == N_FILTER) {
                cel_charge(c, 1); /* the iteration variable in [x] */
                t = elem;
            } else {
                t = cel_eval_node(c, n->k == N_MAP_M ? n->b : n->c);
                if (t.t == CV_ERR)
                    return t;
            }
            cel_charge(c, 12); /* @result + [t]: variable, list, add */
            acc_push(c, &out, t);
        }
        cel_charge(c, 1);
        return cv_list(out.items, out.n);
    }
    default:
        return cel_err(c, n, "internal error: unknown comprehension");
    }
}

/* ---- nodes ---------------------------------------------------------------------------------- */

cel_v cel_eval_node(cel_ctx *c, const cel_node *n)
{
    switch (n->k) {
    case N_LIT:
        return n->val;
    case N_LOCAL:
        cel_charge(c, 1);
        return c->slots[n->slot];
    case N_GLOBAL:
        cel_charge(c, 1);
        return c->env->globals[n->slot].val;
    case N_DEVICE: {
        cel_charge(c, 1);
        if (!c->dev)
            return cel_err(c, n, "no such attribute: device (no device given)");
        cel_v v = {.t = CV_DEVICE};
        v.u.dev = c->dev;
        return v;
    }
    case N_SELECT: {
        cel_v v = cel_eval_node(c, n->a);
        cel_charge(c, 1);
        return select_field(c, n, v);
    }
    case N_HAS:
        return has_field(c, n, cel_eval_node(c, n->a));
    case N_DEVMAP: {
        cel_charge(c, 3);
        if (!c->dev)
            return cel_err(c, n, "no such attribute: device (no device given)");
        cel_v v = {.t = CV_MAP, .sub = n->flags, .n = n->id1};
        v.u.dev = c->dev;
        return v;
    }
    case N_ATTR:
        cel_charge(c, 4);
        if (!c->dev)
            return cel_err(c, n, "no such attribute: device (no device given)");
        return cel_device_attr(c, n, n->id1, n->id2, n->name, n->nlen);
    case N_CAP:
        cel_charge(c, 4);
        if (!c->dev)
            return cel_err(c, n, "no such attribute: device (no device given)");
        return cel_device_cap(c, n, n->id1, n->id2, n->name, n->nlen);
    case N_CALL:
        return eval_call(c, n);
    case N_AND:
        return eval_logic(c, n, true);
    case N_OR:
        return eval_logic(c, n, false);
    case N_COND: {
        cel_v cnd = cel_eval_node(c, n->a);
        if (cnd.t == CV_BOOL)
            return cel_eval_node(c, cnd.u.b ? n->b : n->c);
        return cnd.t == CV_ERR ? cnd : cel_no_overload(c, n);
    }
    case N_LIST: {
        cel_v *items = cel_alloc(c, (n->nargs ? n->nargs : 1) * sizeof *items);
        for (uint32_t i = 0; i < n->nargs; i++) {
            items[i] = cel_eval_node(c, n->args[i]);
            if (items[i].t == CV_ERR)
                return items[i];
        }
        cel_charge(c, 10);
        return cv_list(items, n->nargs);
    }
    case N_MAP: {
        uint32_t cnt = n->nargs / 2;
        cel_v *keys = cel_alloc(c, (cnt ? cnt : 1) * sizeof *keys);
        cel_v *vals = cel_alloc(c, (cnt ? cnt : 1) * sizeof *vals);
        for (uint32_t i = 0; i < cnt; i++) {
            keys[i] = cel_eval_node(c, n->args[2 * i]);
            if (keys[i].t == CV_ERR)
                return keys[i];
            vals[i] = cel_eval_node(c, n->args[2 * i + 1]);
            if (vals[i].t == CV_ERR)
                return vals[i];
        }
        cel_charge(c, 30);
        bool oom = false;
        cel_v m = cel_map_build(c->a, keys, vals, cnt, &oom);
        if (oom)
            cel_abort(c, DE_ENOMEM, "CEL evaluation exceeded its memory limit");
        return m;
    }
    case N_ALL:
    case N_EXISTS:
    case N_EXISTS_ONE:
    case N_MAP_M:
    case N_MAP_FILTER:
    case N_FILTER:
        return eval_comprehension(c, n);
    case N_BIND:
        c->slots[n->slot] = cel_eval_node(c, n->a);
        return cel_eval_node(c, n->b);
    default:
        return cel_err(c, n, "internal error: unresolved expression");
    }
}

bool cel_run(cel_ctx *c, cel_v *out)
{
    if (setjmp(c->abort)) {
        return false;
    }
    *out = cel_eval_node(c, c->prog->root);
    return true;
}
