/*
 * alloc_plan.c - allocation plans as data and the difference between two
 * (see alloc_plan.h).
 *
 * What counts as a change: a pod that is newly scheduled, moved to another
 * node, became unschedulable, is no longer in the input; a claim whose
 * devices differ; with --node, the claims becoming (un)satisfiable there.
 * A pod that stays unschedulable is no change even when the reason's
 * wording changes (the plan is the same; the reason is in the JSON line).
 */
#include "alloc_plan.h"
#include "cli.h"
#include "../base/map.h"

#include <stdlib.h>
#include <stddef.h>
#include <string.h>

void cli_plan_init(cli_plan *p) { memset(p, 0, sizeof *p); }

void cli_plan_set(char **field, const char *text)
{
    free(*field);
    *field = text ? de_xstrdup(text) : NULL;
}

void cli_plan_free(cli_plan *p)
{
    for (uint32_t i = 0; i < p->npods; i++) {
        free(p->pods[i].key);
        free(p->pods[i].node);
        free(p->pods[i].why);
    }
    for (uint32_t i = 0; i < p->nclaims; i++) {
        for (uint32_t k = 0; k < p->claims[i].ndevices; k++)
            free(p->claims[i].devices[k]);
        free(p->claims[i].devices);
        free(p->claims[i].key);
    }
    free(p->pods);
    free(p->claims);
    free(p->why);
    free(p->error);
    free(p->refused);
    if (p->list)
        json_decref(p->list);
    memset(p, 0, sizeof *p);
}

void cli_plan_pod_add(cli_plan *p, const char *pod, const char *node, const char *why)
{
    if (p->npods == p->cappods) {
        p->cappods = p->cappods ? p->cappods * 2 : 16;
        p->pods = de_xrealloc(p->pods, p->cappods * sizeof *p->pods);
    }
    cli_plan_pod *e = &p->pods[p->npods++];
    e->key = de_xstrdup(pod);
    e->node = node ? de_xstrdup(node) : NULL;
    e->why = why ? de_xstrdup(why) : NULL;
}

void cli_plan_device(cli_plan *p, const char *claim, uint32_t pod, const char *device)
{
    cli_plan_claim *c = p->nclaims ? &p->claims[p->nclaims - 1] : NULL;
    if (!c || c->pod != pod || strcmp(c->key, claim)) {
        if (p->nclaims == p->capclaims) {
            p->capclaims = p->capclaims ? p->capclaims * 2 : 16;
            p->claims = de_xrealloc(p->claims, p->capclaims * sizeof *p->claims);
        }
        c = &p->claims[p->nclaims++];
        memset(c, 0, sizeof *c);
        c->key = de_xstrdup(claim);
        c->pod = pod;
    }
    if (!device)
        return;
    c->devices = de_xrealloc(c->devices, (c->ndevices + 1) * sizeof *c->devices);
    c->devices[c->ndevices++] = de_xstrdup(device);
}

/* ---- lookups by key ------------------------------------------------------------ */

/* Plan records found by key: hash(key) -> index + 1 of the first record
 * with that hash; a collision falls back to a scan.  Pods and claims are
 * both records whose first member is their key. */
typedef struct keyindex {
    de_map m;
    const char *recs;
    uint32_t n;
    size_t size;
} keyindex;

_Static_assert(offsetof(cli_plan_pod, key) == 0, "a pod record starts with its key");
_Static_assert(offsetof(cli_plan_claim, key) == 0, "a claim record starts with its key");

static uint64_t key_hash(const char *k) { return de_hash_bytes(k, strlen(k)); }

static const char *key_at(const keyindex *x, uint32_t i) { return *(char *const *)(x->recs + i * x->size); }

static void index_keys(keyindex *x, const void *recs, uint32_t n, size_t size)
{
    de_map_init(&x->m);
    x->recs = recs;
    x->n = n;
    x->size = size;
    for (uint32_t i = 0; i < n; i++)
        if (!de_map_get(&x->m, key_hash(key_at(x, i)), NULL))
            de_map_put(&x->m, key_hash(key_at(x, i)), i + 1u);
}

static uint32_t find_key(const keyindex *x, const char *key)
{
    uint64_t v;
    if (!de_map_get(&x->m, key_hash(key), &v))
        return CLI_PLAN_NONE;
    if (!strcmp(key_at(x, (uint32_t)(v - 1)), key))
        return (uint32_t)(v - 1);
    for (uint32_t i = 0; i < x->n; i++)
        if (!strcmp(key_at(x, i), key))
            return i;
    return CLI_PLAN_NONE;
}

