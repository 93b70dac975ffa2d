/*
 * run_report.c - `draengine run --report out.html`: one self-contained HTML
 * page (no network: inline CSS, inline SVG, a few lines of inline JS).
 *
 * The cluster picture is an SVG with one row per node and one cell per
 * device, coloured by the workload holding it (or grey when free); a shared
 * device (consumable capacity) is drawn in stripes, one per workload that
 * holds a share of it.  Buttons recolour the cells by any derived attribute
 * the policies published (tier, class, NUMA node, ...); values that name a
 * colour or a metal tier are drawn in it (gold is gold).  The picture is
 * complete without JavaScript (colours and <title> tooltips are in the
 * SVG); the script only switches the colouring and shows a richer tooltip.
 * Charts: accelerator and device utilisation as pods arrived,
 * placed/pending per workload, allocation per vendor.  The page names the
 * policy revision that made the decisions.
 */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define CELL 8
#define PITCH 9
#define PER_LINE 64
#define LABEL_W 230

static const char *const palette[] = {
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
    "#ff9da7", "#9c755f", "#2f4b7c", "#a05195", "#d45087", "#665191", "#003f5c",
};
static const char *const value_palette[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e",
                                            "#e6ab02", "#a6761d", "#1f78b4", "#b2df8a", "#fb9a99"};
#define FREE_COLOUR "#e3e3e3"
#define BLOCKED_COLOUR "#9e9e9e" /* free, but its accelerator is in use through another device */
#define NOVALUE_COLOUR "#f4f4f4"

/* Values that name their colour: metal tiers and plain colour words. */
static const struct {
    const char *name, *colour;
} named_colours[] = {
    {"platinum", "#7d8fa3"}, {"gold", "#d4af37"},   {"silver", "#a8a9ad"}, {"bronze", "#cd7f32"},
    {"copper", "#b87333"},   {"diamond", "#4fc3f7"}, {"iron", "#5a5a5a"},  {"red", "#d62728"},
    {"green", "#2ca02c"},    {"blue", "#1f77b4"},    {"orange", "#ff7f0e"}, {"purple", "#9467bd"},
    {"yellow", "#e6c229"},   {"black", "#222222"},   {"white", "#fafafa"},  {"grey", "#8c8c8c"},
    {"gray", "#8c8c8c"},
};

/* The colour of value v of a facet: its own when it names one, else the
 * palette's by position. */
static const char *value_colour(const run_facet *fc, int32_t v)
{
    if (v < 0 || (uint32_t)v >= fc->nvalues)
        return NOVALUE_COLOUR;
    for (size_t i = 0; i < DE_ARRAY_LEN(named_colours); i++)
        if (!strcasecmp(fc->values[v], named_colours[i].name))
            return named_colours[i].colour;
    return value_palette[(uint32_t)v % DE_ARRAY_LEN(value_palette)];
}

static void esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

static const char *wcolour(int32_t w)
{
    return w < 0 ? FREE_COLOUR : palette[(uint32_t)w % DE_ARRAY_LEN(palette)];
}

static void head(FILE *f, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", f);
    esc(f, title);
    fputs("</title>\n<style>\n"
          "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px;color:#222;background:#fff}\n"
          "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}\n"
          ".sub{color:#666;margin:0 0 16px}\n"
          "table{border-collapse:collapse}td,th{padding:3px 10px;text-align:right;border-bottom:1px solid #eee}\n"
          "td:first-child,th:first-child{text-align:left}\n"
          "th.l,td.l{text-align:left}td.why{max-width:70ch;white-space:normal;overflow-wrap:normal}\n"
          ".kpis{display:flex;gap:14px;flex-wrap:wrap}.kpi{border:1px solid #ddd;border-radius:6px;"
          "padding:8px 14px;min-width:120px}.kpi b{display:block;font-size:20px}\n"
          ".legend span{display:inline-block;margin:0 12px 4px 0}.legend i{display:inline-block;width:10px;"
          "height:10px;margin-right:4px;vertical-align:middle}\n"
          "button{font:inherit;padding:3px 10px;margin-right:6px;border:1px solid #bbb;border-radius:4px;"
          "background:#f7f7f7;cursor:pointer}button.on{background:#333;color:#fff}\n"
          "#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:4px 8px;border-radius:4px;"
          "font-size:12px;display:none;white-space:pre}\n"
          ".map{overflow:auto;max-height:80vh;border:1px solid #eee}\n"
          "svg text{font:11px system-ui,sans-serif;fill:#333}\n"
          "</style>\n</head>\n<body>\n",
          f);
}

