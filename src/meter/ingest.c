/*
 * ingest.c - streaming a dcgm-exporter body into store samples (see
 * ingest.h). The parser calls back per exposition sample; samples gather
 * into one entry per (device, scrape time); entries of finished scrape
 * times are attributed (attrib.c) and flushed in batches.
 */
#include "meter/ingest.h"
#include "meter/batch.h"
#include "meter/requests.h"
#include "util/grow.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/time.h"
#include "util/units.h"

#define NAME METER_NAME_MAX

/* One pod (or no pod) on one device at one scrape time. */
struct entry {
    char key[2 * NAME];
    char node[NAME], gpu[16], uuid[NAME], gi[16], model[NAME], profile[32];
    char ns[TS_K8S_LABEL_MAX + 1], pod[TS_K8S_NAME_MAX + 1]; /* whole: longer is rejected */
    int64_t ts_ms;
    double engine, util;         /* -1 when absent or out of range */
    int unreadable;              /* a utilisation value was NaN, +-Inf or out of range */
    int seen;                    /* SEEN_ENGINE, SEEN_UTIL: a value of it was read */
    double raw_engine, raw_util; /* the first value read of each, as read */
    int pods, pod_index;         /* pods listed on the device at that time, and which this is */
    int foreign;                 /* of them, not the owner's on a card time-sliced to guests */
};

struct meter_ingest {
    const struct meter_ctx *ctx;
    struct store *store;           /* where the request counters go (NULL: nowhere) */
    struct meter_request_log reqs; /* the shared workloads' request counters read */
    const char *source;
    struct ts_diag *diag;
    int64_t at_ms, newest_ms;
    int64_t win_lo, win_hi; /* the scrape times taken (ctx's window around now) */
    struct meter_expo *parser;
    struct entry *entries; /* device-times gathering, any order */
    size_t nentries, cap, flush_at;
    uint32_t *slots; /* open-addressing index of entries: position + 1, 0 free */
    size_t nslots;
    int64_t flushed_ms;         /* scrape times up to this one are stored (INT64_MIN: none) */
    struct meter_batch pending; /* attributed, not yet stored */
    struct meter_writer writer; /* stores batches (overlap: on its thread), keeps refused ones */
    int overlap;                /* meter_ingest_overlap: batches stored on their own thread */
    struct ts_error flush_err;
    int lost; /* out of memory while gathering: a line was not kept (final) */
    struct ts_error lost_err;
    int flush_failed, table_full_warned, unknown_warned, ambiguous_warned, mismatch_warned;
    int stale_warned, dup_warned, window_warned;
    struct meter_violation violations[METER_VIOLATIONS_MAX];
    size_t nviolations;
    struct meter_ingest_counts counts;
};

static ts_status to_store(void *arg, const struct store_sample *s, size_t n, size_t *inserted,
                          struct ts_error *err)
{
    return store_hold_samples(arg, s, n, inserted, err);
}

static ts_status commit_store(void *arg, int keep, struct ts_error *err)
{
    if (keep)
        return store_commit_samples(arg, err);
    store_abort_samples(arg);
    return TS_OK;
}

/* A problem that rejects no line: the device is still billed. */
static void warn(struct meter_ingest *in, const struct entry *d, const char *what)
{
    ts_diag_addf(in->diag, TS_SEV_ERROR, TS_NOT_FOUND, in->source, 0, 0, NULL, "device %s: %s",
                 d->key, what);
}

/* ---- flushing ---- */

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
    if (v->disagree[0] && in->mismatch_warned++ < METER_WARNINGS_MAX) {
        char what[5 * METER_NAME_MAX];
        snprintf(what, sizeof(what),
                 "%s: billed as unattributed (a sample without pod labels is "
                 "billed from the plan only where both agree)",
                 v->disagree);
        warn(in, d, what);
    }
    if (v->stale[0]) {
        in->counts.stale_custody++;
        if (in->stale_warned++ < METER_WARNINGS_MAX) {
            char what[5 * METER_NAME_MAX];
            snprintf(what, sizeof(what), "%s; billed from the plan until the ledger has it",
                     v->stale);
            warn(in, d, what);
        }
    }
    for (size_t i = 0; i < v->ncharges; i++)
        if (v->charges[i].share_ppm < 0 && !in->unknown_warned++)
            warn(in, d,
                 "no catalog profile of this name for its model; charged as a whole GPU "
                 "(add the board with tessera catalog import)");
}

