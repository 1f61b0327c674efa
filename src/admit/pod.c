/*
 * pod.c - a pod spec (a Pod's, or a workload's pod template): every
 * container, init container and ephemeral container; what GPUs they ask for
 * (nvidia.com/... extended resources in requests or limits, DeviceClasses
 * as deviceclass.resource.kubernetes.io/<class> extended resources, DRA
 * claims of the pod and its containers); the device-plugin and KubeVirt
 * resources against the namespace's entitlement: the resource must be one
 * the plan gives the namespace, whole devices (a fraction of nvidia.com/gpu
 * has no memory limit), at most the per-container maximum the LimitRange
 * states; a class the same way as a claim's, at most its devices per claim,
 * never an MPS or memory-fraction class (the claim the scheduler makes for
 * it would carry no limits); then the escape hatches (hatch.c) in tenant
 * namespaces.
 * A pod's claims are checked where they are made (ResourceClaim and
 * ResourceClaimTemplate, claim.c); here they only count as GPU use and name
 * the workload for the audit annotations.
 */
#include "admit/internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NVIDIA_PREFIX "nvidia.com/"
/* DRAExtendedResource: every DeviceClass is also this extended resource */
#define CLASS_PREFIX "deviceclass.resource.kubernetes.io/"

static int sharing_resource(const char *res)
{
    return strcmp(res, NVIDIA_PREFIX "gpu.shared") == 0 ||
           strcmp(res, NVIDIA_PREFIX "gpu.memory") == 0;
}

/* What a device-plugin resource is, in render's naming (names.c). */
static const char *resource_kind(const char *res, char *buf, size_t size)
{
    const char *mig = NVIDIA_PREFIX "mig-";
    if (strcmp(res, NVIDIA_PREFIX "gpu") == 0)
        return "whole GPUs";
    if (strcmp(res, NVIDIA_PREFIX "gpu.shared") == 0)
        return "a shared GPU";
    if (strcmp(res, NVIDIA_PREFIX "gpu.memory") == 0)
        return "a memory fraction";
    if (strncmp(res, mig, strlen(mig)) == 0 && strlen(res) < 64) {
        snprintf(buf, size, "mig %s", res + strlen(mig));
        return buf;
    }
    return NULL;
}

static void not_entitled(struct ad_ctx *c, const char *res, json_t *limits, const char *who)
{
    char may[AD_MSG_MAX / 2];
    ad_may_use(c, 0, sharing_resource(res), may, sizeof(may));
    if (strcmp(res, NVIDIA_PREFIX "gpu.shared") == 0 &&
        ad_ent_res(c->ns, NVIDIA_PREFIX "gpu.memory") &&
        !json_object_get(limits, NVIDIA_PREFIX "gpu.memory")) {
        ad_deny(c, "fraction/no-memory-limit",
                "%s requests nvidia.com/gpu.shared without an nvidia.com/gpu.memory limit, a "
                "fraction with no memory limit; %s",
                who, may);
        return;
    }
    char buf[80];
    const char *kind = resource_kind(res, buf, sizeof(buf));
    if (kind)
        ad_deny(c, "entitlement/resource", "%s; %s requests %s (%s)", may, who, kind, res);
    else
        ad_deny(c, "entitlement/resource", "%s; %s requests %s", may, who, ad_q(c, res));
}

/* A DeviceClass asked for as an extended resource: it must be entitled,
 * within the devices per claim, and not one whose claims must carry MPS
 * limits or a memory capacity (the claim the scheduler makes has neither). */
static void class_resource(struct ad_ctx *c, const char *cls, double q, const char *text,
                           const char *who)
{
    const struct ad_ent *e = ad_ent_class(c->ns, cls), *any = ad_any_class(c->pol, cls);
    char may[AD_MSG_MAX / 2];
    ad_may_use(c, 1, any && decide_mech_shares_card(any->mech), may, sizeof(may));
    if (!e)
        ad_deny(c, "entitlement/class", "%s; %s requests class %s as an extended resource", may,
                who, ad_q(c, cls));
    else if (decide_mech_has_memory_cap(e->mech))
        ad_deny(c, e->mech == DECIDE_MPS ? "dra-config/mps-missing" : "fraction/capacity",
                "%s requests class %s as an extended resource, whose claim cannot carry %s; use "
                "a ResourceClaimTemplate such as render's %s",
                who, cls, e->mech == DECIDE_MPS ? "MPS limits" : "a memory capacity",
                ad_q(c, e->workload));
    else if (q > e->claim_max)
        ad_deny(c, "entitlement/quantity",
                "%s requests %s of %s%s; tenant %s may use at most %d per claim", who, text,
                CLASS_PREFIX, cls, c->ns->tenant, e->claim_max);
    else
        ad_audit(c, e);
}