static void kpis(FILE *f, const run_stats *s)
{
    uint32_t placed = 0, pending = 0, alloc = 0, pa = 0, pn = 0, na = 0, nn = 0;
    for (uint32_t i = 0; i < s->npods; i++) {
        const run_pod *p = &s->pods[i];
        if (!p->placed) {
            pending++;
            continue;
        }
        placed++;
        if (p->pcie_aligned >= 0)
            pn++, pa += (uint32_t)p->pcie_aligned;
        if (p->numa_aligned >= 0)
            nn++, na += (uint32_t)p->numa_aligned;
    }
    for (uint32_t i = 0; i < s->ndevs; i++)
        alloc += s->devs[i].owner >= 0 || s->devs[i].shares > 0;
    uint32_t busy = 0;
    for (uint32_t i = 0; i < s->nphys; i++)
        busy += s->phys_busy[i] > 0;
    fprintf(f, "<div class=\"kpis\" id=\"kpis\">\n");
    fprintf(f, "<div class=\"kpi\">pods placed<b id=\"kpi-placed\">%u</b></div>\n", placed);
    fprintf(f, "<div class=\"kpi\">pods pending<b id=\"kpi-pending\">%u</b></div>\n", pending);
    fprintf(f, "<div class=\"kpi\">accelerators busy<b>%.1f%%</b></div>\n",
            s->nphys ? 100.0 * busy / s->nphys : 0.0);
    fprintf(f, "<div class=\"kpi\">devices allocated<b>%.1f%%</b></div>\n",
            s->ndevs ? 100.0 * alloc / s->ndevs : 0.0);
    fprintf(f, "<div class=\"kpi\">PCIe-aligned<b>%.1f%%</b></div>\n", pn ? 100.0 * pa / pn : 0.0);
    fprintf(f, "<div class=\"kpi\">NUMA-aligned<b>%.1f%%</b></div>\n", nn ? 100.0 * na / nn : 0.0);
    fprintf(f, "</div>\n");
}

/* The facet to show first: the tier when there is one (the question a
 * tiering policy answers), else the first. */
static int32_t default_facet(const run_stats *s)
{
    for (uint32_t k = 0; k < s->nfacets; k++)
        if (strstr(s->facets[k].name, "/tier"))
            return (int32_t)k;
    return s->nfacets ? 0 : -1;
}

