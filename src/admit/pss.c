/*
 * pss.c - the Pod Security Standards as Kubernetes 1.35 defines each
 * control (k8s.io/pod-security-admission/policy), checked by the webhook
 * itself so the floor holds whatever label the namespace carries (render
 * labels a namespace enforce: privileged where its tenant needs the shim's
 * host path, and then nothing else checks): baseline for every tenant,
 * restricted where the tenant's podSecurity.level says so. Every container,
 * init container and ephemeral container, and the pod.
 *   baseline: privileged; capabilities outside the level's set; procMount
 *     other than Default (allowed with hostUsers: false, 1.35); seccomp and
 *     AppArmor type other than RuntimeDefault or Localhost; SELinux type
 *     outside the container types, or any user or role; sysctls outside the
 *     safe set; Windows hostProcess; a probe or lifecycle hook with a host;
 *   restricted, beyond: allowPrivilegeEscalation not false; runAsNonRoot
 *     not true and runAsUser 0 (both waived with hostUsers: false); no
 *     seccomp profile; capabilities not dropping ALL; procMount other than
 *     Default whatever hostUsers says; volumes other than configMap, csi,
 *     downwardAPI, emptyDir, ephemeral, image, persistentVolumeClaim,
 *     projected and secret (the shim's and the contract's host paths are
 *     hatch.c's). os.name windows waives privilege escalation, seccomp and
 *     the dropped capabilities, as Kubernetes does.
 * Capabilities are compared as Kubernetes does (exact: "chown" and
 * "CAP_CHOWN" are outside baseline's set); a contract's
 * podSecurity.capabilities, the only additions, match in any spelling.
 * Where tessera is stricter: the deprecated seccomp and AppArmor annotations are
 * checked by value too (Kubernetes checks only the fields since 1.19), so
 * a cluster that still reads them gains nothing.
 * Rules: escape-hatch/<control> for baseline's, restricted/<control> for
 * the rest (hatch.c keeps host namespaces, ports and paths).
 */
#include "admit/internal.h"

#include <string.h>
#include <strings.h>

/* ---- what the pod says for all its containers ---- */

struct pod_facts {
    int user_ns;     /* hostUsers: false */
    int windows;     /* os.name: windows */
    int non_root;    /* securityContext.runAsNonRoot: true */
    int seccomp_set; /* securityContext.seccompProfile.type valid */
};

static int valid_profile(const char *type)
{
    return type && (strcmp(type, "RuntimeDefault") == 0 || strcmp(type, "Localhost") == 0);
}

/* Read without checking types: ad_pss_pod checks them after the containers,
 * and a 400 wins over any denial. */
static struct pod_facts pod_facts(const json_t *spec)
{
    json_t *sc = json_object_get(spec, "securityContext");
    json_t *seccomp = json_object_get(sc, "seccompProfile");
    const char *os = json_string_value(json_object_get(json_object_get(spec, "os"), "name"));
    return (struct pod_facts){
        .user_ns = json_is_false(json_object_get(spec, "hostUsers")),
        .windows = os && strcmp(os, "windows") == 0,
        .non_root = json_is_true(json_object_get(sc, "runAsNonRoot")),
        .seccomp_set = valid_profile(json_string_value(json_object_get(seccomp, "type"))),
    };
}

static int restricted(const struct ad_ctx *c) { return c->ns->level == SPEC_PSS_RESTRICTED; }

/* ---- capabilities ---- */

/* The capabilities the standards let a container add: baseline's list (the
 * container runtime's default set), and restricted's one. */
static const char *const baseline_caps[] = {
    "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",       "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SETUID", "SYS_CHROOT",
};
static const char *const restricted_caps[] = {"NET_BIND_SERVICE"};

/* cap in list: exactly as Kubernetes compares (the standards' sets), or
 * in any case, with or without CAP_ (what the contract names: the runtime
 * reads every spelling as the same capability). */
