/*
 * fuzz_latency.c - libFuzzer target for the fight's latency-pipe reader
 * (src/fight/latpipe.c). The first byte picks a chunk size, so lines split
 * across reads are fuzzed too; the invariants abort when broken: an error
 * names a line >= 1 and a column in 1..FIGHT_LINE_MAX+1, no sample is NaN,
 * negative or infinite, and the reader never keeps more lines than it saw.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include "fight/fight.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t chunk = (size_t)data[0] + 1;
    struct fight_series s = {0};
    struct fight_reader r;
    struct ts_error e = {0};
    fight_reader_init(&r, "fuzz", &s);
    ts_status st = TS_OK;
    for (size_t off = 1; off < size && st == TS_OK; off += chunk)
        st = fight_reader_feed(&r, (const char *)data + off,
                               size - off < chunk ? size - off : chunk, &e);
    if (st == TS_OK)
        st = fight_reader_finish(&r, &e);
    if (st != TS_OK && (e.line < 1 || e.column < 1 || e.column > FIGHT_LINE_MAX + 2 || !e.msg[0] ||
                        e.line > r.line))
        abort();
    if (s.n > (size_t)r.line)
        abort();
    for (size_t i = 0; i < s.n; i++)
        if (!isfinite(s.lat_us[i]) || s.lat_us[i] < 0 || s.gpu_us[i] < 0 || isinf(s.gpu_us[i]) ||
            s.host_us[i] < 0 || isinf(s.host_us[i]))
            abort();
    fight_series_release(&s);
    return 0;
}
