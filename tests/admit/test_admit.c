/*
 * test_admit.c - the admission policy.
 *
 * The table: every tests/fixtures/admission/NN-name.json (an AdmissionReview
 * body, policy from examples/four-h100.yaml) and sharing/NN-name.json
 * (policy from sharing/spec.yaml: MPS, memory fractions, time-slicing, a
 * dedicated and a VM tenant, a two-GPU job) with its NN-name.expect: HTTP
 * status, allowed, a substring of the message (or -). Both policies run with
 * --shim-path /usr/lib/tessera/libtessera-cuda.so and the default runtime
 * class (nvidia), as the end-to-end test serves them.
 * Then what the table cannot show: the policy built from a plan (names from
 * render's helpers, caps in bytes, planned nodes), quantities, the response
 * shape and audit annotations, message style, the plan freed before use,
 * many denials in one message, concurrent reviews on one policy, and bodies
 * built in C (depth at the limit, brackets inside strings).
 */
#include "helpers.h"

#include <dirent.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admit/admit.h"
#include "admit/internal.h"

#define SHIM "/usr/lib/tessera/libtessera-cuda.so"

struct fixture {
    char name[256];
    char *body;
    size_t len;
    int status, allowed;
    char substr[1024];
};

struct table {
    struct fixture *f;
    size_t n;
};

static int cmp_fixture(const void *a, const void *b)
{
    return strcmp(((const struct fixture *)a)->name, ((const struct fixture *)b)->name);
}

static void load_expect(const char *dir, struct fixture *f)
{
    char path[1200], allowed[16] = "";
    snprintf(path, sizeof(path), "%s/%.*s.expect", dir, (int)(strlen(f->name) - 5), f->name);
    FILE *e = fopen(path, "r");
    if (!e)
        fail_msg("%s: no .expect file", path);
    if (fscanf(e, "%d %15s ", &f->status, allowed) != 2 || !fgets(f->substr, sizeof(f->substr), e))
        fail_msg("%s: want status, allowed, substring", path);
    fclose(e);
    f->substr[strcspn(f->substr, "\n")] = '\0';
    f->allowed = strcmp(allowed, "true") == 0;
}

static struct table load_table(const char *rel)
{
    struct table t = {0};
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", th_src_path(rel));
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
            continue;
        t.f = realloc(t.f, (t.n + 1) * sizeof(*t.f));
        struct fixture *f = &t.f[t.n++];
        memset(f, 0, sizeof(*f));
        snprintf(f->name, sizeof(f->name), "%s", de->d_name);
        char path[1400];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        f->body = th_read(path, &f->len);
        assert_non_null(f->body);
        load_expect(dir, f);
    }
    closedir(d);
    qsort(t.f, t.n, sizeof(*t.f), cmp_fixture);
    return t;
}

static void free_table(struct table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->f[i].body);
    free(t->f);
}

/* Run one review; out is released by the caller. */
static json_t *run(const struct admit_policy *pol, const char *body, size_t len,
                   struct admit_verdict *v, struct ts_sbuf *out)
{
    ts_sbuf_init(out, 1 << 20);
    admit_review(pol, body, len, out, v);
    assert_int_equal(ts_sbuf_status(out), TS_OK);
    json_error_t e;
    json_t *doc = json_loads(ts_sbuf_str(out), 0, &e);
    if (!doc)
        fail_msg("response is not JSON: %s: %s", e.text, ts_sbuf_str(out));
    return doc;
}

static json_t *run_text(const struct admit_policy *pol, const char *body, struct admit_verdict *v)
{
    struct ts_sbuf out;
    json_t *doc = run(pol, body, strlen(body), v, &out);
    ts_sbuf_release(&out);
    return doc;
}

/* The request uid of a fixture, or NULL when it has none readable. */
static json_t *request_uid(const struct fixture *f)
{
    json_t *doc = json_loadb(f->body, f->len, 0, NULL);
    json_t *uid = json_incref(json_object_get(json_object_get(doc, "request"), "uid"));
    json_decref(doc);
    return uid;
}

