/*
 * fuzz_ingest.c - libFuzzer target for metering's ingest: exposition text
 * through attribution against a planned spec (MIG, MPS and time-sliced
 * cards on one node) into samples. The first byte picks a chunk size. The
 * invariants (every sample has a device and a tenant, shares within one
 * card, utilisation a ratio or unknown) abort when broken.
 */
#include <stdint.h>
#include <stdlib.h>
#include "meter/ingest.h"
#include "meter_ctx.h"

static ts_status check(void *arg, const struct store_sample *s, size_t n, size_t *inserted,
                       struct ts_error *err)
{
    (void)arg;
    (void)err;
    for (size_t i = 0; i < n; i++)
        if (!s[i].device[0] || !s[i].tenant[0] || s[i].share_ppm < 0 || s[i].share_ppm > 1000000 ||
            s[i].util_ppm < -1 || s[i].util_ppm > 1000000)
            abort();
    *inserted = n;
    return TS_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct meter_ctx *ctx = fuzz_meter_ctx();
    if (size == 0)
        return 0;
    size_t chunk = (size_t)data[0] * 64 + 1;
    struct ts_diag diag = {0};
    struct ts_error err = {0};
    struct meter_ingest *in;
    if (meter_ingest_new(ctx, NULL, 1700000000000LL, "fuzz", &diag, &in) != TS_OK)
        return 0;
    meter_ingest_set_sink(in, check, NULL, NULL);
    for (size_t off = 1; off < size; off += chunk)
        if (meter_ingest_feed(in, (const char *)data + off, size - off < chunk ? size - off : chunk,
                              &err) != TS_OK)
            abort(); /* the sink never fails, so neither may the feed */
    if (meter_ingest_finish(in, &err) != TS_OK)
        abort();
    meter_ingest_free(in);
    return 0;
}
