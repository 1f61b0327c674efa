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
#include "util/text.h"
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

static const char *profile_name(const struct invoice_line *l)
{
    return l->profile[0] ? l->profile : "whole";
}

/* One CSV record: the text fields through ts_text_csv, the numbers as they are. */
static void csv_line(struct ts_sbuf *o, const struct invoice *inv, const struct invoice_line *l,
                     const struct line_text *t)
{
    const char *text[] = {inv->tenant, inv->period, inv->currency, l->model, profile_name(l)};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++) {
        ts_text_csv(o, text[i]);
        ts_sbuf_add(o, ",", 1);
    }
    ts_sbuf_printf(o, "%s,%s,%s,%s\r\n", t->hours, t->used, t->rate, t->amount);
}

static void write_csv(const struct invoice *inv, struct ts_sbuf *o)
{
    ts_sbuf_puts(o, "tenant,period,currency,model,profile,gpu_hours,used_gpu_hours,"
                    "price_per_gpu_hour,amount\r\n");
    for (size_t i = 0; i < inv->nlines; i++) {
        struct line_text t;
        line_text(&inv->lines[i], &t);
        csv_line(o, inv, &inv->lines[i], &t);
    }
}

static void write_text(const struct invoice *inv, struct ts_sbuf *o)
{
    ts_sbuf_puts(o, "Invoice ");
    ts_text_plain(o, inv->tenant);
    ts_sbuf_add(o, " ", 1);
    ts_text_plain(o, inv->period);
    ts_sbuf_puts(o, " (");
    ts_text_plain(o, inv->currency);
    ts_sbuf_printf(o, ")\n%-18s %-10s %14s %14s %12s %16s\n", "GPU MODEL", "PROFILE", "GPU-HOURS",
                   "USED", "RATE", "AMOUNT");
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct invoice_line *l = &inv->lines[i];
        struct line_text t;
        line_text(l, &t);
        ts_text_pad(o, l->model, 18);
        ts_sbuf_add(o, " ", 1);
        ts_text_pad(o, profile_name(l), 10);
        ts_sbuf_printf(o, " %14s %14s %12s %16s\n", t.hours, t.used, t.rate, t.amount);
    }
    char total[48], usage[48];
    money(total, sizeof(total), inv->total_cents);
    money(usage, sizeof(usage), inv->usage_total_cents);
    ts_sbuf_printf(o, "Total (allocation basis, billed): %s ", total);
    ts_text_plain(o, inv->currency);
    ts_sbuf_printf(o, "\nUsage basis (showback):           %s ", usage);
    ts_text_plain(o, inv->currency);
    ts_sbuf_printf(o, "\n%s", inv->unpriced ? "Some lines have no price in the PriceBook.\n" : "");
}

static json_t *json_line(const struct invoice_line *l)
{
    return json_pack("{s:o, s:o, s:I, s:I, s:I}", "model", ts_text_json(l->model), "profile",
                     ts_text_json(profile_name(l)), "microGpuHours", (json_int_t)l->alloc_uh,
                     "usedMicroGpuHours", (json_int_t)l->usage_uh, "pricePerGpuHourMicro",
                     (json_int_t)l->price_micro);
}

/* Every line or no document: a line left out would leave the total wrong. */
static ts_status write_json(const struct invoice *inv, struct ts_sbuf *o)
{
    json_t *lines = json_array();
    int fail = !lines;
    for (size_t i = 0; !fail && i < inv->nlines; i++)
        fail = json_array_append_new(lines, json_line(&inv->lines[i])) != 0;
    json_t *doc = json_pack(
        "{s:s, s:s, s:o, s:o, s:o, s:o, s:I, s:I}", "apiVersion", TS_API_VERSION, "kind", "Invoice",
        "tenant", ts_text_json(inv->tenant), "period", ts_text_json(inv->period), "currency",
        ts_text_json(inv->currency), "lines", lines, "totalCents", (json_int_t)inv->total_cents,
        "usageTotalCents", (json_int_t)inv->usage_total_cents);
    ts_status st = fail ? TS_NOMEM : ts_json_write(doc, JSON_SORT_KEYS | JSON_INDENT(2), o);
    json_decref(doc);
    return st;
}

/* <td>, then each of the n texts escaped, one cell each. */
static void html_cells(struct ts_sbuf *o, const char *const *cells, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ts_sbuf_puts(o, "<td>");
        ts_text_html(o, cells[i]);
    }
}

/* Every text in the page goes through ts_text_html, numbers included. */
static void write_html(const struct invoice *inv, struct ts_sbuf *o)
{
    ts_sbuf_puts(o, "<!doctype html>\n<meta charset=\"utf-8\">\n<title>Invoice ");
    ts_text_html(o, inv->tenant);
    ts_sbuf_puts(o, "</title>\n<h1>Invoice ");
    ts_text_html(o, inv->tenant);
    ts_sbuf_add(o, " ", 1);
    ts_text_html(o, inv->period);
    ts_sbuf_puts(o, "</h1>\n<table>\n<tr><th>GPU model<th>Profile<th>GPU-hours<th>Used"
                    "<th>Rate<th>Amount</tr>\n");
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct invoice_line *l = &inv->lines[i];
        struct line_text t;
        line_text(l, &t);
        const char *cells[] = {l->model, profile_name(l), t.hours, t.used, t.rate, t.amount};
        ts_sbuf_puts(o, "<tr>");
        html_cells(o, cells, sizeof cells / sizeof cells[0]);
        ts_sbuf_puts(o, "</tr>\n");
    }
    char total[48];
    money(total, sizeof(total), inv->total_cents);
    ts_sbuf_printf(o, "</table>\n<p>Total: %s ", total);
    ts_text_html(o, inv->currency);
    ts_sbuf_puts(o, "</p>\n");
}

ts_status invoice_write(const struct invoice *inv, const char *format, struct ts_sbuf *out)
{
    if (strcmp(format, "json") == 0)
        return write_json(inv, out);
    if (strcmp(format, "html") == 0)
        write_html(inv, out);
    else if (strcmp(format, "csv") == 0)
        write_csv(inv, out);
    else
        write_text(inv, out);
    return ts_sbuf_status(out);
}