/* Checks one fixture; returns a malloc'd complaint or NULL. */
static char *check_fixture(const struct admit_policy *pol, const struct fixture *f)
{
    struct admit_verdict v;
    struct ts_sbuf out;
    json_t *doc = run(pol, f->body, f->len, &v, &out);
    const char *msg = v.http_status == 400
                          ? json_string_value(json_object_get(doc, "error"))
                          : json_string_value(json_object_get(
                                json_object_get(json_object_get(doc, "response"), "status"),
                                "message"));
    json_t *resp = json_object_get(doc, "response");
    json_t *uid = request_uid(f);
    char *why = NULL;
    if (v.http_status != f->status || (f->status == 200 && v.allowed != f->allowed))
        why = "verdict";
    else if (f->status == 200 && (!json_equal(json_object_get(resp, "uid"), uid) ||
                                  json_is_true(json_object_get(resp, "allowed")) != f->allowed))
        why = "response uid/allowed";
    else if (f->status == 400 && (json_object_size(doc) != 1 || !msg))
        why = "400 body";
    else if (strcmp(f->substr, "-") != 0 && (!msg || !strstr(msg, f->substr)))
        why = "message";
    char *complaint = NULL;
    if (why && asprintf(&complaint, "%s: %s: got %d %s: %s\n    want %d %s: %s", f->name, why,
                        v.http_status, v.allowed ? "allowed" : "denied", ts_sbuf_str(&out),
                        f->status, f->allowed ? "allowed" : "denied", f->substr) < 0)
        complaint = NULL;
    json_decref(uid);
    json_decref(doc);
    ts_sbuf_release(&out);
    return complaint;
}

static void run_table(const char *rel, const char *spec, size_t *count, size_t *denied)
{
    struct admit_policy *pol = th_admit_policy(spec, SHIM);
    struct table t = load_table(rel);
    int failures = 0;
    for (size_t i = 0; i < t.n; i++) {
        char *complaint = check_fixture(pol, &t.f[i]);
        if (complaint) {
            fprintf(stderr, "  %s/%s\n", rel, complaint);
            failures++;
        }
        free(complaint);
        *denied += t.f[i].status == 200 && !t.f[i].allowed;
    }
    *count += t.n;
    free_table(&t);
    admit_policy_free(pol);
    if (failures)
        fail_msg("%d of the %s table's fixtures failed", failures, rel);
}

static void test_table(void **state)
{
    (void)state;
    size_t count = 0, denied = 0;
    run_table("tests/fixtures/admission", "examples/four-h100.yaml", &count, &denied);
    run_table("tests/fixtures/admission/sharing", "tests/fixtures/admission/sharing/spec.yaml",
              &count, &denied);
    assert_true(count >= 60);
    assert_true(denied >= 30);
}

/* ---- the policy ---- */

static void test_policy_worked_example(void **state)
{
    (void)state;
    struct admit_policy *pol = th_admit_policy("examples/four-h100.yaml", SHIM);
    const struct ad_ns *c = ad_ns_find(pol, "client-c-prod");
    assert_non_null(c);
    assert_string_equal(c->tenant, "client-c");
    assert_int_equal(c->nents, 1);
    assert_string_equal(c->ents[0]->cls, "tessera-h100-80gb-sxm-mig-1g.10gb");
    assert_string_equal(c->ents[0]->res, "nvidia.com/mig-1g.10gb");
    assert_int_equal(c->ents[0]->per_claim, 1);
    assert_string_equal(c->ents[0]->desc, "mig 1g.10gb");
    assert_int_equal(c->nnodes, 1);
    assert_string_equal(c->nodes[0], "gpu-node-1");
    const struct ad_ns *rag = ad_ns_find(pol, "rag-e");
    assert_non_null(rag);
    assert_int_equal(rag->nents, 0);
    assert_int_equal(rag->nnodes, 0);
    const struct ad_ns *train = ad_ns_find(pol, "platform-training");
    assert_string_equal(train->ents[0]->cls, "tessera-h100-80gb-sxm-whole");
    assert_string_equal(train->ents[0]->res, "nvidia.com/gpu");
    const struct ad_ns *dev = ad_ns_find(pol, "platform-dev");
    assert_string_equal(dev->ents[0]->res, "nvidia.com/gpu.shared");
    assert_string_equal(dev->nodes[0], "gpu-node-1"); /* a guest on card 3 */
    assert_null(ad_ns_find(pol, "default"));
    assert_null(ad_ns_find(pol, ""));
    assert_true(ad_is_fleet_node(pol, "gpu-node-1"));
    assert_false(ad_is_fleet_node(pol, "gpu-node-2"));
    admit_policy_free(pol);
}

