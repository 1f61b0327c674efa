#!/usr/bin/python3
"""validate_k8s.py - check a tree written by `tessera render` against the real schemas.

Run with Debian's python3 (python3-jsonschema, python3-yaml):

    /usr/bin/python3 tests/tools/validate_k8s.py DIR...
    /usr/bin/python3 tests/tools/validate_k8s.py --examples tests/fixtures/schemas/examples
    /usr/bin/python3 tests/tools/validate_k8s.py --self-test

DIR mode parses every YAML document of every *.yaml file under each DIR (the
schemas load once: one summary line a DIR, exit 1 when any has an error). A document
with apiVersion and kind is a Kubernetes object and is validated strictly
(unknown fields fail) against the schema of its kind:
  - core Kubernetes 1.35 kinds: the standalone-strict schemas (k8s-1.35/);
  - Kueue v1beta2 ResourceFlavor, Cohort, ClusterQueue, LocalQueue (kueue/)
    and KubeVirt VirtualMachine (kubevirt/): JSON schemas generated from the
    CRDs' OpenAPI. Those are not strict where the CRD leaves it open, so this
    tool makes them strict when it loads them: every object schema with
    `properties` and no `additionalProperties` gets `additionalProperties:
    false` (unless it is x-kubernetes-preserve-unknown-fields), apiVersion and
    kind must be the schema's own, and `metadata` (just `type: object` there)
    is replaced by the strict ObjectMeta of the Kubernetes schemas;
  - every schema: a Quantity must match Kubernetes' quantity syntax.
An object of any other kind is an error, so nothing slips through; the one
exception is cluster/kubevirt-permitted-host-devices.yaml, a snippet of the
KubeVirt CR (no schema covers it), whose shape is checked by hand here.
Documents without apiVersion/kind (mig-parted.yaml, the Kueue configuration
fragment) are checked by their own rules. Then the documents inside objects:
  - device-plugin ConfigMap entries -> device-plugin-config.schema.json,
  - mig-parted configs (ConfigMap entries and nodes/*/mig-parted.yaml)
    -> mig-parted-config.schema.json,
  - the NVIDIA DRA driver's opaque parameters in DeviceClasses and
    ResourceClaimTemplates -> nvidia-dra-config.schema.json,
and what the API server checks beyond OpenAPI (names, label keys and values,
resource names), and the tree's references: every kustomization resource
exists, every object file is reachable from DIR/kustomization.yaml, claims
name rendered DeviceClasses, queues name rendered flavors, cohorts and
cluster queues, node ConfigMaps carry exactly the node folder's files.

--examples DIR validates real upstream files (tests/fixtures/schemas/examples)
with the same schemas, to show the strict and hand-written schemas accept
real configurations; --self-test shows they reject broken ones.

Every failure prints `FILE: doc N: PATH: message`; exit 1 on any, 2 on bad usage.
"""
import argparse
import copy
import json
import os
import re
import sys

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.join(HERE, "..", "fixtures", "schemas")

K8S = {  # (apiVersion, kind) -> schema file, strict as shipped
    ("v1", "Namespace"): "k8s-1.35/namespace-v1.json",
    ("v1", "ResourceQuota"): "k8s-1.35/resourcequota-v1.json",
    ("v1", "LimitRange"): "k8s-1.35/limitrange-v1.json",
    ("v1", "ConfigMap"): "k8s-1.35/configmap-v1.json",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "k8s-1.35/rolebinding-rbac-v1.json",
    ("networking.k8s.io/v1", "NetworkPolicy"): "k8s-1.35/networkpolicy-networking-v1.json",
    ("resource.k8s.io/v1", "DeviceClass"): "k8s-1.35/deviceclass-resource-v1.json",
    ("resource.k8s.io/v1", "ResourceClaimTemplate"):
        "k8s-1.35/resourceclaimtemplate-resource-v1.json",
}
CRDS = {  # (apiVersion, kind) -> OpenAPI-derived schema, made strict on load
    ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"): "kueue/kueue.x-k8s.io_resourceflavor_v1beta2.json",
    ("kueue.x-k8s.io/v1beta2", "Cohort"): "kueue/kueue.x-k8s.io_cohort_v1beta2.json",
    ("kueue.x-k8s.io/v1beta2", "ClusterQueue"): "kueue/kueue.x-k8s.io_clusterqueue_v1beta2.json",
    ("kueue.x-k8s.io/v1beta2", "LocalQueue"): "kueue/kueue.x-k8s.io_localqueue_v1beta2.json",
    ("kubevirt.io/v1", "VirtualMachine"): "kubevirt/kubevirt.io_virtualmachine_v1.json",
}
EMBEDDED = {
    "device-plugin": "device-plugin-config.schema.json",
    "mig-parted": "mig-parted-config.schema.json",
    "nvidia-dra": "nvidia-dra-config.schema.json",
}
KUBEVIRT_SNIPPET = "cluster/kubevirt-permitted-host-devices.yaml"
DRA_DRIVER = "gpu.nvidia.com"
DRIVER_CLASSES = {"gpu.nvidia.com", "mig.nvidia.com"}
# Namespaces the tree may use without creating them (installed by operators).
EXTERNAL_NAMESPACES = {"gpu-operator", "kubevirt"}

