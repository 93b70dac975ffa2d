/*
 * check.c - the CEL type checker, as the Kubernetes environment runs it.
 *
 * Types unify the way cel-go's checker does (checker/types.go): type
 * parameters of an overload are instantiated fresh at each call site, a
 * substitution maps them to types, and a trial assignment that fails is
 * rolled back (an undo log instead of cel-go's copied mapping).  dyn and
 * google.protobuf.Any (the 1.31 attribute type) unify with everything;
 * list and map literals must be homogeneous (HomogeneousAggregateLiterals);
 * comprehension ranges must be a list, a map or dyn.
 *
 * Besides checking, this pass resolves names (locals to slots, declared
 * variables, type names to constants), records for each call the overloads
 * that matched statically (the evaluator dispatches among them), fuses
 * `device.attributes["d"].x` chains into one node with interned ids, and
 * does what cel-go's OptOptimize does at program planning: constant list
 * and map literals become constants, conversions of constants are computed
 * (an error there is a compile-time error, as Kubernetes reports it), and
 * constant regular expressions are compiled and validated.
 */
#include "cel_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cel_type T_ATTR_IN_DYN = {TK_MAP, 0, &cel_t_string, &cel_t_dyn};
static const cel_type T_ATTRS_DYN = {TK_MAP, 0, &cel_t_string, &T_ATTR_IN_DYN};
static const cel_type T_ATTR_IN_ANY = {TK_MAP, 0, &cel_t_string, &cel_t_any};
static const cel_type T_ATTRS_ANY = {TK_MAP, 0, &cel_t_string, &T_ATTR_IN_ANY};
static const cel_type T_CAP_IN = {TK_MAP, 0, &cel_t_string, &cel_t_qty};
static const cel_type T_CAPS = {TK_MAP, 0, &cel_t_string, &T_CAP_IN};

typedef struct scope_ent {
    const char *name;
    uint32_t nlen;
    const cel_type *ty;
    uint32_t slot;
} scope_ent;

typedef struct C {
    cel_env *env;
    cel_prog *p;
    de_arena *a;
    de_err *e;
    bool failed;
    cel_unify u;
    scope_ent *scope;
    uint32_t nscope, capscope;
    uint32_t maxslots;
} C;

