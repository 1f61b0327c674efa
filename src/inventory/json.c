/*
 * json.c - the NodeInventory document (docs/agent.md): writing it with
 * jansson (sorted keys, two-space indent), its text form, and the one
 * reader that `tessera catalog import`, `plan --current` and `ledger record
 * --inventory` share. The reader is strict about what it uses (types,
 * ranges, limits; every error names the JSON path) and ignores keys it
 * does not know, so newer agents' documents still load.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "inventory/inventory.h"
#include "util/jsonread.h"
#include "util/limits.h"
#include "util/file.h"
#include "util/jsonwrite.h"
#include "util/names.h"

#define INV_KIND "NodeInventory"

/* ---- writing ------------------------------------------------------------- */

static json_t *placement_json(struct inv_placement p)
{
    return json_pack("{s:i, s:i}", "start", p.start, "size", p.size);
}

static const char *mig_word(int m) { return m < 0 ? "unsupported" : m ? "enabled" : "disabled"; }

static json_t *profile_json(const struct inv_profile *p)
{
    json_t *pl = json_array();
    for (int i = 0; i < p->npl; i++)
        json_array_append_new(pl, placement_json(p->pl[i]));
    return json_pack("{s:i, s:s, s:i, s:I, s:i, s:i, s:o}", "id", p->id, "name", p->name,
                     "computeSlices", p->slices, "memoryMiB", (json_int_t)p->memory_mib, "sms",
                     p->sms, "maxCount", p->max_count, "placements", pl);
}

static json_t *gi_json(const struct inv_gi *gi)
{
    json_t *cis = json_array();
    for (int i = 0; i < gi->nci; i++) {
        const struct inv_ci *c = &gi->ci[i];
        json_array_append_new(cis, json_pack("{s:i, s:i, s:s, s:i, s:o, s:s}", "id", c->id,
                                             "profileId", c->profile_id, "profile", c->profile,
                                             "computeSlices", c->slices, "placement",
                                             placement_json(c->pl), "uuid", c->uuid));
    }
    return json_pack("{s:i, s:i, s:s, s:i, s:o, s:o}", "id", gi->id, "profileId", gi->profile_id,
                     "profile", gi->profile, "computeSlices", gi->slices, "placement",
                     placement_json(gi->pl), "computeInstances", cis);
}

static json_t *gpu_json(const struct inv_gpu *g)
{
    json_t *profs = json_array(), *gis = json_array();
    for (int i = 0; i < g->nprof; i++)
        json_array_append_new(profs, profile_json(&g->prof[i]));
    for (int i = 0; i < g->ngi; i++)
        json_array_append_new(gis, gi_json(&g->gi[i]));
    return json_pack("{s:i, s:s, s:s, s:s, s:I, s:{s:s, s:s}, s:s, s:o, s:o}", "index", g->index,
                     "uuid", g->uuid, "name", g->name, "pciBusId", g->pci, "memoryMiB",
                     (json_int_t)g->memory_mib, "migMode", "current", mig_word(g->mig_current),
                     "pending", mig_word(g->mig_pending), "computeMode", g->compute_mode,
                     "profiles", profs, "gpuInstances", gis);
}

ts_status inv_json(const struct inv_node *inv, struct ts_sbuf *out)
{
    json_t *gpus = json_array();
    for (int i = 0; i < inv->ngpu; i++)
        json_array_append_new(gpus, gpu_json(&inv->gpu[i]));
    json_t *doc = json_pack("{s:s, s:s, s:s, s:o}", "apiVersion", TS_API_VERSION, "kind", INV_KIND,
                            "node", inv->node, "gpus", gpus);
    ts_status st = ts_json_write(doc, JSON_SORT_KEYS | JSON_INDENT(2), out);
    json_decref(doc);
    return st;
}

/* ---- text ---------------------------------------------------------------- */

static void text_gi(const struct inv_gi *gi, struct ts_sbuf *out)
{
    ts_sbuf_printf(out, "    GI %-2d %-12s ID %-2d %d slices  at %d:%d\n", gi->id, gi->profile,
                   gi->profile_id, gi->slices, gi->pl.start, gi->pl.size);
    for (int k = 0; k < gi->nci; k++) {
        const struct inv_ci *c = &gi->ci[k];
        ts_sbuf_printf(out, "      CI %-2d %-12s ID %-2d %d slices  at %d:%d  %s\n", c->id,
                       c->profile, c->profile_id, c->slices, c->pl.start, c->pl.size,
                       *c->uuid ? c->uuid : "-");
    }
}

