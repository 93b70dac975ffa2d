/*
 * host.c - the policy host: the active set, hot reload and the swap.
 *
 * A reload never edits the active set.  The new revision is loaded into
 * fresh VMs and validated (metadata, hooks, domains; optionally the packs'
 * specs), then its facts are computed for every device of the graph into
 * its own cache, a slice of work per cycle so scheduling goes on meanwhile
 * with the old revision.  Only when that is complete is it swapped in at a
 * cycle boundary: one pointer (the set) changes, then the new facts are
 * published into the graph in the same call, before the next cycle can
 * observe anything.  If loading, the specs or (strict mode) any hook call
 * during preparation fails, the new revision is dropped, the failure is
 * reported with file:line, and the last good revision stays active; the
 * failed content is remembered by hash and not retried until it changes
 * (OPA's stale-ETag lesson: a fixed bundle must be noticed again).
 *
 * Triggers: inotify on the directory and its pack folders (a ConfigMap
 * update arrives as a `..data` symlink flip: any event marks the tree
 * dirty, and the reload waits for `debounce_ns` of quiet, because the
 * kubelet writes the new timestamped directory before flipping the link),
 * SIGHUP, an explicit request, and a periodic rescan that compares the
 * content hash of the tree (file watches are unreliable on some volumes).
 * A trigger whose content hash equals the active revision's does nothing.
 */
#include "../base/dir.h"
#include "facts.h"
#include "polgraph.h"
#include "testrun.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static volatile sig_atomic_t sighups;

static void on_sighup(int sig)
{
    (void)sig;
    sighups++;
}

void pol_host_install_sighup(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sighup;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGHUP, &sa, NULL);
}

struct pol_host {
    char *dir;
    dg_graph *g;
    pol_host_opts o;
    pol_set *active;
    pol_hookctx *hooks;
    uint64_t hook_rev;
    char active_hash[65];
    /* a reload being prepared */
    pol_set *pending;
    char pending_hash[65];
    uint64_t pending_ns;
    pol_prepare_stats pending_stats;
    char failed_hash[65];
    pol_verdict refusal; /* the last reload refused for hook failures */
    bool requested;
    sig_atomic_t sighup_seen;
    /* watching */
    pol_dirwatch *dw;
    bool dirty;
    uint64_t last_event;
    uint64_t next_rescan;
    pol_host_stats stats;
};

void pol_host_opts_default(pol_host_opts *o)
{
    memset(o, 0, sizeof *o);
    pol_config_default(&o->cfg);
    o->watch = true;
    o->debounce_ns = 300ull * 1000000;
    o->rescan_ns = 30ull * 1000000000;
    o->prepare_slice_ns = 20ull * 1000000;
    o->strict_reload = true;
}

/* ---- content hash ------------------------------------------------------------ */

/* What the rescan skips needs no report: the loader says it when it loads. */
static void quiet_notice(void *ctx, const char *path, const char *what)
{
    (void)ctx, (void)path, (void)what;
}

/* Every regular file up to 4 levels down (each directory once, FIFOs and
 * sockets never opened), by path relative to dir, and its bytes. */
void pol_dir_hash(const char *dir, char hex[65])
{
    pol_sha256 h;
    uint8_t d[POL_SHA256_LEN];
    pol_sha256_init(&h);
    de_walk_opts o = {.max_depth = 4, .notice = quiet_notice};
    de_walk_out w;
    if (de_walk(dir, &o, &w, NULL) == DE_OK) {
        size_t skip = strlen(dir) + (de_ends_with(dir, "/") ? 0 : 1);
        for (size_t i = 0; i < w.nfiles; i++) {
            char *text;
            size_t len;
            de_read_opts ro = {.max = POL_MAX_FILE, .binary_ok = true};
            if (de_read_input(w.files[i], &ro, &text, &len, NULL, NULL) != DE_OK)
                continue;
            const char *rel = w.files[i] + skip;
            pol_sha256_update(&h, rel, strlen(rel) + 1);
            pol_sha256_update(&h, text, len);
            pol_sha256_update(&h, "\0\0", 2);
            free(text);
        }
        de_walk_free(&w);
    }
    pol_sha256_final(&h, d);
    pol_sha256_tohex(d, hex);
}

