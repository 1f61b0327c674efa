/*
 * import.c - the nvidia-smi importer's driver (see import.h): the importer
 * itself, its files and the per-GPU store of what they say, located
 * errors, and cat_import_add, which checks one input as a whole and reads
 * it line by line (or as a NodeInventory document when it is JSON).
 *
 * What a line says is read in import_scan.c (-L and the header table,
 * table titles), import_lgip.c (-lgip rows, -lgipp lines) and
 * import_inventory.c; import_model.c and import_yaml.c turn one GPU into
 * the GpuModel document (cat_import_finish). Shared: import_int.h.
 */
#include "catalog/import.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "catalog/import_int.h"
#include "inventory/inventory.h"
#include "util/file.h"

/* ---- located errors ---------------------------------------------------- */

const char *cat__file_name(const struct cat_import *im, int file)
{
    return file >= 0 && (size_t)file < im->nfiles ? im->files[file] : NULL;
}

ts_status cat__fail_at(struct ts_error *err, ts_status code, const struct cat_import *im,
                       struct where w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ts_status st = ts_verr_at(err, code, cat__file_name(im, w.file), w.line, w.col, NULL, fmt, ap);
    va_end(ap);
    return st;
}

const char *cat__where_str(const struct cat_import *im, struct where w, char *buf, size_t n)
{
    const char *f = cat__file_name(im, w.file);
    snprintf(buf, n, "%s:%d", f ? f : "<input>", w.line);
    return buf;
}

/* ---- storage ------------------------------------------------------------ */

ts_status cat__gpu_get(struct scan *s, int index, struct where w, struct igpu **out)
{
    struct cat_import *im = s->im;
    for (size_t i = 0; i < im->ngpus; i++)
        if (im->gpus[i]->index == index) {
            *out = im->gpus[i];
            return TS_OK;
        }
    if (im->ngpus == IMP_GPUS_MAX)
        return cat__fail_at(s->err, TS_TOO_LARGE, im, w, "more than %d GPUs in the input",
                            IMP_GPUS_MAX);
    struct igpu *g = calloc(1, sizeof(*g));
    if (!g)
        return ts_err(s->err, TS_NOMEM, "out of memory");
    g->index = index;
    im->gpus[im->ngpus++] = g;
    *out = g;
    return TS_OK;
}

ts_status cat__prof_get(struct scan *s, int gpu, int id, struct where w, struct iprof **out)
{
    struct igpu *g;
    ts_status st = cat__gpu_get(s, gpu, w, &g);
    if (st != TS_OK)
        return st;
    for (size_t i = 0; i < g->nprof; i++)
        if (g->prof[i].id == id) {
            *out = &g->prof[i];
            return TS_OK;
        }
    if (g->nprof == CAT_PROFILES_MAX)
        return cat__fail_at(s->err, TS_TOO_LARGE, s->im, w, "more than %d profiles for GPU %d",
                            CAT_PROFILES_MAX, gpu);
    *out = &g->prof[g->nprof++];
    (*out)->id = id;
    return TS_OK;
}

/* ---- the public interface: reading -------------------------------------- */

struct cat_import *cat_import_new(void)
{
    struct cat_import *im = calloc(1, sizeof(*im));
    if (im)
        im->first_lgip_gpu = -1;
    return im;
}

void cat_import_free(struct cat_import *im)
{
    if (!im)
        return;
    for (size_t i = 0; i < im->nfiles; i++)
        free(im->files[i]);
    for (size_t i = 0; i < im->ngpus; i++)
        free(im->gpus[i]);
    free(im);
}

/* Copy one line (without "\r\n") into l, refusing overlong and binary lines. */
static ts_status read_line(struct scan *s, const char *p, size_t n, struct line *l)
{
    if (n > 0 && p[n - 1] == '\r')
        n--;
    struct where w = {s->file, s->line, IMP_LINE_MAX + 1};
    if (n > IMP_LINE_MAX)
        return cat__fail_at(s->err, TS_TOO_LARGE, s->im, w,
                            "line is longer than %d bytes: expected nvidia-smi output",
                            IMP_LINE_MAX);
    const char *nul = memchr(p, '\0', n);
    if (nul) {
        w.col = (int)(nul - p) + 1;
        return cat__fail_at(s->err, TS_INVALID, s->im, w,
                            "binary data (a NUL byte): expected nvidia-smi text output");
    }
    memcpy(l->raw, p, n);
    l->raw[n] = '\0';
    l->len = (int)n;
    return TS_OK;
}

/* Check one input as a whole and remember its name for later errors. */
static ts_status add_file(struct cat_import *im, const char *text, size_t len, const char *file,
                          struct ts_error *err)
{
    if (len > TS_INPUT_MAX)
        return ts_err_at(err, TS_TOO_LARGE, file, 0, 0, NULL, "input is larger than %u bytes",
                         TS_INPUT_MAX);
    size_t blank = 0;
    while (blank < len && text[blank] && strchr(" \t\r\n", text[blank]))
        blank++;
    if (blank == len)
        return ts_err_at(err, TS_INVALID, file, 0, 0, NULL,
                         "empty input: expected nvidia-smi output");
    if (im->nfiles == IMP_FILES_MAX)
        return ts_err_at(err, TS_TOO_LARGE, file, 0, 0, NULL, "more than %d input files",
                         IMP_FILES_MAX);
    im->files[im->nfiles] = strndup(file ? file : "<input>", TS_PATH_MAX - 1);
    if (!im->files[im->nfiles])
        return ts_err(err, TS_NOMEM, "out of memory");
    im->nfiles++;
    return TS_OK;
}

/* Every line of text, in order, through read_line and cat__scan_line. */
static ts_status scan_text(struct scan *s, const char *text, size_t len)
{
    struct line l;
    ts_status st = TS_OK;
    for (size_t pos = 0; st == TS_OK && pos < len;) {
        const char *p = text + pos;
        const char *nl = memchr(p, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - p) : len - pos;
        pos += n + (nl != NULL);
        s->line++;
        st = read_line(s, p, n, &l);
        if (st == TS_OK)
            st = cat__scan_line(s, &l);
    }
    return st;
}

ts_status cat_import_add(struct cat_import *im, const char *text, size_t len, const char *file,
                         struct ts_error *err)
{
    if (!im || (!text && len))
        return ts_err(err, TS_INTERNAL, "cat_import_add: no importer or no text");
    ts_status st = add_file(im, text, len, file, err);
    if (st != TS_OK)
        return st;
    struct scan s = {im, (int)im->nfiles - 1, 0, T_NONE, -1, err};
    if (inv_looks_json(text, len))
        return cat__add_inventory(&s, text, len, file);
    return scan_text(&s, text, len);
}
