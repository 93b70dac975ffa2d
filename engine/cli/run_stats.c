/*
 * run_stats.c - what happened during `draengine run`, and the summary.
 *
 * The summary is deterministic for a given seed, cluster, workload and
 * policy set, except the timing lines at the end (setup, latency,
 * throughput), which measure this machine.  Everything is counted from the
 * recorded pods and the final device states, never from clocks.
 */
#include "run.h"

#include <stdlib.h>
#include <string.h>

void run_stats_init(run_stats *s) { memset(s, 0, sizeof *s); }

void run_stats_free(run_stats *s)
{
    for (uint32_t i = 0; i < s->nnodes; i++) {
        free(s->nodes[i].name);
        free(s->nodes[i].shape);
    }
    for (uint32_t i = 0; i < s->ndevs; i++) {
        free(s->devs[i].name);
        free(s->devs[i].driver);
        free(s->devs[i].root);
    }
    for (uint32_t i = 0; i < s->ntiers; i++)
        free(s->tiers[i]);
    for (uint32_t i = 0; i < s->npods; i++)
        free(s->pods[i].reason);
    free(s->nodes);
    free(s->devs);
    free(s->tiers);
    free(s->phys_busy);
    free(s->pods);
    free(s->samples);
    free(s->policy_revision);
    free(s->policy_dir);
    for (uint32_t f = 0; f < s->nfacets; f++) {
        for (uint32_t v = 0; v < s->facets[f].nvalues; v++)
            free(s->facets[f].values[v]);
        free(s->facets[f].values);
        free(s->facets[f].name);
    }
    free(s->facet_of);
    memset(s, 0, sizeof *s);
}

void run_stats_facet(run_stats *s, uint32_t dev, const char *name, const char *value)
{
    uint32_t f = 0;
    while (f < s->nfacets && strcmp(s->facets[f].name, name))
        f++;
    if (f == s->nfacets) {
        if (s->nfacets == RUN_MAX_FACETS)
            return;
        s->facets[s->nfacets++] = (run_facet){.name = de_xstrdup(name)};
    }
    run_facet *fc = &s->facets[f];
    uint32_t v = 0;
    while (v < fc->nvalues && strcmp(fc->values[v], value))
        v++;
    if (v == fc->nvalues) {
        if (fc->nvalues == RUN_MAX_FACET_VALUES) {
            fc->overflow = true;
            return;
        }
        fc->values = de_xrealloc(fc->values, (fc->nvalues + 1) * sizeof *fc->values);
        fc->values[fc->nvalues++] = de_xstrdup(value);
    }
    if (dev >= s->facetcap) {
        uint32_t ncap = s->facetcap ? s->facetcap : 1024;
        while (ncap <= dev)
            ncap *= 2;
        s->facet_of = de_xrealloc(s->facet_of, (size_t)ncap * RUN_MAX_FACETS * sizeof *s->facet_of);
        for (size_t i = (size_t)s->facetcap * RUN_MAX_FACETS; i < (size_t)ncap * RUN_MAX_FACETS; i++)
            s->facet_of[i] = -1;
        s->facetcap = ncap;
    }
    s->facet_of[(size_t)dev * RUN_MAX_FACETS + f] = (int16_t)v;
}

int32_t run_stats_facet_value(const run_stats *s, uint32_t dev, uint32_t f)
{
    if (dev >= s->facetcap || f >= s->nfacets)
        return -1;
    return s->facet_of[(size_t)dev * RUN_MAX_FACETS + f];
}

static const char *const *sort_vals;
static int cmp_vidx(const void *a, const void *b)
{
    const char *x = sort_vals[*(const uint32_t *)a], *y = sort_vals[*(const uint32_t *)b];
    /* numbers by value, text by bytes */
    char *ex, *ey;
    long long nx = strtoll(x, &ex, 10), ny = strtoll(y, &ey, 10);
    if (*x && *y && !*ex && !*ey && nx != ny)
        return nx < ny ? -1 : 1;
    return strcmp(x, y);
}

