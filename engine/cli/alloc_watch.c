/*
 * alloc_watch.c - `draengine allocate --watch`: the GitOps inner loop.
 * Print the plan, then re-plan whenever the manifests (or, with
 * --policies, the policy directory) change and print what changed in the
 * decisions.
 *
 * Every plan is made from nothing: a fresh graph, input, allocator and
 * policy host over the objects the file watcher holds now (fd_each, in the
 * order a one-shot run reads the same paths), run by the same function as
 * `allocate` without --watch.  So each plan is what that command prints for
 * the files as they are, i.e. what an empty cluster would get, and nothing
 * of one plan leaks into the next.  Clearing the allocations of one
 * long-lived graph instead would save re-decoding, but scheduling leaves
 * more behind than allocations (claims made from templates and for
 * extended resources, reservations, published policy facts), and a fresh
 * interner keeps every plan byte-identical to the one-shot run's.
 *
 * The watcher keeps a broken file's last good objects and reports its
 * error once.  A plan that fails (an invalid object, a hard allocation
 * error) is reported, and the last good plan stays the reference the next
 * plan is compared with.  A policy revision that is refused (it does not
 * load, or its hooks fail on the devices: the verdict every command
 * applies) does not decide: the last good revision does, as in serve.
 * Since every plan loads its policies afresh into a fresh graph, the last
 * good revision is kept as a private copy of its files (same contents, so
 * the same revision), made when a revision is first accepted.
 *
 * Output: -o table prints the first plan exactly as without --watch, then
 * per change the changed objects (kubectl get -w style), "plan N:" and one
 * line per changed decision.  -o json prints one compact JSON document per
 * plan (JSON lines): cycle, events, errors, exitCode, policyRevision,
 * changes, unschedulable, plan (the List -o json prints); -o yaml the same
 * as a stream of YAML documents.
 */
#include "alloc_plan.h"
#include "../base/jdump.h"
#include "cli.h"
#include "objout.h"
#include "watch.h"
#include "../base/dir.h"
#include "../policy/pol.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Event lines printed per change in table mode; the rest are counted. */
#define MAX_EVENT_LINES 20
/* Quiet time before a policy directory change is taken (ms). */
#define POLICY_QUIET_MS 100

typedef struct wstate {
    const cli_alloc_cfg *cfg;
    fd_watch *fw;
    bool initial;
    /* this batch */
    json_t *events, *errors;
    uint32_t nevents, nerrors, shown;
    bool policies_changed;
    /* the last good plan */
    cli_plan good;
    bool have_good;
    uint32_t cycle;
    /* a private copy of the last good policy revision: when the directory's
     * revision is refused, plans go on with this one, as serve keeps its
     * active revision (cfg->policies_good points here once it exists) */
    cli_alloc_cfg pcfg;
    char good_dir[4096];
    char good_rev[65];
} wstate;

/* ---- the last good policy revision ------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

static void rm_tree(const char *dir)
{
    if (dir[0])
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static bool mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        bool ok = mkdir(path, 0700) == 0 || errno == EEXIST;
        *p = '/';
        if (!ok)
            return false;
    }
    return true;
}

/* Copy the files a policy revision is made of (the walk pol_dir_hash makes:
 * regular files 4 levels down, hidden entries left out) into a fresh
 * directory under $TMPDIR.  The copy has the same revision: a revision is
 * the hash of the policies' and manifests' contents. */
static bool copy_policies(const char *src, char *out, size_t cap, de_err *e)
{
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(out, cap, "%s/draengine-policies-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (n < 0 || (size_t)n >= cap || !mkdtemp(out)) {
        de_errf(e, DE_EIO, "cannot create a directory for the last good policy revision: %s", strerror(errno));
        out[0] = 0;
        return false;
    }
    de_walk_opts o = {.max_depth = 4};
    de_walk_out w;
    if (de_walk(src, &o, &w, e) != DE_OK)
        goto fail;
    size_t skip = strlen(src) + (de_ends_with(src, "/") ? 0 : 1);
    for (size_t i = 0; i < w.nfiles; i++) {
        char *text = NULL;
        size_t len = 0;
        de_read_opts ro = {.max = 1u << 20, .binary_ok = true};
        if (de_read_input(w.files[i], &ro, &text, &len, NULL, e) != DE_OK) {
            de_walk_free(&w);
            goto fail;
        }
        char *dst = de_path_join(out, w.files[i] + skip);
        FILE *f = mkdirs(dst) ? fopen(dst, "wb") : NULL;
        bool ok = f && fwrite(text, 1, len, f) == len;
        if (f && fclose(f) != 0)
            ok = false;
        if (!ok)
            de_errf(e, DE_EIO, "%s: cannot write: %s", dst, strerror(errno));
        free(dst);
        free(text);
        if (!ok) {
            de_walk_free(&w);
            goto fail;
        }
    }
    de_walk_free(&w);
    return true;
fail:
    rm_tree(out);
    out[0] = 0;
    return false;
}