/* ---- watching -------------------------------------------------------------- */

/* Every relevant event restarts the quiet period; IN_IGNORED and the like
 * never do (dirwatch.c), so the debounce expires after the last real one. */
static void watch_drain(pol_host *h)
{
    if (pol_dirwatch_drain(h->dw)) {
        h->dirty = true;
        h->last_event = de_now_ns();
    }
}

/* ---- reporting -------------------------------------------------------------- */

static void hlog(pol_host *h, de_log_level lvl, const de_err *e, const char *msg, const char *revision)
{
    if (!h->o.cfg.log)
        return;
    char rev[16];
    snprintf(rev, sizeof rev, "%.12s", revision ? revision : "");
    const char *kv[] = {"dir", h->dir, "revision", rev, NULL};
    h->o.cfg.log(h->o.cfg.log_ctx, lvl, e && e->file[0] ? e->file : h->dir, e ? e->line : 0, msg, kv);
}

/* ---- lifecycle ---------------------------------------------------------------- */

static void install(pol_host *h, pol_set *s)
{
    pol_hookctx_free(h->hooks);
    h->active = s;
    h->hook_rev++;
    h->hooks = pol_hookctx_new(s, h->hook_rev ^ de_hash_bytes(pol_set_revision(s), 64));
    snprintf(h->stats.revision, sizeof h->stats.revision, "%s", pol_set_revision(s));
}

de_rc pol_host_new(const char *dir, dg_graph *g, const pol_host_opts *o, pol_host **out, de_err *e)
{
    *out = NULL;
    pol_host *h = de_xcalloc(1, sizeof *h);
    h->dir = de_xstrdup(dir);
    h->g = g;
    if (o)
        h->o = *o;
    else
        pol_host_opts_default(&h->o);
    h->sighup_seen = sighups;
    pol_dir_hash(dir, h->active_hash);
    pol_set *s;
    de_rc rc = pol_set_load(dir, dg_intern(g), &h->o.cfg, &s, e);
    if (rc != DE_OK) {
        free(h->dir);
        free(h);
        return rc;
    }
    bool done;
    pol_prepare_stats st = {0};
    pol_set_prepare(s, g, 0, &done, &st);
    pol_set_publish(s, g, &st);
    install(h, s);
    h->stats.reloads_ok++;
    if (h->o.watch)
        h->dw = pol_dirwatch_open(dir);
    if (h->o.rescan_ns)
        h->next_rescan = de_now_ns() + h->o.rescan_ns;
    *out = h;
    return DE_OK;
}

void pol_host_free(pol_host *h)
{
    if (!h)
        return;
    pol_graph_clear(h->g);
    pol_hookctx_free(h->hooks);
    pol_set_free(h->active);
    pol_set_free(h->pending);
    pol_verdict_free(&h->refusal);
    pol_dirwatch_close(h->dw);
    free(h->dir);
    free(h);
}

bool pol_host_judge(const pol_host *h, pol_verdict *out)
{
    return pol_verdict_judge(h->active, h->g, out);
}

const pol_verdict *pol_host_refusal(const pol_host *h)
{
    return h->refusal.ndevices ? &h->refusal : NULL;
}

/* The failures section of a refused revision, one log line per group. */
static void log_verdict(pol_host *h, const pol_verdict *v)
{
    for (uint32_t i = 0; i < v->ngroups; i++) {
        const pol_verdict_group *g = &v->groups[i];
        de_err e;
        de_err_clear(&e);
        char more[64] = "";
        if (g->ndevices > 1)
            snprintf(more, sizeof more, " and %u more", g->ndevices - 1);
        de_errf(&e, DE_EPOLICY, "policy %s hook %s failed on %u device%s (%s%s): %s: %s", g->policy, g->hook,
                g->ndevices, g->ndevices == 1 ? "" : "s", g->nnames ? g->devices[0] : "?", more,
                pol_reason_str(g->reason), g->message);
        snprintf(e.file, sizeof e.file, "%s", g->file);
        e.line = g->line;
        hlog(h, DE_LOG_ERROR, &e, e.msg, v->revision);
    }
}

