/*
 * shim.c - the CUDA shim where the plan needs it: a pod that uses a row
 * whose memory cap only tessera's shim enforces (time-slicing, a memory
 * fraction on a driver below CUDA 13.4: entitle_needs_shim) must carry it
 * exactly as render's recipe writes it (render/readme.c, docs/shim.md):
 *   - a hostPath volume of the shim's library (the policy's shim path) and a
 *     configMap volume of the row's limit file (tessera-cuda-limits-<workload>,
 *     key cuda-limits, whole or as items cuda-limits -> cuda-limits);
 *   - in every container and init container that asks for GPUs (a
 *     nvidia.com/ or DeviceClass resource, or a claim): LD_PRELOAD set to the
 *     shim, the library mounted readOnly at its path, the limit file's
 *     volume mounted readOnly at the folder of ENTITLE_SHIM_LIMITS.
 *   - nothing else in those containers at, under or above the library or
 *     the limit file's folder (another volume, a subPath, a projected
 *     file would shadow them with the tenant's own), the two mounts
 *     without subPath or subPathExpr, the limit file's volume not
 *     optional, the library's hostPath of type File (where the library is
 *     missing the kubelet would otherwise make a directory, or nothing,
 *     and the preload would load nothing): rule shim/shadowed;
 *   - a ConfigMap named as a limit file (tessera-cuda-limits-*) in a
 *     tenant namespace holds exactly what render writes for one of the
 *     namespace's rows (ad_shim_limits): a tenant with edit rights could
 *     otherwise raise its own cap: rule shim/limits.
 * The first pass (pod.c, hatch.c) has checked the types; this one reads
 * with plain jansson and denies under rule shim/missing.
 */
#include "admit/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "entitle/entitle.h"

#define LIMITS_KEY "cuda-limits"

/* The folder the limit file's volume is mounted at ("/etc/tessera"). */
static void limits_dir(char *buf, size_t size)
{
    snprintf(buf, size, "%s", ENTITLE_SHIM_LIMITS);
    char *slash = strrchr(buf, '/');
    if (slash && slash != buf)
        *slash = '\0';
}

/* Whether the configMap volume source maps key cuda-limits to the file
 * cuda-limits (no items: every key is a file of its name). */
static int limits_items(json_t *cm)
{
    json_t *items = json_object_get(cm, "items"), *it;
    size_t i;
    if (json_is_true(json_object_get(cm, "optional")))
        return 0; /* a missing ConfigMap would leave the shim no limits */
    if (!items)
        return 1;
    json_array_foreach (items, i, it) {
        const char *k = json_string_value(json_object_get(it, "key"));
        const char *p = json_string_value(json_object_get(it, "path"));
        if (k && p && !strcmp(k, LIMITS_KEY) && !strcmp(p, LIMITS_KEY))
            return 1;
    }
    return 0;
}

/* The names of the pod's shim volume and limit-file volume, or NULL. */
static void shim_volumes(const struct ad_ctx *c, json_t *spec, const char **lib,
                         const char **limits)
{
    json_t *vol;
    size_t i;
    *lib = *limits = NULL;
    json_array_foreach (json_object_get(spec, "volumes"), i, vol) {
        const char *name = json_string_value(json_object_get(vol, "name"));
        json_t *hp = json_object_get(vol, "hostPath");
        json_t *cm = json_object_get(vol, "configMap");
        const char *path = json_string_value(json_object_get(hp, "path"));
        const char *cmname = json_string_value(json_object_get(cm, "name"));
        const char *type = json_string_value(json_object_get(hp, "type"));
        if (name && path && !strcmp(path, c->pol->shim) && type && !strcmp(type, "File"))
            *lib = name;
        if (name && cmname && !strcmp(cmname, c->shim_ent->shim_cm) && limits_items(cm))
            *limits = name;
    }
}

/* Whether ctr asks for GPUs: a nvidia.com/ or DeviceClass resource, or a claim. */
static int uses_gpu(json_t *ctr)
{
    static const char *const parts[] = {"limits", "requests"};
    json_t *res = json_object_get(ctr, "resources");
    if (json_array_size(json_object_get(res, "claims")))
        return 1;
    for (size_t p = 0; p < 2; p++) {
        const char *key;
        json_t *val;
        json_object_foreach (json_object_get(res, parts[p]), key, val)
            if (!strncmp(key, "nvidia.com/", 11) ||
                !strncmp(key, "deviceclass.resource.kubernetes.io/", 35))
                return 1;
    }
    return 0;
}

static int has_preload(const struct ad_ctx *c, json_t *ctr)
{
    json_t *e;
    size_t i;
    json_array_foreach (json_object_get(ctr, "env"), i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));
        const char *v = json_string_value(json_object_get(e, "value"));
        if (n && v && !strcmp(n, "LD_PRELOAD") && !strcmp(v, c->pol->shim))
            return 1;
    }
    return 0;
}

/* Whether ctr mounts volume name at path, readOnly. */
static int has_mount(json_t *ctr, const char *name, const char *path)
{
    json_t *m;
    size_t i;
    json_array_foreach (json_object_get(ctr, "volumeMounts"), i, m) {
        const char *n = json_string_value(json_object_get(m, "name"));
        const char *p = json_string_value(json_object_get(m, "mountPath"));
        if (name && n && p && !strcmp(n, name) && !strcmp(p, path) &&
            json_is_true(json_object_get(m, "readOnly")) && !json_object_get(m, "subPath") &&
            !json_object_get(m, "subPathExpr"))
            return 1;
    }
    return 0;
}

