#!/usr/bin/python3
"""check_deploy.py - the agreements across tessera's components in one rendered
kustomize output (`kubectl kustomize deploy/...`): one image, every referenced
object present, the files arguments name in mounted ConfigMaps, ports, the
shim's path, the metering store's Secret, the console's way to the webhook's
denials, minimal RBAC, the security settings, and (when the output has
NetworkPolicies) who reaches each port; given the tessera binary, that each
container's command is one of its verbs and every option it passes is in that
verb's --help. Prints one line per broken agreement.
With --commands, the same for every `tessera` command line in the shell blocks
of Markdown files (docs/install.md), each finding naming FILE:LINE.
With --user-made, the output is an install whose Secrets in USER_MADE the
user creates (overlays/postgres): pods may name them although the output lacks
them; --user-made=NAME,... names which of them, and each must be used.
With --batch LIST, several runs in one process (the tests break one agreement
at a time in dozens of copies; Python and PyYAML start once): each line of LIST
is a run's arguments and then a file OUT, tab-separated; each run is judged as
if alone, its output in OUT, its stderr in OUT.err, its exit status in OUT.rc.
Usage: check_deploy.py OUTPUT.yaml VERSION [TESSERA] [--user-made[=NAME,...]] | --commands TESSERA FILE.md... | --batch LIST
"""
import contextlib
import traceback
import re
import shlex
import subprocess
import sys

import yaml

NS = "tessera-system"
# Objects pods reference that the install does not make: the serving
# certificate comes from `tessera cert` or cert-manager (docs/webhook.md), the
# node agents' configs from `tessera render` (cluster/agent-nodes.yaml, applied
# with the rendered tree; tests/cli/deploy.sh checks that the two agree).
# With cert-manager (overlays/cert-manager) a Certificate of the output makes
# the serving certificate's Secret: then it counts as made by the install.
# The console's identities hold tokens' hashes: deploy/install creates the
# Secret with one operator token when it is missing (`tessera token new`),
# or the user does (docs/install.md); kustomize never makes it, so a re-apply
# of deploy/ cannot replace the tokens.
EXTERNAL = {("Secret", "tessera-webhook-tls"), ("ConfigMap", "tessera-agent-nodes"),
            ("Secret", "tessera-console-tokens")}
# Secrets the user creates before applying an install that says so
# (--user-made): what must not be in a tracked file (docs/install.md has the
# commands that create them).
USER_MADE = {("Secret", "tessera-db"): "overlays/postgres: the store's URL, with its password",
             ("Secret", "tessera-db-ca"): "overlays/postgres: the CA of the store's server",
             ("Secret", "tessera-admission-client-ca"):
             "components/admission-client-auth: the CA of the API server's client certificate"}
# The keys cert-manager writes into a Certificate's Secret.
CERT_KEYS = ("tls.crt", "tls.key", "ca.crt")
# The API access each component needs, (namespace, apiGroup, resource, verb) per
# ServiceAccount (deploy/base/*.yaml say why): the meter lists the dcgm-exporter
# Service's EndpointSlices in the GPU operator's namespace (`meter scrape
# --discover`: one exporter per node; the Service's own address reaches one at
# random); the agent evicts a pod over its limit (docs/agent.md, `evict`): it
# lists its node's pods and creates an Eviction, in any namespace ("*": a
# ClusterRole, the only one, CLUSTER_WIDE); the webhook and the console never
# call the API server and get no token.
EXPORTER_NS = "gpu-operator"
RBAC = {"tessera-webhook": set(),
        "tessera-console": set(),
        "tessera-meter": {(EXPORTER_NS, "discovery.k8s.io", "endpointslices", "list")},
        "tessera-agent": {("*", "", "pods", "list"), ("*", "", "pods/eviction", "create")}}
CLUSTER_WIDE = {"tessera-agent": "evicts tenants' pods, which are in the tenants' namespaces"}
# The label NetworkPolicies keep tenants' namespaces out by (render sets it).
TENANT_LABEL = "tessera.dev/tenant"
# Containers that run as root, and why (deploy/base/agent.yaml).
ROOT = {("tessera-agent", "agent"): "NVML's MIG changes need root",
        ("tessera-agent", "shim"): "writes the root-owned host path of the shim"}
