/*
 * ledger_query.c - reading the custody ledger: who held an instance at a
 * time, a tenant's history, and the auditor's CSV and JSON exports.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "ledger/ledger.h"
#include "util/grow.h"
#include "util/jsonfree.h"
#include "util/text.h"

#define N_STR 9

static void row_strs(struct ledger_row *r, char **s[N_STR])
{
    char **tmp[N_STR] = {&r->node,      &r->gpu_uuid, &r->instance_uuid, &r->gi_id, &r->profile,
                         &r->placement, &r->tenant,   &r->workload,      &r->source};
    memcpy(s, tmp, sizeof tmp);
}

void ledger_row_free(struct ledger_row *r)
{
    char **s[N_STR];
    row_strs(r, s);
    for (int i = 0; i < N_STR; i++) {
        free(*s[i]);
        *s[i] = NULL;
    }
}

/* Copy e into r (r is overwritten, not freed); -1 on no memory. */
static int row_copy(struct ledger_row *r, const struct store_ledger_entry *e)
{
    const char *src[N_STR] = {e->node,      e->gpu_uuid, e->instance_uuid, e->gi_id, e->profile,
                              e->placement, e->tenant,   e->workload,      e->source};
    char **s[N_STR];
    memset(r, 0, sizeof(*r));
    row_strs(r, s);
    r->seq = e->seq;
    r->ts_ms = e->ts_ms;
    memcpy(r->hash, e->hash, 65);
    memcpy(r->prev_hash, e->prev_hash, 65);
    memcpy(r->mac, e->mac, 65);
    int fail = 0;
    for (int i = 0; i < N_STR; i++)
        fail |= !(*s[i] = strdup(src[i] ? src[i] : ""));
    if (fail)
        ledger_row_free(r);
    return fail ? -1 : 0;
}

void ledger_list_free(struct ledger_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        ledger_row_free(&l->rows[i]);
    free(l->rows);
    memset(l, 0, sizeof(*l));
}

/* ---- who ------------------------------------------------------------------ */

struct who {
    const char *uuid;
    int64_t at;
    struct ledger_row *out;
    int found, nomem;
};

static int who_one(void *ctx, const struct store_ledger_entry *e)
{
    struct who *w = ctx;
    if (e->ts_ms > w->at || (strcmp(e->gpu_uuid, w->uuid) && strcmp(e->instance_uuid, w->uuid)))
        return 0;
    if (w->found && e->ts_ms < w->out->ts_ms)
        return 0;
    if (w->found)
        ledger_row_free(w->out);
    w->found = row_copy(w->out, e) == 0;
    w->nomem = !w->found;
    return w->nomem;
}

ts_status ledger_who(struct store *st, const char *uuid, int64_t at_ms, struct ledger_row *out,
                     int *found, struct ts_error *err)
{
    struct who w = {uuid, at_ms, out, 0, 0};
    memset(out, 0, sizeof(*out));
    ts_status rc = store_ledger_scan(st, who_one, &w, err);
    if (rc == TS_OK && w.nomem)
        rc = ts_err(err, TS_NOMEM, "out of memory");
    if (rc != TS_OK && w.found)
        ledger_row_free(out);
    *found = rc == TS_OK && w.found;
    return rc;
}

/* ---- holders -------------------------------------------------------------- */

struct matches {
    const char *uuid;
    int64_t at;
    struct ledger_list *out;
    int nomem;
};

/* Append a copy of e to l; 0, or -1 when out of memory. */
static int list_add(struct ledger_list *l, const struct store_ledger_entry *e)
{
    if (!ts_grow((void **)&l->rows, &l->cap, l->n, sizeof(*l->rows)))
        return -1;
    if (row_copy(&l->rows[l->n], e) != 0)
        return -1;
    l->n++;
    return 0;
}

static int match_one(void *ctx, const struct store_ledger_entry *e)
{
    struct matches *m = ctx;
    if (e->ts_ms > m->at || (strcmp(e->gpu_uuid, m->uuid) && strcmp(e->instance_uuid, m->uuid)))
        return 0;
    return m->nomem = list_add(m->out, e) != 0;
}

static int observed(const struct ledger_row *r) { return strcmp(r->source, "observed") == 0; }

/* r is later than q: a later time, or the same time and a higher seq. */
static int later(const struct ledger_row *r, const struct ledger_row *q)
{
    return r->ts_ms > q->ts_ms || (r->ts_ms == q->ts_ms && r->seq > q->seq);
}

/* The custody entry current for r's device among all, or NULL. */
static const struct ledger_row *custody_of(const struct ledger_list *all, const char *device)
{
    const struct ledger_row *best = NULL;
    for (size_t i = 0; i < all->n; i++) {
        const struct ledger_row *q = &all->rows[i];
        if (!observed(q) && !strcmp(q->instance_uuid, device) && (!best || later(q, best)))
            best = q;
    }
    return best;
}

/* Copy r into l (the strings too); -1 when out of memory. */
static int keep(struct ledger_list *l, const struct ledger_row *r)
{
    struct store_ledger_entry e = {.seq = r->seq,
                                   .ts_ms = r->ts_ms,
                                   .node = r->node,
                                   .gpu_uuid = r->gpu_uuid,
                                   .instance_uuid = r->instance_uuid,
                                   .gi_id = r->gi_id,
                                   .profile = r->profile,
                                   .placement = r->placement,
                                   .tenant = r->tenant,
                                   .workload = r->workload,
                                   .source = r->source};
    memcpy(e.hash, r->hash, 65);
    memcpy(e.prev_hash, r->prev_hash, 65);
    memcpy(e.mac, r->mac, 65);
    return list_add(l, &e);
}

