/*
 * test_api.c - the JSON API's functions (api/): the identities file (good
 * lines, each kind of bad line with its line and column), bearer tokens
 * matched by SHA-256 (a token differing in any one byte is no identity),
 * certificate names, minting; and api_get on the worked example without a
 * store: 401 without an identity, the tenant's view of the plan, 403 and
 * 404, parameters (unknown, repeated, out of range) answered 400 naming
 * them, pages that tile the list, denials filtered by role.
 */
#include "helpers.h"

#include <gnutls/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"

/* The identities line of token, computed here with GnuTLS directly. */
static void line_of(const char *token, const char *role, char *out, size_t size)
{
    unsigned char d[32];
    char hex[65];
    assert_int_equal(gnutls_hash_fast(GNUTLS_DIG_SHA256, token, strlen(token), d), 0);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    snprintf(out, size, "token sha256:%s %s\n", hex, role);
}

static const char *TOKEN_A = "tsk_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
static const char *TOKEN_OP =
    "tsk_ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

static struct api_idents *idents(void)
{
    char a[200], op[200], text[1024];
    line_of(TOKEN_A, "tenant client-a", a, sizeof(a));
    line_of(TOKEN_OP, "operator", op, sizeof(op));
    snprintf(text, sizeof(text),
             "# who may ask\n\n%s  %s\tcert cn:ops.example operator # x\n"
             "cert dns:b.example tenant client-b\n",
             a, op);
    struct ts_diag d = {0};
    struct api_idents *ids = NULL;
    assert_int_equal(api_idents_parse(text, strlen(text), "ids", &ids, &d), TS_OK);
    assert_int_equal(d.count, 0);
    return ids;
}

