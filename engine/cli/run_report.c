/*
 * run_report.c - `draengine run --report out.html`: one self-contained HTML
 * page (no network: inline CSS, inline SVG, a few lines of inline JS).
 *
 * The cluster picture is an SVG with one row per node and one cell per
 * device, coloured by the workload holding it (or grey when free); a
 * button recolours the cells by performance tier.  The picture is complete
 * without JavaScript (colours and <title> tooltips are in the SVG); the
 * script only switches the colouring and shows a richer tooltip.  Charts:
 * accelerator and device utilisation as pods arrived, placed/pending per
 * workload, allocation per vendor.
 */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CELL 8
#define PITCH 9
#define PER_LINE 64
#define LABEL_W 230

static const char *const palette[] = {
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
    "#ff9da7", "#9c755f", "#2f4b7c", "#a05195", "#d45087", "#665191", "#003f5c",
};
static const char *const tier_palette[] = {"#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02"};
#define FREE_COLOUR "#e3e3e3"
#define BLOCKED_COLOUR "#9e9e9e" /* free, but its accelerator is in use through another device */
#define NOTIER_COLOUR "#c9c9c9"

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

static const char *tcolour(int32_t t)
{
    return t < 0 ? NOTIER_COLOUR : tier_palette[(uint32_t)t % DE_ARRAY_LEN(tier_palette)];
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

static void cluster_map(FILE *f, const run_stats *s, const run_mix *m)
{
    uint32_t height = 4;
    for (uint32_t n = 0; n < s->nnodes; n++) {
        uint32_t lines = (s->nodes[n].ndev + PER_LINE - 1) / PER_LINE;
        height += (lines ? lines : 1) * PITCH + 4;
    }
    uint32_t width = LABEL_W + PER_LINE * PITCH + 4;
    fputs("<h2>Cluster</h2>\n<p><button id=\"by-workload\" class=\"on\">colour by workload</button>"
          "<button id=\"by-tier\">colour by tier</button></p>\n",
          f);
    fputs("<div class=\"legend\" id=\"legend-workload\">", f);
    for (size_t w = 0; w < m->n; w++) {
        fprintf(f, "<span><i style=\"background:%s\"></i>", wcolour((int32_t)w));
        esc(f, m->w[w].name);
        fputs("</span>", f);
    }
    fprintf(f, "<span><i style=\"background:%s\"></i>free</span><span><i style=\"background:%s\"></i>free, but "
               "its accelerator is in use (a MIG slice or partition of it is taken)</span></div>\n",
            FREE_COLOUR, BLOCKED_COLOUR);
    fputs("<div class=\"legend\" id=\"legend-tier\" style=\"display:none\">", f);
    for (uint32_t t = 0; t < s->ntiers; t++) {
        fprintf(f, "<span><i style=\"background:%s\"></i>", tcolour((int32_t)t));
        esc(f, s->tiers[t]);
        fputs("</span>", f);
    }
    fprintf(f, "<span><i style=\"background:%s\"></i>no tier</span> (free devices are faded)</div>\n",
            NOTIER_COLOUR);
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
            const run_dev *d = &s->devs[nd->first_dev + k];
            uint32_t x = LABEL_W + (k % PER_LINE) * PITCH, yy = y + (k / PER_LINE) * PITCH;
            int32_t owner = d->owner >= 0 ? d->owner : (d->shares ? 0 : -1);
            bool blocked = owner < 0 && d->phys >= 0 && s->phys_busy[d->phys] > 0;
            fprintf(f, "<rect class=\"dev\" x=\"%u\" y=\"%u\" width=\"%d\" height=\"%d\" fill=\"%s\" data-w=\"%d\" "
                       "data-t=\"%d\" data-s=\"%u\"%s><title>",
                    x, yy, CELL, CELL, blocked ? BLOCKED_COLOUR : wcolour(owner), owner, d->tier, d->shares,
                    blocked ? " data-b=\"1\"" : "");
            esc(f, d->name);
            fputs(" (", f);
            esc(f, d->driver);
            fputs(")", f);
            if (d->owner >= 0) {
                fputs(": ", f);
                esc(f, m->w[d->owner].name);
            } else if (blocked) {
                fputs(": free, its accelerator is in use", f);
            } else if (d->shares) {
                fprintf(f, ": %u shares", d->shares);
            }
            if (d->tier >= 0) {
                fputs(", tier ", f);
                esc(f, s->tiers[d->tier]);
            }
            fputs("</title></rect>\n", f);
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
    fputs("<h2>Workloads</h2>\n<table id=\"workloads\"><tr><th>workload</th><th>what</th><th>arrived</th>"
          "<th>placed</th><th>pending</th><th>first pending reason</th></tr>\n",
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
        fputs("</td><td style=\"text-align:left\">", f);
        esc(f, m->w[w].summary);
        fprintf(f, "</td><td>%u</td><td>%u</td><td>%u</td><td style=\"text-align:left\">", a, p, a - p);
        esc(f, reason ? reason : "");
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

static void script(FILE *f, const run_stats *s)
{
    fputs("<div id=\"tip\"></div>\n<script>\n(function(){\n", f);
    fputs("var wp=[", f);
    for (size_t i = 0; i < DE_ARRAY_LEN(palette); i++)
        fprintf(f, "%s\"%s\"", i ? "," : "", palette[i]);
    fputs("],tp=[", f);
    for (size_t i = 0; i < DE_ARRAY_LEN(tier_palette); i++)
        fprintf(f, "%s\"%s\"", i ? "," : "", tier_palette[i]);
    fprintf(f, "],free=\"%s\",blocked=\"%s\",notier=\"%s\",tiers=[", FREE_COLOUR, BLOCKED_COLOUR, NOTIER_COLOUR);
    for (uint32_t t = 0; t < s->ntiers; t++) {
        fputs(t ? ",\"" : "\"", f);
        for (const char *c = s->tiers[t]; *c; c++)
            if (*c != '"' && *c != '\\' && *c != '<')
                fputc(*c, f);
        fputc('"', f);
    }
    fputs("];\n"
          "var cells=document.querySelectorAll('#cluster-map rect.dev');\n"
          "function paint(mode){for(var i=0;i<cells.length;i++){var c=cells[i],w=+c.getAttribute('data-w'),"
          "t=+c.getAttribute('data-t');if(mode==='tier'){c.setAttribute('fill',t<0?notier:tp[t%tp.length]);"
          "c.setAttribute('fill-opacity',(w<0&&c.getAttribute('data-s')==='0')?'0.35':'1');}else{"
          "c.setAttribute('fill',w<0?(c.getAttribute('data-b')?blocked:free):wp[w%wp.length]);"
          "c.setAttribute('fill-opacity','1');}}\n"
          "document.getElementById('by-workload').className=mode==='tier'?'':'on';"
          "document.getElementById('by-tier').className=mode==='tier'?'on':'';"
          "document.getElementById('legend-workload').style.display=mode==='tier'?'none':'';"
          "document.getElementById('legend-tier').style.display=mode==='tier'?'':'none';}\n"
          "document.getElementById('by-workload').onclick=function(){paint('workload');};\n"
          "document.getElementById('by-tier').onclick=function(){paint('tier');};\n"
          "var tip=document.getElementById('tip'),map=document.getElementById('cluster-map');\n"
          "map.addEventListener('mousemove',function(ev){var c=ev.target;if(!c.classList||!c.classList.contains('dev'))"
          "{tip.style.display='none';return;}var g=c.parentNode;tip.textContent=g.getAttribute('data-node')+' ('+"
          "g.getAttribute('data-shape')+')\\n'+c.firstChild.textContent;tip.style.left=(ev.clientX+12)+'px';"
          "tip.style.top=(ev.clientY+12)+'px';tip.style.display='block';});\n"
          "map.addEventListener('mouseleave',function(){tip.style.display='none';});\n"
          "if(location.hash==='#tier')paint('tier');\n"
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
    fputs("</p>\n", f);
    kpis(f, s);
    cluster_map(f, s, m);
    util_chart(f, s);
    workload_chart(f, s, m);
    vendor_chart(f, s);
    pending_table(f, s, m);
    script(f, s);
    fputs("</body>\n</html>\n", f);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad)
        return de_errf(e, DE_EIO, "%s: write failed", path);
    return DE_OK;
}
