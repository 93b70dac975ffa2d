/*
 * env.c - the public CEL API: environments, the compile cache, evaluation
 * entry points and error rendering (see cel.h).
 *
 * Environments.  StoredExpressions (the default, and what the allocator
 * uses) declares everything: device.allowMultipleAllocations, dyn-typed
 * attribute values (so macros work on list attributes) and includes().
 * NewExpressions follows the feature options the way the API server does
 * for new or changed expressions: allowMultipleAllocations only with
 * consumable capacity; with list attributes off, attribute values are
 * google.protobuf.Any (not iterable) and includes() is undeclared.
 *
 * The compile cache maps expression text (and the compile mode) to a
 * program.  Programs, compile errors included, live until the cache holds
 * more than opts.prog_cap of them and its owner calls cel_env_collect at a
 * point where nobody holds one: then all go at once (an LRU would need every
 * holder to pin and unpin programs; the allocator and the decoder, the only
 * long-lived users, compile again what they still need).
 */
#include "cel_int.h"

#include "../base/intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG_ARENA_CAP ((size_t)64 << 20)

enum { MODE_SELECTOR = 0, MODE_DERIVED = 1 };

static _Atomic int live_envs; /* the last env gone drops this thread's regex cache */

cel_env *cel_env_new(de_interner *in, const cel_env_opts *opts)
{
    cel_env *env = de_xcalloc(1, sizeof *env);
    env->in = in;
    if (opts)
        env->opts = *opts;
    env->plain = env->opts.plain;
    if (env->opts.new_expressions) {
        env->has_multi = env->opts.consumable_capacity;
        env->has_includes = env->opts.list_attributes;
        env->attr_any = !env->opts.list_attributes;
    } else {
        env->has_multi = true;
        env->has_includes = true;
        env->attr_any = false;
    }
    env->limit = env->opts.cost_limit ? env->opts.cost_limit : CEL_COST_LIMIT;
    env->arena = de_arena_new_sized(PROG_ARENA_CAP, 4096);
    env->next_id = env->first_id = 1;
    env->gen = 1;
    live_envs++;
    return env;
}

static void drop_programs(cel_env *env)
{
    for (uint32_t i = 0; i < env->nbyid; i++) {
        de_arena_free(env->byid[i]->arena);
        free(env->byid[i]->text);
        free(env->byid[i]);
    }
    env->nbyid = 0;
    if (env->capprogs)
        memset(env->progs, 0, env->capprogs * sizeof *env->progs);
    env->nprogs = 0;
}

bool cel_env_collect(cel_env *env)
{
    uint32_t cap = env->opts.prog_cap ? env->opts.prog_cap : CEL_PROG_CAP;
    if (env->nprogs <= cap)
        return false;
    drop_programs(env);
    env->first_id = env->next_id;
    env->gen++;
    return true;
}

uint64_t cel_env_generation(const cel_env *env) { return env->gen; }
uint32_t cel_env_first_id(const cel_env *env) { return env->first_id; }
uint32_t cel_env_programs(const cel_env *env) { return env->nprogs; }
void cel_env_set_prog_cap(cel_env *env, uint32_t cap) { env->opts.prog_cap = cap; }

void cel_env_free(cel_env *env)
{
    if (!env)
        return;
    drop_programs(env);
    free(env->byid);
    free(env->progs);
    free(env->globals);
    free(env->checked);
    de_arena_free(env->arena);
    free(env);
    if (--live_envs == 0)
        cel_re_cache_clear();
}

/* ---- declarations ------------------------------------------------------------------ */

static const cel_type *static_type(de_arena *a, cel_v v, int depth)
{
    switch (v.t) {
    case CV_NULL: return &cel_t_null;
    case CV_BOOL: return &cel_t_bool;
    case CV_INT: return &cel_t_int;
    case CV_UINT: return &cel_t_uint;
    case CV_DOUBLE: return &cel_t_double;
    case CV_STRING: return &cel_t_string;
    case CV_BYTES: return &cel_t_bytes;
    case CV_QTY: return &cel_t_qty;
    case CV_SEMVER: return &cel_t_semver;
    case CV_TYPE: return &cel_t_type;
    case CV_LIST: {
        const cel_type *e = NULL;
        for (uint32_t i = 0; i < v.n && depth < 32; i++) {
            const cel_type *t = static_type(a, v.u.items[i], depth + 1);
            if (!e)
                e = t;
            else if (e->k != t->k || e->k == TK_LIST || e->k == TK_MAP)
                e = &cel_t_dyn;
        }
        cel_type *t = de_arena_zalloc(a, sizeof *t);
        if (!t)
            return &cel_t_dyn;
        t->k = TK_LIST;
        t->p0 = e && depth < 32 ? e : &cel_t_dyn;
        return t;
    }
    case CV_MAP: {
        cel_type *t = de_arena_zalloc(a, sizeof *t);
        if (!t)
            return &cel_t_dyn;
        t->k = TK_MAP;
        t->p0 = &cel_t_dyn;
        t->p1 = &cel_t_dyn;
        return t;
    }
    default: return &cel_t_dyn;
    }
}

