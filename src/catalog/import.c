/*
 * import.c - the nvidia-smi importer (see import.h).
 *
 * cat_import_add scans text line by line and keeps, per GPU index, what it
 * recognises: the product name (`nvidia-smi -L`, else the `nvidia-smi`
 * header table), the card memory (header table), -lgip profile rows and
 * -lgipp placement lines, each profile keyed by (GPU, profile ID) with the
 * place it came from. Lines are split into tokens on blanks and '|', so the
 * narrow and the wider -lgip layouts read the same. Inside a recognised
 * -lgip table every row must parse (or the error names it); other lines are
 * skipped. cat_import_finish picks one GPU, checks that everything a
 * GpuModel needs is there and consistent (the same rules cat_load_text
 * applies, so the document it writes always loads) and writes the YAML.
 *
 * Limits: IMP_LINE_MAX bytes a line, IMP_PROFILES_MAX profiles a GPU,
 * IMP_GPUS_MAX GPUs, IMP_FILES_MAX files, TS_INPUT_MAX bytes a file;
 * placements on a grid of at most TS_MIG_GRID_MAX (32) units.
 */
#include "catalog/import.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "inventory/inventory.h"
#include "catalog/catalog.h"
#include "spec/schema.h"
#include "util/file.h"

#define IMP_LINE_MAX 1024        /* bytes a line, without the newline */
#define IMP_TOKENS_MAX 48        /* tokens kept a line */
#define IMP_PROFILES_MAX 64      /* profile IDs a GPU (the catalog's limit) */
#define IMP_GPUS_MAX 64          /* distinct GPU indexes */
#define IMP_GPU_INDEX_MAX 1024   /* largest GPU index */
#define IMP_FILES_MAX 64         /* input files */
#define IMP_NAME_MAX 32          /* profile name, with its NUL */
#define IMP_PRODUCT_MAX 128      /* product name, with its NUL */
#define IMP_ID_MAX 255           /* profile IDs the catalog accepts */
#define IMP_COUNT_MAX 32         /* maxCount the catalog accepts */
#define IMP_SM_MAX 10000         /* SMs the catalog accepts */
#define IMP_CGIB_MAX 1000000     /* memory cap: 10000 GiB in hundredths */
#define IMP_MIB_MAX 10240000     /* the same cap in MiB */

/* A place in the input: file index (into cat_import.files), line, column. */
struct where {
    int file, line, col;
};

/* What the input says about one profile ID of one GPU. */
struct iprof {
    int id;
    int have_row, have_place;      /* seen in -lgip / -lgipp */
    int row_seq;                   /* order of the -lgip row (output order) */
    struct where row_at, place_at;
    char name[IMP_NAME_MAX];       /* e.g. "1g.10gb+me" */
    int compute, max_count, sms;
    long cgib;                     /* memory, hundredths of GiB */
    uint32_t starts;               /* bit u set: may start at unit u */
    int size;                      /* placement size in units */
};

struct igpu {
    int index;
    char product[IMP_PRODUCT_MAX]; /* "" until seen */
    int product_from_l;            /* 1: from -L (preferred over the header) */
    struct where product_at;
    long mem_mib;                  /* 0 until seen */
    struct where mem_at;
    struct iprof prof[IMP_PROFILES_MAX];
    size_t nprof;
};

struct cat_import {
    char *files[IMP_FILES_MAX];
    size_t nfiles;
    struct igpu *gpus[IMP_GPUS_MAX];
    size_t ngpus;
    int first_lgip_gpu;            /* GPU of the first -lgip row, -1 before */
    int row_seq;
};

/* ---- located errors ---------------------------------------------------- */

static const char *file_name(const struct cat_import *im, int file)
{
    return file >= 0 && (size_t)file < im->nfiles ? im->files[file] : NULL;
}

static ts_status fail_at(struct ts_error *err, ts_status code, const struct cat_import *im,
                         struct where w, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static ts_status fail_at(struct ts_error *err, ts_status code, const struct cat_import *im,
                         struct where w, const char *fmt, ...)
{
    char msg[TS_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ts_err_at(err, code, file_name(im, w.file), w.line, w.col, NULL, "%s", msg);
}

/* "file:line" of w, for messages that point at a second place. */
static const char *where_str(const struct cat_import *im, struct where w, char *buf, size_t n)
{
    const char *f = file_name(im, w.file);
    snprintf(buf, n, "%s:%d", f ? f : "<input>", w.line);
    return buf;
}

/* ---- lines and tokens -------------------------------------------------- */

struct tok {
    const char *s;   /* NUL-terminated */
    int col;         /* 1-based */
};

struct line {
    char raw[IMP_LINE_MAX + 1];    /* the line, NUL-terminated */
    int len;
    struct tok t[IMP_TOKENS_MAX];
    int n;
    int overflow;                  /* more tokens than IMP_TOKENS_MAX */
    char store[2 * IMP_LINE_MAX + 2];
};

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Split raw on blanks; '|' is always a token of its own. */
static void tokenize(struct line *l)
{
    char *out = l->store;
    l->n = 0;
    l->overflow = 0;
    for (int i = 0; i < l->len;) {
        if (is_blank(l->raw[i])) {
            i++;
            continue;
        }
        if (l->n == IMP_TOKENS_MAX) {
            l->overflow = 1;
            return;
        }
        l->t[l->n++] = (struct tok){out, i + 1};
        if (l->raw[i] == '|')
            *out++ = l->raw[i++];
        else
            while (i < l->len && !is_blank(l->raw[i]) && l->raw[i] != '|')
                *out++ = l->raw[i++];
        *out++ = '\0';
    }
}

static const char *tok_s(const struct line *l, int i)
{
    return i < l->n ? l->t[i].s : "";
}

static int tok_col(const struct line *l, int i)
{
    return i < l->n ? l->t[i].col : l->len + 1;
}

static int tok_is(const struct line *l, int i, const char *s)
{
    return i < l->n && strcmp(l->t[i].s, s) == 0;
}

/* Tokens from i on are the blank-separated words of phrase. */
static int tok_words(const struct line *l, int i, const char *phrase)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%s", phrase);
    for (char *w = buf, *end; *w; w = end) {
        end = strchr(w, ' ');
        if (end)
            *end++ = '\0';
        else
            end = w + strlen(w);
        if (!tok_is(l, i++, w))
            return 0;
    }
    return 1;
}

/* Decimal digits only, at most max; end (may be NULL) gets the first byte
 * after the digits, otherwise the whole string must be digits. */
static int parse_uint(const char *s, long max, long *out, const char **end)
{
    long v = 0;
    const char *p = s;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (*p++ - '0');
        if (v > max)
            return 0;
    }
    if (p == s || (!end && *p))
        return 0;
    if (end)
        *end = p;
    *out = v;
    return 1;
}