static void test_policy_sharing(void **state)
{
    (void)state;
    struct admit_policy *pol = th_admit_policy("tests/fixtures/admission/sharing/spec.yaml", SHIM);
    const struct ad_ns *s = ad_ns_find(pol, "search-prod");
    assert_int_equal(s->nents, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_string_equal(s->ents[i]->cls, "tessera-h100-80gb-sxm-mps");
        assert_int_equal(s->ents[i]->mech, DECIDE_MPS);
    }
    const struct ad_ent *rer = strcmp(s->ents[0]->workload, "reranker") == 0 ? s->ents[0]
                                                                             : s->ents[1];
    assert_int_equal(rer->sm_percent, 20);
    assert_string_equal(rer->cap, "14Gi");
    assert_true(rer->cap_bytes == 14.0 * 1024 * 1024 * 1024);
    const struct ad_ns *a = ad_ns_find(pol, "analytics-batch");
    assert_string_equal(a->ents[0]->res, "nvidia.com/gpu.memory");
    assert_true(a->ents[0]->res_max == 20.0 * 1024 * 1024 * 1024);
    const struct ad_ns *lab = ad_ns_find(pol, "lab-vms");
    assert_null(lab->ents[0]->cls);
    assert_string_equal(lab->ents[0]->res, "nvidia.com/NVIDIA_H100-1-10C");
    const struct ad_ns *t = ad_ns_find(pol, "trainer-jobs");
    assert_int_equal(t->ents[0]->per_claim, 2);
    assert_string_equal(t->nodes[0], "gpu-train");
    assert_int_equal(ad_ns_find(pol, "vault-prod")->contract, SPEC_CONTRACT_DEDICATED);
    admit_policy_free(pol);
}

static void test_policy_build_errors(void **state)
{
    (void)state;
    struct admit_policy *pol = (void *)1;
    struct ts_error err = {0};
    assert_int_equal(admit_policy_build(NULL, NULL, &pol, &err), TS_INVALID);
    assert_null(pol);
    assert_non_null(strstr(err.msg, "plan"));
    admit_policy_free(NULL);
}

/* ---- quantities ---- */

static void test_quantity(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        double v;
    } good[] = {
        {"1", 1},
        {"0", 0},
        {"14Gi", 14.0 * (1 << 30)},
        {"14336Mi", 14.0 * (1 << 30)},
        {"512Ki", 512.0 * 1024},
        {"2Ti", 2.0 * 1099511627776.0},
        {"1k", 1000},
        {"1K", 1000},
        {"15G", 15e9},
        {"3M", 3e6},
        {"2T", 2e12},
        {"500m", 0.5},
        {"1.5", 1.5},
        {"1.5Gi", 1.5 * (1 << 30)},
        {".5", 0.5},
        {"1e3", 1000},
        {"1E3", 1000},
        {"2E", 2e18},
        {"+4", 4},
        {"-1", -1},
        {"15032385536", 15032385536.0},
    };
    static const char *const bad[] = {"",     "Gi",    "1.",  "1..2", "1 Gi", " 1",
                                      "1Gb",  "0x10",  "inf", "nan",  "1e",   "1e+",
                                      "1GiB", "1.5.5", "--1", "1i",   "1m1"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        double v = -42;
        if (ad_quantity_str(good[i].s, &v) != 0 || v != good[i].v)
            fail_msg("%s: got %g, want %g", good[i].s, v, good[i].v);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        double v;
        if (ad_quantity_str(bad[i], &v) == 0)
            fail_msg("%s: accepted as %g", bad[i], v);
    }
    json_t *n = json_integer(3), *r = json_real(0.25), *t = json_true();
    double v;
    assert_int_equal(ad_quantity(n, &v), 0);
    assert_true(v == 3);
    assert_int_equal(ad_quantity(r, &v), 0);
    assert_true(v == 0.25);
    assert_int_equal(ad_quantity(t, &v), -1);
    json_decref(n);
    json_decref(r);
    json_decref(t);
}

/* ---- responses ---- */

