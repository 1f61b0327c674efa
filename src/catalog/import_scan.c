/*
 * import_scan.c - which output a line of the importer's input belongs to
 * (see import_int.h), and the product name and card memory it can give:
 * `nvidia-smi -L` lines (read by inventory/smi.h, the one -L parser) and
 * the GPU rows of the `nvidia-smi` header table. Table titles switch the
 * table being read; lines of tables tessera does not read are skipped.
 */
#include <stdio.h>
#include <string.h>
#include "catalog/import_int.h"
#include "inventory/smi.h"

/* ---- nvidia-smi -L and the nvidia-smi header table ---------------------- */

static ts_status check_product(struct scan *s, struct where w, const char *p, size_t n)
{
    if (n == 0 || n >= IMP_PRODUCT_MAX)
        return cat__fail_at(s->err, TS_INVALID, s->im, w, "product name must be 1 to %d characters",
                            IMP_PRODUCT_MAX - 1);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] > 0x7e)
            return cat__fail_at(s->err, TS_INVALID, s->im, w,
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
        st = cat__gpu_get(s, gpu, w, &g);
    if (st != TS_OK || (g->product[0] && !from_l))
        return st;
    if (g->product_from_l) {
        char loc[TS_PATH_MAX + 16];
        if (strlen(g->product) == n && memcmp(g->product, p, n) == 0)
            return TS_OK;
        return cat__fail_at(s->err, TS_INVALID, s->im, w, "GPU %d is '%.*s' here but '%s' at %s",
                            gpu, (int)n, p, g->product,
                            cat__where_str(s->im, g->product_at, loc, sizeof(loc)));
    }
    memcpy(g->product, p, n);
    g->product[n] = '\0';
    g->product_from_l = from_l;
    g->product_at = w;
    return TS_OK;
}

/* A line outside tables: "GPU 0: NVIDIA H100 PCIe (UUID: GPU-...)" gives
 * the product name; its MIG device lines are read (so a malformed one is
 * an error) but give nothing; other lines are skipped. */
static ts_status scan_list(struct scan *s, const struct line *l)
{
    struct inv_smi_line g;
    ts_status st = inv_smi_line(l->raw, (size_t)l->len, cat__file_name(s->im, s->file), s->line, &g,
                                s->err);
    if (st != TS_OK || g.kind != INV_SMI_GPU)
        return st;
    struct where w = {s->file, s->line, g.name_col};
    return store_product(s, g.index, w, g.name, strlen(g.name), 1);
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
    if (!cat__tok_is(l, 0, "|") || !cat__tok_int(l, 1, IMP_GPU_INDEX_MAX, gpu))
        return -1;
    while (k < l->n && !cat__tok_is(l, k, "|"))
        k++;
    if (k < 4 || !(cat__tok_is(l, k - 1, "On") || cat__tok_is(l, k - 1, "Off")) ||
        !is_bus_id(cat__tok_s(l, k + 1)))
        return -1;
    return k;
}

static ts_status scan_header_gpu(struct scan *s, const struct line *l, int gpu, int k)
{
    const char *name = l->raw + l->t[2].col - 1;
    const char *end = l->raw + l->t[k - 2].col - 1 + strlen(l->t[k - 2].s);
    s->pending_gpu = gpu;
    return store_product(s, gpu, cat__at(s, l, 2), name, (size_t)(end - name), 0);
}

/* The row under the GPU row: "| N/A 40C P0 51W / 350W | 0MiB / 81559MiB |".
 * Anything else there (N/A with MIG on some drivers) is skipped. */
static ts_status scan_header_memory(struct scan *s, const struct line *l, int gpu)
{
    int k = 1;
    long mib;
    const char *end;
    while (k < l->n && !cat__tok_is(l, k, "|"))
        k++;
    if (!cat__tok_is(l, k + 2, "/") ||
        !cat__parse_uint(cat__tok_s(l, k + 3), (CAT_MEMORY_GIB_MAX * 1024), &mib, &end) ||
        strcmp(end, "MiB") != 0 || mib == 0)
        return TS_OK;
    struct where w = cat__at(s, l, k + 3);
    struct igpu *g;
    ts_status st = cat__gpu_get(s, gpu, w, &g);
    if (st != TS_OK || g->mem_mib == mib)
        return st;
    if (g->mem_mib) {
        char loc[TS_PATH_MAX + 16];
        return cat__fail_at(s->err, TS_INVALID, s->im, w,
                            "GPU %d has %ld MiB here but %ld MiB at %s", gpu, mib, g->mem_mib,
                            cat__where_str(s->im, g->mem_at, loc, sizeof(loc)));
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
    } titles[] = {{"GPU instance profiles:", T_LGIP},
                  {"GPU instances:", T_LGI},
                  {"Compute instance profiles:", T_OTHER},
                  {"Compute instances:", T_OTHER},
                  {"MIG devices:", T_OTHER},
                  {"Processes:", T_OTHER},
                  {"NVIDIA-SMI", T_NONE},
                  {"GPU Name ID Instances", T_LGIP}};
    for (size_t i = 0; i < sizeof(titles) / sizeof(titles[0]); i++)
        if (cat__tok_words(l, 1, titles[i].words))
            return titles[i].table;
    return -1;
}

/* A row of `nvidia-smi mig -lgi`: "| 0 MIG 1g.6gb 14 3 0:1 |". The profile it
 * names must be one of the -lgip table's (checked when the model is made:
 * the tables may come in any order), so an -lgi output of another card is
 * an error, not ignored. Title, header and rule rows are skipped. */
static ts_status scan_lgi_row(struct scan *s, const struct line *l)
{
    int gpu, id;
    struct iprof *p;
    if (l->n < 7 || !cat__tok_int(l, 1, IMP_GPU_INDEX_MAX, &gpu) || !cat__tok_is(l, 2, "MIG") ||
        !cat__tok_int(l, 4, CAT_PROFILE_ID_MAX, &id))
        return TS_OK;
    ts_status st = cat__prof_get(s, gpu, id, cat__at(s, l, 4), &p);
    if (st != TS_OK || p->have_lgi)
        return st;
    p->have_lgi = 1;
    p->lgi_at = cat__at(s, l, 3);
    snprintf(p->lgi_name, sizeof p->lgi_name, "%s", cat__tok_s(l, 3));
    return TS_OK;
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
        return cat__lgip_filler(l) ? TS_OK : cat__scan_lgip_row(s, l, 1, &taken);
    if (s->table == T_LGI)
        return scan_lgi_row(s, l);
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
    ts_status st = cat__scan_lgip_row(s, l, 0, &taken);
    if (taken)
        s->table = T_LGIP;
    return st;
}

ts_status cat__scan_line(struct scan *s, struct line *l)
{
    cat__tokenize(l);
    if (l->n > 0 && (l->t[0].s[0] == '|' || l->t[0].s[0] == '+'))
        return scan_table_line(s, l);
    s->table = T_NONE;
    s->pending_gpu = -1;
    if (cat__tok_is(l, 0, "GPU") && cat__tok_is(l, 2, "Profile"))
        return cat__scan_lgipp(s, l);
    return scan_list(s, l);
}
