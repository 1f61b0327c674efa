/*
 * discover.c - a Service's dcgm-exporters from its EndpointSlices (discover.h).
 */
#include "meter/discover.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/file.h"

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
#define TOKEN_MAX 16384

/* A DNS label (RFC 1123), what a namespace and a Service name are. */
static int dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
            return 0;
    return 1;
}

ts_status meter_discover_spec(const char *spec, char *buf, size_t size,
                              struct meter_discover_opts *o, struct ts_error *err)
{
    if (strlen(spec) >= size)
        return ts_err(err, TS_USAGE, "--discover '%.80s': too long", spec);
    strcpy(buf, spec);
    char *slash = strchr(buf, '/'), *colon = slash ? strchr(slash, ':') : NULL;
    if (!slash)
        return ts_err(err, TS_USAGE, "--discover '%s': not NAMESPACE/SERVICE[:PORT]", spec);
    *slash = '\0';
    if (colon)
        *colon = '\0';
    o->namespace_ = buf;
    o->service = slash + 1;
    o->port = colon ? colon + 1 : NULL;
    if (!dns_label(o->namespace_) || !dns_label(o->service))
        return ts_err(err, TS_USAGE,
                      "--discover '%s': namespace and service must be DNS labels "
                      "(a-z, 0-9, '-', at most 63)",
                      spec);
    if (o->port && !dns_label(o->port))
        return ts_err(err, TS_USAGE, "--discover '%s': the port is a name or a number", spec);
    return TS_OK;
}

/* The slice's port number for want (name or number; NULL: its only port),
 * 0 when it has none such. */
static long slice_port(json_t *ports, const char *want)
{
    if (!json_is_array(ports))
        return 0;
    char *end;
    long num = want ? strtol(want, &end, 10) : 0;
    int by_number = want && *end == '\0';
    if (!want && json_array_size(ports) != 1)
        return 0;
    size_t i;
    json_t *p;
    json_array_foreach (ports, i, p) {
        json_t *port = json_object_get(p, "port"), *name = json_object_get(p, "name");
        if (!json_is_integer(port))
            continue;
        long v = (long)json_integer_value(port);
        if (v < 1 || v > 65535)
            continue;
        if (!want || (by_number && v == num) ||
            (!by_number && json_is_string(name) && strcmp(json_string_value(name), want) == 0))
            return v;
    }
    return 0;
}

static int target_cmp(const void *a, const void *b)
{
    return strcmp(((const struct meter_target *)a)->url, ((const struct meter_target *)b)->url);
}

struct targets {
    struct meter_target *v;
    size_t n;
};

/* Add address:port (family 4 or 6) on node; 0, or -1 with err set. */
static int add(struct targets *t, int v6, const char *addr, long port, const char *node,
               const char *where, struct ts_error *err)
{
    unsigned char bin[16];
    if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, bin) != 1)
        return ts_err(err, TS_INVALID, "%s: '%.64s' is not an IPv%d address", where, addr,
                      v6 ? 6 : 4),
               -1;
    if (t->n == METER_DISCOVER_TARGETS_MAX)
        return ts_err(err, TS_INVALID, "%s: more than %d exporters", where,
                      METER_DISCOVER_TARGETS_MAX),
               -1;
    struct meter_target *m = &t->v[t->n++];
    snprintf(m->url, sizeof(m->url), v6 ? "http://[%s]:%ld/metrics" : "http://%s:%ld/metrics", addr,
             port);
    snprintf(m->node, sizeof(m->node), "%s", node && strlen(node) < sizeof(m->node) ? node : "");
    return 0;
}

/* The ready endpoints of one slice. */
static int slice_targets(json_t *slice, size_t i, const char *want, struct targets *t,
                         struct ts_error *err)
{
    char where[96];
    const char *family = json_string_value(json_object_get(slice, "addressType"));
    if (!family || (strcmp(family, "IPv4") && strcmp(family, "IPv6")))
        return 0; /* FQDN slices name no exporter address */
    long port = slice_port(json_object_get(slice, "ports"), want);
    json_t *eps = json_object_get(slice, "endpoints");
    if (!port || !json_is_array(eps))
        return 0;
    size_t j;
    json_t *ep;
    json_array_foreach (eps, j, ep) {
        json_t *ready = json_object_get(json_object_get(ep, "conditions"), "ready");
        if (json_is_false(ready))
            continue;
        const char *node = json_string_value(json_object_get(ep, "nodeName"));
        json_t *addrs = json_object_get(ep, "addresses");
        /* one address an endpoint: the API says consumers take the first */
        json_t *a0 = json_array_get(addrs, 0);
        snprintf(where, sizeof(where), "items[%zu].endpoints[%zu].addresses[0]", i, j);
        if (!json_is_string(a0)) {
            ts_err(err, TS_INVALID, "%s: missing", where);
            return -1;
        }
        if (add(t, family[3] == '6', json_string_value(a0), port, node, where, err) != 0)
            return -1;
    }
    return 0;
}