pol_set *pol_host_active(const pol_host *h) { return h->active; }

void pol_host_al_hooks(pol_host *h, al_hooks *out)
{
    pol_hookctx_al(h->hooks, out);
}

void pol_host_request_reload(pol_host *h) { h->requested = true; }

void pol_host_get_stats(const pol_host *h, pol_host_stats *out) { *out = h->stats; }

/* ---- reload -------------------------------------------------------------------- */

static void refuse(pol_host *h, pol_cycle *out, const de_err *e, const char *hash, const char *what)
{
    pol_verdict_free(&h->refusal);
    char msg[DE_ERR_MSG_MAX + 128];
    snprintf(msg, sizeof msg, "policy reload refused (%s); revision %.12s stays active: %s", what,
             pol_set_revision(h->active), e->msg);
    hlog(h, DE_LOG_ERROR, e, msg, hash);
    snprintf(h->failed_hash, sizeof h->failed_hash, "%s", hash);
    snprintf(h->stats.last_error, sizeof h->stats.last_error, "%.500s", e->msg);
    h->stats.reloads_failed++;
    out->failed = true;
    out->err = *e;
}

static void swap_in(pol_host *h, pol_cycle *out)
{
    uint64_t t0 = de_now_ns();
    pol_set *old = h->active;
    pol_set *s = h->pending;
    h->pending = NULL;
    install(h, s); /* the pointer swap */
    pol_prepare_stats st = {0};
    out->swap_changed = pol_set_publish(s, h->g, &st);
    out->swap_ns = de_now_ns() - t0;
    out->prepare_ns = h->pending_ns;
    out->swapped = true;
    pol_set_free(old);
    snprintf(h->active_hash, sizeof h->active_hash, "%s", h->pending_hash);
    h->failed_hash[0] = 0;
    h->stats.reloads_ok++;
    h->stats.swaps++;
    char msg[256];
    snprintf(msg, sizeof msg,
             "policy revision %.12s active (%u policies; prepared in %.1f ms, swapped in %.1f ms, %u devices "
             "changed)",
             pol_set_revision(s), pol_set_count(s), (double)out->prepare_ns / 1e6, (double)out->swap_ns / 1e6,
             out->swap_changed);
    hlog(h, DE_LOG_INFO, NULL, msg, pol_set_revision(s));
}

/* Continue preparing the pending set; swap when done. */
static void advance(pol_host *h, pol_cycle *out, uint64_t budget)
{
    out->preparing = true;
    uint64_t t0 = de_now_ns();
    bool done = false;
    pol_set_prepare(h->pending, h->g, budget, &done, &h->pending_stats);
    h->pending_ns += de_now_ns() - t0;
    if (!done)
        return;
    out->preparing = false;
    pol_verdict v = {0};
    if (h->o.strict_reload && !pol_verdict_judge(h->pending, h->g, &v)) {
        de_err e = h->pending_stats.first.err;
        char what[128];
        snprintf(what, sizeof what, "%llu hook calls failed on %u current devices",
                 (unsigned long long)v.nfailures, v.ndevices);
        char hash[65];
        snprintf(hash, sizeof hash, "%s", h->pending_hash);
        pol_set_free(h->pending);
        h->pending = NULL;
        refuse(h, out, &e, hash, what);
        log_verdict(h, &v);
        pol_verdict_free(&h->refusal);
        h->refusal = v;
        return;
    }
    pol_verdict_free(&v);
    pol_verdict_free(&h->refusal);
    swap_in(h, out);
}

