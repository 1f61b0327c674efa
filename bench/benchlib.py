"""benchlib.py - what the planner benches (plan_bench, trace_bench, cost_bench) share:
the built-in catalog's models read from src/catalog/builtin.yaml, and one timed
`tessera plan ... -o json` run."""
import json, os, re, subprocess, time

HERE = os.path.dirname(os.path.abspath(__file__))
# a MIG profile's line: 1 name, 2 computeSlices, 3 memoryGiB, 4 maxCount,
# 5 the starts, 6 the memory slices it takes
PROFILE_RE = (r"\{name: ([^,]+), id: \d+, computeSlices: (\d+), memoryGiB: ([0-9.]+), "
              r"sms: \d+, maxCount: (\d+), placements: \"\{([0-9,]+)\}:(\d+)\"")


def catalog_docs():
    """(name, doc, num) for each model of the built-in catalog; num(KEY, DEFAULT) is
    the model's number field KEY, or DEFAULT where it has none."""
    text = open(os.path.join(HERE, "..", "src", "catalog", "builtin.yaml")).read()
    for doc in text.split("\n---"):
        name = re.search(r"metadata: \{name: ([^}]+)\}", doc)
        if not name:
            continue

        def num(key, dflt, doc=doc):
            m = re.search(r"\n  %s: ([0-9.]+)" % key, doc)
            return float(m.group(1)) if m else dflt
        yield name.group(1), doc, num


def plan_summary(args):
    """The summary of the `tessera plan ... -o json` run ARGS and its wall time in
    seconds; the summary is None when the run failed."""
    t0 = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        return None, dt
    return json.loads(p.stdout)["summary"], dt
