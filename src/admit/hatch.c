/*
 * hatch.c - the escape hatches: ways a pod could reach GPUs, or other
 * tenants' GPU work, around its claims. Checked on every pod in a tenant
 * namespace, GPU or not (a pod with no GPU request can still take every GPU
 * through NVIDIA_VISIBLE_DEVICES or a hostPath of /dev/nvidia*), and in every
 * container, init container and ephemeral container:
 *   - env that steers the NVIDIA container runtime (every NVIDIA_*
 *     variable, NVIDIA_IMEX_CHANNELS among them), CUDA/MPS (CUDA_MPS_*,
 *     CUDA_DISABLE_CONTROL), or the dynamic loader (every LD_* variable and
 *     GLIBC_TUNABLES, as one family); allowed: LD_PRELOAD set to tessera's
 *     shim, LD_LIBRARY_PATH (it only searches the container's own files),
 *     NVIDIA_VISIBLE_DEVICES=void or none (NVIDIA's "no GPU"),
 *     NVIDIA_REQUIRE_* and NVIDIA_DISABLE_REQUIRE (they only refuse);
 *     valueFrom counts as set: its value cannot be seen;
 *   - envFrom without a prefix, or with one that could spell those names
 *     (admission cannot read the ConfigMap or Secret);
 *   - the Pod Security Standards' controls on containers and the pod
 *     (pss.c: privilege, capabilities, procMount, seccomp, AppArmor,
 *     SELinux, sysctls, probe hosts, and restricted's where the tenant's
 *     level says);
 *   - a volume mounted at /var/run/nvidia-container-devices (the runtime's
 *     volume-mount device list);
 *   - hostPath volumes: always at, under or above the GPU device nodes
 *     (/dev/nvidia*, /dev/dri, /dev/char, /dev/vfio), the MPS pipe and log
 *     directories, the GPU operator's /run/nvidia and the kubelet's DRA and
 *     device-plugin sockets; every other one too, except the shim's library
 *     and paths the contract's podSecurity.hostPaths names, after lexical
 *     normalisation (//, ., .., trailing /); those mounted readOnly unless
 *     the contract makes the path writable;
 *   - hostNetwork, hostPorts, hostIPC, hostPID; a runtimeClassName outside
 *     the allowed list; a priorityClassName the contract does not name;
 *   - nodeName, a kubernetes.io/hostname nodeSelector, or required node
 *     affinity (kubernetes.io/hostname In, metadata.name In) naming a fleet
 *     node where the tenant has no planned instance.
 * Not visible to admission: ENV baked into an image (CUDA images set
 * NVIDIA_VISIBLE_DEVICES=all), so the container toolkit must run with
 * accept-nvidia-visible-devices-envvar-when-unprivileged = false; symlinks
 * on the host under an allowed hostPath.
 */
#include "admit/internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Variables that steer the NVIDIA container runtime, CUDA/MPS or the dynamic
 * loader: an exact name, or a family (every name with that prefix). Named
 * members come first so a message names the likeliest one. */
static const struct {
    const char *name, *shown;
    int family;
    const char *rule, *why;
} env_hatches[] = {
    {"NVIDIA_VISIBLE_DEVICES", NULL, 0, "escape-hatch/env",
     "GPUs are assigned by claims, not by environment"},
    {"NVIDIA_DRIVER_CAPABILITIES", NULL, 0, "escape-hatch/env",
     "driver capabilities come with the claimed device"},
    {"NVIDIA_MIG_CONFIG_DEVICES", NULL, 0, "escape-hatch/env", "MIG geometry belongs to the plan"},
    {"NVIDIA_MIG_MONITOR_DEVICES", NULL, 0, "escape-hatch/env",
     "it would let the container watch every MIG device"},
    {"NVIDIA_IMEX_CHANNELS", NULL, 0, "escape-hatch/env",
     "IMEX channels reach GPU memory exported by other nodes' processes"},
    {"CUDA_DISABLE_CONTROL", NULL, 0, "escape-hatch/env",
     "it would turn off tessera's CUDA limits"},
    {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", NULL, 0, "escape-hatch/env",
     "the SM share is set by the claim's mpsConfig"},
    {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", NULL, 0, "escape-hatch/env",
     "the memory limit is set by the claim's mpsConfig"},
    {"CUDA_MPS_PIPE_DIRECTORY", NULL, 0, "escape-hatch/env",
     "it would reach an MPS server other than the claim's"},
    {"LD_PRELOAD", NULL, 0, "escape-hatch/ld-preload", "it would replace tessera's CUDA shim"},
    {"LD_AUDIT", NULL, 0, "escape-hatch/loader",
     "it loads code into every process like LD_PRELOAD, around tessera's CUDA shim"},
    {"GLIBC_TUNABLES", NULL, 0, "escape-hatch/loader",
     "it steers the dynamic loader (and was a privilege escalation, CVE-2023-4911)"},
    {"NVIDIA_", "NVIDIA_*", 1, "escape-hatch/env",
     "the NVIDIA container runtime reads NVIDIA_* variables to choose devices, capabilities, "
     "channels and mounts; GPUs come only with claims"},
    {"CUDA_MPS_", "CUDA_MPS_*", 1, "escape-hatch/env",
     "MPS settings come with the claim's mpsConfig"},
    {"LD_", "LD_*", 1, "escape-hatch/loader",
     "the dynamic loader's variables load, audit or redirect code around tessera's CUDA shim"},
};
#define NHATCHES (sizeof(env_hatches) / sizeof(env_hatches[0]))

