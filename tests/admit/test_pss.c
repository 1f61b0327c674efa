/*
 * test_pss.c - Kubernetes' own Pod Security fixtures (tests/fixtures/pss/,
 * v1.35, origin in its SOURCES.md) against the webhook's policy, in
 * namespaces render labels enforce: privileged (tests/fixtures/pss/spec.yaml),
 * where nothing but the webhook checks them:
 *   - baseline/fail denied, baseline/pass allowed, for a baseline tenant;
 *   - restricted/fail denied, restricted/pass allowed, for a restricted one;
 *   - restricted/pass allowed for the baseline tenant too (restricted is
 *     the stricter level), baseline/fail denied for the restricted one;
 * each by the fast and the full decoder, each denial by a Pod Security rule
 * (escape-hatch/... or restricted/...), never a 400. Each YAML pod is turned
 * into JSON here (spec's YAML parser; plain true/false/null and numbers
 * typed as YAML 1.2's core schema does) and put in an AdmissionReview.
 */
#include "helpers.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "admit/admit.h"
#include "admit/internal.h"
#include "spec/yaml.h"

static json_t *scalar(const struct spec_node *n)
{
    if (!n->plain)
        return json_stringn(n->value, n->len);
    if (strcmp(n->value, "true") == 0 || strcmp(n->value, "false") == 0)
        return json_boolean(n->value[0] == 't');
    if (strcmp(n->value, "null") == 0 || strcmp(n->value, "~") == 0)
        return json_null();
    char *end;
    long long i = strtoll(n->value, &end, 10);
    if (n->len && *end == '\0')
        return json_integer(i);
    return json_stringn(n->value, n->len);
}

static json_t *to_json(const struct spec_node *n)
{
    if (n->type == SPEC_NODE_SCALAR)
        return scalar(n);
    json_t *out = n->type == SPEC_NODE_SEQ ? json_array() : json_object();
    for (size_t i = 0; i < n->count; i += n->type == SPEC_NODE_SEQ ? 1 : 2) {
        if (n->type == SPEC_NODE_SEQ)
            json_array_append_new(out, to_json(n->items[i]));
        else
            json_object_set_new(out, n->items[i]->value, to_json(n->items[i + 1]));
    }
    return out;
}

/* The fixture at path as an AdmissionReview body in namespace ns. */
static char *review_of(const char *path, const char *ns)
{
    size_t len;
    char *text = th_read(path, &len);
    assert_non_null(text);
    struct ts_arena arena = {0};
    struct spec_doc *docs;
    size_t ndocs;
    struct ts_error err = {0};
    if (spec_yaml_parse(text, len, path, &arena, &docs, &ndocs, &err) != TS_OK || ndocs != 1)
        fail_msg("%s: not one YAML document: %s", path, err.msg);
    json_t *pod = to_json(docs[0].root);
    json_t *root = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:o}}", "apiVersion",
                             "admission.k8s.io/v1", "kind", "AdmissionReview", "request", "uid",
                             "pss-1", "kind", "group", "", "version", "v1", "kind", "Pod",
                             "operation", "CREATE", "namespace", ns, "object", pod);
    assert_non_null(root);
    char *body = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    ts_arena_free(&arena);
    free(text);
    return body;
}

static int pss_rule(const char *rule)
{
    return strncmp(rule, "escape-hatch/", 13) == 0 || strncmp(rule, "restricted/", 11) == 0;
}

/* Every fixture of dir in namespace ns must be allowed (want) or denied by
 * a Pod Security rule, by both decoders; returns how many it read. */
static size_t run_dir(const struct admit_policy *pol, const char *dir, const char *ns, int want,
                      int *failures)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s", th_src_path(dir));
    DIR *d = opendir(path);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strstr(de->d_name, ".yaml"))
            continue;
        char file[1400];
        snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
        char *body = review_of(file, ns);
        for (int full = 0; full < 2; full++) {
            struct ts_sbuf out;
            struct admit_verdict v;
            ts_sbuf_init(&out, 1 << 20);
            ad_review(pol, body, strlen(body), &out, &v, full);
            if (v.http_status != 200 || v.allowed != want || (!want && !pss_rule(v.rule))) {
                fprintf(stderr, "  %s/%s in %s (%s decoder): %d %s %s: %s\n", dir, de->d_name, ns,
                        full ? "full" : "fast", v.http_status, v.allowed ? "allowed" : "denied",
                        v.rule, v.message);
                (*failures)++;
            }
            ts_sbuf_release(&out);
        }
        free(body);
        n++;
    }
    closedir(d);
    return n;
}

