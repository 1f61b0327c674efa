/*
 * import_int.h - what the files of the nvidia-smi importer share (see
 * import.h for what it does). import.c reads files line by line and keeps
 * what they say per GPU in a struct cat_import; import_tok.c splits lines
 * into tokens and reads numbers; import_scan.c tells which table a line
 * belongs to and reads `nvidia-smi -L` and the header table;
 * import_lgip.c reads -lgip rows and -lgipp lines; import_inventory.c
 * reads a NodeInventory document; import_model.c checks one GPU's profiles
 * and derives the GpuModel; import_yaml.c writes it. Internal: `cat__`.
 *
 * Limits: IMP_LINE_MAX bytes a line, CAT_PROFILES_MAX profiles a GPU,
 * IMP_GPUS_MAX GPUs, IMP_FILES_MAX files, TS_INPUT_MAX bytes a file;
 * placements on a grid of at most TS_MIG_GRID_MAX (32) units.
 */
#ifndef CATALOG_IMPORT_INT_H
#define CATALOG_IMPORT_INT_H

#include <stddef.h>
#include <stdint.h>
#include "catalog/import.h"
#include "util/error.h"
#include "util/limits.h"
#include "util/sbuf.h"

/* A place in the input: file index (into cat_import.files), line, column. */
struct where {
    int file, line, col;
};

/* What the input says about one profile ID of one GPU. */
struct iprof {
    int id;
    int have_row, have_place; /* seen in -lgip / -lgipp */
    int row_seq;              /* order of the -lgip row (output order) */
    struct where row_at, place_at;
    char name[IMP_NAME_MAX]; /* e.g. "1g.10gb+me" */
    int compute, max_count, sms;
    long cgib;       /* memory, hundredths of GiB */
    uint32_t starts; /* bit u set: may start at unit u */
    int size;        /* placement size in units */
    int have_lgi;    /* named by an nvidia-smi mig -lgi row (checked against -lgip) */
    struct where lgi_at;
    char lgi_name[IMP_NAME_MAX];
};

struct igpu {
    int index;
    char product[IMP_PRODUCT_MAX]; /* "" until seen */
    int product_from_l;            /* 1: from -L (preferred over the header) */
    struct where product_at;
    long mem_mib; /* 0 until seen */
    struct where mem_at;
    struct iprof prof[CAT_PROFILES_MAX];
    size_t nprof;
};

struct cat_import {
    char *files[IMP_FILES_MAX];
    size_t nfiles;
    struct igpu *gpus[IMP_GPUS_MAX];
    size_t ngpus;
    int first_lgip_gpu; /* GPU of the first -lgip row, -1 before */
    int row_seq;
};

/* ---- located errors and storage (import.c) ------------------------------ */

/* The name of input file, or NULL. */
const char *cat__file_name(const struct cat_import *im, int file);

ts_status cat__fail_at(struct ts_error *err, ts_status code, const struct cat_import *im,
                       struct where w, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* "file:line" of w, for messages that point at a second place. */
const char *cat__where_str(const struct cat_import *im, struct where w, char *buf, size_t n);

/* The state of reading one file. */
struct scan {
    struct cat_import *im;
    int file, line;
    enum { T_NONE, T_LGIP, T_LGI, T_OTHER } table;
    int pending_gpu; /* header table: memory row of this GPU next */
    struct ts_error *err;
};

/* The GPU of index (made when new), and its profile id (likewise). */
ts_status cat__gpu_get(struct scan *s, int index, struct where w, struct igpu **out);
ts_status cat__prof_get(struct scan *s, int gpu, int id, struct where w, struct iprof **out);

/* ---- lines and tokens (import_tok.c) ------------------------------------ */

struct tok {
    const char *s; /* NUL-terminated */
    int col;       /* 1-based */
};

struct line {
    char raw[IMP_LINE_MAX + 1]; /* the line, NUL-terminated */
    int len;
    struct tok t[IMP_TOKENS_MAX];
    int n;
    int overflow; /* more tokens than IMP_TOKENS_MAX */
    char store[2 * IMP_LINE_MAX + 2];
};

/* Split raw on blanks; '|' is always a token of its own. */
void cat__tokenize(struct line *l);
/* Token i, or "" / the column after the line when there is none. */
const char *cat__tok_s(const struct line *l, int i);
int cat__tok_col(const struct line *l, int i);
int cat__tok_is(const struct line *l, int i, const char *s);
/* Tokens from i on are the blank-separated words of phrase. */
int cat__tok_words(const struct line *l, int i, const char *phrase);
/* Token i is a whole decimal number of at most max. */
int cat__tok_int(const struct line *l, int i, long max, int *out);
/* Decimal digits only, at most max; end (may be NULL) gets the first byte
 * after the digits, otherwise the whole string must be digits. */
int cat__parse_uint(const char *s, long max, long *out, const char **end);
/* "19.50" -> 1950 hundredths; at most two decimals. */
int cat__parse_centi(const char *s, long *out);
/* "3g.40gb+me" (a profile name): name copied, compute = the leading count. */
int cat__parse_profile_name(const char *s, char *name, int *compute);

/* The place of token tok of l in the file s reads. */
static inline struct where cat__at(const struct scan *s, const struct line *l, int tok)
{
    return (struct where){s->file, s->line, cat__tok_col(l, tok)};
}

/* ---- what a line says ---------------------------------------------------- */

/* import_scan.c: one tokenized line, whatever table it belongs to. */
ts_status cat__scan_line(struct scan *s, struct line *l);
/* import_lgip.c: a -lgip row (strict: it must parse; *taken: it did), a
 * row of an -lgip table that holds no profile, a -lgipp line. */
ts_status cat__scan_lgip_row(struct scan *s, const struct line *l, int strict, int *taken);
int cat__lgip_filler(const struct line *l);
ts_status cat__scan_lgipp(struct scan *s, const struct line *l);
/* import_inventory.c: a NodeInventory JSON document. */
ts_status cat__add_inventory(struct scan *s, const char *text, size_t len, const char *file);

/* ---- the GpuModel (import_model.c, import_yaml.c) ----------------------- */

/* What cat_import_finish derives for one GPU before it writes anything. */
struct model {
    const struct igpu *g;
    char name[64];
    const char *arch;
    int grid, compute, sms;
    long card_cgib;
    const struct iprof *order[CAT_PROFILES_MAX]; /* -lgip rows, in -lgip order */
    size_t n;
};

/* Append m as a GpuModel YAML document (libyaml's emitter). */
ts_status cat__emit_model(const struct model *m, struct ts_sbuf *y);

#endif
