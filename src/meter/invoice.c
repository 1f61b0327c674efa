/*
 * invoice.c - pricing a tenant's month in the currency's minor unit, and writing it as
 * text, CSV, JSON or a printable HTML page (see invoice.h).
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

/* ISO 4217 minor units (exponents) of the currencies a PriceBook may use. */
static const struct {
    char code[4];
    int exponent;
} currencies[] = {
    {"AUD", 2}, {"BHD", 3}, {"BRL", 2}, {"CAD", 2}, {"CHF", 2}, {"CLP", 0}, {"CNY", 2}, {"CZK", 2},
    {"DKK", 2}, {"EUR", 2}, {"GBP", 2}, {"HKD", 2}, {"HUF", 2}, {"IDR", 2}, {"ILS", 2}, {"INR", 2},
    {"ISK", 0}, {"JOD", 3}, {"JPY", 0}, {"KRW", 0}, {"KWD", 3}, {"MXN", 2}, {"NOK", 2}, {"NZD", 2},
    {"OMR", 3}, {"PLN", 2}, {"RON", 2}, {"SAR", 2}, {"SEK", 2}, {"SGD", 2}, {"THB", 2}, {"TND", 3},
    {"TRY", 2}, {"TWD", 2}, {"UAH", 2}, {"USD", 2}, {"VND", 0}, {"ZAR", 2},
};

int invoice_currency_exponent(const char *code)
{
    for (size_t i = 0; i < sizeof currencies / sizeof currencies[0]; i++)
        if (strcmp(currencies[i].code, code) == 0)
            return currencies[i].exponent;
    return -1;
}

static int64_t pow10i(int n)
{
    int64_t p = 1;
    while (n-- > 0)
        p *= 10;
    return p;
}

/* uh x price_micro (1e-12 currency units) in minor units of exponent exp,
 * rounded once, half to even; 0 when the line has no price. */
static int64_t amount_minor(int64_t uh, int64_t price, int exp)
{
    if (price < 0)
        return 0;
    __int128 num = (__int128)uh * price, d = pow10i(12 - exp);
    __int128 q = num / d, r2 = 2 * (num % d);
    if (r2 > d || (r2 == d && (q & 1)))
        q++;
    return (int64_t)q;
}

/* "TS-202611-" and the FNV-1a hash of the tenant: a number that names the
 * tenant and the month without printing either's bytes twice. */
static void invoice_number(struct invoice *inv)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)inv->tenant; *p; p++)
        h = (h ^ *p) * 16777619u;
    snprintf(inv->number, sizeof(inv->number), "TS-%.4s%.2s-%08" PRIX32, inv->period,
             inv->period + 5, h);
}

static void names(struct invoice *inv, const struct spec_model *m)
{
    const struct spec_tenant *t = spec_tenant_find(m, inv->tenant);
    inv->tenant_display = t && t->display_name ? t->display_name : inv->tenant;
    inv->provider_display = m->pricebook->display_name ? m->pricebook->display_name
                            : m->fleet                 ? m->fleet->name
                                                       : "";
    invoice_number(inv);
}

static ts_status currency(struct invoice *inv, const struct spec_pricebook *p, struct ts_error *err)
{
    inv->exponent = invoice_currency_exponent(p->currency);
    if (inv->exponent >= 0)
        return TS_OK;
    char path[TS_PATH_MAX];
    snprintf(path, sizeof(path), "%s.currency", p->loc.path ? p->loc.path : "PriceBook.spec");
    return ts_err_at(err, TS_INVALID, p->loc.file, p->loc.line, p->loc.column, path,
                     "'%s': no ISO 4217 minor unit known for this currency, so no amount "
                     "can be rounded (docs/metering.md lists the known ones)",
                     p->currency);
}

static void count_line(struct invoice *inv, const struct invoice_line *l)
{
    inv->unpriced += l->price_micro < 0;
    inv->total_minor += l->amount_minor;
    inv->usage_total_minor += l->usage_minor;
}

static void add_line(struct invoice *inv, const struct meter_total *t, const struct spec_model *m,
                     const struct cat_catalog *cat, struct ts_arena *arena)
{
    const struct cat_model *model = cat_model_find(cat, t->model);
    struct invoice_line *l = &inv->lines[inv->nlines++];
    int64_t price = cat_price_of(m->pricebook, model), alloc = meter_alloc_uh(t),
            used = meter_usage_uh(t);
    *l = (struct invoice_line){model ? model->name : ts_arena_strdup(arena, t->model),
                               ts_arena_strdup(arena, t->profile),
                               alloc,
                               used,
                               price,
                               amount_minor(alloc, price, inv->exponent),
                               amount_minor(used, price, inv->exponent),
                               ""};
    count_line(inv, l);
}

