/*
 * import.h - turning real nvidia-smi output into a GpuModel document.
 *
 * Feed it any mix of `nvidia-smi -L`, the `nvidia-smi` header table,
 * `nvidia-smi mig -lgip` (narrow or the newer wide layout) and
 * `nvidia-smi mig -lgipp` output, one file at a time, in any order; shell
 * prompts and other lines are skipped. cat_import_finish merges what it saw
 * (profiles from -lgip, placements from -lgipp, product name and memory
 * from -L / the header) and writes a GpuModel YAML document that
 * `tessera plan --catalog` accepts. Profiles are keyed by their ID, so the
 * names the driver prints (7g.79gb vs 7g.80gb) stay display only.
 * Every error names the file and line.
 *
 * What it decides, and where it refuses to guess:
 *  - GPU: `gpu`, or the GPU of the first -lgip row; other GPUs' rows are
 *    kept apart and ignored.
 *  - Product name: from `nvidia-smi -L` (the header table's name, which
 *    nvidia-smi may cut short, only when there is no -L line). Without one
 *    it is an error: the name is the architecture's only source. -L lines
 *    are read by inventory/smi.h: one that starts like a GPU or MIG device
 *    line ("GPU 0:", "MIG 3g.40gb Device") must be whole, UUID included.
 *  - Architecture: from words of the product name (A100/A800/A30: ampere;
 *    H100/H800/H200/H20/GH200: hopper; B200/B300/GB200/GB300/Blackwell:
 *    blackwell). An unknown card is an error, not a guess: the architecture
 *    drives decisions (MPS limits), so a wrong one would plan silently wrong.
 *  - Memory: the header table's total MiB, else the largest profile's GiB;
 *    sms: the full-card (largest) MIG profile's.
 *  - Grid: the largest start + size over all placements; compute slices:
 *    the largest profile's.
 *  - name: NULL gives a slug of the product name ("nvidia-h100-pcie"),
 *    which sits beside the built-in models; a fleet may use that name or
 *    the product name (cat_model_find prefers --catalog models for product
 *    names). To replace a built-in model, pass its name (h100-80gb-pcie).
 *  - Rows of one profile ID seen twice must agree (the Free count may
 *    differ); placements without an -lgip row, -lgip rows without
 *    placements, and malformed rows inside an -lgip table are errors.
 *    Outside a table, a row is read as -lgip only if all of it parses (an
 *    excerpt whose table header was cut off); rows of other tables never.
 * A NodeInventory JSON document (`tessera agent inventory -o json`, see
 * docs/agent.md) is read too: each GPU's name, memory and MIG profiles with
 * their placements stand for -L, the header table, -lgip and -lgipp (profile
 * order and GiB as nvidia-smi prints them), so both give the same GpuModel.
 * Limits: 1024 bytes a line, 64 profiles a GPU, 64 GPUs, 64 files,
 * TS_INPUT_MAX bytes a file, placements within 32 units. A NUL byte is
 * refused as binary input. After an error, free the importer.
 */
#ifndef CAT_IMPORT_H
#define CAT_IMPORT_H

#include <stddef.h>
#include "util/error.h"
#include "util/sbuf.h"

struct cat_import;

struct cat_import *cat_import_new(void);
void cat_import_free(struct cat_import *im);

/* Read one file's text (file names it in errors). */
ts_status cat_import_add(struct cat_import *im, const char *text, size_t len, const char *file,
                         struct ts_error *err);

/* Write the GpuModel document. name is the catalog key (NULL: derived from
 * the product name, e.g. "nvidia-h100-pcie"); gpu selects which GPU index's
 * tables to use when the output covers several (-1: the first seen). */
ts_status cat_import_finish(struct cat_import *im, const char *name, int gpu, struct ts_sbuf *yaml,
                            struct ts_error *err);

#endif