/* Allowed members of the families: LD_LIBRARY_PATH only searches the
 * container's own files (and cannot remove a preload); NVIDIA_REQUIRE_* and
 * NVIDIA_DISABLE_REQUIRE only make the runtime refuse to start. */
static int env_exempt(const char *name)
{
    return strcmp(name, "LD_LIBRARY_PATH") == 0 || strncmp(name, "NVIDIA_REQUIRE_", 15) == 0 ||
           strcmp(name, "NVIDIA_DISABLE_REQUIRE") == 0;
}

/* NVIDIA's documented values for "no GPU" (the runtime mounts nothing). */
static int no_gpu_value(const char *name, const char *value, int from)
{
    return !from && value && strcmp(name, "NVIDIA_VISIBLE_DEVICES") == 0 &&
           (strcmp(value, "void") == 0 || strcmp(value, "none") == 0);
}

/* The index of the hatch name is or belongs to, or -1. */
static int env_hatch(const char *name)
{
    for (size_t h = 0; h < NHATCHES; h++) {
        size_t n = strlen(env_hatches[h].name);
        if (env_hatches[h].family ? strncmp(name, env_hatches[h].name, n) == 0
                                  : strcmp(name, env_hatches[h].name) == 0)
            return (int)h;
    }
    return -1;
}

static void ld_preload(struct ad_ctx *c, const char *who, const char *value, int from)
{
    if (!from && value && c->pol->shim && strcmp(value, c->pol->shim) == 0)
        return;
    ad_deny(c, "escape-hatch/ld-preload", "%s sets LD_PRELOAD to %s: %s; %s%s", who,
            from ? "a value from elsewhere" : ad_q(c, value ? value : ""),
            "it would replace tessera's CUDA shim",
            c->pol->shim ? "the only value allowed is " : "remove it",
            c->pol->shim ? ad_q(c, c->pol->shim) : "");
}

static void env_var(struct ad_ctx *c, json_t *var, size_t i, const void *arg)
{
    const char *who = arg;
    (void)i;
    const char *name = ad_get_str(c, var, "name");
    const char *value = ad_get_str(c, var, "value");
    int from = ad_get(c, var, "valueFrom", JSON_OBJECT) != NULL;
    int h = name && !c->bad ? env_hatch(name) : -1;
    if (h < 0 || env_exempt(name) || no_gpu_value(name, value, from))
        return;
    if (strcmp(name, "LD_PRELOAD") == 0)
        ld_preload(c, who, value, from);
    else
        ad_deny(c, env_hatches[h].rule, "%s sets %s: %s; remove it", who,
                env_hatches[h].family ? ad_q(c, name) : name, env_hatches[h].why);
}

/* What the env prefix could spell: a hatch name or family, or "" when it is
 * safe. */
static const char *prefix_reaches(const char *prefix)
{
    size_t n = strlen(prefix);
    for (size_t h = 0; h < NHATCHES; h++) {
        const char *name = env_hatches[h].name;
        size_t hn = strlen(name);
        if (hn > n && strncmp(name, prefix, n) == 0)
            return env_hatches[h].shown ? env_hatches[h].shown : name;
        if (env_hatches[h].family && n >= hn && strncmp(prefix, name, hn) == 0)
            return env_hatches[h].shown;
    }
    return "";
}