#define POD(ns, extra)                                                                   \
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{" \
    "\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"     \
    "\"operation\":\"CREATE\",\"namespace\":\"" ns "\",\"object\":{\"spec\":{" extra "}}}}"

static void test_audit_annotations(void **state)
{
    (void)state;
    struct admit_policy *pol = th_admit_policy("examples/four-h100.yaml", SHIM);
    struct admit_verdict v;
    json_t *doc = run_text(pol,
                           POD("client-c-prod",
                               "\"containers\":[{\"name\":\"a\","
                               "\"resources\":{\"limits\":{\"nvidia.com/mig-1g.10gb\":\"1\"}}}]"),
                           &v);
    json_t *resp = json_object_get(doc, "response");
    assert_string_equal(json_string_value(json_object_get(doc, "apiVersion")),
                        "admission.k8s.io/v1");
    assert_string_equal(json_string_value(json_object_get(doc, "kind")), "AdmissionReview");
    assert_string_equal(json_string_value(json_object_get(resp, "uid")), "u-1");
    assert_true(json_is_true(json_object_get(resp, "allowed")));
    assert_null(json_object_get(resp, "status"));
    json_t *ann = json_object_get(resp, "auditAnnotations");
    assert_string_equal(json_string_value(json_object_get(ann, "tenant")), "client-c");
    assert_string_equal(json_string_value(json_object_get(ann, "mechanism")), "mig");
    assert_string_equal(json_string_value(json_object_get(ann, "profile")), "1g.10gb");
    assert_string_equal(v.tenant, "client-c");
    assert_string_equal(v.kind, "Pod");
    assert_string_equal(v.ns, "client-c-prod");
    assert_string_equal(v.uid, "u-1");
    json_decref(doc);
    /* no GPU in a tenant's namespace */
    doc = run_text(pol, POD("client-c-prod", "\"containers\":[{\"name\":\"a\"}]"), &v);
    ann = json_object_get(json_object_get(doc, "response"), "auditAnnotations");
    assert_string_equal(json_string_value(json_object_get(ann, "tenant")), "client-c");
    assert_string_equal(json_string_value(json_object_get(ann, "mechanism")), "none");
    json_decref(doc);
    /* a namespace in no tenant's spec: denied (fail closed), rule no-tenant */
    doc = run_text(pol, POD("default", "\"containers\":[{\"name\":\"a\"}]"), &v);
    assert_false(v.allowed);
    assert_string_equal(v.rule, "no-tenant");
    assert_string_equal(v.tenant, "");
    assert_non_null(strstr(v.message, "no Tenant's spec.namespaces lists it"));
    json_decref(doc);
    /* a pod claiming render's template names the workload */
    doc = run_text(pol,
                   POD("client-a-prod",
                       "\"containers\":[{\"name\":\"a\"}],\"resourceClaims\":"
                       "[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"chat-13b\"}]"),
                   &v);
    ann = json_object_get(json_object_get(doc, "response"), "auditAnnotations");
    assert_string_equal(json_string_value(json_object_get(ann, "profile")), "3g.40gb");
    json_decref(doc);
    admit_policy_free(pol);
}

/* ---- the Pod Security floor (issue 13) ---- */

/* The verdict of a pod in ns whose one container carries extra (JSON
 * members after "name"); rule and message into v. */
/* The pod-level half of what the restricted level asks of every pod. */
#define RESTRICTED_POD \
    "\"securityContext\":{\"runAsNonRoot\":true,\"seccompProfile\":{\"type\":\"RuntimeDefault\"}}"

static void verdict_of(const struct admit_policy *pol, const char *ns, const char *ctr_extra,
                       const char *pod_extra, struct admit_verdict *v)
{
    char body[4096];
    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
             "\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
             "\"operation\":\"CREATE\",\"namespace\":\"%s\",\"object\":{\"spec\":{"
             "\"containers\":[{\"name\":\"a\"%s%s}]%s%s}}}}",
             ns, ctr_extra[0] ? "," : "", ctr_extra, pod_extra[0] ? "," : "", pod_extra);
    json_decref(run_text(pol, body, v));
}

/* Every Linux capability (linux/capability.h, 6.x): the baseline list is
 * allowed as Kubernetes spells it (upper case, no CAP_; "cap_chown" is
 * denied as Kubernetes denies it), every other one denied in any spelling;
 * the restricted level allows NET_BIND_SERVICE only; a contract adds its
 * own, in any spelling. */
