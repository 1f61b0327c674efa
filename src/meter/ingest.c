/*
 * ingest.c - streaming a dcgm-exporter body into store samples (see
 * ingest.h). The parser calls back per exposition sample; samples gather
 * into one entry per (device, scrape time); entries of finished scrape
 * times are attributed (attrib.c) and flushed in batches.
 */
#include "meter/ingest.h"
#include "util/grow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/units.h"

#define NAME METER_NAME_MAX

struct entry {
    char key[2 * NAME];
    char node[NAME], gpu[16], uuid[NAME], gi[16], model[NAME], profile[32], ns[NAME], pod[NAME];
    int64_t ts_ms;
    double engine, util; /* -1 when absent */
};

struct meter_ingest {
    const struct meter_ctx *ctx;
    const char *source;
    struct ts_diag *diag;
    int64_t at_ms, newest_ms;
    meter_sink_fn sink;
    void *sink_arg;
    struct meter_expo *parser;
    struct entry *entries; /* grows up to METER_DEVICES_MAX */
    size_t nentries, cap, hint;
    struct store_sample *pending; /* attributed, not yet stored */
    size_t npending, pending_cap;
    struct ts_arena pending_arena;
    struct ts_error flush_err;
    int flush_failed, table_full_warned, unknown_warned, ambiguous_warned;
    struct meter_violation violations[METER_VIOLATIONS_MAX];
    size_t nviolations;
    struct meter_ingest_counts counts;
};

static ts_status to_store(void *arg, const struct store_sample *s, size_t n, size_t *inserted,
                          struct ts_error *err)
{
    return store_put_samples(arg, s, n, inserted, err);
}

/* A problem that rejects no line: the device is still billed. */
static void warn(struct meter_ingest *in, const struct entry *d, const char *what)
{
    ts_diag_addf(in->diag, TS_SEV_ERROR, TS_NOT_FOUND, in->source, 0, 0, NULL, "device %s: %s",
                 d->key, what);
}

/* ---- flushing ---- */

static struct store_sample *pending_slot(struct meter_ingest *in)
{
    if (!ts_grow((void **)&in->pending, &in->pending_cap, in->npending, sizeof(*in->pending)))
        return NULL;
    return &in->pending[in->npending++];
}

static void note_violation(struct meter_ingest *in, const struct entry *d,
                           const struct meter_verdict *v)
{
    const char *observed = v->charges[0].tenant;
    for (size_t i = 0; i < in->nviolations; i++)
        if (!strcmp(in->violations[i].device, d->key) &&
            !strcmp(in->violations[i].observed, observed))
            return;
    in->counts.violations++;
    if (in->nviolations == METER_VIOLATIONS_MAX)
        return;
    struct meter_violation *x = &in->violations[in->nviolations++];
    memset(x, 0, sizeof(*x));
    snprintf(x->device, sizeof(x->device), "%s", d->key);
    snprintf(x->node, sizeof(x->node), "%s", d->node);
    snprintf(x->gpu_uuid, sizeof(x->gpu_uuid), "%s", d->uuid);
    snprintf(x->gi_id, sizeof(x->gi_id), "%s", d->profile[0] ? d->gi : "");
    snprintf(x->profile, sizeof(x->profile), "%s", d->profile);
    snprintf(x->observed, sizeof(x->observed), "%s", observed);
    snprintf(x->planned, sizeof(x->planned), "%s", v->planned);
    snprintf(x->ns, sizeof(x->ns), "%s", d->ns);
    snprintf(x->pod, sizeof(x->pod), "%s", d->pod);
    x->ts_ms = d->ts_ms;
}

static void warn_once(struct meter_ingest *in, const struct entry *d, const struct meter_verdict *v)
{
    if (v->ambiguous && !d->ns[0] && !in->ambiguous_warned++)
        warn(in, d,
             "the plan gives this profile on this card to several tenants; billed as "
             "unattributed until the node's inventory is in the ledger (tessera ledger record "
             "--inventory)");
    for (size_t i = 0; i < v->ncharges; i++)
        if (v->charges[i].share_ppm < 0 && !in->unknown_warned++)
            warn(in, d,
                 "no catalog profile of this name for its model; charged as a whole GPU "
                 "(add the board with tessera catalog import)");
}