static void text_gpu(const struct inv_gpu *g, struct ts_sbuf *out)
{
    ts_sbuf_printf(out,
                   "GPU %d: %s (%s)\n  pci %s, %lld MiB, MIG %s (pending %s), compute mode %s\n",
                   g->index, g->name, g->uuid, g->pci, g->memory_mib, mig_word(g->mig_current),
                   mig_word(g->mig_pending), g->compute_mode);
    if (g->mig_current == 1)
        ts_sbuf_printf(out, "  GPU instances: %d%s\n", g->ngi, g->ngi ? "" : " (none)");
    for (int i = 0; i < g->ngi; i++)
        text_gi(&g->gi[i], out);
    if (g->nprof)
        ts_sbuf_puts(out, "  profiles (ID, slices, MiB, SMs, max: placements start:size):\n");
    for (int i = 0; i < g->nprof; i++) {
        const struct inv_profile *p = &g->prof[i];
        ts_sbuf_printf(out, "    %-12s %3d %2d %7lld %4d %2d:", p->name, p->id, p->slices,
                       p->memory_mib, p->sms, p->max_count);
        for (int k = 0; k < p->npl; k++)
            ts_sbuf_printf(out, " %d:%d", p->pl[k].start, p->pl[k].size);
        ts_sbuf_puts(out, "\n");
    }
}

void inv_text(const struct inv_node *inv, struct ts_sbuf *out)
{
    ts_sbuf_printf(out, "node %s: %d GPU%s\n", *inv->node ? inv->node : "(unnamed)", inv->ngpu,
                   inv->ngpu == 1 ? "" : "s");
    for (int i = 0; i < inv->ngpu; i++)
        text_gpu(&inv->gpu[i], out);
}

/* ---- reading --------------------------------------------------------------- */

static void sub(char *dst, size_t n, const char *path, const char *key)
{
    ts_json_path(dst, n, path, key, -1);
}

/* v: the placement object at path p. */
static ts_status get_placement(const struct ts_jread *r, json_t *v, const char *p,
                               struct inv_placement *pl)
{
    ts_status st = ts_jread_obj(r, v, p);
    if (st == TS_OK)
        st = ts_jread_int(r, v, "start", p, 0, TS_MIG_GRID_MAX - 1, &pl->start);
    if (st == TS_OK)
        st = ts_jread_int(r, v, "size", p, 1, TS_MIG_GRID_MAX, &pl->size);
    if (st == TS_OK && pl->start + pl->size > TS_MIG_GRID_MAX)
        st = ts_jread_bad(r, p, "%s", "placement runs past 32 memory slices");
    return st;
}

static ts_status read_prof(const struct ts_jread *r, json_t *o, const char *path,
                           struct inv_profile *p)
{
    json_t *pls;
    long long mib = 0;
    ts_status st = ts_jread_obj(r, o, path);
    if (st == TS_OK)
        st = ts_jread_int(r, o, "id", path, 0, 255, &p->id);
    if (st == TS_OK)
        st = ts_jread_str(r, o, "name", path, p->name, sizeof p->name);
    if (st == TS_OK)
        st = ts_jread_int(r, o, "computeSlices", path, 1, 32, &p->slices);
    if (st == TS_OK)
        st = ts_jread_ll(r, o, "memoryMiB", path, 1, 10240000, &mib);
    if (st == TS_OK)
        st = ts_jread_int(r, o, "sms", path, 0, 10000, &p->sms);
    if (st == TS_OK)
        st = ts_jread_int(r, o, "maxCount", path, 1, 32, &p->max_count);
    if (st == TS_OK)
        st = ts_jread_arr(r, o, "placements", path, INV_PLACEMENTS_MAX, &pls);
    p->memory_mib = mib;
    for (size_t i = 0; st == TS_OK && i < json_array_size(pls); i++) {
        char ip[TS_PATH_MAX];
        ts_json_path(ip, sizeof ip, path, "placements", (long)i);
        st = get_placement(r, json_array_get(pls, i), ip, &p->pl[p->npl++]);
    }
    return st;
}

/* The fields GPU and compute instances share: id, profileId, profile,
 * computeSlices, placement. */
struct inst_head {
    int *id, *profile_id, *slices;
    char *profile;
    size_t profile_size;
    struct inv_placement *pl;
};

