/*
 * agent.c - what the node agent keeps each node to: nodes/<node>/agent.json,
 * a NodeConfig (each of the node's planned cards: model, mode and, for MIG,
 * every instance's profile and placement with its tenant and workload), and
 * cluster/agent-nodes.yaml, the ConfigMap tessera-agent-nodes in
 * tessera-system with every node's NodeConfig (on one line) under the key
 * NODE.json, which
 * the agent DaemonSet (deploy/base/agent.yaml) mounts so that each agent
 * reads its own node's file and not the whole plan. Format: docs/agent.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "render/internal.h"

#define RENDER_AGENT_CONFIGMAP "tessera-agent-nodes"

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *instance_json(const struct plan_gpu *g, const struct plan_inst *in)
{
    int mig = g->mode == PLAN_MIG;
    json_t *o = json_object();
    json_object_set_new(o, "profile", str_or_null(in->profile ? in->profile->name : NULL));
    json_object_set_new(o, "start", mig ? json_integer(in->start) : json_null());
    json_object_set_new(o, "size", mig ? json_integer(in->size) : json_null());
    json_object_set_new(o, "tenant", str_or_null(in->row ? in->row->tenant->name : NULL));
    json_object_set_new(o, "workload", str_or_null(in->row ? in->row->workload->name : NULL));
    return o;
}

static json_t *gpu_json(const struct plan_gpu *g)
{
    json_t *o = json_object(), *insts = json_array();
    json_object_set_new(o, "index", json_integer(g->index));
    json_object_set_new(o, "model", json_string(g->model->name));
    json_object_set_new(o, "mode", json_string(plan_mode_names[g->mode]));
    for (size_t k = 0; k < g->ninst; k++)
        json_array_append_new(insts, instance_json(g, &g->inst[k]));
    json_object_set_new(o, "instances", insts);
    return o;
}

/* The NodeConfig of node n, or NULL when the plan has no card there. */
static json_t *node_config(const struct plan *p, const struct spec_fleet_node *n)
{
    json_t *gpus = json_array();
    for (size_t i = 0; i < p->ngpus; i++)
        if (p->gpus[i].node == n)
            json_array_append_new(gpus, gpu_json(&p->gpus[i]));
    if (json_array_size(gpus) == 0) {
        json_decref(gpus);
        return NULL;
    }
    return json_pack("{s:s, s:s, s:s, s:o}", "apiVersion", "tessera.dev/v1alpha1", "kind",
                     "NodeConfig", "node", n->name, "gpus", gpus);
}

ts_status render__agent_node(struct render_ctx *c, const struct spec_fleet_node *n, json_t *data)
{
    json_t *doc = node_config(c->p, n);
    if (!doc)
        return TS_OK;
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(doc);
    struct render_file *f = text ? render__file(c->t, "nodes/%s/agent.json", n->name) : NULL;
    if (f) {
        ts_sbuf_puts(&f->body, text);
        ts_sbuf_puts(&f->body, "\n");
        json_object_set_new(data, "agent.json", json_string(ts_sbuf_str(&f->body)));
    }
    free(text);
    return f ? ts_sbuf_status(&f->body) : TS_NOMEM;
}

/* Node n's NodeConfig on one line under NODE.json in data (none: no cards). */
static ts_status node_entry(const struct render_ctx *c, const struct spec_fleet_node *n,
                            json_t *data)
{
    json_t *doc = node_config(c->p, n);
    if (!doc)
        return TS_OK;
    char *line = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
    char key[300];
    json_decref(doc);
    snprintf(key, sizeof key, "%s.json", n->name);
    if (line)
        json_object_set_new(data, key, json_string(line));
    free(line);
    return line ? TS_OK : TS_NOMEM;
}

/* More than one ConfigMap holds: TS_TOO_LARGE, saying how much. */
static ts_status check_size(const struct render_ctx *c, json_t *data)
{
    const char *key;
    json_t *v;
    size_t bytes = 0;
    json_object_foreach (data, key, v)
        bytes += strlen(key) + json_string_length(v);
    if (bytes <= RENDER_AGENT_NODES_MAX)
        return TS_OK;
    return ts_err(c->err, TS_TOO_LARGE,
                  "cluster/agent-nodes.yaml: the NodeConfigs of %zu nodes take %zu bytes, over "
                  "the %u bytes a ConfigMap holds; split the fleet into several specs",
                  json_object_size(data), bytes, RENDER_AGENT_NODES_MAX);
}

ts_status render__agent(struct render_ctx *c, const char **files, size_t *n)
{
    const struct spec_fleet *fleet = c->p->model->fleet;
    json_t *data = json_object();
    ts_status st = TS_OK;
    for (size_t i = 0; st == TS_OK && i < fleet->nnodes; i++)
        st = node_entry(c, &fleet->nodes[i], data);
    if (st == TS_OK)
        st = check_size(c, data);
    json_t *cm = render__object("v1", "ConfigMap", RENDER_AGENT_CONFIGMAP, ENTITLE_SYSTEM_NS);
    json_object_set_new(cm, "data", data);
    struct render_file *f = st == TS_OK ? render__file(c->t, "cluster/agent-nodes.yaml") : NULL;
    if (!f) {
        json_decref(cm);
        return st ? st : TS_NOMEM;
    }
    files[(*n)++] = "agent-nodes.yaml";
    files[*n] = NULL;
    return render__docs(f, json_pack("[o]", cm));
}
