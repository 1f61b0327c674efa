/*
 * fuzz_expo.c - libFuzzer target for the Prometheus exposition parser.
 * The first byte picks a chunk size, so line handling across feed
 * boundaries is fuzzed too; the invariants (a sample or an error per line
 * at most, labels within bounds, NUL-terminated strings) abort when broken.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "meter/expo.h"

static int on_sample(void *ctx, const struct meter_sample *s)
{
    (void)ctx;
    if (!s->metric[0] || s->nlabels > METER_LABELS_MAX)
        abort();
    for (size_t i = 0; i < s->nlabels; i++)
        if (!s->labels[i].name[0] || strlen(s->labels[i].value) > METER_LINE_MAX)
            abort();
    return 0;
}

static void on_error(void *ctx, long line, int column, const char *msg)
{
    (void)ctx;
    if (line < 1 || column < 1 || !msg[0])
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t chunk = (size_t)data[0] + 1;
    struct meter_expo *p = meter_expo_new(on_sample, on_error, NULL);
    if (!p)
        return 0;
    for (size_t off = 1; off < size; off += chunk)
        meter_expo_feed(p, (const char *)data + off, size - off < chunk ? size - off : chunk);
    meter_expo_finish(p);
    long lines, samples, errors;
    meter_expo_counts(p, &lines, &samples, &errors);
    if (samples + errors > lines)
        abort();
    meter_expo_free(p);
    return 0;
}
