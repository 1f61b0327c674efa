/*
 * internal.h - what the files of api/ share: one request being answered
 * (its parameters, which of them a route read, the answer), parameter
 * readers that answer 400 naming the parameter, the role check, pages and
 * the JSON answer. Not part of api's interface.
 */
#ifndef API_INTERNAL_H
#define API_INTERNAL_H

#include <jansson.h>
#include "api/api.h"

struct api__req {
    const struct api_state *s;
    const struct api_identity *who;
    const char *path; /* the route, e.g. "/violations", for next links */
    const struct api_param *p;
    size_t np;
    unsigned used; /* bit i: p[i] was read by the route */
    struct api_answer *out;
    int failed; /* an error answer is written: stop */
};

struct api__page {
    size_t limit, offset;
};

/* The value of key (NULL when absent); marks it read. A key given twice
 * or a value that is not UTF-8 text answers 400 (r->failed). */
const char *api__param(struct api__req *r, const char *key);
/* After a route has read what it takes: 400 naming the first parameter it
 * did not read. Returns 0 when r failed. */
int api__done(struct api__req *r);
/* Time (RFC 3339 or Unix seconds) of key, def when absent; required:
 * absent is 400. 0 when r failed. */
int api__time(struct api__req *r, const char *key, int required, int64_t def, int64_t *ms);
int api__page(struct api__req *r, struct api__page *pg);
/* The tenant a request is about: key's value (NULL: every tenant for an
 * operator, its own for a tenant caller). Another tenant's name from a
 * tenant caller is 403; a name the spec lacks is 404. 0 when r failed. */
int api__tenant(struct api__req *r, const char *key, const char **tenant);
/* 1 when who may see data of tenant name. */
int api__may_see(const struct api_identity *who, const char *name);
/* Fail r with an error answer. */
void api__fail(struct api__req *r, unsigned status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Answer doc (taken; NULL: out of memory is 500) as 200 JSON, sorted
 * keys; past API_ANSWER_MAX 413 naming narrow. */
void api__send(struct api__req *r, json_t *doc, const char *narrow);
/* The page envelope of items (taken, all of them; pg slices):
 * items, total, limit, offset, next. */
json_t *api__paged(struct api__req *r, json_t *items, const struct api__page *pg);
/* A store for the metering routes: 404 without --db, 503 when it cannot
 * be opened. NULL when r failed. */
struct store;
struct store *api__store(struct api__req *r);

/* Routes (route.c, plan.c, usage.c, ledger.c). */
void api__whoami(struct api__req *r);
void api__plan(struct api__req *r);
void api__tenants(struct api__req *r, const char *name);
void api__usage(struct api__req *r);
void api__invoices(struct api__req *r);
void api__holders(struct api__req *r);
void api__history(struct api__req *r);
void api__violations(struct api__req *r);
void api__denials(struct api__req *r);
void api__replan(struct api__req *r);

/* Set `uuid` and `holder` (null when unknown) on every card and instance
 * of the plan document doc from the ledger of s's store (custody.c). */
void api__plan_custody(const struct api_state *s, json_t *doc);

/* The plan's decisions of tenant (NULL: all) as report's JSON rows. */
json_t *api__decisions(const struct api_state *s, const char *tenant);

#endif