void run_stats_facets_done(run_stats *s)
{
    /* facets by name, values sorted; device indexes remapped */
    for (uint32_t f = 0; f < s->nfacets; f++) {
        run_facet *fc = &s->facets[f];
        uint32_t *order = de_xcalloc(fc->nvalues + 1, sizeof *order), *rank = de_xcalloc(fc->nvalues + 1, sizeof *rank);
        for (uint32_t v = 0; v < fc->nvalues; v++)
            order[v] = v;
        sort_vals = (const char *const *)fc->values;
        qsort(order, fc->nvalues, sizeof *order, cmp_vidx);
        char **vals = de_xcalloc(fc->nvalues + 1, sizeof *vals);
        for (uint32_t k = 0; k < fc->nvalues; k++) {
            vals[k] = fc->values[order[k]];
            rank[order[k]] = k;
        }
        free(fc->values);
        fc->values = vals;
        for (uint32_t d = 0; d < s->facetcap && d < s->ndevs; d++) {
            int16_t *x = &s->facet_of[(size_t)d * RUN_MAX_FACETS + f];
            if (*x >= 0)
                *x = (int16_t)rank[*x];
        }
        free(order);
        free(rank);
    }
    /* facet order: by name (deterministic whatever the device order) */
    for (uint32_t i = 1; i < s->nfacets; i++)
        for (uint32_t j = i; j > 0 && strcmp(s->facets[j - 1].name, s->facets[j].name) > 0; j--) {
            run_facet t = s->facets[j - 1];
            s->facets[j - 1] = s->facets[j];
            s->facets[j] = t;
            for (uint32_t d = 0; d < s->facetcap && d < s->ndevs; d++) {
                int16_t *row = &s->facet_of[(size_t)d * RUN_MAX_FACETS];
                int16_t x = row[j - 1];
                row[j - 1] = row[j];
                row[j] = x;
            }
        }
}

uint32_t run_stats_add_node(run_stats *s, const char *name, const char *shape)
{
    s->nodes = de_xrealloc(s->nodes, (s->nnodes + 1) * sizeof *s->nodes);
    run_node *n = &s->nodes[s->nnodes];
    n->name = de_xstrdup(name);
    n->shape = de_xstrdup(shape ? shape : "");
    n->first_dev = s->ndevs;
    n->ndev = 0;
    return s->nnodes++;
}

uint32_t run_stats_add_dev(run_stats *s, const run_dev *d)
{
    if (s->ndevs == s->devcap) {
        s->devcap = s->devcap ? s->devcap * 2 : 1024;
        s->devs = de_xrealloc(s->devs, s->devcap * sizeof *s->devs);
    }
    run_dev *x = &s->devs[s->ndevs];
    *x = *d;
    x->name = de_xstrdup(d->name);
    x->driver = de_xstrdup(d->driver);
    x->root = d->root ? de_xstrdup(d->root) : NULL;
    if (d->phys >= 0 && (uint32_t)d->phys >= s->nphys) {
        uint32_t n = (uint32_t)d->phys + 1;
        s->phys_busy = de_xrealloc(s->phys_busy, n * sizeof *s->phys_busy);
        memset(s->phys_busy + s->nphys, 0, (n - s->nphys) * sizeof *s->phys_busy);
        s->nphys = n;
    }
    if (d->node < s->nnodes)
        s->nodes[d->node].ndev++;
    return s->ndevs++;
}

int32_t run_stats_tier(run_stats *s, const char *name)
{
    for (uint32_t i = 0; i < s->ntiers; i++)
        if (!strcmp(s->tiers[i], name))
            return (int32_t)i;
    s->tiers = de_xrealloc(s->tiers, (s->ntiers + 1) * sizeof *s->tiers);
    s->tiers[s->ntiers] = de_xstrdup(name);
    return (int32_t)s->ntiers++;
}