static void test_capabilities_floor(void **state)
{
    (void)state;
    static const char *const all[] = {
        "CHOWN",
        "DAC_OVERRIDE",
        "DAC_READ_SEARCH",
        "FOWNER",
        "FSETID",
        "KILL",
        "SETGID",
        "SETUID",
        "SETPCAP",
        "LINUX_IMMUTABLE",
        "NET_BIND_SERVICE",
        "NET_BROADCAST",
        "NET_ADMIN",
        "NET_RAW",
        "IPC_LOCK",
        "IPC_OWNER",
        "SYS_MODULE",
        "SYS_RAWIO",
        "SYS_CHROOT",
        "SYS_PTRACE",
        "SYS_PACCT",
        "SYS_ADMIN",
        "SYS_BOOT",
        "SYS_NICE",
        "SYS_RESOURCE",
        "SYS_TIME",
        "SYS_TTY_CONFIG",
        "MKNOD",
        "LEASE",
        "AUDIT_WRITE",
        "AUDIT_CONTROL",
        "SETFCAP",
        "MAC_OVERRIDE",
        "MAC_ADMIN",
        "SYSLOG",
        "WAKE_ALARM",
        "BLOCK_SUSPEND",
        "AUDIT_READ",
        "PERFMON",
        "BPF",
        "CHECKPOINT_RESTORE",
        "ALL",
    };
    static const char *const baseline[] = {
        "AUDIT_WRITE",      "CHOWN",   "DAC_OVERRIDE", "FOWNER",  "FSETID", "KILL",      "MKNOD",
        "NET_BIND_SERVICE", "SETFCAP", "SETGID",       "SETPCAP", "SETUID", "SYS_CHROOT"};
    struct admit_policy *four = th_admit_policy("examples/four-h100.yaml", SHIM);
    struct admit_policy *sharing = th_admit_policy("tests/fixtures/admission/sharing/spec.yaml",
                                                   SHIM);
    size_t denied = 0;
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        int in_baseline = 0;
        for (size_t b = 0; b < sizeof(baseline) / sizeof(baseline[0]); b++)
            in_baseline |= strcmp(all[i], baseline[b]) == 0;
        char extra[200];
        struct admit_verdict v;
        for (int form = 0; form < 2; form++) {
            char cap[64];
            snprintf(cap, sizeof(cap), "%s%s", form ? "cap_" : "", all[i]);
            if (form)
                for (char *p = cap; *p; p++)
                    *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
            snprintf(extra, sizeof(extra),
                     "\"securityContext\":{\"allowPrivilegeEscalation\":false,"
                     "\"capabilities\":{\"add\":[\"%s\"],\"drop\":[\"ALL\"]}}",
                     cap);
            /* the standards' sets as Kubernetes spells them; a contract's in any */
            verdict_of(four, "client-c-prod", extra, "", &v); /* baseline (default) */
            if (v.allowed != (in_baseline && !form))
                fail_msg("baseline: %s: allowed=%d", cap, v.allowed);
            if (!v.allowed)
                assert_string_equal(v.rule, "escape-hatch/capabilities");
            denied += !v.allowed;
            verdict_of(sharing, "vault-prod", extra, RESTRICTED_POD, &v); /* restricted */
            if (v.allowed != (strcmp(all[i], "NET_BIND_SERVICE") == 0 && !form))
                fail_msg("restricted: %s: allowed=%d", cap, v.allowed);
            verdict_of(sharing, "trainer-jobs", extra, "", &v); /* baseline + IPC_LOCK */
            if (v.allowed != ((in_baseline && !form) || strcmp(all[i], "IPC_LOCK") == 0))
                fail_msg("contract: %s: allowed=%d", cap, v.allowed);
        }
    }
    assert_int_equal(denied, 2 * (sizeof(all) / sizeof(all[0]) - 13) + 13);
    admit_policy_free(four);
    admit_policy_free(sharing);
}

/* Entries are counted before parsing: past AD_ENTRIES_MAX a 400 names the
 * limit and where it was passed; just under it the review is decided. */