/* Attribute one entry into pending samples. */
static ts_status attribute(struct meter_ingest *in, const struct entry *d)
{
    struct meter_seen seen = {d->node, d->gpu, d->uuid, d->gi, d->model, d->profile, d->ns, d->pod};
    struct meter_verdict v;
    meter_attribute(in->ctx, &seen, d->ts_ms, &v);
    warn_once(in, d, &v);
    if (v.violation)
        note_violation(in, d, &v);
    double ratio = d->engine >= 0 ? d->engine : d->util;
    int64_t util = ratio < 0 ? -1 : (int64_t)llround(fmin(fmax(ratio, 0.0), 1.0) * TS_PPM);
    struct ts_arena *a = &in->pending_arena;
    for (size_t i = 0; i < v.ncharges; i++) {
        struct store_sample *s = pending_slot(in);
        const char *key = ts_arena_printf(a, "%s%s", d->key, v.charges[i].suffix);
        const char *tenant = ts_arena_strdup(a, v.charges[i].tenant);
        if (!s || !key || !tenant)
            return TS_NOMEM;
        int64_t share = v.charges[i].share_ppm < 0 ? TS_PPM : v.charges[i].share_ppm;
        *s = (struct store_sample){ts_arena_strdup(a, d->node),
                                   key,
                                   d->ts_ms,
                                   ts_arena_strdup(a, d->model),
                                   ts_arena_strdup(a, d->profile),
                                   tenant,
                                   ts_arena_strdup(a, d->ns),
                                   ts_arena_strdup(a, d->pod),
                                   share,
                                   util};
        if (!s->node || !s->model || !s->profile || !s->ns || !s->pod)
            return TS_NOMEM;
    }
    return TS_OK;
}

static ts_status store_pending(struct meter_ingest *in, struct ts_error *err)
{
    if (!in->npending)
        return TS_OK;
    size_t inserted = 0;
    ts_status st = in->sink(in->sink_arg, in->pending, in->npending, &inserted, err);
    if (st != TS_OK)
        return st;
    in->counts.inserted += inserted;
    in->npending = 0;
    ts_arena_free(&in->pending_arena);
    ts_arena_init(&in->pending_arena);
    return TS_OK;
}

/* Move entries older than before_ms (all with INT64_MAX) to pending and
 * store them; a batch that failed before goes first. */
static ts_status flush(struct meter_ingest *in, int64_t before_ms, struct ts_error *err)
{
    ts_status st = store_pending(in, err);
    if (st != TS_OK)
        return st;
    size_t kept = 0;
    for (size_t i = 0; i < in->nentries; i++) {
        if (in->entries[i].ts_ms >= before_ms)
            in->entries[kept++] = in->entries[i];
        else if (attribute(in, &in->entries[i]) != TS_OK)
            return ts_err(err, TS_NOMEM, "%s: out of memory", in->source);
    }
    in->nentries = kept;
    in->hint = 0;
    return store_pending(in, err);
}

/* ---- gathering ---- */

static const char *label_or(const struct meter_sample *x, const char *a, const char *b)
{
    const char *v = meter_label(x, a);
    return v ? v : b ? meter_label(x, b) : NULL;
}

static int is_mig(const char *profile)
{
    return profile && *profile && strcmp(profile, "<<<NULL>>>") != 0;
}

static void device_key(const struct meter_sample *x, char *key, size_t size)
{
    const char *uuid = label_or(x, "UUID", "uuid"), *profile = meter_label(x, "GPU_I_PROFILE");
    const char *gi = meter_label(x, "GPU_I_ID");
    char redacted[2 * NAME];
    if (strchr(uuid, '*')) { /* a redacted UUID names no card: host and index do */
        const char *host = label_or(x, "Hostname", "hostname"), *index = meter_label(x, "gpu");
        snprintf(redacted, sizeof(redacted), "%s:gpu%s", host ? host : "", index ? index : "");
        uuid = redacted;
    }
    if (snprintf(key, size, "%s%s%s", uuid, is_mig(profile) ? "/" : "",
                 is_mig(profile) && gi ? gi : "") >= (int)size)
        key[size - 1] = '\0'; /* an absurd UUID: kept cut, still one device */
}

static struct entry *find(struct meter_ingest *in, const char *key, int64_t ts)
{
    for (size_t n = 0; n < in->nentries; n++) {
        size_t i = (in->hint + n) % in->nentries; /* exporters repeat the device order */
        if (in->entries[i].ts_ms == ts && strcmp(in->entries[i].key, key) == 0) {
            in->hint = i + 1;
            return &in->entries[i];
        }
    }
    return NULL;
}