# The one privileged container, and why (deploy/base/agent.yaml).
PRIVILEGED = {("tessera-agent", "agent"): "the NVIDIA runtime gives GPUs and the MIG config "
              "capability only to privileged containers once tenants' env is ignored"}
# Long-running containers without probes, and why (none: every one listens).
NO_PROBES = {}
# Verbs the install runs that the binary may not have yet, and why: reported as
# a note while the verb is missing; once it exists its options are checked.
PENDING = {}
SHIM_FLAG = "--shim-path="
WORKLOADS = ("Deployment", "DaemonSet", "StatefulSet")

problems = []


def bad(msg):
    problems.append(msg)


def arg(container, flag):
    vals = [a[len(flag):] for a in container.get("args", []) if a.startswith(flag)]
    return vals[0] if len(vals) == 1 else None


def containers(pod):
    return [("init", c) for c in pod.get("initContainers", [])] + \
           [("main", c) for c in pod.get("containers", [])]


def check_images(pods, version):
    want = "tessera:" + version
    for name, pod in pods.items():
        for _, c in containers(pod):
            if c.get("image") != want:
                bad("%s/%s: image %s, not %s" % (name, c["name"], c.get("image"), want))


def pod_refs(pod):
    """(kind, name, key or None, where) for every object a pod names."""
    refs = [("ServiceAccount", pod.get("serviceAccountName", "default"), None,
             "serviceAccountName")]
    for v in pod.get("volumes", []):
        if "configMap" in v:
            for it in v["configMap"].get("items", []) or [{}]:
                refs.append(("ConfigMap", v["configMap"]["name"], it.get("key"),
                             "volume " + v["name"]))
        if "secret" in v:
            for it in v["secret"].get("items", []) or [{}]:
                refs.append(("Secret", v["secret"]["secretName"], it.get("key"),
                             "volume " + v["name"]))
        if "persistentVolumeClaim" in v:
            refs.append(("PersistentVolumeClaim", v["persistentVolumeClaim"]["claimName"],
                         None, "volume " + v["name"]))
    for _, c in containers(pod):
        for e in c.get("env", []):
            src = e.get("valueFrom", {})
            for kind, field in (("Secret", "secretKeyRef"), ("ConfigMap", "configMapKeyRef")):
                if field in src:
                    refs.append((kind, src[field]["name"], src[field]["key"],
                                 "%s env %s" % (c["name"], e["name"])))
        for e in c.get("envFrom", []):
            for kind, field in (("Secret", "secretRef"), ("ConfigMap", "configMapRef")):
                if field in e:
                    refs.append((kind, e[field]["name"], None, c["name"] + " envFrom"))
    return refs


def check_refs(pods, objs, user_made, listed=()):
    """Every object a pod names is in the output, made outside it (EXTERNAL),
    or one of user_made; each of EXTERNAL and listed (the user-made ones
    named on the command line) is used."""
    used_external = set()
    for name, pod in pods.items():
        for kind, ref, key, where in pod_refs(pod):
            obj = objs.get((kind, ref))
            if obj is None:
                if (kind, ref) in EXTERNAL or (kind, ref) in user_made:
                    used_external.add((kind, ref))
                else:
                    bad("%s: %s names %s %s, which the output lacks" % (name, where, kind, ref))
            elif key is not None and key not in obj.get("data", {}):
                bad("%s: %s names key %s of %s %s, which has none" % (name, where, key, kind, ref))
    for kind, ref in sorted((EXTERNAL | set(listed)) - used_external - set(objs)):
        bad("%s %s is listed as made outside the install but no pod uses it" % (kind, ref))


def selected(pods_by_labels, selector):
    return [n for n, labels in pods_by_labels.items()
            if selector and all(labels.get(k) == v for k, v in selector.items())]


def port_of(c, port):
    for p in c.get("ports", []):
        if port in (p.get("name"), p.get("containerPort")):
            return p["containerPort"]
    return None