static void test_entries_limit(void **state)
{
    (void)state;
    struct admit_policy *pol = th_admit_policy("examples/four-h100.yaml", SHIM);
    for (int over = 0; over < 2; over++) {
        /* the envelope holds a few dozen entries besides the list */
        size_t n = over ? AD_ENTRIES_MAX : AD_ENTRIES_MAX - 64;
        struct ts_sbuf b;
        ts_sbuf_init(&b, 1u << 24);
        ts_sbuf_puts(&b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                         "\"request\":{\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":"
                         "\"v1\",\"kind\":\"Pod\"},\"operation\":\"CREATE\",\"namespace\":"
                         "\"client-c-prod\",\"object\":{\"spec\":{\"containers\":[{\"name\":"
                         "\"a\",\"args\":[\"0\"");
        for (size_t i = 1; i < n; i++)
            ts_sbuf_puts(&b, ",\"0\"");
        ts_sbuf_puts(&b, "]}]}}}}");
        struct admit_verdict v;
        json_decref(run_text(pol, ts_sbuf_str(&b), &v));
        if (over) {
            assert_int_equal(v.http_status, 400);
            assert_non_null(strstr(v.message, "more than 65536 entries"));
        } else if (v.http_status != 200) {
            fail_msg("under the limit: %d %s", v.http_status, v.message);
        }
        ts_sbuf_release(&b);
    }
    admit_policy_free(pol);
}

/* Without --shim-path the policy takes render's path where the plan needs
 * the shim (the worked example's time-slicing dev row). */
static void test_shim_default_path(void **state)
{
    (void)state;
    struct th_job j;
    th_run_file(&j, th_src_path("examples/four-h100.yaml"), PLAN_SOLVER_HEURISTIC);
    assert_int_equal(j.st, TS_OK);
    struct admit_options opt = {NULL, NULL};
    struct admit_policy *pol = NULL;
    struct ts_error err = {0};
    assert_int_equal(admit_policy_build(j.plan, &opt, &pol, &err), TS_OK);
    th_free(&j);
    assert_non_null(pol->shim);
    assert_string_equal(pol->shim, "/opt/tessera/lib/libtessera-cuda.so");
    admit_policy_free(pol);
}

/* Each new class with its rule id. */
static void test_pod_security_rules(void **state)
{
    (void)state;
    static const struct {
        const char *ns, *ctr, *pod, *rule; /* rule "" = allowed */
    } cases[] = {
        {"client-c-prod", "", "\"hostNetwork\":true", "escape-hatch/host-network"},
        {"client-c-prod", "\"ports\":[{\"containerPort\":80,\"hostPort\":80}]", "",
         "escape-hatch/host-port"},
        {"client-c-prod", "\"ports\":[{\"containerPort\":80}]", "", ""},
        {"client-c-prod", "\"securityContext\":{\"procMount\":\"Unmasked\"}", "",
         "escape-hatch/proc-mount"},
        {"client-c-prod", "\"securityContext\":{\"procMount\":\"Default\"}", "", ""},
        {"client-c-prod", "\"env\":[{\"name\":\"LD_AUDIT\",\"value\":\"/a.so\"}]", "",
         "escape-hatch/loader"},
        {"client-c-prod", "\"env\":[{\"name\":\"LD_PROFILE\",\"value\":\"x\"}]", "",
         "escape-hatch/loader"},
        {"client-c-prod", "\"env\":[{\"name\":\"LD_LIBRARY_PATH\",\"value\":\"/x\"}]", "", ""},
        {"client-c-prod", "\"env\":[{\"name\":\"NVIDIA_IMEX_CHANNELS\",\"value\":\"all\"}]", "",
         "escape-hatch/env"},
        {"client-c-prod", "\"env\":[{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"void\"}]", "",
         ""},
        {"client-c-prod", "\"env\":[{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"none\"}]", "",
         ""},
        {"client-c-prod", "\"env\":[{\"name\":\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"VOID\"}]", "",
         "escape-hatch/env"},
        {"client-c-prod", "", "\"volumes\":[{\"name\":\"h\",\"hostPath\":{\"path\":\"/etc\"}}]",
         "escape-hatch/host-path"},
        {"client-c-prod", "\"volumeMounts\":[{\"name\":\"s\",\"mountPath\":\"/s\"}]",
         "\"volumes\":[{\"name\":\"s\",\"hostPath\":{\"path\":\"" SHIM "\",\"type\":\"File\"}}]",
         "escape-hatch/host-path-writable"},
        {"client-c-prod",
         "\"volumeMounts\":[{\"name\":\"s\",\"mountPath\":\"/s\",\"readOnly\":true}]",
         "\"volumes\":[{\"name\":\"s\",\"hostPath\":{\"path\":\"" SHIM "\",\"type\":\"File\"}}]",
         ""},
        {"trainer-jobs", "", "\"volumes\":[{\"name\":\"h\",\"hostPath\":{\"path\":\"/scratch\"}}]",
         ""},
        {"trainer-jobs", "",
         "\"volumes\":[{\"name\":\"h\",\"hostPath\":{\"path\":\"/scratch/../dev/nvidia0\"}}]",
         "escape-hatch/host-path"},
        {"nobody-lists-me", "", "", "no-tenant"},
        {"platform-dev", "\"resources\":{\"limits\":{\"nvidia.com/gpu.shared\":1}}", "",
         "shim/missing"},
    };
    struct admit_policy *four = th_admit_policy("examples/four-h100.yaml", SHIM);
    struct admit_policy *sharing = th_admit_policy("tests/fixtures/admission/sharing/spec.yaml",
                                                   SHIM);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct admit_verdict v;
        int trainer = strcmp(cases[i].ns, "trainer-jobs") == 0;
        verdict_of(trainer ? sharing : four, cases[i].ns, cases[i].ctr, cases[i].pod, &v);
        if (v.http_status != 200 || strcmp(v.rule, cases[i].rule) != 0 ||
            v.allowed != !cases[i].rule[0])
            fail_msg("case %zu: HTTP %d allowed=%d rule %s, want %s: %s", i, v.http_status,
                     v.allowed, v.rule, cases[i].rule, v.message);
    }
    admit_policy_free(four);
    admit_policy_free(sharing);
}

