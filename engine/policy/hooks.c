/*
 * hooks.c - calling derive, groups, score and admit, and turning what they
 * return into engine data (or refusing it).
 *
 * Every call goes through one C trampoline run by lua_pcall, so that all
 * allocation in the VM (the view userdata, the conversion of results) is
 * protected and budgeted; the hook itself is lua_call'ed inside.  Results
 * are validated strictly: attribute names must be qualified and owned by the
 * policy, values must be int / bool / string (at most max_string bytes) /
 * version or a homogeneous list of those (at most 48 values), and anything
 * else fails the call with reason "result", naming the hook's file:line.
 *
 * What a failure means is the policy's `failure` mode (see pol.h).  Failures
 * are reported through the configured log: the first 10 of each policy in
 * full, then one line saying further failures are counted, not logged.
 */
#include "../base/map.h"
#include "pol_int.h"
#include "../base/utf8.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* positions in pol_hook_names and pol_policy.ref */
enum { H_DERIVE = 0, H_GROUPS, H_SCORE, H_ADMIT };

#define REPORT_FULL 10

/* The failures of one device's derive and groups calls (pol_devfacts.fails). */
typedef struct failsink {
    pol_devfail rec[POL_MAX_DEVFAILS];
    uint32_t n;
} failsink;

typedef struct callctx {
    pol_set *set;
    pol_policy *p;
    uint32_t pidx;   /* p's index in the set */
    failsink *sink;  /* derive, groups: where failures are recorded */
    int hook;
    const de_devview *v;
    int fn_line;
    /* derive */
    cattr *attrs; /* POL_MAX_DERIVED */
    uint32_t nattrs;
    bool traced;  /* the derive memo traces this call: the device is read as placement[0] */
    /* groups */
    bool has_scope;
    pol_scope scope;
    /* score */
    const pol_nodeinfo *node;
    const de_devview *placement;
    uint32_t nplace;
    double score;
    /* admit */
    const pol_claiminfo *claim;
    bool admitted;
    char reason[256];
} callctx;


static int result_error(lua_State *L, callctx *c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int result_error(lua_State *L, callctx *c, const char *fmt, ...)
{
    pol_vm *vm = &c->p->vm;
    vm->result_err = true;
    /* the line of the hook's definition, looked up only now */
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->p->ref[c->hook]);
    lua_Debug ar;
    if (lua_getinfo(L, ">S", &ar))
        c->fn_line = ar.linedefined;
    snprintf(vm->errfile, sizeof vm->errfile, "%s", c->p->file);
    vm->errline = c->fn_line;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lua_pushfstring(L, "%s:%d: %s returned %s", c->p->file, c->fn_line, pol_hook_names[c->hook], msg);
    return lua_error(L);
}

/* ---- converting values ------------------------------------------------------ */

static int scalar_kind(lua_State *L, int idx)
{
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
        return DE_V_INT;
    case LUA_TBOOLEAN:
        return DE_V_BOOL;
    case LUA_TSTRING:
        return DE_V_STRING;
    case LUA_TUSERDATA: {
        const char *t;
        size_t n;
        return pol_is_version(L, idx, &t, &n) ? DE_V_VERSION : DE_V_NONE;
    }
    default:
        return DE_V_NONE;
    }
}

/* Convert the scalar at idx of the given kind; returns the raw 64-bit form
 * (int64, bool, or interned id). */
static uint64_t conv_scalar(lua_State *L, callctx *c, int idx, int kind, const char *attr)
{
    pol_vm *vm = &c->p->vm;
    switch (kind) {
    case DE_V_INT: {
        if (lua_isinteger(L, idx))
            return (uint64_t)lua_tointeger(L, idx);
        lua_Number f = lua_tonumber(L, idx);
        if (f == floor(f) && f >= -9.2233720368547e18 && f <= 9.2233720368547e18)
            return (uint64_t)(int64_t)f;
        result_error(L, c, "attribute \"%s\": %.17g is not an integer (attribute values are int, bool, "
                           "string, version, or lists of those)", attr, (double)f);
        return 0;
    }
    case DE_V_BOOL:
        return lua_toboolean(L, idx);
    case DE_V_STRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        if (n > vm->cfg->limits.max_string)
            result_error(L, c, "attribute \"%s\": string of %zu bytes exceeds the limit of %zu bytes", attr, n,
                         vm->cfg->limits.max_string);
        size_t at;
        const char *bad = de_utf8_problem(s, n, &at);
        if (bad) {
            result_error(L, c, "attribute \"%s\": byte %zu of the string is %s", attr, at, bad);
            return 0; /* not reached: result_error raises */
        }
        return de_intern(vm->in, s, n);
    }
    case DE_V_VERSION: {
        const char *t = "";
        size_t n = 0;
        pol_is_version(L, idx, &t, &n);
        return de_intern(vm->in, t, n);
    }
    }
    return 0;
}