def check_ports(pods, labels, objs):
    for name, pod in pods.items():
        for _, c in containers(pod):
            for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
                get = c.get(probe, {}).get("httpGet")
                if get and port_of(c, get["port"]) is None:
                    bad("%s/%s: %s port %s is no container port" %
                        (name, c["name"], probe, get["port"]))
    for (kind, sname), svc in objs.items():
        if kind != "Service":
            continue
        targets = selected(labels, svc["spec"].get("selector"))
        if not targets:
            bad("Service %s selects no pod of the install" % sname)
        for p in svc["spec"]["ports"]:
            tp = p.get("targetPort", p["port"])
            for t in targets:
                if not any(port_of(c, tp) for _, c in containers(pods[t])):
                    bad("Service %s: targetPort %s is no port of %s" % (sname, tp, t))


def check_config_paths(pods, objs):
    """A file an argument names inside a ConfigMap's mount is a key of it."""
    for name, pod in pods.items():
        vols = {v["name"]: v for v in pod.get("volumes", [])}
        for _, c in containers(pod):
            for a in c.get("args", []):
                path = a.split("=", 1)[1] if a.startswith("--") and "=" in a else None
                for m in c.get("volumeMounts", []) if path else []:
                    cm = vols[m["name"]].get("configMap")
                    mp = m["mountPath"].rstrip("/") + "/"
                    if not cm or not path.startswith(mp):
                        continue
                    obj = objs.get(("ConfigMap", cm["name"]))
                    if obj is not None and path[len(mp):] not in obj.get("data", {}):
                        bad("%s/%s: %s is no key of ConfigMap %s" % (name, c["name"], a,
                                                                     cm["name"]))


def check_webhook_service(objs):
    for (kind, name), o in objs.items():
        if kind != "ValidatingWebhookConfiguration":
            continue
        for wh in o["webhooks"]:
            s = wh["clientConfig"].get("service")
            svc = objs.get(("Service", s["name"])) if s else None
            if svc is None or svc["metadata"].get("namespace") != s["namespace"]:
                bad("webhook %s: its Service %s is not in the install" % (wh["name"], s))
            elif s.get("port", 443) not in [p["port"] for p in svc["spec"]["ports"]]:
                bad("webhook %s: port %s is not a port of Service %s" %
                    (wh["name"], s.get("port", 443), s["name"]))


def host_path(pod, c, path):
    """The host path that path in container c is, through a hostPath volume."""
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        mp = m["mountPath"].rstrip("/")
        if (path == mp or path.startswith(mp + "/")) and "hostPath" in vols[m["name"]]:
            return vols[m["name"]]["hostPath"]["path"].rstrip("/") + path[len(mp):]
    return None


def check_shim(pods):
    shim_paths = [arg(c, SHIM_FLAG) for n, pod in pods.items() for _, c in containers(pod)
                  if c.get("args", [""])[0] == "serve"]
    placed = [host_path(pod, c, arg(c, "--to=")) for _, pod in pods.items()
              for _, c in containers(pod) if c.get("args", [])[:2] == ["shim", "install"]]
    if len(placed) != 1 or placed[0] is None:
        bad("one container must place the shim on a hostPath (shim install --to): %s" % placed)
    if not shim_paths or any(p is None for p in shim_paths):
        bad("the webhook needs %s" % SHIM_FLAG)
    elif placed and any(p != placed[0] for p in shim_paths):
        bad("the webhook's --shim-path %s is not where the shim is put, %s" %
            (shim_paths, placed[0]))


def check_store(pods, objs, user_made):
    meter = pods.get("tessera-meter")
    if meter is None:
        return bad("no metering Deployment tessera-meter")
    env = [e for _, c in containers(meter) for e in c.get("env", []) if e["name"] == "TESSERA_DB"]
    ref = env[0].get("valueFrom", {}).get("secretKeyRef") if len(env) == 1 else None
    if ref is None:
        return bad("tessera-meter: TESSERA_DB must come from a Secret")
    made = ("Secret", ref["name"]) in objs or ("Secret", ref["name"]) in user_made
    if not made or not ref["name"].startswith("tessera-db"):
        bad("tessera-meter reads Secret %s, which the overlay does not create" % ref["name"])


def listen_port(c, flag):
    """The port of an ADDR:PORT option of container c, or None."""
    v = arg(c, flag)
    m = re.match(r"^.*:([0-9]+)$", v or "")
    return int(m.group(1)) if m else None