static void env_from(struct ad_ctx *c, json_t *src, size_t i, const void *arg)
{
    const char *who = arg;
    const char *prefix = ad_get_str(c, src, "prefix");
    json_t *cm = ad_get(c, src, "configMapRef", JSON_OBJECT);
    json_t *secret = ad_get(c, src, "secretRef", JSON_OBJECT);
    const char *name = ad_get_str(c, cm ? cm : secret, "name");
    const char *reach = prefix_reaches(prefix ? prefix : "");
    if (c->bad || !reach[0])
        return;
    char with[160] = "without a prefix";
    if (prefix && prefix[0])
        snprintf(with, sizeof(with), "with prefix %s", ad_q(c, prefix));
    ad_deny(c, "escape-hatch/env-from",
            "%s takes env from %s %s %s: it could set %s, and admission cannot read it; set "
            "envFrom[%zu].prefix to a safe prefix such as \"APP_\"",
            who,
            cm       ? "configMap"
            : secret ? "secret"
                     : "a source",
            ad_q(c, name ? name : "?"), with, reach, i);
}

static void env_lists(struct ad_ctx *c, json_t *ctr, const char *who)
{
    ad_each(c, ctr, "env", JSON_OBJECT, env_var, who);
    ad_each(c, ctr, "envFrom", JSON_OBJECT, env_from, who);
}

/* ---- paths ---- */

/* Normalise an absolute path lexically ("//a/./b/../c/" -> "/a/c"); out
 * holds at least strlen(in) + 2 bytes. */
static void normalise(const char *in, char *out)
{
    size_t len = 0;
    out[len++] = '/';
    while (*in) {
        while (*in == '/')
            in++;
        size_t n = strcspn(in, "/");
        if (n == 0)
            break;
        if (n == 1 && in[0] == '.') {
            /* nothing */
        } else if (n == 2 && in[0] == '.' && in[1] == '.') {
            while (len > 1 && out[len - 1] != '/')
                len--;
            if (len > 1)
                len--;
        } else {
            if (len > 1)
                out[len++] = '/';
            memcpy(out + len, in, n);
            len += n;
        }
        in += n;
    }
    out[len] = '\0';
}

static const struct {
    const char *path;
    int wildcard;
} protected_paths[] = {
    {"/dev/nvidia", 1}, /* /dev/nvidia0, nvidiactl, nvidia-uvm, nvidia-caps... */
    {"/dev/dri", 0},
    {"/dev/char", 0}, /* /dev/char/195:0 -> ../nvidia0 */
    {"/dev/vfio", 0}, /* GPUs bound for passthrough */
    {"/tmp/nvidia-mps", 0},
    {"/run/nvidia-mps", 0},
    {"/var/run/nvidia-mps", 0},
    {"/var/log/nvidia-mps", 0},
    {"/run/nvidia", 0}, /* GPU operator: driver root, MPS control daemon pipes */
    {"/var/run/nvidia", 0},
    {"/var/lib/kubelet/plugins", 0},        /* the NVIDIA DRA driver's sockets */
    {"/var/lib/kubelet/device-plugins", 0}, /* device-plugin registration */
};

static int under(const char *p, const char *dir, int wildcard)
{
    size_t n = strlen(dir);
    return strncmp(p, dir, n) == 0 && (wildcard || p[n] == '\0' || p[n] == '/');
}

/* Whether the normalised path p is at or under a protected path (1), above
 * one (2), or clear of them (0); *shown names the protected path. */
static int protected_hit(const char *p, const char **shown)
{
    for (size_t i = 0; i < sizeof(protected_paths) / sizeof(protected_paths[0]); i++) {
        const char *dir = protected_paths[i].path;
        *shown = protected_paths[i].wildcard ? "/dev/nvidia*" : dir;
        if (under(p, dir, protected_paths[i].wildcard))
            return 1;
        if (strcmp(p, "/") == 0 || (under(dir, p, 0) && strcmp(dir, p) != 0))
            return 2;
    }
    return 0;
}