static int cap_in(const char *cap, const char *const *list, size_t n, int any_spelling)
{
    if (any_spelling && strncasecmp(cap, "CAP_", 4) == 0)
        cap += 4;
    for (size_t i = 0; i < n; i++) {
        const char *want = list[i];
        if (any_spelling && strncasecmp(want, "CAP_", 4) == 0)
            want += 4;
        if (any_spelling ? strcasecmp(cap, want) == 0 : strcmp(cap, want) == 0)
            return 1;
    }
    return 0;
}

/* Whether the namespace's level or its contract lets a container add cap. */
static int cap_allowed(const struct ad_ctx *c, const char *cap)
{
    if (restricted(c)
            ? cap_in(cap, restricted_caps, sizeof(restricted_caps) / sizeof(restricted_caps[0]), 0)
            : cap_in(cap, baseline_caps, sizeof(baseline_caps) / sizeof(baseline_caps[0]), 0))
        return 1;
    return cap_in(cap, c->ns->caps, c->ns->ncaps, 1);
}

static void added_cap(struct ad_ctx *c, json_t *cap, size_t i, const void *arg)
{
    const char *who = arg;
    (void)i;
    if (cap_allowed(c, json_string_value(cap)))
        return;
    ad_deny(c, "escape-hatch/capabilities",
            "%s adds capability %s: outside the Pod Security %s set, it could reach other "
            "tenants' GPU processes or the host; remove it, or name it in tenant %s's "
            "podSecurity.capabilities",
            who, ad_q(c, json_string_value(cap)), spec_pss_names[c->ns->level], c->ns->tenant);
}

static void dropped(struct ad_ctx *c, json_t *cap, size_t i, const void *arg)
{
    int *all = (int *)arg;
    (void)c;
    (void)i;
    if (strcmp(json_string_value(cap), "ALL") == 0)
        *all = 1;
}

static void capabilities(struct ad_ctx *c, json_t *sc, const char *who, const struct pod_facts *pf)
{
    json_t *caps = ad_get(c, sc, "capabilities", JSON_OBJECT);
    size_t mark = ad_push(c, "capabilities");
    int all = 0;
    ad_each(c, caps, "add", JSON_STRING, added_cap, who);
    ad_each(c, caps, "drop", JSON_STRING, dropped, &all);
    ad_pop(c, mark);
    if (!c->bad && restricted(c) && !pf->windows && !all)
        ad_deny(c, "restricted/capabilities",
                "%s does not drop every capability, and tenant %s's pods are restricted; set "
                "securityContext.capabilities.drop: [\"ALL\"]",
                who, c->ns->tenant);
}

/* ---- profiles: seccomp, AppArmor, SELinux, Windows ---- */

/* sc[key].type: NULL when sc[key] is absent, "" when it has no type. */
static const char *profile_type(struct ad_ctx *c, json_t *sc, const char *key)
{
    json_t *prof = ad_get(c, sc, key, JSON_OBJECT);
    size_t mark = ad_push(c, key);
    const char *type = ad_get_str(c, prof, "type");
    ad_pop(c, mark);
    return prof && !c->bad ? (type ? type : "") : NULL;
}

/* seccompProfile and appArmorProfile of a pod's or container's
 * securityContext (who: "the pod" or the container); returns whether a
 * valid seccomp profile is set. */
static int profiles(struct ad_ctx *c, json_t *sc, const char *who)
{
    const char *seccomp = profile_type(c, sc, "seccompProfile");
    if (seccomp && !valid_profile(seccomp))
        ad_deny(c, "escape-hatch/seccomp",
                "%s sets securityContext.seccompProfile.type %s: without the runtime's filter "
                "every system call reaches the node's kernel; use RuntimeDefault or Localhost",
                who, ad_q(c, seccomp));
    const char *apparmor = profile_type(c, sc, "appArmorProfile");
    if (apparmor && !valid_profile(apparmor))
        ad_deny(c, "escape-hatch/apparmor",
                "%s sets securityContext.appArmorProfile.type %s: it would run without the "
                "runtime's confinement; use RuntimeDefault or Localhost",
                who, ad_q(c, apparmor));
    return valid_profile(seccomp);
}

