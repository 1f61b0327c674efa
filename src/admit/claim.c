/*
 * claim.c - DRA claims (the devices of a ResourceClaim or of a
 * ResourceClaimTemplate's spec): every request, exactly or each
 * firstAvailable alternative (or resource.k8s.io/v1beta1's flat request),
 * must name a DeviceClass the plan gives the namespace, ExactCount, no
 * adminAccess, and the claim may hold at most render's devices per claim of
 * each class (firstAvailable counts its largest alternative). A
 * memory-fraction class needs capacity.requests.memory within the cap.
 * Opaque configs must be for gpu.nvidia.com and be resource.nvidia.com/
 * v1beta1 GpuConfig or MigDeviceConfig (the one that matches the class);
 * their sharing strategy must be the entitled one (MPS; TimeSlicing for
 * time-slicing and memory fractions; none for MIG and whole GPUs), and an
 * MPS class needs an MPS config whose thread percentage and pinned-memory
 * limits (default and per device) fit one of the namespace's MPS rows.
 * A config applies to the requests it lists (req or req/sub), or to all.
 * The opaque parameters are not validated by the API server, so their
 * wrong types are denials (403) that say what to write, not 400s.
 */
#include "admit/internal.h"

#include <stdlib.h>
#include <string.h>
#include "entitle/entitle.h"

struct claim {
    json_t *configs; /* devices.config */
    int *usable;     /* per config: for gpu.nvidia.com, a known kind */
    long *total;     /* per namespace row (first of its class): devices claimed */
    long *req;       /* the same for the request being read */
};

static size_t class_index(const struct ad_ns *ns, const char *cls)
{
    for (size_t i = 0; i < ns->nents; i++)
        if (ns->ents[i]->cls && strcmp(ns->ents[i]->cls, cls) == 0)
            return i;
    return ns->nents;
}

/* ---- configs ---- */

static void config_usable(struct ad_ctx *c, struct claim *cl, json_t *cfg, size_t j)
{
    json_t *reqs = ad_get(c, cfg, "requests", JSON_ARRAY);
    size_t mark = ad_push(c, "requests");
    for (size_t i = 0; i < json_array_size(reqs) && !c->bad; i++)
        ad_item(c, reqs, i, JSON_STRING);
    ad_pop(c, mark);
    json_t *opaque = ad_get(c, cfg, "opaque", JSON_OBJECT);
    mark = ad_push(c, "opaque");
    const char *driver = ad_get_str(c, opaque, "driver");
    ad_pop(c, mark);
    if (!opaque || c->bad)
        return;
    json_t *params = json_object_get(opaque, "parameters");
    const char *api = json_string_value(json_object_get(params, "apiVersion"));
    const char *kind = json_string_value(json_object_get(params, "kind"));
    if (!driver || strcmp(driver, ENTITLE_DRIVER) != 0)
        ad_deny(c, "dra-config/driver",
                "claim config[%zu] is for driver %s: tenants configure only " ENTITLE_DRIVER
                " devices; remove it",
                j, ad_q(c, driver ? driver : ""));
    else if (!api || strcmp(api, ENTITLE_CONFIG_API) != 0 || !kind ||
             (strcmp(kind, "GpuConfig") != 0 && strcmp(kind, "MigDeviceConfig") != 0))
        ad_deny(c, "dra-config/kind",
                "claim config[%zu] is %s %s; tenants may use only " ENTITLE_CONFIG_API
                " GpuConfig or MigDeviceConfig",
                j, ad_q(c, api ? api : "(no apiVersion)"), ad_q(c, kind ? kind : "(no kind)"));
    else
        cl->usable[j] = 1;
}

static int config_applies(json_t *cfg, const char *req, const char *sub)
{
    json_t *reqs = json_object_get(cfg, "requests");
    if (json_array_size(reqs) == 0)
        return 1;
    for (size_t i = 0; i < json_array_size(reqs); i++) {
        const char *r = json_string_value(json_array_get(reqs, i));
        size_t n = strlen(req);
        if (r && (strcmp(r, req) == 0 ||
                  (sub && strncmp(r, req, n) == 0 && r[n] == '/' && strcmp(r + n + 1, sub) == 0)))
            return 1;
    }
    return 0;
}

/* A memory quantity of an MPS config: -1 when absent, -2 when not one. */
static double mps_quantity(json_t *v)
{
    double q;
    if (!v || json_is_null(v))
        return -1;
    return ad_quantity(v, &q) == 0 && q >= 0 ? q : -2;
}