static void cluster_map(FILE *f, const run_stats *s, const run_mix *m)
{
    uint32_t height = 4;
    for (uint32_t n = 0; n < s->nnodes; n++) {
        uint32_t lines = (s->nodes[n].ndev + PER_LINE - 1) / PER_LINE;
        height += (lines ? lines : 1) * PITCH + 4;
    }
    uint32_t width = LABEL_W + PER_LINE * PITCH + 4;
    fputs("<h2>Cluster</h2>\n<p id=\"colour-by\"><button id=\"by-workload\" class=\"on\" data-f=\"-1\">colour by "
          "workload</button>",
          f);
    for (uint32_t k = 0; k < s->nfacets; k++) {
        fprintf(f, "<button data-f=\"%u\">", k);
        esc(f, s->facets[k].name);
        fputs("</button>", f);
    }
    if (!s->nfacets)
        fputs(" <span class=\"sub\">(no derived attributes: run with policies to colour by them)</span>", f);
    fputs("</p>\n<div class=\"legend\" id=\"legend--1\">", f);
    for (size_t w = 0; w < m->n; w++) {
        fprintf(f, "<span><i style=\"background:%s\"></i>", wcolour((int32_t)w));
        esc(f, m->w[w].name);
        fputs("</span>", f);
    }
    fprintf(f, "<span><i style=\"background:%s\"></i>free</span><span><i style=\"background:%s\"></i>free, but "
               "its accelerator is in use (a MIG slice or partition of it is taken)</span><span>striped: shared "
               "(consumable capacity), one stripe per workload holding a share</span></div>\n",
            FREE_COLOUR, BLOCKED_COLOUR);
    for (uint32_t k = 0; k < s->nfacets; k++) {
        const run_facet *fc = &s->facets[k];
        fprintf(f, "<div class=\"legend\" id=\"legend-%u\" style=\"display:none\">", k);
        for (uint32_t v = 0; v < fc->nvalues; v++) {
            fprintf(f, "<span><i style=\"background:%s\"></i>", value_colour(fc, (int32_t)v));
            esc(f, fc->values[v]);
            fputs("</span>", f);
        }
        fprintf(f, "<span><i style=\"background:%s;border:1px solid #ccc\"></i>none%s</span> (free devices are "
                   "faded)</div>\n",
                NOVALUE_COLOUR, fc->overflow ? " (or one of more values than shown)" : "");
    }
    fprintf(f, "<div class=\"map\"><svg id=\"cluster-map\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" "
               "height=\"%u\" viewBox=\"0 0 %u %u\">\n",
            width, height, width, height);
    uint32_t y = 4;
    for (uint32_t n = 0; n < s->nnodes; n++) {
        const run_node *nd = &s->nodes[n];
        fprintf(f, "<g class=\"node\" data-node=\"");
        esc(f, nd->name);
        fprintf(f, "\" data-shape=\"");
        esc(f, nd->shape);
        fprintf(f, "\"><text x=\"0\" y=\"%u\">", y + CELL);
        esc(f, nd->name);
        fputs("</text>", f);
        if (n == 0 || strcmp(s->nodes[n - 1].shape, nd->shape)) {
            fprintf(f, "<text x=\"%d\" y=\"%u\" text-anchor=\"end\" style=\"fill:#888\">", LABEL_W - 8, y + CELL);
            esc(f, nd->shape);
            fputs("</text>", f);
        }
        fputs("\n", f);
        for (uint32_t k = 0; k < nd->ndev; k++) {
            uint32_t di = nd->first_dev + k;
            const run_dev *d = &s->devs[di];
            uint32_t x = LABEL_W + (k % PER_LINE) * PITCH, yy = y + (k / PER_LINE) * PITCH;
            bool shared = d->owner < 0 && d->nshare_w > 0;
            int32_t owner = d->owner >= 0 ? d->owner : shared ? (int32_t)d->share_w[0] : -1;
            bool blocked = owner < 0 && d->phys >= 0 && s->phys_busy[d->phys] > 0;
            fprintf(f, "<rect class=\"dev\" x=\"%u\" y=\"%u\" width=\"%d\" height=\"%d\" fill=\"%s\" data-w=\"%d\" "
                       "data-s=\"%u\" data-v=\"",
                    x, yy, CELL, CELL, blocked ? BLOCKED_COLOUR : wcolour(owner), owner, d->shares);
            for (uint32_t q = 0; q < s->nfacets; q++)
                fprintf(f, "%s%d", q ? "," : "", run_stats_facet_value(s, di, q));
            fprintf(f, "\"%s><title>", blocked ? " data-b=\"1\"" : "");
            esc(f, d->name);
            fputs(" (", f);
            esc(f, d->driver);
            fputs(")", f);
            if (d->owner >= 0) {
                fputs(": ", f);
                esc(f, m->w[d->owner].name);
            } else if (blocked) {
                fputs(": free, its accelerator is in use", f);
            } else if (shared) {
                fprintf(f, ": shared, %u share%s held by", d->shares, d->shares == 1 ? "" : "s");
                uint32_t named = 0;
                for (uint8_t q = 0; q < d->nshare_w; q++) {
                    fprintf(f, "%s", q ? ", " : " ");
                    esc(f, m->w[d->share_w[q]].name);
                    fprintf(f, " (%u)", d->share_n[q]);
                    named += d->share_n[q];
                }
                if (d->shares > named)
                    fprintf(f, " and others (%u)", d->shares - named);
            }
            for (uint32_t q = 0; q < s->nfacets; q++) {
                int32_t v = run_stats_facet_value(s, di, q);
                if (v < 0)
                    continue;
                fputs(", ", f);
                esc(f, s->facets[q].name);
                fputs("=", f);
                esc(f, s->facets[q].values[v]);
            }
            fputs("</title></rect>", f);
            /* a shared device: a stripe per workload holding a share (the
             * cell's own fill is the first one) */
            for (uint8_t q = 1; shared && q < d->nshare_w; q++) {
                double sw = (double)CELL / d->nshare_w;
                fprintf(f, "<rect class=\"share\" x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                           "pointer-events=\"none\"/>",
                        x + sw * q, yy, sw, CELL, wcolour((int32_t)d->share_w[q]));
            }
            fputs("\n", f);
        }
        uint32_t lines = (nd->ndev + PER_LINE - 1) / PER_LINE;
        y += (lines ? lines : 1) * PITCH + 4;
        fputs("</g>\n", f);
    }
    fputs("</svg></div>\n", f);
}