ts_status meter_discover_parse(const char *json, size_t len, const char *port,
                               struct meter_target **out, size_t *n, struct ts_error *err)
{
    *out = NULL;
    *n = 0;
    json_error_t je;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return ts_err(err, TS_INVALID, "EndpointSliceList: line %d column %d: %s", je.line,
                      je.column, je.text);
    json_t *items = json_object_get(root, "items");
    const char *kind = json_string_value(json_object_get(root, "kind"));
    if (!json_is_array(items) || !kind || strcmp(kind, "EndpointSliceList") != 0) {
        json_decref(root);
        return ts_err(err, TS_INVALID, "not an EndpointSliceList (kind and items)");
    }
    struct targets t = {calloc(METER_DISCOVER_TARGETS_MAX, sizeof(*t.v)), 0};
    ts_status rc = t.v ? TS_OK : ts_err(err, TS_NOMEM, "out of memory");
    size_t i;
    json_t *slice;
    json_array_foreach (items, i, slice) {
        if (rc == TS_OK && slice_targets(slice, i, port, &t, err) != 0)
            rc = err->code;
    }
    json_decref(root);
    if (rc != TS_OK) {
        free(t.v);
        return rc;
    }
    qsort(t.v, t.n, sizeof(*t.v), target_cmp);
    size_t k = 0; /* an endpoint in two slices (a slice being replaced) once */
    for (size_t j = 0; j < t.n; j++)
        if (k == 0 || strcmp(t.v[k - 1].url, t.v[j].url) != 0)
            t.v[k++] = t.v[j];
    *out = t.v;
    *n = k;
    return TS_OK;
}

/* ---- the API call ---- */

/* The API server's URL: o->api, or the pod's from the environment. */
static ts_status api_url(const struct meter_discover_opts *o, char *buf, size_t size,
                         struct ts_error *err)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    int n;
    if (o->api)
        n = snprintf(buf, size, "%s", o->api);
    else if (host && *host && port && *port)
        n = snprintf(buf, size, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host,
                     port);
    else
        return ts_err(err, TS_USAGE,
                      "--discover: not in a pod (no KUBERNETES_SERVICE_HOST); give --api-server");
    if (n < 0 || (size_t)n >= size)
        return ts_err(err, TS_USAGE, "--api-server: too long");
    while (n > 0 && buf[n - 1] == '/')
        buf[--n] = '\0';
    return TS_OK;
}

/* The API's own reason from a Status body, or "". */
static void api_reason(const struct ts_sbuf *body, char *buf, size_t size)
{
    json_t *s = body->len ? json_loadb(body->data, body->len, 0, NULL) : NULL;
    const char *m = json_string_value(json_object_get(s, "message"));
    snprintf(buf, size, "%.300s", m ? m : "");
    json_decref(s);
}

ts_status meter_discover(struct meter_fetch *f, const struct meter_discover_opts *o,
                         struct meter_target **out, size_t *n, struct ts_error *err)
{
    char base[512], url[1024], *token = NULL;
    size_t tlen = 0;
    ts_status rc = api_url(o, base, sizeof(base), err);
    if (rc == TS_OK)
        rc = ts_file_read(o->token_file ? o->token_file : SA_DIR "/token", TOKEN_MAX, &token, &tlen,
                          err);
    if (rc != TS_OK)
        return rc;
    while (tlen > 0 && isspace((unsigned char)token[tlen - 1]))
        token[--tlen] = '\0';
    snprintf(url, sizeof(url),
             "%s/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices"
             "?labelSelector=kubernetes.io%%2Fservice-name%%3D%s",
             base, o->namespace_, o->service);
    struct meter_fetch_opts fo = o->fetch;
    fo.bearer = token;
    fo.cacert = o->ca_file ? o->ca_file : (o->api ? fo.cacert : SA_DIR "/ca.crt");
    fo.max_body = METER_DISCOVER_BODY_MAX;
    fo.any_status = 1;
    struct ts_sbuf body;
    struct meter_fetch_sink sink;
    struct meter_fetch_result res;
    ts_sbuf_init(&body, METER_DISCOVER_BODY_MAX);
    meter_fetch_buffer_sink(&body, &sink);
    rc = meter_fetch_get(f, url, &fo, &sink, &res, err);
    free(token);
    if (rc == TS_OK && res.status / 100 != 2) {
        char why[320];
        api_reason(&body, why, sizeof(why));
        rc = ts_err(err, TS_IO, "EndpointSlices of %s/%s: HTTP %ld%s%s", o->namespace_, o->service,
                    res.status, *why ? ": " : "", why);
    }
    if (rc == TS_OK)
        rc = meter_discover_parse(body.data, body.len, o->port, out, n, err);
    ts_sbuf_release(&body);
    return rc;
}
