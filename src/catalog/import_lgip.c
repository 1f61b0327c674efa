/*
 * import_lgip.c - the MIG profile tables (see import_int.h): rows of
 * `nvidia-smi mig -lgip` (narrow or wide layout) give each profile's name,
 * compute slices, memory, SMs and max count; lines of `nvidia-smi mig
 * -lgipp` its placements. Both are stored per (GPU, profile ID); a second
 * sight of one must agree with the first, or the error names both places.
 */
#include <stdio.h>
#include <string.h>
#include "catalog/import_int.h"

/* ---- nvidia-smi mig -lgip ---------------------------------------------- */

/* One -lgip profile row, parsed before it is stored. */
struct lgip_row {
    int gpu, id, free, total, sms, compute, id_tok;
    long cgib;
    char name[IMP_NAME_MAX];
};

static int parse_free_total(const char *s, int *free_n, int *total)
{
    long f, t;
    const char *p;
    if (!cat__parse_uint(s, CAT_PROFILE_COUNT_MAX, &f, &p) || *p != '/' ||
        !cat__parse_uint(p + 1, CAT_PROFILE_COUNT_MAX, &t, NULL) || t < 1 || f > t)
        return 0;
    *free_n = (int)f;
    *total = (int)t;
    return 1;
}

/* Token index of the first problem in a -lgip row (-1: none); what names
 * what was expected there. */
static int check_lgip_row(const struct line *l, struct lgip_row *r, const char **what)
{
    static const char *const expect[] = {"'|'",
                                         "a GPU index",
                                         "'MIG'",
                                         "a profile name like 3g.40gb",
                                         "a profile ID (0-255)",
                                         "free/total counts like 7/7 (total 1-32)",
                                         "memory GiB like 19.50",
                                         "P2P 'Yes' or 'No'",
                                         "an SM count",
                                         "a count or '|'"};
    int ok[10] = {cat__tok_is(l, 0, "|"),
                  cat__tok_int(l, 1, IMP_GPU_INDEX_MAX, &r->gpu),
                  cat__tok_is(l, 2, "MIG"),
                  cat__parse_profile_name(cat__tok_s(l, 3), r->name, &r->compute),
                  cat__tok_int(l, 4, CAT_PROFILE_ID_MAX, &r->id),
                  parse_free_total(cat__tok_s(l, 5), &r->free, &r->total),
                  cat__parse_centi(cat__tok_s(l, 6), &r->cgib),
                  cat__tok_is(l, 7, "No") || cat__tok_is(l, 7, "Yes"),
                  cat__tok_int(l, 8, CAT_SMS_MAX, &r->sms),
                  1};
    r->id_tok = 4;
    for (int i = 0; i < 10; i++)
        if (!ok[i] || i >= l->n) {
            *what = expect[i];
            return i;
        }
    for (int i = 9; i < l->n - 1; i++) {
        int v;
        if (!cat__tok_int(l, i, CAT_SMS_MAX, &v)) {
            *what = expect[9];
            return i;
        }
    }
    *what = "'|' at the end of the row";
    return cat__tok_is(l, l->n - 1, "|") && !l->overflow ? -1 : l->n - 1;
}

static void lgip_desc(const struct iprof *p, char *buf, size_t n)
{
    snprintf(buf, n, "%s, %d max, %ld.%02ld GiB, %d SMs", p->name, p->max_count, p->cgib / 100,
             p->cgib % 100, p->sms);
}