/* a and b (normalised, absolute) are the same path, or one is under the
 * other. */
static int overlaps(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b), n = na < nb ? na : nb;
    if (strcmp(a, "/") == 0 || strcmp(b, "/") == 0)
        return 1;
    return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/') && (b[n] == '\0' || b[n] == '/');
}

/* The recipe's own two mounts, exactly; anything else at, under or above
 * the library or the limit file's folder shadows them. */
static void shadows(struct ad_ctx *c, json_t *ctr, const char *label, const char *lib,
                    const char *limits, const char *dir)
{
    json_t *m;
    size_t i;
    const char *name = json_string_value(json_object_get(ctr, "name"));
    json_array_foreach (json_object_get(ctr, "volumeMounts"), i, m) {
        const char *vol = json_string_value(json_object_get(m, "name"));
        const char *path = json_string_value(json_object_get(m, "mountPath"));
        char *norm = path ? ad_normalised(c, path) : NULL;
        if (!norm)
            continue;
        const char *hit = overlaps(norm, c->pol->shim) ? c->pol->shim
                          : overlaps(norm, dir)        ? dir
                                                       : NULL;
        int recipe = vol && !json_object_get(m, "subPath") && !json_object_get(m, "subPathExpr") &&
                     ((hit == c->pol->shim && lib && !strcmp(vol, lib) &&
                       !strcmp(path, c->pol->shim)) ||
                      (hit == dir && limits && !strcmp(vol, limits) && !strcmp(path, dir)));
        if (hit && !recipe)
            ad_deny(c, "shim/shadowed",
                    "%s %s mounts volume %s at %s, over the shim's %s: it would replace the "
                    "library or the limit file tessera's CUDA shim reads; mount it elsewhere",
                    label, ad_q(c, name ? name : "?"), ad_q(c, vol ? vol : "?"), ad_q(c, path),
                    hit);
        free(norm);
    }
}

static void check_container(struct ad_ctx *c, json_t *ctr, const char *label, const char *lib,
                            const char *limits)
{
    char dir[128], lacks[512] = "";
    limits_dir(dir, sizeof(dir));
    size_t n = 0;
    if (!has_preload(c, ctr))
        n += (size_t)snprintf(lacks + n, sizeof(lacks) - n, "%sLD_PRELOAD=%s", n ? ", " : "",
                              c->pol->shim);
    if (n < sizeof(lacks) && !has_mount(ctr, lib, c->pol->shim))
        n += (size_t)snprintf(lacks + n, sizeof(lacks) - n,
                              "%sthe shim's hostPath volume (type File) mounted readOnly at %s",
                              n ? ", " : "", c->pol->shim);
    if (n < sizeof(lacks) && !has_mount(ctr, limits, dir))
        n += (size_t)snprintf(lacks + n, sizeof(lacks) - n,
                              "%sConfigMap %s (key " LIMITS_KEY ", not optional) mounted readOnly "
                              "at %s",
                              n ? ", " : "", c->shim_ent->shim_cm, dir);
    shadows(c, ctr, label, lib, limits, dir);
    if (!lacks[0])
        return;
    const char *name = json_string_value(json_object_get(ctr, "name"));
    ad_deny(c, "shim/missing",
            "%s %s uses %s, whose memory cap only tessera's CUDA shim enforces, without %s; "
            "add them as render's README.md shows",
            label, ad_q(c, name ? name : "?"), c->shim_ent->desc, lacks);
}

void ad_shim(struct ad_ctx *c, json_t *spec)
{
    static const char *const kinds[][2] = {{"containers", "container"},
                                           {"initContainers", "init container"}};
    if (!c->ns || !c->shim_ent || !c->pol->shim || c->bad)
        return;
    const char *lib, *limits;
    shim_volumes(c, spec, &lib, &limits);
    for (size_t k = 0; k < 2; k++) {
        json_t *ctr;
        size_t i;
        json_array_foreach (json_object_get(spec, kinds[k][0]), i, ctr)
            if (uses_gpu(ctr))
                check_container(c, ctr, kinds[k][1], lib, limits);
    }
}

/* A ConfigMap named as a limit file: one of the namespace's shim rows',
 * holding exactly the file render writes for it and nothing else. */
void ad_shim_limits(struct ad_ctx *c, json_t *cm)
{
    json_t *meta = json_object_get(cm, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    if (!c->ns || c->bad)
        return;
    const struct ad_ent *e = NULL;
    for (size_t i = 0; name && i < c->ns->nents && !e; i++)
        if (c->ns->ents[i]->shim_cm && !strcmp(c->ns->ents[i]->shim_cm, name))
            e = c->ns->ents[i];
    json_t *data = json_object_get(cm, "data");
    const char *text = json_string_value(json_object_get(data, LIMITS_KEY));
    if (!e)
        ad_deny(c, "shim/limits",
                "the ConfigMap %s is named as a CUDA shim limit file, but no workload of tenant %s "
                "in namespace %s has one; the prefix " ENTITLE_SHIM_CONFIGMAP_PREFIX
                " is tessera's",
                ad_q(c, name ? name : "?"), c->ns->tenant, ad_q(c, c->nsname));
    else if (!text || strcmp(text, e->shim_text) != 0 || json_object_size(data) != 1 ||
             json_object_get(cm, "binaryData"))
        ad_deny(c, "shim/limits",
                "the ConfigMap %s holds a limit file other than the one the plan gives workload %s "
                "(%s): the shim would read the tenant's own cap; apply render's "
                "cuda-limits.yaml",
                ad_q(c, name), ad_q(c, e->workload), e->desc);
    else
        ad_audit(c, e);
}
