/*
 * ingest.c - attributing a dcgm-exporter scrape (see ingest.h).
 */
#include "meter/ingest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct meter_device {
    const char *key, *node, *model, *profile, *ns, *pod;
    int64_t ts_ms;
    double engine, util;         /* -1 when absent */
};

void meter_scrape_init(struct meter_scrape *s, const struct spec_model *m,
                       const struct cat_catalog *cat, int64_t at_ms, const char *file,
                       struct ts_diag *diag)
{
    memset(s, 0, sizeof(*s));
    s->model = m;
    s->cat = cat;
    s->at_ms = at_ms;
    s->file = file;
    s->diag = diag;
    ts_arena_init(&s->arena);
    s->devices = ts_arena_array(&s->arena, METER_DEVICES_MAX, sizeof(*s->devices));
}

void meter_scrape_release(struct meter_scrape *s)
{
    ts_arena_free(&s->arena);
    s->devices = NULL;
    s->ndevices = 0;
}

static const char *first_label(const struct meter_sample *x, const char *a, const char *b)
{
    const char *v = meter_label(x, a);
    return v ? v : b ? meter_label(x, b) : NULL;
}

static int is_mig(const char *profile)
{
    return profile && *profile && strcmp(profile, "<<<NULL>>>") != 0;
}

static struct meter_device *device_for(struct meter_scrape *s, const struct meter_sample *x)
{
    const char *uuid = first_label(x, "UUID", "uuid");
    const char *profile = meter_label(x, "GPU_I_PROFILE");
    const char *gi = meter_label(x, "GPU_I_ID");
    const char *host = first_label(x, "Hostname", "hostname"), *index = meter_label(x, "gpu");
    if (!uuid || !*uuid || !s->devices)
        return NULL;
    char key[256], redacted[160];
    if (strchr(uuid, '*')) { /* a redacted UUID names no card: host and index do */
        snprintf(redacted, sizeof(redacted), "%s:gpu%s", host ? host : "", index ? index : "");
        uuid = redacted;
    }
    snprintf(key, sizeof(key), "%s%s%s", uuid, is_mig(profile) ? "/" : "",
             is_mig(profile) && gi ? gi : "");
    for (size_t i = 0; i < s->ndevices; i++)
        if (strcmp(s->devices[i].key, key) == 0)
            return &s->devices[i];
    if (s->ndevices == METER_DEVICES_MAX)
        return NULL;
    struct meter_device *d = &s->devices[s->ndevices++];
    const char *ns = first_label(x, "namespace", "pod_namespace");
    const char *pod = first_label(x, "pod", "pod_name");
    *d = (struct meter_device){ts_arena_strdup(&s->arena, key),
                               ts_arena_strdup(&s->arena, host),
                               ts_arena_strdup(&s->arena, meter_label(x, "modelName")),
                               ts_arena_strdup(&s->arena, is_mig(profile) ? profile : ""),
                               ts_arena_strdup(&s->arena, ns ? ns : ""),
                               ts_arena_strdup(&s->arena, pod ? pod : ""),
                               x->has_timestamp ? x->timestamp_ms : s->at_ms, -1, -1};
    return d;
}

static int on_sample(void *ctx, const struct meter_sample *x)
{
    struct meter_scrape *s = ctx;
    struct meter_device *d = device_for(s, x);
    if (!d || !isfinite(x->value))
        return 0;
    if (strcmp(x->metric, "DCGM_FI_PROF_GR_ENGINE_ACTIVE") == 0)
        d->engine = x->value;
    else if (strcmp(x->metric, "DCGM_FI_DEV_GPU_UTIL") == 0 ||
             strcmp(x->metric, "dcgm_gpu_utilization") == 0)
        d->util = x->value / 100.0;
    return 0;
}

static void on_error(void *ctx, long line, int column, const char *msg)
{
    struct meter_scrape *s = ctx;
    struct ts_error e;
    ts_err_at(&e, TS_SYNTAX, s->file, (int)line, column, NULL, "%s", msg);
    ts_diag_add(s->diag, &e);
}

ts_status meter_scrape_parse(struct meter_scrape *s, const char *text, size_t len)
{
    if (!s->devices)
        return TS_NOMEM;
    struct meter_expo *p = meter_expo_new(on_sample, on_error, s);
    if (!p)
        return TS_NOMEM;
    ts_status st = meter_expo_feed(p, text, len);
    if (st == TS_OK)
        st = meter_expo_finish(p);
    meter_expo_free(p);
    return st;
}

static const char *tenant_of(const struct spec_model *m, const char *ns)
{
    for (size_t i = 0; ns && *ns && i < m->ntenants; i++)
        for (size_t j = 0; j < m->tenants[i].nnamespaces; j++)
            if (strcmp(m->tenants[i].namespaces[j], ns) == 0)
                return m->tenants[i].name;
    return "unattributed";
}

/* The share of the card a device is charged, in ppm (whole GPU: 1e6). */
static int64_t share_of(const struct meter_scrape *s, const struct meter_device *d)
{
    if (!d->profile[0])
        return 1000000;
    const struct cat_model *m = d->model ? cat_model_find(s->cat, d->model) : NULL;
    const struct cat_profile *p = m ? cat_profile_find(m, d->profile) : NULL;
    if (!p) {
        struct ts_error e;
        ts_err_at(&e, TS_NOT_FOUND, s->file, 0, 0, NULL, "device %s: no catalog profile %s on "
                  "'%s'; charged as a whole GPU (add the board with tessera catalog import)",
                  d->key, d->profile, d->model ? d->model : "?");
        ts_diag_add(s->diag, &e);
        return 1000000;
    }
    return (int64_t)p->mem_units * 1000000 / m->grid;
}

struct store_sample *meter_scrape_samples(struct meter_scrape *s, size_t *n)
{
    struct store_sample *out = ts_arena_array(&s->arena, s->ndevices + 1, sizeof(*out));
    *n = 0;
    for (size_t i = 0; out && i < s->ndevices; i++) {
        const struct meter_device *d = &s->devices[i];
        double ratio = d->engine >= 0 ? d->engine : d->util;
        out[(*n)++] = (struct store_sample){
            d->node ? d->node : "", d->key, d->ts_ms, d->model ? d->model : "", d->profile,
            tenant_of(s->model, d->ns), d->ns, d->pod, share_of(s, d),
            ratio < 0 ? -1 : (int64_t)llround(fmin(fmax(ratio, 0.0), 1.0) * 1e6)};
    }
    return out;
}
