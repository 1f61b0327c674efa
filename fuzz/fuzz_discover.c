/*
 * fuzz_discover.c - libFuzzer target for the EndpointSlice reader
 * (meter/discover.h). Invariants (abort when broken): a list taken gives
 * targets that are http:// URLs ending in /metrics, sorted and each once,
 * no more than METER_DISCOVER_TARGETS_MAX; a list refused says why and
 * gives none.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "meter/discover.h"

static void check(const struct meter_target *v, size_t n)
{
    if (n > METER_DISCOVER_TARGETS_MAX)
        abort();
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(v[i].url);
        if (strncmp(v[i].url, "http://", 7) != 0 || len < 8 ||
            strcmp(v[i].url + len - 8, "/metrics") != 0)
            abort();
        if (i && strcmp(v[i - 1].url, v[i].url) >= 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const ports[] = {NULL, "gpu-metrics", "9400"};
    for (size_t p = 0; p < 3; p++) {
        struct meter_target *v;
        size_t n;
        struct ts_error e = {0};
        ts_status rc = meter_discover_parse((const char *)data, size, ports[p], &v, &n, &e);
        if (rc == TS_OK)
            check(v, n);
        else if (v || n || !e.msg[0])
            abort();
        free(v);
    }
    return 0;
}
