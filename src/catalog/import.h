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
ts_status cat_import_finish(struct cat_import *im, const char *name, int gpu,
                            struct ts_sbuf *yaml, struct ts_error *err);

#endif