static void fail(C *c, uint32_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(C *c, uint32_t pos, const char *fmt, ...)
{
    if (c->failed)
        return;
    c->failed = true;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line, col;
    cel_pos_linecol(c->p->text, c->p->len, pos, &line, &col);
    de_errf(c->e, DE_EINVAL, "ERROR: <input>:%d:%d: %s", line, col, msg);
    if (c->e) {
        c->e->line = line;
        c->e->col = col;
    }
}

static const char *tname(C *c, const cel_type *t)
{
    de_buf b;
    de_buf_init(&b, 4096);
    cel_type_format(t, &b);
    char *s = de_arena_strdup(c->a, de_buf_str(&b));
    de_buf_free(&b);
    return s ? s : "?";
}

/* ---- scopes ---------------------------------------------------------------------- */

static uint32_t push_scope(C *c, const char *name, uint32_t nlen, const cel_type *ty)
{
    if (c->nscope == c->capscope) {
        uint32_t nc = c->capscope ? c->capscope * 2 : 16;
        c->scope = de_xrealloc(c->scope, nc * sizeof *c->scope);
        c->capscope = nc;
    }
    uint32_t slot = c->nscope;
    c->scope[c->nscope++] = (scope_ent){name, nlen, ty, slot};
    if (c->nscope > c->maxslots)
        c->maxslots = c->nscope;
    return slot;
}

static bool name_eq(const char *a, uint32_t an, const char *b)
{
    return an == strlen(b) && !memcmp(a, b, an);
}

/* ---- checking ------------------------------------------------------------------------ */

static void check(C *c, cel_node *n);

static void set_const(C *c, cel_node *n, cel_v v, const cel_type *ty)
{
    (void)c;
    n->k = N_LIT;
    n->val = v;
    n->ty = ty;
}

static const struct {
    const char *name;
    int rt;
    int tk;
} type_idents[] = {
    {"int", CV_INT, TK_INT}, {"uint", CV_UINT, TK_UINT}, {"double", CV_DOUBLE, TK_DOUBLE},
    {"bool", CV_BOOL, TK_BOOL}, {"string", CV_STRING, TK_STRING}, {"bytes", CV_BYTES, TK_BYTES},
    {"list", CV_LIST, TK_LIST}, {"map", CV_MAP, TK_MAP}, {"null_type", CV_NULL, TK_NULL},
    {"type", CV_TYPE, TK_TYPE},
};

static void check_ident(C *c, cel_node *n)
{
    if (!(n->flags & NF_LEADING_DOT)) {
        for (uint32_t i = c->nscope; i-- > 0;) {
            scope_ent *s = &c->scope[i];
            if (s->nlen == n->nlen && !memcmp(s->name, n->name, n->nlen)) {
                n->k = N_LOCAL;
                n->slot = s->slot;
                n->ty = s->ty;
                return;
            }
        }
    }
    for (uint32_t i = 0; i < c->env->nglobals; i++) {
        if (name_eq(n->name, n->nlen, c->env->globals[i].name)) {
            n->k = N_GLOBAL;
            n->slot = i;
            n->ty = c->env->globals[i].type;
            return;
        }
    }
    if (!c->env->plain && name_eq(n->name, n->nlen, "device")) {
        n->k = N_DEVICE;
        n->ty = &cel_t_device;
        return;
    }
    for (size_t i = 0; i < DE_ARRAY_LEN(type_idents); i++) {
        if (name_eq(n->name, n->nlen, type_idents[i].name)) {
            const cel_type *inner;
            switch (type_idents[i].tk) {
            case TK_LIST: inner = cel_u_mktype(&c->u, TK_LIST, &cel_t_dyn, NULL); break;
            case TK_MAP: inner = cel_u_mktype(&c->u, TK_MAP, &cel_t_dyn, &cel_t_dyn); break;
            case TK_TYPE: inner = &cel_t_type; break;
            default: inner = cel_u_mktype(&c->u, type_idents[i].tk, NULL, NULL); break;
            }
            set_const(c, n, cv_type(type_idents[i].rt), cel_u_mktype(&c->u, TK_TYPE, inner, NULL));
            return;
        }
    }
    n->ty = &cel_t_error;
    fail(c, n->pos, "undeclared reference to '%.*s' (in container '')", (int)n->nlen, n->name);
}

/* Field type of `device`, or NULL. */
static const cel_type *device_field(C *c, const char *f, uint32_t n)
{
    if (name_eq(f, n, "driver"))
        return &cel_t_string;
    if (name_eq(f, n, "attributes"))
        return c->env->attr_any ? &T_ATTRS_ANY : &T_ATTRS_DYN;
    if (name_eq(f, n, "capacity"))
        return &T_CAPS;
    if (c->env->has_multi && name_eq(f, n, "allowMultipleAllocations"))
        return &cel_t_bool;
    return NULL;
}

static const cel_type *select_type(C *c, cel_node *n, cel_node *operand)
{
    const cel_type *t = cel_u_subst(&c->u, operand->ty, false);
    switch (t->k) {
    case TK_MAP:
        return t->p1;
    case TK_DEVICE: {
        const cel_type *f = device_field(c, n->name, n->nlen);
        if (!f) {
            fail(c, n->pos, "undefined field '%.*s'", (int)n->nlen, n->name);
            return &cel_t_error;
        }
        return f;
    }
    case TK_PARAM:
        cel_u_assignable(&c->u, &cel_t_dyn, t);
        return &cel_t_dyn;
    default:
        if (!cel_t_is_dyn_or_err(t))
            fail(c, n->pos, "type '%s' does not support field selection", tname(c, t));
        return &cel_t_dyn;
    }
}

/* Is n `device.attributes` or `device.capacity`? Returns MK_ATTR_DOM /
 * MK_CAP_DOM, or -1. */
static int devmap_base(const cel_node *n)
{
    if (n->k != N_SELECT || !n->a || n->a->k != N_DEVICE)
        return -1;
    if (name_eq(n->name, n->nlen, "attributes"))
        return MK_ATTR_DOM;
    if (name_eq(n->name, n->nlen, "capacity"))
        return MK_CAP_DOM;
    return -1;
}

static uint32_t intern(C *c, const char *s, size_t n)
{
    return de_intern(c->env->in, s, n);
}

/* device.attributes["d"] / device.attributes.d -> N_DEVMAP */
static void fuse_devmap(C *c, cel_node *n, cel_node *base, const char *dom, size_t domlen)
{
    int kind = devmap_base(base);
    if (kind < 0 || c->env->plain)
        return;
    n->k = N_DEVMAP;
    n->flags = (uint8_t)kind; /* MK_ATTR_DOM or MK_CAP_DOM */
    n->id1 = intern(c, dom, domlen);
    n->name = dom;
    n->nlen = (uint32_t)domlen;
    n->a = n->b = NULL;
    n->args = NULL;
    n->nargs = 0;
}

/* N_DEVMAP . name / ["name"] -> N_ATTR / N_CAP */
static void fuse_attr(C *c, cel_node *n, cel_node *dm, const char *name, size_t nlen)
{
    if (dm->k != N_DEVMAP)
        return;
    n->k = dm->flags == MK_ATTR_DOM ? N_ATTR : N_CAP;
    n->id1 = dm->id1;
    n->id2 = intern(c, name, nlen);
    n->name = name;
    n->nlen = (uint32_t)nlen;
    n->a = NULL;
    n->args = NULL;
    n->nargs = 0;
    n->flags = 0;
}

static bool qualified(const cel_node *n, char *buf, size_t cap);

/* A selection chain naming a declared variable ("a.b.c" declared as one
 * name) resolves to it, the longest name first (cel-go's qualified
 * identifier resolution). */
static bool resolve_qualified(C *c, cel_node *n)
{
    if (!c->env->nglobals || n->k != N_SELECT)
        return false;
    char q[512];
    if (!qualified(n, q, sizeof q))
        return false;
    /* a local variable shadows the head of the chain */
    const cel_node *h = n;
    while (h->k == N_SELECT)
        h = h->a;
    for (uint32_t i = 0; i < c->nscope; i++)
        if (c->scope[i].nlen == h->nlen && !memcmp(c->scope[i].name, h->name, h->nlen))
            return false;
    for (uint32_t i = 0; i < c->env->nglobals; i++) {
        if (!strcmp(c->env->globals[i].name, q)) {
            n->k = N_GLOBAL;
            n->slot = i;
            n->ty = c->env->globals[i].type;
            n->a = NULL;
            return true;
        }
    }
    return false;
}

static void check_select(C *c, cel_node *n)
{
    if (n->k == N_SELECT && resolve_qualified(c, n))
        return;
    check(c, n->a);
    if (c->failed)
        return;
    const cel_type *rt = select_type(c, n, n->a);
    if (n->k == N_HAS) {
        n->ty = &cel_t_bool;
        return;
    }
    n->ty = cel_u_subst(&c->u, rt, false);
    if (devmap_base(n->a) >= 0)
        fuse_devmap(c, n, n->a, n->name, n->nlen);
    else if (n->a->k == N_DEVMAP)
        fuse_attr(c, n, n->a, n->name, n->nlen);
}

static bool is_const(const cel_node *n) { return n->k == N_LIT; }

/* Qualified name of a target made of identifiers and selections ("a.b"). */
static bool qualified(const cel_node *n, char *buf, size_t cap)
{
    if (n->k == N_IDENT) {
        if (n->nlen + 1 > cap)
            return false;
        memcpy(buf, n->name, n->nlen);
        buf[n->nlen] = 0;
        return true;
    }
    if (n->k == N_SELECT && qualified(n->a, buf, cap)) {
        size_t l = strlen(buf);
        if (l + 1 + n->nlen + 1 > cap)
            return false;
        buf[l] = '.';
        memcpy(buf + l + 1, n->name, n->nlen);
        buf[l + 1 + n->nlen] = 0;
        return true;
    }
    return false;
}

static void fold_conversion(C *c, cel_node *n);
static void check_regex_const(C *c, cel_node *n);

static void check_call(C *c, cel_node *n)
{
    char fname[160];
    if (n->nlen >= 100) {
        fail(c, n->pos, "undeclared reference to '%.*s' (in container '')", 100, n->name);
        return;
    }
    memcpy(fname, n->name, n->nlen);
    fname[n->nlen] = 0;
    if (n->a) {
        char q[128];
        if (qualified(n->a, q, sizeof q)) {
            char full[300];
            snprintf(full, sizeof full, "%s.%s", q, fname);
            if (cel_func_unsupported(full, strlen(full))) {
                fail(c, n->pos, "function '%s' is not supported by draengine (outside the CEL subset for device selectors)", full);
                return;
            }
        }
    }
    int fi = cel_func_find(n->name, n->nlen);
    if (fi < 0 || (cel_funcs(NULL)[fi].avail == AV_INCLUDES && !c->env->has_includes)) {
        if (fi < 0 && cel_func_unsupported(n->name, n->nlen)) {
            fail(c, n->pos, "function '%s' is not supported by draengine (outside the CEL subset for device selectors)", fname);
            return;
        }
        /* cel-go checks arguments before it looks the function up */
        if (n->a)
            check(c, n->a);
        for (uint32_t i = 0; i < n->nargs && !c->failed; i++)
            check(c, n->args[i]);
        fail(c, n->pos, "undeclared reference to '%s' (in container '')", fname);
        n->ty = &cel_t_error;
        return;
    }
    if (n->a)
        check(c, n->a);
    for (uint32_t i = 0; i < n->nargs && !c->failed; i++)
        check(c, n->args[i]);
    if (c->failed)
        return;
    const cel_func *f = &cel_funcs(NULL)[fi];
    const cel_overload *ovs = cel_overloads(NULL);
    n->fn = (uint16_t)fi;

    const cel_type *argt[8];
    uint32_t na = 0;
    if (n->a)
        argt[na++] = n->a->ty;
    for (uint32_t i = 0; i < n->nargs && na < 8; i++)
        argt[na++] = n->args[i]->ty;
    if (n->nargs + (n->a ? 1 : 0) > 8) {
        fail(c, n->pos, "found no matching overload for '%s' (too many arguments)", fname);
        return;
    }

    uint16_t matched[32];
    uint16_t nm = 0;
    const cel_type *result = NULL;
    for (uint16_t k = 0; k < f->count; k++) {
        const cel_overload *o = &ovs[f->first + k];
        if ((o->member != 0) != (n->a != NULL) || o->nparams != na)
            continue;
        const cel_type *vars[2] = {NULL, NULL};
        for (int v = 0; v < o->nparamvars; v++)
            vars[v] = cel_u_fresh(&c->u);
        uint32_t mark = c->u.nundo;
        bool ok = true;
        for (uint32_t i = 0; i < na && ok; i++)
            ok = cel_u_assignable_raw(&c->u, argt[i], cel_u_inst(&c->u, o->params[i], vars));
        if (!ok) {
            cel_u_rollback(&c->u, mark);
            continue;
        }
        if (nm < DE_ARRAY_LEN(matched))
            matched[nm++] = (uint16_t)(f->first + k);
        const cel_type *r = cel_u_subst(&c->u, cel_u_inst(&c->u, o->result, vars), false);
        if (!result)
            result = r;
        else if (!cel_t_is_dyn(result) && !cel_t_exact(r, result))
            result = &cel_t_dyn;
    }
    if (!result) {
        de_buf b;
        de_buf_init(&b, 4096);
        uint32_t i = 0;
        if (n->a) {
            cel_type_format(cel_u_subst(&c->u, argt[0], true), &b);
            de_buf_putc(&b, '.');
            i = 1;
        }
        de_buf_putc(&b, '(');
        for (uint32_t j = i; j < na; j++) {
            if (j > i)
                de_buf_puts(&b, ", ");
            cel_type_format(cel_u_subst(&c->u, argt[j], true), &b);
        }
        de_buf_putc(&b, ')');
        fail(c, n->pos, "found no matching overload for '%s' applied to '%s'", fname, de_buf_str(&b));
        de_buf_free(&b);
        n->ty = &cel_t_error;
        return;
    }
    uint16_t *ol = de_arena_alloc(c->a, nm * sizeof *ol);
    if (!ol) {
        fail(c, n->pos, "expression too large");
        return;
    }
    memcpy(ol, matched, nm * sizeof *ol);
    n->ovl = ol;
    n->novl = nm;
    n->ty = result;

    /* DRA fusion: device.attributes["d"], then ["x"] */
    if (!strcmp(fname, "_[_]") && n->nargs == 2 && is_const(n->args[1]) &&
        n->args[1]->val.t == CV_STRING) {
        cel_node *base = n->args[0];
        const cel_v *key = &n->args[1]->val;
        if (devmap_base(base) >= 0)
            fuse_devmap(c, n, base, key->u.s, key->n);
        else if (base->k == N_DEVMAP)
            fuse_attr(c, n, base, key->u.s, key->n);
        return;
    }
    if (!strcmp(fname, "@in") && n->nargs == 2 && is_const(n->args[1]) &&
        n->args[1]->val.t == CV_LIST) {
        const cel_v *l = &n->args[1]->val;
        bool prim = true;
        for (uint32_t i = 0; i < l->n && prim; i++) {
            int t = l->u.items[i].t;
            prim = t == CV_NULL || t == CV_BOOL || t == CV_INT || t == CV_UINT ||
                   t == CV_DOUBLE || t == CV_STRING;
        }
        if (prim)
            n->flags |= NF_CONST_SET;
    }
    if (!n->a && n->nargs == 1 && is_const(n->args[0]) &&
        (!strcmp(fname, "int") || !strcmp(fname, "uint") || !strcmp(fname, "double") ||
         !strcmp(fname, "string") || !strcmp(fname, "bytes") || !strcmp(fname, "bool") ||
         !strcmp(fname, "type") || !strcmp(fname, "dyn")))
        fold_conversion(c, n);
    if (!strcmp(fname, "matches") || !strcmp(fname, "find") || !strcmp(fname, "findAll"))
        check_regex_const(c, n);
}

static void check_logic(C *c, cel_node *n)
{
    check(c, n->a);
    check(c, n->b);
    if (c->failed)
        return;
    cel_node *ops[2] = {n->a, n->b};
    for (int i = 0; i < 2; i++) {
        if (!cel_u_assignable(&c->u, ops[i]->ty, &cel_t_bool)) {
            fail(c, ops[i]->pos, "expected type 'bool' but found '%s'", tname(c, cel_u_subst(&c->u, ops[i]->ty, true)));
            return;
        }
    }
    n->ty = &cel_t_bool;
}

static void check_cond(C *c, cel_node *n)
{
    check(c, n->a);
    check(c, n->b);
    check(c, n->c);
    if (c->failed)
        return;
    const cel_type *A = cel_u_fresh(&c->u);
    uint32_t mark = c->u.nundo;
    if (!cel_u_assignable_raw(&c->u, n->a->ty, &cel_t_bool) || !cel_u_assignable_raw(&c->u, n->b->ty, A) ||
        !cel_u_assignable_raw(&c->u, n->c->ty, A)) {
        cel_u_rollback(&c->u, mark);
        fail(c, n->pos, "found no matching overload for '_?_:_' applied to '(%s, %s, %s)'",
             tname(c, cel_u_subst(&c->u, n->a->ty, true)), tname(c, cel_u_subst(&c->u, n->b->ty, true)),
             tname(c, cel_u_subst(&c->u, n->c->ty, true)));
        return;
    }
    n->ty = cel_u_subst(&c->u, A, false);
}

/* Element type join: cel-go joins mismatching element types to dyn; the
 * homogeneity rule is a separate validation (homogeneous() below). */
static const cel_type *join(C *c, const cel_type *prev, const cel_type *cur)
{
    if (!prev)
        return cur;
    if (cel_u_assignable(&c->u, prev, cur))
        return cel_t_most_general(prev, cur);
    return &cel_t_dyn;
}

/* Kubernetes' ValidateHomogeneousAggregateLiterals: every element (key,
 * value) of a literal has the same type as the first one. */
static bool homogeneous(C *c, cel_node **items, uint32_t n, uint32_t step)
{
    const cel_type *first = NULL;
    for (uint32_t i = 0; i < n; i += step) {
        const cel_type *t = cel_u_subst(&c->u, items[i]->ty, true);
        if (!first) {
            first = t;
            continue;
        }
        if (!cel_t_exact(first, t)) {
            fail(c, items[i]->pos, "expected type '%s' but found '%s'", tname(c, first), tname(c, t));
            return false;
        }
    }
    return true;
}

static void check_list(C *c, cel_node *n)
{
    const cel_type *et = NULL;
    bool all_const = true;
    for (uint32_t i = 0; i < n->nargs && !c->failed; i++) {
        check(c, n->args[i]);
        if (c->failed)
            return;
        et = join(c, et, n->args[i]->ty);
        all_const = all_const && is_const(n->args[i]);
    }
    if (c->failed || !homogeneous(c, n->args, n->nargs, 1))
        return;
    n->ty = cel_u_mktype(&c->u, TK_LIST, et ? et : cel_u_fresh(&c->u), NULL);
    if (all_const) {
        cel_v *items = de_arena_alloc(c->a, (n->nargs ? n->nargs : 1) * sizeof *items);
        if (!items) {
            fail(c, n->pos, "expression too large");
            return;
        }
        for (uint32_t i = 0; i < n->nargs; i++)
            items[i] = n->args[i]->val;
        set_const(c, n, cv_list(items, n->nargs), n->ty);
    }
}

static void check_map(C *c, cel_node *n)
{
    const cel_type *kt = NULL, *vt = NULL;
    bool all_const = true;
    for (uint32_t i = 0; i + 1 < n->nargs && !c->failed; i += 2) {
        check(c, n->args[i]);
        if (c->failed)
            return;
        kt = join(c, kt, n->args[i]->ty);
        check(c, n->args[i + 1]);
        if (c->failed)
            return;
        vt = join(c, vt, n->args[i + 1]->ty);
        all_const = all_const && is_const(n->args[i]) && is_const(n->args[i + 1]);
    }
    if (c->failed || !homogeneous(c, n->args, n->nargs, 2) ||
        (n->nargs > 1 && !homogeneous(c, n->args + 1, n->nargs - 1, 2)))
        return;
    if (!kt) {
        kt = cel_u_fresh(&c->u);
        vt = cel_u_fresh(&c->u);
    }
    n->ty = cel_u_mktype(&c->u, TK_MAP, kt, vt);
    if (all_const) {
        uint32_t cnt = n->nargs / 2;
        cel_v *keys = de_arena_alloc(c->a, (cnt ? cnt : 1) * sizeof *keys);
        cel_v *vals = de_arena_alloc(c->a, (cnt ? cnt : 1) * sizeof *vals);
        if (!keys || !vals) {
            fail(c, n->pos, "expression too large");
            return;
        }
        for (uint32_t i = 0; i < cnt; i++) {
            keys[i] = n->args[2 * i]->val;
            vals[i] = n->args[2 * i + 1]->val;
        }
        bool oom = false;
        cel_v m = cel_map_build(c->a, keys, vals, cnt, &oom);
        if (oom) {
            fail(c, n->pos, "expression too large");
            return;
        }
        set_const(c, n, m, n->ty);
    }
}

static void check_comprehension(C *c, cel_node *n)
{
    check(c, n->a);
    if (c->failed)
        return;
    const cel_type *rt = cel_u_subst(&c->u, n->a->ty, false);
    const cel_type *vt;
    switch (rt->k) {
    case TK_LIST: vt = rt->p0; break;
    case TK_MAP: vt = rt->p0; break;
    case TK_DYN:
    case TK_ERROR:
    case TK_PARAM:
        cel_u_assignable(&c->u, &cel_t_dyn, rt);
        vt = &cel_t_dyn;
        break;
    default:
        fail(c, n->a->pos,
             "expression of type '%s' cannot be range of a comprehension (must be list, map, or dynamic)",
             tname(c, rt));
        return;
    }
    uint32_t saved = c->nscope;
    n->slot = push_scope(c, n->name, n->nlen, vt);
    check(c, n->b);
    if (n->c && !c->failed)
        check(c, n->c);
    c->nscope = saved;
    if (c->failed)
        return;
    bool pred = n->k != N_MAP_M;
    if (pred && !cel_u_assignable(&c->u, n->b->ty, &cel_t_bool)) {
        fail(c, n->b->pos, "expected type 'bool' but found '%s'", tname(c, cel_u_subst(&c->u, n->b->ty, true)));
        return;
    }
    switch (n->k) {
    case N_MAP_M: n->ty = cel_u_mktype(&c->u, TK_LIST, cel_u_subst(&c->u, n->b->ty, false), NULL); break;
    case N_MAP_FILTER: n->ty = cel_u_mktype(&c->u, TK_LIST, cel_u_subst(&c->u, n->c->ty, false), NULL); break;
    case N_FILTER: n->ty = cel_u_mktype(&c->u, TK_LIST, cel_u_subst(&c->u, vt, false), NULL); break;
    default: n->ty = &cel_t_bool; break;
    }
}

static void check_bind(C *c, cel_node *n)
{
    check(c, n->a);
    if (c->failed)
        return;
    uint32_t saved = c->nscope;
    n->slot = push_scope(c, n->name, n->nlen, n->a->ty);
    check(c, n->b);
    c->nscope = saved;
    if (!c->failed)
        n->ty = n->b->ty;
}

static void check(C *c, cel_node *n)
{
    if (c->failed || !n)
        return;
    switch (n->k) {
    case N_LIT:
        switch (n->val.t) {
        case CV_NULL: n->ty = &cel_t_null; break;
        case CV_BOOL: n->ty = &cel_t_bool; break;
        case CV_INT: n->ty = &cel_t_int; break;
        case CV_UINT: n->ty = &cel_t_uint; break;
        case CV_DOUBLE: n->ty = &cel_t_double; break;
        case CV_STRING: n->ty = &cel_t_string; break;
        case CV_BYTES: n->ty = &cel_t_bytes; break;
        default: if (!n->ty) n->ty = &cel_t_dyn; break;
        }
        break;
    case N_IDENT: check_ident(c, n); break;
    case N_SELECT:
    case N_HAS: check_select(c, n); break;
    case N_CALL: check_call(c, n); break;
    case N_LIST: check_list(c, n); break;
    case N_MAP: check_map(c, n); break;
    case N_AND:
    case N_OR: check_logic(c, n); break;
    case N_COND: check_cond(c, n); break;
    case N_ALL:
    case N_EXISTS:
    case N_EXISTS_ONE:
    case N_MAP_M:
    case N_MAP_FILTER:
    case N_FILTER: check_comprehension(c, n); break;
    case N_BIND: check_bind(c, n); break;
    default: break; /* already resolved */
    }
}

/* ---- compile-time evaluation (cel-go OptOptimize) ------------------------------------ */

static void resolve(cel_node *n);

static void fold_conversion(C *c, cel_node *n)
{
    resolve(n); /* evaluated now, before the whole tree is resolved */
    de_arena *tmp = de_arena_new(1 << 20);
    cel_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.env = c->env;
    ctx.prog = c->p;
    ctx.a = tmp;
    ctx.limit = UINT64_MAX;
    cel_v out;
    bool ok;
    cel_prog fake = *c->p;
    fake.root = n;
    ctx.prog = &fake;
    ok = cel_run(&ctx, &out);
    if (!ok) {
        fail(c, n->pos, "program instantiation failed: %s", ctx.abort_msg);
    } else if (out.t == CV_ERR) {
        fail(c, n->pos, "program instantiation failed: %s", out.u.err->msg);
    } else {
        /* copy strings / bytes into the program arena */
        if (out.t == CV_STRING || out.t == CV_BYTES) {
            char *s = de_arena_alloc(c->a, out.n + 1);
            if (!s) {
                fail(c, n->pos, "expression too large");
            } else {
                memcpy(s, out.u.s, out.n);
                s[out.n] = 0;
                out.u.s = s;
            }
        }
        if (out.t == CV_LIST || out.t == CV_MAP) {
            /* dyn([..]) of a constant: the literal is already in the program arena */
            out = n->args[0]->val;
        }
        const cel_type *ty = n->ty;
        if (!c->failed) {
            set_const(c, n, out, ty);
            n->flags |= NF_FOLDED;
        }
    }
    de_arena_free(tmp);
}

static void check_regex_const(C *c, cel_node *n)
{
    cel_node *pat = n->a ? (n->nargs >= 1 ? n->args[0] : NULL) : (n->nargs >= 2 ? n->args[1] : NULL);
    if (!pat || !is_const(pat) || pat->val.t != CV_STRING)
        return;
    char whybuf[256];
    const char *why = NULL;
    if (!cel_re_get(pat->val.u.s, pat->val.n, &why, whybuf, sizeof whybuf)) {
        char fname[32];
        snprintf(fname, sizeof fname, "%.*s", (int)(n->nlen < 20 ? n->nlen : 20), n->name);
        fail(c, pat->pos, "invalid %s argument: %s", fname, why ? why : "invalid regex");
        return;
    }
    n->flags |= NF_RE_CONST;
}

/* ---- entry ---------------------------------------------------------------------------- */

/* After checking: what the evaluator would otherwise look up per call -
 * the overload to run when it is known statically, the cost rule, and the
 * device field a selection names.  Same results, no run-time search. */
static void resolve(cel_node *n)
{
    if (!n)
        return;
    resolve(n->a);
    resolve(n->b);
    resolve(n->c);
    for (uint32_t i = 0; i < n->nargs; i++)
        resolve(n->args[i]);
    if ((n->k == N_SELECT || n->k == N_HAS) && n->name)
        n->dfield = (uint8_t)cel_device_field_id(n->name, n->nlen);
    if (n->k != N_CALL || !n->novl)
        return;
    const cel_overload *ovs = cel_overloads(NULL);
    const cel_overload *first = &ovs[n->ovl[0]];
    if (cel_funcs(NULL)[n->fn].singleton || n->novl == 1)
        n->o1 = first;
    /* the Kubernetes rule is by function name, so every candidate has it;
     * cel-go's by overload id applies only to a single candidate */
    uint8_t go = n->novl == 1 ? first->go_cost : CK_ONE;
    n->crule = first->k8s_cost != CK_NONE ? first->k8s_cost : go;
    n->crule_alt = go;
}

de_rc cel_check(cel_env *env, cel_prog *p, de_err *e)
{
    C c;
    memset(&c, 0, sizeof c);
    c.env = env;
    c.p = p;
    c.a = p->arena;
    c.e = e;
    c.u.a = p->arena;
    check(&c, p->root);
    if (c.u.oom && !c.failed)
        fail(&c, 0, "expression too large");
    if (!c.failed) {
        p->type = cel_u_subst(&c.u, p->root->ty, true);
        resolve(p->root);
    }
    p->nslots = c.maxslots;
    cel_u_free(&c.u);
    free(c.scope);
    return c.failed ? DE_EINVAL : DE_OK;
}
