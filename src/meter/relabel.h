/*
 * relabel.h - stored dcgm-exporter bodies re-served with a `tenant` label,
 * so Prometheus can graph SM and memory use per tenant.
 *
 * Each body goes through the exposition parser (meter/expo.h); every sample
 * is written back in the text format with tenant="..." added, the tenant
 * chosen by the metering attribution (meter_tenant_of_sample, attrib.h).
 * Bodies are collected first and written at the end, grouped by metric
 * family, so that several bodies (one per node or imported file) make one
 * valid page:
 *   - HELP and TYPE once per family, before its first sample (the first
 *     body that has them wins; a HELP without text and an unknown TYPE are
 *     left out, because Prometheus refuses the whole page for them);
 *   - a sample's own `tenant` label becomes `exported_tenant` (prefixed
 *     again while that name is taken), as Prometheus does with
 *     honor_labels: false; a label repeated in one sample keeps its first;
 *   - values are written so they read back to the same double (NaN, +Inf,
 *     -Inf included), timestamps are kept as they are;
 *   - label values and HELP text are escaped and invalid UTF-8 bytes become
 *     U+FFFD (one bad byte must not cost the whole scrape; a sample line
 *     that is not UTF-8 is already rejected, alone, by the parser);
 *   - names starting with `tessera_` are skipped (counted): they would
 *     clash with tessera's own families on the same page.
 * Malformed lines are counted and skipped, the rest of the body is kept.
 *
 * One struct meter_relabel belongs to one thread; the output is capped.
 */
#ifndef METER_RELABEL_H
#define METER_RELABEL_H

#include <stddef.h>
#include "meter/attrib.h"
#include "util/sbuf.h"

struct meter_relabel;

struct meter_relabel_counts {
    long samples;  /* samples written */
    long rejected; /* malformed lines skipped */
    long skipped;  /* samples with a reserved (tessera_) name */
};

/* ctx (borrowed, must outlive r) decides tenants; max_bytes caps the text
 * meter_relabel_write will produce. NULL when out of memory. */
struct meter_relabel *meter_relabel_new(const struct meter_ctx *ctx, size_t max_bytes);
void meter_relabel_free(struct meter_relabel *r);

/* Relabel one whole body (len bytes, need not be NUL-terminated). TS_NOMEM,
 * or TS_TOO_LARGE past the cap; malformed lines are only counted. */
ts_status meter_relabel_add(struct meter_relabel *r, const char *text, size_t len);

/* Append every family collected so far to out. */
ts_status meter_relabel_write(const struct meter_relabel *r, struct ts_sbuf *out);

void meter_relabel_counts(const struct meter_relabel *r, struct meter_relabel_counts *c);

/* Helpers shared with other writers of the text format: a label value
 * escaped (\\ \" \n, invalid UTF-8 to U+FFFD), and a value that reads
 * back to the same double. */
void meter_relabel_put_label(struct ts_sbuf *out, const char *value);
void meter_relabel_put_value(struct ts_sbuf *out, double v);

#endif