/* The amounts of a consumer's part, rounded as any line. */
static void part_amounts(const struct meter_shared_part *p, int64_t price, int exp, int64_t *alloc,
                         int64_t *used)
{
    *alloc = amount_minor(p->alloc_uh, price, exp);
    *used = amount_minor(p->usage_uh, price, exp);
}

/* A shared workload's part on tenant's invoice: a consumer's share, or the
 * owner's passed-on line of minus its consumers' rounded amounts. */
static ts_status add_part(struct invoice *inv, const struct meter_shared_part *parts, size_t n,
                          size_t k, const struct spec_model *m, const struct cat_catalog *cat,
                          struct ts_arena *arena)
{
    const struct meter_shared_part *p = &parts[k];
    const struct cat_model *model = cat_model_find(cat, p->model);
    int64_t price = cat_price_of(m->pricebook, model), alloc = 0, used = 0;
    if (!p->passed_on)
        part_amounts(p, price, inv->exponent, &alloc, &used);
    for (size_t i = 0; p->passed_on && i < n; i++) {
        const struct meter_shared_part *q = &parts[i];
        int64_t a, u;
        if (q->passed_on || strcmp(q->owner, p->owner) || strcmp(q->workload, p->workload) ||
            strcmp(q->model, p->model) || strcmp(q->profile, p->profile))
            continue;
        part_amounts(q, price, inv->exponent, &a, &u);
        alloc -= a;
        used -= u;
    }
    struct invoice_line *l = &inv->lines[inv->nlines++];
    *l = (struct invoice_line){
        model ? model->name : ts_arena_strdup(arena, p->model),
        ts_arena_strdup(arena, p->profile),
        p->alloc_uh,
        p->usage_uh,
        price,
        price < 0 ? 0 : alloc,
        price < 0 ? 0 : used,
        ts_arena_printf(arena, "%s: %s/%s%s", p->passed_on ? "passed on" : "shared", p->owner,
                        p->workload, p->by_weight ? ", by weight: no requests counted" : "")};
    if (!l->model || !l->profile || !l->note)
        return TS_NOMEM;
    count_line(inv, l);
    return TS_OK;
}

static ts_status add_parts(struct invoice *inv, const struct meter_usage *u,
                           const struct spec_model *m, const struct cat_catalog *cat,
                           struct ts_arena *arena)
{
    struct meter_shared_part *parts;
    size_t n, mine = 0;
    ts_status st = meter_shared_split(u, m, arena, &parts, &n);
    for (size_t i = 0; st == TS_OK && i < n; i++)
        mine += strcmp(parts[i].tenant, inv->tenant) == 0;
    struct invoice_line *lines = ts_arena_array(arena, inv->nlines + mine + 1, sizeof(*lines));
    if (st != TS_OK || !lines)
        return TS_NOMEM;
    memcpy(lines, inv->lines, inv->nlines * sizeof(*lines));
    inv->lines = lines;
    for (size_t i = 0; st == TS_OK && i < n; i++)
        if (strcmp(parts[i].tenant, inv->tenant) == 0)
            st = add_part(inv, parts, n, i, m, cat, arena);
    return st;
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
    if (currency(out, m->pricebook, err) != TS_OK)
        return err->code;
    names(out, m);
    out->lines = ts_arena_array(arena, u->ntotals + 1, sizeof(*out->lines));
    if (!out->lines)
        return ts_err(err, TS_NOMEM, "out of memory");
    for (size_t i = 0; i < u->ntotals; i++)
        if (strcmp(u->totals[i].tenant, tenant) == 0)
            add_line(out, &u->totals[i], m, cat, arena);
    if (add_parts(out, u, m, cat, arena) != TS_OK)
        return ts_err(err, TS_NOMEM, "out of memory");
    return TS_OK;
}

/* minor units as "12.34" (exponent 2), "1234" (exponent 0). */
static void money(char *buf, size_t size, int64_t minor, int exp)
{
    int64_t p = pow10i(exp);
    const char *sign = minor < 0 ? "-" : ""; /* a passed-on line */
    minor = minor < 0 ? -minor : minor;
    if (exp == 0)
        snprintf(buf, size, "%s%" PRId64, sign, minor);
    else
        snprintf(buf, size, "%s%" PRId64 ".%0*" PRId64, sign, minor / p, exp, minor % p);
}