static int sort_holders(const struct ledger_list *all, struct ledger_holders *out)
{
    for (size_t i = 0; i < all->n; i++) {
        const struct ledger_row *r = &all->rows[i];
        const struct ledger_row *c = custody_of(all, r->instance_uuid);
        if (!observed(r) && r == c && keep(&out->custody, r) != 0)
            return -1;
        if (observed(r) && (!c || !later(c, r)) && keep(&out->observed, r) != 0)
            return -1;
    }
    return 0;
}

ts_status ledger_holders(struct store *st, const char *uuid, int64_t at_ms,
                         struct ledger_holders *out, struct ts_error *err)
{
    struct ledger_list all = {0};
    struct matches m = {uuid, at_ms, &all, 0};
    memset(out, 0, sizeof(*out));
    ts_status rc = store_ledger_scan(st, match_one, &m, err);
    if (rc == TS_OK && (m.nomem || sort_holders(&all, out) != 0))
        rc = ts_err(err, TS_NOMEM, "out of memory");
    ledger_list_free(&all);
    if (rc != TS_OK)
        ledger_holders_free(out);
    return rc;
}

void ledger_holders_free(struct ledger_holders *h)
{
    ledger_list_free(&h->custody);
    ledger_list_free(&h->observed);
}

/* ---- history -------------------------------------------------------------- */

struct hist {
    const char *tenant;
    int64_t from, to;
    struct ledger_list *out;
    int nomem;
};

static int hist_one(void *ctx, const struct store_ledger_entry *e)
{
    struct hist *h = ctx;
    struct ledger_list *l = h->out;
    if ((h->tenant && strcmp(e->tenant, h->tenant)) || e->ts_ms < h->from || e->ts_ms >= h->to)
        return 0;
    return h->nomem = list_add(l, e) != 0;
}

ts_status ledger_history(struct store *st, const char *tenant, int64_t from_ms, int64_t to_ms,
                         struct ledger_list *out, struct ts_error *err)
{
    struct hist h = {tenant, from_ms, to_ms, out, 0};
    memset(out, 0, sizeof(*out));
    ts_status rc = store_ledger_scan(st, hist_one, &h, err);
    if (rc == TS_OK && h.nomem)
        rc = ts_err(err, TS_NOMEM, "out of memory");
    if (rc != TS_OK)
        ledger_list_free(out);
    return rc;
}

/* ---- export --------------------------------------------------------------- */

static const char *const COLS[] = {"seq",           "time",   "ts_ms",     "node",      "gpu_uuid",
                                   "instance_uuid", "gi_id",  "profile",   "placement", "tenant",
                                   "workload",      "source", "prev_hash", "hash",      "mac"};
#define NCOLS (sizeof(COLS) / sizeof(COLS[0]))

/* The row's columns as text, in COLS order; nums holds the numbers. */
static void row_cols(const struct ledger_row *r, const char *c[NCOLS], char nums[3][40])
{
    snprintf(nums[0], 40, "%" PRId64, r->seq);
    ledger_format_time(r->ts_ms, nums[1]);
    snprintf(nums[2], 40, "%" PRId64, r->ts_ms);
    const char *tmp[NCOLS] = {nums[0],          nums[1],   nums[2],      r->node,      r->gpu_uuid,
                              r->instance_uuid, r->gi_id,  r->profile,   r->placement, r->tenant,
                              r->workload,      r->source, r->prev_hash, r->hash,      r->mac};
    memcpy(c, tmp, sizeof tmp);
}

static void csv_field(struct ts_sbuf *b, const char *s)
{
    if (!s[strcspn(s, ",\"\r\n")]) {
        ts_sbuf_puts(b, s);
        return;
    }
    ts_sbuf_add(b, "\"", 1);
    for (; *s; s++) {
        if (*s == '"')
            ts_sbuf_add(b, "\"", 1);
        ts_sbuf_add(b, s, 1);
    }
    ts_sbuf_add(b, "\"", 1);
}

static void csv_line(struct ts_sbuf *b, const char *const *c)
{
    for (size_t i = 0; i < NCOLS; i++) {
        if (i)
            ts_sbuf_add(b, ",", 1);
        csv_field(b, c[i]);
    }
    ts_sbuf_add(b, "\r\n", 2);
}

void ledger_csv(const struct ledger_list *l, struct ts_sbuf *out)
{
    csv_line(out, COLS);
    for (size_t i = 0; i < l->n; i++) {
        const char *c[NCOLS];
        char nums[3][40];
        row_cols(&l->rows[i], c, nums);
        csv_line(out, c);
    }
}

static json_t *row_json(const struct ledger_row *r)
{
    const char *c[NCOLS];
    char nums[3][40];
    row_cols(r, c, nums);
    json_t *o = json_object();
    for (size_t i = 0; o && i < NCOLS; i++) {
        json_t *v = (i == 0 || i == 2) ? json_integer(i ? r->ts_ms : r->seq) : ts_text_json(c[i]);
        if (json_object_set_new(o, COLS[i], v) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

ts_status ledger_json(const struct ledger_list *l, char **out, struct ts_error *err)
{
    json_t *arr = json_array();
    json_t *root = json_pack("{s:o}", "entries", arr);
    int fail = !arr || !root;
    for (size_t i = 0; !fail && i < l->n; i++)
        fail = json_array_append_new(arr, row_json(&l->rows[i])) != 0;
    char *text = fail ? NULL : json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (!text)
        return ts_err(err, TS_NOMEM, "out of memory");
    *out = text;
    return TS_OK;
}
