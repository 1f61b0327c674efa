/*
 * ingest.h - one dcgm-exporter scrape to store samples, one per device.
 *
 * A device is a GPU (its UUID label, `UUID` or the relabelled `uuid`) or a
 * MIG instance (UUID + "/" + GPU_I_ID when GPU_I_PROFILE names a profile);
 * a redacted UUID ("GPU-****") falls back to Hostname + ":gpu" + index.
 * Attribution: the tenant that owns the sample's namespace (`namespace`, or
 * the old `pod_namespace`) in the spec; a sample of no tenant's namespace
 * is kept as "unattributed", never dropped. The card share charged: a MIG
 * instance its memory units over the board's grid (profiles found by name
 * in the catalog, so 7g.79gb finds 7g.80gb), a whole GPU one. The engine
 * ratio: DCGM_FI_PROF_GR_ENGINE_ACTIVE, else DCGM_FI_DEV_GPU_UTIL / 100.
 */
#ifndef METER_INGEST_H
#define METER_INGEST_H

#include "catalog/catalog.h"
#include "meter/expo.h"
#include "spec/model.h"
#include "store/store.h"

#define METER_DEVICES_MAX 4096 /* devices in one scrape */

struct meter_device;

struct meter_scrape {
    const struct spec_model *model;
    const struct cat_catalog *cat;
    int64_t at_ms;                /* scrape time when samples carry none */
    const char *file;             /* for messages */
    struct ts_diag *diag;         /* malformed lines, unknown models */
    struct meter_device *devices;
    size_t ndevices;
    struct ts_arena arena;
};

void meter_scrape_init(struct meter_scrape *s, const struct spec_model *m,
                       const struct cat_catalog *cat, int64_t at_ms, const char *file,
                       struct ts_diag *diag);
void meter_scrape_release(struct meter_scrape *s);
/* Feed the scrape body (any chunking); returns the parser's status. */
ts_status meter_scrape_parse(struct meter_scrape *s, const char *text, size_t len);
/* The samples, one per device (valid until release); *n set. */
struct store_sample *meter_scrape_samples(struct meter_scrape *s, size_t *n);

#endif