char *ad_normalised(struct ad_ctx *c, const char *path)
{
    char *norm = strlen(path) <= AD_HOST_PATH_MAX ? malloc(strlen(path) + 2) : NULL;
    if (norm)
        normalise(path, norm);
    else if (strlen(path) > AD_HOST_PATH_MAX)
        ad_bad(c, "longer than %d bytes", AD_HOST_PATH_MAX);
    else
        ad_bad(c, "out of memory");
    return norm;
}

/* The contract's host path that covers the normalised path p, or NULL. */
static const struct ad_host_path *contract_path(const struct ad_ns *ns, const char *p)
{
    for (size_t i = 0; i < ns->nhost_paths; i++) {
        const char *allowed = ns->host_paths[i].path;
        char *norm = malloc(strlen(allowed) + 2);
        if (!norm)
            return NULL;
        normalise(allowed, norm);
        int hit = under(p, norm, 0) || strcmp(norm, "/") == 0;
        free(norm);
        if (hit)
            return &ns->host_paths[i];
    }
    return NULL;
}

/* Whether the normalised path p is the shim's library (--shim-path). */
static int shim_path(const struct ad_ctx *c, const char *p)
{
    return c->pol->shim && strcmp(p, c->pol->shim) == 0;
}

/* A host path: never at, under or above a GPU device, MPS or driver path;
 * else only the shim's library (of type File: DirectoryOrCreate, or no
 * type, would let a pod make a directory where the library belongs) or a
 * path the contract names. Returns 1 when it is allowed and every mount of
 * it must be readOnly. */
static int check_path(struct ad_ctx *c, const char *path, const char *type, const char *where)
{
    char *norm = ad_normalised(c, path);
    if (!norm)
        return 0;
    const char *shown;
    int hit = protected_hit(norm, &shown), ro = 0;
    char written[160] = "";
    if (strcmp(norm, path) != 0)
        snprintf(written, sizeof(written), " (written %s)", ad_q(c, path));
    const struct ad_host_path *allowed = hit ? NULL : contract_path(c->ns, norm);
    if (hit)
        ad_deny(c, "escape-hatch/host-path",
                "%s %s%s, %s %s: GPU devices, MPS pipes and driver sockets come only with "
                "claims; remove it",
                where, ad_q(c, norm), written, hit == 1 ? "under" : "which holds", shown);
    else if (shim_path(c, norm) && (!type || strcmp(type, "File") != 0))
        ad_deny(c, "escape-hatch/host-path",
                "%s %s of type %s: the shim's library must be mounted with type File, so a "
                "node without it fails the pod instead of getting a directory in its place",
                where, ad_q(c, norm), ad_q(c, type ? type : ""));
    else if (shim_path(c, norm))
        ro = 1;
    else if (allowed)
        ro = !allowed->writable;
    else
        ad_deny(c, "escape-hatch/host-path",
                "%s %s%s: tenant pods get no host paths; remove it, or name it in tenant %s's "
                "podSecurity.hostPaths",
                where, ad_q(c, norm), written, c->ns->tenant);
    free(norm);
    return ro;
}

/* Every mount of the host-path volume name, in every container of the pod
 * spec, must be readOnly (the shim's library, a path the contract does not
 * make writable). The first pass has checked the types. */
static void read_only_mounts(struct ad_ctx *c, json_t *spec, const char *name)
{
    static const char *const kinds[][2] = {{"containers", "container"},
                                           {"initContainers", "init container"},
                                           {"ephemeralContainers", "ephemeral container"}};
    for (size_t k = 0; k < 3; k++) {
        json_t *ctrs = json_object_get(spec, kinds[k][0]), *ctr;
        size_t i;
        json_array_foreach (ctrs, i, ctr) {
            json_t *mounts = json_object_get(ctr, "volumeMounts"), *m;
            size_t j;
            json_array_foreach (mounts, j, m) {
                const char *mn = json_string_value(json_object_get(m, "name"));
                if (!mn || strcmp(mn, name) != 0 || json_is_true(json_object_get(m, "readOnly")))
                    continue;
                const char *cn = json_string_value(json_object_get(ctr, "name"));
                ad_deny(c, "escape-hatch/host-path-writable",
                        "%s %s mounts host-path volume %s writable: it would change the node's "
                        "files; set volumeMounts[%zu].readOnly: true",
                        kinds[k][1], ad_q(c, cn ? cn : "?"), ad_q(c, name), j);
            }
        }
    }
}