/* Attribute one entry into pending samples. */
static void seen_of(const struct entry *d, struct meter_seen *seen)
{
    *seen = (struct meter_seen){d->node, d->gpu, d->uuid, d->gi,        d->model,  d->profile,
                                d->ns,   d->pod, d->pods, d->pod_index, d->foreign};
}

static ts_status attribute(struct meter_ingest *in, const struct entry *d)
{
    struct meter_seen seen;
    seen_of(d, &seen);
    struct meter_verdict v;
    meter_attribute(in->ctx, &seen, d->ts_ms, &v);
    warn_once(in, d, &v);
    if (v.violation)
        note_violation(in, d, &v);
    double ratio = d->engine >= 0 ? d->engine : d->util;
    int64_t util = ratio < 0 ? -1 : (int64_t)llround(fmin(fmax(ratio, 0.0), 1.0) * TS_PPM);
    if (util < 0 && d->unreadable)
        in->counts.unreadable++;
    struct meter_batch *b = &in->pending;
    for (size_t i = 0; i < v.ncharges; i++) {
        struct store_sample *s = meter_batch_slot(b);
        const char *key = meter_batch_join(b, d->key, v.charges[i].suffix);
        enum { NODE, MODEL, PROFILE, TENANT, NS, POD, WORKLOAD, NTEXT };
        const char *src[NTEXT] = {d->node, d->model, d->profile,           v.charges[i].tenant,
                                  d->ns,   d->pod,   v.charges[i].workload},
                   *text[NTEXT];
        if (!s || !key || !meter_batch_copies(b, src, text, NTEXT))
            return TS_NOMEM;
        int64_t share = v.charges[i].share_ppm < 0 ? TS_PPM : v.charges[i].share_ppm;
        *s = (struct store_sample){text[NODE],    key,          d->ts_ms,      text[MODEL],
                                   text[PROFILE], text[TENANT], text[NS],      text[POD],
                                   share,         util,         text[WORKLOAD]};
    }
    return TS_OK;
}

static void count_stored(struct meter_ingest *in, size_t n, size_t inserted)
{
    in->counts.inserted += inserted;
    in->counts.already_stored += n - inserted;
}

/* Collect what the writer committed since the last call, and the status
 * of the put it ran on its thread (none: TS_OK). */
static ts_status wait_writer(struct meter_ingest *in, struct ts_error *err)
{
    size_t n, inserted;
    ts_status st = meter_writer_wait(&in->writer, &n, &inserted, err);
    count_stored(in, n, inserted);
    return st;
}

static ts_status put_here(struct meter_ingest *in, struct meter_batch *b, int commit_now,
                          struct ts_error *err)
{
    ts_status st = meter_writer_put(&in->writer, b, commit_now, err);
    ts_status counted = wait_writer(in, err);
    return st != TS_OK ? st : counted;
}

/* Store the pending batch, after the one before it (stored on the writer's
 * thread, or refused before and stored again here first). With overlap
 * the pending batch goes to the writer's thread and this returns at once,
 * and up to METER_COMMIT_BATCHES share a commit (commit_now: commit what
 * is held); without, the store may be shared and each batch is committed. */
static ts_status store_pending(struct meter_ingest *in, int commit_now, struct ts_error *err)
{
    commit_now |= !in->overlap;
    ts_status st = wait_writer(in, err);
    if (st == TS_OK && in->writer.refused)
        st = put_here(in, NULL, commit_now, err);
    if (st != TS_OK)
        return st;
    if (in->overlap && meter_writer_start(&in->writer, &in->pending, commit_now) == 0)
        return TS_OK;
    return put_here(in, &in->pending, commit_now, err);
}

