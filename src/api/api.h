/*
 * api.h - the JSON API under /api/v1/ (docs/api.md) as functions: an
 * identity, a route and its query parameters, and the loaded state in; a
 * status, a content type and a bounded body out. Who may see what is
 * decided here, for every route. The HTTP side (serve/) only finds the
 * identity's credentials and hands the answer over. Reads the metering
 * store (--db) for the metering and ledger routes; nothing else.
 */
#ifndef API_API_H
#define API_API_H

#include <stddef.h>
#include <stdint.h>
#include "catalog/catalog.h"
#include "decide/decide.h"
#include "plan/plan.h"
#include "reconf/reconf.h"
#include "spec/model.h"
#include "util/error.h"
#include "util/limits.h"
#include "util/sbuf.h"

/* ---- identities (ident.c) ---- */

enum api_role { API_ROLE_NONE, API_ROLE_OPERATOR, API_ROLE_TENANT };

struct api_identity {
    int role;                   /* enum api_role */
    char tenant[API_NAME_MAX];  /* role tenant */
    const char *via;            /* "token" or "certificate" */
    char subject[API_NAME_MAX]; /* "sha256:" + 12 hex, or "cn:..."/"dns:..." */
};

struct api_idents; /* a parsed identities file */

/* Parse an identities file's text (docs/api.md); problems go to diag with
 * file:line:col. TS_OK with *out set, or an error and *out NULL. */
ts_status api_idents_parse(const char *text, size_t len, const char *file, struct api_idents **out,
                           struct ts_diag *diag);
void api_idents_free(struct api_idents *ids);
/* 1 and *who filled when the Authorization header value names a known
 * token ("Bearer tsk_..."); compared in constant time against every entry. */
int api_ident_token(const struct api_idents *ids, const char *authorization,
                    struct api_identity *who);
/* 1 and *who filled when one of a verified certificate's names (its CN as
 * "cn:NAME", each DNS SAN as "dns:NAME") has a cert line. */
int api_ident_cert(const struct api_idents *ids, const char *const *names, size_t n,
                   struct api_identity *who);
/* Number of cert lines (serve asks for client certificates only then). */
size_t api_idents_certs(const struct api_idents *ids);

/* A new token from 32 random bytes: token gets "tsk_" + 64 hex, line the
 * identities file line for it (role operator when tenant is NULL). */
#define API_TOKEN_LEN 68
void api_token_new(const unsigned char rnd[32], const char *tenant, char token[API_TOKEN_LEN + 1],
                   struct ts_sbuf *line);

/* ---- the state a request reads ---- */

struct api_denial { /* one admission denial, as /validate answered it */
    int64_t ts_ms;
    char uid[128], kind[64], ns[128], tenant[64], rule[48], message[1024];
};

struct inv_node;

struct api_state {
    const struct spec_model *model;
    const struct cat_catalog *cat;
    const struct decide_result *decisions;
    const struct plan *plan;
    unsigned long generation;
    const char *db_url;                /* metering store, NULL: none */
    int64_t interval_ms;               /* scrape interval of its samples */
    const struct reconf_plan *current; /* --current, NULL: none */
    const struct api_denial *denials;  /* newest first */
    size_t ndenials;
    unsigned long denials_dropped;
    int64_t now_ms;             /* wall clock, for defaults ("at" of holders) */
    const struct inv_node *inv; /* the nodes' inventories (serve --inventory) */
    size_t ninv;
};

struct api_param {
    const char *key, *value; /* decoded; value NULL for "?key" */
    int cut;                 /* the decoded key or value held a NUL byte (%00): not text */
};

struct api_answer {
    unsigned status;
    const char *type;                     /* Content-Type */
    const char *allow, *www_authenticate; /* headers to add, or NULL */
    struct ts_sbuf body;
};

/* Route names (without the /api/v1 prefix) for tables and tests. */
extern const char *const api_routes[];

/* Answer GET /api/v1<path>?params for who (role NONE: 401). out->body is
 * initialised here (capped at API_ANSWER_MAX); release it with
 * ts_sbuf_release. */
void api_get(const struct api_state *s, const struct api_identity *who, const char *path,
             const struct api_param *params, size_t nparams, struct api_answer *out);
/* The error answer for status (401, 404, 405 ...) with message. */
void api_error(struct api_answer *out, unsigned status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