# Kubernetes' quantity syntax (k8s.io/apimachinery resource.Quantity), as the
# Kueue CRD spells it.
QUANTITY = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
            r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
CONFIGMAP_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")


class Report:
    """Failures as `file: doc N: path: message` lines."""

    def __init__(self):
        self.errors = []

    def add(self, where, path, message):
        self.errors.append("%s: %s: %s" % (where, path or "(document)", message))


def json_path(parts):
    """A jsonschema error path as a.b[0]["odd.key"]."""
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += "[%d]" % p
        elif re.match(r"^[A-Za-z_][A-Za-z0-9_-]*$", p):
            out += ("." if out else "") + p
        else:
            out += '["%s"]' % p
    return out


def join(prefix, parts):
    rest = json_path(parts)
    if not prefix:
        return rest
    if not rest:
        return prefix
    return prefix + ("" if rest.startswith("[") else ".") + rest


# ---- schemas ----

def load_json(name):
    with open(os.path.join(SCHEMAS, name)) as f:
        return json.load(f)


def walk(node, fn):
    if isinstance(node, dict):
        fn(node)
        for v in node.values():
            walk(v, fn)
    elif isinstance(node, list):
        for v in node:
            walk(v, fn)


def add_quantity_pattern(schema):
    """Quantities in the Kubernetes schemas are oneOf string/number: add the syntax."""
    def fix(node):
        if str(node.get("description", "")).startswith("Quantity is a fixed-point"):
            node["pattern"] = QUANTITY
    walk(schema, fix)
    return schema


def make_strict(schema, object_meta, api_version, kind):
    """OpenAPI-derived CRD schema -> strict: see the module comment."""
    def fix(node):
        if ("properties" in node and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")):
            node["additionalProperties"] = False
    walk(schema, fix)
    props = schema["properties"]
    props["metadata"] = copy.deepcopy(object_meta)
    props["apiVersion"] = {"type": "string", "enum": [api_version]}
    props["kind"] = {"type": "string", "enum": [kind]}
    schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata"})
    return schema


class Schemas:
    def __init__(self):
        self.kinds = {}
        meta = load_json(K8S[("v1", "Namespace")])["properties"]["metadata"]
        for key, name in K8S.items():
            self.kinds[key] = self._validator(add_quantity_pattern(load_json(name)))
        for key, name in CRDS.items():
            schema = make_strict(load_json(name), meta, key[0], key[1])
            self.kinds[key] = self._validator(add_quantity_pattern(schema))
        self.embedded = {k: self._validator(load_json(v)) for k, v in EMBEDDED.items()}

    @staticmethod
    def _validator(schema):
        jsonschema.Draft7Validator.check_schema(schema)
        return jsonschema.Draft7Validator(schema)


def check(validator, doc, report, where, prefix=""):
    for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))):
        report.add(where, join(prefix, list(e.absolute_path)), e.message)


# ---- documents inside objects ----

def parse_embedded(text, report, where, path):
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        report.add(where, path, "embedded YAML does not parse: %s" % str(e).replace("\n", " "))
        return None
    if len(docs) != 1 or not isinstance(docs[0], dict):
        report.add(where, path, "embedded document must be one YAML mapping")
        return None
    return docs[0]