/* Entries in the order of a sorted import: time, device, namespace, pod. */
static int cmp_entry(const void *x, const void *y)
{
    const struct entry *a = x, *b = y;
    if (a->ts_ms != b->ts_ms)
        return a->ts_ms < b->ts_ms ? -1 : 1;
    int c = strcmp(a->key, b->key);
    c = c ? c : strcmp(a->ns, b->ns);
    return c ? c : strcmp(a->pod, b->pod);
}

static int same_device(const struct entry *a, const struct entry *b)
{
    return a->ts_ms == b->ts_ms && strcmp(a->key, b->key) == 0;
}

/* Count the pods listed on each device at each time (entries sorted). A
 * device with pods and lines without pod labels (sorted first: "" < any
 * namespace) is charged through its pods only: the unlabelled entry lends
 * them its utilisation and is marked -1, not billed twice. */
static void count_pods(struct entry *e, size_t n)
{
    for (size_t i = 0, end; i < n; i = end) {
        int pods = 0;
        for (end = i; end < n && same_device(&e[i], &e[end]); end++)
            e[end].pod_index = e[end].ns[0] ? pods++ : 0;
        for (size_t k = i; k < end; k++) {
            e[k].pods = pods;
            if (pods && !e[i].ns[0] && k > i) {
                e[k].engine = e[k].engine >= 0 ? e[k].engine : e[i].engine;
                e[k].util = e[k].util >= 0 ? e[k].util : e[i].util;
                e[k].unreadable |= e[i].unreadable;
            }
        }
        if (pods && !e[i].ns[0])
            e[i].pods = -1;
    }
}

/* Count the pods of each device-time that are not the owner's, on a card
 * its owner time-slices to guests (the owner is charged the rest). */
static void count_foreign(const struct meter_ctx *ctx, struct entry *e, size_t n)
{
    for (size_t i = 0, end; i < n; i = end) {
        int foreign = 0;
        for (end = i; end < n && same_device(&e[i], &e[end]); end++) {
            struct meter_seen seen;
            seen_of(&e[end], &seen);
            foreign += e[end].ns[0] && meter_pod_foreign(ctx, &seen, e[end].ts_ms);
        }
        for (size_t k = i; k < end; k++)
            e[k].foreign = foreign;
    }
}

static int reindex(struct meter_ingest *in, size_t want);

/* Move entries older than before_ms (all with INT64_MAX) to pending and
 * store them; a batch that failed before goes first. The entries are
 * sorted first: what is flushed is a prefix, attributed as a sorted import
 * would, and later lines of the times flushed are refused (on_sample). */
static ts_status flush(struct meter_ingest *in, int64_t before_ms, struct ts_error *err)
{
    ts_status st = store_pending(in, 0, err);
    if (st != TS_OK)
        return st;
    if (in->nentries)
        qsort(in->entries, in->nentries, sizeof(*in->entries), cmp_entry);
    size_t n = 0;
    while (n < in->nentries && in->entries[n].ts_ms < before_ms)
        n++;
    count_pods(in->entries, n);
    count_foreign(in->ctx, in->entries, n);
    for (size_t i = 0; i < n; i++)
        if (in->entries[i].pods >= 0 && attribute(in, &in->entries[i]) != TS_OK)
            return ts_err(err, TS_NOMEM, "%s: out of memory", in->source);
    if (n && in->entries[n - 1].ts_ms > in->flushed_ms)
        in->flushed_ms = in->entries[n - 1].ts_ms;
    memmove(in->entries, in->entries + n, (in->nentries - n) * sizeof(*in->entries));
    in->nentries -= n;
    if (in->nentries + n && !reindex(in, in->nslots)) /* sorted: every position moved */
        return ts_err(err, TS_NOMEM, "%s: out of memory", in->source);
    return store_pending(in, before_ms == INT64_MAX, err);
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

/* a then b into dst (size bytes), cut to fit: snprintf's result without
 * its cost (this runs for every line). */
static void join2(char *dst, size_t size, const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    na = na < size - 1 ? na : size - 1;
    nb = nb < size - 1 - na ? nb : size - 1 - na;
    memcpy(dst, a, na);
    memcpy(dst + na, b, nb);
    dst[na + nb] = '\0';
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
    char mig[NAME + 2] = "";
    if (is_mig(profile))
        join2(mig, sizeof(mig), "/", gi ? gi : "");
    join2(key, size, uuid, mig); /* an absurd UUID: kept cut, still one device */
}

/* What tells entries apart: device, scrape time, namespace and pod. */
struct ident {
    const char *key, *ns, *pod;
    int64_t ts;
};

/* s into h eight bytes at a time (the index's hash, run for every line;
 * the request counters' series ids keep FNV-1a: they are stored). */
static uint64_t mix_str(uint64_t h, const char *s)
{
    const uint64_t k = 0x9e3779b97f4a7c15u;
    size_t n = strlen(s);
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * k;
        h ^= h >> 29;
    }
    uint64_t w = 0;
    memcpy(&w, s, n);
    h = (h ^ w ^ (uint64_t)n << 56) * k; /* the length ends the string: "ab"+"c" != "a"+"bc" */
    return h ^ h >> 32;
}