static void copy(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

static struct entry *add(struct meter_ingest *in, const struct meter_sample *x, const char *key,
                         int64_t ts)
{
    if (in->nentries == METER_DEVICES_MAX && !in->flush_failed &&
        flush(in, in->newest_ms, &in->flush_err) != TS_OK)
        in->flush_failed = 1;
    if (in->cap < METER_DEVICES_MAX &&
        !ts_grow((void **)&in->entries, &in->cap, in->nentries, sizeof(*in->entries)))
        return NULL;
    if (in->nentries == in->cap) {
        if (!in->flush_failed && !in->table_full_warned++) {
            ts_diag_addf(in->diag, TS_SEV_ERROR, TS_TOO_LARGE, in->source, 0, 0, NULL,
                         "more than %d devices in one scrape time; the rest of that scrape is "
                         "skipped",
                         METER_DEVICES_MAX);
            in->counts.rejected_lines++;
        }
        return NULL;
    }
    struct entry *d = &in->entries[in->nentries++];
    struct meter_seen s;
    meter_seen_of(x, &s);
    copy(d->key, sizeof(d->key), key);
    copy(d->node, sizeof(d->node), s.node);
    copy(d->gpu, sizeof(d->gpu), s.gpu_index);
    copy(d->uuid, sizeof(d->uuid), s.uuid);
    copy(d->gi, sizeof(d->gi), s.gi_id);
    copy(d->model, sizeof(d->model), s.model);
    copy(d->profile, sizeof(d->profile), is_mig(s.profile) ? s.profile : "");
    copy(d->ns, sizeof(d->ns), s.ns);
    copy(d->pod, sizeof(d->pod), s.pod);
    d->ts_ms = ts;
    d->engine = d->util = -1;
    in->counts.devices++;
    return d;
}

static int on_sample(void *arg, const struct meter_sample *x)
{
    struct meter_ingest *in = arg;
    const char *uuid = label_or(x, "UUID", "uuid");
    if (!uuid || !*uuid || !isfinite(x->value))
        return 0;
    char key[2 * NAME];
    device_key(x, key, sizeof(key));
    int64_t ts = x->has_timestamp ? x->timestamp_ms : in->at_ms;
    struct entry *d = find(in, key, ts);
    if (!d && !(d = add(in, x, key, ts)))
        return 0;
    if (ts > in->newest_ms)
        in->newest_ms = ts;
    if (strcmp(x->metric, "DCGM_FI_PROF_GR_ENGINE_ACTIVE") == 0)
        d->engine = x->value;
    else if (strcmp(x->metric, "DCGM_FI_DEV_GPU_UTIL") == 0 ||
             strcmp(x->metric, "dcgm_gpu_utilization") == 0)
        d->util = x->value / 100.0;
    return 0;
}

static void on_error(void *arg, long line, int column, const char *msg)
{
    struct meter_ingest *in = arg;
    ts_diag_addf(in->diag, TS_SEV_ERROR, TS_SYNTAX, in->source, (int)line, column, NULL, "%s", msg);
    in->counts.rejected_lines++;
}

/* ---- the object ---- */

ts_status meter_ingest_new(const struct meter_ctx *ctx, struct store *st, int64_t at_ms,
                           const char *source, struct ts_diag *diag, struct meter_ingest **out)
{
    struct meter_ingest *in = calloc(1, sizeof(*in));
    if (in)
        in->entries = malloc((in->cap = 16) * sizeof(*in->entries));
    if (in && in->entries)
        in->parser = meter_expo_new(on_sample, on_error, in);
    if (!in || !in->parser) {
        meter_ingest_free(in);
        return TS_NOMEM;
    }
    in->ctx = ctx;
    in->source = source;
    in->diag = diag;
    in->at_ms = at_ms;
    in->newest_ms = INT64_MIN;
    meter_ingest_set_sink(in, to_store, st);
    ts_arena_init(&in->pending_arena);
    *out = in;
    return TS_OK;
}

void meter_ingest_set_sink(struct meter_ingest *in, meter_sink_fn fn, void *arg)
{
    in->sink = fn;
    in->sink_arg = arg;
}

static ts_status failed_flush(struct meter_ingest *in, struct ts_error *err)
{
    if (err)
        *err = in->flush_err;
    return in->flush_err.code ? in->flush_err.code : TS_INTERNAL;
}

ts_status meter_ingest_feed(struct meter_ingest *in, const char *data, size_t len,
                            struct ts_error *err)
{
    if (in->flush_failed)
        return failed_flush(in, err);
    ts_status st = meter_expo_feed(in->parser, data, len);
    return in->flush_failed ? failed_flush(in, err) : st;
}

ts_status meter_ingest_finish(struct meter_ingest *in, struct ts_error *err)
{
    if (in->parser) { /* the first call ends the body; retries only flush */
        ts_status st = meter_expo_finish(in->parser);
        meter_expo_free(in->parser);
        in->parser = NULL;
        if (st != TS_OK)
            return ts_err(err, st, "%s: cannot parse the body", in->source);
    }
    in->flush_failed = 0;
    return flush(in, INT64_MAX, err);
}

void meter_ingest_counts(const struct meter_ingest *in, struct meter_ingest_counts *c)
{
    *c = in->counts;
}

const struct meter_violation *meter_ingest_violations(const struct meter_ingest *in, size_t *n)
{
    *n = in->nviolations;
    return in->violations;
}

void meter_ingest_free(struct meter_ingest *in)
{
    if (!in)
        return;
    meter_expo_free(in->parser);
    free(in->entries);
    free(in->pending);
    ts_arena_free(&in->pending_arena);
    free(in);
}