static void conv_value(lua_State *L, callctx *c, int idx, cattr *a, const char *attr)
{
    idx = lua_absindex(L, idx);
    int k = scalar_kind(L, idx);
    a->v.n = 1;
    if (k != DE_V_NONE) {
        a->v.kind = (uint8_t)k;
        uint64_t raw = conv_scalar(L, c, idx, k, attr);
        if (k == DE_V_INT)
            a->v.u.i = (int64_t)raw;
        else if (k == DE_V_BOOL)
            a->v.u.b = raw != 0;
        else
            a->v.u.s = (uint32_t)raw;
        return;
    }
    if (lua_type(L, idx) != LUA_TTABLE)
        result_error(L, c, "attribute \"%s\": a %s is not an attribute value (int, bool, string, "
                           "version, or a list of those)", attr, luaL_typename(L, idx));
    size_t n = lua_rawlen(L, idx), count = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        count++;
    }
    if (count != n)
        result_error(L, c, "attribute \"%s\": a list must be an array (keys 1..n)", attr);
    if (n > POL_MAX_LIST)
        result_error(L, c, "attribute \"%s\": list of %zu values exceeds the limit of %d", attr, n, POL_MAX_LIST);
    if (n == 0) {
        /* Kubernetes turns an empty derived list into an empty string list. */
        a->v.kind = DE_V_STRINGS;
        a->v.n = 0;
        a->v.u.strs = NULL;
        return;
    }
    int first = DE_V_NONE;
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, idx, (lua_Integer)i + 1);
        int ek = scalar_kind(L, -1);
        if (ek == DE_V_NONE)
            result_error(L, c, "attribute \"%s\": list element %zu is a %s", attr, i + 1, luaL_typename(L, -1));
        if (i == 0)
            first = ek;
        else if (ek != first)
            result_error(L, c, "attribute \"%s\": list mixes value types (element %zu)", attr, i + 1);
        uint64_t raw = conv_scalar(L, c, -1, ek, attr);
        if (ek == DE_V_INT)
            ((int64_t *)a->vals)[i] = (int64_t)raw;
        else if (ek == DE_V_BOOL)
            ((bool *)a->vals)[i] = raw != 0;
        else
            ((uint32_t *)a->vals)[i] = (uint32_t)raw;
        lua_pop(L, 1);
    }
    a->v.kind = (uint8_t)(first + 4);
    a->v.n = (uint32_t)n;
    a->v.u.ints = (const int64_t *)a->vals; /* fixed up when copied */
}

static void conv_derive(lua_State *L, callctx *c, int idx)
{
    idx = lua_absindex(L, idx);
    c->nattrs = 0;
    if (lua_isnil(L, idx))
        return;
    if (!lua_istable(L, idx))
        result_error(L, c, "a %s; derive returns a table {[\"domain/name\"] = value} or nil",
                     luaL_typename(L, idx));
    pol_policy *p = c->p;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            result_error(L, c, "a %s key; attribute names are strings \"domain/name\"", luaL_typename(L, -2));
        size_t n;
        const char *k = lua_tolstring(L, -2, &n);
        const char *slash = memchr(k, '/', n);
        if (!slash)
            result_error(L, c, "attribute \"%s\" without a domain; derived names are qualified "
                               "(\"domain/name\")", k);
        size_t dl = (size_t)(slash - k), nl = n - dl - 1;
        if (!pol_valid_domain(k, dl) || !pol_valid_identifier(slash + 1, nl))
            result_error(L, c, "attribute \"%s\": not a qualified name (DNS subdomain of at most 63 "
                               "bytes, '/', C identifier of at most 32 bytes)", k);
        if (!pol_owns(p, k, dl, slash + 1, nl)) {
            char owned[256] = "";
            for (uint32_t i = 0; i < p->ndomains; i++)
                snprintf(owned + strlen(owned), sizeof owned - strlen(owned), "%s%s", i ? ", " : "",
                         p->domains[i]);
            result_error(L, c, "attribute \"%s\", outside the policy's domains (%s)", k, owned);
        }
        if (c->nattrs >= POL_MAX_DERIVED)
            result_error(L, c, "more than %d attributes", POL_MAX_DERIVED);
        cattr *a = &c->attrs[c->nattrs];
        memset(&a->v, 0, sizeof a->v);
        a->domain = de_intern(p->vm.in, k, dl);
        a->name = de_intern(p->vm.in, slash + 1, nl);
        conv_value(L, c, -1, a, k);
        c->nattrs++;
        lua_pop(L, 1);
    }
}