def check_configmap(obj, schemas, report, where, counts):
    data = obj.get("data") or {}
    name = (obj.get("metadata") or {}).get("name", "")
    for key in sorted(data):
        path = 'data["%s"]' % key
        if not CONFIGMAP_KEY.match(key):
            report.add(where, path, "not a valid ConfigMap key")
        if name == "tessera-device-plugin-config":
            doc = parse_embedded(data[key], report, where, path)
            if doc is not None:
                check(schemas.embedded["device-plugin"], doc, report, where, path)
                counts["device-plugin"] += 1
        elif key.endswith(".yaml"):
            doc = parse_embedded(data[key], report, where, path)
            if doc is None:
                continue
            if "mig-configs" in doc:
                check(schemas.embedded["mig-parted"], doc, report, where, path)
                counts["mig-parted"] += 1
            else:
                report.add(where, path, "embedded YAML of unknown kind (neither a device-plugin "
                           "nor a mig-parted config)")


def opaque_configs(obj):
    """(path, parameters) of every NVIDIA opaque config in a DeviceClass or claim template."""
    spec = obj.get("spec") or {}
    if obj.get("kind") == "ResourceClaimTemplate":
        configs, base = ((spec.get("spec") or {}).get("devices") or {}).get("config"), "spec.spec.devices.config"
    else:
        configs, base = spec.get("config"), "spec.config"
    for i, c in enumerate(configs or []):
        opaque = (c or {}).get("opaque") or {}
        if opaque.get("driver") == DRA_DRIVER:
            yield "%s[%d].opaque.parameters" % (base, i), opaque.get("parameters")


def check_opaque(obj, schemas, report, where, counts):
    for path, params in opaque_configs(obj):
        check(schemas.embedded["nvidia-dra"], params, report, where, path)
        counts["nvidia-dra"] += 1


# ---- what the API server checks beyond OpenAPI ----

def check_label_map(labels, report, where, path):
    for k, v in (labels or {}).items():
        prefix, _, name = k.rpartition("/")
        if (prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix))) or \
                len(name) > 63 or not QUALIFIED_NAME.match(name):
            report.add(where, '%s["%s"]' % (path, k), "not a valid label key")
        if not isinstance(v, str) or len(v) > 63 or not LABEL_VALUE.match(v):
            report.add(where, '%s["%s"]' % (path, k), "not a valid label value: %r" % (v,))


def check_resource_names(mapping, report, where, path):
    for k in (mapping or {}):
        prefix, _, name = k.rpartition("/")
        if (prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix))) or \
                len(name) > 63 or not QUALIFIED_NAME.match(name):
            report.add(where, '%s["%s"]' % (path, k), "not a valid resource name")


def check_names(obj, report, where):
    meta = obj.get("metadata") or {}
    name, ns = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not name:
        report.add(where, "metadata.name", "missing")
    elif obj.get("kind") in ("Namespace",) or (obj.get("kind") == "VirtualMachine"):
        if len(name) > 63 or not DNS_LABEL.match(name):
            report.add(where, "metadata.name", "not a DNS label: %r" % name)
    elif len(name) > 253 or not DNS_SUBDOMAIN.match(name):
        report.add(where, "metadata.name", "not a DNS subdomain: %r" % name)
    if ns is not None and (len(ns) > 63 or not DNS_LABEL.match(ns)):
        report.add(where, "metadata.namespace", "not a DNS label: %r" % ns)
    check_label_map(meta.get("labels"), report, where, "metadata.labels")
    kind, spec = obj.get("kind"), obj.get("spec") or {}
    if kind == "ResourceQuota":
        check_resource_names(spec.get("hard"), report, where, "spec.hard")
    if kind == "LimitRange":
        for i, lim in enumerate(spec.get("limits") or []):
            for field in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
                check_resource_names(lim.get(field), report, where, "spec.limits[%d].%s" % (i, field))


# ---- the KubeVirt CR snippet (no schema covers it) ----

