/*
 * fuzz_smi.c - libFuzzer target for the `nvidia-smi -L` parser
 * (inventory/smi.c) that catalog import, ledger record and fight share:
 * arbitrary bytes go through inv_smi_parse, strict and mixed. Invariants
 * checked (abort otherwise): an output read strictly reads the same when
 * mixed; what is accepted stays within the limits, every MIG device
 * belongs to a GPU listed before it, names and UUIDs have the shape the
 * grammar promises; and the result written back as -L text reads again to
 * the same GPUs and devices. Seeds in fuzz/corpus/smi/, tokens in
 * fuzz/smi.dict.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "inventory/smi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            return 0;
    return 1;
}

/* The limits and shapes smi.h promises of an accepted output. */
static void check_shape(const struct inv_smi *o)
{
    int devices = 0;
    if (o->ngpu < 0 || o->ngpu > INV_SMI_GPUS_MAX || o->nmig < 0 || o->nmig > INV_SMI_MIGS_MAX)
        abort();
    for (int i = 0; i < o->ngpu; i++) {
        const struct inv_smi_gpu *g = &o->gpu[i];
        if (g->first_mig != devices || !g->name[0] || !printable(g->name) ||
            strncmp(g->uuid, "GPU-", 4) != 0 || g->index > INV_SMI_INDEX_MAX)
            abort();
        devices += g->nmig;
    }
    for (int i = 0; i < o->nmig; i++)
        if (o->mig[i].gpu < 0 || o->mig[i].gpu >= o->ngpu ||
            strncmp(o->mig[i].uuid, "MIG-", 4) != 0 || !printable(o->mig[i].profile))
            abort();
    if (devices != o->nmig)
        abort();
}

/* o as nvidia-smi prints it; the text must read back to the same. */
static void check_round_trip(const struct inv_smi *o, struct inv_smi *again)
{
    size_t cap = (size_t)(o->ngpu + o->nmig) * 320 + 1, n = 0;
    char *text = malloc(cap);
    if (!text)
        return;
    for (int i = 0; i < o->ngpu; i++) {
        const struct inv_smi_gpu *g = &o->gpu[i];
        n += (size_t)snprintf(text + n, cap - n, "GPU %d: %s (UUID: %s)\n", g->index, g->name,
                              g->uuid);
        for (int k = g->first_mig; k < g->first_mig + g->nmig; k++)
            n += (size_t)snprintf(text + n, cap - n, "  MIG %-11s Device %2d: (UUID: %s)\n",
                                  o->mig[k].profile, o->mig[k].device, o->mig[k].uuid);
    }
    if (inv_smi_parse(text, n, "again", 0, again, NULL) != TS_OK || again->ngpu != o->ngpu ||
        again->nmig != o->nmig)
        abort();
    for (int i = 0; i < o->ngpu; i++)
        if (strcmp(again->gpu[i].name, o->gpu[i].name) ||
            strcmp(again->gpu[i].uuid, o->gpu[i].uuid))
            abort();
    for (int i = 0; i < o->nmig; i++)
        if (strcmp(again->mig[i].uuid, o->mig[i].uuid) || again->mig[i].gpu != o->mig[i].gpu)
            abort();
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct inv_smi *strict = malloc(sizeof(*strict)), *mixed = malloc(sizeof(*mixed));
    const char *text = (const char *)data;
    if (strict && mixed) {
        int ok = inv_smi_parse(text, size, "fuzz", 0, strict, NULL) == TS_OK;
        int mixed_ok = inv_smi_parse(text, size, "fuzz", INV_SMI_MIXED, mixed, NULL) == TS_OK;
        if (ok && (!mixed_ok || mixed->ngpu != strict->ngpu || mixed->nmig != strict->nmig))
            abort();
        if (mixed_ok) {
            check_shape(mixed);
            check_round_trip(mixed, strict);
        }
    }
    free(strict);
    free(mixed);
    return 0;
}