static void host_path(struct ad_ctx *c, json_t *vol, size_t i, const void *arg)
{
    json_t *spec = (json_t *)arg;
    (void)i;
    json_t *hp = ad_get(c, vol, "hostPath", JSON_OBJECT);
    size_t mark = ad_push(c, "hostPath");
    const char *path = ad_get_str(c, hp, "path");
    const char *type = ad_get_str(c, hp, "type");
    size_t pmark = ad_push(c, "path");
    const char *name = ad_get_str(c, vol, "name");
    if (path && !c->bad) {
        char where[200];
        snprintf(where, sizeof(where), "volume %s mounts host path", ad_q(c, name));
        if (check_path(c, path, type, where) && name)
            read_only_mounts(c, spec, name);
    }
    ad_pop(c, pmark);
    ad_pop(c, mark);
}

/* The container toolkit reads the device list from mounts under this path
 * when it runs with accept-nvidia-visible-devices-as-volume-mounts. */
#define DEVICE_LIST_MOUNT "/var/run/nvidia-container-devices"

static void mount(struct ad_ctx *c, json_t *m, size_t i, const void *arg)
{
    const char *who = arg;
    (void)i;
    const char *path = ad_get_str(c, m, "mountPath");
    size_t pmark = ad_push(c, "mountPath");
    char *norm = path && !c->bad ? ad_normalised(c, path) : NULL;
    if (norm &&
        (under(norm, DEVICE_LIST_MOUNT, 0) || under(norm, "/run/nvidia-container-devices", 0)))
        ad_deny(c, "escape-hatch/device-mount",
                "%s mounts a volume at %s: the NVIDIA runtime would read it as a device "
                "list; GPUs are assigned by claims",
                who, ad_q(c, path));
    free(norm);
    ad_pop(c, pmark);
}

static void host_port(struct ad_ctx *c, json_t *port, size_t i, const void *arg)
{
    const char *who = arg;
    json_t *hp = ad_get(c, port, "hostPort", JSON_INTEGER);
    if (hp && json_integer_value(hp) != 0)
        ad_deny(c, "escape-hatch/host-port",
                "%s sets ports[%zu].hostPort %lld: it would listen on the node's network, "
                "around every NetworkPolicy; use a Service",
                who, i, (long long)json_integer_value(hp));
}

void ad_hatch_container(struct ad_ctx *c, json_t *ctr, const char *who)
{
    env_lists(c, ctr, who);
    ad_each(c, ctr, "ports", JSON_OBJECT, host_port, who);
    ad_pss_container(c, ctr, who);
    ad_each(c, ctr, "volumeMounts", JSON_OBJECT, mount, who);
}

/* ---- the pod ---- */

static void host_namespaces(struct ad_ctx *c, json_t *spec)
{
    if (ad_get_true(c, spec, "hostNetwork"))
        ad_deny(c, "escape-hatch/host-network",
                "the pod sets hostNetwork: it would share the node's network, around every "
                "NetworkPolicy, and reach node-local services; remove it");
    if (ad_get_true(c, spec, "hostIPC"))
        ad_deny(c, "escape-hatch/host-ipc",
                "the pod sets hostIPC: it would share memory with other tenants' GPU processes "
                "and MPS servers; remove it");
    if (ad_get_true(c, spec, "hostPID"))
        ad_deny(c, "escape-hatch/host-pid",
                "the pod sets hostPID: it would see and signal other tenants' GPU processes; "
                "remove it");
}

/* "a, b, c" into buf (names that do not fit are left out). */
static void join(const char *const *names, size_t n, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int w = snprintf(buf + len, size - len, "%s%s", i ? ", " : "", names[i]);
        if (w < 0 || (size_t)w >= size - len) {
            buf[len] = '\0';
            return;
        }
        len += (size_t)w;
    }
}

static void runtime_class(struct ad_ctx *c, json_t *spec)
{
    const char *rc = ad_get_str(c, spec, "runtimeClassName");
    if (!rc)
        return;
    for (size_t i = 0; i < c->pol->nruntime; i++)
        if (strcmp(rc, c->pol->runtime[i]) == 0)
            return;
    char allowed[256];
    join(c->pol->runtime, c->pol->nruntime, allowed, sizeof(allowed));
    ad_deny(c, "escape-hatch/runtime-class",
            "the pod uses runtimeClassName %s; tenants may use %s%s", ad_q(c, rc),
            c->pol->nruntime ? "only " : "none", allowed);
}