def check_console(pods, objs, labels):
    """The console reads every webhook replica's /denials through a headless
    Service: its --denials-from names a Service of the install with no cluster
    address (so the name resolves to each pod), selecting the webhook's pods,
    on the port where the webhook serves its --health-listen."""
    console = pods.get("tessera-console")
    if console is None:
        return bad("no console Deployment tessera-console")
    cs = [c for _, c in containers(console) if c.get("args", [""])[0] == "console"]
    url = arg(cs[0], "--denials-from=") if len(cs) == 1 else None
    m = re.match(r"^http://([a-z0-9-]+)(?:\.([a-z0-9-]+)(?:\.svc(?:\.[a-z0-9.-]+)?)?)?:([0-9]+)/denials$",
                 url or "")
    if not m:
        return bad("tessera-console: --denials-from %s is not http://SERVICE.NAMESPACE.svc:PORT/denials"
                   % url)
    name, ns, port = m.group(1), m.group(2) or NS, int(m.group(3))
    svc = objs.get(("Service", name))
    if svc is None or svc["metadata"].get("namespace") != ns:
        return bad("tessera-console: --denials-from names Service %s/%s, which the output lacks"
                   % (ns, name))
    if svc["spec"].get("clusterIP") != "None":
        bad("Service %s: not headless (clusterIP: None): its name would resolve to one address "
            "and the console would read one webhook replica's denials" % name)
    if selected(labels, svc["spec"].get("selector")) != ["tessera-webhook"]:
        bad("Service %s selects %s, not the webhook's pods alone" %
            (name, selected(labels, svc["spec"].get("selector"))))
    sp = [p for p in svc["spec"]["ports"] if p["port"] == port]
    wh = [c for _, c in containers(pods.get("tessera-webhook", {}))
          if c.get("args", [""])[0] == "serve"]
    health = listen_port(wh[0], "--health-listen=") if wh else None
    target = port_of(wh[0], sp[0].get("targetPort", port)) if sp and wh else None
    if not sp or target is None or target != health:
        bad("tessera-console: --denials-from port %d is not the webhook's --health-listen port %s "
            "through Service %s" % (port, health, name))


def peer_kind(peer):
    """What a NetworkPolicy peer admits: an address block (the API server), the
    namespaces without the tenant label, or something else (maybe a tenant)."""
    if set(peer) == {"ipBlock"}:
        return "ipBlock"
    ns = peer.get("namespaceSelector")
    if set(peer) == {"namespaceSelector"} and not ns.get("matchLabels") and \
            ns.get("matchExpressions") == [{"key": TENANT_LABEL, "operator": "DoesNotExist"}]:
        return "non-tenant"
    return None


def check_networkpolicy(pods, labels, objs):
    """When the output has NetworkPolicies: a default deny of ingress for every
    pod; the webhook's TLS port (serve --listen) reached from address blocks
    only (the API server); every other container port reached, and only from
    namespaces without the tenant label; no port from anywhere else."""
    pols = [o for (k, _), o in objs.items() if k == "NetworkPolicy"]
    if not pols:
        return
    ingress = [p for p in pols if "Ingress" in p["spec"].get("policyTypes", ["Ingress"])]
    if not any(p["spec"].get("podSelector") == {} and not p["spec"].get("ingress")
               for p in ingress):
        bad("NetworkPolicy: none denies every pod's ingress (podSelector {}, no ingress rule)")
    for name, pod in pods.items():
        mine = [p for p in ingress if not p["spec"]["podSelector"].get("matchExpressions") and all(
            labels[name].get(k) == v
            for k, v in p["spec"]["podSelector"].get("matchLabels", {}).items())]
        for _, c in containers(pod):
            api_port = listen_port(c, "--listen=") if c.get("args", [""])[0] == "serve" else None
            for cp in c.get("ports", []):
                peers = []
                for p in mine:
                    for rule in p["spec"].get("ingress", []):
                        ports = rule.get("ports")
                        if ports is None or any(
                                q.get("protocol", "TCP") == cp.get("protocol", "TCP") and
                                q.get("port") in (None, cp["containerPort"], cp.get("name"))
                                for q in ports):
                            peers += [(p["metadata"]["name"], f) for f in rule.get("from", [{}])]
                kinds = {peer_kind(f) for _, f in peers}
                where = "%s/%s port %s (%d)" % (name, c["name"], cp.get("name"), cp["containerPort"])
                for pol, f in peers:
                    if peer_kind(f) is None:
                        bad("%s: NetworkPolicy %s lets in %s, which may be a tenant's" %
                            (where, pol, f or "anyone"))
                want = "ipBlock" if cp["containerPort"] == api_port else "non-tenant"
                if want not in kinds:
                    bad("%s: no NetworkPolicy lets in %s" % (where, "the API server (an ipBlock)"
                        if want == "ipBlock" else "the namespaces that are not a tenant's"))
                for other in kinds - {want, None}:
                    bad("%s: NetworkPolicy lets in %s, only %s should reach it" %
                        (where, other, want))