static uint64_t hash_ident(const struct ident *id)
{
    uint64_t h = 14695981039346656037u ^ (uint64_t)id->ts;
    return mix_str(mix_str(mix_str(h * 0x9e3779b97f4a7c15u, id->key), id->ns), id->pod);
}

static int matches(const struct entry *e, const struct ident *id)
{
    return e->ts_ms == id->ts && !strcmp(e->key, id->key) && !strcmp(e->ns, id->ns) &&
           !strcmp(e->pod, id->pod);
}

static void slot_put(struct meter_ingest *in, size_t pos, uint64_t h)
{
    size_t i = (size_t)h & (in->nslots - 1);
    while (in->slots[i])
        i = (i + 1) & (in->nslots - 1);
    in->slots[i] = (uint32_t)pos + 1;
}

static uint64_t hash_entry(const struct entry *e)
{
    struct ident id = {e->key, e->ns, e->pod, e->ts_ms};
    return hash_ident(&id);
}

/* Rebuild the index with at least want slots (a power of two, at least
 * twice the entries). */
static int reindex(struct meter_ingest *in, size_t want)
{
    size_t n = 64;
    while (n < want || n < 2 * (in->nentries + 1))
        n *= 2;
    if (n == in->nslots) { /* after a flush: the same size, cleared */
        memset(in->slots, 0, n * sizeof(*in->slots));
    } else {
        uint32_t *slots = calloc(n, sizeof(*slots));
        if (!slots)
            return 0;
        free(in->slots);
        in->slots = slots;
        in->nslots = n;
    }
    for (size_t i = 0; i < in->nentries; i++)
        slot_put(in, i, hash_entry(&in->entries[i]));
    return 1;
}

static struct entry *find(struct meter_ingest *in, const struct ident *id, uint64_t h)
{
    for (size_t i = (size_t)h & (in->nslots - 1); in->slots[i]; i = (i + 1) & (in->nslots - 1))
        if (matches(&in->entries[in->slots[i] - 1], id))
            return &in->entries[in->slots[i] - 1];
    return NULL;
}

static void copy(char *dst, size_t size, const char *src) { join2(dst, size, src ? src : "", ""); }

/* Out of memory while gathering: the line cannot be kept, so the feed
 * fails and so does every finish after it (what was stored before stays:
 * importing the file again stores the rest), never a line dropped silently. */
static void lose_line(struct meter_ingest *in, const struct meter_sample *x)
{
    if (in->lost++)
        return;
    ts_err(&in->lost_err, TS_NOMEM, "%s:%ld: out of memory: the line cannot be kept", in->source,
           (long)x->line);
    if (!in->flush_failed) {
        in->flush_failed = 1;
        in->flush_err = in->lost_err;
    }
}

/* Room for one more entry (of time ts): past METER_GATHER_MAX the times
 * before both the newest and ts (a late time still arriving) are stored,
 * at most once per METER_GATHER_MAX new entries. */