static void test_kubernetes_fixtures(void **state)
{
    (void)state;
    struct admit_policy *pol = th_admit_policy("tests/fixtures/pss/spec.yaml", NULL);
    int failures = 0;
    size_t bp = run_dir(pol, "tests/fixtures/pss/baseline/pass", "pss-baseline", 1, &failures);
    size_t bf = run_dir(pol, "tests/fixtures/pss/baseline/fail", "pss-baseline", 0, &failures);
    size_t rp = run_dir(pol, "tests/fixtures/pss/restricted/pass", "pss-restricted", 1, &failures);
    size_t rf = run_dir(pol, "tests/fixtures/pss/restricted/fail", "pss-restricted", 0, &failures);
    run_dir(pol, "tests/fixtures/pss/restricted/pass", "pss-baseline", 1, &failures);
    run_dir(pol, "tests/fixtures/pss/baseline/fail", "pss-restricted", 0, &failures);
    fprintf(stderr, "pss: baseline %zu pass, %zu fail; restricted %zu pass, %zu fail\n", bp, bf, rp,
            rf);
    /* the fixtures are all there (v1.35: 15, 34, 23, 76) */
    assert_true(bp >= 15 && bf >= 34 && rp >= 23 && rf >= 76);
    if (failures)
        fail_msg("%d verdicts differ from Kubernetes' fixtures", failures);
    admit_policy_free(pol);
}

/* One control and its neighbours, where the fixtures do not go: other
 * container kinds, pod templates, the deprecated annotations, the allowed
 * values beside the denied ones, wrong types (400, located). */
static const struct {
    const char *ns, *kind, *object; /* object: JSON, the pod or workload */
    int status, allowed;
    const char *rule_or_path; /* the denial's rule, or the 400's place */
} controls[] = {
#define POD(x) "{\"spec\":{" x "}}"
#define C1 "\"containers\":[{\"name\":\"a\""
    {"pss-baseline", "Pod",
     POD("\"ephemeralContainers\":[{\"name\":\"d\",\"securityContext\":{\"seccompProfile\":{"
         "\"type\":\"Unconfined\"}}}]"),
     200, 0, "escape-hatch/seccomp"},
    {"pss-baseline", "Pod", POD(C1 ",\"securityContext\":{\"seccompProfile\":{}}}]"), 200, 0,
     "escape-hatch/seccomp"},
    {"pss-baseline", "Pod",
     POD(C1 ",\"securityContext\":{\"seccompProfile\":{\"type\":\"Localhost\","
            "\"localhostProfile\":\"p.json\"}}}]"),
     200, 1, ""},
    {"pss-baseline", "Pod", POD(C1 ",\"securityContext\":{\"seccompProfile\":\"Unconfined\"}}]"),
     400, 0, "request.object.spec.containers[0].securityContext.seccompProfile"},
    {"pss-baseline", "Deployment",
     "{\"spec\":{\"template\":{\"metadata\":{\"annotations\":{"
     "\"container.apparmor.security.beta.kubernetes.io/a\":\"unconfined\"}},\"spec\":{" C1 "}]}}}}",
     200, 0, "escape-hatch/apparmor"},
    {"pss-baseline", "Pod",
     "{\"metadata\":{\"annotations\":{\"container.apparmor.security.beta.kubernetes.io/a\":"
     "\"localhost/k8s-nginx\"}},\"spec\":{" C1 "}]}}",
     200, 1, ""},
    {"pss-baseline", "Pod",
     "{\"metadata\":{\"annotations\":{\"seccomp.security.alpha.kubernetes.io/pod\":"
     "\"unconfined\"}},\"spec\":{" C1 "}]}}",
     200, 0, "escape-hatch/seccomp"},
    {"pss-baseline", "Pod",
     "{\"metadata\":{\"annotations\":{\"container.seccomp.security.alpha.kubernetes.io/a\":"
     "\"docker/default\"}},\"spec\":{" C1 "}]}}",
     200, 1, ""},
    {"pss-baseline", "Pod",
     "{\"metadata\":{\"annotations\":{\"seccomp.security.alpha.kubernetes.io/pod\":1}},"
     "\"spec\":{" C1 "}]}}",
     400, 0, "request.object.metadata.annotations[\"seccomp.security.alpha.kubernetes.io/pod\"]"},
    {"pss-baseline", "Job",
     "{\"spec\":{\"template\":{\"spec\":{\"initContainers\":[{\"name\":\"i\","
     "\"securityContext\":{\"seLinuxOptions\":{\"type\":\"spc_t\"}}}]," C1 "}]}}}}",
     200, 0, "escape-hatch/selinux"},
    {"pss-baseline", "Pod",
     POD(C1 ",\"securityContext\":{\"seLinuxOptions\":{\"level\":\"s0:c123,c456\","
            "\"type\":\"container_engine_t\"}}}]"),
     200, 1, ""},
    {"pss-baseline", "Pod", POD(C1 "}],\"securityContext\":{\"seLinuxOptions\":{\"role\":\"r\"}}"),
     200, 0, "escape-hatch/selinux"},
    {"pss-baseline", "Pod",
     POD(C1 "}],\"securityContext\":{\"sysctls\":[{\"name\":\"net.ipv4.tcp_rmem\","
            "\"value\":\"4096 87380 16777216\"},{\"name\":\"kernel.msgmax\",\"value\":\"1\"}]}"),
     200, 0, "escape-hatch/sysctls"},
    {"pss-baseline", "Pod",
     POD(C1 ",\"lifecycle\":{\"preStop\":{\"tcpSocket\":{\"host\":\"10.0.0.1\",\"port\":80}}}}]"),
     200, 0, "escape-hatch/probe-host"},
    {"pss-baseline", "Pod", POD(C1 ",\"startupProbe\":{\"httpGet\":{\"host\":\"\",\"port\":80}}}]"),
     200, 1, ""},
    {"pss-baseline", "CronJob",
     "{\"spec\":{\"jobTemplate\":{\"spec\":{\"template\":{\"spec\":{" C1
     ",\"securityContext\":{\"windowsOptions\":{\"hostProcess\":true}}}]}}}}}}",
     200, 0, "escape-hatch/host-process"},
    {"pss-baseline", "Pod",
     POD(C1 ",\"securityContext\":{\"procMount\":\"Unmasked\"}}],\"hostUsers\":false"), 200, 1, ""},
    {"pss-baseline", "Pod", POD(C1 ",\"securityContext\":{\"procMount\":\"Unmasked\"}}]"), 200, 0,
     "escape-hatch/proc-mount"},
    {"pss-baseline", "Pod", POD(C1 "}],\"hostUsers\":\"false\""), 400, 0,
     "request.object.spec.hostUsers"},
/* restricted: each control on an otherwise restricted pod */
#define RSC(ctr, pod)                                                                           \
    POD("\"securityContext\":{\"runAsNonRoot\":true,\"seccompProfile\":{\"type\":"              \
        "\"RuntimeDefault\"}" pod "},\"containers\":[{\"name\":\"a\",\"securityContext\":{" ctr \
        "}}]")
#define APE "\"allowPrivilegeEscalation\":false"
#define DROP "\"capabilities\":{\"drop\":[\"ALL\"]}"
#define RPOD(ctr, pod) RSC(APE "," DROP ctr, pod)
    {"pss-restricted", "Pod", RPOD("", ""), 200, 1, ""},
    {"pss-restricted", "Pod", RPOD(",\"runAsUser\":0", ""), 200, 0, "restricted/run-as-user"},
    {"pss-restricted", "Pod", RPOD("", ",\"runAsUser\":0"), 200, 0, "restricted/run-as-user"},
    {"pss-restricted", "Pod", RPOD(",\"runAsNonRoot\":false", ""), 200, 0,
     "restricted/run-as-non-root"},
    {"pss-restricted", "Pod", RSC("\"allowPrivilegeEscalation\":true," DROP, ""), 200, 0,
     "restricted/privilege-escalation"},
    {"pss-restricted", "Pod", RPOD(",\"procMount\":\"Unmasked\"", ""), 200, 0,
     "escape-hatch/proc-mount"},
    {"pss-restricted", "Pod", RSC(APE ",\"capabilities\":{\"drop\":[\"all\"]}", ""), 200, 0,
     "restricted/capabilities"},
    {"pss-restricted", "Pod",
     RPOD("", "},\"volumes\":[{\"name\":\"v\",\"nfs\":{\"server\":\"s\",\"path\":\"/\"}}],\"x\":{"),
     200, 0, "restricted/volumes"},
    {"pss-restricted", "Pod",
     RPOD("",
          "},\"volumes\":[{\"name\":\"d\",\"hostPath\":{\"path\":\"/data/datasets\"}}],\"x\":{"),
     200, 1, ""},
    {"pss-restricted", "Pod",
     RPOD(",\"runAsUser\":0,\"runAsNonRoot\":false", "},\"hostUsers\":false,\"x\":{"), 200, 1, ""},
};