de_rc cel_env_declare(cel_env *env, const char *name, const cel_value *value, de_err *e)
{
    if (env->nprogs)
        return de_errf(e, DE_EINVAL, "cel: declare variables before compiling");
    size_t n = strlen(name);
    if (!n || n > 128)
        return de_errf(e, DE_EINVAL, "cel: invalid variable name");
    for (uint32_t i = 0; i < env->nglobals; i++)
        if (!strcmp(env->globals[i].name, name)) {
            env->globals[i].val = value->v;
            env->globals[i].type = static_type(env->arena, value->v, 0);
            return DE_OK;
        }
    if (env->nglobals == env->capglobals) {
        env->capglobals = env->capglobals ? env->capglobals * 2 : 8;
        env->globals = de_xrealloc(env->globals, env->capglobals * sizeof *env->globals);
    }
    cel_global *g = &env->globals[env->nglobals++];
    g->name = de_arena_strdup(env->arena, name);
    g->val = value->v;
    g->type = static_type(env->arena, value->v, 0);
    if (!g->name)
        return de_errf(e, DE_ENOMEM, "cel: out of memory");
    return DE_OK;
}

/* ---- compile --------------------------------------------------------------------------- */

static uint64_t key_hash(const char *s, size_t n, int mode)
{
    return de_hash_bytes(s, n) * 31 + (uint64_t)mode + 1;
}

static cel_prog *cache_find(cel_env *env, uint64_t h, const char *s, size_t n)
{
    if (!env->capprogs)
        return NULL;
    uint32_t mask = env->capprogs - 1;
    for (uint32_t i = (uint32_t)h & mask;; i = (i + 1) & mask) {
        cel_prog *p = env->progs[i];
        if (!p)
            return NULL;
        if (p->hash == h && p->len == n && !memcmp(p->text, s, n))
            return p;
    }
}

static void cache_put(cel_env *env, cel_prog *p)
{
    if ((env->nprogs + 1) * 2 > env->capprogs) {
        uint32_t nc = env->capprogs ? env->capprogs * 2 : 64;
        cel_prog **np = de_xcalloc(nc, sizeof *np);
        for (uint32_t i = 0; i < env->capprogs; i++) {
            cel_prog *q = env->progs[i];
            if (!q)
                continue;
            uint32_t j = (uint32_t)q->hash & (nc - 1);
            while (np[j])
                j = (j + 1) & (nc - 1);
            np[j] = q;
        }
        free(env->progs);
        env->progs = np;
        env->capprogs = nc;
    }
    uint32_t j = (uint32_t)p->hash & (env->capprogs - 1);
    while (env->progs[j])
        j = (j + 1) & (env->capprogs - 1);
    env->progs[j] = p;
    env->nprogs++;
    if (env->nbyid == env->capbyid) {
        env->capbyid = env->capbyid ? env->capbyid * 2 : 64;
        env->byid = de_xrealloc(env->byid, env->capbyid * sizeof *env->byid);
    }
    env->byid[env->nbyid++] = p;
}

static bool derived_type_ok(const cel_type *t, bool list_ok)
{
    switch (t->k) {
    case TK_BOOL:
    case TK_INT:
    case TK_STRING:
    case TK_SEMVER:
    case TK_DYN:
    case TK_ANY: return true;
    case TK_LIST: return list_ok && derived_type_ok(t->p0, false);
    default: return false;
    }
}