/* A price per GPU-hour (micro-units): the minor unit's digits, more only
 * when the PriceBook gave more ("2.90", "2.005", "250"). */
static void rate(char *buf, size_t size, int64_t micro, int exp)
{
    snprintf(buf, size, "%" PRId64 ".%06" PRId64, micro / TS_MICRO, micro % TS_MICRO);
    char *dot = strchr(buf, '.'), *end = buf + strlen(buf);
    while (end > dot + 1 + exp && end[-1] == '0')
        *--end = '\0';
    if (end == dot + 1)
        *dot = '\0';
}

static void hours(char *buf, size_t size, int64_t uh)
{
    const char *sign = uh < 0 ? "-" : ""; /* a passed-on line */
    uh = uh < 0 ? -uh : uh;
    snprintf(buf, size, "%s%" PRId64 ".%06" PRId64, sign, uh / TS_MICRO, uh % TS_MICRO);
}

struct line_text {
    char hours[40], used[40], rate[48], amount[40], usage[40];
};

static void line_text(const struct invoice *inv, const struct invoice_line *l, struct line_text *t)
{
    hours(t->hours, sizeof(t->hours), l->alloc_uh);
    hours(t->used, sizeof(t->used), l->usage_uh);
    rate(t->rate, sizeof(t->rate), l->price_micro < 0 ? 0 : l->price_micro, inv->exponent);
    money(t->amount, sizeof(t->amount), l->amount_minor, inv->exponent);
    money(t->usage, sizeof(t->usage), l->usage_minor, inv->exponent);
    if (l->price_micro < 0) {
        snprintf(t->rate, sizeof(t->rate), "unpriced");
        snprintf(t->amount, sizeof(t->amount), "unpriced");
        snprintf(t->usage, sizeof(t->usage), "unpriced");
    }
}

static const char *profile_name(const struct invoice_line *l)
{
    return l->profile[0] ? l->profile : "whole";
}

/* The first and the last day of the period, "2026-11-01" and "2026-11-30";
 * the issue date the same way ("" when not set). */
struct dates {
    char first[40], last[40], issued[40];
};

static void dates(const struct invoice *inv, struct dates *d)
{
    int64_t from = 0, to = 0;
    invoice_period(inv->period, &from, &to);
    ts_time_format(from, d->first);
    ts_time_format(to - 86400000, d->last);
    ts_time_format(inv->issued_ms, d->issued);
    d->first[10] = d->last[10] = d->issued[10] = '\0';
    if (!inv->issued_ms)
        d->issued[0] = '\0';
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
    ts_sbuf_printf(o, "%s,%s,%s,%s,%s,", t->hours, t->used, t->rate, t->amount, t->usage);
    ts_text_csv(o, l->note);
    ts_sbuf_puts(o, "\r\n");
}

static void write_csv(const struct invoice *inv, struct ts_sbuf *o)
{
    ts_sbuf_puts(o, "tenant,period,currency,model,profile,gpu_hours,used_gpu_hours,"
                    "price_per_gpu_hour,amount,usage_amount,note\r\n");
    for (size_t i = 0; i < inv->nlines; i++) {
        struct line_text t;
        line_text(inv, &inv->lines[i], &t);
        csv_line(o, inv, &inv->lines[i], &t);
    }
}

/* text, then " CUR" */
static void with_currency(struct ts_sbuf *o, const struct invoice *inv, const char *text)
{
    ts_sbuf_puts(o, text);
    ts_sbuf_add(o, " ", 1);
    ts_text_plain(o, inv->currency);
}

static void text_head(const struct invoice *inv, struct ts_sbuf *o)
{
    struct dates d;
    dates(inv, &d);
    ts_sbuf_printf(o, "Invoice %s  period %s to %s", inv->number, d.first, d.last);
    if (d.issued[0])
        ts_sbuf_printf(o, "  issued %s", d.issued);
    ts_sbuf_puts(o, "\nFrom: ");
    ts_text_plain(o, inv->provider_display);
    ts_sbuf_puts(o, "\nTo:   ");
    ts_text_plain(o, inv->tenant_display);
    ts_sbuf_puts(o, " (");
    ts_text_plain(o, inv->tenant);
    ts_sbuf_puts(o, "), amounts in ");
    ts_text_plain(o, inv->currency);
    ts_sbuf_printf(o, "\n%-18s %-10s %16s %16s %16s %12s\n", "GPU MODEL", "PROFILE",
                   "ALLOCATED GPU-h", "USED GPU-h", "RATE /GPU-h", "AMOUNT");
}

