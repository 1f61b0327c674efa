/*
 * review.c - admit_review: decode the AdmissionReview envelope, decide
 * which requests are policed, run the checks, write the response.
 *
 * Policed: CREATE and UPDATE (or no operation) of Pods (and their
 * ephemeralcontainers subresource, which kubectl debug uses), of the pod
 * templates of Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs and
 * CronJobs (so a denial shows at kubectl apply), and of DRA ResourceClaims
 * and ResourceClaimTemplates, and of ConfigMaps named as the CUDA shim's
 * limit files (shim.c). Allowed untouched: DELETE and CONNECT (a deleted
 * limit file fails its pods closed), other subresources (status updates
 * must never be blocked by a policy reload), every other kind. Any review
 * whose object is not the kind request.kind says is denied.
 * Choices where the issue is silent:
 *   - a namespace that belongs to no tenant is denied outright (fail
 *     closed): the webhook's namespaceSelector sends only namespaces with
 *     the tenant label, so one the spec does not list is a tenant namespace
 *     the spec lost; the message names it and the missing spec entry;
 *   - device-injection annotations on a pod or pod template (CDI's
 *     cdi.k8s.io/<name>, <vendor>.cdi.k8s.io/<name>, CRI-O's devices) are denied in
 *     every namespace and count as GPU use;
 *   - in a tenant namespace the escape hatches apply to every pod, GPU or
 *     not (hatch.c): a pod with no GPU request can still take every GPU
 *     through NVIDIA_VISIBLE_DEVICES or /dev/nvidia*;
 *   - every denial of a request is reported (joined with "; ", each once);
 *     rule is the first one's; a malformed body (400) wins over denials;
 *   - duplicate JSON keys are malformed (400): the API server and this
 *     policy could otherwise read different values;
 *   - allowed policed requests carry the audit annotations tenant,
 *     mechanism and profile ("none" when there is no tenant or no GPU use;
 *     mechanism "dra" and profile "claim" for a pod claim that is not one of
 *     render's templates, whose devices were checked when it was made).
 * The response is built with jansson; every text in it is valid UTF-8.
 */
#include "admit/internal.h"
#include "entitle/entitle.h"
#include "util/jsonfree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define REVIEW_API "admission.k8s.io/v1"

enum policed_what { POLICE_POD, POLICE_CLAIM, POLICE_LIMITS };

struct policed {
    const char *group, *kind;
    const char *spec[5]; /* keys from the object to the pod spec or claim devices */
    enum policed_what what;
};

static const struct policed policed_kinds[] = {
    {"", "Pod", {"spec"}, POLICE_POD},
    {"apps", "Deployment", {"spec", "template", "spec"}, POLICE_POD},
    {"apps", "ReplicaSet", {"spec", "template", "spec"}, POLICE_POD},
    {"apps", "StatefulSet", {"spec", "template", "spec"}, POLICE_POD},
    {"apps", "DaemonSet", {"spec", "template", "spec"}, POLICE_POD},
    {"batch", "Job", {"spec", "template", "spec"}, POLICE_POD},
    {"batch", "CronJob", {"spec", "jobTemplate", "spec", "template", "spec"}, POLICE_POD},
    {"resource.k8s.io", "ResourceClaim", {"spec", "devices"}, POLICE_CLAIM},
    {"resource.k8s.io", "ResourceClaimTemplate", {"spec", "spec", "devices"}, POLICE_CLAIM},
    {"", "ConfigMap", {NULL}, POLICE_LIMITS}, /* only the shim's limit files (shim.c) */
};