static int make_room(struct meter_ingest *in, const struct meter_sample *x, int64_t ts)
{
    if (in->nentries >= in->flush_at && !in->flush_failed) {
        if (flush(in, ts < in->newest_ms ? ts : in->newest_ms, &in->flush_err) != TS_OK)
            in->flush_failed = 1;
        in->flush_at = in->nentries + METER_GATHER_MAX;
    }
    if (in->nentries == METER_SCRAPE_DEVICES_MAX) {
        if (!in->flush_failed && !in->table_full_warned++) {
            ts_diag_addf(in->diag, TS_SEV_ERROR, TS_TOO_LARGE, in->source, 0, 0, NULL,
                         "more than %d devices in one scrape time; the rest of that scrape is "
                         "rejected",
                         METER_SCRAPE_DEVICES_MAX);
            in->counts.rejected_lines++;
        }
        return 0;
    }
    if (ts_grow((void **)&in->entries, &in->cap, in->nentries, sizeof(*in->entries)) &&
        (2 * (in->nentries + 1) <= in->nslots || reindex(in, 2 * in->nslots)))
        return 1;
    lose_line(in, x);
    return 0;
}

/* A line of a scrape time already stored: refused, never merged half. */
static void late_line(struct meter_ingest *in, const struct meter_sample *x, int64_t ts)
{
    ts_diag_addf(in->diag, TS_SEV_ERROR, TS_TOO_LARGE, in->source, (int)x->line, 1, NULL,
                 "scrape time %lld ms is already stored: the file is out of order by more than "
                 "%d device-scrapes (sort it by time)",
                 (long long)ts, METER_GATHER_MAX);
    in->counts.rejected_lines++;
}

static struct entry *add(struct meter_ingest *in, const struct meter_sample *x,
                         const struct ident *id)
{
    if (!make_room(in, x, id->ts))
        return NULL;
    if (in->flushed_ms != INT64_MIN && id->ts <= in->flushed_ms) {
        late_line(in, x, id->ts); /* its time was stored by make_room */
        return NULL;
    }
    struct entry *d = &in->entries[in->nentries];
    slot_put(in, in->nentries++, hash_ident(id));
    struct meter_seen s;
    meter_seen_of(x, &s);
    copy(d->key, sizeof(d->key), id->key);
    copy(d->node, sizeof(d->node), s.node);
    copy(d->gpu, sizeof(d->gpu), s.gpu_index);
    copy(d->uuid, sizeof(d->uuid), s.uuid);
    copy(d->gi, sizeof(d->gi), s.gi_id);
    copy(d->model, sizeof(d->model), s.model);
    copy(d->profile, sizeof(d->profile), is_mig(s.profile) ? s.profile : "");
    copy(d->ns, sizeof(d->ns), id->ns);
    copy(d->pod, sizeof(d->pod), id->pod);
    d->ts_ms = id->ts;
    d->engine = d->util = -1;
    d->unreadable = d->seen = 0;
    d->pods = d->pod_index = 0;
    in->counts.devices++;
    return d;
}

enum { SEEN_ENGINE = 1, SEEN_UTIL = 2 };