static void selinux(struct ad_ctx *c, json_t *sc, const char *who)
{
    static const char *const types[] = {"", "container_t", "container_init_t", "container_kvm_t",
                                        "container_engine_t"};
    json_t *opts = ad_get(c, sc, "seLinuxOptions", JSON_OBJECT);
    size_t mark = ad_push(c, "seLinuxOptions");
    const char *type = ad_get_str(c, opts, "type");
    const char *user = ad_get_str(c, opts, "user"), *role = ad_get_str(c, opts, "role");
    ad_pop(c, mark);
    int ok_type = 0;
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        ok_type |= strcmp(type ? type : "", types[i]) == 0;
    if (!c->bad && !ok_type)
        ad_deny(c, "escape-hatch/selinux",
                "%s sets securityContext.seLinuxOptions.type %s: only the container types "
                "(container_t, container_init_t, container_kvm_t, container_engine_t) keep it "
                "off the node's files; remove it",
                who, ad_q(c, type));
    if (!c->bad && ((user && user[0]) || (role && role[0])))
        ad_deny(c, "escape-hatch/selinux",
                "%s sets securityContext.seLinuxOptions.%s: a custom SELinux %s could lift the "
                "container's confinement; remove it",
                who, user && user[0] ? "user" : "role", user && user[0] ? "user" : "role");
}

static void host_process(struct ad_ctx *c, json_t *sc, const char *who)
{
    json_t *win = ad_get(c, sc, "windowsOptions", JSON_OBJECT);
    size_t mark = ad_push(c, "windowsOptions");
    if (ad_get_true(c, win, "hostProcess"))
        ad_deny(c, "escape-hatch/host-process",
                "%s sets securityContext.windowsOptions.hostProcess: it would run as a process "
                "of the Windows node; remove it",
                who);
    ad_pop(c, mark);
}

/* ---- probes and lifecycle hooks ---- */

/* handler.httpGet.host and handler.tcpSocket.host (handler: a probe or a
 * lifecycle hook under the current path). */
static void handler_host(struct ad_ctx *c, json_t *holder, const char *key, const char *who)
{
    static const char *const kinds[] = {"httpGet", "tcpSocket"};
    json_t *h = ad_get(c, holder, key, JSON_OBJECT);
    size_t mark = ad_push(c, key);
    for (size_t k = 0; k < 2 && h; k++) {
        json_t *action = ad_get(c, h, kinds[k], JSON_OBJECT);
        size_t amark = ad_push(c, kinds[k]);
        const char *host = ad_get_str(c, action, "host");
        if (host && host[0] && !c->bad)
            ad_deny(c, "escape-hatch/probe-host",
                    "%s's %s.%s.host is %s: the kubelet would connect from the node to "
                    "another address; remove host (the pod's own address is the default)",
                    who, key, kinds[k], ad_q(c, host));
        ad_pop(c, amark);
    }
    ad_pop(c, mark);
}

static void probes(struct ad_ctx *c, json_t *ctr, const char *who)
{
    static const char *const probe_keys[] = {"livenessProbe", "readinessProbe", "startupProbe"};
    for (size_t i = 0; i < 3; i++)
        handler_host(c, ctr, probe_keys[i], who);
    json_t *lc = ad_get(c, ctr, "lifecycle", JSON_OBJECT);
    size_t mark = ad_push(c, "lifecycle");
    handler_host(c, lc, "postStart", who);
    handler_host(c, lc, "preStop", who);
    ad_pop(c, mark);
}

/* ---- the container ---- */

