/*
 * load.c - reading policy files and packs, validating their metadata and
 * hooks, and checking attribute-domain ownership across a whole set.
 *
 * A policy file is compiled in text mode only and its top level runs once,
 * in its own fresh VM, under the load budget (Redis gives FUNCTION LOAD
 * 500 ms).  It must return a table; every field is checked here, and an
 * unknown field is an error (a misspelt hook would otherwise be silently
 * ignored).  Errors name file:line: Lua reports syntax and runtime errors
 * with their line, and metadata errors point at the line that sets the field
 * (found by a token scan of the source) or at the chunk's `return`.
 *
 * Packs: <dir>/pack.lua returns {name, version, policies = {...},
 * domains = {...}}; each listed policy must keep to the pack's domains.
 * Loose policies and packs together must not overlap in what they own.
 */
#include "../base/dir.h"
#include "../base/semver.h"
#include "pol_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* ---- source helpers -------------------------------------------------------- */

/* Policy sources and pack manifests: regular files only (a FIFO named in a
 * pack's `policies` would block a read forever), at most POL_MAX_FILE. */
static de_rc read_source(const char *path, char **out, size_t *len, de_err *e)
{
    de_read_opts o = {.max = POL_MAX_FILE, .binary_ok = true};
    return de_read_input(path, &o, out, len, NULL, e);
}

/* Line of the first `field =` (not `==`) outside comments and strings, or of
 * the last top-level-looking `return`, or 1. */
static int field_line(const char *s, size_t n, const char *field)
{
    size_t fl = strlen(field);
    int line = 1, ret_line = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\n') {
            line++;
            continue;
        }
        if (c == '-' && i + 1 < n && s[i + 1] == '-') {
            if (i + 3 < n && s[i + 2] == '[' && s[i + 3] == '[') {
                for (i += 4; i + 1 < n && !(s[i] == ']' && s[i + 1] == ']'); i++)
                    if (s[i] == '\n')
                        line++;
                i++;
            } else {
                while (i < n && s[i] != '\n')
                    i++;
                line++;
            }
            continue;
        }
        if (c == '"' || c == '\'') {
            for (i++; i < n && s[i] != c && s[i] != '\n'; i++)
                if (s[i] == '\\')
                    i++;
            continue;
        }
        bool start = i == 0 || !(s[i - 1] == '_' || s[i - 1] == '.' || (s[i - 1] >= 'a' && s[i - 1] <= 'z') ||
                                 (s[i - 1] >= 'A' && s[i - 1] <= 'Z') || (s[i - 1] >= '0' && s[i - 1] <= '9'));
        if (!start)
            continue;
        if (i + 6 <= n && !memcmp(s + i, "return", 6) && (i + 6 == n || !is_lower_alnum(s[i + 6])))
            ret_line = line;
        if (i + fl <= n && !memcmp(s + i, field, fl)) {
            size_t j = i + fl;
            if (j < n && (s[j] == '_' || is_lower_alnum(s[j]) || (s[j] >= 'A' && s[j] <= 'Z')))
                continue;
            while (j < n && (s[j] == ' ' || s[j] == '\t'))
                j++;
            if (j < n && s[j] == '=' && !(j + 1 < n && s[j + 1] == '='))
                return line;
        }
    }
    return ret_line ? ret_line : 1;
}

/* Line of the first string literal "str" (or 'str') in s, else of `field =`. */
static int literal_line(const char *s, size_t n, const char *str, const char *field)
{
    size_t m = strlen(str);
    int line = 1;
    for (size_t i = 0; i + m + 2 <= n; i++) {
        if (s[i] == '\n')
            line++;
        else if ((s[i] == '"' || s[i] == '\'') && s[i + m + 1] == s[i] && !memcmp(s + i + 1, str, m))
            return line;
    }
    return field_line(s, n, field);
}

/* The lines of a list of domain entries, for ownership messages. */
static int *domain_lines(const char *s, size_t n, char *const *doms, uint32_t nd)
{
    int *lines = de_xcalloc(nd ? nd : 1, sizeof *lines);
    for (uint32_t i = 0; i < nd; i++)
        lines[i] = literal_line(s, n, doms[i], "domains");
    return lines;
}

typedef struct srcref {
    const char *path, *text;
    size_t len;
} srcref;

