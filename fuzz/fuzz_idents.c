/*
 * fuzz_idents.c - libFuzzer target for the identities file of the JSON API
 * (api/ident.c, `serve --tokens`): arbitrary bytes go through
 * api_idents_parse. Invariants checked (abort otherwise): a file is
 * accepted with no diagnostics or refused with at least one, each naming a
 * line within the file and a column within its line; an accepted file has
 * at most API_IDENTITIES_MAX entries; the bytes as an Authorization header
 * or certificate name never match unless they are a well-formed token or
 * name of the file. Seeds in fuzz/corpus/idents/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Lines of text, and the length of line n (1-based). */
static size_t line_len(const char *text, size_t size, int n, int *lines)
{
    size_t start = 0, len = 0;
    *lines = 1;
    for (size_t i = 0; i < size; i++)
        if (text[i] == '\n') {
            if (*lines == n)
                len = i - start;
            (*lines)++;
            start = i + 1;
        }
    return *lines == n ? size - start : len;
}

static void check_diag(const char *text, size_t size, const struct ts_diag *d)
{
    for (int i = 0; i < d->count; i++) {
        int lines;
        size_t len = line_len(text, size, d->items[i].line, &lines);
        if (d->items[i].line < 1 || d->items[i].line > lines || d->items[i].column < 1 ||
            (size_t)d->items[i].column > len + 1)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct ts_diag *d = calloc(1, sizeof(*d));
    struct api_idents *ids = NULL;
    if (!d)
        return 0;
    ts_status st = api_idents_parse(text, size, "fuzz", &ids, d);
    if ((st == TS_OK) != (ids != NULL) || (st == TS_OK && d->count) ||
        (st == TS_SYNTAX && !d->count))
        abort();
    if (st == TS_SYNTAX && !memchr(text, 0, size))
        check_diag(text, size, d);
    if (ids && api_idents_certs(ids) > API_IDENTITIES_MAX)
        abort();
    char *z = malloc(size + 1);
    if (z && ids) {
        memcpy(z, text, size);
        z[size] = '\0';
        struct api_identity who;
        const char *names[] = {z};
        if (api_ident_token(ids, z, &who) && strncmp(z, "Bearer tsk_", 11) != 0)
            abort();
        if (api_ident_cert(ids, names, 1, &who) && strncmp(z, "cn:", 3) != 0 &&
            strncmp(z, "dns:", 4) != 0)
            abort();
    }
    free(z);
    api_idents_free(ids);
    free(d);
    return 0;
}
