/*
 * test_usage.c - GPU-hours from scrapes: whole intervals, capped gaps,
 * re-sent scrapes, out-of-order points, tenant changes on one device, the
 * usage basis, exact integer totals over a day of 15 s scrapes, a pod's
 * key closed by its card's next scrape, and a shared card whose pods come
 * and go billed the same in any split of the time.
 */
#include "helpers.h"

#include <string.h>
#include "meter/usage.h"

static const struct meter_total *find(const struct meter_usage *u, const char *tenant)
{
    for (size_t i = 0; i < u->ntotals; i++)
        if (strcmp(u->totals[i].tenant, tenant) == 0)
            return &u->totals[i];
    return NULL;
}

static void add(struct meter_usage *u, const char *dev, int64_t s, const char *tenant,
                int64_t share, int64_t util)
{
    struct meter_point p = {dev, s * 1000, tenant, "h100-80gb-sxm", "1g.10gb", share, util, NULL};
    assert_int_equal(meter_usage_add(u, &p), TS_OK);
}

static void test_intervals_and_gaps(void **state)
{
    (void)state;
    struct meter_usage u;
    meter_usage_init(&u, 15000);
    /* a whole card for 3 intervals of 15 s, then a 10-minute gap billed as 30 s */
    for (int i = 0; i < 4; i++)
        add(&u, "GPU-a", i * 15, "t1", 1000000, 500000);
    add(&u, "GPU-a", 45 + 600, "t1", 1000000, 500000);
    const struct meter_total *t = find(&u, "t1");
    assert_non_null(t);
    /* (45 + 30) s of a whole GPU = 75/3600 h = 20833.33 uh */
    assert_int_equal(meter_alloc_uh(t), 20833);
    assert_int_equal(meter_usage_uh(t), 10417); /* half of it, rounded half up */
    meter_usage_release(&u);
}

static void test_duplicates_and_order(void **state)
{
    (void)state;
    struct meter_usage u;
    meter_usage_init(&u, 15000);
    add(&u, "GPU-a", 0, "t1", 142857, -1);
    add(&u, "GPU-a", 15, "t1", 142857, -1);
    add(&u, "GPU-a", 15, "t1", 142857, -1); /* re-sent: once */
    add(&u, "GPU-a", 30, "t1", 142857, -1);
    struct meter_point old = {"GPU-a", 10000, "t1", "m", "p", 1, 1, NULL};
    assert_int_equal(meter_usage_add(&u, &old), TS_INVALID);
    assert_int_equal(u.out_of_order, 1);
    /* 30 s x 1/7 of a card: 30000 x 142857 / 3600000 = 1190.475 */
    assert_int_equal(meter_alloc_uh(find(&u, "t1")), 1190);
    /* unknown utilisation is its own column, never used */
    assert_int_equal(meter_usage_uh(find(&u, "t1")), 0);
    assert_int_equal(meter_unknown_uh(find(&u, "t1")), 1190);
    meter_usage_release(&u);
}

/* Known and unknown intervals of one device: each in its column. */
static void test_unknown_column(void **state)
{
    (void)state;
    struct meter_usage u;
    meter_usage_init(&u, 15000);
    add(&u, "GPU-a", 0, "t1", 1000000, 250000); /* 0-15 s: a quarter busy */
    add(&u, "GPU-a", 15, "t1", 1000000, -1);    /* 15-45 s: unknown */
    add(&u, "GPU-a", 45, "t1", 1000000, 0);     /* 45-60 s: idle */
    add(&u, "GPU-a", 60, "t1", 1000000, 0);
    const struct meter_total *t = find(&u, "t1");
    assert_int_equal(meter_alloc_uh(t), 16667);  /* 60 s */
    assert_int_equal(meter_usage_uh(t), 1042);   /* 15 s x 0.25 = 3.75 s */
    assert_int_equal(meter_unknown_uh(t), 8333); /* 30 s */
    meter_usage_release(&u);
}

/* The interval belongs to the tenant of its first scrape; devices are apart. */
static void test_tenant_change_and_devices(void **state)
{
    (void)state;
    struct meter_usage u;
    meter_usage_init(&u, 15000);
    add(&u, "GPU-a", 0, "t1", 1000000, 1000000);
    add(&u, "GPU-a", 15, "t2", 1000000, 1000000);
    add(&u, "GPU-a", 30, "t2", 1000000, 1000000);
    add(&u, "GPU-b", 0, "t1", 1000000, 1000000); /* a new device: no interval from GPU-a */
    add(&u, "GPU-b", 15, "t1", 1000000, 1000000);
    assert_int_equal(meter_alloc_uh(find(&u, "t1")), 8333); /* 30 s */
    assert_int_equal(meter_alloc_uh(find(&u, "t2")), 4167); /* 15 s */
    meter_usage_release(&u);
}

