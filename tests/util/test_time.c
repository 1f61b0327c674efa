/*
 * test_time.c - util/time.h around the calendar's edges: leap years (and
 * the century rule), 1970 and the second before it, year 0000 and 9999,
 * leap seconds, offsets both ways, every field's range; RFC 3339 written
 * back (negative times too); none of it moved by TZ, not even by a zone
 * with leap seconds, which moves glibc's timegm; the clock in whole and
 * fractional milliseconds.
 */
#include "helpers.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/time.h"

/* Each expected value below is Unix time from Python's calendar.timegm
 * (or by hand for year 0000), not from the code under test. */
static const struct {
    const char *text;
    int64_t ms;
} good[] = {
    {"1970-01-01T00:00:00Z", 0},
    {"1970-01-01T00:00:00.001Z", 1},
    {"1969-12-31T23:59:59Z", -1000}, /* timegm's error value, as a real date */
    {"1969-12-31T23:59:59.999Z", -1},
    {"1969-12-31T19:00:00-05:00", 0}, /* a negative offset */
    {"1970-01-01T05:30:00+05:30", 0},
    {"1970-01-01T00:00:00+23:59", -86340000},
    {"1970-01-01T00:00:00-23:59", 86340000},
    {"2024-02-29T00:00:00Z", 1709164800000},  /* divisible by 4 */
    {"2000-02-29T00:00:00Z", 951782400000},   /* by 400 */
    {"2400-02-29T12:00:00Z", 13574606400000}, /* by 400 */
    {"1600-02-29T00:00:00Z", -11670998400000},
    {"1900-03-01T00:00:00Z", -2203891200000},
    {"2016-12-31T23:59:60Z", 1483228800000}, /* a leap second: the next minute's 0 */
    {"9999-12-31T23:59:59Z", 253402300799000},
    {"9999-12-31T23:59:59.999Z", 253402300799999},
    {"9999-12-31T23:59:59-01:00", 253402304399000}, /* past 9999 in UTC */
    {"0000-01-01T00:00:00Z", -62167219200000},
    {"0000-02-29T00:00:00Z", -62162121600000},      /* year 0 is a leap year */
    {"2023-11-14t22:13:20z", 1700000000000},        /* lower case */
    {"2023-11-14 22:13:20Z", 1700000000000},        /* a space for T */
    {"2023-11-14T22:13:20.123456Z", 1700000000123}, /* digits past ms cut */
    {"999999999999", 999999999999000},              /* 12 digits: Unix seconds */
};

static const char *const bad[] = {
    "2023-02-29T00:00:00Z", /* not a leap year */
    "1900-02-29T00:00:00Z", /* by 100, not by 400 */
    "2100-02-29T00:00:00Z",      "2023-04-31T00:00:00Z",
    "2023-01-32T00:00:00Z",      "2023-00-10T00:00:00Z",
    "2023-01-00T00:00:00Z",      "2023-13-01T00:00:00Z",
    "2023-01-01T24:00:00Z",      "2023-01-01T23:60:00Z",
    "2023-01-01T23:59:61Z",      "2023-01-01T00:00:00+24:00",
    "2023-01-01T00:00:00+01:60", "2023-01-01T00:00:00+0100",
    "2023-01-01T00:00:00.Z", /* a dot without digits */
    "10000-01-01T00:00:00Z", /* five digits */
    "2023-1-01T00:00:00Z",       "2023-01-01T00:00:00Zjunk",
    "-001-01-01T00:00:00Z",      "1700000000000", /* 13 digits: not Unix seconds */
};

static void test_calendar(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        int64_t ms = 42;
        if (!ts_time_parse(good[i].text, &ms) || ms != good[i].ms)
            fail_msg("%s: got %lld, want %lld", good[i].text, (long long)ms, (long long)good[i].ms);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t ms;
        if (ts_time_parse(bad[i], &ms))
            fail_msg("%s was taken as %lld", bad[i], (long long)ms);
    }
}