/* The largest per-device limit (-2 when one is not a quantity, -1 none). */
static double per_device_max(json_t *per)
{
    double max = -1;
    const char *key;
    json_t *v;
    if (per && !json_is_null(per) && !json_is_object(per))
        return -2;
    json_object_foreach (per, key, v) {
        double q = mps_quantity(v);
        if (q == -2 || q == -1)
            return -2;
        max = q > max ? q : max;
    }
    return max;
}

/* Whether pct and mem (bytes) fit one MPS row of class cls. */
static int mps_fits(const struct ad_ns *ns, const char *cls, json_int_t pct, double mem)
{
    for (size_t i = 0; i < ns->nents; i++) {
        const struct ad_ent *e = ns->ents[i];
        if (e->cls && strcmp(e->cls, cls) == 0 && e->mech == DECIDE_MPS && pct <= e->sm_percent &&
            mem <= e->cap_bytes)
            return 1;
    }
    return 0;
}

static void mps_limits(struct ad_ctx *c, const struct ad_ent *e, json_t *mps, size_t j,
                       const char *label)
{
    char may[AD_MSG_MAX / 2];
    ad_may_use(c, 1, 1, may, sizeof(may));
    json_t *pct = json_object_get(mps, "defaultActiveThreadPercentage");
    json_t *memv = json_object_get(mps, "defaultPinnedDeviceMemoryLimit");
    double mem = mps_quantity(memv),
           per = per_device_max(json_object_get(mps, "defaultPerDevicePinnedMemoryLimit"));
    if (!json_is_integer(pct) || json_integer_value(pct) < 1 || json_integer_value(pct) > 100 ||
        mem < 0 || per == -2) {
        ad_deny(c, "dra-config/mps-limits",
                "%s: config[%zu] must set mpsConfig.defaultActiveThreadPercentage (an integer "
                "percentage) and defaultPinnedDeviceMemoryLimit (a quantity such as 14Gi), and "
                "defaultPerDevicePinnedMemoryLimit only as quantities; %s",
                label, j, may);
        return;
    }
    char memtext[72];
    ad_quantity_text(memv, memtext, sizeof(memtext));
    if (!mps_fits(c->ns, e->cls, json_integer_value(pct), mem > per ? mem : per))
        ad_deny(c, "dra-config/mps-limits",
                "%s: config[%zu] asks for %d%% of SMs and %s pinned memory%s, above the "
                "entitlement; %s",
                label, j, (int)json_integer_value(pct), memtext,
                per > mem ? " (more for some devices)" : "", may);
}

/* The configs that apply to one device request, against its row. */
static void device_configs(struct ad_ctx *c, struct claim *cl, const struct ad_ent *e,
                           const char *label, const char *req, const char *sub)
{
    const char *want_kind = e->mig_class ? "MigDeviceConfig" : "GpuConfig";
    const char *want = entitle_sharing_strategy(e->mech);
    int mps = 0;
    for (size_t j = 0; j < json_array_size(cl->configs); j++) {
        json_t *cfg = json_array_get(cl->configs, j);
        if (!cl->usable[j] || !config_applies(cfg, req, sub))
            continue;
        json_t *params = json_object_get(json_object_get(cfg, "opaque"), "parameters");
        const char *kind = json_string_value(json_object_get(params, "kind"));
        json_t *sharing = json_object_get(params, "sharing");
        const char *strategy = json_string_value(json_object_get(sharing, "strategy"));
        if (strcmp(kind, want_kind) != 0)
            ad_deny(c, "dra-config/kind", "%s is %s, configured by config[%zu] as %s; use %s",
                    label, e->kind, j, kind, want_kind);
        else if (sharing && !json_is_null(sharing) && !want)
            ad_deny(c, "dra-config/sharing",
                    "%s: tenant %s may use %s without sharing; config[%zu] sets sharing "
                    "strategy %s: remove sharing",
                    label, c->ns->tenant, e->kind, j, ad_q(c, strategy ? strategy : "?"));
        else if (sharing && !json_is_null(sharing) && (!strategy || strcmp(strategy, want) != 0) &&
                 (mps = 1)) /* reported here, not again as missing */
            ad_deny(c, "dra-config/sharing",
                    "%s: tenant %s may use %s; config[%zu] sets sharing strategy %s, not %s", label,
                    c->ns->tenant, e->kind, j, ad_q(c, strategy ? strategy : "?"), want);
        else if (e->mech == DECIDE_MPS && strategy) {
            mps = 1;
            mps_limits(c, e, json_object_get(sharing, "mpsConfig"), j, label);
        }
    }
    char may[AD_MSG_MAX / 2];
    if (e->mech == DECIDE_MPS && !mps) {
        ad_may_use(c, 1, 1, may, sizeof(may));
        ad_deny(c, "dra-config/mps-missing",
                "%s has no MPS config, so MPS would not limit it: add a " ENTITLE_CONFIG_API
                " GpuConfig with sharing.strategy MPS and mpsConfig limits; %s",
                label, may);
    }
}