def go_hours(text):
    """A Go duration of hours, minutes and seconds (cert-manager's), in hours."""
    parts = re.findall(r"([0-9]+(?:\.[0-9]+)?)(h|m|s)", text or "")
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * {"h": 1, "m": 1 / 60, "s": 1 / 3600}[u] for n, u in parts)


def issuer_chain(objs, cert, seen=()):
    """The problem with a Certificate's issuer, or None: its Issuer is in the
    output, and a CA Issuer signs with the Secret of a CA Certificate of the
    output, itself issued so (a self-signed Issuer ends the chain)."""
    ref = cert["spec"]["issuerRef"]
    name = cert["metadata"]["name"]
    if ref.get("kind", "Issuer") != "Issuer" or ref.get("group", "cert-manager.io") != "cert-manager.io":
        return "Certificate %s: issuerRef %s is not an Issuer of cert-manager.io" % (name, ref)
    issuer = objs.get(("Issuer", ref["name"]))
    if issuer is None:
        return "Certificate %s: its Issuer %s is not in the output" % (name, ref["name"])
    spec = issuer["spec"]
    if "selfSigned" in spec:
        return None
    if "ca" not in spec:
        return "Issuer %s: neither selfSigned nor ca" % ref["name"]
    ca = [c for (k, _), c in objs.items() if k == "Certificate"
          and c["spec"]["secretName"] == spec["ca"]["secretName"]]
    if len(ca) != 1 or not ca[0]["spec"].get("isCA"):
        return "Issuer %s: its Secret %s is made by no CA Certificate (isCA) of the output" % (
            ref["name"], spec["ca"]["secretName"])
    if ca[0]["metadata"]["name"] in seen:
        return "Certificate %s: its issuers go round in a circle" % name
    return issuer_chain(objs, ca[0], seen + (name,))


def check_certificates(objs, pods):
    """cert-manager's objects, when the output has them: each Certificate has a
    lifetime and renews before its end, its Issuer chain resolves in the output;
    the webhook's serving certificate is the one the webhook configuration's
    inject-ca-from names, writes the Secret the webhook mounts and names the
    Service's DNS name the API server calls."""
    certs = {n: o for (k, n), o in objs.items() if k == "Certificate"}
    for name, c in sorted(certs.items()):
        life = go_hours(c["spec"].get("duration"))
        renew = go_hours(c["spec"].get("renewBefore"))
        if life is None or renew is None or not 0 < renew < life:
            bad("Certificate %s: duration %s and renewBefore %s: both set, renewal before the end"
                % (name, c["spec"].get("duration"), c["spec"].get("renewBefore")))
        err = issuer_chain(objs, c)
        if err:
            bad(err)
    for (kind, vname), o in objs.items():
        if kind != "ValidatingWebhookConfiguration" or not certs:
            continue
        ref = o["metadata"].get("annotations", {}).get("cert-manager.io/inject-ca-from", "")
        cert = certs.get(ref.split("/", 1)[-1])
        if cert is None or cert["metadata"].get("namespace") + "/" + cert["metadata"]["name"] != ref:
            bad("ValidatingWebhookConfiguration %s: inject-ca-from %r names no Certificate "
                "of the output" % (vname, ref))
            continue
        wanted = {v["secret"]["secretName"] for v in pods.get("tessera-webhook", {}).get("volumes", [])
                  if "secret" in v and v["name"] == "tls"}
        if cert["spec"]["secretName"] not in wanted:
            bad("Certificate %s writes Secret %s, the webhook mounts %s" %
                (cert["metadata"]["name"], cert["spec"]["secretName"], sorted(wanted)))
        for wh in o["webhooks"]:
            s = wh["clientConfig"].get("service", {})
            dns = "%s.%s.svc" % (s.get("name"), s.get("namespace"))
            if dns not in cert["spec"].get("dnsNames", []):
                bad("Certificate %s: dnsNames %s lack %s, the name the API server calls" %
                    (cert["metadata"]["name"], cert["spec"].get("dnsNames"), dns))