/* After a plan: when its revision is the directory's own (not refused) and
 * new, it becomes the last good one. */
static void keep_good_revision(wstate *w, const cli_plan *now)
{
    if (!w->cfg->policies || now->refused || !now->revision[0] || !strcmp(now->revision, w->good_rev))
        return;
    char dir[4096];
    de_err e;
    de_err_clear(&e);
    if (!copy_policies(w->cfg->policies, dir, sizeof dir, &e)) {
        cli_errorf("allocate", "%s (a refused revision will stop the plans instead)", e.msg);
        return;
    }
    rm_tree(w->good_dir);
    snprintf(w->good_dir, sizeof w->good_dir, "%s", dir);
    snprintf(w->good_rev, sizeof w->good_rev, "%s", now->revision);
    w->pcfg.policies_good = w->good_dir;
}

static void on_event(void *ctx, const fd_event *ev)
{
    wstate *w = ctx;
    if (ev->op == FD_ERROR) {
        cli_errorf("allocate", "%s", ev->err->msg);
        json_array_append_new(w->errors, json_string(ev->err->msg));
        w->nerrors++;
        return;
    }
    w->nevents++;
    if (w->cfg->fmt != CLI_OUT_TABLE) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "type", cli_watch_op(ev->op), "kind", ev->kind, "namespace",
                              ev->ns, "name", ev->name);
        if (ev->origin && ev->origin->file)
            json_object_set_new(o, "file", json_string(ev->origin->file));
        json_array_append_new(w->events, o);
        return;
    }
    if (w->initial)
        return;
    if (w->nevents == 1)
        fputc('\n', stdout);
    if (w->shown < MAX_EVENT_LINES) {
        cli_watch_event_line(stdout, ev);
        w->shown++;
    }
}

typedef struct loadctx {
    dg_graph *g;
    al_input *lc;
} loadctx;

static de_rc add_copy(void *ctx, json_t *obj, const de_origin *o, de_err *e)
{
    loadctx *l = ctx;
    /* the input may rename a kept duplicate: never touch the watcher's object */
    json_t *c = json_deep_copy(obj);
    de_rc rc = al_input_add(l->g, l->lc, c, o, e);
    json_decref(c);
    return rc;
}

static de_rc load_watched(void *ctx, dg_graph *g, al_input *lc, de_err *e)
{
    wstate *w = ctx;
    loadctx l = {g, lc};
    return fd_each(w->fw, add_copy, &l, e);
}

static void emit_doc(const wstate *w, json_t *doc)
{
    if (w->cfg->fmt == CLI_OUT_YAML) {
        de_err e;
        de_err_clear(&e);
        if (cli_yaml_write(stdout, "---\n", doc, CLI_PLAN_YAML_MAX, &e) != DE_OK)
            cli_errorf("allocate", "%s", e.msg);
        return;
    }
    char *s = de_json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (s)
        printf("%s\n", s);
    free(s);
}

