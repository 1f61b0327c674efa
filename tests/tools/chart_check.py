#!/usr/bin/python3
"""chart_check.py - compare what `helm template` renders of deploy/helm/tessera with
what `kubectl kustomize deploy/` renders, object by object (kind, namespace, name)
and field by field, as parsed YAML: the order of objects and keys and the
comments do not count. Prints one line per difference, exit status 1 if any.

    chart_check.py same KUSTOMIZE.yaml HELM.yaml
        the two render the same objects (the chart's defaults)
    chart_check.py values KUSTOMIZE.yaml > VALUES.yaml
        non-default values for every workload and container deploy/ has
    chart_check.py expect KUSTOMIZE.yaml HELM.yaml
        HELM.yaml is KUSTOMIZE.yaml with those values in every pod template
        and nothing else changed
    chart_check.py namespace KUSTOMIZE.yaml HELM.yaml NEW [--no-namespace]
        every mention of the namespace is NEW (the Namespace object absent with
        --no-namespace), nothing else changed

The expectations are computed here from the kustomize output, not from the
chart or its generator (scripts/gen-helm).
"""
import copy
import re
import sys

import yaml

REGISTRY = "registry.example:5000/gpu"
PULL_SECRET = "registry-credentials"
NODE_SELECTOR = {"example.com/pool": "gpu-infra"}
TOLERATION = {"key": "example.com/dedicated", "operator": "Equal", "value": "tessera",
              "effect": "NoExecute", "tolerationSeconds": 30}
PRIORITY = "example-critical"
RESOURCES = {"requests": {"cpu": "250m", "memory": "96Mi"}, "limits": {"memory": "1Gi"}}
POD_PATHS = {"Deployment": ("spec", "template", "spec"),
             "StatefulSet": ("spec", "template", "spec"),
             "DaemonSet": ("spec", "template", "spec"),
             "ReplicaSet": ("spec", "template", "spec"),
             "Job": ("spec", "template", "spec"),
             "CronJob": ("spec", "jobTemplate", "spec", "template", "spec")}


def load(path):
    objs = {}
    for o in yaml.safe_load_all(open(path)):
        if not o:
            continue
        key = (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"])
        if key in objs:
            print("%s: %s %s/%s twice" % (path, *key))
        objs[key] = o
    return objs


def diff(a, b, path, out, want="kustomize"):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in b:
                out.append("%s.%s: only in %s (%s)" % (path, k, want, short(a[k])))
            elif k not in a:
                out.append("%s.%s: only in helm (%s)" % (path, k, short(b[k])))
            else:
                diff(a[k], b[k], "%s.%s" % (path, k), out, want)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, "%s[%d]" % (path, i), out, want)
    elif a != b or type(a) is not type(b):
        out.append("%s: %s %s, helm %s" % (path, want, short(a), short(b)))


def short(v):
    s = repr(v)
    return s if len(s) < 120 else s[:117] + "..."


def compare(want, got, label="kustomize"):
    out = []
    for key in sorted(set(want) | set(got)):
        name = "%s %s/%s" % key
        if key not in got:
            out.append("%s: missing from helm's output" % name)
        elif key not in want:
            out.append("%s: in helm's output only" % name)
        else:
            diff(want[key], got[key], name, out, label)
    for line in out:
        print(line)
    print("%d objects, %d differences" % (len(want), len(out)))
    return 1 if out else 0


def pods(objs):
    for o in objs.values():
        if o["kind"] in POD_PATHS:
            spec = o
            for p in POD_PATHS[o["kind"]]:
                spec = spec[p]
            yield o, spec


def component(o):
    """The chart's values key for a workload (docs/install.md): its name less
    tessera-, in camelCase."""
    name = re.sub(r"^tessera-", "", o["metadata"]["name"])
    parts = name.split("-")
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def values(objs):
    vals = {"image": {"registry": REGISTRY, "pullPolicy": "Always"},
            "imagePullSecrets": [PULL_SECRET]}
    for o, spec in pods(objs):
        cs = spec.get("initContainers", []) + spec["containers"]
        vals[component(o)] = {"nodeSelector": NODE_SELECTOR, "tolerations": [TOLERATION],
                              "priorityClassName": PRIORITY,
                              "resources": {c["name"]: RESOURCES for c in cs}}
    yaml.safe_dump(vals, sys.stdout, sort_keys=False)
    return 0


def expect(objs):
    objs = copy.deepcopy(objs)
    for o, spec in pods(objs):
        spec["imagePullSecrets"] = [{"name": PULL_SECRET}]
        # Helm merges a map value into the default map (lists replace theirs)
        spec["nodeSelector"] = dict(spec.get("nodeSelector", {}), **NODE_SELECTOR)
        spec["tolerations"] = [TOLERATION]
        spec["priorityClassName"] = PRIORITY
        for c in spec.get("initContainers", []) + spec["containers"]:
            c["image"] = REGISTRY + "/" + c["image"]
            c["imagePullPolicy"] = "Always"
            c["resources"] = RESOURCES
    return objs


def renamespace(node, old, new):
    token = re.compile(r"(?<![a-z0-9-])%s(?![a-z0-9-])" % re.escape(old))
    if isinstance(node, dict):
        return {k: renamespace(v, old, new) for k, v in node.items()}
    if isinstance(node, list):
        return [renamespace(v, old, new) for v in node]
    if isinstance(node, str) and "\n" not in node:
        return token.sub(new, node)
    return node


def namespaced(objs, new, drop_namespace):
    old = [k[2] for k in objs if k[0] == "Namespace"][0]
    out = {}
    for (kind, ns, name), o in objs.items():
        if drop_namespace and kind == "Namespace":
            continue
        o = renamespace(o, old, new)
        out[(kind, o["metadata"].get("namespace", ""), o["metadata"]["name"])] = o
    return out


def main(argv):
    if len(argv) >= 3 and argv[1] == "values":
        return values(load(argv[2]))
    if len(argv) == 4 and argv[1] == "same":
        return compare(load(argv[2]), load(argv[3]))
    if len(argv) == 4 and argv[1] == "expect":
        return compare(expect(load(argv[2])), load(argv[3]), "expected")
    if len(argv) in (5, 6) and argv[1] == "namespace":
        return compare(namespaced(load(argv[2]), argv[4], "--no-namespace" in argv),
                       load(argv[3]), "expected")
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