def check_kubevirt_snippet(obj, report, where):
    """A KubeVirt CR fragment holding only spec.configuration.permittedHostDevices."""
    def bad(path, msg):
        report.add(where, path, msg)
    if set(obj) - {"apiVersion", "kind", "metadata", "spec"}:
        bad("", "unknown fields %s" % sorted(set(obj) - {"apiVersion", "kind", "metadata", "spec"}))
    if obj.get("apiVersion") != "kubevirt.io/v1" or obj.get("kind") != "KubeVirt":
        bad("kind", "must be kubevirt.io/v1 KubeVirt")
    meta = obj.get("metadata") or {}
    if set(meta) - {"name", "namespace", "labels"}:
        bad("metadata", "unknown fields %s" % sorted(set(meta) - {"name", "namespace", "labels"}))
    check_label_map(meta.get("labels"), report, where, "metadata.labels")
    spec = obj.get("spec")
    if not isinstance(spec, dict) or set(spec) != {"configuration"}:
        bad("spec", "must hold only configuration")
        return
    conf = spec["configuration"]
    if not isinstance(conf, dict) or set(conf) != {"permittedHostDevices"}:
        bad("spec.configuration", "must hold only permittedHostDevices")
        return
    phd = conf["permittedHostDevices"]
    shapes = {"pciHostDevices": {"pciVendorSelector", "resourceName", "externalResourceProvider"},
              "mediatedDevices": {"mdevNameSelector", "resourceName", "externalResourceProvider"}}
    if not isinstance(phd, dict) or not phd or set(phd) - set(shapes) - {"usb"}:
        bad("spec.configuration.permittedHostDevices",
            "keys must be among pciHostDevices, mediatedDevices, usb")
        return
    for key, allowed in shapes.items():
        items = phd.get(key, [])
        base = "spec.configuration.permittedHostDevices.%s" % key
        if not isinstance(items, list):
            bad(base, "must be a list")
            continue
        for i, item in enumerate(items):
            p = "%s[%d]" % (base, i)
            if not isinstance(item, dict):
                bad(p, "must be a mapping")
                continue
            required = allowed - {"externalResourceProvider"}
            if set(item) - allowed or required - set(item):
                bad(p, "needs exactly %s (and optionally externalResourceProvider)" % sorted(required))
                continue
            sel = item.get("pciVendorSelector")
            if sel is not None and not re.match(r"^[0-9A-Fa-f]{4}:[0-9A-Fa-f]{4}$", str(sel)):
                bad(p + ".pciVendorSelector", "must be VENDOR:DEVICE in hex, e.g. 10DE:2330")
            if not isinstance(item.get("mdevNameSelector", ""), str) or item.get("mdevNameSelector") == "":
                bad(p + ".mdevNameSelector", "must be a non-empty string")
            check_resource_names({item.get("resourceName", ""): 1}, report, where, p + ".resourceName")
            if not isinstance(item.get("externalResourceProvider", False), bool):
                bad(p + ".externalResourceProvider", "must be a boolean")


# ---- the tree ----

def load_docs(path, rel, report):
    try:
        with open(path) as f:
            return list(yaml.safe_load_all(f))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        report.add(rel, "", "does not parse: %s" % str(e).replace("\n", " "))
        return []


def is_object(doc):
    return isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc


def check_kustomizations(root, files, report):
    """Every listed resource exists; every object file is reachable from the top."""
    reached = set()

    def visit(d, seen):
        rel = os.path.join(d, "kustomization.yaml") if d else "kustomization.yaml"
        if rel in seen:
            return
        seen.add(rel)
        docs = files.get(rel)
        if docs is None:
            report.add(rel, "", "missing")
            return
        k = docs[0] if docs else None
        allowed = {"apiVersion", "kind", "resources"}
        if not isinstance(k, dict) or k.get("kind") != "Kustomization" or \
                k.get("apiVersion") != "kustomize.config.k8s.io/v1beta1" or set(k) - allowed:
            report.add(rel + ": doc 0", "", "must be a kustomize.config.k8s.io/v1beta1 Kustomization "
                       "with apiVersion, kind, resources only")
            return
        for i, r in enumerate(k.get("resources") or []):
            target = os.path.normpath(os.path.join(d, r)) if d else os.path.normpath(r)
            full = os.path.join(root, target)
            if os.path.isdir(full):
                visit(target, seen)
            elif os.path.isfile(full):
                reached.add(target)
                if not any(is_object(x) for x in files.get(target, [])):
                    report.add(rel + ": doc 0", "resources[%d]" % i,
                               "%s holds no Kubernetes object" % r)
            else:
                report.add(rel + ": doc 0", "resources[%d]" % i, "%s does not exist" % r)
    visit("", set())
    for rel, docs in sorted(files.items()):
        if rel.endswith("kustomization.yaml") or rel == KUBEVIRT_SNIPPET:
            continue
        if any(is_object(d) for d in docs) and rel not in reached:
            report.add(rel, "", "holds Kubernetes objects but no kustomization lists it")