static void util_chart(FILE *f, const run_stats *s)
{
    const int W = 720, H = 260, L = 48, B = 30, T = 12, R = 16;
    fputs("<h2>Utilisation as pods arrived</h2>\n", f);
    fprintf(f, "<svg id=\"util-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n", W, H);
    int pw = W - L - R, ph = H - T - B;
    for (int p = 0; p <= 100; p += 25) {
        int y = T + ph - ph * p / 100;
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#eee\"/>", L, y, L + pw, y);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%d%%</text>\n", L - 6, y + 4, p);
    }
    uint32_t maxp = s->nsamples ? s->samples[s->nsamples - 1].pods : 1;
    if (!maxp)
        maxp = 1;
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">pods arrived (%u)</text>\n", L + pw / 2, H - 6,
            maxp);
    static const char *const colours[2] = {"#4e79a7", "#f28e2b"};
    for (int series = 0; series < 2; series++) {
        fprintf(f, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%d,%d",
                colours[series], L, T + ph);
        /* at most ~1000 points: step through the samples */
        uint32_t step = s->nsamples > 1000 ? s->nsamples / 1000 : 1;
        for (uint32_t i = 0; i < s->nsamples; i += step) {
            const run_sample *sm = &s->samples[i];
            double v = series == 0 ? sm->gpu_busy : sm->dev_busy;
            fprintf(f, " %.1f,%.1f", L + (double)pw * sm->pods / maxp, T + ph - ph * v);
        }
        if (s->nsamples) {
            const run_sample *sm = &s->samples[s->nsamples - 1];
            double v = series == 0 ? sm->gpu_busy : sm->dev_busy;
            fprintf(f, " %.1f,%.1f", L + (double)pw, T + ph - ph * v);
        }
        fputs("\"/>\n", f);
    }
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">"
               "accelerators busy</text>\n",
            L + 10, T + 4, colours[0], L + 24, T + 13);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">"
               "devices allocated</text>\n",
            L + 160, T + 4, colours[1], L + 174, T + 13);
    fputs("</svg>\n", f);
}