static ts_status read_head(const struct ts_jread *r, json_t *o, const char *path,
                           const struct inst_head *h)
{
    char pp[TS_PATH_MAX];
    sub(pp, sizeof pp, path, "placement");
    ts_status st = ts_jread_obj(r, o, path);
    if (st == TS_OK)
        st = ts_jread_int(r, o, "id", path, 0, 255, h->id);
    if (st == TS_OK)
        st = ts_jread_int(r, o, "profileId", path, 0, 255, h->profile_id);
    if (st == TS_OK)
        st = ts_jread_str(r, o, "profile", path, h->profile, h->profile_size);
    if (st == TS_OK)
        st = ts_jread_int(r, o, "computeSlices", path, 1, 32, h->slices);
    if (st == TS_OK)
        st = get_placement(r, json_object_get(o, "placement"), pp, h->pl);
    return st;
}

static ts_status read_ci(const struct ts_jread *r, json_t *o, const char *path, struct inv_ci *c)
{
    struct inst_head h = {&c->id,     &c->profile_id,    &c->slices,
                          c->profile, sizeof c->profile, &c->pl};
    ts_status st = read_head(r, o, path, &h);
    if (st == TS_OK)
        st = ts_jread_str(r, o, "uuid", path, c->uuid, sizeof c->uuid);
    return st;
}

static ts_status read_gi(const struct ts_jread *r, json_t *o, const char *path, struct inv_gi *gi)
{
    json_t *cis;
    struct inst_head h = {&gi->id,     &gi->profile_id,    &gi->slices,
                          gi->profile, sizeof gi->profile, &gi->pl};
    ts_status st = read_head(r, o, path, &h);
    if (st == TS_OK)
        st = ts_jread_arr(r, o, "computeInstances", path, INV_CIS_MAX, &cis);
    for (size_t i = 0; st == TS_OK && i < json_array_size(cis); i++) {
        char ip[TS_PATH_MAX];
        ts_json_path(ip, sizeof ip, path, "computeInstances", (long)i);
        st = read_ci(r, json_array_get(cis, i), ip, &gi->ci[gi->nci++]);
    }
    return st;
}

static ts_status get_mig(const struct ts_jread *r, json_t *o, const char *key, const char *path,
                         int *out)
{
    char word[16];
    ts_status st = ts_jread_str(r, o, key, path, word, sizeof word);
    *out = !strcmp(word, "enabled") ? 1 : !strcmp(word, "disabled") ? 0 : -1;
    if (st == TS_OK && *out < 0 && strcmp(word, "unsupported")) {
        char p[TS_PATH_MAX];
        sub(p, sizeof p, path, key);
        st = ts_jread_bad(r, p, "%s", "expected enabled, disabled or unsupported");
    }
    return st;
}

static ts_status read_gpu_ids(const struct ts_jread *r, json_t *o, const char *path,
                              struct inv_gpu *g)
{
    char mp[TS_PATH_MAX];
    sub(mp, sizeof mp, path, "migMode");
    ts_status st = ts_jread_obj(r, o, path);
    if (st == TS_OK)
        st = ts_jread_int(r, o, "index", path, 0, 1023, &g->index);
    if (st == TS_OK)
        st = ts_jread_str(r, o, "uuid", path, g->uuid, sizeof g->uuid);
    if (st == TS_OK)
        st = ts_jread_str(r, o, "name", path, g->name, sizeof g->name);
    if (st == TS_OK)
        st = ts_jread_str(r, o, "pciBusId", path, g->pci, sizeof g->pci);
    if (st == TS_OK)
        st = ts_jread_ll(r, o, "memoryMiB", path, 0, 10240000, &g->memory_mib);
    if (st == TS_OK)
        st = ts_jread_obj(r, json_object_get(o, "migMode"), mp);
    if (st == TS_OK)
        st = get_mig(r, json_object_get(o, "migMode"), "current", mp, &g->mig_current);
    if (st == TS_OK)
        st = get_mig(r, json_object_get(o, "migMode"), "pending", mp, &g->mig_pending);
    if (st == TS_OK)
        st = ts_jread_str(r, o, "computeMode", path, g->compute_mode, sizeof g->compute_mode);
    return st;
}