static void test_denial_shape(void **state)
{
    (void)state;
    struct admit_policy *pol = th_admit_policy("examples/four-h100.yaml", SHIM);
    struct admit_verdict v;
    json_t *doc = run_text(pol,
                           POD("client-a-prod",
                               "\"hostPID\":true,\"containers\":[{\"name\":"
                               "\"a\",\"securityContext\":{\"privileged\":true}}]"),
                           &v);
    json_t *resp = json_object_get(doc, "response");
    assert_false(json_is_true(json_object_get(resp, "allowed")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(resp, "status"), "code")),
                     403);
    assert_null(json_object_get(resp, "auditAnnotations"));
    assert_int_equal(v.http_status, 200);
    assert_false(v.allowed);
    assert_string_equal(v.rule, "escape-hatch/privileged");
    assert_non_null(strstr(v.message, "; the pod sets hostPID"));
    json_decref(doc);
    admit_policy_free(pol);
}

/* Every message of the tables starts lowercase and has no trailing period;
 * every denial names its rule. */
static void message_style(const char *rel, const char *spec)
{
    struct admit_policy *pol = th_admit_policy(spec, SHIM);
    struct table t = load_table(rel);
    for (size_t i = 0; i < t.n; i++) {
        struct admit_verdict v;
        struct ts_sbuf out;
        json_t *doc = run(pol, t.f[i].body, t.f[i].len, &v, &out);
        size_t n = strlen(v.message);
        if (n && ((v.message[0] >= 'A' && v.message[0] <= 'Z') || v.message[n - 1] == '.'))
            fail_msg("%s: %s", t.f[i].name, v.message);
        if (!v.allowed && v.http_status == 200 && !v.rule[0])
            fail_msg("%s: a denial without a rule", t.f[i].name);
        json_decref(doc);
        ts_sbuf_release(&out);
    }
    free_table(&t);
    admit_policy_free(pol);
}

static void test_message_style(void **state)
{
    (void)state;
    message_style("tests/fixtures/admission", "examples/four-h100.yaml");
    message_style("tests/fixtures/admission/sharing", "tests/fixtures/admission/sharing/spec.yaml");
}

static void test_many_denials_capped(void **state)
{
    (void)state;
    struct admit_policy *pol = th_admit_policy("examples/four-h100.yaml", SHIM);
    struct ts_sbuf body;
    ts_sbuf_init(&body, 1 << 20);
    ts_sbuf_puts(&body, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                        "\"request\":{\"uid\":\"u\",\"kind\":{\"kind\":\"Pod\"},\"namespace\":"
                        "\"client-a-prod\",\"object\":{\"spec\":{\"containers\":[");
    for (int i = 0; i < 200; i++)
        ts_sbuf_printf(&body,
                       "%s{\"name\":\"c%d-\xc3\xa9\xc3\xa9\xc3\xa9\",\"securityContext\":"
                       "{\"privileged\":true}}",
                       i ? "," : "", i);
    ts_sbuf_puts(&body, "]}}}}");
    struct admit_verdict v;
    json_t *doc = run_text(pol, ts_sbuf_str(&body), &v);
    const char *msg = json_string_value(
        json_object_get(json_object_get(json_object_get(doc, "response"), "status"), "message"));
    assert_non_null(msg);
    assert_true(strlen(msg) < AD_MSG_MAX);
    assert_non_null(strstr(msg, " more"));
    assert_non_null(strstr(msg, "container \"c0-"));
    json_decref(doc);
    ts_sbuf_release(&body);
    admit_policy_free(pol);
}