void run_stats_add_pod(run_stats *s, const run_pod *p)
{
    if (s->npods == s->podcap) {
        s->podcap = s->podcap ? s->podcap * 2 : 1024;
        s->pods = de_xrealloc(s->pods, s->podcap * sizeof *s->pods);
    }
    run_pod *x = &s->pods[s->npods++];
    *x = *p;
    x->reason = p->reason ? de_xstrdup(p->reason) : NULL;
}

void run_stats_use(run_stats *s, uint32_t dev, uint32_t w, bool shared)
{
    run_dev *d = &s->devs[dev];
    bool was = d->owner >= 0 || d->shares > 0;
    if (shared) {
        d->shares++;
        uint8_t k = 0;
        while (k < d->nshare_w && d->share_w[k] != w)
            k++;
        if (k == d->nshare_w && k < RUN_SHARE_W) {
            d->share_w[k] = (uint16_t)w;
            d->share_n[k] = 0;
            d->nshare_w++;
        }
        if (k < d->nshare_w && d->share_n[k] < UINT16_MAX)
            d->share_n[k]++;
    } else
        d->owner = (int32_t)w;
    if (!was) {
        s->nused++;
        if (d->phys >= 0 && s->phys_busy[d->phys]++ == 0)
            s->nbusy++;
    }
}

void run_stats_sample(run_stats *s)
{
    uint32_t busy = s->nbusy, alloc = s->nused;
    if (s->nsamples == s->samplecap) {
        s->samplecap = s->samplecap ? s->samplecap * 2 : 1024;
        s->samples = de_xrealloc(s->samples, s->samplecap * sizeof *s->samples);
    }
    s->samples[s->nsamples++] = (run_sample){s->npods, s->nphys ? (float)busy / (float)s->nphys : 0.0f,
                                             s->ndevs ? (float)alloc / (float)s->ndevs : 0.0f};
}

const char *run_vendor(const char *driver)
{
    static const struct {
        const char *suffix, *vendor;
    } map[] = {
        {"nvidia.com", "nvidia"}, {"amd.com", "amd"},       {"intel.com", "intel"}, {"google.com", "google"},
        {"dra.net", "network"},   {"networking.k8s.aws", "network"}, {"dra.cpu", "cpu"},
    };
    size_t dl = strlen(driver);
    for (size_t i = 0; i < DE_ARRAY_LEN(map); i++) {
        size_t sl = strlen(map[i].suffix);
        if (dl >= sl && !strcmp(driver + dl - sl, map[i].suffix) && (dl == sl || driver[dl - sl - 1] == '.'))
            return map[i].vendor;
    }
    return "other";
}

/* "12,345" */
static const char *num(char *b, size_t cap, uint64_t v)
{
    char t[32];
    int n = snprintf(t, sizeof t, "%llu", (unsigned long long)v);
    size_t o = 0;
    for (int i = 0; i < n && o + 2 < cap; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            b[o++] = ',';
        b[o++] = t[i];
    }
    b[o] = 0;
    return b;
}

static double pct(uint64_t a, uint64_t b) { return b ? 100.0 * (double)a / (double)b : 0.0; }

/* "12.5% (1 of 8 ...)", or "n/a (no ...)" when there is nothing to count:
 * 0.0% of nothing reads like a failure. */
