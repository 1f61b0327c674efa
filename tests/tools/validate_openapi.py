#!/usr/bin/python3
"""validate_openapi.py - validate Kubernetes manifests against the upstream
OpenAPI v3 documents of Kubernetes 1.35, strictly (unknown fields fail).

Each document is matched to its schema by x-kubernetes-group-version-kind;
$refs into #/components/schemas are resolved inside the same OpenAPI file;
every object schema with properties gets additionalProperties: false (unless
it says x-kubernetes-preserve-unknown-fields), like kubectl's strict mode.
With --crds DIR, the kinds the CustomResourceDefinitions in DIR/*.yaml
define are checked against their openAPIV3Schema, as strictly.
Usage: validate_openapi.py SCHEMA_DIR [--crds DIR] FILE.yaml...   (exit 1 on any error)
"""
import copy, glob, json, os, sys

import jsonschema
import yaml


def strict(node):
    if isinstance(node, dict):
        if ("properties" in node and "additionalProperties" not in node
                and not node.get("x-kubernetes-preserve-unknown-fields")):
            node["additionalProperties"] = False
        for v in node.values():
            strict(v)
    elif isinstance(node, list):
        for v in node:
            strict(v)


def load_index(folder):
    index = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        doc = json.load(open(path))
        strict(doc)
        for name, schema in doc.get("components", {}).get("schemas", {}).items():
            for gvk in schema.get("x-kubernetes-group-version-kind", []):
                api = gvk["version"] if not gvk["group"] else gvk["group"] + "/" + gvk["version"]
                index.setdefault((api, gvk["kind"]), (doc, name))
    return index


def load_crds(folder, index):
    for path in sorted(glob.glob(os.path.join(folder, "*.yaml"))):
        for crd in yaml.safe_load_all(open(path)):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
            for v in crd["spec"]["versions"]:
                schema = copy.deepcopy(v["schema"]["openAPIV3Schema"])
                strict(schema)
                name = "crd.%s.%s.%s" % (group, v["name"], kind)  # no "/": a JSON pointer
                index[(group + "/" + v["name"], kind)] = ({"components": {"schemas": {name: schema}}},
                                                         name)


def validate(index, path):
    errors = 0
    for i, doc in enumerate(yaml.safe_load_all(open(path))):
        if not doc:
            continue
        key = (doc.get("apiVersion"), doc.get("kind"))
        if key not in index:
            print("%s: document %d: no schema for %s %s" % (path, i, key[0], key[1]))
            errors += 1
            continue
        root, name = index[key]
        schema = copy.copy(root)
        schema["$ref"] = "#/components/schemas/" + name
        v = jsonschema.Draft7Validator(schema)
        for e in sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            where = ".".join(str(p) for p in e.absolute_path)
            print("%s: document %d (%s %s) %s: %s" % (path, i, key[1],
                  doc.get("metadata", {}).get("name"), where or "(root)", e.message))
            errors += 1
    return errors


def main():
    index = load_index(sys.argv[1])
    files = sys.argv[2:]
    if files[:1] == ["--crds"] and len(files) >= 2:
        load_crds(files[1], index)
        files = files[2:]
    errors = sum(validate(index, f) for f in files)
    print("validate_openapi: %d files, %d errors" % (len(files), errors))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