static void compile_into(cel_env *env, cel_prog *p, int mode)
{
    de_err *e = &p->err;
    de_err_clear(e);
    if (p->len > CEL_MAX_EXPR_LEN) {
        de_errf(e, DE_EINVAL, "expression too long: %zu bytes, the limit is %d", p->len, CEL_MAX_EXPR_LEN);
        return;
    }
    if (cel_parse(p->text, p->len, p->arena, &p->root, e) != DE_OK ||
        cel_check(env, p, e) != DE_OK) {
        de_err_prefix(e, "compilation failed");
        if (e->rc == DE_OK)
            e->rc = DE_EINVAL;
        return;
    }
    if (!env->plain && !env->opts.any_result) {
        const cel_type *attr = env->attr_any ? &cel_t_any : &cel_t_dyn;
        bool ok = mode == MODE_DERIVED ? derived_type_ok(p->type, true)
                                       : (p->type->k == TK_BOOL || p->type->k == attr->k);
        if (!ok) {
            de_buf b;
            de_buf_init(&b, 1024);
            cel_type_format(p->type, &b);
            if (mode == MODE_DERIVED)
                de_errf(e, DE_EINVAL, "must evaluate to bool, int, string, semver or a list of those, not %s",
                        de_buf_str(&b));
            else
                de_errf(e, DE_EINVAL, "must evaluate to bool or the unknown type, not %s", de_buf_str(&b));
            de_buf_free(&b);
            return;
        }
    }
    p->est_cost = cel_estimate(env, p);
    p->ok = true;
}

static de_rc compile_mode(cel_env *env, const char *expr, size_t len, int mode, cel_prog **out,
                          de_err *e)
{
    *out = NULL;
    uint64_t h = key_hash(expr, len, mode);
    cel_prog *p = cache_find(env, h, expr, len);
    if (!p) {
        p = de_xcalloc(1, sizeof *p);
        p->id = env->next_id++;
        p->text = de_xstrndup(expr, len);
        p->len = len;
        p->hash = h;
        p->arena = de_arena_new_sized(PROG_ARENA_CAP, 8192);
        compile_into(env, p, mode);
        cache_put(env, p);
    }
    if (!p->ok) {
        if (e) {
            *e = p->err;
        }
        return p->err.rc ? p->err.rc : DE_EINVAL;
    }
    *out = p;
    return DE_OK;
}

de_rc cel_compile(cel_env *env, const char *expr, size_t len, cel_prog **out, de_err *e)
{
    return compile_mode(env, expr, len, MODE_SELECTOR, out, e);
}

de_rc cel_compile_derived(cel_env *env, const char *expr, size_t len, cel_prog **out, de_err *e)
{
    return compile_mode(env, expr, len, MODE_DERIVED, out, e);
}

de_rc cel_validate_selector(cel_env *env, const char *expr, size_t len, de_err *e)
{
    if (len > CEL_MAX_EXPR_LEN)
        return de_errf(e, DE_EINVAL, "Too long: may not be more than %d bytes", CEL_MAX_EXPR_LEN);
    cel_prog *p;
    DE_TRY(cel_compile(env, expr, len, &p, e));
    if (p->est_cost > env->limit)
        return de_errf(e, DE_EINVAL,
                       "too complex, exceeds cost limit (estimated worst case %llu, limit %llu)",
                       (unsigned long long)p->est_cost, (unsigned long long)env->limit);
    return DE_OK;
}

uint32_t cel_prog_id(const cel_prog *p) { return p->id; }
const char *cel_prog_text(const cel_prog *p) { return p->text; }
uint64_t cel_prog_estimated_cost(const cel_prog *p) { return p->est_cost; }

size_t cel_prog_type(const cel_prog *p, char *buf, size_t cap)
{
    de_buf b;
    de_buf_init(&b, 4096);
    cel_type_format(p->type, &b);
    size_t n = (size_t)snprintf(buf, cap, "%s", de_buf_str(&b));
    de_buf_free(&b);
    return n;
}

/* ---- evaluation ------------------------------------------------------------------------ */

static void runtime_error(const cel_prog *p, cel_v err, de_err *e)
{
    int line = 0, col = 0;
    if (err.u.err->pos || p->len)
        cel_pos_linecol(p->text, p->len, err.u.err->pos, &line, &col);
    de_errf(e, DE_EINVAL, "%s", err.u.err->msg);
    if (e) {
        e->line = line;
        e->col = col;
    }
}

/* Only versions and value-less attributes can fail the up-front
 * conversion; most devices have neither and skip it without a lookup. */
static bool needs_precheck(const de_devview *d)
{
    for (uint32_t i = 0; i < d->nattrs; i++) {
        int k = d->attrs[i].v.kind;
        if (k == DE_V_NONE || k == DE_V_VERSION || k == DE_V_VERSIONS)
            return true;
    }
    for (uint32_t i = 0; i < d->nderived; i++) {
        int k = d->derived[i].v.kind;
        if (k == DE_V_NONE || k == DE_V_VERSION || k == DE_V_VERSIONS)
            return true;
    }
    return false;
}

