/*
 * plot.c - the SVG of a fight (see fight.h): one tail curve per phase that
 * measured the SLA tenant. x is the latency on a log scale (decades), y is
 * -log10(1 - q) so p90, p99 and p99.9 sit on evenly spaced lines and the
 * tail, which the verdict is about, gets most of the height; each curve is
 * 240 points q -> the type-7 percentile. Hand-written SVG in the style of
 * src/render/svg.c; `rsvg-convert` renders it (tests/cli/fight.sh).
 */
#include "fight/internal.h"

#include <math.h>
#include <stdlib.h>

#define W 980
#define H 520
#define X0 90.0
#define X1 700.0
#define Y0 60.0
#define Y1 450.0
#define YMAX 3.0

/* One colour a phase (FIGHT_NPHASE of them), so no two curves share one. */
static const char *const colours[FIGHT_NPHASE] = {"#bab0ac", "#79706e", "#4e79a7", "#b07aa1",
                                                  "#8cd17d", "#f1ce63", "#a0cbe8", "#e15759",
                                                  "#59a14f", "#f28e2b", "#76b7b2"};

static int plotted(const struct fight_phase_result *p)
{
    return p->status >= FIGHT_ST_MEASURED && p->s.n >= 2;
}

static double px(double us, double lo, double hi)
{
    return X0 + (log10(us) - lo) / (hi - lo) * (X1 - X0);
}

static double py(double y) { return Y1 - y / YMAX * (Y1 - Y0); }

static void axes(struct ts_sbuf *out, double lo, double hi)
{
    static const char *const ylab[] = {"p0", "p90", "p99", "p99.9"};
    for (int i = 0; i <= 3; i++)
        ts_sbuf_printf(out,
                       "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" "
                       "stroke=\"#dddddd\"/>\n<text x=\"%.0f\" y=\"%.1f\" class=\"a\" "
                       "text-anchor=\"end\">%s</text>\n",
                       X0, py(i), X1, py(i), X0 - 6, py(i) + 4, ylab[i]);
    for (int d = (int)ceil(lo); d <= (int)floor(hi); d++) {
        double x = px(pow(10, d), lo, hi);
        ts_sbuf_printf(out,
                       "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" "
                       "stroke=\"#dddddd\"/>\n<text x=\"%.1f\" y=\"%.0f\" class=\"a\" "
                       "text-anchor=\"middle\">%g us</text>\n",
                       x, Y0, x, Y1, x, Y1 + 18, pow(10, d));
    }
    ts_sbuf_printf(out,
                   "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" "
                   "fill=\"none\" stroke=\"#888888\"/>\n<text x=\"%.0f\" y=\"%.0f\" "
                   "class=\"a\" text-anchor=\"middle\">SLA request latency (log scale)</text>\n",
                   X0, Y0, X1 - X0, Y1 - Y0, (X0 + X1) / 2, Y1 + 40);
}

static void curve(struct ts_sbuf *out, const struct fight_phase_result *p, const char *colour,
                  double lo, double hi)
{
    double *v = fight__sorted_copy(p->sla.lat_us, p->sla.n);
    if (!v)
        return;
    double ymax = fmin(YMAX, log10((double)p->sla.n));
    ts_sbuf_printf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
                   colour);
    for (int i = 0; i <= 240; i++) {
        double y = ymax * i / 240, q = 1 - pow(10, -y);
        double us = fmax(fight_percentile(v, p->sla.n, q), pow(10, lo));
        ts_sbuf_printf(out, "%s%.1f,%.1f", i ? " " : "", px(us, lo, hi), py(y));
    }
    ts_sbuf_puts(out, "\"/>\n");
    free(v);
}

static void legend(struct ts_sbuf *out, const struct fight_phase_result *p, const char *colour,
                   int row)
{
    double y = Y0 + 10 + row * 22;
    ts_sbuf_printf(out,
                   "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" "
                   "stroke-width=\"3\"/>\n<text x=\"%.0f\" y=\"%.0f\" class=\"l\">",
                   X1 + 20, y, X1 + 44, y, colour, X1 + 50, y + 4);
    ts_sbuf_xml(out, p->name);
    ts_sbuf_printf(out, " p99 %.0f us", p->s.p99);
    if (p->status >= FIGHT_ST_PASS)
        ts_sbuf_puts(out, p->status == FIGHT_ST_PASS   ? " PASS"
                          : p->status == FIGHT_ST_FAIL ? " FAIL"
                                                       : " INCONCLUSIVE");
    ts_sbuf_puts(out, "</text>\n");
}

void fight_plot_svg(const struct fight_result *r, struct ts_sbuf *out)
{
    double mn = INFINITY, mx = 0;
    for (int ph = 0; ph < FIGHT_NPHASE; ph++)
        if (plotted(&r->ph[ph])) {
            mn = fmin(mn, fmax(r->ph[ph].s.min, 0.01));
            mx = fmax(mx, r->ph[ph].s.max);
        }
    double lo = isfinite(mn) ? floor(log10(mn)) : 0, hi = mx > 0 ? ceil(log10(mx)) : 1;
    if (hi <= lo)
        hi = lo + 1;
    ts_sbuf_printf(out,
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                   "viewBox=\"0 0 %d %d\">\n<style>text{font-family:sans-serif}"
                   ".t{font-size:16px;font-weight:bold}.a{font-size:11px;fill:#555555}"
                   ".l{font-size:12px}</style>\n<rect width=\"%d\" height=\"%d\" "
                   "fill=\"#ffffff\"/>\n<text x=\"%.0f\" y=\"30\" class=\"t\">",
                   W, H, W, H, W, H, X0);
    ts_sbuf_puts(out, "tessera fight: SLA latency tail per phase on ");
    ts_sbuf_xml(out, r->device);
    ts_sbuf_printf(out, " (verdict %s)</text>\n", r->verdict == FIGHT_ST_PASS ? "PASS" : "FAIL");
    axes(out, lo, hi);
    int row = 0;
    for (int ph = 0; ph < FIGHT_NPHASE; ph++) {
        if (!plotted(&r->ph[ph]))
            continue;
        curve(out, &r->ph[ph], colours[ph], lo, hi);
        legend(out, &r->ph[ph], colours[ph], row++);
    }
    ts_sbuf_puts(out, "</svg>\n");
}