static void test_tokens(void **state)
{
    (void)state;
    struct api_idents *ids = idents();
    struct api_identity w = {0};
    char h[128];
    snprintf(h, sizeof(h), "Bearer %s", TOKEN_A);
    assert_true(api_ident_token(ids, h, &w));
    assert_int_equal(w.role, API_ROLE_TENANT);
    assert_string_equal(w.tenant, "client-a");
    assert_string_equal(w.via, "token");
    snprintf(h, sizeof(h), "Bearer %s", TOKEN_OP);
    assert_true(api_ident_token(ids, h, &w));
    assert_int_equal(w.role, API_ROLE_OPERATOR);
    for (size_t i = 4; i < strlen(TOKEN_A); i++) { /* any one hex digit changed */
        snprintf(h, sizeof(h), "Bearer %s", TOKEN_A);
        h[7 + i] = h[7 + i] == '0' ? '1' : '0';
        assert_false(api_ident_token(ids, h, &w));
    }
    const char *bad[] = {
        NULL,        "",
        "Bearer ",   "bearer tsk_0123",
        "Basic abc", "Bearer tsk_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(api_ident_token(ids, bad[i], &w));
    snprintf(h, sizeof(h), "Bearer %s ", TOKEN_A); /* trailing space */
    assert_false(api_ident_token(ids, h, &w));
    api_idents_free(ids);
}

static void test_certs(void **state)
{
    (void)state;
    struct api_idents *ids = idents();
    struct api_identity w = {0};
    const char *ops[] = {"dns:x.example", "cn:ops.example"};
    assert_int_equal(api_idents_certs(ids), 2);
    assert_true(api_ident_cert(ids, ops, 2, &w));
    assert_int_equal(w.role, API_ROLE_OPERATOR);
    assert_string_equal(w.subject, "cn:ops.example");
    const char *b[] = {"dns:b.example"};
    assert_true(api_ident_cert(ids, b, 1, &w));
    assert_string_equal(w.tenant, "client-b");
    const char *none[] = {"cn:b.example", "dns:ops.example", "cn:ops.example.evil"};
    assert_false(api_ident_cert(ids, none, 3, &w)); /* the kind is part of the name */
    api_idents_free(ids);
}

static void test_bad_lines(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int line, col;
        const char *msg;
    } cases[] = {
        {"tok sha256:00 operator\n", 1, 1, "kind must be token or cert"},
        {"# c\ntoken sha256:abc operator\n", 2, 7, "64 lowercase hex"},
        {"token sha256:"
         "0000000000000000000000000000000000000000000000000000000000000000 boss\n",
         1, 79, "role must be operator or tenant"},
        {"cert cn:x tenant\n", 1, 11, "tenant takes one tenant name"},
        {"cert cn:x operator client-a\n", 1, 20, "operator takes no tenant"},
        {"cert cn:x tenant a b\n", 1, 18, "tenant takes one tenant name"},
        {"cert uid:x operator\n", 1, 6, "cn:NAME or dns:NAME"},
        {"cert cn: operator\n", 1, 6, "cn:NAME or dns:NAME"},
        {"token\n", 1, 1, "KIND MATCH ROLE"},
        {"token sha256:"
         "000000000000000000000000000000000000000000000000000000000000000G operator\n",
         1, 7, "64 lowercase hex"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ts_diag d = {0};
        struct api_idents *ids = (void *)1;
        ts_status st = api_idents_parse(cases[i].text, strlen(cases[i].text), "f", &ids, &d);
        assert_int_equal(st, TS_SYNTAX);
        assert_null(ids);
        assert_int_equal(d.count, 1);
        assert_string_equal(d.items[0].file, "f");
        if (d.items[0].line != cases[i].line || d.items[0].column != cases[i].col)
            fail_msg("case %zu: %d:%d, want %d:%d (%s)", i, d.items[0].line, d.items[0].column,
                     cases[i].line, cases[i].col, d.items[0].msg);
        assert_non_null(strstr(d.items[0].msg, cases[i].msg));
    }
    struct ts_diag d = {0};
    struct api_idents *ids = NULL;
    assert_int_equal(api_idents_parse("cert cn:a operator\0x", 20, "f", &ids, &d), TS_SYNTAX);
    assert_null(ids);
}

static void test_mint(void **state)
{
    (void)state;
    unsigned char rnd[32];
    for (int i = 0; i < 32; i++)
        rnd[i] = (unsigned char)(i * 7 + 1);
    char token[API_TOKEN_LEN + 1], want[200];
    struct ts_sbuf line;
    ts_sbuf_init(&line, 1024);
    api_token_new(rnd, "client-a", token, &line);
    assert_string_equal(token,
                        "tsk_01080f161d242b323940474e555c636a71787f868d949ba2a9b0b7bec5ccd3da");
    line_of(token, "tenant client-a", want, sizeof(want));
    assert_string_equal(ts_sbuf_str(&line), want);
    struct ts_diag d = {0};
    struct api_idents *ids = NULL;
    assert_int_equal(api_idents_parse(line.data, line.len, "minted", &ids, &d), TS_OK);
    char h[128];
    struct api_identity w = {0};
    snprintf(h, sizeof(h), "Bearer %s", token);
    assert_true(api_ident_token(ids, h, &w));
    api_idents_free(ids);
    ts_sbuf_release(&line);
}

/* ---- api_get on the worked example ---- */

struct fx {
    struct th_job job;
    struct api_state s;
    struct api_denial den[3];
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    th_run_file(&f->job, th_src_path("examples/four-h100.yaml"), PLAN_SOLVER_HEURISTIC);
    assert_non_null(f->job.plan);
    const char *tenants[] = {"client-c", "client-a", "client-c"};
    const char *rules[] = {"escape-hatch/privileged", "entitlement/count", "entitlement/count"};
    for (int i = 0; i < 3; i++) {
        f->den[i].ts_ms = 1700000000000LL - i * 1000;
        snprintf(f->den[i].tenant, sizeof(f->den[i].tenant), "%s", tenants[i]);
        snprintf(f->den[i].rule, sizeof(f->den[i].rule), "%s", rules[i]);
        snprintf(f->den[i].message, sizeof(f->den[i].message), "<b>\"x\"</b>\n%d", i);
    }
    f->s = (struct api_state){.model = f->job.model,
                              .cat = f->job.cat,
                              .decisions = f->job.d,
                              .plan = f->job.plan,
                              .generation = 3,
                              .interval_ms = 15000,
                              .denials = f->den,
                              .ndenials = 3};
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    th_free(&f->job);
    free(f);
    return 0;
}

static const struct api_identity OP = {API_ROLE_OPERATOR, "", "token", "t"};
static const struct api_identity TA = {API_ROLE_TENANT, "client-a", "token", "t"};

/* GET path?params as who: the status, and the body parsed into *doc. */
static unsigned get(struct fx *f, const struct api_identity *who, const char *path,
                    const struct api_param *p, size_t n, json_t **doc)
{
    struct api_answer a;
    api_get(&f->s, who, path, p, n, &a);
    json_error_t e;
    *doc = json_loadb(a.body.data, a.body.len, 0, &e);
    if (!*doc)
        fail_msg("%s: not JSON: %s", path, a.body.data ? a.body.data : "(empty)");
    assert_non_null(strstr(a.type, "application/json"));
    if (a.status == 401)
        assert_non_null(a.www_authenticate);
    unsigned status = a.status;
    ts_sbuf_release(&a.body);
    return status;
}

/* An error answer of status naming param (NULL: none). */
static void want_error(struct fx *f, const struct api_identity *who, const char *path,
                       const struct api_param *p, size_t n, unsigned status, const char *param)
{
    json_t *doc;
    assert_int_equal(get(f, who, path, p, n, &doc), status);
    json_t *e = json_object_get(doc, "error");
    assert_int_equal(json_integer_value(json_object_get(e, "status")), status);
    const char *got = json_string_value(json_object_get(e, "parameter"));
    if (param)
        assert_string_equal(got, param);
    else
        assert_null(got);
    json_decref(doc);
}

static void test_identity(void **state)
{
    struct fx *f = *state;
    struct api_identity none = {API_ROLE_NONE, "", NULL, ""};
    for (size_t i = 0; api_routes[i]; i++) {
        want_error(f, &none, api_routes[i], NULL, 0, 401, NULL);
        want_error(f, NULL, api_routes[i], NULL, 0, 401, NULL);
    }
    want_error(f, &OP, "/nothing", NULL, 0, 404, NULL);
    want_error(f, &OP, "/tenants/a/b", NULL, 0, 404, NULL);
}

static size_t count_tenant(const json_t *arr, const char *name, size_t *others)
{
    size_t n = 0, i;
    json_t *v;
    *others = 0;
    json_array_foreach (arr, i, v) {
        int mine = strcmp(json_string_value(json_object_get(v, "tenant")), name) == 0;
        n += mine;
        *others += !mine;
    }
    return n;
}

static void test_plan_views(void **state)
{
    struct fx *f = *state;
    json_t *doc;
    size_t others, rows = 0, inst = 0, cards = 0;
    for (size_t i = 0; i < f->job.d->nrows; i++)
        rows += strcmp(f->job.d->rows[i].tenant->name, "client-a") == 0;
    for (size_t g = 0; g < f->job.plan->ngpus; g++) {
        size_t here = 0;
        for (size_t k = 0; k < f->job.plan->gpus[g].ninst; k++) {
            const struct decide_row *r = f->job.plan->gpus[g].inst[k].row;
            here += r && strcmp(r->tenant->name, "client-a") == 0;
        }
        inst += here;
        cards += here > 0;
    }
    assert_int_equal(get(f, &TA, "/plan", NULL, 0, &doc), 200);
    assert_int_equal(count_tenant(json_object_get(doc, "decisions"), "client-a", &others), rows);
    assert_int_equal(others, 0);
    json_t *gpus = json_object_get(doc, "gpus");
    assert_int_equal(json_array_size(gpus), cards);
    size_t seen = 0, i;
    json_t *g;
    json_array_foreach (gpus, i, g) {
        seen += count_tenant(json_object_get(g, "instances"), "client-a", &others);
        assert_int_equal(others, 0);
    }
    assert_int_equal(seen, inst);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(doc, "summary"), "instances")), inst);
    assert_int_equal(json_integer_value(json_object_get(doc, "generation")), 3);
    json_decref(doc);
    assert_int_equal(get(f, &OP, "/plan", NULL, 0, &doc), 200);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(doc, "summary"), "gpusUsed")),
        f->job.plan->summary.gpus_used);
    json_decref(doc);
    struct api_param b[] = {{"tenant", "client-b", 0}};
    want_error(f, &TA, "/plan", b, 1, 403, "tenant");
    want_error(f, &TA, "/tenants/client-b", NULL, 0, 403, NULL);
    want_error(f, &OP, "/tenants/nobody", NULL, 0, 404, NULL);
    struct api_param nobody[] = {{"tenant", "nobody", 0}};
    want_error(f, &OP, "/plan", nobody, 1, 404, "tenant");
}

