/*
 * inspect_watch.c - `draengine inspect --watch`: the manifests come from
 * drivers/file (fd_watch) and every event is applied to one long-lived
 * graph (fd_apply_event), so a change costs what it touches.  After the
 * first report, a change batch prints its object lines, the summary, and
 * only the node blocks the batch touched (where a slice or an allocated
 * device was before and is after): on a large cluster the whole report per
 * edit would bury the change.  Bad input never ends the loop: a file that
 * does not parse keeps its last good objects (the watcher), an object the
 * graph refuses keeps its previous version (dg_apply decodes before it
 * replaces).
 */
#include "cli.h"
#include "../base/jdump.h"
#include "inspect.h"
#include "watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One change batch: every event is applied to the graph as it comes
 * (fd_apply_event), and the nodes whose blocks it changes are noted -
 * before the change (where a slice or an allocation was) and after it
 * (where it is now). */
typedef struct iwatch {
    dg_graph *g;
    bool json, initial;
    json_t *events, *errors; /* -o json */
    uint32_t *nodes;         /* node names (interned) */
    uint32_t nnodes, cap;
    bool network, full;      /* a pool that is not node-local changed; everything may have */
    uint32_t nevents, nerrors;
} iwatch;

static void note_node(iwatch *w, uint32_t name)
{
    for (uint32_t i = 0; i < w->nnodes; i++)
        if (w->nodes[i] == name)
            return;
    if (w->nnodes == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 16;
        w->nodes = de_xrealloc(w->nodes, w->cap * sizeof *w->nodes);
    }
    w->nodes[w->nnodes++] = name;
}

static void note_device(iwatch *w, uint32_t devid)
{
    uint32_t node = devid == DG_NONE ? 0 : dg_device_node(w->g, devid);
    if (node)
        note_node(w, node);
    else
        w->network = true;
}

static void note_object(iwatch *w, const fd_event *ev)
{
    de_interner *in = dg_intern(w->g);
    if (!strcmp(ev->kind, "ResourceSlice")) {
        uint32_t sid = dg_slice_find(w->g, ev->name);
        const dg_slice *s = sid == DG_NONE ? NULL : dg_slice_get(w->g, sid);
        if (s && s->ns_mode == DG_NS_NODE_NAME)
            note_node(w, s->node_name);
        else if (s)
            for (uint32_t j = 0; j < s->ndevices; j++)
                note_device(w, dg_device_id(w->g, sid, j));
    } else if (!strcmp(ev->kind, "Node")) {
        note_node(w, de_intern_cstr(in, ev->name));
    } else if (!strcmp(ev->kind, "ResourceClaim")) {
        uint32_t clid = dg_claim_find(w->g, de_intern_cstr(in, *ev->ns ? ev->ns : "default"), de_intern_cstr(in, ev->name));
        const dg_claim *cl = clid == DG_NONE ? NULL : dg_claim_get(w->g, clid);
        for (uint32_t k = 0; cl && cl->allocated && k < cl->allocation.nresults; k++) {
            const dg_result *r = &cl->allocation.results[k];
            note_device(w, dg_device_find(w->g, r->driver, r->pool, r->device));
        }
    } else if (!strcmp(ev->kind, "DeviceTaintRule")) {
        w->full = true; /* its selector may reach any device */
    }
}

