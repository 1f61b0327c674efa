/*
 * fuzz_denials.c - libFuzzer target for what the console reads from the
 * webhook's /denials (serve/denials.c, `console --denials-from`): arbitrary
 * bytes go through serve_denials_parse, twice into one list. Invariants
 * checked (abort otherwise): a refused answer adds nothing; an accepted one
 * adds at most SERVE_DENIALS_MAX denials, each with every text NUL-ended
 * inside its field; the list never shrinks. Seeds in fuzz/corpus/denials/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "serve/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_texts(const struct api_denial *x)
{
    if (!memchr(x->uid, 0, sizeof(x->uid)) || !memchr(x->kind, 0, sizeof(x->kind)) ||
        !memchr(x->ns, 0, sizeof(x->ns)) || !memchr(x->tenant, 0, sizeof(x->tenant)) ||
        !memchr(x->rule, 0, sizeof(x->rule)) || !memchr(x->message, 0, sizeof(x->message)))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct serve_denial_list f = {0};
    for (int round = 0; round < 2; round++) {
        size_t before = f.n;
        int ok = serve_denials_parse((const char *)data, size, &f);
        if (f.n < before || (!ok && f.n != before) || f.n - before > SERVE_DENIALS_MAX)
            abort();
        for (size_t i = before; i < f.n; i++)
            check_texts(&f.d[i]);
    }
    free(f.d);
    return 0;
}
