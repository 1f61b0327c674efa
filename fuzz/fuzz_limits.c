/*
 * fuzz_limits.c - libFuzzer target for the shim's limit-file parser
 * (src/shim/limits.c). The shim is not part of tessera_core, so the parser's
 * source is compiled in here. Besides not crashing, every answer must keep
 * the parser's promises: an error has a line and column inside the input
 * and a message; a success has version 1, smPercent in 1..100, a memory
 * limit above 0 when one was given, an absolute, NUL-terminated region
 * path without control characters, tenant and workload names of lowercase
 * letters, digits and '-' only, and actions that are report, evict or kill.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../src/shim/limits.c"

static void check_name(const char *s, size_t cap)
{
    size_t n = strnlen(s, cap);
    if (n == cap || strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != n)
        abort();
}

static void check_ok(const struct shim_limits *l)
{
    check_name(l->tenant, sizeof(l->tenant));
    check_name(l->workload, sizeof(l->workload));
    if ((unsigned)l->on_memory > SHIM_ACTION_KILL || (unsigned)l->on_sm > SHIM_ACTION_KILL)
        abort();
    size_t n = strnlen(l->region, sizeof(l->region));
    if (l->version != SHIM_LIMITS_VERSION || l->sm_percent < 1 || l->sm_percent > 100 ||
        (l->has_memory && l->memory_bytes == 0) || n == sizeof(l->region) ||
        (n && l->region[0] != '/'))
        abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)l->region[i] < 0x20)
            abort();
}

static void check_error(const struct shim_limits_error *e, const uint8_t *data, size_t size)
{
    size_t lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    if (e->line < 1 || (size_t)e->line > lines || e->column < 1 || e->column > 1025 ||
        e->msg[0] == '\0' || strnlen(e->msg, sizeof(e->msg)) == sizeof(e->msg))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct shim_limits l;
    struct shim_limits_error e;
    memset(&e, 0, sizeof(e));
    if (shim_limits_parse((const char *)data, size, &l, &e) == 0)
        check_ok(&l);
    else
        check_error(&e, data, size);
    return 0;
}