static ts_status read_gpu(const struct ts_jread *r, json_t *o, const char *path, struct inv_gpu *g)
{
    json_t *profs, *gis;
    ts_status st = read_gpu_ids(r, o, path, g);
    if (st == TS_OK)
        st = ts_jread_arr(r, o, "profiles", path, INV_PROFILES_MAX, &profs);
    if (st == TS_OK)
        st = ts_jread_arr(r, o, "gpuInstances", path, INV_GIS_MAX, &gis);
    for (size_t i = 0; st == TS_OK && i < json_array_size(profs); i++) {
        char ip[TS_PATH_MAX];
        ts_json_path(ip, sizeof ip, path, "profiles", (long)i);
        st = read_prof(r, json_array_get(profs, i), ip, &g->prof[g->nprof++]);
    }
    for (size_t i = 0; st == TS_OK && i < json_array_size(gis); i++) {
        char ip[TS_PATH_MAX];
        ts_json_path(ip, sizeof ip, path, "gpuInstances", (long)i);
        st = read_gi(r, json_array_get(gis, i), ip, &g->gi[g->ngi++]);
    }
    return st;
}

static ts_status read_doc(const struct ts_jread *r, json_t *doc, struct inv_node *inv)
{
    char api[32], kind[32];
    json_t *gpus;
    ts_status st = ts_jread_obj(r, doc, "");
    if (st == TS_OK)
        st = ts_jread_str(r, doc, "apiVersion", "", api, sizeof api);
    if (st == TS_OK && strcmp(api, TS_API_VERSION))
        st = ts_jread_bad(r, "apiVersion", "expected %s", TS_API_VERSION);
    if (st == TS_OK)
        st = ts_jread_str(r, doc, "kind", "", kind, sizeof kind);
    if (st == TS_OK && strcmp(kind, INV_KIND))
        st = ts_jread_bad(r, "kind", "expected %s", INV_KIND);
    if (st == TS_OK)
        st = ts_jread_str(r, doc, "node", "", inv->node, sizeof inv->node);
    if (st == TS_OK)
        st = ts_jread_arr(r, doc, "gpus", "", INV_GPUS_MAX, &gpus);
    for (size_t i = 0; st == TS_OK && i < json_array_size(gpus); i++) {
        char ip[TS_PATH_MAX];
        ts_json_path(ip, sizeof ip, "", "gpus", (long)i);
        st = read_gpu(r, json_array_get(gpus, i), ip, &inv->gpu[inv->ngpu]);
        for (int k = 0; st == TS_OK && k < inv->ngpu; k++)
            if (inv->gpu[k].index == inv->gpu[inv->ngpu].index)
                st = ts_jread_bad(r, ip, "%s", "GPU index given twice");
        inv->ngpu += st == TS_OK;
    }
    return st;
}

int inv_looks_json(const char *text, size_t len)
{
    size_t i = 0;
    while (i < len && strchr(" \t\r\n", text[i]) && text[i])
        i++;
    return i < len && text[i] == '{';
}

ts_status inv_parse(const char *text, size_t len, const char *file, struct inv_node *inv,
                    struct ts_error *err)
{
    json_t *doc;
    memset(inv, 0, sizeof *inv);
    ts_status st = ts_jread_load(text, len, file, &doc, err);
    if (st != TS_OK)
        return st;
    struct ts_jread r = {file, err};
    st = read_doc(&r, doc, inv);
    json_decref(doc);
    return st;
}

ts_status inv_load(const char *path, struct inv_node *inv, struct ts_error *err)
{
    char *text = NULL;
    size_t len = 0;
    ts_status st = ts_file_read(path, TS_INPUT_MAX, &text, &len, err);
    if (st == TS_OK)
        st = inv_parse(text, len, path, inv, err);
    free(text);
    return st;
}

/* ---- profiles ------------------------------------------------------------- */

/* "3g.40gb+me" -> compute 3, attrs "+me" (or ""). */
static int split_name(const char *name, int *compute, const char **attrs)
{
    char *end;
    long g = strtol(name, &end, 10);
    if (end == name || *end != 'g' || g < 1 || g > TS_MIG_SLICES_MAX)
        return 0;
    *compute = (int)g;
    *attrs = strpbrk(end, "+-");
    *attrs = *attrs ? *attrs : "";
    return 1;
}

const struct inv_profile *inv_profile_for(const struct inv_gpu *g, const char *name, int size)
{
    int want_c, c;
    const char *want_a, *a;
    for (int i = 0; i < g->nprof; i++)
        if (strcmp(g->prof[i].name, name) == 0)
            return &g->prof[i];
    if (!split_name(name, &want_c, &want_a))
        return NULL;
    for (int i = 0; i < g->nprof; i++) {
        const struct inv_profile *p = &g->prof[i];
        if (split_name(p->name, &c, &a) && c == want_c && !strcmp(a, want_a) && p->npl &&
            p->pl[0].size == size)
            return p;
    }
    return NULL;
}
