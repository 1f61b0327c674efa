/*
 * test_store_schema.c - opening a store (store_suite.h): URLs refused
 * without echoing credentials, each migration recorded once, databases of
 * older schemas upgraded in place (v1, v7 and v8 on SQLite, v3 on
 * PostgreSQL),
 * a newer one refused, and PostgreSQL's reconnect after its backend died.
 */
#include <inttypes.h>

#include "store_suite.h"

/* ---- cases ------------------------------------------------------------- */

static void expect_open_fails(const char *url, ts_status want, const char *part)
{
    struct store *st = (struct store *)1;
    struct ts_error err = {0};
    assert_int_equal(store_open(url, &st, &err), want);
    assert_null(st);
    if (!strstr(err.msg, part))
        print_message("'%s' not in '%s'\n", part, err.msg);
    assert_non_null(strstr(err.msg, part));
}

static void test_bad_urls(void **state)
{
    (void)state;
    expect_open_fails(NULL, TS_USAGE, "sqlite:PATH");
    expect_open_fails("", TS_USAGE, "unsupported database URL");
    expect_open_fails("sqlite:", TS_USAGE, "unsupported database URL");
    expect_open_fails("mysql://u:secret@h/db", TS_USAGE, "postgres://");
    expect_open_fails("/tmp/x.db", TS_USAGE, "unsupported");
    expect_open_fails("sqlite:/nonexistent-dir/x/y.db", TS_IO, "sqlite: /nonexistent-dir");
    expect_open_fails("postgres://nobody:secret@127.0.0.1:1/none?connect_timeout=2", TS_IO,
                      "postgresql: ");
    struct ts_error err = {0};
    struct store *st = NULL;
    store_open("mysql://u:secret@h/db", &st, &err);
    assert_null(strstr(err.msg, "secret")); /* never echo credentials */
}

/* Migrations are recorded once, and a database from a newer tessera is
 * refused rather than written with an older schema's assumptions. */
static void test_schema_versions(void **state)
{
    assert_int_equal(sqlite_setup(state), 0);
    struct fx *f = *state;
    for (int i = 0; i < 3; i++)
        store_close(open_or_skip(state));
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->url + 7, &db), SQLITE_OK);
    assert_int_equal(sqlite_int(db, "SELECT count(*) FROM schema_version"), 9);
    assert_int_equal(sqlite_int(db, "SELECT max(version) FROM schema_version"), 9);
    /* v8: no index on time beside the primary key (v9: of the readings) */
    assert_int_equal(sqlite_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' "
                                    "AND tbl_name = 'readings' AND sql IS NOT NULL"),
                     0);
    sqlite3_stmt *s = NULL;
    sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), "wal");
    sqlite3_finalize(s);
    assert_int_equal(sqlite3_exec(db, "INSERT INTO schema_version VALUES (99)", NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    struct store *st = NULL;
    struct ts_error err = {0};
    assert_int_equal(store_open(f->url, &st, &err), TS_INVALID);
    assert_non_null(strstr(err.msg, "newer"));
    assert_int_equal(sqlite_teardown(state), 0);
}

/* Drop every other connection to the test database, as a restart does. */
static void pg_kill_others(const char *url)
{
    PGconn *c = PQconnectdb(url);
    PGresult *r = PQexec(c, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE pid <> pg_backend_pid() AND datname = current_database()");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_true(PQntuples(r) >= 1);
    PQclear(r);
    PQfinish(c);
}

/* PostgreSQL only: the server drops the connection (as on a restart). A
 * batch reconnects at once; a scan or an exposition in flight fails with
 * the backend named, the next call works; nothing is lost or doubled. */
static void test_pg_reconnect(void **state)
{
    struct store *st = open_or_skip(state);
    const char *url = ((struct fx *)*state)->url;
    struct store_sample s[3] = {sample("GPU-1", 1), sample("GPU-1", 2), sample("GPU-1", 3)};
    assert_int_equal(put(st, s, 1), 1);
    pg_kill_others(url);
    assert_int_equal(put(st, s, 3), 2); /* BEGIN found it dead and reconnected */
    pg_kill_others(url);
    struct scan sc = {.ordered = 1};
    struct ts_error err = {0};
    assert_int_equal(store_scan_samples(st, 0, 10, collect, &sc, &err), TS_IO);
    assert_non_null(strstr(err.msg, "postgresql: "));
    assert_int_equal(scan_all(st, 0, 10).n, 3); /* the next call reconnected */
    pg_kill_others(url);
    assert_int_equal(store_put_exposition(st, "u", 1, "x", 1, &err), TS_IO);
    assert_int_equal(put_expo(st, "u", 1, "x", 1), TS_OK);
    struct expo_seen e = {0};
    assert_int_equal(scan_expo(st, &e)->calls, 1);
    assert_int_equal(put(st, s, 3), 0);
    store_close(st);
}

static PGresult *pg_ok(PGconn *c, const char *sql, ExecStatusType want)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != want)
        print_message("%s: %s", sql, PQerrorMessage(c));
    assert_int_equal(PQresultStatus(r), want);
    return r;
}

