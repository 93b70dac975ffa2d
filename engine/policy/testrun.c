/*
 * testrun.c - discovering and running policy spec files.
 *
 * Each spec file gets a fresh VM built exactly like a policy's (same
 * sandbox, same budgets, plus dra.test and the draengine.test module), so a
 * spec can only do what a policy can, and no state leaks from one file to
 * the next (Neovim's lesson with busted in one shared editor).  The runner
 * itself is Lua (lua/draengine/test.lua); this file finds the files, sets up
 * the VM and turns its results into pol_test_result records.
 */
#include "testrun.h"
#include "../base/dir.h"
#include "pol_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


pol_set *pol_set_single(pol_policy *p, de_interner *in, const pol_config *cfg)
{
    pol_set *s = de_xcalloc(1, sizeof *s);
    s->dir = de_xstrdup(p->file);
    s->cfg = *cfg;
    s->in = in;
    s->pols = de_xcalloc(1, sizeof *s->pols);
    s->pols[0] = p;
    s->npols = 1;
    s->hooks = p->hooks;
    memcpy(s->revision, p->revision, sizeof s->revision);
    return s;
}

typedef struct strlist {
    char **v;
    size_t n;
} strlist;

static void push(strlist *l, char *s)
{
    l->v = de_xrealloc(l->v, (l->n + 1) * sizeof *l->v);
    l->v[l->n++] = s;
}

static void free_list(strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

/* Sorted entries of dir (no dot files); suffix filter optional. */
static void list_dir(const char *dir, const char *suffix, strlist *out)
{
    char **names;
    size_t n;
    if (!de_dir_names(dir, &names, &n))
        return;
    for (size_t i = 0; i < n; i++)
        if (!suffix || de_ends_with(names[i], suffix))
            push(out, de_path_join(dir, names[i]));
    de_names_free(names, n);
}

static void spec_files(const char *root, strlist *out)
{
    strlist a = {0};
    list_dir(root, "_spec.lua", &a);
    /* not only regular files: a FIFO or a dangling link named x_spec.lua
     * is read, and refused with its reason, instead of skipped unseen */
    for (size_t i = 0; i < a.n; i++)
        if (!de_is_dir(a.v[i]))
            push(out, de_xstrdup(a.v[i]));
    free_list(&a);
    char *sd = de_path_join(root, "spec");
    if (de_is_dir(sd)) {
        strlist b = {0};
        list_dir(sd, "_spec.lua", &b);
        for (size_t i = 0; i < b.n; i++)
            if (!de_is_dir(b.v[i]))
                push(out, de_xstrdup(b.v[i]));
        free_list(&b);
    }
    free(sd);
}

static de_rc read_all(const char *path, char **out, size_t *len, de_err *e)
{
    de_read_opts o = {.max = POL_MAX_FILE, .binary_ok = true};
    return de_read_input(path, &o, out, len, NULL, e);
}

/* Lua names a chunk in positions by at most LUA_IDSIZE bytes, so a spec
 * under a deep directory (a CI checkout) shows as ".../tail/x_spec.lua:5".
 * The spec being run is `path`: s with its full name put back when the
 * tail matches (malloc'd), else NULL. */
static char *unshorten(const char *path, const char *s)
{
    if (!s || strncmp(s, "...", 3))
        return NULL;
    const char *tail = s + 3, *colon = strchr(tail, ':');
    size_t tl = colon ? (size_t)(colon - tail) : 0, pl = strlen(path);
    if (!colon || tl > pl || memcmp(path + pl - tl, tail, tl))
        return NULL;
    size_t cap = pl + strlen(colon) + 1;
    char *out = de_xmalloc(cap);
    snprintf(out, cap, "%s%s", path, colon);
    return out;
}

static int main_tramp(lua_State *L)
{
    /* require "draengine.test" through the sandbox's require */
    lua_pushcfunction(L, pol_sandbox_require);
    lua_pushliteral(L, "draengine.test");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "main");
    lua_call(L, 0, 1);
    return 1;
}

static void emit(pol_test_cb cb, void *cbctx, pol_test_summary *sum, const char *file, const char *name,
                 const char *where, const char *msg, pol_test_status st)
{
    pol_test_result r = {file, name, where, msg, st};
    if (st == POL_TEST_OK)
        sum->passed++;
    else if (st == POL_TEST_FAIL)
        sum->failed++;
    else
        sum->pending++;
    if (cb)
        cb(cbctx, &r);
}