def certificate_secrets(objs):
    """The Secrets the output's Certificates make (cert-manager writes them)."""
    return {("Secret", c["spec"]["secretName"]):
            {"metadata": {"name": c["spec"]["secretName"]}, "data": dict.fromkeys(CERT_KEYS)}
            for (k, _), c in objs.items() if k == "Certificate"}


def granted(objs):
    """(namespace, group, resource, verb) each ServiceAccount of NS gets."""
    out = {}
    for (kind, name), o in objs.items():
        if kind not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        cluster = kind == "ClusterRoleBinding"
        ns = "*" if cluster else o["metadata"].get("namespace")
        role = objs.get((o["roleRef"]["kind"], o["roleRef"]["name"]))
        if not role or (not cluster and (o["roleRef"]["kind"] != "Role" or
                                         role["metadata"].get("namespace") != ns)):
            bad("%s %s: binds no %s" % (kind, name, "ClusterRole" if cluster else
                                        "Role of its namespace"))
            continue
        for subj in o.get("subjects", []):
            if subj["kind"] != "ServiceAccount" or subj.get("namespace") != NS:
                bad("%s %s: binds %s %s" % (kind, name, subj["kind"], subj["name"]))
                continue
            if cluster and subj["name"] not in CLUSTER_WIDE:
                bad("%s %s: %s needs no cluster-wide access" % (kind, name, subj["name"]))
                continue
            for r in role.get("rules", []):
                if r.get("resourceNames") or "*" in r["verbs"] + r["resources"] + r["apiGroups"]:
                    bad("Role %s: wildcards or resourceNames" % role["metadata"]["name"])
                out.setdefault(subj["name"], set()).update(
                    (ns, g, res, v) for g in r["apiGroups"] for res in r["resources"]
                    for v in r["verbs"])
    return out


def check_rbac(objs, pods):
    have = granted(objs)
    bound = {(o["roleRef"]["kind"], o["roleRef"]["name"]) for (k, _), o in objs.items()
             if k in ("RoleBinding", "ClusterRoleBinding")}
    for (kind, name), o in objs.items():
        if kind in ("Role", "ClusterRole") and (kind, name) not in bound:
            bad("%s %s: bound by no %sBinding (the RBAC table in check_deploy.py lists "
                "what each component needs)" % (kind, name, kind))
    for sa, want in RBAC.items():
        if have.get(sa, set()) != want:
            bad("ServiceAccount %s is granted %s, the RBAC table says %s" %
                (sa, sorted(have.get(sa, set())), sorted(want)))
    for sa in set(have) - set(RBAC):
        bad("ServiceAccount %s is granted access but is not in the RBAC table" % sa)
    for name, pod in pods.items():
        sa = pod.get("serviceAccountName")
        if sa not in RBAC:
            bad("%s: ServiceAccount %s is not in the RBAC table" % (name, sa))
        elif not RBAC[sa] and pod.get("automountServiceAccountToken") is not False:
            bad("%s: no API access is needed, so automountServiceAccountToken: false" % name)
        elif RBAC[sa] and pod.get("automountServiceAccountToken") is not True:
            bad("%s: it calls the API, so automountServiceAccountToken: true" % name)


def check_unprivileged(key, sc):
    if sc.get("privileged"):
        bad("%s/%s: privileged" % key)
    if sc.get("allowPrivilegeEscalation") is not False:
        bad("%s/%s: allowPrivilegeEscalation must be false" % key)
    caps = sc.get("capabilities", {})
    if caps.get("drop") != ["ALL"] or caps.get("add"):
        bad("%s/%s: capabilities must drop ALL and add none" % key)