static int same_value(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* Whether x repeats a utilisation value d already has (which bit): a
 * conflicting one is counted and warned; the first value read is kept. */
static int repeated(struct meter_ingest *in, struct entry *d, const struct meter_sample *x, int bit)
{
    double *first = bit == SEEN_ENGINE ? &d->raw_engine : &d->raw_util;
    if (!(d->seen & bit)) {
        d->seen |= bit;
        *first = x->value;
        return 0;
    }
    if (same_value(*first, x->value))
        return 1;
    in->counts.duplicates++;
    if (in->dup_warned++ < METER_WARNINGS_MAX)
        ts_diag_addf(in->diag, TS_SEV_ERROR, TS_INVALID, in->source, (int)x->line, 1, NULL,
                     "device %s at %lld ms: %s %g conflicts with %g read before: the first "
                     "kept",
                     d->key, (long long)d->ts_ms, x->metric, x->value, *first);
    return 1;
}

/* The engine ratio a metric gives; a utilisation value that is NaN, +-Inf
 * or out of range is unreadable (the device is still billed, its ratio
 * unknown). */
static void take_ratio(struct meter_ingest *in, struct entry *d, const struct meter_sample *x)
{
    if (strcmp(x->metric, "DCGM_FI_PROF_GR_ENGINE_ACTIVE") == 0) {
        if (repeated(in, d, x, SEEN_ENGINE))
            return;
        if (x->value >= 0 && x->value <= 1)
            d->engine = x->value;
        else
            d->unreadable = 1;
    } else if (strcmp(x->metric, "DCGM_FI_DEV_GPU_UTIL") == 0 ||
               strcmp(x->metric, "dcgm_gpu_utilization") == 0) {
        if (repeated(in, d, x, SEEN_UTIL))
            return;
        if (x->value >= 0 && x->value <= 100)
            d->util = x->value / 100.0;
        else
            d->unreadable = 1;
    }
}

/* A namespace or pod name longer than Kubernetes allows: the line is
 * rejected (cut, two pods would become one key and one go unbilled). */
static int too_long(struct meter_ingest *in, const struct meter_sample *x, const char *ns,
                    const char *pod)
{
    size_t nns = ns ? strlen(ns) : 0, npod = ns && pod ? strlen(pod) : 0;
    if (nns <= TS_K8S_LABEL_MAX && npod <= TS_K8S_NAME_MAX)
        return 0;
    ts_diag_addf(in->diag, TS_SEV_ERROR, TS_TOO_LARGE, in->source, (int)x->line, 1, NULL,
                 "%s of %zu bytes: Kubernetes allows %d",
                 nns > TS_K8S_LABEL_MAX ? "namespace" : "pod name",
                 nns > TS_K8S_LABEL_MAX ? nns : npod,
                 nns > TS_K8S_LABEL_MAX ? TS_K8S_LABEL_MAX : TS_K8S_NAME_MAX);
    in->counts.rejected_lines++;
    return 1;
}

/* A sample of the shared workloads' request counter: kept, or refused
 * with its line when it names a consumer that is none. */
static void take_requests(struct meter_ingest *in, const struct meter_sample *x)
{
    const char *owner, *workload, *consumer;
    char why[4 * METER_NAME_MAX];
    enum meter_request_verdict v = meter_request_of(in->ctx->model, x, &owner, &workload, &consumer,
                                                    why, sizeof(why));
    if (v == METER_REQ_REFUSE) {
        ts_diag_addf(in->diag, TS_SEV_ERROR, TS_INVALID, in->source, (int)x->line, 1, NULL, "%s",
                     why);
        in->counts.rejected_lines++;
    } else if (v == METER_REQ_KEEP && isfinite(x->value) && x->value >= 0) {
        int64_t ts = x->has_timestamp ? x->timestamp_ms : in->at_ms;
        if (!meter_requests_keep(&in->reqs, owner, workload, consumer, ts, x))
            lose_line(in, x);
    }
}

/* A scrape time outside the window: the line is refused with its place. */
static int out_of_window(struct meter_ingest *in, const struct meter_sample *x)
{
    int64_t ts = x->has_timestamp ? x->timestamp_ms : in->at_ms;
    if (ts >= in->win_lo && ts <= in->win_hi)
        return 0;
    in->counts.out_of_window++;
    in->counts.rejected_lines++;
    if (in->window_warned++ < METER_WARNINGS_MAX) {
        char when[40];
        ts_time_format(ts, when);
        ts_diag_addf(in->diag, TS_SEV_ERROR, TS_INVALID, in->source, (int)x->line, 1, NULL,
                     "scrape time %lld ms (%s) is %s: refused (a timestamp in seconds, or a "
                     "clock far off? --max-age and --max-ahead set the window)",
                     (long long)ts, when,
                     ts < in->win_lo ? "older than --max-age" : "later than now + --max-ahead");
    }
    return 1;
}

static int on_sample(void *arg, const struct meter_sample *x)
{
    struct meter_ingest *in = arg;
    if (out_of_window(in, x))
        return 0;
    if (strcmp(x->metric, METER_REQUESTS_METRIC) == 0) {
        take_requests(in, x);
        return 0;
    }
    const char *uuid = label_or(x, "UUID", "uuid");
    if (!uuid || !*uuid) /* any value, NaN too: the device was there (billed) */
        return 0;
    char key[2 * NAME];
    device_key(x, key, sizeof(key));
    /* the namespace and pod as meter_seen_of reads them, without its other labels */
    const char *ns = label_or(x, "namespace", "pod_namespace");
    const char *pod = label_or(x, "pod", "pod_name");
    if (too_long(in, x, ns, pod))
        return 0;
    struct ident id = {key, ns ? ns : "", ns && pod ? pod : "",
                       x->has_timestamp ? x->timestamp_ms : in->at_ms};
    if (in->flushed_ms != INT64_MIN && id.ts <= in->flushed_ms) {
        late_line(in, x, id.ts);
        return 0;
    }
    struct entry *d = find(in, &id, hash_ident(&id));
    if (!d && !(d = add(in, x, &id)))
        return 0;
    if (id.ts > in->newest_ms)
        in->newest_ms = id.ts;
    take_ratio(in, d, x);
    return 0;
}

static void on_error(void *arg, long line, int column, const char *msg)
{
    struct meter_ingest *in = arg;
    ts_diag_addf(in->diag, TS_SEV_ERROR, TS_SYNTAX, in->source, (int)line, column, NULL, "%s", msg);
    in->counts.rejected_lines++;
}

/* ---- the object ---- */

/* The scrape times taken: around now by ctx's bounds (0: none). */
static void window_of(const struct meter_ctx *ctx, int64_t *lo, int64_t *hi)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    *lo = ctx->max_age_ms > 0 ? now_ms - ctx->max_age_ms : INT64_MIN;
    *hi = ctx->max_ahead_ms > 0 ? now_ms + ctx->max_ahead_ms : INT64_MAX;
}