static void proc_mount(struct ad_ctx *c, json_t *sc, const char *who, const struct pod_facts *pf)
{
    const char *proc = ad_get_str(c, sc, "procMount");
    if (!proc || strcmp(proc, "Default") == 0 || (pf->user_ns && !restricted(c)))
        return;
    ad_deny(c, "escape-hatch/proc-mount",
            "%s sets procMount %s: an unmasked /proc shows the node's kernel and devices%s; "
            "remove it",
            who, ad_q(c, proc),
            restricted(c) ? " (restricted allows only Default, even in a user namespace)"
                          : " (allowed only with hostUsers: false)");
}

/* restricted: no privilege escalation, never root unless in a user
 * namespace, a seccomp profile. */
static void restricted_user(struct ad_ctx *c, json_t *sc, const char *who,
                            const struct pod_facts *pf, int seccomp_set)
{
    json_t *ape = ad_get(c, sc, "allowPrivilegeEscalation", JSON_TRUE);
    json_t *nonroot = ad_get(c, sc, "runAsNonRoot", JSON_TRUE);
    json_t *uid = ad_get(c, sc, "runAsUser", JSON_INTEGER);
    const char *t = c->ns->tenant;
    if (c->bad)
        return;
    if (!pf->windows && !json_is_false(ape))
        ad_deny(c, "restricted/privilege-escalation",
                "%s may gain privileges (setuid, file capabilities), and tenant %s's pods are "
                "restricted; set securityContext.allowPrivilegeEscalation: false",
                who, t);
    if (!pf->user_ns && (json_is_false(nonroot) || (!nonroot && !pf->non_root)))
        ad_deny(c, "restricted/run-as-non-root",
                "%s may run as root, and tenant %s's pods are restricted; set "
                "securityContext.runAsNonRoot: true (on the pod or the container)",
                who, t);
    if (!pf->user_ns && uid && json_integer_value(uid) == 0)
        ad_deny(c, "restricted/run-as-user",
                "%s sets securityContext.runAsUser 0 (root), and tenant %s's pods are "
                "restricted; use a non-zero user",
                who, t);
    if (!pf->windows && !seccomp_set && !pf->seccomp_set)
        ad_deny(c, "restricted/seccomp",
                "%s has no seccomp profile, and tenant %s's pods are restricted; set "
                "securityContext.seccompProfile.type: RuntimeDefault (on the pod or the "
                "container)",
                who, t);
}

void ad_pss_container(struct ad_ctx *c, json_t *ctr, const char *who)
{
    struct pod_facts pf = pod_facts(c->pod);
    json_t *sc = ad_get(c, ctr, "securityContext", JSON_OBJECT);
    size_t mark = ad_push(c, "securityContext");
    if (ad_get_true(c, sc, "privileged"))
        ad_deny(c, "escape-hatch/privileged",
                "%s is privileged: it would see every GPU on the node; remove "
                "securityContext.privileged",
                who);
    proc_mount(c, sc, who, &pf);
    capabilities(c, sc, who, &pf);
    int seccomp_set = profiles(c, sc, who);
    selinux(c, sc, who);
    host_process(c, sc, who);
    if (restricted(c))
        restricted_user(c, sc, who, &pf, seccomp_set);
    ad_pop(c, mark);
    probes(c, ctr, who);
}

/* ---- the pod ---- */

/* The sysctls the baseline standard allows (Kubernetes 1.32 to 1.36): they
 * are namespaced to the pod and cannot reach the node or other pods. */
static const char *const safe_sysctls[] = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
};

static void sysctl(struct ad_ctx *c, json_t *s, size_t i, const void *arg)
{
    (void)i;
    (void)arg;
    const char *name = ad_get_str(c, s, "name");
    for (size_t k = 0; name && k < sizeof(safe_sysctls) / sizeof(safe_sysctls[0]); k++)
        if (strcmp(name, safe_sysctls[k]) == 0)
            return;
    if (!c->bad)
        ad_deny(c, "escape-hatch/sysctls",
                "the pod sets sysctl %s: outside the safe set it can change the node's kernel "
                "for other tenants; remove it",
                ad_q(c, name ? name : "?"));
}