def check_mig_parted_file(doc, schemas, report, where, counts):
    check(schemas.embedded["mig-parted"], doc, report, where)
    counts["mig-parted"] += 1


def check_kueue_fragment(doc, classes, report, where):
    maps = ((doc or {}).get("resources") or {}).get("deviceClassMappings")
    if not isinstance(doc, dict) or set(doc) != {"resources"} or set(doc["resources"]) != {"deviceClassMappings"} \
            or not isinstance(maps, list):
        report.add(where, "", "must be resources.deviceClassMappings (a list) only")
        return
    for i, m in enumerate(maps):
        p = "resources.deviceClassMappings[%d]" % i
        if not isinstance(m, dict) or set(m) != {"name", "deviceClassNames"}:
            report.add(where, p, "needs exactly name and deviceClassNames")
            continue
        check_resource_names({m["name"]: 1}, report, where, p + ".name")
        for j, c in enumerate(m["deviceClassNames"] or []):
            if c not in classes:
                report.add(where, "%s.deviceClassNames[%d]" % (p, j), "no DeviceClass %r in the tree" % c)


def check_refs(objects, root, report):
    """References between the rendered objects."""
    by_kind = {}
    for where, o in objects:
        by_kind.setdefault(o["kind"], set()).add((o.get("metadata") or {}).get("name"))
    namespaces = by_kind.get("Namespace", set()) | EXTERNAL_NAMESPACES
    classes = by_kind.get("DeviceClass", set()) | DRIVER_CLASSES
    for where, o in objects:
        meta, spec = o.get("metadata") or {}, o.get("spec") or {}
        if meta.get("namespace") and meta["namespace"] not in namespaces:
            report.add(where, "metadata.namespace", "no Namespace %r in the tree" % meta["namespace"])
        if o["kind"] == "ResourceClaimTemplate":
            for i, r in enumerate(((spec.get("spec") or {}).get("devices") or {}).get("requests") or []):
                c = (r.get("exactly") or {}).get("deviceClassName")
                if c not in classes:
                    report.add(where, "spec.spec.devices.requests[%d].exactly.deviceClassName" % i,
                               "no DeviceClass %r in the tree" % c)
        if o["kind"] == "ClusterQueue":
            if spec.get("cohortName") not in by_kind.get("Cohort", set()):
                report.add(where, "spec.cohortName", "no Cohort %r in the tree" % spec.get("cohortName"))
            for i, g in enumerate(spec.get("resourceGroups") or []):
                for j, f in enumerate(g.get("flavors") or []):
                    if f.get("name") not in by_kind.get("ResourceFlavor", set()):
                        report.add(where, "spec.resourceGroups[%d].flavors[%d].name" % (i, j),
                                   "no ResourceFlavor %r in the tree" % f.get("name"))
                    names = [r.get("name") for r in f.get("resources") or []]
                    if names != list(g.get("coveredResources") or []):
                        report.add(where, "spec.resourceGroups[%d].flavors[%d].resources" % (i, j),
                                   "must list the group's coveredResources, in order")
        if o["kind"] == "Cohort" and spec.get("parentName") is not None and \
                spec["parentName"] not in by_kind.get("Cohort", set()):
            report.add(where, "spec.parentName", "no Cohort %r in the tree" % spec["parentName"])
        if o["kind"] == "LocalQueue" and spec.get("clusterQueue") not in by_kind.get("ClusterQueue", set()):
            report.add(where, "spec.clusterQueue", "no ClusterQueue %r in the tree" % spec.get("clusterQueue"))
        if o["kind"] == "ConfigMap" and meta.get("name", "").startswith("tessera-node-"):
            node = meta["name"][len("tessera-node-"):]
            folder = os.path.join(root, "nodes", node)
            want = sorted(f for f in os.listdir(folder) if f not in ("node-config.yaml", "kustomization.yaml")) \
                if os.path.isdir(folder) else None
            data = o.get("data") or {}
            if want is None or sorted(data) != want:
                report.add(where, "data", "keys %s differ from the files of nodes/%s (%s)"
                           % (sorted(data), node, want))
                continue
            for key in want:
                with open(os.path.join(folder, key)) as f:
                    if f.read() != data[key]:
                        report.add(where, 'data["%s"]' % key, "differs from nodes/%s/%s" % (node, key))
    check_node_labels(objects, root, report)
    return classes