static void conv_groups(lua_State *L, callctx *c, int idx)
{
    idx = lua_absindex(L, idx);
    c->has_scope = false;
    if (lua_isnil(L, idx))
        return;
    if (!lua_istable(L, idx))
        result_error(L, c, "a %s; groups returns {scope = \"...\", groups = {...}} or nil",
                     luaL_typename(L, idx));
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
        if (strcmp(k, "scope") && strcmp(k, "groups"))
            result_error(L, c, "an unknown field; groups returns {scope = \"...\", groups = {...}}");
    }
    lua_getfield(L, idx, "scope");
    size_t sl = 0;
    const char *scope = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &sl) : NULL;
    if (!scope || sl == 0 || sl > POL_MAX_SCOPE)
        result_error(L, c, "a scope that is not a string of 1-%d bytes", POL_MAX_SCOPE);
    pol_policy *p = c->p;
    lua_pushfstring(L, "%s:%s", p->name, scope);
    size_t kl;
    const char *key = lua_tolstring(L, -1, &kl);
    c->scope.key = de_intern(p->vm.in, key, kl);
    lua_pop(L, 2);
    c->scope.groups = 0;
    lua_getfield(L, idx, "groups");
    int g = lua_gettop(L);
    if (!lua_isnil(L, g)) {
        if (!lua_istable(L, g))
            result_error(L, c, "groups that are not a list of strings");
        size_t n = lua_rawlen(L, g);
        if (n > POL_MAX_GROUPS)
            result_error(L, c, "%zu groups (at most %d per device)", n, POL_MAX_GROUPS);
        for (size_t i = 0; i < n; i++) {
            lua_rawgeti(L, g, (lua_Integer)i + 1);
            size_t gl = 0;
            const char *gs = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &gl) : NULL;
            if (!gs || gl == 0 || gl > 63)
                result_error(L, c, "group %zu that is not a string of 1-63 bytes", i + 1);
            uint32_t id = de_intern(p->vm.in, gs, gl);
            pol_set *s = c->set;
            unsigned bit = POL_MAX_GROUP_BITS;
            for (unsigned b = 0; b < s->ngroups; b++)
                if (s->group_names[b] == id)
                    bit = b;
            if (bit == POL_MAX_GROUP_BITS) {
                if (s->ngroups >= POL_MAX_GROUP_BITS)
                    result_error(L, c, "group \"%s\": the policy set already uses %d distinct group names",
                                 gs, POL_MAX_GROUP_BITS);
                bit = s->ngroups;
                s->group_names[s->ngroups++] = id;
            }
            c->scope.groups |= 1ull << bit;
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    c->has_scope = true;
}