/* A day of 15 s scrapes of one MIG instance (3/8 of a card): exactly 9 hours,
 * 375000 ppm x 86,385 s (the last scrape opens no interval). */
static void test_day_exact(void **state)
{
    (void)state;
    struct meter_usage u;
    meter_usage_init(&u, 15000);
    for (int64_t s = 0; s < 86400; s += 15)
        add(&u, "MIG-x", s, "t1", 375000, 250000);
    int64_t want = (86385LL * 1000 * 375000 + 1800000) / 3600000;
    assert_int_equal(meter_alloc_uh(find(&u, "t1")), want);
    /* usage basis: a quarter of that (engine active 25% of the time) */
    assert_int_equal(meter_usage_uh(find(&u, "t1")),
                     (86385LL * 1000 * 375000 / 4 + 1800000) / 3600000);
    meter_usage_release(&u);
}

/* Totals sort by tenant, then model, then profile. */
static void test_sort(void **state)
{
    (void)state;
    struct meter_usage u;
    meter_usage_init(&u, 15000);
    static const char *const rows[][3] = {
        {"t2", "m1", "p1"}, {"t1", "m2", "p1"}, {"t1", "m1", "p2"}, {"t1", "m1", "p1"}};
    for (int i = 0; i < 4; i++) {
        struct meter_point p = {"GPU-a", i * 1000, rows[i][0], rows[i][1], rows[i][2], 1, 1, NULL};
        assert_int_equal(meter_usage_add(&u, &p), TS_OK);
        p.ts_ms += 500; /* closes an interval: one total per row */
        assert_int_equal(meter_usage_add(&u, &p), TS_OK);
    }
    assert_int_equal(u.ntotals, 4);
    meter_usage_sort(&u);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(u.totals[i].tenant, rows[3 - i][0]);
        assert_string_equal(u.totals[i].model, rows[3 - i][1]);
        assert_string_equal(u.totals[i].profile, rows[3 - i][2]);
    }
    meter_usage_release(&u);
}

/* A pod's key split off a card ("G#ns/p") is closed by the card's next
 * scrape under any key; another card's scrapes do not close it, and a
 * key alone on its card keeps its last interval open. */
static void test_closed_by_device(void **state)
{
    (void)state;
    for (int close = 0; close < 2; close++) {
        struct meter_usage u;
        meter_usage_init(&u, 15000);
        u.close_by_device = close;
        for (int i = 0; i < 4; i++)
            add(&u, "G", i * 15, "owner", 500000, 0);
        add(&u, "G#ns/p", 0, "guest", 500000, 0);
        add(&u, "G#ns/p", 15, "guest", 500000, 0);
        add(&u, "H", 60, "other", 1000000, 0);
        add(&u, "H", 75, "other", 1000000, 0);
        assert_int_equal(meter_usage_finish(&u), TS_OK);
        /* guest: 15 s, and with close_by_device its last one to G's 30 s */
        assert_int_equal(meter_alloc_uh(find(&u, "guest")), close ? 4167 : 2083);
        assert_int_equal(meter_alloc_uh(find(&u, "owner")), 6250); /* 45 s x 1/2 */
        assert_int_equal(meter_alloc_uh(find(&u, "other")), 4167); /* 15 s, H's last open */
        meter_usage_release(&u);
    }
}

/* A shared card: the owner's key every 15 s, two pods coming and going
 * (a pod's own next point up to 60 s away), and another card. */
static const struct {
    const char *dev, *tenant;
    int s;
} churn[] = {
    {"G", "owner", 0},    {"G", "owner", 15},    {"G", "owner", 30},  {"G", "owner", 45},
    {"G", "owner", 75},   {"G", "owner", 90},    {"G", "owner", 105}, {"G", "owner", 120},
    {"G", "owner", 135},  {"G#ns/a", "a", 0},    {"G#ns/a", "a", 15}, {"G#ns/a", "a", 60},
    {"G#ns/a", "a", 75},  {"G#ns/a", "a", 135},  {"G#ns/b", "b", 30}, {"G#ns/b", "b", 45},
    {"G#ns/b", "b", 105}, {"G#ns/b", "b", 150},  {"G/1", "mig", 0},   {"G/1", "mig", 15},
    {"G/1#ns/c", "c", 0}, {"G/1#ns/c", "c", 45}, {"H", "other", 10},  {"H", "other", 25},
};