static int tok_int(const struct line *l, int i, long max, int *out)
{
    long v;
    if (i >= l->n || !parse_uint(l->t[i].s, max, &v, NULL))
        return 0;
    *out = (int)v;
    return 1;
}

/* "19.50" -> 1950 hundredths; at most two decimals. */
static int parse_centi(const char *s, long *out)
{
    long whole, frac = 0;
    const char *p;
    if (!parse_uint(s, IMP_CGIB_MAX / 100, &whole, &p))
        return 0;
    if (*p == '.') {
        const char *q = p + 1;
        if (!parse_uint(q, 99, &frac, &p) || p - q > 2)
            return 0;
        if (p - q == 1)
            frac *= 10;
    }
    if (*p || whole * 100 + frac > IMP_CGIB_MAX)
        return 0;
    *out = whole * 100 + frac;
    return 1;
}

/* ---- storage ------------------------------------------------------------ */

struct scan {
    struct cat_import *im;
    int file, line;
    enum { T_NONE, T_LGIP, T_OTHER } table;
    int pending_gpu;               /* header table: memory row of this GPU next */
    struct ts_error *err;
};

static struct where at(const struct scan *s, const struct line *l, int tok)
{
    return (struct where){s->file, s->line, tok_col(l, tok)};
}

static ts_status gpu_get(struct scan *s, int index, struct where w, struct igpu **out)
{
    struct cat_import *im = s->im;
    for (size_t i = 0; i < im->ngpus; i++)
        if (im->gpus[i]->index == index) {
            *out = im->gpus[i];
            return TS_OK;
        }
    if (im->ngpus == IMP_GPUS_MAX)
        return fail_at(s->err, TS_TOO_LARGE, im, w, "more than %d GPUs in the input",
                       IMP_GPUS_MAX);
    struct igpu *g = calloc(1, sizeof(*g));
    if (!g)
        return ts_err(s->err, TS_NOMEM, "out of memory");
    g->index = index;
    im->gpus[im->ngpus++] = g;
    *out = g;
    return TS_OK;
}

static ts_status prof_get(struct scan *s, int gpu, int id, struct where w, struct iprof **out)
{
    struct igpu *g;
    ts_status st = gpu_get(s, gpu, w, &g);
    if (st != TS_OK)
        return st;
    for (size_t i = 0; i < g->nprof; i++)
        if (g->prof[i].id == id) {
            *out = &g->prof[i];
            return TS_OK;
        }
    if (g->nprof == IMP_PROFILES_MAX)
        return fail_at(s->err, TS_TOO_LARGE, s->im, w, "more than %d profiles for GPU %d",
                       IMP_PROFILES_MAX, gpu);
    *out = &g->prof[g->nprof++];
    (*out)->id = id;
    return TS_OK;
}

/* ---- nvidia-smi mig -lgip ---------------------------------------------- */

/* One -lgip profile row, parsed before it is stored. */
struct lgip_row {
    int gpu, id, free, total, sms, compute, id_tok;
    long cgib;
    char name[IMP_NAME_MAX];
};

/* "MIG 3g.40gb+me" name part: "<g>g." then [a-z0-9.+-]; compute = g. */
static int parse_profile_name(const char *s, char *name, int *compute)
{
    long g;
    const char *p;
    if (strlen(s) >= IMP_NAME_MAX || !parse_uint(s, 32, &g, &p) || g < 1 || p[0] != 'g' ||
        p[1] != '.')
        return 0;
    for (p += 2; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || strchr(".+-", *p)))
            return 0;
    memcpy(name, s, strlen(s) + 1);
    *compute = (int)g;
    return 1;
}

static int parse_free_total(const char *s, int *free_n, int *total)
{
    long f, t;
    const char *p;
    if (!parse_uint(s, IMP_COUNT_MAX, &f, &p) || *p != '/' ||
        !parse_uint(p + 1, IMP_COUNT_MAX, &t, NULL) || t < 1 || f > t)
        return 0;
    *free_n = (int)f;
    *total = (int)t;
    return 1;
}