/* Volume sources the restricted standard allows (hostPath: hatch.c). */
static const char *const restricted_volumes[] = {
    "configMap", "csi",       "downwardAPI",           "emptyDir", "ephemeral",
    "image",     "projected", "persistentVolumeClaim", "secret",   "hostPath",
};

static void volume(struct ad_ctx *c, json_t *vol, size_t i, const void *arg)
{
    (void)i;
    (void)arg;
    const char *key, *bad = NULL;
    json_t *v;
    json_object_foreach (vol, key, v) {
        int ok = strcmp(key, "name") == 0 || json_is_null(v);
        for (size_t k = 0; !ok && k < sizeof(restricted_volumes) / sizeof(*restricted_volumes); k++)
            ok = strcmp(key, restricted_volumes[k]) == 0;
        if (!ok && !bad)
            bad = key;
    }
    const char *name = ad_get_str(c, vol, "name");
    if (bad && !c->bad)
        ad_deny(c, "restricted/volumes",
                "volume %s is a %s volume, and tenant %s's pods are restricted: they may use "
                "configMap, csi, downwardAPI, emptyDir, ephemeral, image, persistentVolumeClaim, "
                "projected and secret volumes",
                ad_q(c, name ? name : "?"), ad_q(c, bad), c->ns->tenant);
}

void ad_pss_pod(struct ad_ctx *c, json_t *spec)
{
    ad_get(c, spec, "hostUsers", JSON_TRUE);
    json_t *os = ad_get(c, spec, "os", JSON_OBJECT);
    size_t mark = ad_push(c, "os");
    ad_get_str(c, os, "name");
    ad_pop(c, mark);
    json_t *sc = ad_get(c, spec, "securityContext", JSON_OBJECT);
    mark = ad_push(c, "securityContext");
    profiles(c, sc, "the pod");
    selinux(c, sc, "the pod");
    host_process(c, sc, "the pod");
    ad_each(c, sc, "sysctls", JSON_OBJECT, sysctl, NULL);
    ad_get(c, sc, "runAsNonRoot", JSON_TRUE);
    json_t *uid = ad_get(c, sc, "runAsUser", JSON_INTEGER);
    if (restricted(c) && uid && json_integer_value(uid) == 0 && !pod_facts(spec).user_ns)
        ad_deny(c, "restricted/run-as-user",
                "the pod sets securityContext.runAsUser 0 (root), and tenant %s's pods are "
                "restricted; use a non-zero user",
                c->ns->tenant);
    ad_pop(c, mark);
    if (restricted(c))
        ad_each(c, spec, "volumes", JSON_OBJECT, volume, NULL);
}

/* ---- the deprecated annotations ---- */

#define SECCOMP_POD "seccomp.security.alpha.kubernetes.io/pod"
#define SECCOMP_CONTAINER "container.seccomp.security.alpha.kubernetes.io/"
#define APPARMOR_CONTAINER "container.apparmor.security.beta.kubernetes.io/"

static int prefixed(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

void ad_pss_annotation(struct ad_ctx *c, const char *key, json_t *val)
{
    int seccomp = strcmp(key, SECCOMP_POD) == 0 || prefixed(key, SECCOMP_CONTAINER);
    int apparmor = prefixed(key, APPARMOR_CONTAINER);
    if (!seccomp && !apparmor)
        return;
    const char *v = json_string_value(val);
    if (!v) {
        size_t mark = ad_push(c, key);
        ad_bad(c, "must be a string");
        ad_pop(c, mark);
        return;
    }
    int ok = strcmp(v, "runtime/default") == 0 || prefixed(v, "localhost/") ||
             (seccomp ? strcmp(v, "docker/default") == 0 : v[0] == '\0');
    if (!ok)
        ad_deny(c, seccomp ? "escape-hatch/seccomp" : "escape-hatch/apparmor",
                "the pod carries annotation %s: %s: it asks for no %s; remove it, or use "
                "runtime/default",
                ad_q(c, key), ad_q(c, v), seccomp ? "seccomp filter" : "AppArmor confinement");
}
