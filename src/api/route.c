/*
 * route.c - GET /api/v1/...: the route table, the identity check every
 * route passes, and the small routes: whoami, denials, replan.
 */
#include "api/internal.h"

#include <string.h>
#include "util/text.h"
#include "util/time.h"

const char *const api_routes[] = {
    "/whoami",         "/plan",       "/tenants", "/usage",  "/invoices", "/ledger/holders",
    "/ledger/history", "/violations", "/denials", "/replan", NULL};

static void tenant_list(struct api__req *r) { api__tenants(r, NULL); }

/* One handler per entry of api_routes, in its order. */
static void (*const HANDLERS[])(struct api__req *) = {
    api__whoami,  api__plan,    tenant_list,     api__usage,   api__invoices,
    api__holders, api__history, api__violations, api__denials, api__replan,
};

static void dispatch(struct api__req *r, const char *path)
{
    if (strncmp(path, "/tenants/", 9) == 0 && path[9] && !strchr(path + 9, '/')) {
        r->path = path;
        api__tenants(r, path + 9);
        return;
    }
    for (size_t i = 0; api_routes[i]; i++) {
        if (strcmp(path, api_routes[i]) != 0)
            continue;
        r->path = api_routes[i];
        HANDLERS[i](r);
        return;
    }
    api__fail(r, 404, NULL, "no route /api/v1%s", path);
}

void api_get(const struct api_state *s, const struct api_identity *who, const char *path,
             const struct api_param *params, size_t nparams, struct api_answer *out)
{
    struct api__req r = {s, who, path, params, nparams, 0, out, 0};
    ts_sbuf_init(&out->body, API_ANSWER_MAX);
    out->allow = out->www_authenticate = NULL;
    out->type = "application/json; charset=utf-8";
    if (!who || who->role == API_ROLE_NONE)
        api__fail(&r, 401, NULL,
                  "no identity: send Authorization: Bearer TOKEN "
                  "or a client certificate");
    else if (nparams > API_PARAMS_MAX)
        api__fail(&r, 400, NULL, "more than %d query parameters", API_PARAMS_MAX);
    else
        dispatch(&r, path);
}

static json_t *tenant_names(const struct api__req *r)
{
    json_t *a = json_array();
    const struct spec_model *m = r->s->model;
    for (size_t i = 0; a && i < m->ntenants; i++)
        if (api__may_see(r->who, m->tenants[i].name))
            json_array_append_new(a, ts_text_json(m->tenants[i].name));
    return a;
}

void api__whoami(struct api__req *r)
{
    if (!api__done(r))
        return;
    const struct api_identity *w = r->who;
    json_t *doc = json_pack("{s:s, s:o, s:s, s:o, s:o, s:b, s:b}", "role",
                            w->role == API_ROLE_OPERATOR ? "operator" : "tenant", "tenant",
                            w->role == API_ROLE_TENANT ? ts_text_json(w->tenant) : json_null(),
                            "via", w->via, "subject", ts_text_json(w->subject), "tenants",
                            tenant_names(r), "metering", r->s->db_url != NULL, "replan",
                            r->s->current != NULL);
    api__send(r, doc, NULL);
}

static json_t *denial_json(const struct api_denial *d)
{
    char t[40];
    ts_time_format(d->ts_ms, t);
    return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "time", t, "uid", ts_text_json(d->uid),
                     "kind", ts_text_json(d->kind), "namespace", ts_text_json(d->ns), "tenant",
                     ts_text_json(d->tenant), "rule", ts_text_json(d->rule), "message",
                     ts_text_json(d->message));
}

void api__denials(struct api__req *r)
{
    struct api__page pg;
    const char *tenant = NULL, *rule = api__param(r, "rule");
    if (!api__tenant(r, "tenant", &tenant) || !api__page(r, &pg) || !api__done(r))
        return;
    json_t *items = json_array();
    for (size_t i = 0; items && i < r->s->ndenials; i++) {
        const struct api_denial *d = &r->s->denials[i];
        if ((tenant && strcmp(d->tenant, tenant) != 0) || (rule && strcmp(d->rule, rule) != 0))
            continue;
        json_array_append_new(items, denial_json(d));
    }
    json_t *doc = api__paged(r, items, &pg);
    if (doc)
        json_object_set_new(doc, "dropped", json_integer((json_int_t)r->s->denials_dropped));
    api__send(r, doc, "limit");
}

void api__replan(struct api__req *r)
{
    if (!api__done(r))
        return;
    if (r->who->role != API_ROLE_OPERATOR) {
        api__fail(r, 403, NULL,
                  "the replanning steps are the operator's (they name every "
                  "tenant's pods)");
        return;
    }
    if (!r->s->current) {
        api__fail(r, 404, NULL, "the console has no --current layout");
        return;
    }
    struct reconf_replan steps = {0};
    if (reconf_steps(r->s->plan, r->s->current, &steps) != TS_OK) {
        reconf_replan_release(&steps);
        api__fail(r, 500, NULL, "out of memory");
        return;
    }
    steps.strategy = "the steps to the plan serve enforces";
    struct reconf_replan_opts o = {.max_drains = -1, .prefer = RECONF_PREFER_FEWER_DRAINS};
    api__send(r, reconf_replan_json(&steps, &o), NULL);
    reconf_replan_release(&steps);
}
