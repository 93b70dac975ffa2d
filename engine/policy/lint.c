/*
 * lint.c - static checks for policy authors.
 *
 * Global accesses are found in the compiled bytecode rather than by
 * scanning tokens: the Lua compiler already resolved every name to a
 * local, an upvalue or a field of _ENV, so reading its output is exact
 * (shadowed names, nested functions, `local _ENV` tricks and all).  The
 * chunk is dumped with lua_dump (debug info kept) and the 5.4 format is
 * walked: for each function prototype, GETTABUP/SETTABUP on an upvalue named
 * "_ENV" with a constant string key is a global read/write, and a GETFIELD
 * right after a global read is a library field (string.dump).  Lines come
 * from the prototype's line information.  The dump header is checked first;
 * a Lua build with another format makes the global scan report itself as
 * unavailable instead of guessing.
 */
#include "lint.h"
#include "../base/dir.h"
#include "pol_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lua 5.4 opcodes used here (lopcodes.h). */
enum { OP_GETTABUP = 11, OP_GETFIELD = 14, OP_SETTABUP = 15 };
#define GET_OP(i) ((int)((i) & 0x7f))
#define GET_A(i) ((int)(((i) >> 7) & 0xff))
#define GET_B(i) ((int)(((i) >> 16) & 0xff))
#define GET_C(i) ((int)(((i) >> 24) & 0xff))
#define GET_K(i) ((int)(((i) >> 15) & 1))

typedef struct rd {
    const uint8_t *p, *end;
    bool bad;
} rd;

static uint8_t rbyte(rd *r)
{
    if (r->p >= r->end) {
        r->bad = true;
        return 0;
    }
    return *r->p++;
}

static size_t rsize(rd *r)
{
    size_t x = 0;
    for (int i = 0; i < 10; i++) {
        uint8_t b = rbyte(r);
        x = (x << 7) | (b & 0x7f);
        if (b & 0x80)
            return x;
    }
    r->bad = true;
    return 0;
}

static const uint8_t *rbytes(rd *r, size_t n)
{
    if ((size_t)(r->end - r->p) < n) {
        r->bad = true;
        r->p = r->end;
        return NULL;
    }
    const uint8_t *s = r->p;
    r->p += n;
    return s;
}

/* Returns the string (not NUL-terminated) and its length; NULL for a NULL string. */
static const char *rstring(rd *r, size_t *len)
{
    size_t n = rsize(r);
    if (n == 0) {
        *len = 0;
        return NULL;
    }
    *len = n - 1;
    return (const char *)rbytes(r, n - 1);
}

typedef struct kstr {
    const char *s;
    size_t n;
    bool isstr;
} kstr;

typedef struct scan {
    pol_global_use *out;
    int cap, n;
} scan;

static void add_use(scan *sc, const kstr *k, const char *field, size_t flen, int line, bool write)
{
    if (sc->n >= sc->cap)
        return;
    pol_global_use *u = &sc->out[sc->n++];
    snprintf(u->name, sizeof u->name, "%.*s", (int)k->n, k->s);
    snprintf(u->field, sizeof u->field, "%.*s", (int)flen, field ? field : "");
    u->line = line;
    u->write = write;
}

static int line_of(int pc, int linedefined, const int8_t *lineinfo, int nli, const int *abspc, const int *absline,
                   int nabs)
{
    int basepc, base;
    if (nabs == 0 || pc < abspc[0]) {
        basepc = -1;
        base = linedefined;
    } else {
        int i = 0;
        while (i + 1 < nabs && abspc[i + 1] <= pc)
            i++;
        basepc = abspc[i];
        base = absline[i];
    }
    while (basepc++ < pc && basepc < nli)
        base += lineinfo[basepc];
    return base;
}

