/*
 * svg.c - the SVG fleet picture (see svg.h).
 *
 * Layout: a title, then per card a label column (node, index, model, mode)
 * and a bar 720 px wide. MIG cards draw their grid units as cells; each
 * instance spans its units. Whole and pooled cards split the bar by
 * reserved memory. Free space is grey; best-effort guests are hatched.
 */
#include "render/svg.h"

#include <stdio.h>
#include <string.h>

#define ROW_H 46
#define BAR_X 300
#define BAR_W 720
#define TOP 70

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#59a14f",
                                      "#b07aa1", "#9c755f", "#edc948", "#76b7b2",
                                      "#ff9da7", "#17becf", "#8c564b", "#bcbd22"};
#define NPALETTE (sizeof(palette) / sizeof(palette[0]))

static const char *tenant_colour(const struct plan *p, const struct plan_inst *in)
{
    if (!in->row)
        return "#bab0ac";
    size_t idx = (size_t)(in->row->tenant - p->model->tenants);
    return palette[idx % NPALETTE];
}

/* Text that fits w pixels at about charw pixels a character ("..." when cut). */
static void fitted(struct ts_sbuf *out, const char *text, double w, double charw)
{
    size_t max = w > 2 * charw ? (size_t)((w - 4) / charw) : 0, len = strlen(text);
    if (len <= max) {
        ts_sbuf_xml(out, text);
        return;
    }
    char buf[128];
    size_t keep = max > 1 ? max - 1 : 0;
    snprintf(buf, sizeof(buf), "%.*s", (int)(keep < sizeof(buf) - 1 ? keep : sizeof(buf) - 1),
             text);
    ts_sbuf_xml(out, buf);
    if (max > 0)
        ts_sbuf_puts(out, "\u2026");
}

static void cell(struct ts_sbuf *out, double x, double y, double w, const char *fill,
                 const char *line1, const char *line2, int hatched)
{
    ts_sbuf_printf(out,
                   "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
                   "stroke=\"#ffffff\" stroke-width=\"2\"%s/>\n",
                   x, (int)y, w, ROW_H - 8, fill,
                   hatched ? " fill-opacity=\"0.55\" stroke-dasharray=\"4 2\"" : "");
    if (w < 36)
        return;
    ts_sbuf_printf(out, "<text x=\"%.1f\" y=\"%d\" class=\"c\">", x + w / 2, (int)y + 16);
    fitted(out, line1, w, 7.2);
    ts_sbuf_printf(out, "</text>\n<text x=\"%.1f\" y=\"%d\" class=\"s\">", x + w / 2, (int)y + 31);
    fitted(out, line2, w, 5.8);
    ts_sbuf_puts(out, "</text>\n");
}

static void mig_row(const struct plan *p, const struct plan_gpu *g, double y, struct ts_sbuf *out)
{
    double unit = (double)BAR_W / g->model->grid;
    for (int u = 0; u < g->model->grid; u++)
        ts_sbuf_printf(out,
                       "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
                       "fill=\"#e8e8e8\" stroke=\"#ffffff\" stroke-width=\"2\"/>\n",
                       BAR_X + u * unit, (int)y, unit, ROW_H - 8);
    for (size_t k = 0; k < g->ninst; k++) {
        const struct plan_inst *in = &g->inst[k];
        char owner[200];
        plan_inst_owner(in, owner, sizeof(owner));
        if (in->row && in->row->workload->replicas > 1) {
            size_t len = strlen(owner);
            snprintf(owner + len, sizeof(owner) - len, " r%d", in->replica);
        }
        cell(out, BAR_X + in->start * unit, y, in->size * unit, tenant_colour(p, in),
             in->profile->name, owner, 0);
    }
}