/* ---- the diff ------------------------------------------------------------------- */

static bool same_devices(const cli_plan_claim *a, const cli_plan_claim *b)
{
    if (a->ndevices != b->ndevices)
        return false;
    for (uint32_t i = 0; i < a->ndevices; i++)
        if (strcmp(a->devices[i], b->devices[i]))
            return false;
    return true;
}

static json_t *devices_json(const cli_plan_claim *c)
{
    json_t *a = json_array();
    for (uint32_t i = 0; c && i < c->ndevices; i++)
        json_array_append_new(a, json_string(c->devices[i]));
    return a;
}

static void devices_text(FILE *out, const cli_plan_claim *c)
{
    for (uint32_t i = 0; i < c->ndevices; i++)
        fprintf(out, "%s%s", i ? ", " : "", c->devices[i]);
}

typedef struct differ {
    FILE *out;
    json_t *changes;
    uint32_t n;
} differ;

static json_t *change(differ *d, const char *what, const char *key, const char *change)
{
    d->n++;
    if (!d->changes)
        return NULL;
    json_t *o = json_object();
    if (key)
        json_object_set_new(o, what, json_string(key));
    json_object_set_new(o, "change", json_string(change));
    json_array_append_new(d->changes, o);
    return o;
}

static void set_s(json_t *o, const char *k, const char *v)
{
    if (o && v)
        json_object_set_new(o, k, json_string(v));
}

/* The claims of one pod (or, pod CLI_PLAN_NONE, of --node): devices that
 * changed; claims allocated or released while the pod stayed scheduled
 * (with `quiet_new` / `quiet_old` the pod's own line already says so). */
static void diff_claims(differ *d, const cli_plan *was, const keyindex *wi, uint32_t wpod, const cli_plan *now,
                        uint32_t npod, bool quiet_new, bool quiet_old)
{
    for (uint32_t i = 0; i < now->nclaims; i++) {
        const cli_plan_claim *c = &now->claims[i];
        if (c->pod != npod)
            continue;
        uint32_t k = find_key(wi, c->key);
        const cli_plan_claim *o = k == CLI_PLAN_NONE ? NULL : &was->claims[k];
        if (o && (wpod == CLI_PLAN_NONE ? o->pod != CLI_PLAN_NONE : o->pod != wpod))
            o = NULL; /* the claim belonged to another pod then */
        if (o && same_devices(o, c))
            continue;
        if (!o && quiet_new)
            continue;
        json_t *j = change(d, "claim", c->key, o ? "devices" : "allocated");
        if (j && o)
            json_object_set_new(j, "from", devices_json(o));
        if (j)
            json_object_set_new(j, "to", devices_json(c));
        if (d->out) {
            fprintf(d->out, "  claim %s: ", c->key);
            if (o) {
                devices_text(d->out, o);
                fputs(" -> ", d->out);
            } else {
                fputs("allocated ", d->out);
            }
            devices_text(d->out, c);
            fputc('\n', d->out);
        }
    }
    if (quiet_old)
        return;
    keyindex ni;
    index_keys(&ni, now->claims, now->nclaims, sizeof *now->claims);
    for (uint32_t i = 0; i < was->nclaims; i++) {
        const cli_plan_claim *o = &was->claims[i];
        if (o->pod != wpod)
            continue;
        uint32_t k = find_key(&ni, o->key);
        if (k != CLI_PLAN_NONE && now->claims[k].pod == npod)
            continue;
        json_t *j = change(d, "claim", o->key, "released");
        if (j)
            json_object_set_new(j, "from", devices_json(o));
        if (d->out) {
            fprintf(d->out, "  claim %s: released (was ", o->key);
            devices_text(d->out, o);
            fputs(")\n", d->out);
        }
    }
    de_map_destroy(&ni.m);
}

static void diff_node_mode(differ *d, const cli_plan *was, const keyindex *wci, const cli_plan *now)
{
    bool ok_was = was->rc == CLI_EXIT_OK, ok_now = now->rc == CLI_EXIT_OK;
    if (ok_was && !ok_now) {
        json_t *j = change(d, "node", now->node, "unschedulable");
        set_s(j, "reason", now->why);
        if (d->out)
            fprintf(d->out, "  claims on node %s: cannot be satisfied any more: %s\n", now->node,
                    now->why ? now->why : "?");
        return;
    }
    if (!ok_was && ok_now) {
        change(d, "node", now->node, "schedulable");
        if (d->out)
            fprintf(d->out, "  claims on node %s: can be satisfied now\n", now->node);
    }
    if (ok_now)
        diff_claims(d, was, wci, CLI_PLAN_NONE, now, CLI_PLAN_NONE, false, !ok_was);
}

