/*
 * svg.c - the SVG fleet picture (see svg.h).
 *
 * Layout: a title (and the cost line with a PriceBook), then per card a label column (node, index, model, mode)
 * and a bar 720 px wide. MIG cards draw their grid units as cells; each
 * instance spans its units. Whole and pooled cards split the bar by
 * reserved memory. Free space is grey; best-effort guests are hatched.
 * A label that is wider than its cell (by DejaVu Sans' metrics) is drawn
 * smaller, never cut.
 */
#include "render/svg.h"

#include <stdio.h>
#include <string.h>
#include "util/units.h"

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

/* Advance widths of DejaVu Sans (the picture's first font) for ASCII 32..126,
 * in thousandths of an em, regular and bold: the hmtx table of Debian's
 * fonts-dejavu-core 2.37 (DejaVuSans.ttf, DejaVuSans-Bold.ttf). Other
 * characters count as a full em (an overestimate: text then shrinks more). */
static const unsigned short adv_regular[95] = {
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361,  318, 337, 636, 636, 636,
    636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 531, 1000, 684, 686, 698, 770, 632,
    575, 775, 752, 295, 295, 656, 557, 863, 748, 787, 603, 787, 695, 635,  611, 732, 684, 989, 685,
    611, 685, 390, 337, 390, 838, 500, 500, 613, 635, 550, 635, 615, 352,  635, 634, 278, 278, 579,
    278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592,  525, 636, 337, 636, 838};
static const unsigned short adv_bold[95] = {
    348,  456, 521, 838, 696, 1002, 872, 306,  457, 457, 523, 838, 380, 415,  380, 365,
    696,  696, 696, 696, 696, 696,  696, 696,  696, 696, 400, 400, 838, 838,  838, 580,
    1000, 774, 762, 734, 830, 683,  683, 821,  837, 372, 372, 775, 637, 995,  837, 850,
    733,  850, 770, 720, 682, 812,  774, 1103, 771, 724, 725, 457, 365, 457,  838, 500,
    500,  675, 716, 593, 716, 678,  435, 716,  712, 343, 343, 665, 343, 1042, 712, 687,
    716,  716, 493, 595, 478, 712,  652, 924,  645, 652, 582, 712, 365, 712,  838};

/* The width of text at 1 px font size (UTF-8 continuation bytes skipped). */
static double text_em(const char *text, int bold)
{
    double w = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if ((*p & 0xC0) == 0x80)
            continue;
        const unsigned short *t = bold ? adv_bold : adv_regular;
        unsigned idx = (unsigned)*p - 32u;
        w += (idx < 95u ? t[idx] : 1000u) / 1000.0;
    }
    return w;
}

/* A label centred at x in a cell w px wide: its class's size, or a smaller
 * one that makes it fit (never cut). */
static void label(struct ts_sbuf *out, double x, int y, const char *cls, double size, int bold,
                  const char *text, double w)
{
    double em = text_em(text, bold), room = w - 6;
    ts_sbuf_printf(out, "<text x=\"%.1f\" y=\"%d\" class=\"%s\"", x, y, cls);
    if (em * size > room && em > 0)
        ts_sbuf_printf(out, " style=\"font-size:%.2fpx\"", room / em - 0.005);
    ts_sbuf_puts(out, ">");
    ts_sbuf_xml(out, text);
    ts_sbuf_puts(out, "</text>\n");
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
    label(out, x + w / 2, (int)y + 16, "c", 12, 1, line1, w);
    label(out, x + w / 2, (int)y + 31, "s", 10, 0, line2, w);
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
        if (in->guest) { /* time-sliced on the card: hatched, at its end, over the owner */
            double gw = BAR_W * in->mem_gib / total;
            snprintf(label, sizeof(label), "%.0f GiB time-sliced", in->mem_gib);
            cell(out, BAR_X + BAR_W - gw, y, gw, tenant_colour(p, in), label, owner, 1);
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

/* The legend's colour of tenant i: its own, or (a tenant with no workload
 * that uses another's) the pool owner's. */
static size_t legend_colour(const struct spec_model *m, size_t i)
{
    const struct spec_tenant *t = &m->tenants[i];
    if (t->nworkloads || !t->nuses)
        return i;
    for (size_t k = 0; k < m->ntenants; k++)
        if (!strcmp(m->tenants[k].name, t->uses[0].tenant))
            return k;
    return i;
}

static void legend(const struct plan *p, double y, struct ts_sbuf *out)
{
    const struct spec_model *m = p->model;
    for (size_t i = 0; i < m->ntenants; i++) {
        const struct spec_tenant *t = &m->tenants[i];
        double x = 20 + (double)(i % 6) * 170;
        double yy = y + (double)(i / 6) * 22;
        int user = !t->nworkloads && t->nuses;
        char text[200];
        snprintf(text, sizeof(text), user ? "%s uses %s/%s" : "%s", t->name,
                 user ? t->uses[0].tenant : "", user ? t->uses[0].workload : "");
        ts_sbuf_printf(
            out, "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"14\" fill=\"%s\"%s/>", x, yy,
            palette[legend_colour(m, i) % NPALETTE],
            user ? " fill-opacity=\"0.55\" stroke=\"#222\" stroke-dasharray=\"2 2\"" : "");
        double em = text_em(text, 0), room = 150;
        ts_sbuf_printf(out, "<text x=\"%.0f\" y=\"%.0f\" class=\"l\"", x + 20, yy + 12);
        if (em * 12 > room)
            ts_sbuf_printf(out, " style=\"font-size:%.2fpx\"", room / em - 0.005);
        ts_sbuf_puts(out, ">");
        ts_sbuf_xml(out, text);
        ts_sbuf_puts(out, "</text>\n");
    }
}

/* The cost line under the title (with a PriceBook): per hour, the lower
 * bound and the gap, as the text summary gives them. */
static void svg_cost(const struct plan *p, struct ts_sbuf *out)
{
    const struct plan_summary *s = &p->summary;
    if (s->cost_per_hour < 0 || !p->model->pricebook)
        return;
    ts_sbuf_printf(out, "<text x=\"20\" y=\"50\" class=\"l\">cost %.2f ",
                   (double)s->cost_per_hour / TS_MICRO);
    ts_sbuf_xml(out, p->model->pricebook->currency);
    ts_sbuf_puts(out, " per hour");
    if (plan_has_cost_bound(s))
        ts_sbuf_printf(out, ", lower bound %.2f", (double)s->cost_lower_bound / TS_MICRO);
    if (plan_has_cost_bound(s) && s->cost_gap_percent >= 0)
        ts_sbuf_printf(out, " (gap %.1f%%)", s->cost_gap_percent);
    ts_sbuf_puts(out, "</text>\n");
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
    svg_cost(p, out);
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