def check_security(pods):
    for name, pod in pods.items():
        psc = pod.get("securityContext", {})
        if pod.get("hostPID") and name != "tessera-agent":
            bad("%s: hostPID" % name)
        for phase, c in containers(pod):
            sc, key = c.get("securityContext", {}), (name, c["name"])
            if sc.get("readOnlyRootFilesystem") is not True:
                bad("%s/%s: readOnlyRootFilesystem must be true" % key)
            if key in PRIVILEGED:
                if sc.get("privileged") is not True or "capabilities" in sc:
                    bad("%s/%s: privileged, and no capability list that suggests less" % key)
            else:
                check_unprivileged(key, sc)
            nonroot = sc.get("runAsNonRoot", psc.get("runAsNonRoot"))
            if key not in ROOT and not (nonroot and sc.get("runAsUser", psc.get("runAsUser"))):
                bad("%s/%s: runAsNonRoot with a runAsUser" % key)
            res = c.get("resources", {})
            if "cpu" not in res.get("requests", {}) or "memory" not in res.get("limits", {}):
                bad("%s/%s: cpu request and memory limit" % key)
            if phase == "main" and key not in NO_PROBES and not (
                    c.get("readinessProbe") and c.get("livenessProbe")):
                bad("%s/%s: readiness and liveness probes" % key)


def check_webhook_extras(pods, objs, labels):
    pc = pods.get("tessera-webhook", {}).get("priorityClassName")
    if ("PriorityClass", pc) not in objs:
        bad("tessera-webhook: priorityClassName %s is not in the install" % pc)
    pdbs = [o for (k, _), o in objs.items() if k == "PodDisruptionBudget"]
    if not any("tessera-webhook" in selected(labels, p["spec"]["selector"]["matchLabels"])
               for p in pdbs):
        bad("no PodDisruptionBudget selects the webhook")


def verb_words(args):
    """The leading arguments that name the verb: `meter scrape`, `serve`."""
    words = []
    for a in args:
        if a.startswith("-"):
            break
        words.append(a)
    return words


def help_options(tessera, words, cache={}):
    """The options `tessera WORDS --help` lists (-x and --long), or None when
    the verb does not exist (exit status other than 0)."""
    key = (tessera,) + tuple(words)
    if key not in cache:
        r = subprocess.run([tessera] + words + ["--help"], capture_output=True, text=True)
        cache[key] = None if r.returncode != 0 else set(
            re.findall(r"^ {2,}(?:(-\w), )?(--[a-z0-9][a-z0-9-]*)", r.stdout, re.M))
        if cache[key] is not None:
            cache[key] = {o for pair in cache[key] for o in pair if o}
    return cache[key]


def check_flags(pods, tessera):
    for name, pod in pods.items():
        for _, c in containers(pod):
            if c.get("command"):
                bad("%s/%s: a command overrides the image's entrypoint, tessera" %
                    (name, c["name"]))
            args = c.get("args", [])
            words = verb_words(args)
            opts = help_options(tessera, words)
            if opts is None and tuple(words) in PENDING:
                print("check_deploy: note: %s/%s: `tessera %s` does not exist yet: %s" %
                      (name, c["name"], " ".join(words), PENDING[tuple(words)]))
                continue
            if opts is None:
                bad("%s/%s: `tessera %s` is no command of the binary" %
                    (name, c["name"], " ".join(words)))
                continue
            for a in args[len(words):]:
                flag = a.split("=", 1)[0]
                if a.startswith("-") and flag not in opts:
                    bad("%s/%s: `tessera %s` has no option %s" %
                        (name, c["name"], " ".join(words), flag))


def check_argv(where, tessera, argv):
    """One command line, tessera's arguments only: its verb and its options."""
    words = verb_words(argv)
    opts = help_options(tessera, words)
    if opts is None:
        bad("%s: `tessera %s` is no command of the binary" % (where, " ".join(words)))
        return
    for a in argv[len(words):]:
        if a.startswith("-") and a != "-" and a.split("=", 1)[0] not in opts:
            bad("%s: `tessera %s` has no option %s" % (where, " ".join(words),
                                                          a.split("=", 1)[0]))