/* priorityClassName: only a class the contract names; without one the
 * cluster's default. system-node-critical would preempt other tenants'
 * GPU pods (render's quota holds the same line). */
static void priority_class(struct ad_ctx *c, json_t *spec)
{
    const char *pc = ad_get_str(c, spec, "priorityClassName");
    if (!pc || !pc[0])
        return;
    for (size_t i = 0; i < c->ns->nprios; i++)
        if (strcmp(pc, c->ns->prios[i]) == 0)
            return;
    char allowed[256];
    join(c->ns->prios, c->ns->nprios, allowed, sizeof(allowed));
    ad_deny(c, "escape-hatch/priority-class",
            "the pod uses priorityClassName %s: it could preempt other tenants' pods; tenant %s "
            "may use %s%s (podSecurity.priorityClasses)",
            ad_q(c, pc), c->ns->tenant, c->ns->nprios ? "only " : "none: leave it out", allowed);
}

/* A node the pod is pinned to: denied when it is a fleet node where the
 * tenant has nothing planned. */
static void pinned(struct ad_ctx *c, const char *node, const char *how)
{
    if (!node || !ad_is_fleet_node(c->pol, node) || ad_is_planned_node(c->ns, node))
        return;
    char nodes[256];
    join(c->ns->nodes, c->ns->nnodes, nodes, sizeof(nodes));
    if (c->ns->nnodes)
        ad_deny(c, "escape-hatch/node",
                "%s %s, where tenant %s has no planned GPUs; its "
                "GPUs are on %s",
                how, ad_q(c, node), c->ns->tenant, nodes);
    else
        ad_deny(c, "escape-hatch/node", "%s %s; tenant %s has no planned GPUs on any node", how,
                ad_q(c, node), c->ns->tenant);
}

/* One requirement of matchExpressions (key kubernetes.io/hostname) or
 * matchFields (key metadata.name): its In values pin the pod. */
static void term_req(struct ad_ctx *c, json_t *r, size_t i, const void *arg)
{
    const char *key = arg;
    (void)i;
    const char *k = ad_get_str(c, r, "key"), *op = ad_get_str(c, r, "operator");
    json_t *values = ad_get(c, r, "values", JSON_ARRAY);
    size_t vmark = ad_push(c, "values");
    for (size_t v = 0;
         k && op && !strcmp(k, key) && !strcmp(op, "In") && v < json_array_size(values) && !c->bad;
         v++) {
        json_t *val = ad_item(c, values, v, JSON_STRING);
        pinned(c, json_string_value(val), "required node affinity names node");
    }
    ad_pop(c, vmark);
}

static void term_pins(struct ad_ctx *c, json_t *term, size_t i, const void *arg)
{
    (void)i;
    (void)arg;
    ad_each(c, term, "matchExpressions", JSON_OBJECT, term_req, "kubernetes.io/hostname");
    ad_each(c, term, "matchFields", JSON_OBJECT, term_req, "metadata.name");
}

static void node_affinity(struct ad_ctx *c, json_t *spec)
{
    const char *path[] = {"affinity", "nodeAffinity",
                          "requiredDuringSchedulingIgnoredDuringExecution"};
    json_t *cur = spec;
    size_t mark = c->plen;
    for (size_t i = 0; i < 3 && cur; i++) {
        cur = ad_get(c, cur, path[i], JSON_OBJECT);
        ad_push(c, path[i]);
    }
    ad_each(c, cur, "nodeSelectorTerms", JSON_OBJECT, term_pins, NULL);
    ad_pop(c, mark);
}

static void placement(struct ad_ctx *c, json_t *spec)
{
    pinned(c, ad_get_str(c, spec, "nodeName"), "the pod sets nodeName");
    json_t *sel = ad_get(c, spec, "nodeSelector", JSON_OBJECT);
    size_t mark = ad_push(c, "nodeSelector");
    pinned(c, ad_get_str(c, sel, "kubernetes.io/hostname"), "the pod's nodeSelector names node");
    ad_pop(c, mark);
    node_affinity(c, spec);
}

void ad_hatch_pod(struct ad_ctx *c, json_t *spec)
{
    ad_each(c, spec, "volumes", JSON_OBJECT, host_path, spec);
    host_namespaces(c, spec);
    ad_pss_pod(c, spec);
    runtime_class(c, spec);
    priority_class(c, spec);
    placement(c, spec);
}