static void test_parameters(void **state)
{
    struct fx *f = *state;
    struct api_param unknown[] = {{"limit", "5", 0}, {"sort", "name", 0}};
    want_error(f, &OP, "/tenants", unknown, 2, 400, "sort");
    struct api_param twice[] = {{"limit", "5", 0}, {"limit", "5", 0}};
    want_error(f, &OP, "/tenants", twice, 2, 400, "limit");
    const char *bad_limits[] = {"0", "1001", "-1", "+1", " 1", "1x", "", "99999999999999999999"};
    for (size_t i = 0; i < sizeof(bad_limits) / sizeof(bad_limits[0]); i++) {
        struct api_param p[] = {{"limit", bad_limits[i], 0}};
        want_error(f, &OP, "/tenants", p, 1, 400, "limit");
    }
    struct api_param novalue[] = {{"limit", NULL, 0}};
    want_error(f, &OP, "/tenants", novalue, 1, 400, "limit");
    struct api_param ctl[] = {{"rule", "a\tb", 0}};
    want_error(f, &OP, "/denials", ctl, 1, 400, "rule");
    struct api_param utf[] = {{"rule", "\xff", 0}};
    want_error(f, &OP, "/denials", utf, 1, 400, "rule");
    struct api_param cut[] = {{"rule", "entitlement/count", 1}}; /* "...%00x" decoded */
    want_error(f, &OP, "/denials", cut, 1, 400, "rule");
    struct api_param many[API_PARAMS_MAX + 1];
    for (size_t i = 0; i <= API_PARAMS_MAX; i++)
        many[i] = (struct api_param){"limit", "1", 0};
    want_error(f, &OP, "/tenants", many, API_PARAMS_MAX + 1, 400, NULL);
    want_error(f, &OP, "/whoami", unknown + 1, 1, 400, "sort");
    /* without --db, --current: 404 saying so */
    struct api_param day[] = {{"from", "0", 0}, {"to", "3600", 0}};
    want_error(f, &OP, "/usage", day, 2, 404, NULL);
    struct api_param period[] = {{"period", "2026-11", 0}};
    want_error(f, &OP, "/invoices", period, 1, 404, NULL);
    want_error(f, &OP, "/violations", NULL, 0, 404, NULL);
    want_error(f, &OP, "/replan", NULL, 0, 404, NULL);
    want_error(f, &TA, "/replan", NULL, 0, 403, NULL);
}