static de_rc meta_err(de_err *e, const srcref *src, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static de_rc meta_err(de_err *e, const srcref *src, const char *field, const char *fmt, ...)
{
    char msg[DE_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = field_line(src->text, src->len, field ? field : "return");
    if (!e)
        return DE_EINVAL;
    de_errf(e, DE_EINVAL, "%s:%d: %s", src->path, line, msg);
    snprintf(e->file, sizeof e->file, "%s", src->path);
    e->line = line;
    return DE_EINVAL;
}

/* ---- reading the returned table (raw access only: no metamethods run) --- */

static bool raw_string(lua_State *L, int t, const char *k, const char **out, size_t *len, bool *present)
{
    lua_pushstring(L, k);
    int ty = lua_rawget(L, t);
    *present = ty != LUA_TNIL;
    if (ty == LUA_TSTRING)
        *out = lua_tolstring(L, -1, len);
    lua_pop(L, 1); /* the string stays alive: the table holds it */
    return ty == LUA_TSTRING;
}

static const char *const policy_fields[] = {"name",  "version", "api",    "domains", "drivers",
                                            "failure", "weight", "description", "derive", "groups",
                                            "score", "admit"};
const char *const pol_hook_names[POL_NHOOKS] = {"derive", "groups", "score", "admit"};

static de_rc check_fields(lua_State *L, int t, const char *const *allowed, size_t nallowed,
                          const srcref *src, const char *what, de_err *e)
{
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        if (lua_type(L, -1) != LUA_TSTRING) {
            lua_pop(L, 1);
            return meta_err(e, src, NULL, "%s table has a non-string key", what);
        }
        const char *k = lua_tostring(L, -1);
        bool ok = false;
        for (size_t i = 0; i < nallowed; i++)
            if (!strcmp(k, allowed[i]))
                ok = true;
        if (!ok) {
            char list[512] = "";
            for (size_t i = 0; i < nallowed; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", allowed[i]);
            char key[128];
            snprintf(key, sizeof key, "%s", k);
            lua_pop(L, 1);
            return meta_err(e, src, key, "unknown field '%s' in the %s table (allowed: %s)", key, what, list);
        }
    }
    return DE_OK;
}

static bool valid_name(const char *s, size_t n)
{
    if (n == 0 || n > 63 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_lower_alnum(s[i]) && s[i] != '-' && s[i] != '.')
            return false;
    return true;
}

/* name, version: shared by policies and packs. */
static de_rc check_ident(lua_State *L, int t, const srcref *src, const char *what, char **name,
                         char **version, de_err *e)
{
    const char *s;
    size_t n;
    bool present;
    if (!raw_string(L, t, "name", &s, &n, &present))
        return meta_err(e, src, present ? "name" : NULL, "%s: 'name' must be a string%s", what,
                        present ? "" : " (missing)");
    if (!valid_name(s, n))
        return meta_err(e, src, "name",
                        "%s: name \"%s\" must be 1-63 lower-case letters, digits, '-' or '.', "
                        "starting and ending with a letter or digit", what, s);
    *name = de_xstrndup(s, n);
    if (!raw_string(L, t, "version", &s, &n, &present))
        return meta_err(e, src, present ? "version" : NULL, "%s: 'version' must be a semver string%s",
                        what, present ? "" : " (missing)");
    de_semver v;
    de_err ve;
    de_err_clear(&ve);
    if (de_semver_parse(s, n, &v, &ve) != DE_OK)
        return meta_err(e, src, "version", "%s: version \"%s\" is not a semantic version: %s", what, s,
                        ve.msg);
    *version = de_xstrndup(s, n);
    return DE_OK;
}

static de_rc check_domains(lua_State *L, int t, const char *field, const srcref *src, char ***out,
                           uint32_t *nout, bool attrs_ok, de_err *e)
{
    lua_pushstring(L, field);
    int ty = lua_rawget(L, t);
    if (ty == LUA_TNIL) {
        lua_pop(L, 1);
        return DE_OK;
    }
    int d = lua_gettop(L);
    if (ty != LUA_TTABLE) {
        lua_pop(L, 1);
        return meta_err(e, src, field, "'%s' must be a list of strings", field);
    }
    size_t n = lua_rawlen(L, d);
    size_t count = 0;
    lua_pushnil(L);
    while (lua_next(L, d)) {
        lua_pop(L, 1);
        count++;
    }
    if (count != n || n > 64) {
        lua_pop(L, 1);
        return meta_err(e, src, field, "'%s' must be a list of at most 64 strings", field);
    }
    char **list = de_xcalloc(n ? n : 1, sizeof *list);
    *out = list;
    *nout = 0;
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, d, (lua_Integer)i + 1);
        if (lua_type(L, -1) != LUA_TSTRING) {
            lua_pop(L, 2);
            return meta_err(e, src, field, "'%s'[%zu] must be a string", field, i + 1);
        }
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        const char *dom, *name;
        size_t dl, nl;
        pol_split_entry(s, &dom, &dl, &name, &nl);
        bool ok = pol_valid_domain(dom, dl) && (!name || (attrs_ok && pol_valid_identifier(name, nl)));
        if (!ok) {
            char copy[128];
            snprintf(copy, sizeof copy, "%s", s);
            lua_pop(L, 2);
            return meta_err(e, src, field,
                            "'%s'[%zu] \"%s\" is not %s", field, i + 1, copy,
                            attrs_ok ? "a domain (DNS subdomain, at most 63 bytes) or a qualified "
                                       "attribute name (domain/identifier)"
                                     : "a DNS subdomain of at most 63 bytes");
        }
        if (attrs_ok && !name && pol_is_standard_domain(dom, dl)) {
            char copy[128];
            snprintf(copy, sizeof copy, "%s", s);
            lua_pop(L, 2);
            return meta_err(e, src, field,
                            "'%s'[%zu]: the standard domain \"%s\" can only be owned attribute by "
                            "attribute (e.g. \"%s/numaNode\")", field, i + 1, copy, copy);
        }
        for (uint32_t j = 0; j < *nout; j++)
            if (!strcmp(list[j], s)) {
                char copy[128];
                snprintf(copy, sizeof copy, "%s", s);
                lua_pop(L, 2);
                return meta_err(e, src, field, "'%s' lists \"%s\" twice", field, copy);
            }
        list[(*nout)++] = de_xstrndup(s, len);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return DE_OK;
}

/* ---- loading one policy -------------------------------------------------- */

typedef struct loadctx {
    const char *text;
    size_t len;
    const char *path;
} loadctx;

static int load_tramp(lua_State *L)
{
    loadctx *c = lua_touserdata(L, 1);
    lua_pushfstring(L, "@%s", c->path);
    int st = luaL_loadbufferx(L, c->text, c->len, lua_tostring(L, -1), "t");
    if (st != LUA_OK)
        return lua_error(L);
    pol_sandbox_push_env(L);
    lua_setupvalue(L, -2, 1);
    lua_call(L, 0, 1);
    return 1;
}

static int ref_tramp(lua_State *L)
{
    /* 1: policy table, 2: pol_policy* */
    pol_policy *p = lua_touserdata(L, 2);
    for (int h = 0; h < POL_NHOOKS; h++) {
        lua_getfield(L, 1, pol_hook_names[h]);
        if (lua_isfunction(L, -1))
            p->ref[h] = luaL_ref(L, LUA_REGISTRYINDEX);
        else
            lua_pop(L, 1);
    }
    return 0;
}

static de_rc run_protected_load(pol_vm *vm, const char *path, const char *text, size_t len, de_err *e)
{
    loadctx c = {text, len, path};
    pol_vm_begin(vm, true, 0);
    lua_pushcfunction(vm->L, load_tramp);
    lua_pushlightuserdata(vm->L, &c);
    pol_reason r = pol_vm_pcall(vm, 1, 1);
    pol_vm_end(vm);
    if (r != POL_R_NONE) {
        de_rc rc = r == POL_R_ERROR ? DE_EPOLICY : DE_EBUDGET;
        if (r == POL_R_TIMEOUT)
            rc = DE_ETIMEOUT;
        /* syntax and runtime errors already read "path:line: msg"; an error
         * object that is not a string, a C stack overflow or a yield do
         * not, and the message must still name the file */
        bool named = strstr(vm->errmsg, path) != NULL;
        de_errf(e, rc, "%s%s%s%s", named ? "" : path, named ? "" : ": ", r == POL_R_ERROR ? "" : "loading: ",
                vm->errmsg);
        if (e) {
            snprintf(e->file, sizeof e->file, "%s", vm->errfile[0] ? vm->errfile : path);
            e->line = vm->errline;
            if (!e->line) {
                /* "path:LINE:" at the start of a syntax error */
                const char *p = strstr(vm->errmsg, path);
                if (p && p[strlen(path)] == ':')
                    e->line = atoi(p + strlen(path) + 1);
            }
        }
        return rc;
    }
    return DE_OK;
}

de_rc pol_policy_load(pol_policy *p, const char *path, const char *pack, const pol_config *cfg,
                      de_interner *in, bool test, de_err *e)
{
    memset(p, 0, sizeof *p);
    for (int h = 0; h < POL_NHOOKS; h++)
        p->ref[h] = LUA_NOREF;
    p->file = de_xstrdup(path);
    p->pack = pack ? de_xstrdup(pack) : NULL;
    p->weight = 1;
    p->failure = cfg->failure;
    char *text = NULL;
    size_t len = 0;
    DE_TRY(read_source(path, &text, &len, e));
    pol_sha256_hex(text, len, p->revision);
    de_rc rc = pol_vm_open(&p->vm, cfg, in, p->file, p->revision, p->file, test, e);
    if (rc != DE_OK) {
        free(text);
        return rc;
    }
    rc = run_protected_load(&p->vm, p->file, text, len, e);
    if (rc != DE_OK)
        goto out;
    lua_State *L = p->vm.L;
    int t = lua_gettop(L);
    srcref src = {p->file, text, len};
    if (lua_type(L, t) != LUA_TTABLE) {
        rc = meta_err(e, &src, NULL,
                      "a policy must return a table (name, version, api, domains and hooks), got %s",
                      luaL_typename(L, t));
        goto out;
    }
    rc = check_fields(L, t, policy_fields, DE_ARRAY_LEN(policy_fields), &src, "policy", e);
    if (rc != DE_OK)
        goto out;
    rc = check_ident(L, t, &src, "policy", &p->name, &p->version, e);
    if (rc != DE_OK)
        goto out;
    p->vm.name = p->name;

    lua_pushliteral(L, "api");
    int ty = lua_rawget(L, t);
    bool api_ok = ty == LUA_TNUMBER && lua_isinteger(L, -1) && lua_tointeger(L, -1) == POL_API;
    lua_pop(L, 1);
    if (!api_ok) {
        rc = meta_err(e, &src, ty == LUA_TNIL ? NULL : "api",
                      "policy %s: 'api' must be %d (the policy API this engine implements)%s", p->name,
                      POL_API, ty == LUA_TNIL ? " (missing)" : "");
        goto out;
    }

    for (int h = 0; h < POL_NHOOKS; h++) {
        lua_pushstring(L, pol_hook_names[h]);
        ty = lua_rawget(L, t);
        lua_pop(L, 1);
        if (ty == LUA_TNIL)
            continue;
        if (ty != LUA_TFUNCTION) {
            rc = meta_err(e, &src, pol_hook_names[h], "policy %s: hook '%s' must be a function, got %s",
                          p->name, pol_hook_names[h], lua_typename(L, ty));
            goto out;
        }
        p->hooks |= 1u << h;
    }
    if (!p->hooks) {
        rc = meta_err(e, &src, NULL, "policy %s defines no hook (derive, groups, score or admit)", p->name);
        goto out;
    }

    rc = check_domains(L, t, "domains", &src, &p->domains, &p->ndomains, true, e);
    if (rc != DE_OK)
        goto out;
    p->domain_lines = domain_lines(text, len, p->domains, p->ndomains);
    p->name_line = field_line(text, len, "name");
    lua_pushliteral(L, "domains");
    ty = lua_rawget(L, t);
    lua_pop(L, 1);
    if (ty == LUA_TNIL) {
        rc = meta_err(e, &src, NULL,
                      "policy %s: 'domains' is required (the attribute domains it may write; {} "
                      "for a policy that derives nothing)", p->name);
        goto out;
    }
    if ((p->hooks & POL_HOOK_DERIVE) && p->ndomains == 0) {
        rc = meta_err(e, &src, "domains", "policy %s has a derive hook but owns no domain", p->name);
        goto out;
    }

    char **drivers = NULL;
    uint32_t ndrivers = 0;
    rc = check_domains(L, t, "drivers", &src, &drivers, &ndrivers, false, e);
    if (drivers) {
        if (rc == DE_OK && ndrivers) {
            p->drivers = de_xcalloc(ndrivers, sizeof *p->drivers);
            for (uint32_t i = 0; i < ndrivers; i++)
                p->drivers[i] = de_intern_cstr(in, drivers[i]);
            p->ndrivers = ndrivers;
        }
        for (uint32_t i = 0; i < ndrivers; i++)
            free(drivers[i]);
        free(drivers);
    }
    if (rc != DE_OK)
        goto out;

    const char *s;
    size_t n;
    bool present;
    bool bad = false;
    if (raw_string(L, t, "failure", &s, &n, &present)) {
        if (!strcmp(s, "open"))
            p->failure = POL_FAIL_OPEN;
        else if (!strcmp(s, "closed"))
            p->failure = POL_FAIL_CLOSED;
        else
            bad = true;
    } else if (present)
        bad = true;
    if (bad) {
        rc = meta_err(e, &src, "failure", "policy %s: 'failure' must be \"open\" or \"closed\"", p->name);
        goto out;
    }
    s = NULL;
    if (raw_string(L, t, "description", &s, &n, &present))
        p->description = de_xstrndup(s, n > 1024 ? 1024 : n);
    else if (present) {
        rc = meta_err(e, &src, "description", "policy %s: 'description' must be a string", p->name);
        goto out;
    }
    lua_pushliteral(L, "weight");
    ty = lua_rawget(L, t);
    if (ty != LUA_TNIL) {
        lua_Number w = lua_tonumber(L, -1);
        if (ty != LUA_TNUMBER || !(w >= 0 && w <= 1e6)) {
            lua_pop(L, 1);
            rc = meta_err(e, &src, "weight", "policy %s: 'weight' must be a number in [0, 1e6]", p->name);
            goto out;
        }
        p->weight = w;
    }
    lua_pop(L, 1);

    /* keep the hooks */
    lua_pushcfunction(L, ref_tramp);
    lua_pushvalue(L, t);
    lua_pushlightuserdata(L, p);
    pol_vm_begin(&p->vm, true, 0);
    pol_reason r = pol_vm_pcall(&p->vm, 2, 0);
    pol_vm_end(&p->vm);
    if (r != POL_R_NONE) {
        rc = pol_vm_error(&p->vm, r, NULL, e);
        goto out;
    }
    lua_settop(L, 0);
    p->seed = de_hash_bytes(p->revision, strlen(p->revision));
out:
    if (rc != DE_OK && e && !e->file[0]) {
        snprintf(e->file, sizeof e->file, "%s", path);
    }
    if (rc != DE_OK && e && !e->policy[0])
        snprintf(e->policy, sizeof e->policy, "%s", p->name ? p->name : "");
    if (rc != DE_OK && e)
        snprintf(e->revision, sizeof e->revision, "%s", p->revision);
    if (p->vm.L)
        lua_settop(p->vm.L, 0);
    free(text);
    return rc;
}

void pol_policy_free(pol_policy *p)
{
    if (!p)
        return;
    pol_vm_close(&p->vm);
    pol_memo_free(p->memo);
    p->memo = NULL;
    pol_dres_free(p);
    free(p->name);
    free(p->version);
    free(p->file);
    free(p->pack);
    free(p->description);
    for (uint32_t i = 0; i < p->ndomains; i++)
        free(p->domains[i]);
    free(p->domains);
    free(p->domain_lines);
    free(p->drivers);
}

/* ---- packs --------------------------------------------------------------- */

typedef struct pack {
    char *dir, *manifest, *name, *version;
    char revision[POL_SHA256_HEX];
    char **policies;
    uint32_t npolicies;
    char **domains;
    uint32_t ndomains;
    int *domain_lines;
    int name_line;
} pack;

static void pack_free(pack *k)
{
    free(k->dir);
    free(k->manifest);
    free(k->name);
    free(k->version);
    for (uint32_t i = 0; i < k->npolicies; i++)
        free(k->policies[i]);
    free(k->policies);
    for (uint32_t i = 0; i < k->ndomains; i++)
        free(k->domains[i]);
    free(k->domains);
    free(k->domain_lines);
}

static const char *const pack_fields[] = {"name", "version", "policies", "domains", "description"};

static bool safe_relative(const char *s)
{
    if (!s[0] || s[0] == '/' || strstr(s, ".."))
        return false;
    size_t n = strlen(s);
    return n > 4 && !strcmp(s + n - 4, ".lua") && !strchr(s, '/');
}

static de_rc pack_load(pack *k, const char *dir, const pol_config *cfg, de_interner *in, de_err *e)
{
    memset(k, 0, sizeof *k);
    k->dir = de_xstrdup(dir);
    size_t ml = strlen(dir) + 16;
    k->manifest = de_xmalloc(ml);
    snprintf(k->manifest, ml, "%s/pack.lua", dir);
    char *text = NULL;
    size_t len = 0;
    DE_TRY(read_source(k->manifest, &text, &len, e));
    pol_sha256_hex(text, len, k->revision);
    pol_vm vm;
    de_rc rc = pol_vm_open(&vm, cfg, in, "pack", k->revision, k->manifest, false, e);
    if (rc != DE_OK) {
        free(text);
        return rc;
    }
    srcref src = {k->manifest, text, len};
    rc = run_protected_load(&vm, k->manifest, text, len, e);
    if (rc != DE_OK)
        goto out;
    lua_State *L = vm.L;
    int t = lua_gettop(L);
    if (lua_type(L, t) != LUA_TTABLE) {
        rc = meta_err(e, &src, NULL, "pack.lua must return a table (name, version, policies, domains)");
        goto out;
    }
    rc = check_fields(L, t, pack_fields, DE_ARRAY_LEN(pack_fields), &src, "pack", e);
    if (rc == DE_OK)
        rc = check_ident(L, t, &src, "pack", &k->name, &k->version, e);
    if (rc == DE_OK)
        rc = check_domains(L, t, "domains", &src, &k->domains, &k->ndomains, true, e);
    if (rc != DE_OK)
        goto out;
    k->domain_lines = domain_lines(text, len, k->domains, k->ndomains);
    k->name_line = field_line(text, len, "name");
    lua_pushliteral(L, "policies");
    int ty = lua_rawget(L, t);
    size_t n = ty == LUA_TTABLE ? lua_rawlen(L, -1) : 0;
    if (ty != LUA_TTABLE || n == 0) {
        lua_pop(L, 1);
        rc = meta_err(e, &src, ty == LUA_TNIL ? NULL : "policies",
                      "pack %s: 'policies' must be a non-empty list of policy file names", k->name);
        goto out;
    }
    k->policies = de_xcalloc(n, sizeof *k->policies);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, -1, (lua_Integer)i + 1);
        const char *s = lua_tostring(L, -1);
        if (lua_type(L, -1) != LUA_TSTRING || !safe_relative(s)) {
            lua_pop(L, 2);
            rc = meta_err(e, &src, "policies",
                          "pack %s: policies[%zu] must name a .lua file in the pack folder", k->name, i + 1);
            goto out;
        }
        k->policies[k->npolicies++] = de_xstrdup(s);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    lua_pushliteral(L, "domains");
    ty = lua_rawget(L, t);
    lua_pop(L, 1);
    if (ty == LUA_TNIL)
        rc = meta_err(e, &src, NULL, "pack %s: 'domains' is required (the attribute domains it owns)",
                      k->name);
out:
    pol_vm_close(&vm);
    free(text);
    return rc;
}