static void test_depth_limit(void **state)
{
    (void)state;
    struct admit_policy *pol = th_admit_policy("examples/four-h100.yaml", SHIM);
    struct ts_sbuf b;
    struct admit_verdict v;
    /* 64 levels in all are fine, 65 are not; brackets in strings do not count */
    for (int depth = 64; depth <= 65; depth++) {
        ts_sbuf_init(&b, 1 << 16);
        ts_sbuf_puts(&b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                         "\"request\":{\"uid\":\"u\",\"kind\":{\"kind\":\"Pod\"},\"object\":"
                         "{\"spec\":{\"containers\":[{\"name\":\"[[[[{{{{\\\"[[[\",\"args\":");
        for (int i = 0; i < depth - 6; i++)
            ts_sbuf_puts(&b, "[");
        for (int i = 0; i < depth - 6; i++)
            ts_sbuf_puts(&b, "]");
        ts_sbuf_puts(&b, "}]}}}}");
        json_decref(run_text(pol, ts_sbuf_str(&b), &v));
        if (depth == 64 && v.http_status != 200)
            fail_msg("depth 64: %s", v.message);
        if (depth == 65)
            assert_non_null(strstr(v.message, "nested deeper than 64"));
        ts_sbuf_release(&b);
    }
    /* NULL body, a NUL byte inside */
    struct ts_sbuf out;
    json_decref(run(pol, NULL, 0, &v, &out));
    assert_int_equal(v.http_status, 400);
    ts_sbuf_release(&out);
    json_decref(run(pol, "{\"a\":\"\0\"}", 9, &v, &out));
    assert_int_equal(v.http_status, 400);
    ts_sbuf_release(&out);
    admit_policy_free(pol);
}

/* ---- concurrency ---- */

struct worker {
    const struct admit_policy *pol;
    const struct table *t;
    char **answers; /* one per fixture, from the serial run */
    int mismatches;
};

static char *answer(const struct admit_policy *pol, const struct fixture *f)
{
    struct ts_sbuf out;
    struct admit_verdict v;
    ts_sbuf_init(&out, 1 << 20);
    admit_review(pol, f->body, f->len, &out, &v);
    char *s = strdup(ts_sbuf_str(&out));
    ts_sbuf_release(&out);
    return s;
}

static void *work(void *arg)
{
    struct worker *w = arg;
    for (int round = 0; round < 3; round++)
        for (size_t i = 0; i < w->t->n; i++) {
            if (w->t->f[i].len > ADMIT_BODY_MAX)
                continue;
            char *s = answer(w->pol, &w->t->f[i]);
            w->mismatches += strcmp(s, w->answers[i]) != 0;
            free(s);
        }
    return NULL;
}

static void test_concurrent_reviews(void **state)
{
    (void)state;
    struct admit_policy *pol = th_admit_policy("examples/four-h100.yaml", SHIM);
    struct table t = load_table("tests/fixtures/admission");
    char **answers = calloc(t.n, sizeof(*answers));
    for (size_t i = 0; i < t.n; i++)
        answers[i] = answer(pol, &t.f[i]);
    pthread_t th[4];
    struct worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){pol, &t, answers, 0};
        assert_int_equal(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].mismatches, 0);
    }
    for (size_t i = 0; i < t.n; i++)
        free(answers[i]);
    free(answers);
    free_table(&t);
    admit_policy_free(pol);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_policy_worked_example),
        cmocka_unit_test(test_policy_sharing),
        cmocka_unit_test(test_policy_build_errors),
        cmocka_unit_test(test_quantity),
        cmocka_unit_test(test_audit_annotations),
        cmocka_unit_test(test_capabilities_floor),
        cmocka_unit_test(test_pod_security_rules),
        cmocka_unit_test(test_shim_default_path),
        cmocka_unit_test(test_entries_limit),
        cmocka_unit_test(test_denial_shape),
        cmocka_unit_test(test_message_style),
        cmocka_unit_test(test_many_denials_capped),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_concurrent_reviews),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
