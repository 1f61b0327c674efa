/*
 * import_inventory.c - a NodeInventory JSON document (`tessera agent
 * inventory -o json`, docs/agent.md) as importer input (see import.h):
 * each GPU's name, memory and MIG profiles with their placements stand for
 * -L, the header table, -lgip and -lgipp, in -lgip's profile order and
 * with GiB as nvidia-smi prints them, so both inputs give the same model.
 */
#include <stdio.h>
#include <stdlib.h>
#include "catalog/import_int.h"
#include "inventory/inventory.h"

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
    ts_status st = cat__prof_get(s, g->index, p->id, w, &ip);
    if (st != TS_OK)
        return st;
    snprintf(gib, sizeof gib, "%.2f", (double)p->memory_mib / 1024.0);
    if (!cat__parse_profile_name(p->name, ip->name, &ip->compute) ||
        !cat__parse_centi(gib, &ip->cgib))
        return cat__fail_at(s->err, TS_INVALID, s->im, w,
                            "GPU %d: profile ID %d ('%s', %lld MiB) is not a MIG profile "
                            "tessera can import",
                            g->index, p->id, p->name, p->memory_mib);
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

/* g's profiles sorted into -lgip's order (insertion sort: a few dozen). */
static void lgip_order(const struct inv_gpu *g, const struct inv_profile **order)
{
    for (int i = 0; i < g->nprof; i++) {
        int k = i;
        while (k > 0 && before(&g->prof[i], order[k - 1])) {
            order[k] = order[k - 1];
            k--;
        }
        order[k] = &g->prof[i];
    }
}

static ts_status import_inv_gpu(struct scan *s, const struct inv_gpu *g)
{
    struct igpu *ig;
    struct where w = {s->file, 0, 0};
    ts_status st = cat__gpu_get(s, g->index, w, &ig);
    const struct inv_profile *order[INV_PROFILES_MAX];
    if (st != TS_OK)
        return st;
    snprintf(ig->product, sizeof ig->product, "%s", g->name);
    ig->product_from_l = 1;
    ig->product_at = w;
    ig->mem_mib = (long)g->memory_mib;
    ig->mem_at = w;
    lgip_order(g, order);
    for (int i = 0; st == TS_OK && i < g->nprof; i++)
        st = import_inv_profile(s, g, order[i]);
    return st;
}

ts_status cat__add_inventory(struct scan *s, const char *text, size_t len, const char *file)
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