static const struct {
    int64_t ms;
    const char *text;
} formats[] = {
    {0, "1970-01-01T00:00:00Z"},
    {-1, "1969-12-31T23:59:59.999Z"},
    {-1000, "1969-12-31T23:59:59Z"},
    {-86400000, "1969-12-31T00:00:00Z"},
    {1709164800250, "2024-02-29T00:00:00.250Z"},
    {253402300799000, "9999-12-31T23:59:59Z"},
    {253402300800000, "10000-01-01T00:00:00Z"},
    {-62167219200000, "0000-01-01T00:00:00Z"},
    {-62167219200001, "-001-12-31T23:59:59.999Z"},
};

static void test_format(void **state)
{
    (void)state;
    char buf[40];
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
        ts_time_format(formats[i].ms, buf);
        assert_string_equal(buf, formats[i].text);
    }
    /* what it writes reads back: a time a day (and 1.001 s later each day)
     * over 400 years around 1970 */
    const int64_t span = 200 * 31556952000LL; /* 200 mean Gregorian years */
    for (int64_t ms = -span; ms < span; ms += 86400000 + 1001) {
        int64_t back;
        ts_time_format(ms, buf);
        assert_true(ts_time_parse(buf, &back));
        assert_int_equal(back, ms);
    }
}

/* An odd zone: were local time used anywhere, every answer would move by
 * 5 h 30 (and this checks that the zone did take effect). */
static void test_tz_ignored(void **state)
{
    assert_int_equal(setenv("TZ", "<+0530>-05:30", 1), 0);
    tzset();
    struct tm epoch = {.tm_year = 70, .tm_mday = 1};
    assert_int_equal((int64_t)mktime(&epoch), -19800);
    test_calendar(state);
    test_format(state);
    unsetenv("TZ");
    tzset();
}

/* A zone with leap seconds: glibc's timegm and gmtime_r count them (27 s
 * by 2024), which is why time.c does its own calendar; Unix time (and so
 * RFC 3339 read here) does not. Skipped where tzdata has no right/ zones. */
static void test_tz_leap_seconds(void **state)
{
    assert_int_equal(setenv("TZ", "right/UTC", 1), 0);
    tzset();
    struct tm leap_day = {.tm_year = 124, .tm_mon = 1, .tm_mday = 29};
    int64_t libc = (int64_t)timegm(&leap_day);
    if (libc == 1709164800) {
        unsetenv("TZ");
        tzset();
        skip(); /* no right/UTC here: nothing to tell apart */
    }
    assert_int_equal(libc, 1709164827);
    test_calendar(state);
    test_format(state);
    unsetenv("TZ");
    tzset();
}

/* One clock reading for every module: whole and fractional milliseconds
 * agree, and the fractional one resolves below a millisecond (the fight's
 * latencies need it). */
static void test_clocks(void **state)
{
    (void)state;
    int64_t wall = ts_clock_ms(CLOCK_REALTIME), unix_s = (int64_t)time(NULL);
    assert_true(wall / 1000 >= unix_s - 1 && wall / 1000 <= unix_s + 1);
    int64_t a = ts_clock_ms(CLOCK_MONOTONIC);
    double f = ts_clock_msf(CLOCK_MONOTONIC);
    int64_t b = ts_clock_ms(CLOCK_MONOTONIC);
    assert_true(a > 0 && f >= (double)a && f < (double)b + 1 && b - a < 1000);
    /* fractional: within 10 ms, two readings differ below a millisecond */
    int sub = 0;
    for (double t0 = ts_clock_msf(CLOCK_MONOTONIC), t = t0; t - t0 < 10;) {
        double u = ts_clock_msf(CLOCK_MONOTONIC);
        sub |= u > t && u - t < 1 && u != (double)(int64_t)u;
        t = u;
    }
    assert_true(sub);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calendar),   cmocka_unit_test(test_format),
        cmocka_unit_test(test_tz_ignored), cmocka_unit_test(test_tz_leap_seconds),
        cmocka_unit_test(test_clocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
