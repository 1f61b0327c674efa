/*
 * requests.c - a shared workload's request counter per consumer, and the
 * counts one ingest has read until they are stored (see requests.h).
 */
#include "meter/requests.h"

#include "util/grow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A consumer's count of one series at one time. */
struct meter_request_read {
    const char *owner, *workload, *consumer; /* the spec's names */
    int64_t ts_ms;
    double value;
    char series[17];
    size_t seq; /* the order read: the first of a repeat is kept */
};

static const struct spec_tenant *tenant_of_ns(const struct spec_model *m, const char *ns)
{
    for (size_t i = 0; ns && *ns && i < m->ntenants; i++)
        for (size_t j = 0; j < m->tenants[i].nnamespaces; j++)
            if (strcmp(m->tenants[i].namespaces[j], ns) == 0)
                return &m->tenants[i];
    return NULL;
}

/* The use of owner/workload by t, or NULL. */
static const struct spec_use *use_of(const struct spec_tenant *t, const char *owner,
                                     const char *workload)
{
    for (size_t i = 0; t && i < t->nuses; i++)
        if (!strcmp(t->uses[i].tenant, owner) && !strcmp(t->uses[i].workload, workload))
            return &t->uses[i];
    return NULL;
}

/* Does any tenant use owner/workload? The spec's use, or NULL. */
static const struct spec_use *used(const struct spec_model *m, const char *owner,
                                   const char *workload)
{
    const struct spec_use *u = NULL;
    for (size_t i = 0; !u && i < m->ntenants; i++)
        u = use_of(&m->tenants[i], owner, workload);
    return u;
}

enum meter_request_verdict meter_request_of(const struct spec_model *m,
                                            const struct meter_sample *x, const char **owner,
                                            const char **workload, const char **consumer, char *why,
                                            size_t size)
{
    const char *dns = meter_label(x, "destination_workload_namespace");
    const char *dwl = meter_label(x, "destination_workload");
    const char *sns = meter_label(x, "source_workload_namespace");
    const char *reporter = meter_label(x, "reporter");
    /* both sidecars of a request report it; the shared workload's own sees
     * every consumer's, with or without a sidecar of their own */
    if (reporter && strcmp(reporter, "destination") != 0)
        return METER_REQ_SKIP;
    const struct spec_tenant *own = tenant_of_ns(m, dns);
    const struct spec_use *use = own && dwl ? used(m, own->name, dwl) : NULL;
    if (!use)
        return METER_REQ_SKIP; /* not a workload other tenants use */
    const struct spec_tenant *t = tenant_of_ns(m, sns);
    if (t == own)
        return METER_REQ_SKIP; /* the owner's own requests */
    if (!use_of(t, own->name, dwl)) {
        snprintf(why, size,
                 "requests from source_workload_namespace '%s' (%s%s) to %s/%s: not a consumer "
                 "of it, nothing billed to it",
                 sns ? sns : "", t ? "tenant " : "no tenant", t ? t->name : "", own->name, dwl);
        return METER_REQ_REFUSE;
    }
    *owner = own->name;
    *workload = use->workload;
    *consumer = t->name;
    return METER_REQ_KEEP;
}

/* ---- the counts one ingest read ---- */

static uint64_t hash_str(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u; /* FNV-1a */
    return (h ^ 0xff) * 1099511628211u;
}

static int cmp_label(const void *x, const void *y)
{
    const struct meter_label *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    return c ? c : strcmp(a->value, b->value);
}

/* The series of x: FNV-1a 64 of its labels in name order, in hex, so one
 * series is one id whatever order its lines list the labels in. */
static void series_id(const struct meter_sample *x, char out[17])
{
    struct meter_label l[METER_LABELS_MAX];
    memcpy(l, x->labels, x->nlabels * sizeof(*l));
    qsort(l, x->nlabels, sizeof(*l), cmp_label);
    uint64_t h = 14695981039346656037u;
    for (size_t i = 0; i < x->nlabels; i++)
        h = hash_str(hash_str(h, l[i].name), l[i].value);
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

int meter_requests_keep(struct meter_request_log *log, const char *owner, const char *workload,
                        const char *consumer, int64_t ts_ms, const struct meter_sample *x)
{
    if (!ts_grow((void **)&log->items, &log->cap, log->n, sizeof(*log->items)))
        return 0;
    struct meter_request_read *r = &log->items[log->n];
    *r = (struct meter_request_read){owner, workload, consumer, ts_ms, x->value, "", log->n};
    series_id(x, r->series);
    log->n++;
    return 1;
}

static int cmp_req(const void *x, const void *y)
{
    const struct meter_request_read *a = x, *b = y;
    int c = strcmp(a->owner, b->owner);
    c = c ? c : strcmp(a->workload, b->workload);
    c = c ? c : strcmp(a->consumer, b->consumer);
    c = c ? c : strcmp(a->series, b->series);
    return c ? c : (a->ts_ms > b->ts_ms) - (a->ts_ms < b->ts_ms);
}

static int cmp_req_read(const void *x, const void *y)
{
    const struct meter_request_read *a = x, *b = y;
    int c = cmp_req(a, b);
    return c ? c : (a->seq > b->seq) - (a->seq < b->seq);
}

ts_status meter_requests_store(struct meter_request_log *log, struct store *st, const char *source,
                               struct ts_error *err)
{
    if (!log->n || !st)
        return TS_OK;
    qsort(log->items, log->n, sizeof(*log->items), cmp_req_read);
    struct store_request *out = malloc(log->n * sizeof(*out));
    if (!out)
        return ts_err(err, TS_NOMEM, "%s: out of memory", source);
    size_t n = 0;
    for (size_t i = 0; i < log->n; i++) {
        const struct meter_request_read *r = &log->items[i];
        if (n && i && !cmp_req(r, &log->items[i - 1]))
            continue;
        out[n++] = (struct store_request){r->owner, r->workload,       r->consumer,
                                          r->ts_ms, llround(r->value), r->series};
    }
    ts_status rc = store_put_requests(st, out, n, err);
    free(out);
    if (rc == TS_OK)
        log->n = 0;
    return rc;
}

void meter_requests_free(struct meter_request_log *log)
{
    free(log->items);
    memset(log, 0, sizeof(*log));
}
