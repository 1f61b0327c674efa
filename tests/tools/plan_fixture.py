"""plan_fixture.py - specs and running plans written by hand for the replan
tests: one H100 node, tenants of one-line workloads, and plan JSON with MIG,
MPS, whole-card and time-slicing instances. Every figure a test asserts is
counted in that test's comments, never read from here.

Imported by the tests' inline Python (PYTHONPATH="$TESSERA_SRC/tests/tools").
"""
import json

H100 = "h100-80gb-sxm"
# An H100's MIG profiles the tests use: (memory units, GiB).
MIG = {"1g.10gb": (1, 9.75), "1g.20gb": (2, 19.62), "2g.20gb": (2, 19.62), "3g.40gb": (4, 39.5)}


def fleet(count, mps=False):
    """One node, n1, of COUNT H100s (MPS allowed when MPS)."""
    return ("apiVersion: tessera.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\nspec:\n"
            "  nodes:\n  - name: n1\n" + ("    mps: true\n" if mps else "") +
            "    gpus:\n    - {model: %s, count: %d}\n" % (H100, count))


def tenant(name, works, contract="isolated", trust="untrusted"):
    """A Tenant document; WORKS is a list of (workload name, its fields)."""
    return ("---\napiVersion: tessera.dev/v1alpha1\nkind: Tenant\nmetadata: {name: %s}\nspec:\n"
            "  contract: %s\n  namespaces: [%s]\n  workloads:\n" % (name, contract, name) +
            "".join("  - {name: %s, trust: %s, %s}\n" % (w, trust, x) for w, x in works))


def inference(mem, kv, more=""):
    """An inference workload's fields; MORE is appended (", replicas: 2")."""
    return ("kind: inference, memoryHighWaterGiB: %s, kvCacheGiB: %s, p99Ms: 300%s"
            % (mem, kv, more))


def one_inference(name, mem, kv, replicas=1, spread="none"):
    """An isolated, untrusted tenant NAME running one inference workload w."""
    more = ", replicas: %d, spread: %s" % (replicas, spread)
    return tenant(name, [("w", inference(mem, kv, more))])


def training(more=""):
    """A 60 GiB training job's fields."""
    return "kind: training, memoryHighWaterGiB: 60, kvCacheGiB: 0" + more


def inst(t, w="w", prof=None, start=None, size=None, mem=9.75, sm=0, rep=0):
    """One running instance of tenant T's workload W."""
    return {"profile": prof, "start": start, "size": size, "tenant": t, "workload": w,
            "replica": rep, "gpuPart": 0, "memoryGiB": mem, "smPercent": sm, "guest": False,
            "canary": False}


def mig(t, prof, start, rep=0, w="w"):
    """A MIG instance of profile PROF at START."""
    return inst(t, w, prof, start, MIG[prof][0], MIG[prof][1], rep=rep)


def mps(t, w="w", mem=9.0, sm=15):
    """An MPS client of MEM GiB and SM percent."""
    return inst(t, w, mem=mem, sm=sm)


def card(i, mode, insts):
    """Card I of node n1."""
    return {"node": "n1", "index": i, "model": H100, "mode": mode, "instances": insts}


def plan(path, gpus):
    """Write a running plan of GPUS to PATH."""
    with open(path, "w") as f:
        json.dump({"apiVersion": "tessera.dev/v1alpha1", "kind": "Plan", "gpus": gpus}, f,
                  indent=1)