/* Token index of the first problem in a -lgip row (-1: none); what names
 * what was expected there. */
static int check_lgip_row(const struct line *l, struct lgip_row *r, const char **what)
{
    static const char *const expect[] = {
        "'|'", "a GPU index", "'MIG'", "a profile name like 3g.40gb", "a profile ID (0-255)",
        "free/total counts like 7/7 (total 1-32)", "memory GiB like 19.50", "P2P 'Yes' or 'No'",
        "an SM count", "a count or '|'"};
    int ok[10] = {tok_is(l, 0, "|"), tok_int(l, 1, IMP_GPU_INDEX_MAX, &r->gpu),
                  tok_is(l, 2, "MIG"), parse_profile_name(tok_s(l, 3), r->name, &r->compute),
                  tok_int(l, 4, IMP_ID_MAX, &r->id),
                  parse_free_total(tok_s(l, 5), &r->free, &r->total),
                  parse_centi(tok_s(l, 6), &r->cgib), tok_is(l, 7, "No") || tok_is(l, 7, "Yes"),
                  tok_int(l, 8, IMP_SM_MAX, &r->sms), 1};
    r->id_tok = 4;
    for (int i = 0; i < 10; i++)
        if (!ok[i] || i >= l->n) {
            *what = expect[i];
            return i;
        }
    for (int i = 9; i < l->n - 1; i++) {
        int v;
        if (!tok_int(l, i, IMP_SM_MAX, &v)) {
            *what = expect[9];
            return i;
        }
    }
    *what = "'|' at the end of the row";
    return tok_is(l, l->n - 1, "|") && !l->overflow ? -1 : l->n - 1;
}

static void lgip_desc(const struct iprof *p, char *buf, size_t n)
{
    snprintf(buf, n, "%s, %d max, %ld.%02ld GiB, %d SMs", p->name, p->max_count, p->cgib / 100,
             p->cgib % 100, p->sms);
}

static ts_status store_lgip(struct scan *s, const struct line *l, const struct lgip_row *r)
{
    struct where w = at(s, l, r->id_tok);
    struct iprof *p = NULL;
    ts_status st = prof_get(s, r->gpu, r->id, w, &p);
    if (st != TS_OK)
        return st;
    struct iprof row = *p;
    memcpy(row.name, r->name, sizeof(row.name));
    row.compute = r->compute;
    row.max_count = r->total;
    row.sms = r->sms;
    row.cgib = r->cgib;
    if (p->have_row) {
        char a[96], b[96], loc[TS_PATH_MAX + 16];
        lgip_desc(&row, a, sizeof(a));
        lgip_desc(p, b, sizeof(b));
        if (strcmp(a, b) == 0)
            return TS_OK;
        return fail_at(s->err, TS_INVALID, s->im, w,
                       "conflicting rows for profile ID %d of GPU %d: %s here, %s at %s", r->id,
                       r->gpu, a, b, where_str(s->im, p->row_at, loc, sizeof(loc)));
    }
    *p = row;
    p->have_row = 1;
    p->row_at = w;
    p->row_seq = s->im->row_seq++;
    if (s->im->first_lgip_gpu < 0)
        s->im->first_lgip_gpu = r->gpu;
    return TS_OK;
}

/* A profile row; strict: inside a recognised table a bad row is an error,
 * otherwise (a table whose header was cut off) it is only tried. */
static ts_status scan_lgip_row(struct scan *s, const struct line *l, int strict, int *taken)
{
    struct lgip_row r;
    const char *what;
    int bad = check_lgip_row(l, &r, &what);
    *taken = bad < 0;
    if (bad >= 0 && !strict)
        return TS_OK;
    if (bad >= 0)
        return fail_at(s->err, TS_INVALID, s->im, at(s, l, bad),
                       "malformed nvidia-smi mig -lgip row: expected %s, found %s%.40s%s", what,
                       bad < l->n ? "'" : "", bad < l->n ? tok_s(l, bad) : "end of line",
                       bad < l->n ? "'" : "");
    return store_lgip(s, l, &r);
}

/* Rows of a -lgip table that carry no profile: borders, headers, and the
 * second row of each profile (CE JPEG OFA: only numbers). */
static int lgip_filler(const struct line *l)
{
    if (l->t[0].s[0] == '+' || (l->t[0].s[0] == '|' && l->n > 1 && l->t[1].s[0] == '='))
        return 1;
    if (tok_words(l, 1, "GPU Name ID") || tok_words(l, 1, "Free/Total"))
        return 1;
    int v;
    for (int i = 1; i < l->n - 1; i++)
        if (!tok_int(l, i, IMP_SM_MAX, &v))
            return 0;
    return l->n >= 3 && tok_is(l, 0, "|") && tok_is(l, l->n - 1, "|") && !l->overflow;
}

/* ---- nvidia-smi mig -lgipp -------------------------------------------- */

/* "{0,2,4}:2" -> starts bitmask and size. Returns 0 on bad syntax, -1 when
 * the placement runs past TS_MIG_GRID_MAX units, 1 when it is good. */
