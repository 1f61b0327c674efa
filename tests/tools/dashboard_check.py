#!/usr/bin/python3
"""dashboard_check.py - checks Grafana dashboards against docs/metrics.md and a Prometheus.

    dashboard_check.py --docs docs/metrics.md [--exposition PAGE]
                       [--prometheus URL --var NAME=VALUE... --window S] DASHBOARD.json...

Without --prometheus: each file is well-formed JSON (an error names FILE:LINE:COL), a
classic Grafana dashboard (a current schemaVersion, a uid, the ${DS_PROMETHEUS}
data-source variable and a `tenant` variable, panels of type timeseries, stat or table,
each reading ${DS_PROMETHEUS}, each with targets holding a PromQL `expr`, ids unique,
panels inside the 24-column grid, none over another), and every metric a query or a variable names is
documented in a table of --docs (a histogram's _bucket, _sum and _count by its own
name). --exposition PAGE: every tessera_ family a /metrics page declares (# TYPE) is
documented too.

With --prometheus: every target's expr, the variables substituted as Grafana would
($tenant and ${tenant} by --var; $__rate_interval, $__interval, $__range from --window),
is run through /api/v1/query_range over the last --window seconds at a 1 s step and
must succeed and return at least one series with a finite value; each label_values()
variable query must return values (holding the --var value given for it).
--optional-prefix P (repeatable): a target whose metrics all start with P must still be
accepted by Prometheus, but need not return data (no source of them in this run); each
such target is listed as not checked for data.

Prints one line per problem, naming the file, the panel (id and title) and the target
(refId); exits 0 when there is none, 1 when there are, 2 on a file that is not JSON.
"""
import argparse
import json
import math
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

PANEL_TYPES = {"timeseries", "stat", "table"}
DS = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
MIN_SCHEMA = 39  # Grafana 11 writes 39, Grafana 12 41
NOT_METRICS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset",
               "bool", "and", "or", "unless", "inf", "nan", "Inf", "NaN"}
HIST_SUFFIXES = ("_bucket", "_sum", "_count")