static void bar_rows(FILE *f, const char *id, const char *const *labels, const uint32_t *good, const uint32_t *total,
                     size_t n, const char *good_name, const char *rest_name)
{
    const int W = 720, L = 150, rowh = 22;
    uint32_t maxv = 1;
    for (size_t i = 0; i < n; i++)
        if (total[i] > maxv)
            maxv = total[i];
    int H = (int)n * rowh + 30;
    fprintf(f, "<svg id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">\n", id, W, H);
    for (size_t i = 0; i < n; i++) {
        int y = 4 + (int)i * rowh;
        double gw = (double)(W - L - 90) * good[i] / maxv, tw = (double)(W - L - 90) * total[i] / maxv;
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", L - 8, y + 13);
        esc(f, labels[i]);
        fprintf(f, "</text><rect class=\"bar\" x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"16\" fill=\"#ddd\"/>"
                   "<rect class=\"bar\" x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"16\" fill=\"%s\"/>"
                   "<text x=\"%.1f\" y=\"%d\">%u / %u</text>\n",
                L, y, tw, L, y, gw, palette[i % DE_ARRAY_LEN(palette)], L + tw + 6, y + 13, good[i], total[i]);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\">coloured: %s; grey: %s</text>\n", L, H - 8, good_name, rest_name);
    fputs("</svg>\n", f);
}

static void workload_chart(FILE *f, const run_stats *s, const run_mix *m)
{
    const char **labels = de_xcalloc(m->n, sizeof *labels);
    uint32_t *placed = de_xcalloc(m->n, sizeof *placed), *arrived = de_xcalloc(m->n, sizeof *arrived);
    for (size_t w = 0; w < m->n; w++)
        labels[w] = m->w[w].name;
    for (uint32_t i = 0; i < s->npods; i++) {
        arrived[s->pods[i].workload]++;
        placed[s->pods[i].workload] += s->pods[i].placed;
    }
    fputs("<h2>Pods per workload</h2>\n", f);
    bar_rows(f, "workload-chart", labels, placed, arrived, m->n, "placed", "pending");
    free(labels);
    free(placed);
    free(arrived);
}

static void vendor_chart(FILE *f, const run_stats *s)
{
    const char *labels[16];
    uint32_t alloc[16] = {0}, total[16] = {0};
    size_t nv = 0;
    for (uint32_t i = 0; i < s->ndevs; i++) {
        const char *v = run_vendor(s->devs[i].driver);
        size_t k = 0;
        while (k < nv && strcmp(labels[k], v))
            k++;
        if (k == nv && nv < 16)
            labels[nv++] = v;
        if (k < nv) {
            total[k]++;
            alloc[k] += s->devs[i].owner >= 0 || s->devs[i].shares > 0;
        }
    }
    fputs("<h2>Devices per vendor</h2>\n", f);
    bar_rows(f, "vendor-chart", labels, alloc, total, nv, "allocated", "free");
}

static void pending_table(FILE *f, const run_stats *s, const run_mix *m)
{
    fputs("<h2>Workloads</h2>\n<table id=\"workloads\"><tr><th class=\"l\">workload</th><th class=\"l\">what"
          "</th><th>arrived</th><th>placed</th><th>pending</th><th class=\"l\">first pending reason</th></tr>\n",
          f);
    for (size_t w = 0; w < m->n; w++) {
        uint32_t a = 0, p = 0;
        const char *reason = NULL;
        for (uint32_t i = 0; i < s->npods; i++) {
            if (s->pods[i].workload != w)
                continue;
            a++;
            if (s->pods[i].placed)
                p++;
            else if (!reason)
                reason = s->pods[i].reason;
        }
        fprintf(f, "<tr><td><i style=\"display:inline-block;width:10px;height:10px;background:%s\"></i> ",
                wcolour((int32_t)w));
        esc(f, m->w[w].name);
        fputs("</td><td class=\"l\">", f);
        esc(f, m->w[w].summary);
        fprintf(f, "</td><td>%u</td><td>%u</td><td>%u</td><td class=\"l why\">", a, p, a - p);
        esc(f, reason ? reason : "");
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void script(FILE *f, const run_stats *s, const run_mix *m)
{
    fputs("<div id=\"tip\"></div>\n<script>\n(function(){\n", f);
    fputs("var wp=[", f);
    for (size_t i = 0; i < DE_ARRAY_LEN(palette); i++)
        fprintf(f, "%s\"%s\"", i ? "," : "", palette[i]);
    /* per facet, the colour of each value (named colours resolved here) */
    fputs("],fc=[", f);
    for (uint32_t k = 0; k < s->nfacets; k++) {
        fputs(k ? ",[" : "[", f);
        for (uint32_t v = 0; v < s->facets[k].nvalues; v++)
            fprintf(f, "%s\"%s\"", v ? "," : "", value_colour(&s->facets[k], (int32_t)v));
        fputc(']', f);
    }
    fprintf(f, "],free=\"%s\",blocked=\"%s\",none=\"%s\",nf=%u,dflt=%d;\n", FREE_COLOUR, BLOCKED_COLOUR,
            NOVALUE_COLOUR, s->nfacets, default_facet(s));
    (void)m;
    fputs("var cells=document.querySelectorAll('#cluster-map rect.dev'),"
          "stripes=document.querySelectorAll('#cluster-map rect.share');\n"
          "function paint(k){for(var i=0;i<cells.length;i++){var c=cells[i],w=+c.getAttribute('data-w');"
          "if(k>=0){var v=+c.getAttribute('data-v').split(',')[k];c.setAttribute('fill',v<0?none:fc[k][v]);"
          "c.setAttribute('fill-opacity',(w<0&&c.getAttribute('data-s')==='0')?'0.35':'1');}else{"
          "c.setAttribute('fill',w<0?(c.getAttribute('data-b')?blocked:free):wp[w%wp.length]);"
          "c.setAttribute('fill-opacity','1');}}\n"
          "for(var j=0;j<stripes.length;j++)stripes[j].style.display=k>=0?'none':'';\n"
          "var bs=document.querySelectorAll('#colour-by button');for(var b=0;b<bs.length;b++)"
          "bs[b].className=(+bs[b].getAttribute('data-f')===k)?'on':'';\n"
          "for(var q=-1;q<nf;q++){var l=document.getElementById('legend-'+q);if(l)l.style.display=q===k?'':'none';}}\n"
          "var bs=document.querySelectorAll('#colour-by button');for(var b=0;b<bs.length;b++)"
          "bs[b].onclick=function(){paint(+this.getAttribute('data-f'));};\n"
          "var tip=document.getElementById('tip'),map=document.getElementById('cluster-map');\n"
          "map.addEventListener('mousemove',function(ev){var c=ev.target;if(!c.classList||!c.classList.contains('dev'))"
          "{tip.style.display='none';return;}var g=c.parentNode;tip.textContent=g.getAttribute('data-node')+' ('+"
          "g.getAttribute('data-shape')+')\\n'+c.firstChild.textContent;tip.style.left=(ev.clientX+12)+'px';"
          "tip.style.top=(ev.clientY+12)+'px';tip.style.display='block';});\n"
          "map.addEventListener('mouseleave',function(){tip.style.display='none';});\n"
          "if(location.hash==='#tier'&&dflt>=0)paint(dflt);\n"
          "var h=location.hash.match(/^#facet-(\\d+)$/);if(h&&+h[1]<nf)paint(+h[1]);\n"
          "document.body.setAttribute('data-ready','1');\n"
          "})();\n</script>\n",
          f);
}

de_rc run_report_write(const run_stats *s, const run_mix *m, const char *title, const char *path, de_err *e)
{
    /* O_NONBLOCK: a FIFO nobody reads would block the open forever (ENXIO
     * instead); writes block again, for a pipe that is being read */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd < 0)
        return de_errf(e, DE_EIO, "%s: %s", path,
                       errno == ENXIO ? "a FIFO with no reader" : strerror(errno));
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return de_errf(e, DE_EIO, "%s: %s", path, strerror(errno));
    }
    head(f, "draengine run report");
    fputs("<h1>draengine run</h1>\n<p class=\"sub\">", f);
    esc(f, title);
    fputs("<br>", f);
    if (s->npolicies) {
        /* which revision made these decisions: the same SHA-256 policy list,
         * allocate and serve's metric name */
        fprintf(f, "policies: %u from ", s->npolicies);
        esc(f, s->policy_dir ? s->policy_dir : "?");
        fputs(", revision <code id=\"policy-revision\">", f);
        esc(f, s->policy_revision ? s->policy_revision : "");
        fputs("</code>", f);
    } else {
        fputs("policies: none (Kubernetes allocation only)", f);
    }
    fputs("</p>\n", f);
    kpis(f, s);
    cluster_map(f, s, m);
    util_chart(f, s);
    workload_chart(f, s, m);
    vendor_chart(f, s);
    pending_table(f, s, m);
    script(f, s, m);
    fputs("</body>\n</html>\n", f);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad)
        return de_errf(e, DE_EIO, "%s: write failed", path);
    return DE_OK;
}