/* PostgreSQL only: a database of schema v3 (samples_ts a B-tree) is moved
 * to v9 in place: the rows stay, as readings with a BRIN index on time. */
static void test_pg_upgrade_from_v3(void **state)
{
    if (!*state)
        skip();
    PGconn *c = PQconnectdb(((struct fx *)*state)->url);
    PQsetNoticeProcessor(c, quiet, NULL);
    PQclear(pg_ok(c,
                  "CREATE TABLE schema_version (version BIGINT PRIMARY KEY);"
                  "INSERT INTO schema_version VALUES (1), (2), (3);"
                  "CREATE TABLE samples (node TEXT NOT NULL, device TEXT NOT NULL,"
                  " ts_ms BIGINT NOT NULL, model TEXT NOT NULL, profile TEXT NOT NULL,"
                  " tenant TEXT NOT NULL, ns TEXT NOT NULL, pod TEXT NOT NULL,"
                  " share_ppm BIGINT NOT NULL, util_ppm BIGINT NOT NULL,"
                  " workload TEXT NOT NULL DEFAULT '', PRIMARY KEY (device, ts_ms));"
                  "CREATE INDEX samples_ts ON samples (ts_ms);"
                  "CREATE TABLE ledger (seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
                  " ts_ms BIGINT NOT NULL, node TEXT NOT NULL, gpu_uuid TEXT NOT NULL,"
                  " instance_uuid TEXT NOT NULL, gi_id TEXT NOT NULL, profile TEXT NOT NULL,"
                  " placement TEXT NOT NULL, tenant TEXT NOT NULL, workload TEXT NOT NULL,"
                  " source TEXT NOT NULL, hash TEXT NOT NULL, prev_hash TEXT NOT NULL,"
                  " mac TEXT NOT NULL);"
                  "CREATE TABLE expositions (source TEXT NOT NULL PRIMARY KEY,"
                  " ts_ms BIGINT NOT NULL, body BYTEA NOT NULL);"
                  "INSERT INTO samples VALUES ('n', 'GPU-old', 42, 'm', '', 't', 'ns', '',"
                  " 1000000, -1, 'w')",
                  PGRES_COMMAND_OK));
    struct store *st = open_or_skip(state);
    assert_int_equal(scan_all(st, 0, 100).n, 1);
    struct store_sample s = sample("GPU-old", 57);
    assert_int_equal(put(st, &s, 1), 1);
    store_close(st);
    PGresult *r = pg_ok(c,
                        "SELECT (SELECT max(version) FROM schema_version), "
                        "(SELECT indexdef FROM pg_indexes WHERE indexname = 'readings_ts'), "
                        "(SELECT count(*) FROM samples)",
                        PGRES_TUPLES_OK);
    assert_string_equal(PQgetvalue(r, 0, 0), "9");
    assert_non_null(strstr(PQgetvalue(r, 0, 1), "USING brin (ts_ms)")); /* v9: the readings' */
    assert_string_equal(PQgetvalue(r, 0, 2), "2");
    PQclear(r);
    PQfinish(c);
}