/* Copy s into a verdict field, cut on a character boundary. */
static void copy_field(char *dst, size_t size, const char *s)
{
    size_t n = strlen(s ? s : "");
    if (n >= size) {
        n = size - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(dst, s ? s : "", n);
    dst[n] = '\0';
}

static void missing(struct ad_ctx *c, const char *key)
{
    size_t mark = ad_push(c, key);
    ad_bad(c, "missing");
    ad_pop(c, mark);
}

/* A string member that must be value exactly. */
static void want_str(struct ad_ctx *c, json_t *obj, const char *key, const char *value)
{
    const char *s = ad_get_str(c, obj, key);
    size_t mark = ad_push(c, key);
    if (!c->bad && !s)
        ad_bad(c, "missing (must be %s)", value);
    else if (!c->bad && strcmp(s, value) != 0)
        ad_bad(c, "must be %s, not %s", value, ad_q(c, s));
    ad_pop(c, mark);
}

/* The request member, once the envelope and request.uid/kind are sound. */
static json_t *envelope(struct ad_ctx *c, json_t *root, struct admit_verdict *v)
{
    want_str(c, root, "apiVersion", REVIEW_API);
    want_str(c, root, "kind", "AdmissionReview");
    json_t *req = ad_get(c, root, "request", JSON_OBJECT);
    if (!c->bad && !req)
        missing(c, "request");
    ad_push(c, "request");
    const char *uid = ad_get_str(c, req, "uid");
    size_t mark = ad_push(c, "uid");
    if (!c->bad && !uid)
        ad_bad(c, "missing");
    else if (!c->bad && (uid[0] == '\0' || strlen(uid) >= sizeof(v->uid)))
        ad_bad(c, "must be 1 to %zu bytes", sizeof(v->uid) - 1);
    ad_pop(c, mark);
    if (!c->bad)
        copy_field(v->uid, sizeof(v->uid), uid);
    json_t *kind = ad_get(c, req, "kind", JSON_OBJECT);
    if (!c->bad && !kind)
        missing(c, "kind");
    mark = ad_push(c, "kind");
    const char *k = ad_get_str(c, kind, "kind");
    if (!c->bad && !k)
        missing(c, "kind");
    ad_pop(c, mark);
    if (!c->bad)
        copy_field(v->kind, sizeof(v->kind), k);
    return c->bad ? NULL : req;
}

/* A ConfigMap is policed only when it is named as a shim limit file (the
 * API server has made a generateName into a name before it asks). */
static int policed_configmap(json_t *req)
{
    json_t *meta = json_object_get(json_object_get(req, "object"), "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    return name &&
           strncmp(name, ENTITLE_SHIM_CONFIGMAP_PREFIX, strlen(ENTITLE_SHIM_CONFIGMAP_PREFIX)) == 0;
}

static const struct policed *policed_kind(struct ad_ctx *c, json_t *req)
{
    json_t *kind = json_object_get(req, "kind");
    const char *k = json_string_value(json_object_get(kind, "kind"));
    size_t mark = ad_push(c, "kind");
    const char *group = ad_get_str(c, kind, "group");
    ad_pop(c, mark);
    for (size_t i = 0; i < sizeof(policed_kinds) / sizeof(policed_kinds[0]); i++)
        if (strcmp(k, policed_kinds[i].kind) == 0 &&
            (!group || strcmp(group, policed_kinds[i].group) == 0))
            return policed_kinds[i].what != POLICE_LIMITS || policed_configmap(req)
                       ? &policed_kinds[i]
                       : NULL;
    return NULL;
}

/* Whether the operation and subresource are policed at all. */
static int policed_operation(struct ad_ctx *c, json_t *req)
{
    const char *op = ad_get_str(c, req, "operation");
    const char *sub = ad_get_str(c, req, "subResource");
    if (c->bad || (op && (strcmp(op, "DELETE") == 0 || strcmp(op, "CONNECT") == 0)))
        return 0;
    return !sub || !sub[0] || strcmp(sub, "ephemeralcontainers") == 0;
}

static void namespace_of(struct ad_ctx *c, json_t *req, json_t *obj, struct admit_verdict *v)
{
    const char *ns = ad_get_str(c, req, "namespace");
    if (!ns || !ns[0]) {
        size_t mark = ad_push(c, "object");
        json_t *meta = ad_get(c, obj, "metadata", JSON_OBJECT);
        size_t mmark = ad_push(c, "metadata");
        ns = ad_get_str(c, meta, "namespace");
        ad_pop(c, mmark);
        ad_pop(c, mark);
    }
    c->nsname = ns ? ns : "";
    c->ns = ad_ns_find(c->pol, c->nsname);
    copy_field(v->ns, sizeof(v->ns), c->nsname);
    copy_field(v->tenant, sizeof(v->tenant), c->ns ? c->ns->tenant : "");
}

/* Annotations the container runtime reads as device requests: CDI's
 * (cdi.k8s.io/<name>), NVIDIA's NRI plugin's (nvidia.cdi.k8s.io/...), any
 * <vendor>.cdi.k8s.io, and CRI-O's device annotation. */
static int device_annotation(const char *key)
{
    const char *slash = strchr(key, '/');
    size_t n = slash ? (size_t)(slash - key) : strlen(key), d = strlen("cdi.k8s.io");
    if (strcasecmp(key, "io.kubernetes.cri-o.Devices") == 0)
        return 1;
    return n >= d && strncasecmp(key + n - d, "cdi.k8s.io", d) == 0 &&
           (n == d || key[n - d - 1] == '.');
}

/* The pod's (or pod template's) metadata.annotations: device injection;
 * in a tenant namespace, the seccomp and AppArmor ones (pss.c). */
static void annotations(struct ad_ctx *c, json_t *holder)
{
    size_t mark = ad_push(c, "metadata");
    json_t *meta = ad_get(c, holder, "metadata", JSON_OBJECT);
    json_t *ann = ad_get(c, meta, "annotations", JSON_OBJECT), *val;
    const char *key;
    size_t amark = ad_push(c, "annotations");
    json_object_foreach (ann, key, val) {
        if (c->ns && !c->bad)
            ad_pss_annotation(c, key, val);
        if (c->bad || !device_annotation(key))
            continue;
        ad_gpu(c, "annotation %s asks the container runtime for devices", ad_q(c, key));
        ad_deny(c, "escape-hatch/device-annotation",
                "the pod carries annotation %s: the container runtime would inject the devices "
                "it names (CDI), around claims; remove it",
                ad_q(c, key));
    }
    ad_pop(c, amark);
    ad_pop(c, mark);
}

/* The object must be what request.kind says it is: a policy reads the
 * object by request.kind, so a Deployment that is really a Pod would be
 * read in the wrong places. An object without kind or apiVersion (some
 * clients omit them) is read as request.kind says. */
static void kind_matches(struct ad_ctx *c, json_t *req)
{
    json_t *obj = json_object_get(req, "object");
    json_t *kind = json_object_get(req, "kind");
    if (!json_is_object(obj))
        return;
    size_t mark = ad_push(c, "kind");
    const char *group = ad_get_str(c, kind, "group"), *version = ad_get_str(c, kind, "version");
    ad_pop(c, mark);
    const char *k = json_string_value(json_object_get(kind, "kind"));
    mark = ad_push(c, "object");
    const char *ok = ad_get_str(c, obj, "kind"), *av = ad_get_str(c, obj, "apiVersion");
    ad_pop(c, mark);
    char want[256] = "";
    if (version)
        snprintf(want, sizeof(want), "%s%s%s", group ? group : "", group && group[0] ? "/" : "",
                 version);
    if (c->bad || ((!ok || strcmp(ok, k) == 0) && (!av || !want[0] || strcmp(av, want) == 0)))
        return;
    ad_deny(c, "review/kind",
            "request.kind says %s %s, but the object is %s %s: the review is not what the API "
            "server sends; denied",
            want[0] ? want : "?", ad_q(c, k), ad_q(c, av ? av : "?"), ad_q(c, ok ? ok : k));
}

/* Check a policed request; returns 1 when it was policed (annotations). */
static int police(struct ad_ctx *c, json_t *req, struct admit_verdict *v)
{
    const struct policed *p = policed_kind(c, req);
    if (!p || !policed_operation(c, req))
        return 0;
    json_t *obj = ad_get(c, req, "object", JSON_OBJECT);
    if (!c->bad && !obj)
        missing(c, "object");
    namespace_of(c, req, obj, v);
    size_t mark = ad_push(c, "object");
    json_t *cur = obj, *holder = obj; /* holder: the object whose spec cur is */
    size_t hmark = c->plen;
    for (size_t i = 0; i < 5 && p->spec[i] && cur; i++) {
        if (strcmp(p->spec[i], "spec") == 0) {
            holder = cur;
            hmark = c->plen;
        }
        cur = ad_get(c, cur, p->spec[i], JSON_OBJECT);
        ad_push(c, p->spec[i]);
    }
    if (cur && !c->bad && p->what == POLICE_POD) {
        size_t here = c->plen;
        char saved[AD_PATH_MAX];
        memcpy(saved, c->path, sizeof(saved));
        ad_pop(c, hmark);
        annotations(c, holder);
        memcpy(c->path, saved, sizeof(saved));
        c->plen = here;
    }
    if (cur && !c->bad && p->what == POLICE_CLAIM)
        ad_claim(c, cur);
    else if (cur && !c->bad && p->what == POLICE_LIMITS)
        ad_shim_limits(c, cur);
    else if (cur && !c->bad)
        ad_pod(c, cur);
    ad_pop(c, mark);
    if (!c->ns && c->gpu_use[0])
        ad_deny(c, "no-tenant",
                "namespace %s belongs to no tenant, so it may not use GPUs: %s; run GPU work in "
                "a tenant's namespace",
                ad_q(c, c->nsname), c->gpu_use);
    else if (!c->ns)
        ad_deny(c, "no-tenant",
                "namespace %s belongs to no tenant: it carries the tenant label (the webhook "
                "sees no other namespace) but no Tenant's spec.namespaces lists it, and an "
                "unknown namespace is denied; add it to the Tenant's spec.namespaces, or remove "
                "the label",
                ad_q(c, c->nsname));
    return 1;
}

/* Replace what is not valid UTF-8 with '?' (a last guard before jansson). */
static void utf8_clean(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t n = *p < 0x80             ? 1
                   : (*p & 0xE0) == 0xC0 ? 2
                   : (*p & 0xF0) == 0xE0 ? 3
                   : (*p & 0xF8) == 0xF0 ? 4
                                         : 0;
        size_t ok = n;
        for (size_t i = 1; i < n && ok; i++)
            if ((p[i] & 0xC0) != 0x80)
                ok = 0;
        if (!ok) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
}

static json_t *review(const struct ad_ctx *c, const struct admit_verdict *v, int annotate)
{
    json_t *resp = json_pack("{s:s, s:b}", "uid", v->uid, "allowed", v->allowed);
    if (!v->allowed)
        json_object_set_new(resp, "status",
                            json_pack("{s:i, s:s}", "code", 403, "message", v->message));
    else if (annotate)
        json_object_set_new(resp, "auditAnnotations",
                            json_pack("{s:s, s:s, s:s}", "tenant", c->ns ? c->ns->tenant : "none",
                                      "mechanism", c->mech[0] ? c->mech : "none", "profile",
                                      c->profile[0] ? c->profile : "none"));
    return json_pack("{s:s, s:s, s:o}", "apiVersion", REVIEW_API, "kind", "AdmissionReview",
                     "response", resp);
}

static void respond(struct ad_ctx *c, int annotate, struct ts_sbuf *out, struct admit_verdict *v)
{
    json_t *doc;
    if (c->bad) {
        utf8_clean(c->err);
        v->http_status = 400;
        v->allowed = 0;
        copy_field(v->message, sizeof(v->message), c->err);
        doc = json_pack("{s:s}", "error", c->err);
    } else {
        if (c->dropped)
            snprintf(c->msg + strlen(c->msg), sizeof(c->msg) - strlen(c->msg), "; and %d more",
                     c->dropped);
        utf8_clean(c->msg);
        v->http_status = 200;
        v->allowed = c->ndeny == 0;
        copy_field(v->rule, sizeof(v->rule), c->rule);
        copy_field(v->message, sizeof(v->message), c->msg);
        doc = review(c, v, annotate);
    }
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (text)
        ts_sbuf_puts(out, text);
    else /* out of memory: still an answer the server can send */
        ts_sbuf_puts(out, "{\"error\":\"internal: out of memory\"}");
    if (!text)
        v->http_status = 400;
    json_free_text(text);
    json_decref(doc);
}

void admit_review(const struct admit_policy *pol, const char *body, size_t len, struct ts_sbuf *out,
                  struct admit_verdict *v)
{
    ad_review(pol, body, len, out, v, 0);
}

void ad_review(const struct admit_policy *pol, const char *body, size_t len, struct ts_sbuf *out,
               struct admit_verdict *v, int full)
{
    struct ad_ctx *c = malloc(sizeof(*c));
    memset(v, 0, sizeof(*v));
    if (!c) {
        v->http_status = 400;
        snprintf(v->message, sizeof(v->message), "internal: out of memory");
        ts_sbuf_puts(out, "{\"error\":\"internal: out of memory\"}");
        return;
    }
    ad_ctx_init(c, pol);
    json_t *root = NULL, *req = NULL;
    int annotate = 0;
    if ((!full && ad_stream_load(body, len, &root) == 0) || ad_load(c, body, len, &root) == 0)
        req = envelope(c, root, v);
    if (req)
        kind_matches(c, req);
    if (req)
        annotate = police(c, req, v);
    respond(c, annotate, out, v);
    json_decref(root);
    free(c);
}
