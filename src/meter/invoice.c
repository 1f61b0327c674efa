/*
 * invoice.c - see invoice.h.
 */
#include "meter/invoice.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/jsonwrite.h"
#include "util/names.h"
#include "util/units.h"
#include "util/time.h"

int invoice_period(const char *period, int64_t *from_ms, int64_t *to_ms)
{
    int y, m, n = 0;
    if (sscanf(period, "%4d-%2d%n", &y, &m, &n) != 2 || period[n] || n != 7 || m < 1 || m > 12)
        return 0;
    char a[32], b[32];
    snprintf(a, sizeof(a), "%04d-%02d-01T00:00:00Z", y, m);
    snprintf(b, sizeof(b), "%04d-%02d-01T00:00:00Z", m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1);
    return ts_time_parse(a, from_ms) && ts_time_parse(b, to_ms);
}

static int64_t price_of(const struct spec_model *m, const struct cat_catalog *cat,
                        const struct cat_model *model)
{
    for (size_t i = 0; m->pricebook && model && i < m->pricebook->nprices; i++)
        if (cat_model_find(cat, m->pricebook->prices[i].model) == model)
            return m->pricebook->prices[i].per_gpu_hour;
    return -1;
}

/* Numerator of an amount in 1e-12 currency units: uh x price_micro. */
static __int128 amount_num(int64_t uh, int64_t price)
{
    return price < 0 ? 0 : (__int128)uh * price;
}

static int64_t to_cents(__int128 num)
{
    return (int64_t)((num + 5000000000LL) / 10000000000LL); /* 1e-12 -> 1e-2, half up */
}

ts_status invoice_build(const struct meter_usage *u, const struct spec_model *m,
                        const struct cat_catalog *cat, const char *tenant, const char *period,
                        struct ts_arena *arena, struct invoice *out, struct ts_error *err)
{
    memset(out, 0, sizeof(*out));
    out->tenant = tenant;
    out->period = period;
    out->currency = m->pricebook ? m->pricebook->currency : "";
    if (!m->pricebook)
        return ts_err(err, TS_INVALID, "the spec has no PriceBook: add one to price GPU-hours");
    out->lines = ts_arena_array(arena, u->ntotals + 1, sizeof(*out->lines));
    if (!out->lines)
        return ts_err(err, TS_NOMEM, "out of memory");
    __int128 alloc = 0, usage = 0;
    for (size_t i = 0; i < u->ntotals; i++) {
        const struct meter_total *t = &u->totals[i];
        if (strcmp(t->tenant, tenant) != 0)
            continue;
        const struct cat_model *model = cat_model_find(cat, t->model);
        struct invoice_line *l = &out->lines[out->nlines++];
        *l = (struct invoice_line){model ? model->name : ts_arena_strdup(arena, t->model),
                                   ts_arena_strdup(arena, t->profile), meter_alloc_uh(t),
                                   meter_usage_uh(t), price_of(m, cat, model)};
        out->unpriced += l->price_micro < 0;
        alloc += amount_num(l->alloc_uh, l->price_micro);
        usage += amount_num(l->usage_uh, l->price_micro);
    }
    out->total_cents = to_cents(alloc);
    out->usage_total_cents = to_cents(usage);
    return TS_OK;
}

static void money(char *buf, size_t size, int64_t cents)
{
    snprintf(buf, size, "%" PRId64 ".%02" PRId64, cents / 100, cents % 100);
}

static void hours(char *buf, size_t size, int64_t uh)
{
    snprintf(buf, size, "%" PRId64 ".%06" PRId64, uh / TS_MICRO, uh % TS_MICRO);
}

/* A line's amount in micro-units, for display (the total is exact). */
static void line_amount(char *buf, size_t size, const struct invoice_line *l, int usage)
{
    if (l->price_micro < 0) {
        snprintf(buf, size, "unpriced");
        return;
    }
    __int128 micro = amount_num(usage ? l->usage_uh : l->alloc_uh, l->price_micro) / TS_MICRO;
    snprintf(buf, size, "%" PRId64 ".%06" PRId64, (int64_t)(micro / TS_MICRO),
             (int64_t)(micro % TS_MICRO));
}

struct line_text {
    char hours[40], used[40], rate[40], amount[48];
};

static void line_text(const struct invoice_line *l, struct line_text *t)
{
    hours(t->hours, sizeof(t->hours), l->alloc_uh);
    hours(t->used, sizeof(t->used), l->usage_uh);
    hours(t->rate, sizeof(t->rate), l->price_micro < 0 ? 0 : l->price_micro);
    line_amount(t->amount, sizeof(t->amount), l, 0);
}