def documented(path):
    """{metric: type} from the table rows of the docs page: | `name` | type | ..."""
    out = {}
    for line in open(path, encoding="utf-8"):
        m = re.match(r"\|\s*`([A-Za-z_:][A-Za-z0-9_:]*)`\s*\|\s*([a-z]+)\s*\|", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def metric_names(expr):
    """The metric names a PromQL expression reads (a small tokenizer, enough for
    dashboards: strings, label matchers, ranges and grouping lists taken out first)."""
    s = re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`', '""', expr)
    s = re.sub(r"\{[^}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    names = []
    for m in re.finditer(r"(?<![\w.])[A-Za-z_:][A-Za-z0-9_:]*", s):
        rest = s[m.end():].lstrip()
        if m.group(0) in NOT_METRICS or rest.startswith("("):
            continue
        names.append(m.group(0))
    return names


def known(name, docs):
    if name in docs:
        return True
    return any(name.endswith(x) and docs.get(name[: -len(x)]) == "histogram"
               for x in HIST_SUFFIXES)


class Checker:
    def __init__(self, args):
        self.args = args
        self.docs = documented(args.docs)
        self.problems = 0

    def bad(self, where, what):
        self.problems += 1
        print(f"{where}: {what}")

    # ---- structure ----

    def variables(self, path, d):
        vs = {v.get("name"): v for v in d.get("templating", {}).get("list", [])}
        ds = vs.get("DS_PROMETHEUS")
        if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
            self.bad(path, "templating: no DS_PROMETHEUS variable of type datasource (prometheus)")
        if "tenant" not in vs:
            self.bad(path, "templating: no tenant variable")
        return vs

    def panel(self, path, p, ids):
        where = f'{path}: panel {p.get("id")} "{p.get("title")}"'
        if p.get("type") not in PANEL_TYPES:
            self.bad(where, f"type {p.get('type')!r} is not one of {sorted(PANEL_TYPES)}")
        if p.get("id") in ids:
            self.bad(where, "id used twice")
        ids.add(p.get("id"))
        if p.get("datasource") != DS:
            self.bad(where, f"datasource {p.get('datasource')} is not {DS}")
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "hwxy") or g["x"] + g["w"] > 24:
            self.bad(where, f"gridPos {g} outside the 24-column grid")
        if not p.get("targets"):
            self.bad(where, "no targets")
        refs = set()
        for t in p.get("targets", []):
            tw = f"{where} target {t.get('refId')}"
            if not isinstance(t.get("expr"), str) or not t["expr"].strip():
                self.bad(tw, "no PromQL expr")
                continue
            if t.get("refId") in refs:
                self.bad(tw, "refId used twice")
            refs.add(t.get("refId"))
            if t.get("datasource", DS) != DS:
                self.bad(tw, f"datasource {t.get('datasource')} is not {DS}")
            for name in metric_names(t["expr"]):
                if not known(name, self.docs):
                    self.bad(tw, f"metric {name} is not documented in {self.args.docs}")

    def place(self, path, p, cells):
        """Panels may not overlap on the grid (Grafana would push one down)."""
        g = p.get("gridPos", {})
        if not all(isinstance(g.get(k), int) for k in "hwxy"):
            return
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                other = cells.setdefault((x, y), p.get("id"))
                if other != p.get("id"):
                    self.bad(f'{path}: panel {p.get("id")} "{p.get("title")}"',
                             f"overlaps panel {other} at x {x}, y {y}")
                    return

    def structure(self, path, d):
        if not isinstance(d, dict):
            self.bad(path, "not a JSON object")
            return {}
        if not isinstance(d.get("schemaVersion"), int) or d["schemaVersion"] < MIN_SCHEMA:
            self.bad(path, f"schemaVersion {d.get('schemaVersion')!r}: want {MIN_SCHEMA} or later")
        if not d.get("uid") or not d.get("title"):
            self.bad(path, "no uid or title")
        vs = self.variables(path, d)
        for name, v in vs.items():
            lv = label_values(v)
            q = v.get("query")
            if lv and isinstance(q, dict) and q.get("qryType") == 1 and \
                    (q.get("metric"), q.get("label")) != lv:
                # Grafana rebuilds the query from these two when qryType is 1 (label values)
                self.bad(f"{path}: variable {name}", f"metric and label {q.get('metric')!r}, "
                         f"{q.get('label')!r} are not those of {q.get('query')!r}")
            for metric in metric_names(lv[0]) if lv else []:
                if not known(metric, self.docs):
                    self.bad(f"{path}: variable {name}",
                             f"metric {metric} is not documented in {self.args.docs}")
        ids, cells = set(), {}
        for p in d.get("panels", []):
            self.panel(path, p, ids)
            self.place(path, p, cells)
        if not d.get("panels"):
            self.bad(path, "no panels")
        return vs

    # ---- Prometheus ----

    def get(self, route, params):
        url = self.args.prometheus.rstrip("/") + route + "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:  # Prometheus answers 400/422 with a JSON error
            try:
                return json.load(e)
            except ValueError:
                return {"status": "error", "error": f"HTTP {e.code}"}

    def substitute(self, expr):
        w = self.args.window
        subs = {"__rate_interval": f"{w}s", "__interval": "1s", "__range": f"{w}s"}
        subs.update(self.vars)

        def one(m):
            name = m.group(1) or m.group(2)
            if name not in subs:
                raise KeyError(name)
            return subs[name]
        return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, expr)

    def optional(self, expr):
        names = metric_names(expr)
        return names and all(any(n.startswith(p) for p in self.args.optional_prefix)
                             for n in names)

    def run(self, where, expr, end):
        try:
            q = self.substitute(expr)
        except KeyError as e:
            self.bad(where, f"variable ${e.args[0]} has no value (give --var)")
            return
        a = self.get("/api/v1/query_range", {"query": q, "start": end - self.args.window,
                                               "end": end, "step": 1})
        if a.get("status") != "success":
            self.bad(where, f"Prometheus refused {q!r}: {a.get('errorType')}: {a.get('error')}")
            return
        series = a["data"]["result"]
        finite = [v for s in series for _, v in s.get("values", [])
                  if not math.isnan(float(v)) and not math.isinf(float(v))]
        if self.optional(expr):
            print(f"{where}: accepted, not checked for data (optional here)")
        elif not series or not finite:
            self.bad(where, f"no data for {q!r} ({len(series)} series, none with a number)")

    def variable_values(self, path, name, v, end):
        lv = label_values(v)
        if not lv:
            return
        metric, label = lv
        a = self.get(f"/api/v1/label/{label}/values",
                     {"match[]": metric, "start": end - self.args.window, "end": end})
        got = a.get("data") or []
        if a.get("status") != "success" or not got:
            self.bad(f"{path}: variable {name}", f"no values for {metric} {label}: {a}")
        elif name in self.vars and self.vars[name] not in got and v.get("allValue") is None:
            self.bad(f"{path}: variable {name}", f"{self.vars[name]!r} not among {got}")

    def queries(self, path, d, vs, end):
        for name, v in vs.items():
            self.variable_values(path, name, v, end)
        for p in d.get("panels", []):
            for t in p.get("targets", []):
                if isinstance(t.get("expr"), str):
                    self.run(f'{path}: panel {p.get("id")} "{p.get("title")}" target '
                             f'{t.get("refId")}', t["expr"], end)

    def exposition(self, path):
        for line in open(path, encoding="utf-8", errors="replace"):
            m = re.match(r"# TYPE (tessera_\w+) (\w+)", line)
            if m and self.docs.get(m.group(1)) != m.group(2):
                self.bad(path, f"{m.group(1)} ({m.group(2)}) is not documented as such in "
                               f"{self.args.docs}")


def label_values(v):
    """(metric selector, label) of a label_values(metric, label) variable, or None."""
    q = v.get("query")
    q = q.get("query") if isinstance(q, dict) else q
    if v.get("type") != "query":
        return None
    m = re.fullmatch(r"\s*label_values\((.+),\s*(\w+)\)\s*", q or "")
    return (m.group(1).strip(), m.group(2)) if m else None


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        print(f"{path}:{e.lineno}:{e.colno}: {e.msg}")
        sys.exit(2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", required=True)
    ap.add_argument("--exposition")
    ap.add_argument("--prometheus")
    ap.add_argument("--var", action="append", default=[])
    ap.add_argument("--optional-prefix", action="append", default=[])
    ap.add_argument("--window", type=int, default=30)
    ap.add_argument("--end", type=float)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    c = Checker(args)
    c.vars = dict(v.split("=", 1) for v in args.var)
    if args.exposition:
        c.exposition(args.exposition)
    end = args.end or time.time()
    for path in args.files:
        d = load(path)
        vs = c.structure(path, d)
        if args.prometheus and isinstance(d, dict):
            c.queries(path, d, vs, end)
    sys.exit(1 if c.problems else 0)


if __name__ == "__main__":
    main()
