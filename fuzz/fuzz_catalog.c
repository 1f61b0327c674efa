/*
 * fuzz_catalog.c - libFuzzer target for GpuModel documents (--catalog
 * files): YAML, the field tables, placements parsing and model checks.
 */
#include <stdint.h>
#include <stdlib.h>
#include "catalog/catalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ts_diag *diag = calloc(1, sizeof(*diag));
    struct cat_catalog *c = NULL;
    if (!diag)
        return 0;
    if (cat_load_text((const char *)data, size, "fuzz.yaml", &c, diag) == TS_OK) {
        for (size_t i = 0; i < c->nmodels; i++)
            if (c->models[i].mig && !c->models[i].nprofiles)
                abort(); /* the loader promised MIG models have profiles */
        cat_free(c);
    }
    free(diag);
    return 0;
}
