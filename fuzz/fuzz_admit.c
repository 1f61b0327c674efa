/*
 * fuzz_admit.c - libFuzzer target for admission: decoding and the policy
 * on any bytes. Two policies are built once, from the worked example
 * (examples/four-h100.yaml) and from the admission table's sharing spec
 * (MPS, memory fractions, time-slicing, dedicated, VM, multi-GPU), found
 * under $TESSERA_SRC or else the source tree this file was compiled from;
 * if they cannot be built the target aborts with a message (a setup error,
 * not a finding). Each input is reviewed by both. Invariants:
 *   - the HTTP status is 200 or 400 and the body is one JSON object;
 *   - a 400 body is {"error": "<where>: <what>"}, its message not empty;
 *   - a 200 body is an AdmissionReview v1 whose response.uid is the
 *     request's uid, whose allowed is the verdict's, with status.code 403
 *     and a non-empty message exactly when it denies;
 *   - the fast decoder (admit_review's) and the full one (jansson on the
 *     whole body) give the same verdict and the same response bytes.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admit/admit.h"
#include "admit/internal.h"
#include "catalog/catalog.h"
#include "decide/decide.h"
#include "plan/plan.h"
#include "spec/spec.h"

static const char *const specs[] = {
    "examples/four-h100.yaml",
    "tests/fixtures/admission/sharing/spec.yaml",
};
#define NSPECS (sizeof(specs) / sizeof(specs[0]))

static struct admit_policy *policies[NSPECS];

static void die(const char *what, const char *path)
{
    fprintf(stderr, "fuzz_admit: %s: %s (set TESSERA_SRC to the source tree)\n", path, what);
    abort();
}

/* The source tree: $TESSERA_SRC, else this file's directory's parent. */
static void source_root(char *buf, size_t size)
{
    const char *env = getenv("TESSERA_SRC");
    if (env && *env) {
        snprintf(buf, size, "%s", env);
        return;
    }
    snprintf(buf, size, "%s", __FILE__);
    char *slash = strrchr(buf, '/');
    if (slash)
        *slash = '\0'; /* .../fuzz */
    slash = strrchr(buf, '/');
    if (slash)
        *slash = '\0'; /* the tree */
    else
        snprintf(buf, size, ".");
}

static struct admit_policy *build(const char *root, const char *rel)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    const char *paths[] = {path};
    struct ts_diag *diag = calloc(1, sizeof(*diag));
    struct cat_catalog *cat = NULL;
    struct spec_model *m = NULL;
    struct decide_result *d = NULL;
    struct plan *p = NULL;
    struct admit_policy *pol = NULL;
    struct plan_options opt = {PLAN_SOLVER_HEURISTIC, 5.0};
    struct admit_options aopt = {NULL, "/usr/lib/tessera/libtessera-cuda.so"};
    struct ts_error err;
    if (!diag || cat_load(NULL, 0, &cat, diag) != TS_OK || spec_load(paths, 1, &m, diag) != TS_OK ||
        decide_run(m, cat, &d, diag) != TS_OK || plan_build(m, cat, d, &opt, &p, diag) != TS_OK ||
        admit_policy_build(p, &aopt, &pol, &err) != TS_OK)
        die(diag && diag->count ? diag->items[0].msg : "cannot build the policy", path);
    plan_free(p);
    decide_free(d);
    spec_model_free(m);
    cat_free(cat);
    free(diag);
    return pol;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char root[3072];
    source_root(root, sizeof(root));
    for (size_t i = 0; i < NSPECS; i++)
        policies[i] = build(root, specs[i]);
    return 0;
}

static void check_200(json_t *doc, const uint8_t *data, size_t size, const struct admit_verdict *v)
{
    json_t *resp = json_object_get(doc, "response");
    json_t *in = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    json_t *uid = json_object_get(json_object_get(in, "request"), "uid");
    json_t *status = json_object_get(resp, "status");
    const char *msg = json_string_value(json_object_get(status, "message"));
    const char *api = json_string_value(json_object_get(doc, "apiVersion"));
    if (!api || strcmp(api, "admission.k8s.io/v1") != 0 || !json_is_string(uid) ||
        !json_equal(uid, json_object_get(resp, "uid")) ||
        strcmp(json_string_value(uid), v->uid) != 0 ||
        json_is_true(json_object_get(resp, "allowed")) != v->allowed ||
        (!v->allowed && (json_integer_value(json_object_get(status, "code")) != 403 || !msg ||
                         !*msg || !v->rule[0])) ||
        (v->allowed && status))
        abort();
    json_decref(in);
}

/* The full decoder's verdict and response equal the fast one's. */
static void same_as_full(const struct admit_policy *pol, const uint8_t *data, size_t size,
                         const struct admit_verdict *v, const struct ts_sbuf *out)
{
    struct ts_sbuf full;
    struct admit_verdict fv;
    ts_sbuf_init(&full, 1 << 20);
    ad_review(pol, (const char *)data, size, &full, &fv, 1);
    if (memcmp(v, &fv, sizeof(fv)) != 0 || strcmp(ts_sbuf_str(out), ts_sbuf_str(&full)) != 0)
        abort();
    ts_sbuf_release(&full);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i < NSPECS; i++) {
        struct ts_sbuf out;
        struct admit_verdict v;
        ts_sbuf_init(&out, 1 << 20);
        admit_review(policies[i], (const char *)data, size, &out, &v);
        same_as_full(policies[i], data, size, &v, &out);
        json_t *doc = json_loads(ts_sbuf_str(&out), 0, NULL);
        if (ts_sbuf_status(&out) != TS_OK || !json_is_object(doc))
            abort();
        if (v.http_status == 400) {
            const char *e = json_string_value(json_object_get(doc, "error"));
            if (json_object_size(doc) != 1 || !e || !*e || strcmp(e, v.message) != 0)
                abort();
        } else if (v.http_status == 200) {
            check_200(doc, data, size, &v);
        } else {
            abort();
        }
        json_decref(doc);
        ts_sbuf_release(&out);
    }
    return 0;
}