def doc_commands(path):
    """(line number, argv after `tessera`) of each tessera command in the ```sh
    blocks of a Markdown file; continued lines joined, pipes and redirections cut."""
    out, block, start, text = [], False, 0, ""
    for n, line in enumerate(open(path), 1):
        if line.startswith("```"):
            block, text = line.strip() == "```sh", ""
            continue
        if not block:
            continue
        start = start if text else n
        text += line.rstrip("\n").rstrip("\\") + " "
        if line.rstrip("\n").endswith("\\"):
            continue
        segs = [[]]
        for w in shlex.split(text, comments=True):
            if w in ("|", ";", "&&", "||"):
                segs.append([])
            else:
                segs[-1].append(w)
        text = ""
        for argv in segs:
            if argv and argv[0] == "tessera":
                cut = [i for i, w in enumerate(argv) if w[0] in "<>" or w[:2] == "2>"]
                out.append((start, argv[1:cut[0] if cut else len(argv)]))
    return out


def main_commands(tessera, files):
    count = 0
    for f in files:
        for n, argv in doc_commands(f):
            count += 1
            check_argv("%s:%d" % (f, n), tessera, argv)
    for p in problems:
        print("check_deploy: %s" % p)
    print("check_deploy: %d commands, %d problems" % (count, len(problems)))
    return 1 if problems or not count else 0


def main_batch(listfile):
    for line in open(listfile):
        *args, out = line.rstrip("\n").split("\t")
        del problems[:]  # each run's own
        with open(out, "w") as o, open(out + ".err", "w") as e, \
                contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
            try:
                rc = main([sys.argv[0]] + args)
            except Exception:  # as a run alone: a traceback and exit 1
                traceback.print_exc()
                rc = 1
        open(out + ".rc", "w").write("%d\n" % rc)
    return 0


def main(args=None):
    args = sys.argv if args is None else args
    if len(args) >= 4 and args[1] == "--commands":
        return main_commands(args[2], args[3:])
    if len(args) == 3 and args[1] == "--batch":
        return main_batch(args[2])
    user_made, listed = {}, {}
    for a in args:
        if a == "--user-made":
            user_made = dict(USER_MADE)
        elif a.startswith("--user-made="):
            names = a.split("=", 1)[1].split(",")
            unknown = [n for n in names if ("Secret", n) not in USER_MADE]
            if unknown:
                print("check_deploy: --user-made: %s not in USER_MADE" % unknown, file=sys.stderr)
                return 2
            user_made = listed = {("Secret", n): USER_MADE[("Secret", n)] for n in names}
    argv = [a for a in args if not a.startswith("--user-made")]
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    docs = [d for d in yaml.safe_load_all(open(argv[1])) if d]
    objs = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    for d in docs:
        if d["kind"] in ("Role", "RoleBinding") and d["metadata"].get("namespace") == EXPORTER_NS:
            continue  # the meter's access to the exporters' EndpointSlices
        if d["kind"] not in ("Namespace", "PriorityClass", "ValidatingWebhookConfiguration",
                             "ClusterRole", "ClusterRoleBinding") \
                and d["metadata"].get("namespace") != NS:
            bad("%s %s: not in namespace %s" % (d["kind"], d["metadata"]["name"], NS))
    pods = {n: o["spec"]["template"]["spec"] for (k, n), o in objs.items() if k in WORKLOADS}
    labels = {n: o["spec"]["template"]["metadata"].get("labels", {})
              for (k, n), o in objs.items() if k in WORKLOADS}
    check_images(pods, argv[2])
    check_refs(pods, {**certificate_secrets(objs), **objs}, user_made, listed)
    check_ports(pods, labels, objs)
    check_config_paths(pods, objs)
    check_webhook_service(objs)
    check_shim(pods)
    check_store(pods, objs, user_made)
    check_console(pods, objs, labels)
    check_networkpolicy(pods, labels, objs)
    check_certificates(objs, pods)
    check_rbac(objs, pods)
    check_security(pods)
    check_webhook_extras(pods, objs, labels)
    if len(argv) == 4:
        check_flags(pods, argv[3])
    for p in problems:
        print("check_deploy: %s: %s" % (argv[1], p))
    print("check_deploy: %d objects, %d problems" % (len(docs), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