static void share(FILE *out, const char *label, uint32_t a, uint32_t b, const char *what, const char *where)
{
    if (b)
        fprintf(out, "  %-9s  %5.1f%% (%u of %u %s %s)\n", label, pct(a, b), a, b, what, where);
    else
        fprintf(out, "  %-9s    n/a (no %s to compare)\n", label, what);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void fmt_ns(char *b, size_t cap, uint64_t ns)
{
    if (ns < 1000)
        snprintf(b, cap, "%llu ns", (unsigned long long)ns);
    else if (ns < 1000000)
        snprintf(b, cap, "%.1f us", (double)ns / 1e3);
    else if (ns < 1000000000ull)
        snprintf(b, cap, "%.2f ms", (double)ns / 1e6);
    else
        snprintf(b, cap, "%.2f s", (double)ns / 1e9);
}

/* Free whole GPUs on nodes where some accelerator is busy cannot serve a
 * job that wants the whole node: that is the fragmentation that matters. */
void run_stats_frag(const run_stats *s, run_frag *out)
{
    memset(out, 0, sizeof *out);
    for (uint32_t n = 0; n < s->nnodes; n++) {
        const run_node *nd = &s->nodes[n];
        uint32_t g = 0, gfree = 0;
        bool busy = false;
        for (uint32_t i = nd->first_dev; i < nd->first_dev + nd->ndev; i++) {
            const run_dev *d = &s->devs[i];
            if (d->phys < 0)
                continue;
            if (s->phys_busy[d->phys])
                busy = true;
            if (d->kind == RUN_KIND_GPU) {
                g++;
                gfree += s->phys_busy[d->phys] == 0;
            }
        }
        if (!g)
            continue;
        out->free_gpus += gfree;
        if (busy)
            out->stranded += gfree;
        if (gfree == 0)
            out->full++;
        else if (busy)
            out->partly++;
        else
            out->idle++;
    }
}

typedef struct reason_count {
    const char *reason;
    uint32_t workload;
    uint32_t n;
} reason_count;

static int cmp_reason(const void *a, const void *b)
{
    const reason_count *x = a, *y = b;
    if (x->n != y->n)
        return x->n > y->n ? -1 : 1;
    if (x->workload != y->workload)
        return x->workload < y->workload ? -1 : 1;
    return strcmp(x->reason, y->reason);
}

void run_stats_summary(const run_stats *s, const run_mix *m, FILE *out)
{
    char a[32], b[32], c[32];
    /* cluster */
    fprintf(out, "Cluster: %s nodes, %s devices (%s physical accelerators)\n", num(a, sizeof a, s->nnodes),
            num(b, sizeof b, s->ndevs), num(c, sizeof c, s->nphys));
    {
        /* shapes in first-seen order with counts */
        const char *seen[64];
        uint32_t cnt[64], ns = 0;
        for (uint32_t i = 0; i < s->nnodes; i++) {
            uint32_t k = 0;
            while (k < ns && strcmp(seen[k], s->nodes[i].shape))
                k++;
            if (k == ns && ns < 64) {
                seen[ns] = s->nodes[i].shape;
                cnt[ns++] = 0;
            }
            if (k < ns)
                cnt[k]++;
        }
        fprintf(out, "  shapes:");
        for (uint32_t k = 0; k < ns; k++)
            fprintf(out, "%s %s %u", k ? "," : "", seen[k], cnt[k]);
        fprintf(out, "\n");
    }
    if (s->npolicies)
        fprintf(out, "  policies: %u loaded, revision %.12s\n", s->npolicies,
                s->policy_revision ? s->policy_revision : "-");
    else
        fprintf(out, "  policies: none (Kubernetes allocation only)\n");

    /* pods */
    uint32_t placed = 0, pending = 0;
    uint32_t *wa = de_xcalloc(m->n + 1, sizeof *wa), *wp = de_xcalloc(m->n + 1, sizeof *wp);
    for (uint32_t i = 0; i < s->npods; i++) {
        const run_pod *p = &s->pods[i];
        wa[p->workload]++;
        if (p->placed) {
            placed++;
            wp[p->workload]++;
        } else {
            pending++;
        }
    }
    fprintf(out, "\nPods: %s arrived, %s placed, %s pending\n", num(a, sizeof a, s->npods),
            num(b, sizeof b, placed), num(c, sizeof c, pending));
    fprintf(out, "  %-16s %8s %8s %8s  %s\n", "workload", "arrived", "placed", "pending", "what");
    for (size_t w = 0; w < m->n; w++)
        fprintf(out, "  %-16s %8u %8u %8u  %s\n", m->w[w].name, wa[w], wp[w], wa[w] - wp[w], m->w[w].summary);

    /* pending reasons */
    if (pending) {
        reason_count *rc = de_xcalloc(pending, sizeof *rc);
        uint32_t nr = 0;
        for (uint32_t i = 0; i < s->npods; i++) {
            const run_pod *p = &s->pods[i];
            if (p->placed)
                continue;
            const char *r = p->reason ? p->reason : "unknown";
            uint32_t k = 0;
            while (k < nr && !(rc[k].workload == p->workload && !strcmp(rc[k].reason, r)))
                k++;
            if (k == nr)
                rc[nr++] = (reason_count){r, p->workload, 0};
            rc[k].n++;
        }
        qsort(rc, nr, sizeof *rc, cmp_reason);
        fprintf(out, "\nPending reasons (%u distinct):\n", nr);
        for (uint32_t k = 0; k < nr && k < 8; k++)
            fprintf(out, "  %6u  %s: %s\n", rc[k].n, m->w[rc[k].workload].name, rc[k].reason);
        if (nr > 8)
            fprintf(out, "  ... %u more\n", nr - 8);
        free(rc);
        /* why every workload ends with pending pods: it is how the run ends */
        fprintf(out, "  A workload stops arriving once %u of its pods in a row stay pending, so each ends with %u\n"
                     "  pending pods when the cluster is full for it; the reasons above say what ran out.\n"
                     "  --report FILE draws where everything went; `draengine policy test` runs the policies'\n"
                     "  specs when a policy-derived reason looks wrong.\n",
                m->patience, m->patience);
    }
    free(wa);
    free(wp);

    /* devices */
    uint32_t alloc = 0, kinds_total[RUN_KIND_COUNT] = {0}, kinds_alloc[RUN_KIND_COUNT] = {0};
    const char *vendors[16];
    uint32_t vtot[16] = {0}, valloc[16] = {0}, nv = 0;
    uint32_t *ttot = de_xcalloc(s->ntiers + 1, sizeof *ttot), *talloc = de_xcalloc(s->ntiers + 1, sizeof *talloc);
    for (uint32_t i = 0; i < s->ndevs; i++) {
        const run_dev *d = &s->devs[i];
        bool used = d->owner >= 0 || d->shares > 0;
        alloc += used;
        kinds_total[d->kind]++;
        kinds_alloc[d->kind] += used;
        const char *v = run_vendor(d->driver);
        uint32_t k = 0;
        while (k < nv && strcmp(vendors[k], v))
            k++;
        if (k == nv && nv < 16)
            vendors[nv++] = v;
        if (k < nv) {
            vtot[k]++;
            valloc[k] += used;
        }
        uint32_t t = d->tier >= 0 ? (uint32_t)d->tier : s->ntiers;
        ttot[t]++;
        talloc[t] += used;
    }
    fprintf(out, "\nDevices allocated: %s of %s (%.1f%%)\n", num(a, sizeof a, alloc), num(b, sizeof b, s->ndevs),
            pct(alloc, s->ndevs));
    fprintf(out, "  by vendor:");
    for (uint32_t k = 0; k < nv; k++)
        fprintf(out, "%s %s %u/%u", k ? "," : "", vendors[k], valloc[k], vtot[k]);
    fprintf(out, "\n  by tier:  ");
    bool any = false;
    for (uint32_t t = 0; t <= s->ntiers; t++) {
        if (!ttot[t])
            continue;
        fprintf(out, "%s %s %u/%u", any ? "," : "", t < s->ntiers ? s->tiers[t] : "(no tier)", talloc[t], ttot[t]);
        any = true;
    }
    fprintf(out, "\n");
    static const char *const kname[RUN_KIND_COUNT] = {"whole GPUs", "GPU partitions", "NICs", "CPU groups",
                                                      "other"};
    fprintf(out, "  by kind:  ");
    any = false;
    for (int k = 0; k < RUN_KIND_COUNT; k++) {
        if (!kinds_total[k])
            continue;
        fprintf(out, "%s %s %u/%u", any ? "," : "", kname[k], kinds_alloc[k], kinds_total[k]);
        any = true;
    }
    fprintf(out, "\n");
    free(ttot);
    free(talloc);

    /* alignment */
    uint32_t pa = 0, pn = 0, na = 0, nn = 0;
    for (uint32_t i = 0; i < s->npods; i++) {
        const run_pod *p = &s->pods[i];
        if (!p->placed)
            continue;
        if (p->pcie_aligned >= 0) {
            pn++;
            pa += (uint32_t)p->pcie_aligned;
        }
        if (p->numa_aligned >= 0) {
            nn++;
            na += (uint32_t)p->numa_aligned;
        }
    }
    fprintf(out, "\nAlignment (placed pods with an accelerator and a NIC or CPUs):\n");
    share(out, "PCIe root", pa, pn, "pods", "on one root");
    share(out, "NUMA node", na, nn, "pods", "on one NUMA node");

    /* fragmentation */
    run_frag fr;
    run_stats_frag(s, &fr);
    if (s->have_miss) {
        const run_frag *m0 = &s->miss_frag;
        fprintf(out, "\nFragmentation when %s first stopped fitting (after %u pods):\n",
                m->w[s->miss_workload].name, s->miss_pods);
        if (m0->free_gpus)
            fprintf(out, "  %.1f%% of free whole GPUs were on partly used nodes (%u of %u)\n",
                    pct(m0->stranded, m0->free_gpus), m0->stranded, m0->free_gpus);
        else
            fprintf(out, "  no whole GPU was free\n");
        fprintf(out, "  GPU nodes: %u full, %u partly used, %u idle\n", m0->full, m0->partly, m0->idle);
        fprintf(out, "At the end: %u free whole GPUs, %u of them on partly used nodes; GPU nodes: %u full, "
                     "%u partly used, %u idle\n",
                fr.free_gpus, fr.stranded, fr.full, fr.partly, fr.idle);
    } else {
        if (fr.free_gpus)
            fprintf(out, "\nFragmentation: %.1f%% of free whole GPUs are on partly used nodes (%u of %u)\n",
                    pct(fr.stranded, fr.free_gpus), fr.stranded, fr.free_gpus);
        else
            fprintf(out, "\nFragmentation: n/a (no whole GPU is free)\n");
        fprintf(out, "  GPU nodes: %u full, %u partly used, %u idle\n", fr.full, fr.partly, fr.idle);
    }

    /* timing: the only lines that change between identical runs */
    uint64_t *lat = de_xmalloc((s->npods ? s->npods : 1) * sizeof *lat);
    for (uint32_t i = 0; i < s->npods; i++)
        lat[i] = s->pods[i].ns;
    qsort(lat, s->npods, sizeof *lat, cmp_u64);
    fprintf(out, "\nTiming (this machine):\n");
    fmt_ns(a, sizeof a, s->setup_ns);
    fprintf(out, "  setup       %s (cluster, policies, device facts)\n", a);
    if (s->npods) {
        size_t i50 = (s->npods * 50 + 99) / 100, i99 = (s->npods * 99 + 99) / 100;
        fmt_ns(a, sizeof a, lat[i50 ? i50 - 1 : 0]);
        fmt_ns(b, sizeof b, lat[i99 ? i99 - 1 : 0]);
        fmt_ns(c, sizeof c, lat[s->npods - 1]);
        fprintf(out, "  latency     p50 %s, p99 %s, max %s per pod decision\n", a, b, c);
        double secs = (double)s->wall_ns / 1e9;
        fprintf(out, "  throughput  %.0f pods/s (%u pods in %.2f s)\n", secs > 0 ? s->npods / secs : 0.0, s->npods,
                secs);
    }
    free(lat);
}