#define CHECKED_MAX (1u << 24)

static void remember_checked(cel_env *env, const de_devview *dev)
{
    if (!dev->id || dev->id >= CHECKED_MAX)
        return;
    if (dev->id >= env->ncheck) {
        uint32_t nc = env->ncheck ? env->ncheck : 1024;
        while (nc <= dev->id)
            nc *= 2;
        env->checked = de_xrealloc(env->checked, nc * sizeof *env->checked);
        memset(env->checked + env->ncheck, 0, (nc - env->ncheck) * sizeof *env->checked);
        env->ncheck = nc;
    }
    env->checked[dev->id] = dev->gen + 1u;
}

void cel_env_reserve_devices(cel_env *env, uint32_t ndev)
{
    if (ndev > CHECKED_MAX)
        ndev = CHECKED_MAX;
    if (ndev <= env->ncheck)
        return;
    uint32_t nc = env->ncheck + env->ncheck / 2; /* devices arriving a slice at a time */
    if (nc < ndev)
        nc = ndev;
    env->checked = de_xrealloc(env->checked, nc * sizeof *env->checked);
    memset(env->checked + env->ncheck, 0, (nc - env->ncheck) * sizeof *env->checked);
    env->ncheck = nc;
}

/* Run p; on success *out holds the raw result (may be an error value). */
static de_rc run(cel_env *env, const cel_prog *p, const de_devview *dev, de_arena *scratch,
                 cel_v *out, uint64_t *cost, de_err *e)
{
    cel_ctx c; /* not zeroed as a whole: the jmp_buf is large and set by setjmp */
    c.env = env;
    c.prog = p;
    c.a = scratch;
    c.dev = dev;
    c.slots = NULL;
    c.cost = 0;
    c.limit = env->limit;
    c.abort_msg = NULL;
    c.abort_rc = DE_OK;
    if (p->nslots) {
        c.slots = de_arena_zalloc(scratch, p->nslots * sizeof *c.slots);
        if (!c.slots)
            return de_errf(e, DE_ENOMEM, "CEL evaluation exceeded its memory limit");
    }
    /* the conversion check runs once per device generation */
    if (dev && !(dev->id && dev->id < env->ncheck && env->checked[dev->id] == dev->gen + 1u)) {
        if (needs_precheck(dev)) {
            if (setjmp(c.abort))
                return de_errf(e, c.abort_rc, "%s", c.abort_msg);
            cel_v pre = cel_device_precheck(&c);
            if (pre.t == CV_ERR) {
                *out = pre;
                if (cost)
                    *cost = 0;
                return DE_OK;
            }
        }
        remember_checked(env, dev);
    }
    bool ok = cel_run(&c, out);
    if (cost)
        *cost = c.cost;
    if (!ok)
        return de_errf(e, c.abort_rc, "%s", c.abort_msg);
    return DE_OK;
}

de_rc cel_eval_selector(cel_env *env, const cel_prog *p, const de_devview *dev, de_arena *scratch,
                        bool *out, uint64_t *cost, de_err *e)
{
    cel_v r;
    DE_TRY(run(env, p, dev, scratch, &r, cost, e));
    if (r.t == CV_BOOL) {
        *out = r.u.b;
        return DE_OK;
    }
    if (r.t == CV_ERR) {
        runtime_error(p, r, e);
        return DE_EINVAL;
    }
    return de_errf(e, DE_EINVAL, "CEL result of type %s could not be converted to bool",
                   cel_type_name(cel_type_of(r)));
}

de_rc cel_eval(cel_env *env, const cel_prog *p, const de_devview *dev, de_arena *scratch,
               const cel_value **out, uint64_t *cost, de_err *e)
{
    cel_v r;
    DE_TRY(run(env, p, dev, scratch, &r, cost, e));
    if (r.t == CV_ERR) {
        runtime_error(p, r, e);
        return DE_EINVAL;
    }
    /* materialise lazy device views so the value stands alone */
    cel_ctx c;
    memset(&c, 0, sizeof c);
    c.env = env;
    c.prog = p;
    c.a = scratch;
    c.dev = dev;
    c.limit = UINT64_MAX;
    if (setjmp(c.abort))
        return de_errf(e, c.abort_rc, "%s", c.abort_msg);
    r = cel_materialize(&c, r);
    cel_value *v = de_arena_alloc(scratch, sizeof *v);
    if (!v)
        return de_errf(e, DE_ENOMEM, "CEL evaluation exceeded its memory limit");
    v->v = r;
    *out = v;
    return DE_OK;
}