ts_status meter_ingest_new(const struct meter_ctx *ctx, struct store *st, int64_t at_ms,
                           const char *source, struct ts_diag *diag, struct meter_ingest **out)
{
    struct meter_ingest *in = calloc(1, sizeof(*in));
    if (in)
        in->entries = malloc((in->cap = 16) * sizeof(*in->entries));
    if (in && in->entries && reindex(in, 64))
        in->parser = meter_expo_new(on_sample, on_error, in);
    if (!in || !in->parser) {
        meter_ingest_free(in);
        return TS_NOMEM;
    }
    in->ctx = ctx;
    in->source = source;
    in->diag = diag;
    in->at_ms = at_ms;
    in->newest_ms = in->flushed_ms = INT64_MIN;
    window_of(ctx, &in->win_lo, &in->win_hi);
    in->flush_at = METER_GATHER_MAX;
    meter_ingest_set_sink(in, to_store, commit_store, st);
    in->store = st;
    *out = in;
    return TS_OK;
}

void meter_ingest_set_sink(struct meter_ingest *in, meter_sink_fn fn, meter_commit_fn commit,
                           void *arg)
{
    in->writer.sink = fn;
    in->writer.commit = commit;
    in->writer.arg = arg;
}

void meter_ingest_overlap(struct meter_ingest *in) { in->overlap = 1; }

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
    if (in->lost) {
        if (err)
            *err = in->lost_err;
        return in->lost_err.code;
    }
    in->flush_failed = 0;
    ts_status st = flush(in, INT64_MAX, err);
    st = st == TS_OK ? wait_writer(in, err) : st;
    st = st == TS_OK ? put_here(in, NULL, 1, err) : st; /* what was held, committed */
    return st == TS_OK ? meter_requests_store(&in->reqs, in->store, in->source, err) : st;
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
    meter_writer_free(&in->writer); /* first: its thread may still be storing */
    free(in->entries);
    free(in->slots);
    meter_batch_free(&in->pending);
    meter_requests_free(&in->reqs);
    free(in);
}