/* The exact ms x ppm of each tenant in [from, to), the points fed as
 * meter_usage_scan reads them: those within two intervals of the window. */
static void scan_window(int64_t from, int64_t to, __int128 *sums, size_t n)
{
    struct meter_usage u;
    meter_usage_init(&u, 15000);
    u.close_by_device = 1;
    u.from_ms = from;
    u.to_ms = to;
    for (size_t i = 0; i < n; i++) {
        int64_t ts = churn[i].s * 1000LL;
        if (ts >= from - 30000 && ts < to + 30000)
            add(&u, churn[i].dev, churn[i].s, churn[i].tenant, 500000, 250000);
    }
    assert_int_equal(meter_usage_finish(&u), TS_OK);
    for (size_t i = 0; i < n; i++) {
        const struct meter_total *t = find(&u, churn[i].tenant);
        sums[i] = t ? t->alloc_num + t->usage_num : 0;
    }
    meter_usage_release(&u);
}

/* Every split of the time at any millisecond adds up to the whole; a
 * pod's point is billed up to its card's next scrape, never past it. */
static void test_split_anywhere(void **state)
{
    (void)state;
    enum { N = sizeof(churn) / sizeof(churn[0]) };
    __int128 whole[N], a[N], b[N];
    scan_window(INT64_MIN / 2, INT64_MAX / 2, whole, N);
    for (int64_t cut = -1000; cut <= 200000; cut += 250) {
        scan_window(INT64_MIN / 2, cut, a, N);
        scan_window(cut, INT64_MAX / 2, b, N);
        for (size_t i = 0; i < N; i++)
            if (a[i] + b[i] != whole[i])
                fail_msg("cut at %lld ms: %s's halves differ from the whole", (long long)cut,
                         churn[i].tenant);
    }
    /* a: 0-15, 15-30 (G's next scrape), 60-75, 75-90, 135-150 = 75 s of half a
     * card; c: 0-15 (G/1's next), not 45 s; b: 30-60, 105-120 = 45 s */
    struct meter_usage u;
    meter_usage_init(&u, 15000);
    u.close_by_device = 1;
    for (size_t i = 0; i < N; i++)
        add(&u, churn[i].dev, churn[i].s, churn[i].tenant, 500000, 250000);
    assert_int_equal(meter_usage_finish(&u), TS_OK);
    assert_int_equal(meter_alloc_uh(find(&u, "a")), 10417);
    assert_int_equal(meter_alloc_uh(find(&u, "b")), 6250);
    assert_int_equal(meter_alloc_uh(find(&u, "c")), 2083);
    meter_usage_release(&u);
}

/* A window that ends in an outage keeps the device's last point read as a
 * tail; billed (the caller found a later scrape) it is the part of its
 * capped interval inside the window, as a wider window bills it. A point
 * past the window's end, or whose cap ends before it starts, is no tail. */
static void test_tail_of_window(void **state)
{
    (void)state;
    struct meter_usage u;
    meter_usage_init(&u, 15000);
    u.close_by_device = 1;
    u.from_ms = 0;
    u.to_ms = 40000;
    add(&u, "GPU-a", 0, "t1", 1000000, -1);
    add(&u, "GPU-a", 15, "t1", 1000000, -1);
    add(&u, "GPU-a", 30, "t1", 1000000, -1); /* then down until after the window's reach */
    add(&u, "GPU-b", 0, "t1", 1000000, -1);
    add(&u, "GPU-b", 45, "t1", 1000000, -1); /* past the end: no tail */
    assert_int_equal(meter_usage_finish(&u), TS_OK);
    assert_int_equal(u.ntails, 1);
    assert_string_equal(u.tails[0].family, "GPU-a");
    assert_int_equal(u.tails[0].p.ts_ms, 30000);
    /* before the tail: GPU-a 30 s, GPU-b its capped 30 s */
    assert_true(find(&u, "t1")->alloc_num == (__int128)60000 * 1000000);
    assert_int_equal(meter_usage_bill_tail(&u, 0), TS_OK);
    /* the tail: [30 s, 60 s) capped, 10 s of it inside the window */
    assert_true(find(&u, "t1")->alloc_num == (__int128)70000 * 1000000);
    meter_usage_release(&u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tail_of_window),
        cmocka_unit_test(test_intervals_and_gaps),
        cmocka_unit_test(test_duplicates_and_order),
        cmocka_unit_test(test_unknown_column),
        cmocka_unit_test(test_tenant_change_and_devices),
        cmocka_unit_test(test_day_exact),
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_closed_by_device),
        cmocka_unit_test(test_split_anywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