static int parse_placement(const char *s, uint32_t *starts, int *size)
{
    long v, prev = -1, sz;
    const char *p = s;
    *starts = 0;
    if (*p++ != '{')
        return 0;
    do {
        if (!parse_uint(p, 999, &v, &p) || v <= prev)
            return 0;
        *starts |= v < TS_MIG_GRID_MAX ? (uint32_t)1 << v : 0;
        prev = v;
    } while (*p++ == ',');
    if (p[-1] != '}' || *p++ != ':' || !parse_uint(p, 999, &sz, NULL) || sz < 1)
        return 0;
    *size = (int)sz;
    return prev + sz <= TS_MIG_GRID_MAX ? 1 : -1;
}

/* Token index of the placement spec in a -lgipp line, or -1. */
static int lgipp_spec_tok(const struct line *l)
{
    if (tok_is(l, 5, "Placements:") || tok_is(l, 5, "Placement:"))
        return 6;
    if ((tok_is(l, 5, "Placements") || tok_is(l, 5, "Placement")) && tok_is(l, 6, ":"))
        return 7;
    return -1;
}

static ts_status store_placement(struct scan *s, const struct line *l, int gpu, int id,
                                 uint32_t starts, int size)
{
    struct where w = at(s, l, 4);
    struct iprof *p = NULL;
    ts_status st = prof_get(s, gpu, id, w, &p);
    if (st != TS_OK)
        return st;
    if (p->have_place && (p->starts != starts || p->size != size)) {
        char loc[TS_PATH_MAX + 16];
        return fail_at(s->err, TS_INVALID, s->im, w,
                       "conflicting placements for profile ID %d of GPU %d: this line differs "
                       "from %s", id, gpu, where_str(s->im, p->place_at, loc, sizeof(loc)));
    }
    if (!p->have_place)
        p->place_at = w;
    p->have_place = 1;
    p->starts = starts;
    p->size = size;
    return TS_OK;
}

/* "GPU  0 Profile ID  9 Placements: {0,4}:4" (or "Placement : {0}:8"). */
static ts_status scan_lgipp(struct scan *s, const struct line *l)
{
    int gpu, id, size = 0, spec = lgipp_spec_tok(l), bad = -1, good = 0;
    uint32_t starts = 0;
    const char *what = NULL;
    if (!tok_int(l, 1, IMP_GPU_INDEX_MAX, &gpu))
        bad = 1, what = "a GPU index";
    else if (!tok_is(l, 3, "ID"))
        bad = 3, what = "'ID'";
    else if (!tok_int(l, 4, IMP_ID_MAX, &id))
        bad = 4, what = "a profile ID (0-255)";
    else if (spec < 0)
        bad = 5, what = "'Placements:'";
    else if ((good = parse_placement(tok_s(l, spec), &starts, &size)) == 0)
        bad = spec, what = "placements like {0,2,4}:2 (ascending starts, ':', the size)";
    else if (l->n != spec + 1 || l->overflow)
        bad = spec + 1, what = "the end of the line";
    if (bad >= 0)
        return fail_at(s->err, TS_INVALID, s->im, at(s, l, bad),
                       "malformed nvidia-smi mig -lgipp line: expected %s, found '%.40s'", what,
                       tok_s(l, bad));
    if (good < 0)
        return fail_at(s->err, TS_INVALID, s->im, at(s, l, spec),
                       "placement %.40s runs past %d units, the most a card can have",
                       tok_s(l, spec), TS_MIG_GRID_MAX);
    return store_placement(s, l, gpu, id, starts, size);
}

/* ---- nvidia-smi -L and the nvidia-smi header table ---------------------- */

static ts_status check_product(struct scan *s, struct where w, const char *p, size_t n)
{
    if (n == 0 || n >= IMP_PRODUCT_MAX)
        return fail_at(s->err, TS_INVALID, s->im, w,
                       "product name must be 1 to %d characters", IMP_PRODUCT_MAX - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] > 0x7e)
            return fail_at(s->err, TS_INVALID, s->im, w,
                           "product name has a byte that is not printable ASCII (0x%02x)",
                           (unsigned char)p[i]);
    return TS_OK;
}

/* The -L name wins over the header's (which nvidia-smi may truncate);
 * two different -L names for one GPU index conflict. */
static ts_status store_product(struct scan *s, int gpu, struct where w, const char *p, size_t n,
                               int from_l)
{
    struct igpu *g;
    ts_status st = check_product(s, w, p, n);
    if (st == TS_OK)
        st = gpu_get(s, gpu, w, &g);
    if (st != TS_OK || (g->product[0] && !from_l))
        return st;
    if (g->product_from_l) {
        char loc[TS_PATH_MAX + 16];
        if (strlen(g->product) == n && memcmp(g->product, p, n) == 0)
            return TS_OK;
        return fail_at(s->err, TS_INVALID, s->im, w, "GPU %d is '%.*s' here but '%s' at %s", gpu,
                       (int)n, p, g->product, where_str(s->im, g->product_at, loc, sizeof(loc)));
    }
    memcpy(g->product, p, n);
    g->product[n] = '\0';
    g->product_from_l = from_l;
    g->product_at = w;
    return TS_OK;
}

