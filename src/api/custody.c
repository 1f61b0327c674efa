/*
 * custody.c - the ledger's current holder of each card and MIG instance of
 * the plan (/api/v1/plan's `uuid` and `holder`): a plan instance is matched
 * to the current custody entry of the same node, profile and placement
 * ("start:size", as ledger_inventory records it), and its card to that
 * entry's GPU. Ambiguous or absent matches stay null. A card whose node's
 * NodeInventory serve was given (--inventory) takes its UUIDs from there by
 * index and placement, and the holders of those UUIDs.
 */
#include "api/internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "inventory/inventory.h"
#include "ledger/ledger.h"
#include "util/text.h"

/* The current custody entries (latest non-observed per device, ts <= now). */
struct cur {
    const struct ledger_row **row;
    size_t n;
};

/* The slot of device (gpu, instance) in seen (a map of GPU UUID to a map of
 * instance UUID to slot), made as c->n when new; -1 when out of memory. */
static json_int_t slot_of(json_t *seen, const struct ledger_row *e, size_t n)
{
    json_t *g = json_object_get(seen, e->gpu_uuid);
    if (!g && json_object_set_new(seen, e->gpu_uuid, g = json_object()) != 0)
        return -1;
    json_t *slot = json_object_get(g, e->instance_uuid);
    if (slot)
        return json_integer_value(slot);
    return json_object_set_new(g, e->instance_uuid, json_integer((json_int_t)n)) ? -1
                                                                                 : (json_int_t)n;
}

/* Latest custody entry per device; rows are in seq order. */
static int current(const struct ledger_list *l, int64_t now, struct cur *c)
{
    json_t *seen = json_object();
    c->row = calloc(l->n ? l->n : 1, sizeof(*c->row));
    c->n = 0;
    for (size_t i = 0; seen && c->row && i < l->n; i++) {
        const struct ledger_row *e = &l->rows[i];
        if (strcmp(e->source, "observed") == 0 || e->ts_ms > now)
            continue;
        json_int_t k = slot_of(seen, e, c->n);
        if (k < 0) /* out of memory, or a UUID jansson will not key: unknown */
            continue;
        if ((size_t)k == c->n)
            c->row[c->n++] = e;
        else if (e->ts_ms >= c->row[k]->ts_ms)
            c->row[k] = e;
    }
    int ok = seen && c->row;
    json_decref(seen);
    return ok;
}

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

/* "start:size" of plan instance i. */
static void placement(const json_t *i, char pl[48])
{
    snprintf(pl, 48, "%lld:%lld", (long long)json_integer_value(json_object_get(i, "start")),
             (long long)json_integer_value(json_object_get(i, "size")));
}

/* 1 when entry e is where plan instance i of node would be (strict: of
 * the same tenant and workload too). */
static int fits(const struct ledger_row *e, const char *node, const json_t *i, int strict)
{
    char pl[48];
    placement(i, pl);
    if (strcmp(e->node, node) || !e->instance_uuid[0] || strcmp(e->placement, pl) ||
        strcmp(e->profile, str(i, "profile")))
        return 0;
    return !strict ||
           (!strcmp(e->tenant, str(i, "tenant")) && !strcmp(e->workload, str(i, "workload")));
}

/* 1 when plan instances i and j (on cards of one node) look alike. */
static int alike(const json_t *i, const json_t *j, int strict)
{
    char a[48], b[48];
    placement(i, a);
    placement(j, b);
    if (strcmp(a, b) || strcmp(str(i, "profile"), str(j, "profile")))
        return 0;
    return !strict || (!strcmp(str(i, "tenant"), str(j, "tenant")) &&
                       !strcmp(str(i, "workload"), str(j, "workload")));
}

/* Plan instances of node (in gpus) alike to i: 1 when i is told apart. */
static size_t twins(const json_t *gpus, const char *node, const json_t *i, int strict)
{
    size_t n = 0, k, m;
    const json_t *g, *j;
    json_array_foreach (gpus, k, g) {
        if (strcmp(str(g, "node"), node) == 0)
            json_array_foreach (json_object_get(g, "instances"), m, j)
                n += json_is_integer(json_object_get(j, "start")) && alike(i, j, strict);
    }
    return n;
}

/* The one entry fitting i (tenant and workload break ties); NULL if none,
 * or when the ledger cannot tell i from a like instance on another card of
 * the node (it records the GPU's UUID, not its index). */
static const struct ledger_row *match(const struct cur *c, const json_t *gpus, const char *node,
                                      const json_t *i)
{
    for (int strict = 0; strict < 2; strict++) {
        const struct ledger_row *hit = NULL;
        size_t n = 0;
        for (size_t k = 0; k < c->n; k++)
            if (fits(c->row[k], node, i, strict)) {
                hit = c->row[k];
                n++;
            }
        if (n <= 1 && twins(gpus, node, i, strict) == 1)
            return hit;
    }
    return NULL;
}

static json_t *holder(const struct ledger_row *e)
{
    char t[40];
    ledger_format_time(e->ts_ms, t);
    return json_pack("{s:o, s:o, s:s, s:I, s:s}", "tenant", ts_text_json(e->tenant), "workload",
                     ts_text_json(e->workload), "since", t, "seq", (json_int_t)e->seq, "source",
                     e->source);
}

static void set_pair(json_t *o, const char *uuid, const struct ledger_row *e)
{
    json_object_set_new(o, "uuid", uuid ? ts_text_json(uuid) : json_null());
    json_object_set_new(o, "holder", e ? holder(e) : json_null());
}