static void function(rd *r, scan *sc, int depth)
{
    if (depth > 200) {
        r->bad = true;
        return;
    }
    size_t sl;
    rstring(r, &sl); /* source */
    int linedefined = (int)rsize(r);
    rsize(r); /* lastlinedefined */
    rbyte(r);
    rbyte(r);
    rbyte(r);
    size_t ncode = rsize(r);
    const uint8_t *code = rbytes(r, ncode * 4);
    size_t nk = rsize(r);
    kstr *k = calloc(nk ? nk : 1, sizeof *k);
    for (size_t i = 0; i < nk && !r->bad; i++) {
        uint8_t t = rbyte(r);
        switch (t) {
        case 3:  /* integer */
        case 19: /* float */
            rbytes(r, 8);
            break;
        case 4:  /* short string */
        case 20: /* long string */
            k[i].s = rstring(r, &k[i].n);
            k[i].isstr = k[i].s != NULL;
            break;
        default: /* nil, false, true */
            break;
        }
    }
    size_t nup = rsize(r);
    for (size_t i = 0; i < nup; i++)
        rbytes(r, 3);
    size_t np = rsize(r);
    for (size_t i = 0; i < np && !r->bad; i++)
        function(r, sc, depth + 1);
    size_t nli = rsize(r);
    const int8_t *lineinfo = (const int8_t *)rbytes(r, nli);
    size_t nabs = rsize(r);
    int *abspc = calloc(nabs ? nabs : 1, sizeof(int)), *absline = calloc(nabs ? nabs : 1, sizeof(int));
    for (size_t i = 0; i < nabs && !r->bad; i++) {
        abspc[i] = (int)rsize(r);
        absline[i] = (int)rsize(r);
    }
    size_t nloc = rsize(r);
    for (size_t i = 0; i < nloc && !r->bad; i++) {
        rstring(r, &sl);
        rsize(r);
        rsize(r);
    }
    size_t nupn = rsize(r);
    int env_up[256];
    for (size_t i = 0; i < 256; i++)
        env_up[i] = 0;
    for (size_t i = 0; i < nupn && !r->bad; i++) {
        size_t n;
        const char *nm = rstring(r, &n);
        if (i < 256 && nm && n == 4 && !memcmp(nm, "_ENV", 4))
            env_up[i] = 1;
    }
    if (!r->bad && code) {
        for (size_t pc = 0; pc < ncode; pc++) {
            uint32_t ins;
            memcpy(&ins, code + pc * 4, 4);
            int op = GET_OP(ins);
            int line = line_of((int)pc, linedefined, lineinfo, (int)nli, abspc, absline, (int)nabs);
            if (op == OP_GETTABUP && env_up[GET_B(ins)] && (size_t)GET_C(ins) < nk && k[GET_C(ins)].isstr) {
                /* a field read right after it is recorded with the field */
                const kstr *key = &k[GET_C(ins)];
                uint32_t next = 0;
                if (pc + 1 < ncode)
                    memcpy(&next, code + (pc + 1) * 4, 4);
                if (pc + 1 < ncode && GET_OP(next) == OP_GETFIELD && GET_B(next) == GET_A(ins) &&
                    (size_t)GET_C(next) < nk && k[GET_C(next)].isstr)
                    add_use(sc, key, k[GET_C(next)].s, k[GET_C(next)].n, line, false);
                else
                    add_use(sc, key, NULL, 0, line, false);
            } else if (op == OP_SETTABUP && env_up[GET_A(ins)] && (size_t)GET_B(ins) < nk &&
                       k[GET_B(ins)].isstr) {
                add_use(sc, &k[GET_B(ins)], NULL, 0, line, true);
            }
        }
    }
    free(k);
    free(abspc);
    free(absline);
}

typedef struct dumpbuf {
    uint8_t *p;
    size_t n, cap;
} dumpbuf;

static int writer(lua_State *L, const void *p, size_t sz, void *ud)
{
    (void)L;
    dumpbuf *b = ud;
    if (b->n + sz > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 4096;
        while (nc < b->n + sz)
            nc *= 2;
        b->p = de_xrealloc(b->p, nc);
        b->cap = nc;
    }
    memcpy(b->p + b->n, p, sz);
    b->n += sz;
    return 0;
}

int pol_lint_globals(const char *chunkname, const char *text, size_t len, pol_global_use *out, int cap, char *msg,
                     size_t msgcap)
{
    lua_State *L = luaL_newstate();
    if (!L) {
        snprintf(msg, msgcap, "out of memory");
        return -1;
    }
    int n = -1;
    if (luaL_loadbufferx(L, text, len, chunkname, "t") != LUA_OK) {
        snprintf(msg, msgcap, "%s", lua_tostring(L, -1));
        lua_close(L);
        return -1;
    }
    dumpbuf b = {0};
    lua_dump(L, writer, &b, 0);
    rd r = {b.p, b.p + b.n, false};
    static const uint8_t sig[] = {0x1b, 'L', 'u', 'a', 0x54, 0, 0x19, 0x93, '\r', '\n', 0x1a, '\n', 4, 8, 8};
    const uint8_t *h = rbytes(&r, sizeof sig);
    if (!h || memcmp(h, sig, sizeof sig)) {
        snprintf(msg, msgcap, "global scan unavailable: unexpected bytecode format");
        free(b.p);
        lua_close(L);
        return -2;
    }
    rbytes(&r, 16); /* LUAC_INT, LUAC_NUM */
    rbyte(&r);      /* main function's upvalue count */
    scan sc = {out, cap, 0};
    function(&r, &sc, 0);
    if (r.bad) {
        snprintf(msg, msgcap, "global scan unavailable: could not read the bytecode");
        n = -2;
    } else
        n = sc.n;
    free(b.p);
    lua_close(L);
    return n;
}

