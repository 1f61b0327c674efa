/*
 * requests.c - a shared workload's request counter per consumer (see
 * requests.h).
 */
#include "meter/requests.h"

#include <stdio.h>
#include <string.h>

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