/* Start a reload of the directory's current content. */
static void begin(pol_host *h, pol_cycle *out, bool force)
{
    char hash[65];
    pol_dir_hash(h->dir, hash);
    if (!force && !strcmp(hash, h->active_hash))
        return;
    if (!force && !strcmp(hash, h->failed_hash))
        return;
    if (h->pending) {
        pol_set_free(h->pending);
        h->pending = NULL;
    }
    pol_set *s;
    de_err e;
    de_err_clear(&e);
    if (pol_set_load(h->dir, dg_intern(h->g), &h->o.cfg, &s, &e) != DE_OK) {
        refuse(h, out, &e, hash, "invalid policies");
        return;
    }
    if (h->o.cfg.run_specs) {
        pol_test_summary sum;
        de_err te;
        de_err_clear(&te);
        if (pol_test_run(h->dir, &h->o.cfg, NULL, NULL, &sum, &te) != DE_OK || sum.failed) {
            if (te.rc == DE_OK)
                de_errf(&te, DE_EPOLICY, "%u of %u pack spec tests failed (run `draengine policy test %s`)",
                        sum.failed, sum.failed + sum.passed, h->dir);
            pol_set_free(s);
            refuse(h, out, &te, hash, "pack specs failed");
            return;
        }
    }
    h->pending = s;
    snprintf(h->pending_hash, sizeof h->pending_hash, "%s", hash);
    h->pending_ns = 0;
    memset(&h->pending_stats, 0, sizeof h->pending_stats);
    pol_set_prepare_restart(s);
}

/* Every field but the error (a few KiB: this runs once per scheduling cycle). */
static void cycle_clear(pol_cycle *out)
{
    out->swapped = out->failed = out->preparing = false;
    out->devices_updated = out->swap_changed = 0;
    out->prepare_ns = out->swap_ns = 0;
    de_err_clear(&out->err);
}

de_rc pol_host_cycle(pol_host *h, pol_cycle *out)
{
    cycle_clear(out);
    pol_prepare_stats st;
    st.computed = st.failures = 0;
    st.first.reason = POL_R_NONE;
    de_err_clear(&st.first.err);
    out->devices_updated = pol_set_sync(h->active, h->g, &st);
    /* drained while a revision is prepared too: a change made meanwhile is
     * picked up after the swap (the new content hashes differently) */
    watch_drain(h);
    if (h->pending) {
        advance(h, out, h->o.prepare_slice_ns);
        return DE_OK;
    }
    /* the clock only for what needs it (a pending debounce, the rescan) */
    uint64_t now = h->dirty || h->o.rescan_ns ? de_now_ns() : 0;
    bool trigger = false, force = false;
    if (h->requested) {
        trigger = force = true;
        h->requested = false;
    }
    if (h->sighup_seen != sighups) {
        h->sighup_seen = sighups;
        trigger = true;
    }
    if (h->dirty && now - h->last_event >= h->o.debounce_ns) {
        h->dirty = false;
        trigger = true;
    }
    if (h->o.rescan_ns && now >= h->next_rescan) {
        h->next_rescan = now + h->o.rescan_ns;
        trigger = true;
    }
    if (!trigger)
        return DE_OK;
    begin(h, out, force);
    if (h->pending)
        advance(h, out, h->o.prepare_slice_ns);
    return DE_OK;
}

de_rc pol_host_reload_now(pol_host *h, pol_cycle *out)
{
    memset(out, 0, sizeof *out);
    begin(h, out, true);
    if (!h->pending)
        return out->failed ? out->err.rc : DE_OK;
    advance(h, out, 0);
    return out->failed ? out->err.rc : DE_OK;
}

/* ---- `draengine allocate --policies DIR` (cmd_allocate.c) ----------------------- */

de_rc pol_host_for_allocate(dg_graph *g, const char *dir, const de_gates *gates, al_hooks *hooks, pol_host **out,
                            de_err *e)
{
    (void)gates;
    pol_host_opts o;
    pol_host_opts_default(&o);
    o.watch = false;
    o.rescan_ns = 0;
    o.cfg.log = pol_log_to_engine;
    DE_TRY(pol_host_new(dir, g, &o, out, e));
    pol_host_al_hooks(*out, hooks);
    return DE_OK;
}

void pol_host_free_for_allocate(pol_host *h)
{
    pol_host_free(h);
}