static void write_text(const struct invoice *inv, struct ts_sbuf *o)
{
    text_head(inv, o);
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct invoice_line *l = &inv->lines[i];
        struct line_text t;
        line_text(inv, l, &t);
        ts_text_pad(o, l->model, 18);
        ts_sbuf_add(o, " ", 1);
        ts_text_pad(o, profile_name(l), 10);
        ts_sbuf_printf(o, " %16s %16s %16s %12s", t.hours, t.used, t.rate, t.amount);
        if (l->note[0]) {
            ts_sbuf_puts(o, "  ");
            ts_text_plain(o, l->note);
        }
        ts_sbuf_add(o, "\n", 1);
    }
    char total[40], usage[40];
    money(total, sizeof(total), inv->total_minor, inv->exponent);
    money(usage, sizeof(usage), inv->usage_total_minor, inv->exponent);
    ts_sbuf_puts(o, "Total (allocation basis, billed): ");
    with_currency(o, inv, total);
    ts_sbuf_puts(o, "\nUsage basis (showback):           ");
    with_currency(o, inv, usage);
    ts_sbuf_printf(o, "\n%s", inv->unpriced ? "Some lines have no price in the PriceBook.\n" : "");
}

static json_t *minor_or_null(const struct invoice_line *l, int64_t minor)
{
    return l->price_micro < 0 ? json_null() : json_integer(minor);
}

static json_t *json_line(const struct invoice_line *l)
{
    json_t *o = json_pack("{s:o, s:o, s:I, s:I, s:I, s:o, s:o}", "model", ts_text_json(l->model),
                          "profile", ts_text_json(profile_name(l)), "microGpuHours",
                          (json_int_t)l->alloc_uh, "usedMicroGpuHours", (json_int_t)l->usage_uh,
                          "pricePerGpuHourMicro", (json_int_t)l->price_micro, "amountMinor",
                          minor_or_null(l, l->amount_minor), "usageAmountMinor",
                          minor_or_null(l, l->usage_minor));
    if (o && l->note[0])
        json_object_set_new(o, "note", ts_text_json(l->note));
    return o;
}

static json_t *json_doc(const struct invoice *inv, json_t *lines)
{
    struct dates d;
    dates(inv, &d);
    json_t *doc = json_pack("{s:s, s:s, s:o, s:o, s:o, s:i, s:o, s:I, s:I}", "apiVersion",
                            TS_API_VERSION, "kind", "Invoice", "tenant", ts_text_json(inv->tenant),
                            "period", ts_text_json(inv->period), "currency",
                            ts_text_json(inv->currency), "currencyExponent", inv->exponent, "lines",
                            lines, "totalMinor", (json_int_t)inv->total_minor, "usageTotalMinor",
                            (json_int_t)inv->usage_total_minor);
    json_t *more = json_pack("{s:s, s:o, s:o, s:s, s:s}", "number", inv->number,
                             "tenantDisplayName", ts_text_json(inv->tenant_display),
                             "providerDisplayName", ts_text_json(inv->provider_display),
                             "periodStart", d.first, "periodEnd", d.last);
    if (more && d.issued[0])
        json_object_set_new(more, "issued", json_string(d.issued));
    if (!doc || !more || json_object_update(doc, more) != 0) {
        json_decref(doc);
        doc = NULL;
    }
    json_decref(more);
    return doc;
}

/* Every line or no document: a line left out would leave the total wrong. */
static ts_status write_json(const struct invoice *inv, struct ts_sbuf *o)
{
    json_t *lines = json_array();
    int fail = !lines;
    for (size_t i = 0; !fail && i < inv->nlines; i++)
        fail = json_array_append_new(lines, json_line(&inv->lines[i])) != 0;
    json_t *doc = fail ? NULL : json_doc(inv, json_incref(lines));
    json_decref(lines);
    ts_status st = !doc ? TS_NOMEM : ts_json_write(doc, JSON_SORT_KEYS | JSON_INDENT(2), o);
    json_decref(doc);
    return st;
}

/* <td>, then each of the n texts escaped, one cell each. */
static void html_cells(struct ts_sbuf *o, const char *tag, const char *const *cells, size_t n)
{
    ts_sbuf_puts(o, "<tr>");
    for (size_t i = 0; i < n; i++) {
        ts_sbuf_printf(o, "<%s>", tag);
        ts_text_html(o, cells[i]);
    }
    ts_sbuf_puts(o, "</tr>\n");
}