static void run_file(const char *root, const char *path, const pol_config *cfg, de_interner *in,
                     pol_test_cb cb, void *cbctx, pol_test_summary *sum)
{
    de_err e;
    de_err_clear(&e);
    char *text = NULL;
    size_t len = 0;
    sum->files++;
    if (read_all(path, &text, &len, &e) != DE_OK) {
        emit(cb, cbctx, sum, path, "(reading the spec file)", NULL, e.msg, POL_TEST_FAIL);
        return;
    }
    pol_testctx ctx = {.root = root, .spec_path = path, .spec_text = text, .spec_len = len, .in = in,
                       .cfg = *cfg, .next_device = 1};
    pol_vm vm;
    if (pol_vm_open(&vm, cfg, in, "spec", "", path, true, &e) != DE_OK) {
        emit(cb, cbctx, sum, path, "(creating the spec VM)", NULL, e.msg, POL_TEST_FAIL);
        free(text);
        return;
    }
    vm.test_ctx = &ctx;
    lua_State *L = vm.L;
    pol_vm_begin(&vm, true, de_hash_bytes(path, strlen(path)));
    lua_pushcfunction(L, main_tramp);
    pol_reason r = pol_vm_pcall(&vm, 0, 1);
    if (r != POL_R_NONE) {
        char where[DE_ERR_FIELD_MAX + 16] = "";
        if (vm.errline)
            snprintf(where, sizeof where, "%s:%d", vm.errfile, vm.errline);
        emit(cb, cbctx, sum, path, "(running the spec file)", where[0] ? where : NULL, vm.errmsg,
             POL_TEST_FAIL);
    } else {
        int t = lua_gettop(L);
        size_t n = lua_istable(L, t) ? lua_rawlen(L, t) : 0;
        for (size_t i = 0; i < n; i++) {
            lua_rawgeti(L, t, (lua_Integer)i + 1);
            lua_getfield(L, -1, "name");
            lua_getfield(L, -2, "status");
            lua_getfield(L, -3, "message");
            lua_getfield(L, -4, "where");
            const char *name = lua_tostring(L, -4), *status = lua_tostring(L, -3);
            const char *msg = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
            const char *where = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
            char *wfull = unshorten(path, where), *mfull = unshorten(path, msg);
            pol_test_status st = status && !strcmp(status, "ok")        ? POL_TEST_OK
                                 : status && !strcmp(status, "pending") ? POL_TEST_PENDING
                                                                        : POL_TEST_FAIL;
            emit(cb, cbctx, sum, path, name ? name : "?", wfull ? wfull : where, mfull ? mfull : msg, st);
            free(wfull);
            free(mfull);
            lua_pop(L, 5);
        }
    }
    pol_vm_end(&vm);
    pol_vm_close(&vm);
    pol_test_snapshots_free(&ctx);
    free(text);
}

de_rc pol_test_run(const char *dir, const pol_config *cfg, pol_test_cb cb, void *cbctx, pol_test_summary *sum,
                   de_err *e)
{
    memset(sum, 0, sizeof *sum);
    de_interner *in = de_intern_new();
    pol_set *s;
    de_rc rc = pol_set_load(dir, in, cfg, &s, e);
    if (rc != DE_OK) {
        de_intern_free(in);
        return rc;
    }
    pol_set_free(s);
    strlist roots = {0};
    push(&roots, de_xstrdup(dir));
    char *self = de_path_join(dir, "pack.lua");
    if (!de_is_file(self)) {
        strlist subs = {0};
        list_dir(dir, NULL, &subs);
        for (size_t i = 0; i < subs.n; i++) {
            char *m = de_path_join(subs.v[i], "pack.lua");
            if (de_is_dir(subs.v[i]) && de_is_file(m))
                push(&roots, de_xstrdup(subs.v[i]));
            free(m);
        }
        free_list(&subs);
    }
    free(self);
    for (size_t r = 0; r < roots.n; r++) {
        strlist files = {0};
        spec_files(roots.v[r], &files);
        for (size_t i = 0; i < files.n; i++)
            run_file(roots.v[r], files.v[i], cfg, in, cb, cbctx, sum);
        free_list(&files);
    }
    free_list(&roots);
    de_intern_free(in);
    return DE_OK;
}