def check_node_labels(objects, root, report):
    """nodes/<n>/labels.sh selects exactly the configs rendered for node n; a node
    with a MIG geometry is the agent's to partition: the label that takes the GPU
    operator's mig-manager off it, exactly there."""
    mig_off = "nvidia.com/gpu.deploy.mig-manager"
    configs = {"nvidia.com/device-plugin.config": set(), mig_off: set()}
    for where, o in objects:
        name, data = (o.get("metadata") or {}).get("name"), o.get("data") or {}
        if o["kind"] == "ConfigMap" and name == "tessera-device-plugin-config":
            configs["nvidia.com/device-plugin.config"] |= set(data) - {"default"}
        if o["kind"] == "ConfigMap" and name == "tessera-mig-parted-config" and "config.yaml" in data:
            try:
                configs[mig_off] |= set((yaml.safe_load(data["config.yaml"]) or {})
                                                        .get("mig-configs") or {})
            except yaml.YAMLError:
                pass  # reported with the ConfigMap
    nodes = os.path.join(root, "nodes")
    for node in sorted(os.listdir(nodes)) if os.path.isdir(nodes) else []:
        rel = "nodes/%s/labels.sh" % node
        try:
            with open(os.path.join(nodes, node, "labels.sh")) as f:
                text = f.read()
        except OSError:
            report.add(rel, "", "missing")
            continue
        for label, names in configs.items():
            want = "tessera-" + node
            value = "false" if label == mig_off else want
            has = "%s=%s" % (label, value) in text
            if has != (want in names):
                report.add(rel, label, "%s, but the rendered configs %s %s" % (
                    "set" if has else "not set", "lack" if has else "have", want))


def validate_tree(root, schemas, report):
    counts = {"objects": 0, "device-plugin": 0, "mig-parted": 0, "nvidia-dra": 0}
    files = {}
    for d, dirs, names in os.walk(root):
        dirs.sort()
        for n in sorted(names):
            if n.endswith(".yaml"):
                full = os.path.join(d, n)
                rel = os.path.relpath(full, root)
                files[rel] = load_docs(full, rel, report)
    if not files:
        report.add(root, "", "no YAML files")
    objects, fragments, others = [], [], []
    for rel, docs in sorted(files.items()):
        for i, doc in enumerate(docs):
            where = "%s: doc %d" % (rel, i)
            if doc is None:
                report.add(where, "", "empty document")
                continue
            if rel.endswith("kustomization.yaml"):
                continue
            if rel == KUBEVIRT_SNIPPET:
                check_kubevirt_snippet(doc, report, where)
                continue
            if not is_object(doc):
                if isinstance(doc, dict) and "mig-configs" in doc:
                    check_mig_parted_file(doc, schemas, report, where, counts)
                elif rel.endswith("kueue-configuration-fragment.yaml"):
                    fragments.append((where, doc))
                else:
                    others.append(where)
                continue
            key = (doc["apiVersion"], doc["kind"])
            validator = schemas.kinds.get(key)
            if validator is None:
                report.add(where, "kind", "no schema for %s %s (add one, or stop rendering it)" % key)
                continue
            counts["objects"] += 1
            check(validator, doc, report, where)
            check_names(doc, report, where)
            objects.append((where, doc))
            if doc["kind"] == "ConfigMap":
                check_configmap(doc, schemas, report, where, counts)
            if doc["kind"] in ("DeviceClass", "ResourceClaimTemplate"):
                check_opaque(doc, schemas, report, where, counts)
    for where in others:
        report.add(where, "", "neither a Kubernetes object nor a known config document")
    check_kustomizations(root, files, report)
    classes = check_refs(objects, root, report)
    for where, doc in fragments:
        check_kueue_fragment(doc, classes, report, where)
    return counts