/* A database written by a tessera of schema v1 (samples and ledger only)
 * is upgraded in place: its rows stay, expositions work. */
static void test_upgrade_from_v1(void **state)
{
    assert_int_equal(sqlite_setup(state), 0);
    struct fx *f = *state;
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->url + 7, &db), SQLITE_OK);
    const char *v1 =
        "CREATE TABLE schema_version (version BIGINT PRIMARY KEY);"
        "INSERT INTO schema_version VALUES (1);"
        "CREATE TABLE samples (node TEXT NOT NULL, device TEXT NOT NULL, ts_ms BIGINT NOT NULL,"
        " model TEXT NOT NULL, profile TEXT NOT NULL, tenant TEXT NOT NULL, ns TEXT NOT NULL,"
        " pod TEXT NOT NULL, share_ppm BIGINT NOT NULL, util_ppm BIGINT NOT NULL,"
        " PRIMARY KEY (device, ts_ms));"
        "CREATE TABLE ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ms BIGINT NOT NULL,"
        " node TEXT NOT NULL, gpu_uuid TEXT NOT NULL, instance_uuid TEXT NOT NULL,"
        " gi_id TEXT NOT NULL, profile TEXT NOT NULL, placement TEXT NOT NULL,"
        " tenant TEXT NOT NULL, workload TEXT NOT NULL, source TEXT NOT NULL,"
        " hash TEXT NOT NULL, prev_hash TEXT NOT NULL, mac TEXT NOT NULL);"
        "INSERT INTO samples VALUES ('n', 'GPU-old', 42, 'm', '', 't', 'ns', '', 1000000, -1);";
    assert_int_equal(sqlite3_exec(db, v1, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    struct store *st = open_or_skip(state);
    struct scan sc = scan_all(st, 0, 100);
    assert_int_equal(sc.n, 1);
    assert_string_equal(sc.device, "GPU-old");
    assert_int_equal(put_expo(st, "f", 1, "x 1\n", 4), TS_OK);
    store_close(st);
    assert_int_equal(sqlite3_open(f->url + 7, &db), SQLITE_OK);
    assert_int_equal(sqlite_int(db, "SELECT max(version) FROM schema_version"), 9);
    assert_int_equal(sqlite_int(db, "SELECT count(*) FROM expositions"), 1);
    assert_int_equal(sqlite_int(db, "SELECT count(*) FROM samples WHERE workload = ''"), 1);
    sqlite3_close(db);
    assert_int_equal(sqlite_teardown(state), 0);
}

/* What a database of schema v8 held: one wide table of samples, each with
 * its texts (made here from a v9 database's). */
static const char to_v8[] =
    "CREATE TABLE wide AS SELECT * FROM samples;"
    "DROP VIEW samples; DROP TABLE readings; DROP TABLE attributions;"
    "CREATE TABLE samples (node TEXT NOT NULL, device TEXT NOT NULL, ts_ms BIGINT NOT NULL,"
    " model TEXT NOT NULL, profile TEXT NOT NULL, tenant TEXT NOT NULL, ns TEXT NOT NULL,"
    " pod TEXT NOT NULL, share_ppm BIGINT NOT NULL, util_ppm BIGINT NOT NULL,"
    " workload TEXT NOT NULL DEFAULT '', PRIMARY KEY (device, ts_ms));"
    "INSERT INTO samples SELECT * FROM wide; DROP TABLE wide;"
    "DELETE FROM schema_version WHERE version = 9;";

/* Samples on two devices, two attributions on one (its pod moved), one
 * split key "DEVICE#..."; the same texts where they repeat. */
static size_t old_samples(struct store_sample *s)
{
    s[0] = sample("GPU-a", 10);
    s[1] = sample("GPU-a", 20);
    s[2] = sample("GPU-a#t/p", 70);
    s[3] = sample("GPU-b", 40);
    s[1].pod = "p-moved";
    s[1].workload = "w2";
    s[3].tenant = "other";
    return 4;
}

/* Each scanned sample equals want[i] in every column. */
struct compare {
    const struct store_sample *want;
    size_t n, i, bad;
};

static int compare_row(void *ctx, const struct store_sample *s)
{
    struct compare *c = ctx;
    const struct store_sample *w = c->i < c->n ? &c->want[c->i] : NULL;
    c->i++;
    if (!w || strcmp(w->node, s->node) || strcmp(w->device, s->device) || w->ts_ms != s->ts_ms ||
        strcmp(w->model, s->model) || strcmp(w->profile, s->profile) ||
        strcmp(w->tenant, s->tenant) || strcmp(w->ns, s->ns) || strcmp(w->pod, s->pod) ||
        w->share_ppm != s->share_ppm || w->util_ppm != s->util_ppm ||
        strcmp(w->workload ? w->workload : "", s->workload)) {
        print_message("row %zu: %s at %" PRId64 " differs\n", c->i, s->device, s->ts_ms);
        c->bad++;
    }
    return 0;
}

static void expect_samples(struct store *st, const struct store_sample *want, size_t n)
{
    struct compare c = {want, n, 0, 0};
    struct ts_error err = {0};
    assert_int_equal(store_scan_samples(st, 0, 100, compare_row, &c, &err), TS_OK);
    assert_int_equal(c.i, n);
    assert_int_equal(c.bad, 0);
}

/* A SQLite database of schema v7 (samples_ts a B-tree on time) or v8
 * moves to v9 in place: the index goes, each sample becomes a reading and
 * its attribution (one per distinct texts), every column stays, the
 * newest sample and a split device's next scrape are still found, and a
 * new batch reuses the attributions there. */
static void upgrade_from(void **state, const char *old_sql)
{
    assert_int_equal(sqlite_setup(state), 0);
    struct fx *f = *state;
    struct store *st = open_or_skip(state);
    struct store_sample s[5];
    size_t n = old_samples(s);
    assert_int_equal(put(st, s, n), n);
    store_close(st);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(f->url + 7, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, to_v8, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, old_sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    st = open_or_skip(state);
    int found = 0;
    assert_int_equal(last_sample(st, &found), 70);
    assert_int_equal(scraped_after(st, "GPU-a", 1, 40), 1);
    expect_samples(st, s, n);
    s[n] = sample("GPU-b", 50);
    s[n].tenant = "other";
    assert_int_equal(put(st, &s[n], 1), 1);
    expect_samples(st, s, n + 1);
    store_close(st);
    assert_int_equal(sqlite3_open(f->url + 7, &db), SQLITE_OK);
    assert_int_equal(sqlite_int(db, "SELECT max(version) FROM schema_version"), 9);
    assert_int_equal(sqlite_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'samples_ts'"),
                     0);
    assert_int_equal(sqlite_int(db, "SELECT count(*) FROM readings"), 5);
    assert_int_equal(sqlite_int(db, "SELECT count(*) FROM attributions"), 3);
    sqlite3_close(db);
    assert_int_equal(sqlite_teardown(state), 0);
}

static void test_upgrade_from_v7(void **state)
{
    upgrade_from(state, "CREATE INDEX samples_ts ON samples (ts_ms);"
                        "DELETE FROM schema_version WHERE version = 8");
}

static void test_upgrade_from_v8(void **state) { upgrade_from(state, ""); }

int main(void)
{
    const struct CMUnitTest common[] = {
        cmocka_unit_test(test_bad_urls), cmocka_unit_test(test_schema_versions),
        cmocka_unit_test(test_upgrade_from_v1), cmocka_unit_test(test_upgrade_from_v7),
        cmocka_unit_test(test_upgrade_from_v8)};
    const struct CMUnitTest pg[] = {
        cmocka_unit_test_setup_teardown(test_pg_reconnect, pg_setup, pg_teardown),
        cmocka_unit_test_setup_teardown(test_pg_upgrade_from_v3, pg_setup, pg_teardown)};
    return store_suite_run("store_schema", common, STORE_NCASES(common), NULL, 0, pg,
                           STORE_NCASES(pg));
}