/* The whole-card entry of gpu uuid g (instance ""), NULL when none. */
static const struct ledger_row *card_entry(const struct cur *c, const char *g)
{
    for (size_t k = 0; k < c->n; k++)
        if (!c->row[k]->instance_uuid[0] && !strcmp(c->row[k]->gpu_uuid, g))
            return c->row[k];
    return NULL;
}

/* 1 when the ledger has a current MIG instance entry on gpu uuid u. */
static int has_mig(const struct cur *c, const char *u)
{
    for (size_t k = 0; k < c->n; k++)
        if (c->row[k]->instance_uuid[0] && !strcmp(c->row[k]->gpu_uuid, u))
            return 1;
    return 0;
}

/* A card without MIG: the node's one whole-GPU entry, when the node has
 * one such entry and one such card; else NULL. */
static const struct ledger_row *whole(const struct cur *c, const json_t *gpus, const char *node)
{
    const struct ledger_row *hit = NULL;
    size_t n = 0, cards = 0, k;
    const json_t *g;
    for (k = 0; k < c->n; k++)
        if (!c->row[k]->instance_uuid[0] && !strcmp(c->row[k]->node, node) &&
            !has_mig(c, c->row[k]->gpu_uuid))
            hit = c->row[k], n++;
    json_array_foreach (gpus, k, g)
        cards += !strcmp(str(g, "node"), node) &&
                 !json_is_integer(
                     json_object_get(json_array_get(json_object_get(g, "instances"), 0), "start"));
    return n == 1 && cards == 1 ? hit : NULL;
}

/* The current entry of instance uuid u, NULL when none. */
static const struct ledger_row *instance_entry(const struct cur *c, const char *u)
{
    for (size_t k = 0; k < c->n; k++)
        if (!strcmp(c->row[k]->instance_uuid, u))
            return c->row[k];
    return NULL;
}

/* The inventory's GPU of plan card g (same node and index), NULL if none. */
static const struct inv_gpu *inv_card(const struct api_state *s, const json_t *g)
{
    json_t *index = json_object_get(g, "index");
    for (size_t k = 0; json_is_integer(index) && k < s->ninv; k++)
        if (!strcmp(s->inv[k].node, str(g, "node")))
            return inv_gpu_at(&s->inv[k], (int)json_integer_value(index));
    return NULL;
}

/* The MIG device UUID of the GPU instance at plan instance i's placement,
 * NULL when the card has none there (or no compute instance). */
static const char *inv_instance(const struct inv_gpu *ig, const json_t *i)
{
    json_t *start = json_object_get(i, "start"), *size = json_object_get(i, "size");
    for (int k = 0; json_is_integer(start) && k < ig->ngi; k++) {
        const struct inv_gi *gi = &ig->gi[k];
        if (gi->pl.start == json_integer_value(start) && gi->pl.size == json_integer_value(size))
            return gi->nci && gi->ci[0].uuid[0] ? gi->ci[0].uuid : NULL;
    }
    return NULL;
}

/* A card the inventory knows: UUIDs by index and placement, holders by
 * UUID (no guessing from look-alike instances). */
static void inv_pairs(const struct cur *c, const struct inv_gpu *ig, json_t *g)
{
    json_t *i;
    size_t k;
    json_array_foreach (json_object_get(g, "instances"), k, i) {
        const char *u = inv_instance(ig, i);
        set_pair(i, u, u ? instance_entry(c, u) : NULL);
    }
    set_pair(g, ig->uuid, card_entry(c, ig->uuid));
}

static void card(const struct api_state *s, const struct cur *c, const json_t *gpus, json_t *g)
{
    const struct inv_gpu *ig = inv_card(s, g);
    if (ig) {
        inv_pairs(c, ig, g);
        return;
    }
    const char *node = str(g, "node"), *gpu = NULL;
    int mixed = 0;
    json_t *inst = json_object_get(g, "instances"), *i;
    size_t k;
    json_array_foreach (inst, k, i) {
        const struct ledger_row *e = json_is_integer(json_object_get(i, "start"))
                                         ? match(c, gpus, node, i)
                                         : NULL;
        set_pair(i, e ? e->instance_uuid : NULL, e);
        if (e && gpu && strcmp(gpu, e->gpu_uuid))
            mixed = 1;
        if (e && !gpu)
            gpu = e->gpu_uuid;
    }
    gpu = mixed ? NULL : gpu;
    const struct ledger_row *w = gpu ? card_entry(c, gpu) : NULL;
    json_t *first = json_array_get(inst, 0);
    if (!gpu && first && !json_is_integer(json_object_get(first, "start"))) {
        w = whole(c, gpus, node);
        gpu = w ? w->gpu_uuid : NULL;
    }
    set_pair(g, gpu, w);
}

void api__plan_custody(const struct api_state *s, json_t *doc)
{
    struct store *st = NULL;
    struct ledger_list l = {0};
    struct cur c = {NULL, 0};
    struct ts_error e = {0};
    if (s->db_url && store_open_existing(s->db_url, &st, &e) == TS_OK &&
        ledger_history(st, NULL, INT64_MIN, INT64_MAX, &l, &e) == TS_OK)
        current(&l, s->now_ms, &c);
    json_t *gpus = json_object_get(doc, "gpus"), *g;
    size_t k;
    json_array_foreach (gpus, k, g)
        card(s, &c, gpus, g);
    free(c.row);
    ledger_list_free(&l);
    if (st)
        store_close(st);
}