/* KEP-6080 result conversion. */
de_rc cel_eval_attr(cel_env *env, const cel_prog *p, const de_devview *dev, de_arena *scratch,
                    de_attrval *out, de_err *e)
{
    cel_v r;
    DE_TRY(run(env, p, dev, scratch, &r, NULL, e));
    if (r.t == CV_ERR) {
        runtime_error(p, r, e);
        return DE_EINVAL;
    }
    memset(out, 0, sizeof *out);
    char buf[256];
    switch (r.t) {
    case CV_BOOL: out->kind = DE_V_BOOL; out->n = 1; out->u.b = r.u.b; return DE_OK;
    case CV_INT: out->kind = DE_V_INT; out->n = 1; out->u.i = r.u.i; return DE_OK;
    case CV_STRING:
        out->kind = DE_V_STRING;
        out->n = 1;
        out->u.s = de_intern(env->in, r.u.s, r.n);
        return DE_OK;
    case CV_SEMVER: {
        size_t n = de_semver_format(r.u.sv, buf, sizeof buf);
        out->kind = DE_V_VERSION;
        out->n = 1;
        out->u.s = de_intern(env->in, buf, n);
        return DE_OK;
    }
    case CV_LIST: {
        int et = r.n ? r.u.items[0].t : CV_STRING;
        for (uint32_t i = 1; i < r.n; i++)
            if (r.u.items[i].t != et)
                return de_errf(e, DE_EINVAL, "derived attribute list mixes element types");
        out->n = r.n;
        switch (et) {
        case CV_INT: {
            int64_t *v = de_arena_alloc(scratch, (r.n ? r.n : 1) * sizeof *v);
            if (!v)
                return de_errf(e, DE_ENOMEM, "out of memory");
            for (uint32_t i = 0; i < r.n; i++)
                v[i] = r.u.items[i].u.i;
            out->kind = DE_V_INTS;
            out->u.ints = v;
            return DE_OK;
        }
        case CV_BOOL: {
            bool *v = de_arena_alloc(scratch, (r.n ? r.n : 1) * sizeof *v);
            if (!v)
                return de_errf(e, DE_ENOMEM, "out of memory");
            for (uint32_t i = 0; i < r.n; i++)
                v[i] = r.u.items[i].u.b;
            out->kind = DE_V_BOOLS;
            out->u.bools = v;
            return DE_OK;
        }
        case CV_STRING:
        case CV_SEMVER: {
            uint32_t *v = de_arena_alloc(scratch, (r.n ? r.n : 1) * sizeof *v);
            if (!v)
                return de_errf(e, DE_ENOMEM, "out of memory");
            for (uint32_t i = 0; i < r.n; i++) {
                cel_v it = r.u.items[i];
                if (et == CV_STRING) {
                    v[i] = de_intern(env->in, it.u.s, it.n);
                } else {
                    size_t n = de_semver_format(it.u.sv, buf, sizeof buf);
                    v[i] = de_intern(env->in, buf, n);
                }
            }
            out->kind = et == CV_STRING ? DE_V_STRINGS : DE_V_VERSIONS;
            out->u.strs = v;
            return DE_OK;
        }
        default:
            break;
        }
        return de_errf(e, DE_EINVAL, "derived attribute list of %s is not supported",
                       cel_type_name(et));
    }
    default:
        return de_errf(e, DE_EINVAL, "CEL result of type %s cannot be an attribute value",
                       cel_type_name(cel_type_of(r)));
    }
}

/* ---- error rendering ---------------------------------------------------------------------- */

size_t cel_err_caret(const char *expr, int line, int col, char *buf, size_t cap)
{
    if (!cap)
        return 0;
    buf[0] = 0;
    if (line < 1 || col < 1)
        return 0;
    const char *s = expr;
    for (int l = 1; l < line && *s; s++)
        if (*s == '\n')
            l++;
    const char *e = strchr(s, '\n');
    size_t ln = e ? (size_t)(e - s) : strlen(s);
    size_t o = 0;
    o += (size_t)snprintf(buf + o, cap - o, " | %.*s\n | ", (int)ln, s);
    for (int i = 1; i < col && o + 2 < cap; i++)
        buf[o++] = '.';
    if (o + 2 < cap) {
        buf[o++] = '^';
        buf[o] = 0;
    }
    return o;
}