/* "GPU 0: NVIDIA H100 PCIe (UUID: GPU-...)"; other GPU lines are skipped. */
static ts_status scan_list(struct scan *s, const struct line *l)
{
    long gpu;
    const char *end;
    if (l->n < 3 || !parse_uint(tok_s(l, 1), IMP_GPU_INDEX_MAX, &gpu, &end) || strcmp(end, ":"))
        return TS_OK;
    const char *name = l->raw + l->t[2].col - 1;
    const char *uuid = strstr(name, "(UUID:");
    if (!uuid)
        return TS_OK;
    while (uuid > name && is_blank(uuid[-1]))
        uuid--;
    return store_product(s, (int)gpu, at(s, l, 2), name, (size_t)(uuid - name), 1);
}

static int is_bus_id(const char *s)
{
    size_t n = strspn(s, "0123456789abcdefABCDEF:.");
    return n >= 7 && s[n] == '\0' && strchr(s, ':') && strchr(s, '.');
}

/* "|   0  NVIDIA H100 PCIe    On   | 00000000:01:00.0 Off |": the GPU row
 * of the nvidia-smi header table. Returns the token index of the '|' that
 * ends the name cell, or -1. */
static int header_gpu_row(const struct line *l, int *gpu)
{
    int k = 2;
    if (!tok_is(l, 0, "|") || !tok_int(l, 1, IMP_GPU_INDEX_MAX, gpu))
        return -1;
    while (k < l->n && !tok_is(l, k, "|"))
        k++;
    if (k < 4 || !(tok_is(l, k - 1, "On") || tok_is(l, k - 1, "Off")) ||
        !is_bus_id(tok_s(l, k + 1)))
        return -1;
    return k;
}

static ts_status scan_header_gpu(struct scan *s, const struct line *l, int gpu, int k)
{
    const char *name = l->raw + l->t[2].col - 1;
    const char *end = l->raw + l->t[k - 2].col - 1 + strlen(l->t[k - 2].s);
    s->pending_gpu = gpu;
    return store_product(s, gpu, at(s, l, 2), name, (size_t)(end - name), 0);
}

/* The row under the GPU row: "| N/A 40C P0 51W / 350W | 0MiB / 81559MiB |".
 * Anything else there (N/A with MIG on some drivers) is skipped. */
static ts_status scan_header_memory(struct scan *s, const struct line *l, int gpu)
{
    int k = 1;
    long mib;
    const char *end;
    while (k < l->n && !tok_is(l, k, "|"))
        k++;
    if (!tok_is(l, k + 2, "/") || !parse_uint(tok_s(l, k + 3), IMP_MIB_MAX, &mib, &end) ||
        strcmp(end, "MiB") != 0 || mib == 0)
        return TS_OK;
    struct where w = at(s, l, k + 3);
    struct igpu *g;
    ts_status st = gpu_get(s, gpu, w, &g);
    if (st != TS_OK || g->mem_mib == mib)
        return st;
    if (g->mem_mib) {
        char loc[TS_PATH_MAX + 16];
        return fail_at(s->err, TS_INVALID, s->im, w, "GPU %d has %ld MiB here but %ld MiB at %s",
                       gpu, mib, g->mem_mib, where_str(s->im, g->mem_at, loc, sizeof(loc)));
    }
    g->mem_mib = mib;
    g->mem_at = w;
    return TS_OK;
}

/* ---- the line scanner --------------------------------------------------- */

/* Table titles ("| GPU instance profiles: |") and the table they start. */
static int table_title(const struct line *l)
{
    static const struct {
        const char *words;
        int table;
    } titles[] = {{"GPU instance profiles:", T_LGIP}, {"GPU instances:", T_OTHER},
                  {"Compute instance profiles:", T_OTHER}, {"Compute instances:", T_OTHER},
                  {"MIG devices:", T_OTHER}, {"Processes:", T_OTHER},
                  {"NVIDIA-SMI", T_NONE}, {"GPU Name ID Instances", T_LGIP}};
    for (size_t i = 0; i < sizeof(titles) / sizeof(titles[0]); i++)
        if (tok_words(l, 1, titles[i].words))
            return titles[i].table;
    return -1;
}

/* A line that starts with '|' or '+'. */
static ts_status scan_table_line(struct scan *s, const struct line *l)
{
    int kind = table_title(l), gpu, taken;
    if (kind >= 0) {
        s->table = kind;
        s->pending_gpu = -1;
        return TS_OK;
    }
    if (s->table == T_LGIP)
        return lgip_filler(l) ? TS_OK : scan_lgip_row(s, l, 1, &taken);
    if (s->table == T_OTHER)
        return TS_OK;
    int k = header_gpu_row(l, &gpu);
    if (k > 0)
        return scan_header_gpu(s, l, gpu, k);
    if (s->pending_gpu >= 0) {
        gpu = s->pending_gpu;
        s->pending_gpu = -1;
        return scan_header_memory(s, l, gpu);
    }
    ts_status st = scan_lgip_row(s, l, 0, &taken);
    if (taken)
        s->table = T_LGIP;
    return st;
}

static ts_status scan_line(struct scan *s, struct line *l)
{
    tokenize(l);
    if (l->n > 0 && (l->t[0].s[0] == '|' || l->t[0].s[0] == '+'))
        return scan_table_line(s, l);
    s->table = T_NONE;
    s->pending_gpu = -1;
    if (tok_is(l, 0, "GPU") && tok_is(l, 2, "Profile"))
        return scan_lgipp(s, l);
    if (tok_is(l, 0, "GPU"))
        return scan_list(s, l);
    return TS_OK;
}

