/*
 * import_model.c - from what the importer read to one GpuModel (see
 * import.h): pick the GPU, put its profiles in -lgip's order and check them
 * as the catalog loader would (every row placed, names unique, memory
 * within the card's), tell the architecture from the product name, name
 * the model, and hand it to import_yaml.c to write.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "catalog/import_int.h"
#include "spec/schema.h"

/* Errors about the input as a whole name the file when there is one. */
static struct where input_where(const struct cat_import *im)
{
    return (struct where){im->nfiles == 1 ? 0 : -1, 0, 0};
}

static ts_status pick_gpu(const struct cat_import *im, int gpu, struct model *m,
                          struct ts_error *err)
{
    if (im->first_lgip_gpu < 0)
        return cat__fail_at(err, TS_INVALID, im, input_where(im),
                            "no GPU instance profile table (nvidia-smi mig -lgip output) in the "
                            "input");
    int want = gpu >= 0 ? gpu : im->first_lgip_gpu;
    for (size_t i = 0; i < im->ngpus; i++)
        for (size_t j = 0; im->gpus[i]->index == want && j < im->gpus[i]->nprof; j++)
            if (im->gpus[i]->prof[j].have_row) {
                m->g = im->gpus[i];
                return TS_OK;
            }
    return cat__fail_at(err, TS_NOT_FOUND, im, input_where(im),
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

/* -lgip's order, whatever the order of the files or of the rows in them:
 * compute slices, then memory, then profile ID (as import_inventory.c). */
static int row_before(const struct iprof *a, const struct iprof *b)
{
    if (a->compute != b->compute)
        return a->compute < b->compute;
    return a->cgib != b->cgib ? a->cgib < b->cgib : a->id < b->id;
}

/* Every -lgip row has placements and every -lgipp line a row; m->order
 * gets the rows in the order nvidia-smi prints them (row_before). */
static ts_status collect_profiles(const struct cat_import *im, struct model *m,
                                  struct ts_error *err)
{
    const struct igpu *g = m->g;
    for (size_t i = 0; i < g->nprof; i++) {
        const struct iprof *p = &g->prof[i];
        if (p->have_lgi && (!p->have_row || strcmp(p->lgi_name, p->name)))
            return cat__fail_at(err, TS_INVALID, im, p->lgi_at,
                                "nvidia-smi mig -lgi names profile ID %d (%s), which GPU %d's "
                                "-lgip table %s: is this the output of another card?",
                                p->id, p->lgi_name, g->index,
                                p->have_row ? "calls otherwise" : "does not have");
        if (!p->have_row)
            return cat__fail_at(err, TS_INVALID, im, p->place_at,
                                "profile ID %d of GPU %d has placements but no nvidia-smi mig "
                                "-lgip row: add the -lgip table",
                                p->id, g->index);
        size_t k = m->n++;
        while (k > 0 && row_before(p, m->order[k - 1])) {
            m->order[k] = m->order[k - 1];
            k--;
        }
        m->order[k] = p;
    }
    for (size_t i = 0; i < m->n; i++)
        if (!m->order[i]->have_place)
            return cat__fail_at(err, TS_INVALID, im, m->order[i]->row_at,
                                "no placements for profile ID %d (%s): add the output of "
                                "nvidia-smi mig -lgipp",
                                m->order[i]->id, m->order[i]->name);
    return TS_OK;
}

/* Names unique, memory present; grid, compute slices and SMs of the card. */
static ts_status shape_model(const struct cat_import *im, struct model *m, struct ts_error *err)
{
    for (size_t i = 0; i < m->n; i++) {
        const struct iprof *p = m->order[i];
        for (size_t j = 0; j < i; j++)
            if (strcmp(m->order[j]->name, p->name) == 0)
                return cat__fail_at(err, TS_INVALID, im, p->row_at,
                                    "profile name '%s' is both ID %d and ID %d", p->name,
                                    m->order[j]->id, p->id);
        if (p->cgib < 1)
            return cat__fail_at(err, TS_INVALID, im, p->row_at, "profile %s has no memory (0 GiB)",
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
    } words[] = {{"A100", "ampere"},        {"A800", "ampere"},     {"A30", "ampere"},
                 {"H100", "hopper"},        {"H800", "hopper"},     {"H200", "hopper"},
                 {"H20", "hopper"},         {"GH200", "hopper"},    {"B200", "blackwell"},
                 {"B300", "blackwell"},     {"GB200", "blackwell"}, {"GB300", "blackwell"},
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
        return cat__fail_at(err, TS_INVALID, im, input_where(im),
                            "no product name for GPU %d: add the output of nvidia-smi -L",
                            g->index);
    m->arch = arch_of(g->product);
    if (!m->arch)
        return cat__fail_at(err, TS_INVALID, im, g->product_at,
                            "cannot tell the architecture of '%s': tessera knows A100, A800, A30 "
                            "(ampere), H100, H800, H200, H20, GH200 (hopper), B200, B300, GB200, "
                            "GB300 and RTX PRO Blackwell (blackwell)",
                            g->product);
    if (name) {
        snprintf(m->name, sizeof(m->name), "%s", name);
        return TS_OK;
    }
    slug(g->product, m->name, sizeof(m->name));
    if (!spec_is_dns_label(m->name))
        return cat__fail_at(err, TS_INVALID, im, g->product_at,
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
        return cat__fail_at(err, TS_INVALID, im, w, "GPU %d has %ld.%02ld GiB, less than 1 GiB",
                            g->index, m->card_cgib / 100, m->card_cgib % 100);
    for (size_t i = 0; i < m->n; i++)
        if (m->order[i]->cgib > m->card_cgib)
            return cat__fail_at(err, TS_INVALID, im, m->order[i]->row_at,
                                "profile %s has %ld.%02ld GiB, more than the card's "
                                "%ld.%02ld GiB",
                                m->order[i]->name, m->order[i]->cgib / 100, m->order[i]->cgib % 100,
                                m->card_cgib / 100, m->card_cgib % 100);
    return TS_OK;
}

ts_status cat_import_finish(struct cat_import *im, const char *name, int gpu, struct ts_sbuf *yaml,
                            struct ts_error *err)
{
    if (!im || !yaml)
        return ts_err(err, TS_INTERNAL, "cat_import_finish: no importer or no output");
    if (name && !spec_is_dns_label(name))
        return ts_err(err, TS_USAGE,
                      "catalog name '%.80s' must be lowercase letters, digits and '-' "
                      "(at most 63)",
                      name);
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
    st = cat__emit_model(&m, yaml);
    return st == TS_OK ? TS_OK : ts_err(err, st, "the GpuModel document is too large");
}