static ts_status store_lgip(struct scan *s, const struct line *l, const struct lgip_row *r)
{
    struct where w = cat__at(s, l, r->id_tok);
    struct iprof *p = NULL;
    ts_status st = cat__prof_get(s, r->gpu, r->id, w, &p);
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
        return cat__fail_at(s->err, TS_INVALID, s->im, w,
                            "conflicting rows for profile ID %d of GPU %d: %s here, %s at %s",
                            r->id, r->gpu, a, b,
                            cat__where_str(s->im, p->row_at, loc, sizeof(loc)));
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
ts_status cat__scan_lgip_row(struct scan *s, const struct line *l, int strict, int *taken)
{
    struct lgip_row r;
    const char *what;
    int bad = check_lgip_row(l, &r, &what);
    *taken = bad < 0;
    if (bad >= 0 && !strict)
        return TS_OK;
    if (bad >= 0)
        return cat__fail_at(s->err, TS_INVALID, s->im, cat__at(s, l, bad),
                            "malformed nvidia-smi mig -lgip row: expected %s, found %s%.40s%s",
                            what, bad < l->n ? "'" : "",
                            bad < l->n ? cat__tok_s(l, bad) : "end of line", bad < l->n ? "'" : "");
    return store_lgip(s, l, &r);
}

/* Rows of a -lgip table that carry no profile: borders, headers, and the
 * second row of each profile (CE JPEG OFA: only numbers). */
int cat__lgip_filler(const struct line *l)
{
    if (l->t[0].s[0] == '+' || (l->t[0].s[0] == '|' && l->n > 1 && l->t[1].s[0] == '='))
        return 1;
    if (cat__tok_words(l, 1, "GPU Name ID") || cat__tok_words(l, 1, "Free/Total"))
        return 1;
    int v;
    for (int i = 1; i < l->n - 1; i++)
        if (!cat__tok_int(l, i, CAT_SMS_MAX, &v))
            return 0;
    return l->n >= 3 && cat__tok_is(l, 0, "|") && cat__tok_is(l, l->n - 1, "|") && !l->overflow;
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
        if (!cat__parse_uint(p, 999, &v, &p) || v <= prev)
            return 0;
        *starts |= v < TS_MIG_GRID_MAX ? (uint32_t)1 << v : 0;
        prev = v;
    } while (*p++ == ',');
    if (p[-1] != '}' || *p++ != ':' || !cat__parse_uint(p, 999, &sz, NULL) || sz < 1)
        return 0;
    *size = (int)sz;
    return prev + sz <= TS_MIG_GRID_MAX ? 1 : -1;
}

/* Token index of the placement spec in a -lgipp line, or -1. */
static int lgipp_spec_tok(const struct line *l)
{
    if (cat__tok_is(l, 5, "Placements:") || cat__tok_is(l, 5, "Placement:"))
        return 6;
    if ((cat__tok_is(l, 5, "Placements") || cat__tok_is(l, 5, "Placement")) &&
        cat__tok_is(l, 6, ":"))
        return 7;
    return -1;
}

static ts_status store_placement(struct scan *s, const struct line *l, int gpu, int id,
                                 uint32_t starts, int size)
{
    struct where w = cat__at(s, l, 4);
    struct iprof *p = NULL;
    ts_status st = cat__prof_get(s, gpu, id, w, &p);
    if (st != TS_OK)
        return st;
    if (p->have_place && (p->starts != starts || p->size != size)) {
        char loc[TS_PATH_MAX + 16];
        return cat__fail_at(s->err, TS_INVALID, s->im, w,
                            "conflicting placements for profile ID %d of GPU %d: this line "
                            "differs from %s",
                            id, gpu, cat__where_str(s->im, p->place_at, loc, sizeof(loc)));
    }
    if (!p->have_place)
        p->place_at = w;
    p->have_place = 1;
    p->starts = starts;
    p->size = size;
    return TS_OK;
}

/* Token index of the first problem in a -lgipp line (-1: none), with what
 * was expected there; *good is parse_placement's answer. */
static int check_lgipp(const struct line *l, int *gpu, int *id, uint32_t *starts, int *size,
                       int *good, const char **what)
{
    int spec = lgipp_spec_tok(l);
    if (!cat__tok_int(l, 1, IMP_GPU_INDEX_MAX, gpu))
        return *what = "a GPU index", 1;
    if (!cat__tok_is(l, 3, "ID"))
        return *what = "'ID'", 3;
    if (!cat__tok_int(l, 4, CAT_PROFILE_ID_MAX, id))
        return *what = "a profile ID (0-255)", 4;
    if (spec < 0)
        return *what = "'Placements:'", 5;
    if ((*good = parse_placement(cat__tok_s(l, spec), starts, size)) == 0)
        return *what = "placements like {0,2,4}:2 (ascending starts, ':', the size)", spec;
    if (l->n != spec + 1 || l->overflow)
        return *what = "the end of the line", spec + 1;
    return -1;
}

/* "GPU  0 Profile ID  9 Placements: {0,4}:4" (or "Placement : {0}:8"). */
ts_status cat__scan_lgipp(struct scan *s, const struct line *l)
{
    int gpu, id, size = 0, good = 0;
    uint32_t starts = 0;
    const char *what = NULL;
    int bad = check_lgipp(l, &gpu, &id, &starts, &size, &good, &what);
    if (bad >= 0)
        return cat__fail_at(s->err, TS_INVALID, s->im, cat__at(s, l, bad),
                            "malformed nvidia-smi mig -lgipp line: expected %s, found '%.40s'",
                            what, cat__tok_s(l, bad));
    int spec = lgipp_spec_tok(l);
    if (good < 0)
        return cat__fail_at(s->err, TS_INVALID, s->im, cat__at(s, l, spec),
                            "placement %.40s runs past %d units, the most a card can have",
                            cat__tok_s(l, spec), TS_MIG_GRID_MAX);
    return store_placement(s, l, gpu, id, starts, size);
}
