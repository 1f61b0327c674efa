/* import.c - placeholder until the nvidia-smi importer lands (same session). */
#include "catalog/import.h"
#include <stdlib.h>
struct cat_import { int unused; };
struct cat_import *cat_import_new(void) { return calloc(1, sizeof(struct cat_import)); }
void cat_import_free(struct cat_import *im) { free(im); }
ts_status cat_import_add(struct cat_import *im, const char *text, size_t len, const char *file,
                         struct ts_error *err)
{ (void)im; (void)text; (void)len; return ts_err_at(err, TS_INTERNAL, file, 0, 0, NULL, "not yet"); }
ts_status cat_import_finish(struct cat_import *im, const char *name, int gpu,
                            struct ts_sbuf *yaml, struct ts_error *err)
{ (void)im; (void)name; (void)gpu; (void)yaml; return ts_err(err, TS_INTERNAL, "not yet"); }