# ---- real upstream examples ----

def validate_examples(folder, schemas, report):
    """Real files: K8s objects of known kinds, device-plugin and mig-parted
    configs (bare or in ConfigMaps), NVIDIA opaque configs in claims."""
    counts = {"objects": 0, "device-plugin": 0, "mig-parted": 0, "nvidia-dra": 0}
    for n in sorted(os.listdir(folder)):
        if not n.endswith(".yaml"):
            continue
        for i, doc in enumerate(load_docs(os.path.join(folder, n), n, report)):
            where = "%s: doc %d" % (n, i)
            if not isinstance(doc, dict):
                continue
            if "mig-configs" in doc:
                check_mig_parted_file(doc, schemas, report, where, counts)
                continue
            if not is_object(doc):
                if doc.get("version") == "v1" and set(doc) & {"flags", "sharing"}:
                    check(schemas.embedded["device-plugin"], doc, report, where)
                    counts["device-plugin"] += 1
                continue
            key = (doc["apiVersion"], doc["kind"])
            if key in schemas.kinds:
                counts["objects"] += 1
                check(schemas.kinds[key], doc, report, where)
            if doc["kind"] == "ConfigMap":
                for k, v in sorted((doc.get("data") or {}).items()):
                    sub = parse_embedded(v, report, where, 'data["%s"]' % k)
                    if sub is not None and "mig-configs" in sub:
                        check(schemas.embedded["mig-parted"], sub, report, where, 'data["%s"]' % k)
                        counts["mig-parted"] += 1
            if doc["kind"] in ("DeviceClass", "ResourceClaimTemplate", "ResourceClaim"):
                spec = doc.get("spec") or {}
                devices = (spec.get("spec") or spec).get("devices") or {}
                for j, c in enumerate(devices.get("config") or []):
                    opaque = (c or {}).get("opaque") or {}
                    params = opaque.get("parameters") or {}
                    if opaque.get("driver") == DRA_DRIVER and params.get("kind") in ("GpuConfig", "MigDeviceConfig"):
                        check(schemas.embedded["nvidia-dra"], params, report, where,
                              "devices.config[%d].opaque.parameters" % j)
                        counts["nvidia-dra"] += 1
    for what in ("objects", "device-plugin", "mig-parted", "nvidia-dra"):
        if counts[what] == 0:
            report.add(folder, "", "no %s example found" % what)
    return counts


# ---- self-test: the schemas reject what they should ----