/* One GPU entry of requests or limits (the current path). */
static void resource(struct ad_ctx *c, const char *res, json_t *val, json_t *limits,
                     const char *who)
{
    double q;
    char text[72];
    if (ad_quantity(val, &q) != 0 || q < 0) {
        ad_bad(c, "must be a non-negative Kubernetes quantity (1, 20Gi, ...)");
        return;
    }
    if (q == 0)
        return;
    ad_gpu(c, "%s requests %s", who, ad_q(c, res));
    if (!c->ns)
        return;
    ad_quantity_text(val, text, sizeof(text));
    int memory = strcmp(res, NVIDIA_PREFIX "gpu.memory") == 0;
    if (!memory && q != floor(q)) {
        ad_deny(c, "fraction/no-memory-limit",
                "%s requests %s of %s, a fraction of a device with no memory limit; request whole "
                "devices, or the memory fraction the plan names",
                who, text, res);
        return;
    }
    if (strncmp(res, CLASS_PREFIX, strlen(CLASS_PREFIX)) == 0) {
        class_resource(c, res + strlen(CLASS_PREFIX), q, text, who);
        return;
    }
    const struct ad_ent *e = ad_ent_res(c->ns, res);
    if (!e) {
        not_entitled(c, res, limits, who);
        return;
    }
    if (q > e->res_max)
        ad_deny(c, "entitlement/quantity",
                "%s requests %s of %s; tenant %s may use at most %s per container", who, text, res,
                c->ns->tenant, e->res_max_text);
    else
        ad_audit(c, e);
}

void ad_plugin(struct ad_ctx *c, json_t *ctr, const char *who)
{
    static const char *const parts[] = {"limits", "requests"};
    json_t *res = ad_get(c, ctr, "resources", JSON_OBJECT);
    size_t mark = ad_push(c, "resources");
    json_t *limits = ad_get(c, res, "limits", JSON_OBJECT);
    for (size_t p = 0; p < 2 && !c->bad; p++) {
        json_t *part = ad_get(c, res, parts[p], JSON_OBJECT), *val;
        const char *key;
        size_t pmark = ad_push(c, parts[p]);
        json_object_foreach (part, key, val) {
            if (strncmp(key, NVIDIA_PREFIX, strlen(NVIDIA_PREFIX)) != 0 &&
                strncmp(key, CLASS_PREFIX, strlen(CLASS_PREFIX)) != 0)
                continue;
            size_t kmark = ad_push(c, key);
            resource(c, key, val, limits, who);
            ad_pop(c, kmark);
        }
        ad_pop(c, pmark);
    }
    ad_pop(c, mark);
}

/* The audit annotations of a pod claim: the workload whose claim template
 * (or claim) it names, else "dra". */
static void claim_audit(struct ad_ctx *c, const char *claim)
{
    for (size_t i = 0; c->ns && claim && i < c->ns->nents; i++)
        if (strcmp(c->ns->ents[i]->workload, claim) == 0) {
            ad_audit(c, c->ns->ents[i]);
            return;
        }
    ad_audit_words(c, "dra", "claim");
}

/* One of spec.resourceClaims. */
static void pod_claim(struct ad_ctx *c, json_t *claim, size_t i, const void *arg)
{
    (void)i;
    (void)arg;
    const char *name = ad_get_str(c, claim, "name");
    const char *tmpl = ad_get_str(c, claim, "resourceClaimTemplateName");
    const char *rc = ad_get_str(c, claim, "resourceClaimName");
    if (c->bad)
        return;
    ad_gpu(c, "the pod claims %s", ad_q(c, name ? name : "?"));
    claim_audit(c, tmpl ? tmpl : rc);
}

/* One of a container's resources.claims. */
static void container_claim(struct ad_ctx *c, json_t *claim, size_t i, const void *arg)
{
    const char *who = arg;
    (void)i;
    const char *name = ad_get_str(c, claim, "name");
    if (!c->bad)
        ad_gpu(c, "%s uses claim %s", who, ad_q(c, name ? name : "?"));
}

static void container_claims(struct ad_ctx *c, json_t *ctr, const char *who)
{
    json_t *res = ad_get(c, ctr, "resources", JSON_OBJECT);
    size_t mark = ad_push(c, "resources");
    ad_each(c, res, "claims", JSON_OBJECT, container_claim, who);
    ad_pop(c, mark);
}

/* One container of a kind; arg is the kind's label ("init container"). */
static void container(struct ad_ctx *c, json_t *ctr, size_t index, const void *arg)
{
    const char *label = arg;
    char who[160];
    const char *name = ad_get_str(c, ctr, "name");
    if (name)
        snprintf(who, sizeof(who), "%s %s", label, ad_q(c, name));
    else
        snprintf(who, sizeof(who), "%s %zu", label, index);
    ad_plugin(c, ctr, who);
    container_claims(c, ctr, who);
    if (c->ns)
        ad_hatch_container(c, ctr, who);
}

void ad_pod(struct ad_ctx *c, json_t *spec)
{
    static const char *const kinds[][2] = {
        {"containers", "container"},
        {"initContainers", "init container"},
        {"ephemeralContainers", "ephemeral container"},
    };
    c->pod = spec;
    for (size_t k = 0; k < 3 && !c->bad; k++)
        ad_each(c, spec, kinds[k][0], JSON_OBJECT, container, kinds[k][1]);
    ad_each(c, spec, "resourceClaims", JSON_OBJECT, pod_claim, NULL);
    if (c->ns && !c->bad)
        ad_hatch_pod(c, spec);
    ad_shim(c, spec);
}
