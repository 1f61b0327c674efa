/*
 * ledger.c - GET /api/v1/ledger/holders, /ledger/history and /violations:
 * the custody ledger, each entry shown only to who may see its tenant. A
 * tenant asking about a UUID it never held gets the same 404 as for a UUID
 * nobody holds, so the answer does not tell who does.
 */
#include "api/internal.h"

#include <string.h>
#include "ledger/ledger.h"
#include "util/text.h"
#include "util/time.h"

static json_t *entry_json(const struct ledger_row *e)
{
    char t[40];
    ts_time_format(e->ts_ms, t);
    json_t *o = json_pack("{s:I, s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "seq", (json_int_t)e->seq,
                          "time", t, "node", ts_text_json(e->node), "gpuUuid",
                          ts_text_json(e->gpu_uuid), "instanceUuid", ts_text_json(e->instance_uuid),
                          "giId", ts_text_json(e->gi_id), "profile", ts_text_json(e->profile),
                          "placement", ts_text_json(e->placement));
    json_t *more = json_pack("{s:o, s:o, s:o, s:s}", "tenant", ts_text_json(e->tenant), "workload",
                             ts_text_json(e->workload), "source", ts_text_json(e->source), "hash",
                             e->hash);
    if (!o || !more || json_object_update(o, more) != 0) {
        json_decref(o);
        o = NULL;
    }
    json_decref(more);
    return o;
}

/* A row passes: the caller may see its tenant, and it matches the filters. */
struct row_filter {
    const char *tenant, *uuid;
    int observed_only;
};

static int keep(const struct api__req *r, const struct row_filter *f, const struct ledger_row *e)
{
    return api__may_see(r->who, e->tenant) && (!f->tenant || strcmp(e->tenant, f->tenant) == 0) &&
           (!f->uuid || strcmp(e->gpu_uuid, f->uuid) == 0 ||
            strcmp(e->instance_uuid, f->uuid) == 0) &&
           (!f->observed_only || strcmp(e->source, "observed") == 0);
}

static json_t *rows_json(const struct api__req *r, const struct row_filter *f,
                         const struct ledger_list *l, int violation)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < l->n; i++) {
        if (!keep(r, f, &l->rows[i]))
            continue;
        json_t *o = entry_json(&l->rows[i]);
        if (o && violation)
            json_object_set_new(o, "pod", ts_text_json(l->rows[i].workload));
        json_array_append_new(a, o);
    }
    return a;
}

void api__holders(struct api__req *r)
{
    const char *uuid = api__param(r, "uuid");
    int64_t at = 0;
    if (!api__time(r, "at", 0, r->s->now_ms, &at) || !api__done(r))
        return;
    if (!uuid || !*uuid) {
        api__fail(r, 400, "uuid", "uuid: required (a GPU or MIG instance UUID)");
        return;
    }
    struct store *st = api__store(r);
    struct ledger_holders h = {0};
    struct ts_error e = {0};
    if (!st)
        return;
    if (ledger_holders(st, uuid, at, &h, &e) != TS_OK) {
        api__fail(r, 503, NULL, "the ledger: %s", e.msg);
    } else {
        struct row_filter f = {NULL, NULL, 0};
        json_t *custody = rows_json(r, &f, &h.custody, 0), *seen = rows_json(r, &f, &h.observed, 0);
        char t[40];
        ts_time_format(at, t);
        if (!json_array_size(custody) && !json_array_size(seen)) {
            json_decref(custody);
            json_decref(seen);
            api__fail(r, 404, "uuid", "no ledger entry for this uuid");
        } else {
            api__send(r,
                      json_pack("{s:o, s:s, s:o, s:o}", "uuid", ts_text_json(uuid), "at", t,
                                "custody", custody, "observed", seen),
                      NULL);
        }
    }
    ledger_holders_free(&h);
    store_close(st);
}

/* The entries of [from, to) that pass f, as a page; 404 when f names a
 * uuid and nothing the caller may see is left. */
static void listed(struct api__req *r, const struct row_filter *f, int violation)
{
    struct api__page pg;
    int64_t from = 0, to = 0;
    if (!api__time(r, "from", 0, INT64_MIN, &from) || !api__time(r, "to", 0, INT64_MAX, &to) ||
        !api__page(r, &pg) || !api__done(r))
        return;
    struct store *st = api__store(r);
    struct ledger_list l = {0};
    struct ts_error e = {0};
    if (!st)
        return;
    if (ledger_history(st, f->tenant, from, to, &l, &e) != TS_OK) {
        api__fail(r, 503, NULL, "the ledger: %s", e.msg);
    } else {
        json_t *items = rows_json(r, f, &l, violation);
        if (f->uuid && !json_array_size(items)) {
            json_decref(items);
            api__fail(r, 404, "uuid", "no ledger entry for this uuid");
        } else {
            api__send(r, api__paged(r, items, &pg), "limit");
        }
    }
    ledger_list_free(&l);
    store_close(st);
}

void api__history(struct api__req *r)
{
    struct row_filter f = {NULL, api__param(r, "uuid"), 0};
    const char *asked = api__param(r, "tenant");
    if (!api__tenant(r, "tenant", &f.tenant))
        return;
    if (!asked && !f.uuid)
        api__fail(r, 400, "uuid", "uuid or tenant: one of them is required");
    else if (asked && f.uuid)
        api__fail(r, 400, "uuid", "uuid and tenant: give one of them");
    else if (f.uuid && !*f.uuid)
        api__fail(r, 400, "uuid", "uuid: empty");
    if (!r->failed)
        listed(r, &f, 0);
}

void api__violations(struct api__req *r)
{
    struct row_filter f = {NULL, NULL, 1};
    if (api__tenant(r, "tenant", &f.tenant))
        listed(r, &f, 1);
}