/* No script, no link, nothing fetched: the style is the page's own, and
 * selects by element so that no attribute but charset is written. */
static const char html_style[] =
    "<style>\n"
    "body{font:11pt/1.4 sans-serif;color:#111;max-width:62em;margin:2em auto;padding:0 1em}\n"
    "h1{font-size:1.6em;margin:0 0 .6em}\n"
    "dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1.5em;margin:0 0 1.5em}\n"
    "dt{font-weight:bold}dd{margin:0}\n"
    "table{border-collapse:collapse;width:100%}\n"
    "th,td{padding:.35em .6em;border-bottom:1px solid #ccc;text-align:left}\n"
    "td:nth-child(n+3),th:nth-child(n+3){text-align:right;font-variant-numeric:tabular-nums}\n"
    "thead th{border-bottom:2px solid #111}tfoot td{font-weight:bold;border:0}\n"
    "@media print{body{margin:0;max-width:none;font-size:10pt}"
    "@page{size:A4;margin:15mm}tr{break-inside:avoid}thead{display:table-header-group}}\n"
    "</style>\n";

static void html_term(struct ts_sbuf *o, const char *term, const char *value)
{
    ts_sbuf_printf(o, "<dt>%s<dd>", term);
    ts_text_html(o, value);
    ts_sbuf_add(o, "\n", 1);
}

static void html_head(const struct invoice *inv, struct ts_sbuf *o)
{
    struct dates d;
    dates(inv, &d);
    char period[96];
    snprintf(period, sizeof(period), "%s to %s", d.first, d.last);
    ts_sbuf_puts(o, "<!doctype html>\n<meta charset=\"utf-8\">\n<title>Invoice ");
    ts_text_html(o, inv->tenant);
    ts_sbuf_puts(o, "</title>\n");
    ts_sbuf_puts(o, html_style);
    ts_sbuf_puts(o, "<h1>Invoice ");
    ts_text_html(o, inv->number);
    ts_sbuf_puts(o, "</h1>\n<dl>\n");
    html_term(o, "Invoice number", inv->number);
    html_term(o, "From", inv->provider_display);
    html_term(o, "To", inv->tenant_display);
    html_term(o, "Tenant", inv->tenant);
    html_term(o, "Period", period);
    if (d.issued[0])
        html_term(o, "Issued", d.issued);
    html_term(o, "Currency", inv->currency);
    ts_sbuf_puts(o, "</dl>\n<table>\n<thead>\n");
    static const char *const head[] = {"GPU model",  "Profile",           "GPU-h allocated",
                                       "GPU-h used", "Rate per GPU-h",    "Currency",
                                       "Amount",     "Usage-basis amount"};
    html_cells(o, "th", head, sizeof head / sizeof head[0]);
    ts_sbuf_puts(o, "</thead>\n<tbody>\n");
}

static void html_total(struct ts_sbuf *o, const struct invoice *inv, const char *what,
                       int64_t alloc, int64_t usage)
{
    char a[40], u[40];
    money(a, sizeof(a), alloc, inv->exponent);
    money(u, sizeof(u), usage, inv->exponent);
    const char *cells[] = {what, "", "", "", "", inv->currency, a, u};
    html_cells(o, "td", cells, sizeof cells / sizeof cells[0]);
}

/* Every text in the page goes through ts_text_html, numbers included. */
static void write_html(const struct invoice *inv, struct ts_sbuf *o)
{
    html_head(inv, o);
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct invoice_line *l = &inv->lines[i];
        struct line_text t;
        line_text(inv, l, &t);
        char profile[3 * METER_KEY_MAX];
        snprintf(profile, sizeof(profile), "%s%s%s%s", profile_name(l), l->note[0] ? " (" : "",
                 l->note, l->note[0] ? ")" : "");
        const char *cells[] = {l->model, profile,       t.hours,  t.used,
                               t.rate,   inv->currency, t.amount, t.usage};
        html_cells(o, "td", cells, sizeof cells / sizeof cells[0]);
    }
    ts_sbuf_puts(o, "</tbody>\n<tfoot>\n");
    html_total(o, inv, "Total (allocation basis, billed; usage basis for showback)",
               inv->total_minor, inv->usage_total_minor);
    ts_sbuf_puts(o, "</tfoot>\n</table>\n");
    if (inv->unpriced)
        ts_sbuf_puts(o, "<p>Some lines have no price in the PriceBook.</p>\n");
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