static void write_text(const struct invoice *inv, struct ts_sbuf *o, int csv)
{
    if (csv)
        ts_sbuf_puts(o, "tenant,period,currency,model,profile,gpu_hours,used_gpu_hours,"
                        "price_per_gpu_hour,amount\r\n");
    else
        ts_sbuf_printf(o, "Invoice %s %s (%s)\n%-18s %-10s %14s %14s %12s %16s\n", inv->tenant,
                       inv->period, inv->currency, "GPU MODEL", "PROFILE", "GPU-HOURS", "USED",
                       "RATE", "AMOUNT");
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct invoice_line *l = &inv->lines[i];
        struct line_text t;
        line_text(l, &t);
        const char *prof = l->profile[0] ? l->profile : "whole";
        if (csv)
            ts_sbuf_printf(o, "%s,%s,%s,\"%s\",%s,%s,%s,%s,%s\r\n", inv->tenant, inv->period,
                           inv->currency, l->model, prof, t.hours, t.used, t.rate, t.amount);
        else
            ts_sbuf_printf(o, "%-18s %-10s %14s %14s %12s %16s\n", l->model, prof, t.hours, t.used,
                           t.rate, t.amount);
    }
    char total[48], usage[48];
    money(total, sizeof(total), inv->total_cents);
    money(usage, sizeof(usage), inv->usage_total_cents);
    if (!csv)
        ts_sbuf_printf(o,
                       "Total (allocation basis, billed): %s %s\nUsage basis (showback):"
                       "           %s %s\n%s",
                       total, inv->currency, usage, inv->currency,
                       inv->unpriced ? "Some lines have no price in the PriceBook.\n" : "");
}

static ts_status write_json(const struct invoice *inv, struct ts_sbuf *o)
{
    json_t *lines = json_array();
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct invoice_line *l = &inv->lines[i];
        json_array_append_new(lines, json_pack("{s:s, s:s, s:I, s:I, s:I}", "model", l->model,
                                               "profile", l->profile[0] ? l->profile : "whole",
                                               "microGpuHours", (json_int_t)l->alloc_uh,
                                               "usedMicroGpuHours", (json_int_t)l->usage_uh,
                                               "pricePerGpuHourMicro", (json_int_t)l->price_micro));
    }
    json_t *doc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:I, s:I}", "apiVersion",
                            TS_API_VERSION, "kind", "Invoice", "tenant", inv->tenant, "period",
                            inv->period, "currency", inv->currency, "lines", lines, "totalCents",
                            (json_int_t)inv->total_cents, "usageTotalCents",
                            (json_int_t)inv->usage_total_cents);
    ts_status st = ts_json_write(doc, JSON_SORT_KEYS | JSON_INDENT(2), o);
    json_decref(doc);
    return st;
}

static void write_html(const struct invoice *inv, struct ts_sbuf *o)
{
    ts_sbuf_puts(o, "<!doctype html>\n<meta charset=\"utf-8\">\n<title>Invoice ");
    ts_sbuf_xml(o, inv->tenant);
    ts_sbuf_puts(o, "</title>\n<h1>Invoice ");
    ts_sbuf_xml(o, inv->tenant);
    ts_sbuf_printf(o,
                   " %s</h1>\n<table>\n<tr><th>GPU model<th>Profile<th>GPU-hours<th>Used"
                   "<th>Rate<th>Amount</tr>\n",
                   inv->period);
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct invoice_line *l = &inv->lines[i];
        struct line_text t;
        line_text(l, &t);
        ts_sbuf_puts(o, "<tr><td>");
        ts_sbuf_xml(o, l->model);
        ts_sbuf_printf(o, "<td>%s<td>%s<td>%s<td>%s<td>%s</tr>\n",
                       l->profile[0] ? l->profile : "whole", t.hours, t.used, t.rate, t.amount);
    }
    char total[48];
    money(total, sizeof(total), inv->total_cents);
    ts_sbuf_printf(o, "</table>\n<p>Total: %s %s</p>\n", total, inv->currency);
}

ts_status invoice_write(const struct invoice *inv, const char *format, struct ts_sbuf *out)
{
    if (strcmp(format, "json") == 0)
        return write_json(inv, out);
    if (strcmp(format, "html") == 0)
        write_html(inv, out);
    else
        write_text(inv, out, strcmp(format, "csv") == 0);
    return ts_sbuf_status(out);
}