static void plan_once(wstate *w)
{
    const cli_alloc_cfg *cfg = w->cfg;
    bool table = cfg->fmt == CLI_OUT_TABLE;
    cli_plan now;
    cli_plan_init(&now);
    w->cycle++;
    if (table && w->have_good) {
        if (w->nevents > w->shown)
            printf("... and %u more changed objects\n", w->nevents - w->shown);
        if (!w->nevents && w->policies_changed)
            printf("\npolicies changed in %s\n", cfg->policies);
    }
    /* the whole plan when there is nothing to compare with */
    bool full = table && !w->have_good;
    int rc = cli_allocate_run(&w->pcfg, load_watched, w, &now, full);
    bool ok = rc == CLI_EXIT_OK || rc == CLI_EXIT_UNSAT;
    static const cli_plan empty;
    const cli_plan *was = w->have_good ? &w->good : &empty;
    if (table && !full) {
        if (!ok) {
            printf("plan %u: not updated: %s\n", w->cycle, now.error ? now.error : "the run failed");
        } else {
            printf("plan %u:", w->cycle);
            if (now.refused)
                printf(" policy revision refused, %.12s stays (%s);", now.revision, now.refused);
            else if (strcmp(was->revision, now.revision))
                printf(" policy revision %.12s -> %.12s;", was->revision[0] ? was->revision : "(none)",
                       now.revision[0] ? now.revision : "(none)");
            char sum[600];
            cli_plan_summary(&now, sum, sizeof sum);
            uint32_t n = cli_plan_diff(was, &now, NULL, NULL);
            if (!n) {
                printf(" no change (%s)\n", sum);
            } else {
                printf(" %u change%s\n", n, n == 1 ? "" : "s");
                cli_plan_diff(was, &now, stdout, NULL);
                printf("  %s\n", sum);
            }
        }
    } else if (!table) {
        json_t *doc = json_object();
        json_object_set_new(doc, "cycle", json_integer(w->cycle));
        json_object_set_new(doc, "events", json_copy(w->events));
        json_t *errs = json_copy(w->errors);
        if (now.error)
            json_array_append_new(errs, json_string(now.error));
        json_object_set_new(doc, "errors", errs);
        json_object_set_new(doc, "exitCode", json_integer(rc));
        if (now.revision[0])
            json_object_set_new(doc, "policyRevision", json_string(now.revision));
        if (now.refused)
            json_object_set_new(doc, "policyRefused", json_string(now.refused));
        json_t *changes = json_array();
        if (ok)
            cli_plan_diff(was, &now, NULL, changes);
        json_object_set_new(doc, "changes", changes);
        if (ok) {
            json_object_set_new(doc, "unschedulable", cli_plan_unschedulable(&now));
            if (now.list)
                json_object_set_new(doc, "plan", json_incref(now.list));
        }
        emit_doc(w, doc);
        json_decref(doc);
    }
    if (ok)
        keep_good_revision(w, &now);
    if (ok) {
        cli_plan_free(&w->good);
        w->good = now;
        w->have_good = true;
    } else {
        cli_plan_free(&now);
    }
    fflush(stdout);
}

static void reset_batch(wstate *w)
{
    json_array_clear(w->events);
    json_array_clear(w->errors);
    w->nevents = w->nerrors = w->shown = 0;
    w->policies_changed = false;
}

int cli_allocate_watch(const cli_alloc_cfg *cfg, const char *const *files, int nfiles)
{
    for (int i = 0; i < nfiles; i++)
        if (!strcmp(files[i], "-")) {
            cli_errorf("allocate", "--watch cannot watch stdin ('-f -')");
            return CLI_EXIT_INVALID;
        }
    fd_opts fo = {.watch = true};
    de_err e;
    de_err_clear(&e);
    fd_watch *fw = fd_open(files, (size_t)nfiles, &fo, &e);
    if (!fw) {
        cli_errorf("allocate", "%s", e.msg);
        return CLI_EXIT_INVALID;
    }
    cli_polwatch *pw = cfg->policies ? cli_polwatch_open(cfg->policies) : NULL;
    cli_watch_signals();
    wstate w = {.cfg = cfg, .fw = fw, .initial = true, .pcfg = *cfg};
    w.pcfg.policies_good = NULL;
    w.events = json_array();
    w.errors = json_array();
    cli_plan_init(&w.good);
    uint32_t n;
    if (fd_scan(fw, on_event, &w, &n, &e) != DE_OK)
        cli_errorf("allocate", "%s", e.msg);
    plan_once(&w);
    reset_batch(&w);
    w.initial = false;
    bool table = cfg->fmt == CLI_OUT_TABLE;
    while (!cli_watch_stopping()) {
        int fds[2] = {fd_fileno(fw), cli_polwatch_fd(pw)};
        bool polling = fds[0] < 0;
        int r = cli_watch_wait(fds, 2, polling ? 1000 : -1);
        if (r < 0)
            break;
        if (r == 0 && !polling)
            continue;
        if (polling || (r & 1)) {
            de_err_clear(&e);
            if (fd_poll(fw, 0, on_event, &w, &n, &e) != DE_OK)
                cli_errorf("allocate", "%s", e.msg);
        }
        if (pw && (polling || (r & 2) || fds[1] < 0))
            w.policies_changed = cli_polwatch_changed(pw, POLICY_QUIET_MS);
        bool replan = w.nevents || w.policies_changed || (!table && w.nerrors);
        if (replan)
            plan_once(&w);
        reset_batch(&w);
    }
    rm_tree(w.good_dir);
    cli_plan_free(&w.good);
    json_decref(w.events);
    json_decref(w.errors);
    cli_polwatch_close(pw);
    fd_close(fw);
    return CLI_EXIT_OK;
}