static void share_row(const struct plan *p, const struct plan_gpu *g, double y, struct ts_sbuf *out)
{
    double x = BAR_X, total = g->model->memory_gib, used = 0;
    for (size_t k = 0; k < g->ninst; k++) {
        const struct plan_inst *in = &g->inst[k];
        char owner[160], label[200];
        plan_inst_owner(in, owner, sizeof(owner));
        if (in->guest) {
            snprintf(label, sizeof(label), "+ guest %s (time-sliced)", owner);
            ts_sbuf_printf(out, "<text x=\"%d\" y=\"%d\" class=\"g\">", BAR_X + BAR_W - 6,
                           (int)y + ROW_H - 12);
            ts_sbuf_xml(out, label);
            ts_sbuf_puts(out, "</text>\n");
            continue;
        }
        double w = BAR_W * in->mem_gib / total;
        snprintf(label, sizeof(label), "%.0f GiB%s", in->mem_gib,
                 g->mode == PLAN_MPS ? " MPS" : "");
        cell(out, x, y, w, tenant_colour(p, in), label, owner, 0);
        x += w;
        used += in->mem_gib;
    }
    if (used < total - 0.05)
        cell(out, x, y, BAR_X + BAR_W - x, "#e8e8e8", "free", "", 0);
}

static void legend(const struct plan *p, double y, struct ts_sbuf *out)
{
    for (size_t i = 0; i < p->model->ntenants; i++) {
        double x = 20 + (double)(i % 6) * 170;
        double yy = y + (double)(i / 6) * 22;
        ts_sbuf_printf(out,
                       "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"14\" fill=\"%s\"/>"
                       "<text x=\"%.0f\" y=\"%.0f\" class=\"l\">",
                       x, yy, palette[i % NPALETTE], x + 20, yy + 12);
        ts_sbuf_xml(out, p->model->tenants[i].name);
        ts_sbuf_puts(out, "</text>\n");
    }
}

void render_svg(const struct plan *p, struct ts_sbuf *out)
{
    double height = TOP + (double)p->ngpus * ROW_H + 40 + ((double)p->model->ntenants / 6 + 1) * 22;
    ts_sbuf_printf(out,
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
                   "viewBox=\"0 0 %d %.0f\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n"
                   "<style>.c{font-size:12px;fill:#fff;text-anchor:middle;font-weight:bold}"
                   ".s{font-size:10px;fill:#fff;text-anchor:middle}.h{font-size:13px;fill:#222}"
                   ".l{font-size:12px;fill:#222}.g{font-size:11px;fill:#222;text-anchor:end;"
                   "font-style:italic}</style>\n<rect width=\"100%%\" height=\"100%%\" "
                   "fill=\"#ffffff\"/>\n",
                   BAR_X + BAR_W + 20, height, BAR_X + BAR_W + 20, height);
    const struct plan_summary *s = &p->summary;
    ts_sbuf_printf(out,
                   "<text x=\"20\" y=\"30\" style=\"font-size:18px;font-weight:bold\">"
                   "tessera plan: %d of %d GPUs used, naive %d, dedicated %d, lower "
                   "bound %d</text>\n",
                   s->gpus_used, s->gpus_total, s->naive, s->dedicated, s->lower_bound);
    for (size_t i = 0; i < p->ngpus; i++) {
        const struct plan_gpu *g = &p->gpus[i];
        double y = TOP + (double)i * ROW_H;
        ts_sbuf_printf(out, "<text x=\"20\" y=\"%.0f\" class=\"h\">", y + 16);
        ts_sbuf_xml(out, g->node->name);
        ts_sbuf_printf(out, " gpu %d</text>\n<text x=\"20\" y=\"%.0f\" class=\"l\">", g->index,
                       y + 32);
        ts_sbuf_xml(out, g->model->name);
        ts_sbuf_printf(out, " - %s%s</text>\n", plan_mode_names[g->mode],
                       g->sharing ? " + time-slicing" : "");
        if (g->mode == PLAN_MIG)
            mig_row(p, g, y, out);
        else
            share_row(p, g, y, out);
    }
    legend(p, TOP + (double)p->ngpus * ROW_H + 20, out);
    ts_sbuf_puts(out, "</svg>\n");
}
