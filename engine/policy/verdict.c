/*
 * verdict.c - the one judgement of a policy revision on a graph: did any
 * derive or groups hook fail on a current device?  `policy diff`,
 * `allocate` (with and without --watch), `run`, `serve` and the host's
 * reload all ask this function, so a revision is good or bad the same way
 * on every path.
 *
 * The failures come from the facts cache: every slot keeps the failed calls
 * of its last computation (pol_devfacts.fails), so the verdict describes
 * exactly the devices the set has facts for now, and a device that left the
 * graph no longer counts.  Failures are grouped by what failed - policy,
 * hook, file:line, reason and message - because one broken line usually
 * fails on every device of a driver, and a reviewer wants one line for it
 * with the devices listed under it, not 48 lines.
 */
#include "facts.h"
#include "polgraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vrec {
    const pol_devfail *f;
    const char *device; /* driver/pool/name, owned by the verdict */
} vrec;

static int cmp_str(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : ""); }

static int cmp_vrec(const void *x, const void *y)
{
    const vrec *a = x, *b = y;
    int c;
    if (a->f->policy != b->f->policy)
        return a->f->policy < b->f->policy ? -1 : 1;
    if (a->f->hook != b->f->hook)
        return a->f->hook < b->f->hook ? -1 : 1;
    if ((c = cmp_str(a->f->file, b->f->file)))
        return c;
    if (a->f->line != b->f->line)
        return a->f->line < b->f->line ? -1 : 1;
    if (a->f->reason != b->f->reason)
        return a->f->reason < b->f->reason ? -1 : 1;
    if ((c = cmp_str(a->f->msg, b->f->msg)))
        return c;
    return strcmp(a->device, b->device);
}

static bool same_group(const vrec *a, const vrec *b)
{
    return a->f->policy == b->f->policy && a->f->hook == b->f->hook && !cmp_str(a->f->file, b->f->file) &&
           a->f->line == b->f->line && a->f->reason == b->f->reason && !cmp_str(a->f->msg, b->f->msg);
}

static char *device_key(const dg_graph *g, uint32_t id)
{
    de_devview v;
    dg_device_view(g, id, &v);
    de_interner *in = dg_intern((dg_graph *)g);
    size_t n = de_intern_len(in, v.driver) + de_intern_len(in, v.pool) + de_intern_len(in, v.name) + 3;
    char *s = de_xmalloc(n);
    snprintf(s, n, "%s/%s/%s", de_intern_str(in, v.driver), de_intern_str(in, v.pool), de_intern_str(in, v.name));
    return s;
}

bool pol_verdict_judge(const pol_set *s, const dg_graph *g, pol_verdict *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->revision, sizeof out->revision, "%s", pol_set_revision(s));
    snprintf(out->dir, sizeof out->dir, "%s", pol_set_dir(s) ? pol_set_dir(s) : "");
    uint32_t limit = dg_device_id_limit(g);
    vrec *recs = NULL;
    size_t nrec = 0, cap = 0, kcap = 0;
    for (uint32_t id = 0; id < limit; id++) {
        const pol_slot *sl = pol_facts_peek(s, id);
        if (!sl || !sl->f.nfailures)
            continue;
        dg_devref r;
        if (!dg_device_ref(g, id, &r) || !(sl->src_gen == r.gen || (sl->published && sl->pub_gen == r.gen)))
            continue; /* gone, or changed since: its next computation decides */
        out->ndevices++;
        out->nfailures += sl->f.nfailures;
        if (!sl->f.nfails)
            continue;
        char *key = device_key(g, id);
        if (out->nkeys == kcap) {
            kcap = kcap ? kcap * 2 : 64;
            out->keys = de_xrealloc(out->keys, kcap * sizeof *out->keys);
        }
        out->keys[out->nkeys++] = key;
        for (uint32_t k = 0; k < sl->f.nfails; k++) {
            if (nrec == cap) {
                cap = cap ? cap * 2 : 64;
                recs = de_xrealloc(recs, cap * sizeof *recs);
            }
            recs[nrec++] = (vrec){&sl->f.fails[k], key};
        }
    }
    if (nrec)
        qsort(recs, nrec, sizeof *recs, cmp_vrec);
    for (size_t i = 0; i < nrec;) {
        size_t j = i + 1;
        while (j < nrec && same_group(&recs[i], &recs[j]))
            j++;
        out->groups = de_xrealloc(out->groups, (out->ngroups + 1) * sizeof *out->groups);
        pol_verdict_group *gr = &out->groups[out->ngroups++];
        memset(gr, 0, sizeof *gr);
        const pol_devfail *f = recs[i].f;
        pol_info info;
        pol_set_info(s, f->policy, &info);
        gr->policy = de_xstrdup(info.name);
        gr->policy_file = de_xstrdup(info.file);
        gr->hook = pol_hook_names[f->hook];
        gr->reason = (pol_reason)f->reason;
        gr->file = de_xstrdup(f->file && f->file[0] ? f->file : info.file);
        gr->line = f->line;
        gr->message = de_xstrdup(f->msg ? f->msg : "");
        gr->ndevices = (uint32_t)(j - i);
        uint32_t keep = gr->ndevices < POL_VERDICT_MAX_NAMES ? gr->ndevices : POL_VERDICT_MAX_NAMES;
        gr->devices = de_xcalloc(keep ? keep : 1, sizeof *gr->devices);
        for (uint32_t k = 0; k < keep; k++)
            gr->devices[k] = recs[i + k].device; /* borrowed from out->keys */
        gr->nnames = keep;
        i = j;
    }
    free(recs);
    return out->ndevices == 0;
}

void pol_verdict_free(pol_verdict *v)
{
    if (!v)
        return;
    for (uint32_t i = 0; i < v->ngroups; i++) {
        pol_verdict_group *g = &v->groups[i];
        free(g->policy);
        free(g->policy_file);
        free(g->file);
        free(g->message);
        free(g->devices);
    }
    free(v->groups);
    for (uint32_t i = 0; i < v->nkeys; i++)
        free(v->keys[i]);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

void pol_verdict_summary(const pol_verdict *v, char *buf, size_t cap)
{
    if (!v->ndevices) {
        snprintf(buf, cap, "policy revision %.12s: no hook failed on the current devices", v->revision);
        return;
    }
    int n = snprintf(buf, cap, "policy revision %.12s refused: %llu hook call%s failed on %u current device%s",
                     v->revision, (unsigned long long)v->nfailures, v->nfailures == 1 ? "" : "s", v->ndevices,
                     v->ndevices == 1 ? "" : "s");
    if (v->ngroups && n > 0 && (size_t)n < cap) {
        const pol_verdict_group *g = &v->groups[0];
        snprintf(buf + n, cap - (size_t)n, " (first: policy %s, %s:%d, %s %s: %s, on %u device%s%s)", g->policy,
                 g->file, g->line, g->hook, pol_reason_str(g->reason), g->message, g->ndevices,
                 g->ndevices == 1 ? "" : "s", v->ngroups > 1 ? "; more in the failures section" : "");
    }
}
