/*
 * fuzz_relabel.c - libFuzzer target for the relabeller behind `tessera
 * serve --db`'s /metrics: any body in, and what comes out must be a page
 * Prometheus reads: it parses again with no error, every sample carries a
 * tenant label, and no sample is lost or invented (written = parsed again).
 */
#include <stdint.h>
#include <stdlib.h>
#include "meter/expo.h"
#include "meter/relabel.h"
#include "meter_ctx.h"

static int on_sample(void *arg, const struct meter_sample *s)
{
    if (!meter_label(s, "tenant"))
        abort();
    (*(long *)arg)++;
    return 0;
}

static void on_error(void *arg, long line, int column, const char *msg)
{
    (void)arg, (void)line, (void)column, (void)msg;
    abort(); /* the relabeller wrote a line it cannot read back */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct meter_relabel *r = meter_relabel_new(fuzz_meter_ctx(), 4u << 20);
    if (!r)
        return 0;
    struct ts_sbuf out;
    ts_sbuf_init(&out, 8u << 20);
    if (meter_relabel_add(r, (const char *)data, size) == TS_OK &&
        meter_relabel_write(r, &out) == TS_OK) {
        struct meter_relabel_counts c;
        meter_relabel_counts(r, &c);
        long again = 0;
        struct meter_expo *p = meter_expo_new(on_sample, on_error, &again);
        if (p && meter_expo_feed(p, out.data ? out.data : "", out.len) == TS_OK &&
            meter_expo_finish(p) == TS_OK && again != c.samples)
            abort();
        meter_expo_free(p);
    }
    ts_sbuf_release(&out);
    meter_relabel_free(r);
    return 0;
}