static int hook_tramp(lua_State *L)
{
    callctx *c = lua_touserdata(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, c->p->ref[c->hook]);
    switch (c->hook) {
    case H_DERIVE:
        pol_push_device(L, c->v, false, false);
        if (c->traced)
            pol_set_device_index(L, 0);
        lua_call(L, 1, 1);
        conv_derive(L, c, -1);
        break;
    case H_GROUPS:
        pol_push_device(L, c->v, false, false);
        lua_call(L, 1, 1);
        conv_groups(L, c, -1);
        break;
    case H_SCORE:
        pol_push_node(L, c->node);
        lua_createtable(L, (int)c->nplace, 0);
        for (uint32_t i = 0; i < c->nplace; i++) {
            pol_push_placement_device(L, &c->placement[i], i);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        lua_call(L, 2, 1);
        if (lua_type(L, -1) != LUA_TNUMBER || !isfinite(lua_tonumber(L, -1)))
            result_error(L, c, "%s; score returns a finite number",
                         lua_type(L, -1) == LUA_TNUMBER ? "a non-finite number" : luaL_typename(L, -1));
        c->score = lua_tonumber(L, -1);
        break;
    case H_ADMIT:
        pol_push_claim(L, c->claim);
        lua_call(L, 1, 2);
        if (lua_isnil(L, -2) || (lua_isboolean(L, -2) && lua_toboolean(L, -2))) {
            c->admitted = true;
        } else if (lua_isboolean(L, -2)) {
            c->admitted = false;
            size_t n = 0;
            const char *r = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : NULL;
            if (!r && !lua_isnil(L, -1))
                result_error(L, c, "a %s reason; admit returns true, or false and a reason string",
                             luaL_typename(L, -1));
            size_t at;
            const char *bad = r ? de_utf8_problem(r, n, &at) : NULL;
            if (bad) { /* it goes into Events and conditions: JSON */
                result_error(L, c, "a reason whose byte %zu is %s; admit returns true, or false and a "
                             "reason string", at, bad);
                return 0; /* not reached: result_error raises */
            }
            if (!r || !r[0]) /* no reason, or an empty one */
                r = "refused", n = 7;
            de_utf8_printable(c->reason, sizeof c->reason, r, n);
        } else
            result_error(L, c, "a %s; admit returns true, or false and a reason string", luaL_typename(L, -2));
        break;
    }
    return 0;
}

/* ---- calling -------------------------------------------------------------- */

void pol_report(const pol_config *cfg, de_log_level lvl, const pol_policy *p, const char *hook, pol_reason r,
                const de_err *err)
{
    if (!cfg->log)
        return;
    char rev[16];
    snprintf(rev, sizeof rev, "%.12s", p ? p->revision : "");
    const char *kv[] = {"policy", p ? p->name : "?", "revision", rev, "hook", hook ? hook : "load",
                        "reason", pol_reason_str(r), NULL};
    cfg->log(cfg->log_ctx, lvl, err->file[0] ? err->file : (p ? p->file : "?"), err->line, err->msg, kv);
}

/* Keep a failure of policy pidx for the device being computed.  The
 * message loses its "file:line: " prefix: file and line are fields. */
static void sink_add(failsink *k, uint32_t pidx, int hook, pol_reason r, const char *file, int line,
                     const char *msg)
{
    if (!k || k->n >= DE_ARRAY_LEN(k->rec))
        return;
    char loc[DE_ERR_FIELD_MAX + 24];
    int n = snprintf(loc, sizeof loc, "%s:%d: ", file ? file : "", line);
    if (file && file[0] && line && n > 0 && (size_t)n < sizeof loc && !strncmp(msg, loc, (size_t)n))
        msg += n;
    pol_devfail *f = &k->rec[k->n++];
    f->policy = pidx;
    f->hook = (uint8_t)hook;
    f->reason = (uint8_t)r;
    f->line = line;
    f->file = de_xstrdup(file ? file : "");
    f->msg = de_xstrndup(msg, strlen(msg) > 256 ? 256 : strlen(msg));
}

/* A call the trip skips (trip.c): no time spent, nothing logged. */
static pol_reason skipped(pol_set *s, callctx *c, pol_failure *first)
{
    char msg[128];
    pol_reason r = pol_trip_failure(c->p, c->hook, msg, sizeof msg, first);
    s->stats.calls[c->hook]++;
    s->stats.failures[r]++;
    sink_add(c->sink, c->pidx, c->hook, r, c->p->file, c->p->trip_line[c->hook], msg);
    return r;
}

static pol_reason call(pol_set *s, callctx *c, uint64_t seed, pol_failure *first)
{
    pol_vm *vm = &c->p->vm;
    if (pol_trip_skips(s, c->p, c->hook))
        return skipped(s, c, first);
    uint64_t t0 = de_now_ns();
    pol_vm_begin(vm, false, seed ^ c->p->seed);
    lua_pushcfunction(vm->L, hook_tramp);
    lua_pushlightuserdata(vm->L, c);
    pol_reason r = pol_vm_pcall(vm, 1, 0);
    uint64_t instr = vm->instr;
    pol_vm_end(vm);
    lua_settop(vm->L, 0);
    s->stats.calls[c->hook]++;
    s->stats.instructions += instr;
    s->stats.ns += de_now_ns() - t0;
    if (r == POL_R_NONE) {
        pol_trip_note(s, c->p, c->hook, r, 0);
        return r;
    }
    s->stats.failures[r]++;
    de_err err;
    de_err_clear(&err);
    pol_vm_error(vm, r, pol_hook_names[c->hook], &err);
    pol_trip_note(s, c->p, c->hook, r, err.line);
    sink_add(c->sink, c->pidx, c->hook, r, err.file, err.line, vm->errmsg);
    if (first && first->reason == POL_R_NONE) {
        first->reason = r;
        first->err = err;
    }
    pol_policy *p = c->p;
    if (p->reported < REPORT_FULL) {
        pol_report(&s->cfg, DE_LOG_ERROR, p, pol_hook_names[c->hook], r, &err);
    } else if (p->reported == REPORT_FULL) {
        de_err note;
        de_err_clear(&note);
        snprintf(note.msg, sizeof note.msg,
                 "policy %s: further hook failures are counted in the policy statistics, not logged", p->name);
        pol_report(&s->cfg, DE_LOG_WARN, p, pol_hook_names[c->hook], r, &note);
    }
    p->reported++;
    return r;
}

static uint64_t device_seed(const pol_set *s, const de_devview *v)
{
    uint64_t h = 1469598103934665603ULL;
    const uint32_t ids[3] = {v->driver, v->pool, v->name};
    for (int i = 0; i < 3; i++) {
        h ^= de_hash_bytes(de_intern_str(s->in, ids[i]), de_intern_len(s->in, ids[i]));
        h = de_hash_u64(h + (uint64_t)i);
    }
    return h;
}

static bool sees_driver(const pol_policy *p, uint32_t driver)
{
    if (!p->drivers)
        return true;
    for (uint32_t i = 0; i < p->ndrivers; i++)
        if (p->drivers[i] == driver)
            return true;
    return false;
}

static int attr_cmp(const void *x, const void *y, void *in)
{
    const de_attr *a = x, *b = y;
    int c = de_intern_cmp(in, a->domain, b->domain);
    return c ? c : de_intern_cmp(in, a->name, b->name);
}

static uint64_t lazy_seed(const pol_set *s, const de_devview *v, uint64_t *seed, bool *seeded)
{
    if (!*seeded) {
        *seed = device_seed(s, v);
        *seeded = true;
    }
    return *seed;
}

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

/* Pack attributes (payloads anywhere) and scopes into one block. */
static void pack_facts(pol_set *s, de_attr *attrs, uint32_t n, const pol_scope *scopes, uint32_t nscopes,
                       pol_devfacts *out)
{
    qsort_r(attrs, n, sizeof *attrs, attr_cmp, s->in);
    size_t bytes = align8(n * sizeof(de_attr)) + align8(nscopes * sizeof(pol_scope));
    for (uint32_t i = 0; i < n; i++)
        bytes += align8(de_attrval_list_bytes(&attrs[i].v));
    out->mem = NULL;
    out->derived = NULL;
    out->scopes = NULL;
    out->nderived = n;
    out->nscopes = nscopes;
    if (!bytes)
        return;
    char *mem = de_xmalloc(bytes), *pp = mem;
    out->mem = mem;
    out->derived = n ? (de_attr *)pp : NULL;
    pp += align8(n * sizeof(de_attr));
    out->scopes = nscopes ? (pol_scope *)pp : NULL;
    if (nscopes)
        memcpy(pp, scopes, nscopes * sizeof *scopes);
    pp += align8(nscopes * sizeof(pol_scope));
    for (uint32_t i = 0; i < n; i++) {
        out->derived[i] = attrs[i];
        size_t pb = de_attrval_list_bytes(&attrs[i].v);
        if (pb) {
            memcpy(pp, attrs[i].v.u.ints, pb);
            out->derived[i].v.u.ints = (const int64_t *)(void *)pp;
            pp += align8(pb);
        }
    }
}

/* ---- the derive memo -------------------------------------------------------------------
 *
 * A derive hook is a function of what it reads of its device, like a score
 * hook of its inputs (memo.c), and most devices of a cluster are alike: the
 * same model, the same few attributes a fact policy looks at.  So derive
 * calls are traced too, the device read as placement[0] of a one-device
 * placement with derived attributes hidden (a derive hook sees the source
 * attributes only), and the answer - the derived attributes - is filed in
 * the trie by what was read; the trie's leaf holds an index into the
 * policy's table of distinct answers.  A memo answer skips the Lua call
 * (stats.derive_memo_hits instead of calls[derive]).  Only successful pure
 * calls that read something of their device are filed: failures, logging,
 * math.random and hooks that read nothing (a constant, or state kept
 * between calls) run every time.  As for scores, a hook that keeps state
 * and still reads its device is answered by what it read. */

/* The derive call, through the memo when it is on. */
static pol_reason derive_call(pol_set *s, callctx *c, uint64_t *seed, bool *seeded, pol_failure *first)
{
    pol_policy *p = c->p;
    if (s->cfg.no_score_memo)
        return call(s, c, lazy_seed(s, c->v, seed, seeded), first);
    pol_memo_sync_absent(&p->vm, &p->memo, &p->dmemo);
    if (!p->dmemo)
        p->dmemo = pol_memo_new();
    if (pol_memo_off(p->dmemo))
        return call(s, c, lazy_seed(s, c->v, seed, seeded), first);
    /* derive hooks see the source attributes only */
    de_devview src = *c->v;
    src.derived = NULL;
    src.nderived = 0;
    static const pol_nodeinfo none;
    double known;
    if (pol_memo_get(p->dmemo, &none, &src, 1, &known, NULL)) {
        c->nattrs = pol_dres_get(p, (uint32_t)known, c->attrs);
        s->stats.derive_memo_hits++;
        return POL_R_NONE;
    }
    pol_trace_begin(&p->vm, &none, &src, 1);
    c->traced = true;
    pol_reason r = call(s, c, lazy_seed(s, c->v, seed, seeded), first);
    c->traced = false;
    /* a call that read nothing of its device answers from somewhere else
     * (a constant, or state kept between calls, which the memo cannot
     * see): not filed */
    bool file = r == POL_R_NONE && pol_trace_pure(&p->vm) && pol_trace_reads(&p->vm) > 1;
    uint32_t idx = file ? pol_dres_put(p, c->attrs, c->nattrs) : UINT32_MAX;
    pol_trace_end(&p->vm, p->dmemo, idx != UINT32_MAX, idx);
    return r;
}

uint32_t pol_set_compute(pol_set *s, const de_devview *v, const pol_devfacts *prev, pol_devfacts *out,
                         pol_failure *first)
{
    memset(out, 0, sizeof *out);
    if (!(s->hooks & (POL_HOOK_DERIVE | POL_HOOK_GROUPS)))
        return 0;
    static __thread cattr cbuf[POL_MAX_DERIVED];
    de_attr all[POL_MAX_DERIVED * 8];
    /* list payloads of fail-open copies and of every policy's results */
    static __thread uint64_t pay[POL_MAX_DERIVED * 8][POL_MAX_LIST];
    pol_scope scopes[16];
    uint32_t nall = 0, nscopes = 0, failures = 0;
    /* the per-device seed is hashed from three names: only when a call runs */
    uint64_t seed = 0;
    bool seeded = false;
    failsink sink;
    sink.n = 0;
    for (uint32_t i = 0; i < s->npols; i++) {
        pol_policy *p = s->pols[i];
        if (!(p->hooks & (POL_HOOK_DERIVE | POL_HOOK_GROUPS)) || !sees_driver(p, v->driver))
            continue;
        if (p->hooks & POL_HOOK_DERIVE) {
            callctx c = {.set = s, .p = p, .pidx = i, .sink = &sink, .hook = H_DERIVE, .v = v, .attrs = cbuf};
            pol_reason r = derive_call(s, &c, &seed, &seeded, first);
            if (r == POL_R_NONE && nall + c.nattrs > DE_ARRAY_LEN(all)) {
                /* the device's facts from every policy together are capped */
                r = POL_R_RESULT;
                de_err err;
                de_err_clear(&err);
                de_errf(&err, DE_EPOLICY, "policy %s (revision %.12s) hook derive: result: the device would have "
                        "more than %zu derived attributes", p->name, p->revision, DE_ARRAY_LEN(all));
                snprintf(err.file, sizeof err.file, "%s", p->file);
                s->stats.failures[r]++;
                if (first && first->reason == POL_R_NONE) {
                    first->reason = r;
                    first->err = err;
                }
                pol_report(&s->cfg, DE_LOG_ERROR, p, "derive", r, &err);
                sink_add(&sink, i, H_DERIVE, r, p->file, 0, err.msg);
            }
            if (r == POL_R_NONE) {
                for (uint32_t k = 0; k < c.nattrs; k++) {
                    de_attr *a = &all[nall];
                    a->domain = cbuf[k].domain;
                    a->name = cbuf[k].name;
                    a->bare = 0;
                    a->v = cbuf[k].v;
                    size_t pb = de_attrval_list_bytes(&a->v);
                    if (pb) {
                        memcpy(pay[nall], cbuf[k].vals, pb);
                        a->v.u.ints = (const int64_t *)pay[nall];
                    }
                    nall++;
                }
            } else {
                failures++;
                if (p->failure == POL_FAIL_OPEN && prev) {
                    /* keep what this policy derived last time */
                    for (uint32_t k = 0; k < prev->nderived && nall < DE_ARRAY_LEN(all); k++) {
                        const de_attr *a = &prev->derived[k];
                        const char *dom = de_intern_str(s->in, a->domain), *nm = de_intern_str(s->in, a->name);
                        if (pol_owns(p, dom, de_intern_len(s->in, a->domain), nm, de_intern_len(s->in, a->name)))
                            all[nall++] = *a;
                    }
                }
            }
        }
        if (p->hooks & POL_HOOK_GROUPS) {
            callctx c = {.set = s, .p = p, .pidx = i, .sink = &sink, .hook = H_GROUPS, .v = v};
            pol_reason r = call(s, &c, lazy_seed(s, v, &seed, &seeded), first);
            if (r == POL_R_NONE) {
                if (c.has_scope && nscopes < DE_ARRAY_LEN(scopes))
                    scopes[nscopes++] = c.scope;
                else if (c.has_scope) {
                    /* more scopes than groups policies can give: refuse (closed = blocked) */
                    failures++;
                    char m[128];
                    snprintf(m, sizeof m, "the device is in more than %zu compatibility scopes",
                             DE_ARRAY_LEN(scopes));
                    sink_add(&sink, i, H_GROUPS, POL_R_RESULT, p->file, 0, m);
                    if (p->failure == POL_FAIL_CLOSED)
                        out->blocked = true;
                }
            } else {
                failures++;
                if (p->failure == POL_FAIL_CLOSED)
                    out->blocked = true;
            }
        }
    }
    pack_facts(s, all, nall, scopes, nscopes, out);
    out->nfailures = failures;
    if (sink.n) {
        out->fails = de_xcalloc(sink.n, sizeof *out->fails);
        memcpy(out->fails, sink.rec, sink.n * sizeof *sink.rec);
        out->nfails = sink.n;
    }
    return failures;
}

void pol_devfacts_free(pol_devfacts *f)
{
    if (!f)
        return;
    for (uint32_t i = 0; i < f->nfails; i++) {
        free(f->fails[i].file);
        free(f->fails[i].msg);
    }
    free(f->fails);
    free(f->mem);
    memset(f, 0, sizeof *f);
}

static bool attrval_equal(const de_attrval *a, const de_attrval *b)
{
    if (a->kind != b->kind || a->n != b->n)
        return false;
    switch (a->kind) {
    case DE_V_INT:
        return a->u.i == b->u.i;
    case DE_V_BOOL:
        return a->u.b == b->u.b;
    case DE_V_STRING:
    case DE_V_VERSION:
        return a->u.s == b->u.s;
    default:
        return !a->n || !memcmp(a->u.ints, b->u.ints, de_attrval_list_bytes(a));
    }
}

bool pol_devfacts_equal(const pol_devfacts *a, const pol_devfacts *b)
{
    if (a->nderived != b->nderived || a->nscopes != b->nscopes || a->blocked != b->blocked)
        return false;
    for (uint32_t i = 0; i < a->nderived; i++)
        if (a->derived[i].domain != b->derived[i].domain || a->derived[i].name != b->derived[i].name ||
            !attrval_equal(&a->derived[i].v, &b->derived[i].v))
            return false;
    for (uint32_t i = 0; i < a->nscopes; i++)
        if (a->scopes[i].key != b->scopes[i].key || a->scopes[i].groups != b->scopes[i].groups)
            return false;
    return true;
}

const char *pol_set_group_name(const pol_set *s, unsigned bit)
{
    if (bit >= s->ngroups)
        return NULL;
    return de_intern_str(s->in, s->group_names[bit]);
}

bool pol_compat_admits(const pol_compat *c, uint64_t groups)
{
    if (c->members == 0)
        return true;
    if (!groups)
        return c->nogroups;
    return !c->nogroups && (c->inter & groups) != 0;
}

void pol_compat_add(pol_compat *c, uint64_t groups)
{
    if (c->members == 0) {
        c->nogroups = groups == 0;
        c->inter = groups;
    } else {
        c->inter &= groups;
    }
    c->members++;
}

de_rc pol_set_score(pol_set *s, const pol_nodeinfo *node, const de_devview *placement, uint32_t n,
                    double *score, bool *feasible, pol_failure *first)
{
    *score = 0;
    *feasible = true;
    uint64_t seed = 0;
    bool memo = !s->cfg.no_score_memo, seeded = false;
    for (uint32_t i = 0; i < s->npols; i++) {
        pol_policy *p = s->pols[i];
        if (!(p->hooks & POL_HOOK_SCORE))
            continue;
        /* answered from what the hook read before (memo.c) */
        double known;
        if (memo)
            pol_memo_sync_absent(&p->vm, &p->memo, &p->dmemo);
        if (memo && !p->memo)
            p->memo = pol_memo_new();
        if (memo && !pol_memo_off(p->memo) && pol_memo_get(p->memo, node, placement, n, &known, NULL)) {
            s->stats.score_memo_hits++;
            *score += p->weight * known;
            continue;
        }
        if (!seeded) {
            seed = de_hash_bytes(de_intern_str(s->in, node->name), de_intern_len(s->in, node->name));
            seeded = true;
        }
        callctx c = {.set = s, .p = p, .hook = H_SCORE, .node = node, .placement = placement, .nplace = n};
        if (memo && !pol_memo_off(p->memo))
            pol_trace_begin(&p->vm, node, placement, n);
        pol_reason r = call(s, &c, seed, first);
        pol_trace_end(&p->vm, memo ? p->memo : NULL, r == POL_R_NONE, c.score);
        if (r == POL_R_NONE)
            *score += p->weight * c.score;
        else if (p->failure == POL_FAIL_CLOSED)
            *feasible = false;
    }
    return DE_OK;
}

/*
 * The score from the memos alone.  Above them, the set keeps the sums that
 * every score memo reached through reads of #placement, node.devices and
 * node.free_devices only, by those three numbers: such an answer holds for
 * every node and placement with the same counts while the memos live (a
 * trie only grows at branches not taken, so a path once walked gives the
 * same leaf), and most decisions of a bin-packing set are answered here
 * with one hash lookup instead of a trie walk per policy.  The cache is
 * dropped with any memo (pol_memo_drops) and is bounded (SCORE_COUNTS_MAX).
 */
#define SCORE_COUNTS_MAX 65536

static bool score_counts_key(const pol_nodeinfo *node, uint32_t n, uint64_t *key)
{
    if (n >= 1u << 16 || node->devices >= 1u << 24 || node->free_devices >= 1u << 24)
        return false;
    *key = (uint64_t)n << 48 | (uint64_t)node->devices << 24 | node->free_devices;
    return true;
}

bool pol_set_score_memo(pol_set *s, const pol_nodeinfo *node, uint32_t n, double *score)
{
    if (s->cfg.no_score_memo)
        return false;
    /* a key recorded as absent may have been interned since: only then can
     * a memo be dropped for it (pol_memo_sync_absent) */
    uint32_t interned = de_intern_count(s->in);
    if (interned != s->score_counts_interned) {
        for (uint32_t i = 0; i < s->npols; i++)
            if (s->pols[i]->hooks & POL_HOOK_SCORE)
                pol_memo_sync_absent(&s->pols[i]->vm, &s->pols[i]->memo, &s->pols[i]->dmemo);
        s->score_counts_interned = interned;
    }
    uint64_t drops = pol_memo_drops(), key = 0, bits;
    if (drops != s->score_counts_drops) {
        de_map_clear(&s->score_counts);
        s->score_counts_drops = drops;
    }
    bool keyed = score_counts_key(node, n, &key);
    if (keyed && de_map_get(&s->score_counts, key, &bits)) {
        memcpy(score, &bits, sizeof *score);
        s->stats.score_memo_hits += s->score_counts_hits;
        return true;
    }
    double sum = 0;
    uint32_t hits = 0;
    bool counts = true;
    for (uint32_t i = 0; i < s->npols; i++) {
        pol_policy *p = s->pols[i];
        if (!(p->hooks & POL_HOOK_SCORE))
            continue;
        double known;
        bool only;
        /* summed in pol_set_score's order: the same double */
        if (!p->memo || pol_memo_off(p->memo) || (pol_memo_inputs(p->memo) & (POL_MEMO_DEVICES | POL_MEMO_LABELS)) ||
            !pol_memo_get(p->memo, node, NULL, n, &known, &only))
            return false;
        sum += p->weight * known;
        counts &= only;
        hits++;
    }
    s->stats.score_memo_hits += hits;
    *score = sum;
    if (keyed && counts) {
        if (s->score_counts.n >= SCORE_COUNTS_MAX)
            de_map_clear(&s->score_counts);
        memcpy(&bits, &sum, sizeof bits);
        de_map_put(&s->score_counts, key, bits);
        s->score_counts_hits = hits;
    }
    return true;
}

de_rc pol_set_admit(pol_set *s, const pol_claiminfo *claim, bool *admitted, char *reason, size_t cap,
                    pol_failure *first)
{
    *admitted = true;
    if (cap)
        reason[0] = 0;
    uint64_t seed = de_hash_bytes(de_intern_str(s->in, claim->name), de_intern_len(s->in, claim->name)) ^
                    de_hash_bytes(de_intern_str(s->in, claim->ns), de_intern_len(s->in, claim->ns));
    for (uint32_t i = 0; i < s->npols; i++) {
        pol_policy *p = s->pols[i];
        if (!(p->hooks & POL_HOOK_ADMIT))
            continue;
        callctx c = {.set = s, .p = p, .hook = H_ADMIT, .claim = claim};
        pol_failure f = {0};
        pol_reason r = call(s, &c, seed, &f);
        if (r != POL_R_NONE && first && first->reason == POL_R_NONE)
            *first = f;
        if (r == POL_R_NONE && !c.admitted) {
            *admitted = false;
            snprintf(reason, cap, "policy %s: %s", p->name, c.reason);
            return DE_OK;
        }
        if (r != POL_R_NONE && p->failure == POL_FAIL_CLOSED) {
            *admitted = false;
            snprintf(reason, cap, "policy %s failed (%s): %s", p->name, pol_reason_str(r), f.err.msg);
            return DE_OK;
        }
    }
    return DE_OK;
}

pol_reason pol_set_call_one(pol_set *s, uint32_t pi, unsigned hook, const de_devview *dev,
                            const pol_nodeinfo *node, const de_devview *placement, uint32_t nplace,
                            const pol_claiminfo *claim, uint64_t *instr)
{
    static __thread cattr cbuf[POL_MAX_DERIVED];
    pol_policy *p = s->pols[pi];
    int h = hook == POL_HOOK_DERIVE ? H_DERIVE : hook == POL_HOOK_GROUPS ? H_GROUPS : hook == POL_HOOK_SCORE ? H_SCORE : H_ADMIT;
    if (!(p->hooks & hook))
        return POL_R_NONE;
    callctx c = {.set = s, .p = p, .hook = h, .v = dev, .attrs = cbuf, .node = node, .placement = placement,
                 .nplace = nplace, .claim = claim};
    uint64_t before = p->vm.instr_total;
    pol_reason r = call(s, &c, dev ? device_seed(s, dev) : 0, NULL);
    if (instr)
        *instr = p->vm.instr_total - before;
    return r;
}

bool pol_set_sees(const pol_set *s, uint32_t pi, uint32_t driver)
{
    return sees_driver(s->pols[pi], driver);
}

void pol_set_stats(const pol_set *s, pol_stats *out)
{
    *out = s->stats;
}

void pol_set_exact_counting(pol_set *s, bool on)
{
    for (uint32_t i = 0; i < s->npols; i++)
        s->pols[i]->vm.exact = on;
}