static void on_watch_event(void *ctx, const fd_event *ev)
{
    iwatch *w = ctx;
    if (ev->op == FD_ERROR) {
        cli_errorf("inspect", "%s", ev->err->msg);
        if (w->json)
            json_array_append_new(w->errors, json_string(ev->err->msg));
        w->nerrors++;
        return;
    }
    if (!w->initial)
        note_object(w, ev);
    de_err e;
    de_err_clear(&e);
    if (fd_apply_event(w->g, ev, &e) != DE_OK) {
        char msg[DE_ERR_MSG_MAX + 64];
        snprintf(msg, sizeof msg, "%s (not applied%s)", e.msg, ev->op == FD_UPDATE ? "; the previous version stays" : "");
        cli_errorf("inspect", "%s", msg);
        if (w->json)
            json_array_append_new(w->errors, json_string(msg));
        w->nerrors++;
        return;
    }
    if (!w->initial)
        note_object(w, ev);
    w->nevents++;
    if (w->json) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "type", cli_watch_op(ev->op), "kind", ev->kind, "namespace",
                              ev->ns, "name", ev->name);
        if (ev->origin && ev->origin->file)
            json_object_set_new(o, "file", json_string(ev->origin->file));
        json_array_append_new(w->events, o);
    } else if (!w->initial) {
        if (w->nevents == 1)
            fputc('\n', stdout);
        cli_watch_event_line(stdout, ev);
    }
}

static void end_cycle(iwatch *w, uint32_t *cycle)
{
    if (w->initial || w->nevents || (w->json && w->nerrors)) {
        cli_inspect c;
        cli_inspect_init(&c, w->g);
        if (w->json) {
            json_t *doc = json_pack("{s:i, s:O, s:O}", "cycle", (json_int_t)++*cycle, "events", w->events, "errors",
                                    w->errors);
            json_object_set_new(doc, "report", cli_inspect_report(&c, true, stdout));
            char *text = de_json_dumps(doc, JSON_COMPACT);
            printf("%s\n", text);
            free(text);
            json_decref(doc);
        } else if (w->initial) {
            cli_inspect_report(&c, false, stdout);
        } else if (w->full) {
            fputc('\n', stdout);
            cli_inspect_report(&c, false, stdout);
        } else {
            cli_inspect_changes(&c, w->nodes, w->nnodes, w->network, stdout);
        }
        cli_inspect_fini(&c);
    }
    if (w->json) {
        json_array_clear(w->events);
        json_array_clear(w->errors);
    }
    fflush(stdout);
    w->nnodes = 0;
    w->network = w->full = false;
    w->nevents = w->nerrors = 0;
}

int cli_inspect_watch(const char **paths, int npaths, bool json, const de_gates *gates)
{
    for (int i = 0; i < npaths; i++)
        if (!strcmp(paths[i], "-")) {
            cli_errorf("inspect", "--watch cannot watch stdin ('-f -')");
            return CLI_EXIT_INVALID;
        }
    fd_opts fo = {.watch = true};
    de_err e;
    de_err_clear(&e);
    fd_watch *fw = fd_open(paths, (size_t)npaths, &fo, &e);
    if (!fw) {
        cli_errorf("inspect", "%s", e.msg);
        return CLI_EXIT_INVALID;
    }
    cli_watch_signals();
    dg_opts gopts = {.gates = gates};
    iwatch w = {.g = dg_new(NULL, &gopts), .json = json, .initial = true};
    w.events = json_array();
    w.errors = json_array();
    uint32_t cycle = 0, n;
    if (fd_scan(fw, on_watch_event, &w, &n, &e) != DE_OK)
        cli_errorf("inspect", "%s", e.msg);
    end_cycle(&w, &cycle);
    w.initial = false;
    while (!cli_watch_stopping()) {
        int fds[1] = {fd_fileno(fw)};
        int r = cli_watch_wait(fds, 1, fds[0] >= 0 ? -1 : 1000);
        if (r < 0)
            break;
        if (r == 0 && fds[0] >= 0)
            continue;
        de_err_clear(&e);
        if (fd_poll(fw, 0, on_watch_event, &w, &n, &e) != DE_OK) {
            cli_errorf("inspect", "%s", e.msg);
            continue;
        }
        end_cycle(&w, &cycle);
    }
    json_decref(w.events);
    json_decref(w.errors);
    free(w.nodes);
    dg_free(w.g);
    fd_close(fw);
    return CLI_EXIT_OK;
}

