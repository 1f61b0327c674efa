/*
 * test_ledger.c - the custody ledger: a 1,000-entry chain verifies, and on
 * copies of its SQLite file each tampering (edited, deleted, inserted,
 * swapped entries; an edit with the chain recomputed) is caught and the
 * first bad seq named; who/history/export; the canonical encoding is
 * unambiguous; a known-answer test whose digests were computed with
 * Python's hashlib/hmac from the layout documented in ledger.h:
 *   ns = lambda v: str(len(v.encode())).encode() + b':' + v.encode() + b','
 *   canon = ns("tessera-ledger-v1") + ns("1") + ns("1796032800000") + ns("node-1")
 *         + ns("GPU-0000") + ns("MIG-1111") + ns("3") + ns("3g.40gb") + ns("0:4")
 *         + ns("client-a") + ns("train") + ns("plan")
 *   h = sha256(b"0" * 64 + canon).hexdigest()
 *   hmac.new(b"secret-key", h.encode(), sha256).hexdigest()
 */
#include "helpers.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ledger/ledger.h"
#include "util/file.h"
#include "util/jsonfree.h"

#define N 1000
#define KEY "secret-key"
#define KLEN (sizeof(KEY) - 1)
#define T0 1796032800000LL /* 2026-11-30T10:00:00Z */

static char dir[64];
static char tmpl_path[128];

/* ---- helpers -------------------------------------------------------------- */

static struct ledger_event make_event(int i, char bufs[4][32])
{
    static const char *const src[] = {"plan", "observed", "nvidia-smi"};
    snprintf(bufs[0], 32, "tenant-%d", i % 7);
    snprintf(bufs[1], 32, "GPU-%d", i % 10);
    snprintf(bufs[2], 32, "MIG-%d", i % 40);
    snprintf(bufs[3], 32, "w%d", i);
    struct ledger_event ev = {T0 + i * 60000LL, "node-1", bufs[1], bufs[2], "1",
                              "1g.10gb",        "0:1",    bufs[0], bufs[3], src[i % 3]};
    return ev;
}

static struct store *open_path(const char *path)
{
    char url[256];
    struct store *st = NULL;
    struct ts_error e = {0};
    snprintf(url, sizeof url, "sqlite:%s", path);
    assert_int_equal(store_open(url, &st, &e), TS_OK);
    return st;
}

/* Copy the template database to a fresh file; returns its path (static). */
static const char *fresh_copy(void)
{
    static char path[128];
    static int n;
    char *data = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/copy%d.db", dir, n++);
    assert_int_equal(ts_file_read(tmpl_path, (size_t)1 << 30, &data, &len, NULL), TS_OK);
    assert_int_equal(ts_file_write(path, data, len, NULL), TS_OK);
    free(data);
    return path;
}