/* ---- sets ---------------------------------------------------------------- */

static void add_policy(pol_set *s, pol_policy *p)
{
    s->pols = de_xrealloc(s->pols, (s->npols + 1) * sizeof *s->pols);
    p->index = s->npols;
    s->pols[s->npols++] = p;
    s->hooks |= p->hooks;
}

/* Report one error: into e (the first, when stopping at it) or to the
 * keep-going callback (lint), which gets every one. */
typedef struct loadrep {
    pol_load_report fn;
    void *ctx;
    uint32_t errors;
} loadrep;

static de_rc report(loadrep *r, de_err *e, const de_err *err)
{
    if (r && r->fn) {
        r->errors++;
        r->fn(r->ctx, err);
        return DE_OK; /* go on */
    }
    if (e)
        *e = *err;
    return err->rc;
}

static de_rc at(loadrep *r, de_err *e, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static de_rc at(loadrep *r, de_err *e, const char *file, int line, const char *fmt, ...)
{
    de_err err;
    de_err_clear(&err);
    char msg[DE_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    de_errf(&err, DE_EINVAL, "%s:%d: %s", file, line, msg);
    snprintf(err.file, sizeof err.file, "%s", file);
    err.line = line;
    return report(r, e, &err);
}

static int dline(const int *lines, uint32_t i) { return lines ? lines[i] : 1; }

/* The policies a pack lists, each kept to the pack's domains.  Keep-going:
 * a policy that fails is reported and left out, the others still load. */
static de_rc load_pack_into(pol_set *s, pack *k, loadrep *rep, de_err *e)
{
    for (uint32_t i = 0; i < k->npolicies; i++) {
        char *path = de_path_join(k->dir, k->policies[i]);
        pol_policy *p = de_xcalloc(1, sizeof *p);
        de_err err;
        de_err_clear(&err);
        de_rc rc = pol_policy_load(p, path, k->name, &s->cfg, s->in, false, &err);
        free(path);
        bool ok = rc == DE_OK;
        if (!ok && (rc = report(rep, e, &err)) != DE_OK) {
            pol_policy_free(p);
            free(p);
            return rc;
        }
        for (uint32_t d = 0; ok && d < p->ndomains; d++) {
            const char *dom, *name;
            size_t dl, nl;
            pol_split_entry(p->domains[d], &dom, &dl, &name, &nl);
            bool in = false;
            for (uint32_t j = 0; j < k->ndomains && !in; j++) {
                if (name)
                    in = pol_entry_covers(k->domains[j], dom, dl, name, nl);
                else
                    in = !strchr(k->domains[j], '/') && pol_entry_covers(k->domains[j], dom, dl, NULL, 0);
            }
            if (!in) {
                ok = false;
                rc = at(rep, e, p->file, dline(p->domain_lines, d),
                        "policy %s owns \"%s\", outside the domains of its pack %s (%s:%d)", p->name, p->domains[d],
                        k->name, k->manifest, k->ndomains ? dline(k->domain_lines, 0) : k->name_line);
                if (rc != DE_OK) {
                    pol_policy_free(p);
                    free(p);
                    return rc;
                }
            }
        }
        if (ok) {
            add_policy(s, p);
        } else {
            pol_policy_free(p);
            free(p);
        }
    }
    return DE_OK;
}

/* Two policies may not write the same attribute; packs may not overlap.
 * Each message names both sides with file:line. */
static de_rc check_ownership(pol_set *s, pack *packs, uint32_t npacks, loadrep *rep, de_err *e)
{
    de_rc rc;
    for (uint32_t i = 0; i < s->npols; i++) {
        pol_policy *a = s->pols[i];
        for (uint32_t j = i + 1; j < s->npols; j++) {
            pol_policy *b = s->pols[j];
            for (uint32_t x = 0; x < a->ndomains; x++)
                for (uint32_t y = 0; y < b->ndomains; y++)
                    if (pol_entries_overlap(a->domains[x], b->domains[y]) &&
                        (rc = at(rep, e, b->file, dline(b->domain_lines, y),
                                 "policy %s owns \"%s\", which overlaps \"%s\" owned by policy %s (%s:%d): "
                                 "two policies may not write the same attribute",
                                 b->name, b->domains[y], a->domains[x], a->name, a->file,
                                 dline(a->domain_lines, x))) != DE_OK)
                        return rc;
            if (!strcmp(a->name, b->name) &&
                (rc = at(rep, e, b->file, b->name_line, "policy name %s is already used by %s:%d", b->name,
                         a->file, a->name_line)) != DE_OK)
                return rc;
        }
    }
    for (uint32_t i = 0; i < npacks; i++) {
        for (uint32_t j = i + 1; j < npacks; j++) {
            for (uint32_t x = 0; x < packs[i].ndomains; x++)
                for (uint32_t y = 0; y < packs[j].ndomains; y++)
                    if (pol_entries_overlap(packs[i].domains[x], packs[j].domains[y]) &&
                        (rc = at(rep, e, packs[j].manifest, dline(packs[j].domain_lines, y),
                                 "pack %s owns \"%s\", which overlaps \"%s\" of pack %s (%s:%d)", packs[j].name,
                                 packs[j].domains[y], packs[i].domains[x], packs[i].name, packs[i].manifest,
                                 dline(packs[i].domain_lines, x))) != DE_OK)
                        return rc;
            if (!strcmp(packs[i].name, packs[j].name) &&
                (rc = at(rep, e, packs[j].manifest, packs[j].name_line, "pack name %s is already used by %s:%d",
                         packs[j].name, packs[i].manifest, packs[i].name_line)) != DE_OK)
                return rc;
        }
        /* loose policies vs pack roots */
        for (uint32_t p = 0; p < s->npols; p++) {
            pol_policy *q = s->pols[p];
            if (q->pack)
                continue;
            for (uint32_t x = 0; x < packs[i].ndomains; x++)
                for (uint32_t y = 0; y < q->ndomains; y++)
                    if (pol_entries_overlap(packs[i].domains[x], q->domains[y]) &&
                        (rc = at(rep, e, q->file, dline(q->domain_lines, y),
                                 "policy %s owns \"%s\", inside the domains of pack %s (%s:%d)", q->name,
                                 q->domains[y], packs[i].name, packs[i].manifest,
                                 dline(packs[i].domain_lines, x))) != DE_OK)
                        return rc;
        }
    }
    return DE_OK;
}

/* The name is there and leads somewhere, whatever it is (a FIFO counts:
 * the reader refuses it with its reason).  A dangling link does not: in a
 * ConfigMap volume the link of a removed key dangles until the kubelet
 * removes it after the ..data flip, so it reads as absent, with a notice. */
static bool named(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return true;
    if (errno == ENOENT && lstat(path, &st) == 0)
        de_notice(path, "dangling symlink (its target does not exist), skipped");
    else if (errno == ELOOP)
        return true; /* the reader says "symlink loop" */
    return false;
}

/* pol_set_load and pol_set_check: stop at the first error (rep NULL), or
 * report every one and load what can be loaded (rep set). */
static de_rc load_set(const char *dir, de_interner *in, const pol_config *cfg, loadrep *rep, pol_set **out,
                      de_err *e)
{
    *out = NULL;
    if (!de_is_dir(dir))
        return de_errf(e, DE_ENOTFOUND, "%s: not a directory", dir);
    pol_set *s = de_xcalloc(1, sizeof *s);
    s->dir = de_xstrdup(dir);
    s->cfg = *cfg;
    s->in = in;
    pack *packs = NULL;
    uint32_t npacks = 0;
    de_rc rc = DE_OK;
    char **names = NULL;
    size_t nnames = 0;

    char *self_manifest = de_path_join(dir, "pack.lua");
    if (named(self_manifest)) {
        /* the directory itself is a pack */
        names = de_xcalloc(1, sizeof *names);
        names[nnames++] = de_xstrdup(".");
    } else if (!de_dir_names(dir, &names, &nnames)) {
        free(self_manifest);
        pol_set_free(s);
        return de_errf(e, DE_EIO, "%s: cannot read directory: %s", dir, strerror(errno));
    }
    free(self_manifest);

    for (size_t i = 0; i < nnames && rc == DE_OK; i++) {
        char *path = strcmp(names[i], ".") ? de_path_join(dir, names[i]) : de_xstrdup(dir);
        char *manifest = de_path_join(path, "pack.lua");
        /* A name that is there but cannot be read (a FIFO or a socket
         * called x.lua or pack.lua) is loaded anyway, so the reader refuses
         * it with its reason: skipping it would quietly drop a policy from
         * the revision. */
        if (de_is_dir(path) && named(manifest)) {
            packs = de_xrealloc(packs, (npacks + 1) * sizeof *packs);
            de_err err;
            de_err_clear(&err);
            if (pack_load(&packs[npacks], path, cfg, in, &err) == DE_OK) {
                npacks++;
                rc = load_pack_into(s, &packs[npacks - 1], rep, e);
            } else {
                pack_free(&packs[npacks]);
                rc = report(rep, e, &err);
            }
        } else if (de_ends_with(names[i], ".lua") && !de_ends_with(names[i], "_spec.lua") && !de_is_dir(path) &&
                   named(path)) {
            pol_policy *p = de_xcalloc(1, sizeof *p);
            de_err err;
            de_err_clear(&err);
            if (pol_policy_load(p, path, NULL, cfg, in, false, &err) == DE_OK) {
                add_policy(s, p);
            } else {
                pol_policy_free(p);
                free(p);
                rc = report(rep, e, &err);
            }
        }
        free(manifest);
        free(path);
    }
    if (rc == DE_OK)
        rc = check_ownership(s, packs, npacks, rep, e);
    if (rc == DE_OK && rep && rep->errors)
        rc = DE_EINVAL;
    if (rc == DE_OK) {
        pol_sha256 h;
        uint8_t d[POL_SHA256_LEN];
        pol_sha256_init(&h);
        for (uint32_t i = 0; i < npacks; i++) {
            pol_sha256_update(&h, "pack\0", 5);
            pol_sha256_update(&h, packs[i].name, strlen(packs[i].name) + 1);
            pol_sha256_update(&h, packs[i].revision, strlen(packs[i].revision) + 1);
        }
        for (uint32_t i = 0; i < s->npols; i++) {
            pol_sha256_update(&h, s->pols[i]->name, strlen(s->pols[i]->name) + 1);
            pol_sha256_update(&h, s->pols[i]->revision, strlen(s->pols[i]->revision) + 1);
        }
        pol_sha256_final(&h, d);
        pol_sha256_tohex(d, s->revision);
    }
    for (uint32_t i = 0; i < npacks; i++)
        pack_free(&packs[i]);
    free(packs);
    for (size_t i = 0; i < nnames; i++)
        free(names[i]);
    free(names);
    if (rc != DE_OK) {
        pol_set_free(s);
        return rc;
    }
    *out = s;
    return DE_OK;
}

de_rc pol_set_load(const char *dir, de_interner *in, const pol_config *cfg, pol_set **out, de_err *e)
{
    return load_set(dir, in, cfg, NULL, out, e);
}

uint32_t pol_set_check(const char *dir, de_interner *in, const pol_config *cfg, pol_load_report fn, void *ctx,
                       uint32_t *npolicies)
{
    loadrep rep = {fn, ctx, 0};
    pol_set *s = NULL;
    de_err e;
    de_err_clear(&e);
    if (load_set(dir, in, cfg, &rep, &s, &e) != DE_OK && !rep.errors) {
        fn(ctx, &e); /* the directory itself */
        rep.errors++;
    }
    *npolicies = s ? s->npols : 0;
    pol_set_free(s);
    return rep.errors;
}

void pol_set_free(pol_set *s)
{
    if (!s)
        return;
    pol_facts_free(s);
    de_map_destroy(&s->score_counts);
    for (uint32_t i = 0; i < s->npols; i++) {
        pol_policy_free(s->pols[i]);
        free(s->pols[i]);
    }
    free(s->pols);
    free(s->dir);
    free(s);
}

const char *pol_set_revision(const pol_set *s) { return s->revision; }
const char *pol_set_dir(const pol_set *s) { return s->dir; }
uint32_t pol_set_count(const pol_set *s) { return s->npols; }
unsigned pol_set_hooks(const pol_set *s) { return s->hooks; }

void pol_set_info(const pol_set *s, uint32_t i, pol_info *out)
{
    const pol_policy *p = s->pols[i];
    out->name = p->name;
    out->version = p->version;
    out->file = p->file;
    out->pack = p->pack;
    out->revision = p->revision;
    out->hooks = p->hooks;
    out->domains = (const char *const *)p->domains;
    out->ndomains = p->ndomains;
    out->failure = p->failure;
    out->weight = p->weight;
    out->memory = p->vm.mem_used;
}