uint32_t cli_plan_diff(const cli_plan *was, const cli_plan *now, FILE *out, json_t *changes)
{
    differ d = {out, changes, 0};
    keyindex wpi, wci, npi;
    index_keys(&wpi, was->pods, was->npods, sizeof *was->pods);
    index_keys(&wci, was->claims, was->nclaims, sizeof *was->claims);
    index_keys(&npi, now->pods, now->npods, sizeof *now->pods);
    if (now->node) {
        diff_node_mode(&d, was, &wci, now);
    } else {
        for (uint32_t i = 0; i < now->npods; i++) {
            const cli_plan_pod *p = &now->pods[i];
            uint32_t k = find_key(&wpi, p->key);
            const cli_plan_pod *o = k == CLI_PLAN_NONE ? NULL : &was->pods[k];
            bool was_on = o && o->node, is_on = p->node != NULL;
            json_t *j = NULL;
            if (is_on && !was_on) {
                j = change(&d, "pod", p->key, "scheduled");
                set_s(j, "node", p->node);
                if (out)
                    fprintf(out, "  pod %s: scheduled on %s%s\n", p->key, p->node, o ? " (was unschedulable)" : "");
            } else if (is_on && strcmp(o->node, p->node)) {
                j = change(&d, "pod", p->key, "moved");
                set_s(j, "from", o->node);
                set_s(j, "to", p->node);
                if (out)
                    fprintf(out, "  pod %s: moved %s -> %s\n", p->key, o->node, p->node);
            } else if (!is_on && (!o || was_on)) {
                j = change(&d, "pod", p->key, "unschedulable");
                set_s(j, "from", was_on ? o->node : NULL);
                set_s(j, "reason", p->why);
                if (out)
                    fprintf(out, "  pod %s: unschedulable%s%s%s: %s\n", p->key, was_on ? " (was on " : "",
                            was_on ? o->node : "", was_on ? ")" : "", p->why ? p->why : "?");
            }
            if (is_on || was_on)
                diff_claims(&d, was, &wci, k, now, i, is_on && !was_on, !is_on);
        }
        for (uint32_t i = 0; i < was->npods; i++) {
            const cli_plan_pod *o = &was->pods[i];
            if (find_key(&npi, o->key) != CLI_PLAN_NONE)
                continue;
            json_t *j = change(&d, "pod", o->key, "removed");
            set_s(j, "from", o->node);
            if (out)
                fprintf(out, "  pod %s: removed from the input%s%s%s\n", o->key, o->node ? " (was on " : "",
                        o->node ? o->node : "", o->node ? ")" : "");
        }
    }
    de_map_destroy(&wpi.m);
    de_map_destroy(&wci.m);
    de_map_destroy(&npi.m);
    return d.n;
}

json_t *cli_plan_unschedulable(const cli_plan *p)
{
    json_t *a = json_array();
    if (p->node) {
        if (p->rc == CLI_EXIT_UNSAT)
            json_array_append_new(a, json_pack("{s:s, s:s}", "node", p->node, "reason", p->why ? p->why : ""));
        return a;
    }
    for (uint32_t i = 0; i < p->npods; i++)
        if (!p->pods[i].node)
            json_array_append_new(a, json_pack("{s:s, s:s}", "pod", p->pods[i].key, "reason",
                                               p->pods[i].why ? p->pods[i].why : ""));
    return a;
}

void cli_plan_summary(const cli_plan *p, char *buf, size_t cap)
{
    if (p->node) {
        if (p->rc == CLI_EXIT_OK)
            snprintf(buf, cap, "%u claim(s) allocated on node %s", p->nclaims, p->node);
        else
            snprintf(buf, cap, "the pending claims cannot be allocated together on node %s", p->node);
        return;
    }
    uint32_t on = 0;
    for (uint32_t i = 0; i < p->npods; i++)
        on += p->pods[i].node != NULL;
    snprintf(buf, cap, "%u pod(s) scheduled, %u unschedulable", on, p->npods - on);
}