/* ---- requests ---- */

static void class_denied(struct ad_ctx *c, const char *cls, const char *label)
{
    const struct ad_ent *any = ad_any_class(c->pol, cls);
    char may[AD_MSG_MAX / 2];
    ad_may_use(c, 1, !any || decide_mech_shares_card(any->mech), may, sizeof(may));
    size_t n = strlen(cls), d = strlen(".nvidia.com");
    if (any)
        ad_deny(c, "entitlement/class", "%s; %s asks for %s (class %s)", may, label, any->kind,
                cls);
    else if (strcmp(cls, ENTITLE_DRIVER) == 0 || (n > d && strcmp(cls + n - d, ".nvidia.com") == 0))
        ad_deny(c, "entitlement/class",
                "%s; %s asks for class %s, the driver's own, which bypasses the plan", may, label,
                ad_q(c, cls));
    else
        ad_deny(c, "entitlement/class", "%s; %s asks for class %s", may, label, ad_q(c, cls));
}

static void capacity(struct ad_ctx *c, json_t *dev, const struct ad_ent *e, const char *label)
{
    json_t *cap = ad_get(c, dev, "capacity", JSON_OBJECT);
    size_t mark = ad_push(c, "capacity");
    json_t *reqs = ad_get(c, cap, "requests", JSON_OBJECT);
    size_t rmark = ad_push(c, "requests");
    json_t *mem = json_object_get(reqs, "memory");
    size_t mmark = ad_push(c, "memory");
    double q = 0;
    if (!c->bad && mem && ad_quantity(mem, &q) != 0)
        ad_bad(c, "must be a Kubernetes quantity (20Gi, ...)");
    else if (!c->bad && !mem)
        ad_deny(c, "fraction/capacity",
                "%s asks for a memory fraction without capacity.requests.memory: set it to at "
                "most %s",
                label, e->cap_max_text);
    else if (!c->bad && q > e->cap_max) {
        char text[72];
        ad_quantity_text(mem, text, sizeof(text));
        ad_deny(c, "fraction/capacity", "%s asks for %s of memory; tenant %s may use at most %s",
                label, text, c->ns->tenant, e->cap_max_text);
    }
    ad_pop(c, mmark);
    ad_pop(c, rmark);
    ad_pop(c, mark);
}

/* list at key of obj, or NULL and a 400 when longer than AD_CLAIM_LIST_MAX. */
static json_t *claim_list(struct ad_ctx *c, json_t *obj, const char *key)
{
    json_t *list = ad_get(c, obj, key, JSON_ARRAY);
    if (json_array_size(list) <= AD_CLAIM_LIST_MAX)
        return list;
    size_t mark = ad_push(c, key);
    ad_bad(c, "more than %d entries", AD_CLAIM_LIST_MAX);
    ad_pop(c, mark);
    return NULL;
}

/* One device request: exactly, a firstAvailable alternative (sub), or a
 * v1beta1 request. dev is at the current path. */
static void device(struct ad_ctx *c, struct claim *cl, json_t *dev, const char *req,
                   const char *sub)
{
    char label[256];
    snprintf(label, sizeof(label), "claim request %s%s%s", ad_q(c, req), sub ? " alternative " : "",
             sub ? ad_q(c, sub) : "");
    const char *cls = ad_get_str(c, dev, "deviceClassName");
    const char *mode = ad_get_str(c, dev, "allocationMode");
    json_t *count = ad_get(c, dev, "count", JSON_INTEGER);
    int admin = ad_get_true(c, dev, "adminAccess");
    size_t mark = ad_push(c, cls ? "count" : "deviceClassName");
    if (!cls)
        ad_bad(c, "missing");
    else if (count && json_integer_value(count) < 1)
        ad_bad(c, "must be at least 1");
    ad_pop(c, mark);
    if (c->bad)
        return;
    ad_gpu(c, "%s asks for class %s", label, ad_q(c, cls));
    if (!c->ns)
        return;
    size_t k = class_index(c->ns, cls);
    if (k == c->ns->nents) {
        class_denied(c, cls, label);
        return;
    }
    const struct ad_ent *e = c->ns->ents[k];
    if (mode && strcmp(mode, "ExactCount") != 0)
        ad_deny(c, "entitlement/allocation-mode",
                "%s sets allocationMode %s, which would take every matching device; use "
                "ExactCount with a count",
                label, ad_q(c, mode));
    if (admin)
        ad_deny(c, "entitlement/admin-access",
                "%s sets adminAccess, which reaches devices other tenants use; remove it", label);
    json_int_t asked = count ? json_integer_value(count) : 1;
    long n = asked > AD_COUNT_MAX ? AD_COUNT_MAX : (long)asked;
    cl->req[k] = n > cl->req[k] ? n : cl->req[k];
    if (e->mech == DECIDE_MEMORY_FRACTION)
        capacity(c, dev, e, label);
    device_configs(c, cl, e, label, req, sub);
    ad_audit(c, e);
}