/* ---- the directory ------------------------------------------------------------ */

typedef struct lintctx {
    pol_lint_cb cb;
    void *ctx;
    pol_lint_summary *sum;
    pol_vm vm;  /* sandbox VMs to ask which globals exist: policies */
    pol_vm tvm; /* and spec files (dra.test) */
    /* file:line of every error reported so far: the loader's pass skips
     * what the file pass already said (a syntax error, once) */
    char **seen;
    uint32_t nseen;
} lintctx;

static void problem(lintctx *c, const char *file, int line, bool error, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void problem(lintctx *c, const char *file, int line, bool error, const char *fmt, ...)
{
    char msg[DE_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (error) {
        c->sum->errors++;
        char key[DE_ERR_FIELD_MAX + 16];
        snprintf(key, sizeof key, "%s:%d", file, line);
        c->seen = de_xrealloc(c->seen, (c->nseen + 1) * sizeof *c->seen);
        c->seen[c->nseen++] = de_xstrdup(key);
    } else {
        c->sum->warnings++;
    }
    pol_lint_problem p = {file, line, error, msg};
    if (c->cb)
        c->cb(c->ctx, &p);
}

static const char *const spec_globals[] = {
    "describe", "context", "insulate", "expose", "it", "spec", "test", "pending", "before_each",
    "after_each", "setup", "teardown", "lazy_setup", "lazy_teardown", "strict_setup", "strict_teardown",
    "finally", "assert",
};

/* Does the sandbox define name (and name.field)? */
static bool sandbox_has(lintctx *c, bool spec, const char *name, const char *field, bool *field_ok)
{
    lua_State *L = spec ? c->tvm.L : c->vm.L;
    pol_sandbox_push_globals(L);
    lua_pushstring(L, name);
    int t = lua_rawget(L, -2);
    bool ok = t != LUA_TNIL;
    *field_ok = true;
    if (ok && field && field[0] && t == LUA_TTABLE) {
        /* libraries are proxies: look through their __index */
        if (lua_getmetatable(L, -1)) {
            lua_pushliteral(L, "__index");
            lua_rawget(L, -2);
            if (lua_istable(L, -1)) {
                lua_pushstring(L, field);
                *field_ok = lua_rawget(L, -2) != LUA_TNIL;
                lua_pop(L, 1);
            }
            lua_pop(L, 2);
        }
    }
    lua_pop(L, 2);
    return ok;
}

static char *slurp(const char *path, size_t *len, de_err *e)
{
    char *buf;
    de_read_opts o = {.max = POL_MAX_FILE, .binary_ok = true};
    return de_read_input(path, &o, &buf, len, NULL, e) == DE_OK ? buf : NULL;
}

static void lint_globals(lintctx *c, const char *path, bool spec)
{
    size_t len;
    de_err re;
    de_err_clear(&re);
    char *text = slurp(path, &len, &re);
    if (!text) {
        problem(c, path, 0, true, "cannot read the file: %s", re.msg);
        return;
    }
    c->sum->files++;
    char cname[DE_ERR_FIELD_MAX + 2];
    snprintf(cname, sizeof cname, "@%s", path);
    pol_global_use uses[512];
    char msg[DE_ERR_MSG_MAX];
    int n = pol_lint_globals(cname, text, len, uses, (int)DE_ARRAY_LEN(uses), msg, sizeof msg);
    free(text);
    if (n == -1) {
        /* "path:line: message" */
        int line = 0;
        size_t pl = strlen(path);
        const char *m = msg;
        if (!strncmp(msg, path, pl) && msg[pl] == ':') {
            line = atoi(msg + pl + 1);
            m = strchr(msg + pl + 1, ':');
            m = m ? m + 2 : msg;
        }
        problem(c, path, line, true, "syntax error: %s", m);
        return;
    }
    if (n == -2) {
        problem(c, path, 0, false, "%s", msg);
        return;
    }
    for (int i = 0; i < n; i++) {
        pol_global_use *u = &uses[i];
        bool is_spec_global = false;
        if (spec)
            for (size_t j = 0; j < DE_ARRAY_LEN(spec_globals); j++)
                if (!strcmp(u->name, spec_globals[j]))
                    is_spec_global = true;
        if (u->write) {
            problem(c, path, u->line, true,
                    "assignment to global '%s' (the policy environment is read-only; use a local)", u->name);
            continue;
        }
        if (is_spec_global)
            continue;
        bool field_ok;
        if (!sandbox_has(c, spec, u->name, u->field, &field_ok))
            problem(c, path, u->line, true, "undeclared global '%s' (not in the policy sandbox)", u->name);
        else if (!field_ok)
            problem(c, path, u->line, true, "'%s.%s' is not available in the policy sandbox", u->name,
                    u->field);
    }
}

static bool lua_name(const char *name) { return de_ends_with(name, ".lua"); }
static bool not_fixtures(const char *name) { return strcmp(name, "fixtures") != 0; }

/* What the walk skips (a FIFO or a dangling link named x.lua, a symlink
 * loop) is a problem of the directory under lint. */
static void walk_problem(void *ctx, const char *path, const char *what)
{
    problem(ctx, path, 0, true, "%s", what);
}

static void walk(lintctx *c, const char *dir)
{
    de_walk_opts o = {.want = lua_name, .max_depth = 4, .enter = not_fixtures, .notice = walk_problem,
                      .notice_ctx = c};
    de_walk_out w;
    de_err e;
    de_err_clear(&e);
    if (de_walk(dir, &o, &w, &e) != DE_OK) {
        problem(c, dir, 0, true, "%s", e.msg);
        return;
    }
    for (size_t i = 0; i < w.nfiles; i++)
        lint_globals(c, w.files[i], de_ends_with(w.files[i], "_spec.lua"));
    de_walk_free(&w);
}

/* One loader error: "file:line: message" split back into its parts. */
static void load_problem(void *ctx, const de_err *err)
{
    lintctx *c = ctx;
    de_err e = *err;
    const char *m = e.msg;
    size_t fl = strlen(e.file);
    if (fl && !strncmp(m, e.file, fl) && m[fl] == ':') {
        if (!e.line)
            e.line = atoi(m + fl + 1);
        const char *rest = strchr(m + fl + 1, ':');
        m = rest ? rest + 1 + (rest[1] == ' ') : m;
    }
    const char *file = e.file[0] ? e.file : "?";
    char key[DE_ERR_FIELD_MAX + 16];
    snprintf(key, sizeof key, "%s:%d", file, e.line);
    for (uint32_t i = 0; i < c->nseen; i++)
        if (!strcmp(c->seen[i], key))
            return;
    problem(c, file, e.line, true, "%s", m);
}

void pol_lint_dir(const char *dir, const pol_config *cfg, pol_lint_cb cb, void *ctx, pol_lint_summary *sum)
{
    memset(sum, 0, sizeof *sum);
    lintctx c = {cb, ctx, sum, {0}, {0}, NULL, 0};
    de_interner *in = de_intern_new();
    de_err e;
    de_err_clear(&e);
    if (!de_is_dir(dir)) {
        problem(&c, dir, 0, true, "not a directory");
        goto out;
    }
    if (pol_vm_open(&c.vm, cfg, in, "lint", "", "lint", false, &e) != DE_OK ||
        pol_vm_open(&c.tvm, cfg, in, "lint", "", "lint", true, &e) != DE_OK) {
        problem(&c, dir, 0, true, "%s", e.msg);
        pol_vm_close(&c.vm);
        goto out;
    }
    walk(&c, dir);
    pol_vm_close(&c.vm);
    pol_vm_close(&c.tvm);
    /* Metadata, hooks, domains and ownership: every check the loader makes,
     * each error reported (pol_set_check goes on after one), so lint
     * passes exactly when the engine would load the directory. */
    uint32_t npolicies = 0;
    if (!pol_set_check(dir, in, cfg, load_problem, &c, &npolicies) && !npolicies)
        problem(&c, dir, 0, false, "no policy found (policies are *.lua files or packs with pack.lua)");
out:
    for (uint32_t i = 0; i < c.nseen; i++)
        free(c.seen[i]);
    free(c.seen);
    de_intern_free(in);
}