def self_test(schemas):
    """Broken documents each schema must reject; returns failure lines."""
    cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "q"},
          "spec": {"resourceGroups": []}}
    vm = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "v"},
          "spec": {"template": {"spec": {"domain": {"devices": {"gpus": [{"name": "g", "deviceName": "x"}]}}}}}}
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "n"},
             "spec": {"hard": {"requests.nvidia.com/gpu": "2"}}}
    dp = {"version": "v1", "flags": {"migStrategy": "mixed"},
          "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]}}}
    mp = {"version": "v1", "mig-configs": {"c": [{"devices": [0], "mig-enabled": True,
                                                  "mig-devices": {"1g.10gb": 7}}]}}
    dra = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
           "sharing": {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50,
                                                        "defaultPinnedDeviceMemoryLimit": "10Gi"}}}
    good = [(schemas.kinds[("kueue.x-k8s.io/v1beta2", "ClusterQueue")], cq),
            (schemas.kinds[("kubevirt.io/v1", "VirtualMachine")], vm),
            (schemas.kinds[("v1", "ResourceQuota")], quota),
            (schemas.embedded["device-plugin"], dp), (schemas.embedded["mig-parted"], mp),
            (schemas.embedded["nvidia-dra"], dra)]

    def mutate(doc, path, value):
        d = copy.deepcopy(doc)
        node = d
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value
        return d

    bad = [  # (validator index, path, value, why)
        (0, ["bogus"], 1, "unknown top-level field of a CRD (made strict here)"),
        (0, ["metadata", "nmae"], "x", "unknown metadata field of a CRD (strict ObjectMeta)"),
        (0, ["kind"], "LocalQueue", "kind that is not the schema's"),
        (0, ["spec", "resourceGroups"], [{"coveredResources": ["a"], "flavors": [
            {"name": "f", "resources": [{"name": "a", "nominalQuota": "two"}]}]}], "bad quantity"),
        (1, ["spec", "template", "spec", "domain", "devices", "gpus", 0, "bogus"], 1, "unknown VM field"),
        (2, ["spec", "hard", "requests.nvidia.com/gpu"], "2 GPUs", "bad quantity in a quota"),
        (2, ["spec", "bogus"], 1, "unknown quota field"),
        (3, ["sharing", "mps"], {"resources": [{"name": "nvidia.com/gpu", "replicas": 2}]},
         "time-slicing and MPS together"),
        (3, ["flags", "migStrategy"], "most", "unknown migStrategy"),
        (3, ["sharing", "timeSlicing", "resources", 0, "replicas"], 0, "zero replicas"),
        (3, ["sharing", "timeSlicing", "renameByDefault"], "yes", "string for a boolean"),
        (4, ["version"], "v2", "unknown mig-parted version"),
        (4, ["mig-configs", "c", 0, "mig-devices", "1g.10gb"], -1, "negative count"),
        (4, ["mig-configs", "c", 0, "mig-devices", "big"], 1, "not a profile name"),
        (4, ["mig-configs", "c", 0, "mig-enable"], True, "misspelt key"),
        (5, ["sharing", "strategy"], "Streams", "unknown sharing strategy"),
        (5, ["sharing", "mpsConfig", "defaultActiveThreadPercentage"], 101, "over 100%"),
        (5, ["sharing", "timeSlicingConfig"], {"interval": "Default"}, "MPS with a time-slicing config"),
        (5, ["kind"], "Gpuconfig", "unknown config kind"),
    ]
    failures = []
    for validator, doc in good:
        for e in validator.iter_errors(doc):
            failures.append("self-test: a valid document was rejected: %s" % e.message)
    for idx, path, value, why in bad:
        validator, doc = good[idx]
        if not list(validator.iter_errors(mutate(doc, path, value))):
            failures.append("self-test: accepted %s (%s)" % (why, json_path(path)))
    return failures, len(good) + len(bad)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="*", help="trees written by tessera render (the schemas load once)")
    ap.add_argument("--examples", metavar="DIR", help="validate real upstream example files")
    ap.add_argument("--self-test", action="store_true", help="check the schemas reject broken documents")
    ap.add_argument("--schemas", metavar="DIR", help="schema folder (default: tests/fixtures/schemas)")
    args = ap.parse_args()
    if bool(args.dir) + bool(args.examples) + args.self_test != 1:
        ap.error("give exactly one of DIR..., --examples DIR, --self-test")
    global SCHEMAS
    if args.schemas:
        SCHEMAS = args.schemas
    schemas = Schemas()
    report = Report()
    if args.self_test:
        failures, n = self_test(schemas)
        for f in failures:
            print(f)
        print("validate_k8s: self-test: %d cases, %d failed" % (n, len(failures)))
        return 1 if failures else 0
    if args.examples:
        return print_report(args.examples, validate_examples(args.examples, schemas, report), report)
    failed = 0
    for tree in args.dir:
        if not os.path.isdir(tree):
            ap.error("%s is not a folder" % tree)
        report = Report()
        failed |= print_report(tree, validate_tree(tree, schemas, report), report)
    return failed


def print_report(where, counts, report):
    """Each error, then one summary line for WHERE; 1 when it has errors."""
    for e in report.errors:
        print(e)
    print("validate_k8s: %s: %d objects, %d device-plugin configs, %d mig-parted configs, "
          "%d NVIDIA DRA configs; %d errors" % (where, counts["objects"], counts["device-plugin"],
                                                counts["mig-parted"], counts["nvidia-dra"],
                                                len(report.errors)))
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(main())