static void test_pages(void **state)
{
    struct fx *f = *state;
    size_t total = f->job.model->ntenants, got = 0;
    char off[24];
    for (size_t offset = 0; offset < total + 2; offset += 3) {
        snprintf(off, sizeof(off), "%zu", offset);
        struct api_param p[] = {{"limit", "3", 0}, {"offset", off, 0}};
        json_t *doc;
        assert_int_equal(get(f, &OP, "/tenants", p, 2, &doc), 200);
        assert_int_equal(json_integer_value(json_object_get(doc, "total")), total);
        json_t *items = json_object_get(doc, "items");
        for (size_t i = 0; i < json_array_size(items); i++)
            assert_string_equal(
                json_string_value(json_object_get(json_array_get(items, i), "name")),
                f->job.model->tenants[offset + i].name);
        got += json_array_size(items);
        const char *next = json_string_value(json_object_get(doc, "next"));
        if (offset + 3 < total) {
            char want[64];
            snprintf(want, sizeof(want), "/api/v1/tenants?limit=3&offset=%zu", offset + 3);
            assert_string_equal(next, want);
        } else {
            assert_true(json_is_null(json_object_get(doc, "next")));
        }
        json_decref(doc);
    }
    assert_int_equal(got, total);
}

static void test_denials(void **state)
{
    struct fx *f = *state;
    json_t *doc;
    assert_int_equal(get(f, &TA, "/denials", NULL, 0, &doc), 200);
    assert_int_equal(json_integer_value(json_object_get(doc, "total")), 1);
    json_t *d = json_array_get(json_object_get(doc, "items"), 0);
    assert_string_equal(json_string_value(json_object_get(d, "message")), "<b>\"x\"</b>\n1");
    assert_string_equal(json_string_value(json_object_get(d, "time")), "2023-11-14T22:13:19Z");
    json_decref(doc);
    struct api_param rule[] = {{"rule", "entitlement/count", 0}};
    assert_int_equal(get(f, &OP, "/denials", rule, 1, &doc), 200);
    assert_int_equal(json_integer_value(json_object_get(doc, "total")), 2);
    json_decref(doc);
    struct api_param c[] = {{"tenant", "client-c", 0}, {"rule", "entitlement/count", 0}};
    assert_int_equal(get(f, &OP, "/denials", c, 2, &doc), 200);
    assert_int_equal(json_integer_value(json_object_get(doc, "total")), 1);
    json_decref(doc);
    want_error(f, &TA, "/denials", c, 1, 403, "tenant");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_certs),
        cmocka_unit_test(test_bad_lines),
        cmocka_unit_test(test_mint),
        cmocka_unit_test_setup_teardown(test_identity, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plan_views, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parameters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_denials, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