static void request(struct ad_ctx *c, struct claim *cl, json_t *r)
{
    const char *name = ad_get_str(c, r, "name");
    json_t *exactly = ad_get(c, r, "exactly", JSON_OBJECT);
    json_t *first = claim_list(c, r, "firstAvailable");
    if (c->bad)
        return;
    name = name ? name : "";
    if (exactly) {
        size_t mark = ad_push(c, "exactly");
        device(c, cl, exactly, name, NULL);
        ad_pop(c, mark);
    } else if (first) {
        size_t mark = ad_push(c, "firstAvailable");
        for (size_t i = 0; i < json_array_size(first) && !c->bad; i++) {
            json_t *sub = ad_item(c, first, i, JSON_OBJECT);
            size_t imark = ad_push_index(c, i);
            const char *subname = ad_get_str(c, sub, "name");
            if (sub && !c->bad)
                device(c, cl, sub, name, subname ? subname : "");
            ad_pop(c, imark);
        }
        ad_pop(c, mark);
    } else if (json_object_get(r, "deviceClassName")) {
        device(c, cl, r, name, NULL); /* resource.k8s.io/v1beta1 */
    } else {
        size_t mark = ad_push(c, "exactly");
        ad_bad(c, "missing (a request needs exactly or firstAvailable)");
        ad_pop(c, mark);
    }
}

static void counts(struct ad_ctx *c, const struct claim *cl)
{
    for (size_t k = 0; k < c->ns->nents; k++) {
        const struct ad_ent *e = c->ns->ents[k];
        if (cl->total[k] > e->claim_max)
            ad_deny(c, "entitlement/count",
                    "the claim asks for %ld devices of class %s; tenant %s may claim at most %d "
                    "per claim",
                    cl->total[k], e->cls, c->ns->tenant, e->claim_max);
    }
}

static void requests(struct ad_ctx *c, struct claim *cl, json_t *list)
{
    size_t n = c->ns ? c->ns->nents : 0;
    size_t mark = ad_push(c, "requests");
    for (size_t i = 0; i < json_array_size(list) && !c->bad; i++) {
        json_t *r = ad_item(c, list, i, JSON_OBJECT);
        size_t imark = ad_push_index(c, i);
        memset(cl->req, 0, (n + 1) * sizeof(*cl->req));
        if (r)
            request(c, cl, r);
        for (size_t k = 0; k < n; k++)
            cl->total[k] += cl->req[k];
        ad_pop(c, imark);
    }
    ad_pop(c, mark);
}

void ad_claim(struct ad_ctx *c, json_t *devices)
{
    json_t *list = claim_list(c, devices, "requests");
    struct claim cl = {claim_list(c, devices, "config"), NULL, NULL, NULL};
    size_t n = c->ns ? c->ns->nents : 0, ncfg = json_array_size(cl.configs);
    cl.usable = calloc(ncfg + 1, sizeof(*cl.usable));
    cl.total = calloc(n + 1, sizeof(*cl.total));
    cl.req = calloc(n + 1, sizeof(*cl.req));
    if (!cl.usable || !cl.total || !cl.req)
        ad_bad(c, "out of memory");
    size_t mark = ad_push(c, "config");
    for (size_t j = 0; c->ns && j < ncfg && !c->bad; j++) {
        json_t *cfg = ad_item(c, cl.configs, j, JSON_OBJECT);
        size_t jmark = ad_push_index(c, j);
        config_usable(c, &cl, cfg, j);
        ad_pop(c, jmark);
    }
    ad_pop(c, mark);
    if (!c->bad)
        requests(c, &cl, list);
    if (c->ns && !c->bad)
        counts(c, &cl);
    free(cl.usable);
    free(cl.total);
    free(cl.req);
}
