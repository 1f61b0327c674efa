/*
 * invoice.h - pricing GPU-hours with the spec's PriceBook.
 *
 * A line per GPU model and profile: hours (micro-GPU-hours, from usage.c),
 * the model's price per GPU-hour, the amount. Money is integers in the
 * currency's minor unit (ISO 4217 exponent: EUR 2, JPY 0, KWD 3): a line's
 * exact amount, hours_uh x price_micro in 1e-12 units, is rounded to the
 * minor unit once, half to even; the total is the sum of the rounded lines,
 * so the lines printed add up to it exactly. Models are matched through the
 * catalog, so a DCGM modelName ("NVIDIA H100 80GB HBM3") finds the price of
 * h100-80gb-sxm. A workload other tenants use adds a line per model and
 * profile to each consumer's invoice (its part, priced and rounded as any
 * line) and a negative passed-on line to its owner's, whose amount is minus
 * the sum of the consumers' rounded amounts: the invoices of all tenants
 * add up to what they add up to without the split, to the minor unit.
 */
#ifndef METER_INVOICE_H
#define METER_INVOICE_H

#include "catalog/catalog.h"
#include "meter/shared.h"
#include "meter/usage.h"
#include "spec/model.h"
#include "util/sbuf.h"

struct invoice_line {
    const char *model;   /* catalog name, or the raw model name when unknown */
    const char *profile; /* "" = whole GPU */
    int64_t alloc_uh, usage_uh;
    int64_t price_micro;               /* per GPU-hour; -1 when the PriceBook has none */
    int64_t amount_minor, usage_minor; /* rounded once, half to even; 0 unpriced */
    const char *note; /* "" on a line of the tenant's own; "shared: OWNER/WORKLOAD" on its
                       * part of a workload it uses, "passed on: OWNER/WORKLOAD" (negative)
                       * on the owner's (meter/shared.h) */
};

struct invoice {
    const char *tenant, *currency, *period;
    const char *tenant_display, *provider_display; /* displayName, else the name */
    char number[32];   /* "TS-202611-" + hash of the tenant: same run, same number */
    int exponent;      /* digits of the minor unit */
    int64_t issued_ms; /* the issue date (set by the caller; 0 = not printed) */
    struct invoice_line *lines;
    size_t nlines;
    int64_t total_minor, usage_total_minor; /* allocation basis bills; usage is showback */
    int unpriced;                           /* lines without a price */
};

/* The ISO 4217 exponent of code (2 for EUR, 0 for JPY); -1 when unknown. */
int invoice_currency_exponent(const char *code);

/* Build the invoice of tenant from usage totals. Lines live in arena. A
 * currency without a known minor unit is TS_INVALID naming the PriceBook's
 * spec.currency with its place. */
ts_status invoice_build(const struct meter_usage *u, const struct spec_model *m,
                        const struct cat_catalog *cat, const char *tenant, const char *period,
                        struct ts_arena *arena, struct invoice *out, struct ts_error *err);

/* text, csv, json or html. */
ts_status invoice_write(const struct invoice *inv, const char *format, struct ts_sbuf *out);

/* "2026-11" to [from, to) in Unix ms; 0 when malformed. */
int invoice_period(const char *period, int64_t *from_ms, int64_t *to_ms);

#endif