static void sql(const char *path, const char *stmt)
{
    sqlite3 *db = NULL;
    char *msg = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    int rc = sqlite3_exec(db, stmt, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fail_msg("sql failed: %s: %s", stmt, msg);
    sqlite3_close(db);
}

static struct ledger_report verify(const char *path, const char *key)
{
    struct store *st = open_path(path);
    struct ledger_report r;
    struct ts_error e = {0};
    assert_int_equal(ledger_verify(st, key, key ? strlen(key) : 0, &r, &e), TS_OK);
    store_close(st);
    return r;
}

static void assert_broken(const char *path, const char *key, int64_t seq, const char *what)
{
    struct ledger_report r = verify(path, key);
    assert_int_equal(r.intact, 0);
    assert_int_equal(r.bad_seq, seq);
    if (!strstr(r.problem, what))
        fail_msg("problem '%s' does not say '%s'", r.problem, what);
}

static int group_setup(void **state)
{
    (void)state;
    if (th_tmpdir_make(dir, sizeof dir, "ledger") != 0)
        return -1;
    snprintf(tmpl_path, sizeof tmpl_path, "%s/tmpl.db", dir);
    struct store *st = open_path(tmpl_path);
    for (int i = 1; i <= N; i++) {
        char bufs[4][32];
        struct ledger_event ev = make_event(i, bufs);
        int64_t seq = 0;
        if (ledger_record(st, KEY, KLEN, &ev, &seq, NULL) != TS_OK || seq != i)
            return -1;
    }
    store_close(st);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    return th_tmpdir_remove(dir);
}

/* ---- the chain and its tampering ------------------------------------------ */

static void test_chain_verifies(void **state)
{
    (void)state;
    struct ledger_report r = verify(tmpl_path, NULL);
    assert_int_equal(r.intact, 1);
    assert_int_equal(r.entries, N);
    assert_int_equal(r.last_seq, N);
    assert_int_equal(r.macs_checked, 0);
    r = verify(tmpl_path, KEY);
    assert_int_equal(r.intact, 1);
    assert_int_equal(r.macs_checked, 1);
    assert_broken(tmpl_path, "wrong-key", 1, "mac mismatch");
}

static void test_edited_tenant(void **state)
{
    (void)state;
    const char *p = fresh_copy();
    sql(p, "UPDATE ledger SET tenant = 'evil' WHERE seq = 300");
    assert_broken(p, NULL, 300, "hash mismatch");
}

static void test_deleted_entry(void **state)
{
    (void)state;
    const char *p = fresh_copy();
    sql(p, "DELETE FROM ledger WHERE seq = 500");
    assert_broken(p, NULL, 501, "seq gap");
}

static void test_inserted_entry(void **state)
{
    (void)state;
    const char *p = fresh_copy();
    /* make room at 500, then insert a plausible row linked to 499 */
    sql(p, "UPDATE ledger SET seq = -seq WHERE seq >= 500;"
           "UPDATE ledger SET seq = 1 - seq WHERE seq < 0;"
           "INSERT INTO ledger (seq, ts_ms, node, gpu_uuid, instance_uuid, gi_id, profile,"
           " placement, tenant, workload, source, hash, prev_hash, mac)"
           " SELECT 500, ts_ms, node, gpu_uuid, instance_uuid, gi_id, profile, placement,"
           " 'evil', workload, source, hash, hash, mac FROM ledger WHERE seq = 499");
    assert_broken(p, NULL, 500, "hash mismatch");
}

static void test_appended_entry(void **state)
{
    (void)state;
    const char *p = fresh_copy();
    sql(p, "INSERT INTO ledger (seq, ts_ms, node, gpu_uuid, instance_uuid, gi_id, profile,"
           " placement, tenant, workload, source, hash, prev_hash, mac)"
           " SELECT 1001, ts_ms, node, gpu_uuid, instance_uuid, gi_id, profile, placement,"
           " 'evil', workload, source, hash, prev_hash, mac FROM ledger WHERE seq = 1000");
    assert_broken(p, NULL, 1001, "prev_hash");
}

static void test_swapped_entries(void **state)
{
    (void)state;
    const char *p = fresh_copy();
    sql(p, "UPDATE ledger SET seq = -1 WHERE seq = 10;"
           "UPDATE ledger SET seq = 10 WHERE seq = 11;"
           "UPDATE ledger SET seq = 11 WHERE seq = -1");
    assert_broken(p, NULL, 10, "prev_hash");
}

/* Edit seq 300's tenant and recompute every hash from there, as an
 * administrator without the key would. */
static void rechain(const char *path)
{
    struct store *st = open_path(path);
    struct ledger_list l;
    assert_int_equal(ledger_history(st, NULL, INT64_MIN, INT64_MAX, &l, NULL), TS_OK);
    store_close(st);
    sqlite3 *db = NULL;
    sqlite3_stmt *up = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "UPDATE ledger SET tenant = ?, hash = ?, "
                                        "prev_hash = ? WHERE seq = ?",
                                        -1, &up, NULL),
                     SQLITE_OK);
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    for (size_t i = 299; i < l.n; i++) {
        struct ledger_row *r = &l.rows[i];
        const char *tenant = i == 299 ? "evil" : r->tenant;
        struct store_ledger_entry e = {
            r->seq,    r->ts_ms,   r->node,      r->gpu_uuid, r->instance_uuid,
            r->gi_id,  r->profile, r->placement, tenant,      r->workload,
            r->source, "",         "",           ""};
        memcpy(r->prev_hash, l.rows[i - 1].hash, 65);
        assert_int_equal(ledger_hash(r->prev_hash, &e, r->hash, NULL), TS_OK);
        sqlite3_bind_text(up, 1, tenant, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(up, 2, r->hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(up, 3, r->prev_hash, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(up, 4, r->seq);
        assert_int_equal(sqlite3_step(up), SQLITE_DONE);
        sqlite3_reset(up);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_finalize(up);
    sqlite3_close(db);
    ledger_list_free(&l);
}

static void test_rehashed_edit_needs_hmac(void **state)
{
    (void)state;
    const char *p = fresh_copy();
    rechain(p);
    struct ledger_report r = verify(p, NULL);
    assert_int_equal(r.intact, 1);              /* the chain alone cannot see it ... */
    assert_broken(p, KEY, 300, "mac mismatch"); /* ... the key can */
}

/* ---- queries -------------------------------------------------------------- */

static void rec(struct store *st, int64_t ts, const char *inst, const char *tenant,
                const char *workload)
{
    struct ledger_event ev = {ts, "n1", "GPU-A", inst, "", "3g.40gb", "", tenant, workload, "plan"};
    assert_int_equal(ledger_record(st, NULL, 0, &ev, NULL, NULL), TS_OK);
}

static struct store *small_db(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/small.db", dir);
    unlink(path);
    struct store *st = open_path(path);
    rec(st, T0, "MIG-1", "client-a", "train");
    rec(st, T0 + 3600000, "MIG-1", "client-b", "serve, \"eu\"");
    rec(st, T0 + 3600000, "MIG-2", "client-a", "batch");
    return st;
}

static void test_who(void **state)
{
    (void)state;
    struct store *st = small_db();
    struct ledger_row r;
    int found = 1;
    assert_int_equal(ledger_who(st, "MIG-1", T0 - 1, &r, &found, NULL), TS_OK);
    assert_int_equal(found, 0);
    assert_int_equal(ledger_who(st, "MIG-1", T0 + 3599999, &r, &found, NULL), TS_OK);
    assert_int_equal(found, 1);
    assert_string_equal(r.tenant, "client-a");
    assert_string_equal(r.workload, "train");
    ledger_row_free(&r);
    assert_int_equal(ledger_who(st, "MIG-1", T0 + 3600000, &r, &found, NULL), TS_OK);
    assert_string_equal(r.tenant, "client-b");
    ledger_row_free(&r);
    assert_int_equal(ledger_who(st, "GPU-A", T0 + 3600000, &r, &found, NULL), TS_OK);
    assert_int_equal(r.seq, 3); /* same time: the later entry */
    ledger_row_free(&r);
    store_close(st);
}

static void test_history_export(void **state)
{
    (void)state;
    struct store *st = small_db();
    struct ledger_list l;
    assert_int_equal(ledger_history(st, "client-a", T0, T0 + 3600000, &l, NULL), TS_OK);
    assert_int_equal(l.n, 1); /* [from, to): the entry at `to` is out */
    ledger_list_free(&l);
    assert_int_equal(ledger_history(st, NULL, INT64_MIN, INT64_MAX, &l, NULL), TS_OK);
    assert_int_equal(l.n, 3);
    struct ts_sbuf b;
    ts_sbuf_init(&b, 1 << 20);
    ledger_csv(&l, &b);
    assert_non_null(strstr(b.data, "seq,time,ts_ms,node,gpu_uuid,instance_uuid,gi_id,"));
    assert_non_null(strstr(b.data, ",client-b,\"serve, \"\"eu\"\"\",plan,"));
    assert_non_null(strstr(b.data, "\r\n2,2026-11-30T11:00:00Z,1796036400000,n1,GPU-A,MIG-1,"));
    ts_sbuf_release(&b);
    char *js = NULL;
    assert_int_equal(ledger_json(&l, &js, NULL), TS_OK);
    json_t *root = json_loads(js, 0, NULL);
    json_free_text(js);
    json_t *e = json_array_get(json_object_get(root, "entries"), 1);
    assert_string_equal(json_string_value(json_object_get(e, "workload")), "serve, \"eu\"");
    assert_int_equal(json_integer_value(json_object_get(e, "seq")), 2);
    json_decref(root);
    ledger_list_free(&l);
    store_close(st);
}

/* ---- encoding, known answers, input --------------------------------------- */

static void test_canonical_unambiguous(void **state)
{
    (void)state;
    struct store_ledger_entry a = {1, T0, "ab", "c", "", "", "", "", "t", "", "plan", "", "", ""};
    struct store_ledger_entry b = a;
    b.node = "a";
    b.gpu_uuid = "bc";
    struct ts_sbuf ca, cb;
    ts_sbuf_init(&ca, 4096);
    ts_sbuf_init(&cb, 4096);
    ledger_canonical(&a, &ca);
    ledger_canonical(&b, &cb);
    assert_string_not_equal(ca.data, cb.data);
    ts_sbuf_release(&ca);
    ts_sbuf_release(&cb);
    char ha[65], hb[65];
    assert_int_equal(ledger_hash(LEDGER_ZERO_HASH, &a, ha, NULL), TS_OK);
    assert_int_equal(ledger_hash(LEDGER_ZERO_HASH, &b, hb, NULL), TS_OK);
    assert_string_not_equal(ha, hb);
}

static void test_known_answer(void **state)
{
    (void)state;
    struct store_ledger_entry e = {1,      T0,        "node-1", "GPU-0000", "MIG-1111",
                                   "3",    "3g.40gb", "0:4",    "client-a", "train",
                                   "plan", "",        "",       ""};
    struct ts_sbuf b;
    ts_sbuf_init(&b, 4096);
    ledger_canonical(&e, &b);
    assert_string_equal(b.data, "17:tessera-ledger-v1,1:1,13:1796032800000,6:node-1,"
                                "8:GPU-0000,8:MIG-1111,1:3,7:3g.40gb,3:0:4,8:client-a,"
                                "5:train,4:plan,");
    ts_sbuf_release(&b);
    char h[65], m[65];
    assert_int_equal(ledger_hash(LEDGER_ZERO_HASH, &e, h, NULL), TS_OK);
    assert_string_equal(h, "226474285f1508751c23c258273caf70b8635aac3889b3d24d3a18163e8ef9c1");
    assert_int_equal(ledger_mac(KEY, KLEN, h, m, NULL), TS_OK);
    assert_string_equal(m, "800630972ea562dd21d793c6151a5027cb8898efd75e9f277f7f1635da724f49");
}

static void test_time(void **state)
{
    (void)state;
    int64_t ms = 0;
    char buf[40];
    assert_int_equal(ledger_parse_time("2026-11-30T10:00:00Z", &ms, NULL), TS_OK);
    assert_int_equal(ms, T0);
    assert_int_equal(ledger_parse_time("2026-11-30T11:30:00+01:30", &ms, NULL), TS_OK);
    assert_int_equal(ms, T0);
    assert_int_equal(ledger_parse_time("1796032800", &ms, NULL), TS_OK);
    assert_int_equal(ms, T0);
    assert_int_equal(ledger_parse_time("2024-02-29T00:00:00.25-00:00", &ms, NULL), TS_OK);
    ledger_format_time(ms, buf);
    assert_string_equal(buf, "2024-02-29T00:00:00.250Z");
    static const char *const bad[] = {"",
                                      "yesterday",
                                      "2026-11-30",
                                      "2026-11-30T10:00:00",
                                      "2023-02-29T00:00:00Z",
                                      "2026-11-30T24:00:00Z",
                                      "2026-11-30T10:00:00+1:00",
                                      "-5",
                                      "1.5",
                                      "2026-11-30T10:00:00Zjunk"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ts_error e = {0};
        assert_int_equal(ledger_parse_time(bad[i], &ms, &e), TS_USAGE);
        assert_non_null(strstr(e.msg, "bad time"));
    }
}

static void test_nvidia_smi(void **state)
{
    (void)state;
    char *text = NULL, *arena = NULL;
    size_t len = 0, n = 0;
    struct ledger_event tmpl = {T0, "n1", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL}, *evs;
    const char *f = th_src_path("tests/fixtures/nvidia-smi/"
                                "a100-sxm4-40gb_nvidia-smi-mig-lgip-cgi-lgi-lcip-L.txt");
    assert_int_equal(ts_file_read(f, 1 << 20, &text, &len, NULL), TS_OK);
    assert_int_equal(ledger_parse_smi(text, &tmpl, &evs, &n, &arena, NULL), TS_OK);
    free(text);
    assert_int_equal(n, 4);
    assert_string_equal(evs[1].gpu_uuid, "GPU-9e4aeb94-01c0-5173-4811-4ca60f77b3a9");
    assert_string_equal(evs[1].instance_uuid, "MIG-8970491e-16e0-5140-9f8f-d561baa3c186");
    assert_string_equal(evs[1].profile, "1c.2g.10gb");
    assert_string_equal(evs[1].tenant, "unassigned");
    assert_string_equal(evs[1].source, "nvidia-smi");
    free(evs);
    free(arena);
    f = th_src_path(
        "tests/fixtures/nvidia-smi/rtx-pro-6000-bw-server_nvidia-smi-L-lgip-lgipp-lgi.txt");
    assert_int_equal(ts_file_read(f, 1 << 20, &text, &len, NULL), TS_OK);
    assert_int_equal(ledger_parse_smi(text, &tmpl, &evs, &n, &arena, NULL), TS_OK);
    free(text);
    assert_int_equal(n, 8);
    assert_string_equal(evs[7].gpu_uuid, "GPU-f4c61521-240a-da09-2787-e576034e197e");
    assert_string_equal(evs[7].instance_uuid, "");
    free(evs);
    free(arena);
    assert_int_equal(ledger_parse_smi("no gpus here\n", &tmpl, &evs, &n, &arena, NULL), TS_INVALID);
}

static void test_record_validation(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/val.db", dir);
    struct store *st = open_path(path);
    struct ledger_event ok = {T0, "", "GPU-A", "", "", "", "", "t", "", "plan"};
    struct ledger_event ev = ok;
    struct ts_error e = {0};
    ev.ts_ms = 0;
    assert_int_equal(ledger_record(st, NULL, 0, &ev, NULL, &e), TS_INVALID);
    ev = ok, ev.tenant = "";
    assert_int_equal(ledger_record(st, NULL, 0, &ev, NULL, &e), TS_INVALID);
    ev = ok, ev.gpu_uuid = NULL;
    assert_int_equal(ledger_record(st, NULL, 0, &ev, NULL, &e), TS_INVALID);
    ev = ok, ev.source = "guess";
    assert_int_equal(ledger_record(st, NULL, 0, &ev, NULL, &e), TS_INVALID);
    assert_non_null(strstr(e.msg, "not one of plan, observed, nvidia-smi"));
    ev = ok, ev.placement = "0-4";
    assert_int_equal(ledger_record(st, NULL, 0, &ev, NULL, &e), TS_INVALID);
    ev = ok, ev.instance_uuid = "MIG-X", ev.gpu_uuid = "";
    int64_t seq = 0;
    assert_int_equal(ledger_record(st, NULL, 0, &ev, &seq, &e), TS_OK);
    assert_int_equal(seq, 1);
    store_close(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_verifies),
        cmocka_unit_test(test_edited_tenant),
        cmocka_unit_test(test_deleted_entry),
        cmocka_unit_test(test_inserted_entry),
        cmocka_unit_test(test_appended_entry),
        cmocka_unit_test(test_swapped_entries),
        cmocka_unit_test(test_rehashed_edit_needs_hmac),
        cmocka_unit_test(test_who),
        cmocka_unit_test(test_history_export),
        cmocka_unit_test(test_canonical_unambiguous),
        cmocka_unit_test(test_known_answer),
        cmocka_unit_test(test_time),
        cmocka_unit_test(test_nvidia_smi),
        cmocka_unit_test(test_record_validation),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
