/*
 * discover.h - the dcgm-exporters behind a Kubernetes Service, one scrape
 * target per ready endpoint, read from the Service's EndpointSlices through
 * the Kubernetes API (`meter scrape --discover`). A Service's own address
 * reaches one exporter at random per connection, so scraping it bills every
 * other node's cards from whichever node answered; each endpoint is a node's
 * exporter and is scraped on its own.
 *
 * The API call is one GET of
 *   /apis/discovery.k8s.io/v1/namespaces/NS/endpointslices
 *     ?labelSelector=kubernetes.io/service-name=SERVICE
 * with the pod's service-account token (RBAC: list endpointslices in NS,
 * nothing else). Its answer is untrusted input: bounded (METER_DISCOVER_
 * BODY_MAX, METER_DISCOVER_TARGETS_MAX), every address checked as an IP
 * address of the slice's family, every port a number in 1..65535.
 */
#ifndef METER_DISCOVER_H
#define METER_DISCOVER_H

#include <stddef.h>
#include "meter/fetch.h"
#include "util/error.h"
#include "util/limits.h" /* METER_DISCOVER_TARGETS_MAX, METER_DISCOVER_BODY_MAX */

#define METER_DISCOVER_URL_MAX 96 /* http://[v6]:65535/metrics */

/* One exporter: its URL and the node its endpoint says it runs on ("" when
 * the slice does not say). */
struct meter_target {
    char url[METER_DISCOVER_URL_MAX];
    char node[254];
};

struct meter_discover_opts {
    const char *api;        /* https://HOST:PORT; NULL: the pod's own API server */
    const char *token_file; /* NULL: the pod's service-account token */
    const char *ca_file;    /* NULL: the pod's service-account CA */
    const char *namespace_; /* the Service's namespace */
    const char *service;    /* its name */
    const char *port;       /* the port's name or number; NULL: the slices' only port */
    struct meter_fetch_opts fetch;
};

/* Parse "NS/SERVICE[:PORT]" (a --discover value) into o's namespace_,
 * service and port, which point into buf (a copy of spec, at least as
 * long). Names are checked as Kubernetes names (DNS labels). */
ts_status meter_discover_spec(const char *spec, char *buf, size_t size,
                              struct meter_discover_opts *o, struct ts_error *err);

/* The ready endpoints of an EndpointSliceList (JSON, len bytes) as targets on
 * port (a name or a number; NULL: each slice's only port), sorted by URL,
 * each once. An endpoint whose conditions.ready is false is left out (absent
 * means ready, as the API defines it). *out is malloc'd (free it), *n may be
 * 0. TS_INVALID names what is wrong and where (items[i].endpoints[j]...). */
ts_status meter_discover_parse(const char *json, size_t len, const char *port,
                               struct meter_target **out, size_t *n, struct ts_error *err);

/* GET the Service's EndpointSlices through the API (f: a meter_fetch
 * handle) and parse them. TS_IO when the API cannot be read (the message has
 * the status and the API's own reason), else as meter_discover_parse. */
ts_status meter_discover(struct meter_fetch *f, const struct meter_discover_opts *o,
                         struct meter_target **out, size_t *n, struct ts_error *err);

#endif
