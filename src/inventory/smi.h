/*
 * smi.h - the one reader of `nvidia-smi -L` output, used by `catalog
 * import` (product names), `ledger record --from-nvidia-smi` (custody
 * events) and `fight` (the MIG devices it runs on):
 *
 *   GPU 0: NVIDIA H100 PCIe (UUID: GPU-7cd6d4d6-9fa8-13be-3c42-09a1b2280a02)
 *     MIG 3g.40gb     Device  0: (UUID: MIG-da06d78f-7534-56a0-a062-62fef012be91)
 *     MIG 1c.2g.10gb  Device  1: (UUID: MIG-8970491e-16e0-5140-9f8f-d561baa3c186)
 *   GPU 1: A100-SXM4-40GB (UUID: GPU-a810a1fc-9f46-0e6f-5cef-bf34c2248e12)
 *     MIG 3g.20gb Device 0: (UUID: MIG-GPU-a810a1fc-9f46-0e6f-5cef-bf34c2248e12/1/0)
 *
 * (the last form is the R450-R465 drivers' MIG UUID). The grammar is
 * strict: a line that starts like one of the two kinds ("GPU <n>:", or
 * "MIG <profile> Device") must be all of it, or it is an error naming
 * file:line:column and what was expected there. Every other line is
 * either an error too, or, with INV_SMI_MIXED, skipped (the input holds
 * other nvidia-smi output as well). Pure: no files, no allocation.
 * Limits: INV_SMI_*_MAX in util/limits.h; beyond them is an error, never cut.
 */
#ifndef INVENTORY_SMI_H
#define INVENTORY_SMI_H

#include <stddef.h>
#include "inventory/inventory.h"
#include "util/limits.h"
#include "util/error.h"

#define INV_SMI_UUID_MAX INV_STR /* UUID with its NUL (NVML's buffer size) */

enum inv_smi_kind {
    INV_SMI_OTHER, /* not an -L line (blank, other output) */
    INV_SMI_GPU,   /* "GPU 0: NAME (UUID: GPU-...)" */
    INV_SMI_MIG,   /* "MIG PROFILE Device 0: (UUID: MIG-...)" */
};

/* One line as inv_smi_line reads it. */
struct inv_smi_line {
    enum inv_smi_kind kind;
    int index;                   /* GPU index, or MIG device index */
    char name[INV_SMI_NAME_MAX]; /* GPU: product name; MIG: profile name */
    char uuid[INV_SMI_UUID_MAX];
    int col, name_col, uuid_col; /* 1-based columns: first word, name, UUID */
};

struct inv_smi_gpu {
    int index;
    char name[INV_SMI_NAME_MAX]; /* "NVIDIA H100 PCIe" */
    char uuid[INV_SMI_UUID_MAX]; /* "GPU-..." */
    int line;                    /* where it was listed */
    int first_mig, nmig;         /* its devices: mig[first_mig .. +nmig) */
};

struct inv_smi_mig {
    int gpu;                           /* position in inv_smi.gpu (not the index) */
    int device;                        /* "Device n" */
    char profile[INV_SMI_PROFILE_MAX]; /* "3g.40gb", "1c.2g.10gb", "1g.10gb+me" */
    char uuid[INV_SMI_UUID_MAX];       /* "MIG-..." or "MIG-GPU-.../gi/ci" */
    int line;
};

/* A whole output: GPUs in the order listed, each one's MIG devices after it. */
struct inv_smi {
    struct inv_smi_gpu gpu[INV_SMI_GPUS_MAX];
    int ngpu;
    struct inv_smi_mig mig[INV_SMI_MIGS_MAX];
    int nmig;
};

/* Read one line (len bytes without its newline; a trailing '\r' is dropped).
 * A line that does not start like a GPU or MIG line is INV_SMI_OTHER; one
 * that does but is malformed is TS_INVALID with err at file:line:column
 * (file may be NULL). */
ts_status inv_smi_line(const char *s, size_t len, const char *file, int line,
                       struct inv_smi_line *out, struct ts_error *err);

/* flags for inv_smi_parse */
#define INV_SMI_MIXED 1u /* skip lines of other output, not only blank ones */

/* Read a whole output (len bytes). Errors: a malformed line, a line of
 * other output without INV_SMI_MIXED, a MIG line before any GPU line, more
 * than the limits. An output with no GPU line is not an error here. */
ts_status inv_smi_parse(const char *text, size_t len, const char *file, unsigned flags,
                        struct inv_smi *out, struct ts_error *err);

#endif
