/*
 * spec.h - loading tessera's Kubernetes-style YAML documents.
 *
 * Every document has the envelope
 *     apiVersion: tessera.dev/v1alpha1
 *     kind: <Kind>
 *     metadata: {name: <name>}
 *     spec: {...}
 * spec_load_objects reads any set of kinds (each described by a schema) from
 * one or more files; spec_load uses it for Fleet, Tenant and PriceBook and
 * then checks the cross-document rules (unique names, references, contradictions).
 * The catalog module uses spec_load_objects for its GpuModel documents.
 */
#ifndef SPEC_SPEC_H
#define SPEC_SPEC_H

#include "spec/model.h"
#include "spec/schema.h"
#include "util/names.h" /* TS_API_VERSION, every document's apiVersion */

struct spec_kind {
    const char *kind;                 /* e.g. "Tenant" */
    const struct spec_schema *schema; /* schema of its spec: part */
    size_t name_off;                  /* where metadata.name is stored */
};

struct spec_object {
    const struct spec_kind *kind;
    void *obj; /* kind->schema->size bytes */
    const char *name;
    struct spec_loc loc; /* the document's metadata */
};

/* Read every document of every file. Errors go to diag; returns TS_OK only
 * when diag stayed empty. Objects live in arena. */
ts_status spec_load_objects(const char *const *paths, size_t npaths, const struct spec_kind *kinds,
                            size_t nkinds, struct ts_arena *arena, struct spec_object **objs,
                            size_t *nobjs, struct ts_diag *diag);

/* Same, from text already in memory (name is used in messages). */
ts_status spec_load_objects_text(const char *text, size_t len, const char *name,
                                 const struct spec_kind *kinds, size_t nkinds,
                                 struct ts_arena *arena, struct spec_object **objs, size_t *nobjs,
                                 struct ts_diag *diag);

/* Load a tenancy spec. On success *out is a new model (free with
 * spec_model_free); on failure diag holds every problem found. */
ts_status spec_load(const char *const *paths, size_t npaths, struct spec_model **out,
                    struct ts_diag *diag);
ts_status spec_load_text(const char *text, size_t len, const char *name, struct spec_model **out,
                         struct ts_diag *diag);
/* spec_load, but where every document read cleanly and only the model's
 * own rules failed (TS_INVALID), *out is the model anyway (else NULL), so
 * the caller can report what decide finds in the rest in the same run
 * (decide_run skips the workloads diag already names); the caller frees it. */
ts_status spec_load_for_report(const char *const *paths, size_t npaths, struct spec_model **out,
                               struct ts_diag *diag);
void spec_model_free(struct spec_model *m);

/* Why tenant t's contract or data forbids w's explicit isolation (a
 * sharing mechanism: mps, time-slicing, memory-fraction), or NULL. A rule
 * of the spec alone: the loader reports it with the other contradictions,
 * and decide applies the same text. */
const char *spec_isolation_forbidden(const struct spec_tenant *t, const struct spec_workload *w);

/* The Markdown field reference of every kind (for docs/spec.md). */
void spec_doc_reference(struct ts_sbuf *out);

#endif
