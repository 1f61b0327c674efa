/*
 * fuzz_import.c - libFuzzer target for the nvidia-smi importer
 * (catalog/import.c): arbitrary bytes go through cat_import_add and
 * cat_import_finish; whenever finish succeeds, the GpuModel document it
 * wrote must load with cat_load_text, or the target aborts. Seeds are in
 * fuzz/corpus/import/, tokens in fuzz/import.dict.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "catalog/catalog.h"
#include "catalog/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cat_import *im = cat_import_new();
    if (!im)
        return 0;
    struct ts_error err;
    struct ts_sbuf yaml;
    ts_sbuf_init(&yaml, 1u << 20);
    if (cat_import_add(im, (const char *)data, size, "fuzz.txt", &err) == TS_OK &&
        cat_import_finish(im, NULL, -1, &yaml, &err) == TS_OK) {
        struct cat_catalog *cat = NULL;
        struct ts_diag diag = {0};
        if (cat_load_text(yaml.data, yaml.len, "imported.yaml", &cat, &diag) != TS_OK ||
            cat->nmodels != 1)
            abort();
        cat_free(cat);
    }
    ts_sbuf_release(&yaml);
    cat_import_free(im);
    return 0;
}
