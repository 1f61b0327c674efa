/*
 * import_yaml.c - writes the GpuModel document of `catalog import` (see
 * import.h) through libyaml's emitter, in builtin.yaml's layout: a comment
 * header, then block mappings with metadata and each profile as a flow
 * mapping on one line; the product name and placements double-quoted,
 * everything else plain (names, numbers, the architecture).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>
#include "catalog/import_int.h"
#include "util/names.h"

/* An emitter writing into a ts_sbuf; ok drops to 0 at the first failure
 * and every later call does nothing. */
struct emit {
    yaml_emitter_t e;
    int ok;
};

static int write_out(void *data, unsigned char *buf, size_t n)
{
    ts_sbuf_add(data, (const char *)buf, n);
    return ts_sbuf_status(data) == TS_OK;
}

static void put(struct emit *y, yaml_event_t *ev, int made)
{
    y->ok = y->ok && made && yaml_emitter_emit(&y->e, ev);
}

static void scalar(struct emit *y, const char *s, int quoted)
{
    yaml_event_t ev;
    yaml_scalar_style_t style = quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_PLAIN_SCALAR_STYLE;
    if (y->ok)
        put(y, &ev,
            yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), !quoted,
                                         1, style));
}

/* key: value, the value printf-formatted and plain. */
static void kvf(struct emit *y, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void kvf(struct emit *y, const char *key, const char *fmt, ...)
{
    char v[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof(v), fmt, ap);
    va_end(ap);
    scalar(y, key, 0);
    scalar(y, v, 0);
}

static void map_start(struct emit *y, int flow)
{
    yaml_event_t ev;
    if (y->ok)
        put(y, &ev,
            yaml_mapping_start_event_initialize(
                &ev, NULL, NULL, 1, flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE));
}

static void map_end(struct emit *y)
{
    yaml_event_t ev;
    if (y->ok)
        put(y, &ev, yaml_mapping_end_event_initialize(&ev));
}

static void seq_start(struct emit *y, int flow)
{
    yaml_event_t ev;
    if (y->ok)
        put(y, &ev,
            yaml_sequence_start_event_initialize(
                &ev, NULL, NULL, 1, flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE));
}

static void seq_end(struct emit *y)
{
    yaml_event_t ev;
    if (y->ok)
        put(y, &ev, yaml_sequence_end_event_initialize(&ev));
}

/* "{0,2,4}:2": the starts of p and its size. */
static void placements(const struct iprof *p, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "{");
    for (int u = 0; u < TS_MIG_GRID_MAX && k < n; u++)
        if (p->starts & ((uint32_t)1 << u))
            k += (size_t)snprintf(buf + k, n - k, "%s%d", k > 1 ? "," : "", u);
    if (k < n)
        snprintf(buf + k, n - k, "}:%d", p->size);
}

/* "- {name: 1g.10gb, id: 19, ..., placements: "{0,1,2}:1"}" */
static void emit_profile(struct emit *y, const struct iprof *p)
{
    char pl[3 * TS_MIG_GRID_MAX + 16];
    placements(p, pl, sizeof(pl));
    map_start(y, 1);
    kvf(y, "name", "%s", p->name);
    kvf(y, "id", "%d", p->id);
    kvf(y, "computeSlices", "%d", p->compute);
    kvf(y, "memoryGiB", "%ld.%02ld", p->cgib / 100, p->cgib % 100);
    kvf(y, "sms", "%d", p->sms);
    kvf(y, "maxCount", "%d", p->max_count);
    scalar(y, "placements", 0);
    scalar(y, pl, 1);
    map_end(y);
}

/* The spec: mapping of the model. */
static void emit_spec(struct emit *y, const struct model *m)
{
    map_start(y, 0);
    scalar(y, "displayName", 0);
    scalar(y, m->g->product, 1);
    scalar(y, "productNames", 0);
    seq_start(y, 1);
    scalar(y, m->g->product, 1);
    seq_end(y);
    kvf(y, "memoryGiB", "%ld.%02ld", m->card_cgib / 100, m->card_cgib % 100);
    kvf(y, "sms", "%d", m->sms);
    kvf(y, "architecture", "%s", m->arch);
    kvf(y, "mig", "true");
    kvf(y, "migGrid", "%d", m->grid);
    kvf(y, "computeSlices", "%d", m->compute);
    scalar(y, "profiles", 0);
    seq_start(y, 0);
    for (size_t i = 0; i < m->n; i++)
        emit_profile(y, m->order[i]);
    seq_end(y);
    map_end(y);
}

/* The document: apiVersion, kind, metadata and spec. */
static void emit_document(struct emit *y, const struct model *m)
{
    yaml_event_t ev;
    if (y->ok)
        put(y, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0));
    map_start(y, 0);
    kvf(y, "apiVersion", "%s", TS_API_VERSION);
    kvf(y, "kind", "GpuModel");
    scalar(y, "metadata", 0);
    map_start(y, 1);
    kvf(y, "name", "%s", m->name);
    map_end(y);
    scalar(y, "spec", 0);
    emit_spec(y, m);
    map_end(y);
    if (y->ok)
        put(y, &ev, yaml_document_end_event_initialize(&ev, 1));
}

ts_status cat__emit_model(const struct model *m, struct ts_sbuf *out)
{
    struct emit y = {.ok = 1};
    yaml_event_t ev;
    ts_sbuf_printf(out,
                   "# GpuModel imported by 'tessera catalog import' from the nvidia-smi output\n"
                   "# of GPU %d (%s). Profiles are keyed by ID; names are display\n"
                   "# only. sms is the full-card MIG profile's; memoryGiB the card's.\n",
                   m->g->index, m->g->product);
    if (!yaml_emitter_initialize(&y.e))
        return TS_NOMEM;
    yaml_emitter_set_output(&y.e, write_out, out);
    yaml_emitter_set_unicode(&y.e, 1);
    yaml_emitter_set_width(&y.e, -1); /* a profile stays on one line */
    yaml_emitter_set_indent(&y.e, 2);
    put(&y, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
    emit_document(&y, m);
    if (y.ok)
        put(&y, &ev, yaml_stream_end_event_initialize(&ev));
    y.ok = y.ok && yaml_emitter_flush(&y.e);
    yaml_emitter_delete(&y.e);
    if (ts_sbuf_status(out) != TS_OK)
        return ts_sbuf_status(out);
    return y.ok ? TS_OK : TS_INTERNAL;
}
