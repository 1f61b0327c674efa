/*
 * mig.c - MIG device UUIDs from `nvidia-smi -L` (see fight.h), so the MIG
 * phase can give each tenant its own instance with CUDA_VISIBLE_DEVICES.
 * The output is read by the inventory module's parser (inventory/smi.h),
 * which takes both UUID forms: "MIG-<uuid>" (R470 and later) and the older
 * "MIG-GPU-<uuid>/<gi>/<ci>". Output it cannot read gives no devices, so
 * the MIG phase is skipped rather than run on a guess.
 */
#include "fight/fight.h"

#include <stdlib.h>
#include <string.h>
#include "inventory/smi.h"

size_t fight_mig_parse(const char *text, char uuids[][FIGHT_UUID_MAX], size_t max)
{
    struct inv_smi *smi = malloc(sizeof(*smi));
    size_t n = 0;
    if (smi && inv_smi_parse(text, strlen(text), NULL, INV_SMI_MIXED, smi, NULL) == TS_OK)
        for (; n < max && n < (size_t)smi->nmig; n++)
            memcpy(uuids[n], smi->mig[n].uuid, INV_SMI_UUID_MAX);
    free(smi);
    return n;
}