/* Copy one line (without "\r\n") into l, refusing overlong and binary lines. */
static ts_status read_line(struct scan *s, const char *p, size_t n, struct line *l)
{
    if (n > 0 && p[n - 1] == '\r')
        n--;
    struct where w = {s->file, s->line, IMP_LINE_MAX + 1};
    if (n > IMP_LINE_MAX)
        return fail_at(s->err, TS_TOO_LARGE, s->im, w,
                       "line is longer than %d bytes: expected nvidia-smi output", IMP_LINE_MAX);
    const char *nul = memchr(p, '\0', n);
    if (nul) {
        w.col = (int)(nul - p) + 1;
        return fail_at(s->err, TS_INVALID, s->im, w,
                       "binary data (a NUL byte): expected nvidia-smi text output");
    }
    memcpy(l->raw, p, n);
    l->raw[n] = '\0';
    l->len = (int)n;
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

/* ---- a NodeInventory document (tessera agent inventory -o json) --------- */

/* Profiles in -lgip's order: compute slices, then memory, then ID. */
static int before(const struct inv_profile *a, const struct inv_profile *b)
{
    if (a->slices != b->slices)
        return a->slices < b->slices;
    return a->memory_mib != b->memory_mib ? a->memory_mib < b->memory_mib : a->id < b->id;
}

/* One profile as -lgip and -lgipp would show it (GiB printed as nvidia-smi
 * prints MiB / 1024, two decimals). */
static ts_status import_inv_profile(struct scan *s, const struct inv_gpu *g,
                             const struct inv_profile *p)
{
    struct iprof *ip = NULL;
    char gib[32];
    struct where w = {s->file, 0, 0};
    ts_status st = prof_get(s, g->index, p->id, w, &ip);
    if (st != TS_OK)
        return st;
    snprintf(gib, sizeof gib, "%.2f", (double)p->memory_mib / 1024.0);
    if (!parse_profile_name(p->name, ip->name, &ip->compute) || !parse_centi(gib, &ip->cgib))
        return fail_at(s->err, TS_INVALID, s->im, w, "GPU %d: profile ID %d ('%s', %lld MiB) is "
                       "not a MIG profile tessera can import", g->index, p->id, p->name,
                       p->memory_mib);
    ip->have_row = ip->have_place = 1;
    ip->row_at = ip->place_at = w;
    ip->row_seq = s->im->row_seq++;
    ip->max_count = p->max_count;
    ip->sms = p->sms;
    for (int k = 0; k < p->npl; k++) {
        ip->starts |= (uint32_t)1 << p->pl[k].start;
        ip->size = p->pl[k].size;
    }
    if (s->im->first_lgip_gpu < 0)
        s->im->first_lgip_gpu = g->index;
    return TS_OK;
}

static ts_status import_inv_gpu(struct scan *s, const struct inv_gpu *g)
{
    struct igpu *ig;
    struct where w = {s->file, 0, 0};
    ts_status st = gpu_get(s, g->index, w, &ig);
    const struct inv_profile *order[INV_PROFILES_MAX];
    if (st != TS_OK)
        return st;
    snprintf(ig->product, sizeof ig->product, "%s", g->name);
    ig->product_from_l = 1;
    ig->product_at = w;
    ig->mem_mib = (long)g->memory_mib;
    ig->mem_at = w;
    for (int i = 0; i < g->nprof; i++) {
        int k = i;
        while (k > 0 && before(&g->prof[i], order[k - 1])) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = &g->prof[i];
    }
    for (int i = 0; st == TS_OK && i < g->nprof; i++)
        st = import_inv_profile(s, g, order[i]);
    return st;
}

static ts_status add_inventory(struct scan *s, const char *text, size_t len, const char *file)
{
    struct inv_node *inv = malloc(sizeof *inv);
    if (!inv)
        return ts_err(s->err, TS_NOMEM, "out of memory");
    ts_status st = inv_parse(text, len, file, inv, s->err);
    for (int i = 0; st == TS_OK && i < inv->ngpu; i++)
        st = import_inv_gpu(s, &inv->gpu[i]);
    free(inv);
    return st;
}

ts_status cat_import_add(struct cat_import *im, const char *text, size_t len, const char *file,
                         struct ts_error *err)
{
    if (!im || (!text && len))
        return ts_err(err, TS_INTERNAL, "cat_import_add: no importer or no text");
    ts_status st = add_file(im, text, len, file, err);
    struct scan s = {im, (int)im->nfiles - 1, 0, T_NONE, -1, err};
    if (st == TS_OK && inv_looks_json(text, len))
        return add_inventory(&s, text, len, file);
    struct line l;
    for (size_t pos = 0; st == TS_OK && pos < len;) {
        const char *p = text + pos;
        const char *nl = memchr(p, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - p) : len - pos;
        pos += n + (nl != NULL);
        s.line++;
        st = read_line(&s, p, n, &l);
        if (st == TS_OK)
            st = scan_line(&s, &l);
    }
    return st;
}

/* ---- the public interface: the GpuModel document ----------------------- */

/* What cat_import_finish derives for one GPU before it writes anything. */
struct model {
    const struct igpu *g;
    char name[64];
    const char *arch;
    int grid, compute, sms;
    long card_cgib;
    const struct iprof *order[IMP_PROFILES_MAX];   /* -lgip rows, in -lgip order */
    size_t n;
};

/* Errors about the input as a whole name the file when there is one. */
static struct where input_where(const struct cat_import *im)
{
    return (struct where){im->nfiles == 1 ? 0 : -1, 0, 0};
}

static ts_status pick_gpu(const struct cat_import *im, int gpu, struct model *m,
                          struct ts_error *err)
{
    if (im->first_lgip_gpu < 0)
        return fail_at(err, TS_INVALID, im, input_where(im),
                       "no GPU instance profile table (nvidia-smi mig -lgip output) in the input");
    int want = gpu >= 0 ? gpu : im->first_lgip_gpu;
    for (size_t i = 0; i < im->ngpus; i++)
        for (size_t j = 0; im->gpus[i]->index == want && j < im->gpus[i]->nprof; j++)
            if (im->gpus[i]->prof[j].have_row) {
                m->g = im->gpus[i];
                return TS_OK;
            }
    return fail_at(err, TS_NOT_FOUND, im, input_where(im),
                   "no nvidia-smi mig -lgip rows for GPU %d (there are some for GPU %d)", want,
                   im->first_lgip_gpu);
}

static int highest_start(uint32_t starts)
{
    int u = TS_MIG_GRID_MAX - 1;
    while (u > 0 && !(starts & ((uint32_t)1 << u)))
        u--;
    return u;
}

/* Every -lgip row has placements and every -lgipp line a row; m->order
 * gets the rows in the order nvidia-smi printed them. */
static ts_status collect_profiles(const struct cat_import *im, struct model *m,
                                  struct ts_error *err)
{
    const struct igpu *g = m->g;
    for (size_t i = 0; i < g->nprof; i++) {
        const struct iprof *p = &g->prof[i];
        if (!p->have_row)
            return fail_at(err, TS_INVALID, im, p->place_at,
                           "profile ID %d of GPU %d has placements but no nvidia-smi mig -lgip "
                           "row: add the -lgip table", p->id, g->index);
        size_t k = m->n++;
        while (k > 0 && m->order[k - 1]->row_seq > p->row_seq) {
            m->order[k] = m->order[k - 1];
            k--;
        }
        m->order[k] = p;
    }
    for (size_t i = 0; i < m->n; i++)
        if (!m->order[i]->have_place)
            return fail_at(err, TS_INVALID, im, m->order[i]->row_at,
                           "no placements for profile ID %d (%s): add the output of nvidia-smi "
                           "mig -lgipp", m->order[i]->id, m->order[i]->name);
    return TS_OK;
}

/* Names unique, memory present; grid, compute slices and SMs of the card. */
static ts_status shape_model(const struct cat_import *im, struct model *m, struct ts_error *err)
{
    for (size_t i = 0; i < m->n; i++) {
        const struct iprof *p = m->order[i];
        for (size_t j = 0; j < i; j++)
            if (strcmp(m->order[j]->name, p->name) == 0)
                return fail_at(err, TS_INVALID, im, p->row_at,
                               "profile name '%s' is both ID %d and ID %d", p->name,
                               m->order[j]->id, p->id);
        if (p->cgib < 1)
            return fail_at(err, TS_INVALID, im, p->row_at, "profile %s has no memory (0 GiB)",
                           p->name);
        int end = highest_start(p->starts) + p->size;
        m->grid = end > m->grid ? end : m->grid;
        if (p->compute > m->compute) {
            m->compute = p->compute;
            m->sms = p->sms;
        }
    }
    return TS_OK;
}

/* Product-name words (split on blanks and '-') that tell the architecture. */
static const char *arch_of(const char *product)
{
    static const struct {
        const char *word, *arch;
    } words[] = {{"A100", "ampere"},     {"A800", "ampere"},     {"A30", "ampere"},
                 {"H100", "hopper"},     {"H800", "hopper"},     {"H200", "hopper"},
                 {"H20", "hopper"},      {"GH200", "hopper"},    {"B200", "blackwell"},
                 {"B300", "blackwell"},  {"GB200", "blackwell"}, {"GB300", "blackwell"},
                 {"Blackwell", "blackwell"}};
    char buf[IMP_PRODUCT_MAX];
    snprintf(buf, sizeof(buf), "%s", product);
    for (char *w = buf, *end; *w; w = end) {
        end = w + strcspn(w, " -");
        if (*end)
            *end++ = '\0';
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
            if (strcasecmp(w, words[i].word) == 0)
                return words[i].arch;
    }
    return NULL;
}

/* "NVIDIA H100 PCIe" -> "nvidia-h100-pcie" (a DNS label, at most 63). */
static void slug(const char *s, char *out, size_t size)
{
    size_t n = 0;
    for (; *s && n + 1 < size && n < 63; s++) {
        char c = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
            out[n++] = c;
        else if (n > 0 && out[n - 1] != '-')
            out[n++] = '-';
    }
    while (n > 0 && out[n - 1] == '-')
        n--;
    out[n] = '\0';
}

static ts_status name_model(const struct cat_import *im, const char *name, struct model *m,
                            struct ts_error *err)
{
    const struct igpu *g = m->g;
    if (!g->product[0])
        return fail_at(err, TS_INVALID, im, input_where(im),
                       "no product name for GPU %d: add the output of nvidia-smi -L", g->index);
    m->arch = arch_of(g->product);
    if (!m->arch)
        return fail_at(err, TS_INVALID, im, g->product_at,
                       "cannot tell the architecture of '%s': tessera knows A100, A800, A30 "
                       "(ampere), H100, H800, H200, H20, GH200 (hopper), B200, B300, GB200, "
                       "GB300 and RTX PRO Blackwell (blackwell)", g->product);
    if (name) {
        snprintf(m->name, sizeof(m->name), "%s", name);
        return TS_OK;
    }
    slug(g->product, m->name, sizeof(m->name));
    if (!spec_is_dns_label(m->name))
        return fail_at(err, TS_INVALID, im, g->product_at,
                       "cannot make a catalog name from '%s': give one (--name)", g->product);
    return TS_OK;
}

/* Card memory: the header's total, else the largest profile's. */
static ts_status card_memory(const struct cat_import *im, struct model *m, struct ts_error *err)
{
    const struct igpu *g = m->g;
    struct where w = g->mem_mib ? g->mem_at : input_where(im);
    m->card_cgib = (g->mem_mib * 100 + 512) / 1024;
    for (size_t i = 0; !g->mem_mib && i < m->n; i++)
        if (m->order[i]->cgib > m->card_cgib)
            m->card_cgib = m->order[i]->cgib;
    if (m->card_cgib < 100)
        return fail_at(err, TS_INVALID, im, w, "GPU %d has %ld.%02ld GiB, less than 1 GiB",
                       g->index, m->card_cgib / 100, m->card_cgib % 100);
    for (size_t i = 0; i < m->n; i++)
        if (m->order[i]->cgib > m->card_cgib)
            return fail_at(err, TS_INVALID, im, m->order[i]->row_at,
                           "profile %s has %ld.%02ld GiB, more than the card's %ld.%02ld GiB",
                           m->order[i]->name, m->order[i]->cgib / 100, m->order[i]->cgib % 100,
                           m->card_cgib / 100, m->card_cgib % 100);
    return TS_OK;
}

static void emit_quoted(struct ts_sbuf *y, const char *s)
{
    ts_sbuf_puts(y, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            ts_sbuf_puts(y, "\\");
        ts_sbuf_add(y, s, 1);
    }
    ts_sbuf_puts(y, "\"");
}

static void emit_profile(struct ts_sbuf *y, const struct iprof *p)
{
    ts_sbuf_printf(y,
                   "  - {name: %s, id: %d, computeSlices: %d, memoryGiB: %ld.%02ld, sms: %d, "
                   "maxCount: %d, placements: \"{",
                   p->name, p->id, p->compute, p->cgib / 100, p->cgib % 100, p->sms,
                   p->max_count);
    const char *sep = "";
    for (int u = 0; u < TS_MIG_GRID_MAX; u++)
        if (p->starts & ((uint32_t)1 << u)) {
            ts_sbuf_printf(y, "%s%d", sep, u);
            sep = ",";
        }
    ts_sbuf_printf(y, "}:%d\"}\n", p->size);
}

static void emit_model(const struct model *m, struct ts_sbuf *y)
{
    ts_sbuf_printf(y,
                   "# GpuModel imported by 'tessera catalog import' from the nvidia-smi output\n"
                   "# of GPU %d (%s). Profiles are keyed by ID; names are display\n"
                   "# only. sms is the full-card MIG profile's; memoryGiB the card's.\n---\n"
                   "apiVersion: tessera.dev/v1alpha1\nkind: GpuModel\nmetadata: {name: %s}\n"
                   "spec:\n  displayName: ",
                   m->g->index, m->g->product, m->name);
    emit_quoted(y, m->g->product);
    ts_sbuf_puts(y, "\n  productNames: [");
    emit_quoted(y, m->g->product);
    ts_sbuf_printf(y,
                   "]\n  memoryGiB: %ld.%02ld\n  sms: %d\n  architecture: %s\n  mig: true\n"
                   "  migGrid: %d\n  computeSlices: %d\n  profiles:\n",
                   m->card_cgib / 100, m->card_cgib % 100, m->sms, m->arch, m->grid, m->compute);
    for (size_t i = 0; i < m->n; i++)
        emit_profile(y, m->order[i]);
}

ts_status cat_import_finish(struct cat_import *im, const char *name, int gpu,
                            struct ts_sbuf *yaml, struct ts_error *err)
{
    if (!im || !yaml)
        return ts_err(err, TS_INTERNAL, "cat_import_finish: no importer or no output");
    if (name && !spec_is_dns_label(name))
        return ts_err(err, TS_USAGE,
                      "catalog name '%.80s' must be lowercase letters, digits and '-' "
                      "(at most 63)", name);
    struct model m = {0};
    ts_status st = pick_gpu(im, gpu, &m, err);
    if (st == TS_OK)
        st = collect_profiles(im, &m, err);
    if (st == TS_OK)
        st = shape_model(im, &m, err);
    if (st == TS_OK)
        st = name_model(im, name, &m, err);
    if (st == TS_OK)
        st = card_memory(im, &m, err);
    if (st != TS_OK)
        return st;
    emit_model(&m, yaml);
    st = ts_sbuf_status(yaml);
    return st == TS_OK ? TS_OK : ts_err(err, st, "the GpuModel document is too large");
}
