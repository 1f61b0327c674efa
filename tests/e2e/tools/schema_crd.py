#!/usr/bin/python3
"""schema_crd.py GROUP KIND PLURAL VERSION SCHEMA.json - a CustomResourceDefinition
(namespaced, one served and stored version) whose openAPIV3Schema is SCHEMA.json,
for a type whose project ships no CRD file (KubeVirt: virt-operator generates
its CRDs at run time; tests/fixtures/schemas/kubevirt holds the published
schema). The API server then validates objects of that kind against the real
schema. Prints the CRD as JSON."""
import json
import sys

group, kind, plural, version, path = sys.argv[1:6]
schema = json.load(open(path))


def strip(node):
    """Drop what a CRD schema may not carry: JSON Schema's $schema and ids,
    and additionalProperties beside properties (the published schema is the
    strict variant; a CRD's structural schema refuses unknown fields through
    kubectl's strict field validation instead)."""
    if isinstance(node, dict):
        for k in ("$schema", "id", "$id"):
            node.pop(k, None)
        if "properties" in node:
            node.pop("additionalProperties", None)
        for v in node.values():
            strip(v)
    elif isinstance(node, list):
        for v in node:
            strip(v)


strip(schema)
crd = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "%s.%s" % (plural, group)},
    "spec": {
        "group": group,
        "scope": "Namespaced",
        "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": kind + "List"},
        "versions": [{"name": version, "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": schema}}],
    },
}
json.dump(crd, sys.stdout)
