/*
 * invoice.h - pricing GPU-hours with the spec's PriceBook.
 *
 * A line per GPU model and profile: hours (micro-GPU-hours, from usage.c),
 * the model's price per GPU-hour, the amount. Money stays in integers: a
 * line's exact amount is hours_uh x price_micro / 1e6 micro-units, kept as
 * a numerator; the total is the sum of numerators, rounded half up to cents
 * once, at the end. Models are matched through the catalog, so a DCGM
 * modelName ("NVIDIA H100 80GB HBM3") finds the price of h100-80gb-sxm.
 */
#ifndef METER_INVOICE_H
#define METER_INVOICE_H

#include "catalog/catalog.h"
#include "meter/usage.h"
#include "spec/model.h"
#include "util/sbuf.h"

struct invoice_line {
    const char *model;   /* catalog name, or the raw model name when unknown */
    const char *profile; /* "" = whole GPU */
    int64_t alloc_uh, usage_uh;
    int64_t price_micro; /* per GPU-hour; -1 when the PriceBook has none */
};

struct invoice {
    const char *tenant, *currency, *period;
    struct invoice_line *lines;
    size_t nlines;
    int64_t total_cents, usage_total_cents; /* allocation basis bills; usage is showback */
    int unpriced;                           /* lines without a price */
};

/* Build the invoice of tenant from usage totals. Lines live in arena. */
ts_status invoice_build(const struct meter_usage *u, const struct spec_model *m,
                        const struct cat_catalog *cat, const char *tenant, const char *period,
                        struct ts_arena *arena, struct invoice *out, struct ts_error *err);

/* text, csv, json or html. */
ts_status invoice_write(const struct invoice *inv, const char *format, struct ts_sbuf *out);

/* "2026-11" to [from, to) in Unix ms; 0 when malformed. */
int invoice_period(const char *period, int64_t *from_ms, int64_t *to_ms);

#endif
