/*
 * fuzz_inventory.c - libFuzzer target for the agent's JSON readers: the
 * NodeInventory reader that `catalog import`, `plan --current` and
 * `ledger record --inventory` share, the same bytes through the catalog
 * importer (which detects JSON), and the plan JSON reader of `agent apply`.
 * Invariants checked: an accepted inventory stays within the limits and
 * writes back to a document that reads again.
 */
#include <stdint.h>
#include <stdlib.h>
#include "inventory/inventory.h"
#include "catalog/import.h"
#include "reconf/reconf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    struct inv_node *inv = calloc(1, sizeof *inv);
    if (!inv)
        return 0;
    if (inv_parse(text, size, "fuzz", inv, NULL) == TS_OK) {
        if (inv->ngpu > INV_GPUS_MAX)
            abort();
        struct ts_sbuf out;
        ts_sbuf_init(&out, 1u << 24);
        if (inv_json(inv, &out) == TS_OK &&
            inv_parse(out.data, out.len, "again", inv, NULL) != TS_OK)
            abort();
        ts_sbuf_release(&out);
    }
    free(inv);
    struct cat_import *im = cat_import_new();
    struct ts_sbuf yaml;
    ts_sbuf_init(&yaml, 1u << 20);
    if (im && cat_import_add(im, text, size, "fuzz", NULL) == TS_OK)
        cat_import_finish(im, NULL, -1, &yaml, NULL);
    ts_sbuf_release(&yaml);
    cat_import_free(im);
    struct reconf_plan p;
    if (reconf_plan_parse(text, size, "fuzz", &p, NULL) == TS_OK)
        reconf_plan_release(&p);
    return 0;
}
