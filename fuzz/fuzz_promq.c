/*
 * fuzz_promq.c - libFuzzer target for the query_range answer reader
 * (meter/promq.h). Invariants (abort when broken): an answer taken gives
 * text the exposition parser reads without one error, one sample per line;
 * an answer refused says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "meter/expo.h"
#include "meter/promq.h"

static int on_sample(void *ctx, const struct meter_sample *s)
{
    (void)s;
    ++*(long *)ctx;
    return 0;
}

static void on_error(void *ctx, long line, int column, const char *msg)
{
    (void)ctx;
    (void)line;
    (void)column;
    (void)msg;
    abort(); /* a line promq made that the parser refuses */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ts_sbuf out;
    struct ts_error e = {0};
    ts_sbuf_init(&out, 1 << 24);
    ts_status st = meter_promq_text((const char *)data, size, "fuzz", &out, &e);
    if (st != TS_OK && !e.msg[0])
        abort();
    if (st == TS_OK && out.len) {
        long samples = 0, lines = 0;
        for (size_t i = 0; i < out.len; i++)
            lines += out.data[i] == '\n';
        struct meter_expo *p = meter_expo_new(on_sample, on_error, &samples);
        if (p) {
            meter_expo_feed(p, out.data, out.len);
            meter_expo_finish(p);
            meter_expo_free(p);
            if (samples != lines)
                abort();
        }
    }
    ts_sbuf_release(&out);
    return 0;
}