static void test_controls(void **state)
{
    (void)state;
    struct admit_policy *pol = th_admit_policy("tests/fixtures/pss/spec.yaml", NULL);
    for (size_t i = 0; i < sizeof(controls) / sizeof(controls[0]); i++) {
        const char *kind = controls[i].kind;
        const char *group = strcmp(kind, "Pod") == 0                                   ? ""
                            : strcmp(kind, "Job") == 0 || strcmp(kind, "CronJob") == 0 ? "batch"
                                                                                       : "apps";
        char body[4096];
        snprintf(body, sizeof(body),
                 "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                 "\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"%s\",\"version\":\"v1\","
                 "\"kind\":\"%s\"},\"operation\":\"CREATE\",\"namespace\":\"%s\",\"object\":%s}}",
                 group, kind, controls[i].ns, controls[i].object);
        for (int full = 0; full < 2; full++) {
            struct ts_sbuf out;
            struct admit_verdict v;
            ts_sbuf_init(&out, 1 << 20);
            ad_review(pol, body, strlen(body), &out, &v, full);
            const char *got = v.http_status == 400 ? v.message : v.rule;
            if (v.http_status != controls[i].status || v.allowed != controls[i].allowed ||
                strncmp(got, controls[i].rule_or_path, strlen(controls[i].rule_or_path)) != 0)
                fail_msg("controls[%zu] (%s decoder): %d %s %s: %s", i, full ? "full" : "fast",
                         v.http_status, v.allowed ? "allowed" : "denied", v.rule, v.message);
            ts_sbuf_release(&out);
        }
    }
    admit_policy_free(pol);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kubernetes_fixtures),
        cmocka_unit_test(test_controls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
