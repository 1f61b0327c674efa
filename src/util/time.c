/*
 * time.c - see time.h. Dates use proleptic Gregorian calendar arithmetic
 * (Howard Hinnant's days-from-civil), not the C library's time zones, so
 * results never depend on TZ. Shared by metering and the custody ledger.
 * Not timegm and gmtime_r: glibc's (2.36) count the leap seconds of a
 * "right/" zone, named by TZ or by /etc/localtime, so under one a date
 * comes out 27 s later than its Unix time (tests/util/test_time.c).
 */
#include "util/time.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* n digits at *p into *v; advances *p; 0 if not all digits. */
static int digits(const char **p, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++, (*p)++) {
        if (!isdigit((unsigned char)**p))
            return 0;
        *v = *v * 10 + (**p - '0');
    }
    return 1;
}

static int expect(const char **p, char c) { return *(*p)++ == c; }

static int days_in_month(int y, int m)
{
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return dm[m - 1] + (m == 2 && leap);
}

/* Fraction ".ddd..." to milliseconds (extra digits truncated). */
static int fraction(const char **p, int *ms)
{
    *ms = 0;
    if (**p != '.')
        return 1;
    (*p)++;
    int n = 0;
    for (; isdigit((unsigned char)**p); (*p)++, n++)
        if (n < 3)
            *ms = *ms * 10 + (**p - '0');
    for (int i = n; i < 3; i++)
        *ms *= 10;
    return n > 0;
}

/* Z, +hh:mm or -hh:mm to seconds east of UTC. */
static int offset(const char **p, int *sec)
{
    int h, m;
    char c = *(*p)++;
    *sec = 0;
    if (c == 'Z' || c == 'z')
        return 1;
    if ((c != '+' && c != '-') || !digits(p, 2, &h) || !expect(p, ':') || !digits(p, 2, &m) ||
        h > 23 || m > 59)
        return 0;
    *sec = (c == '-' ? -1 : 1) * (h * 3600 + m * 60);
    return 1;
}

static int rfc3339(const char *s, int64_t *ms)
{
    int y, mo, d, h, mi, sec, frac, off;
    const char *p = s;
    if (!digits(&p, 4, &y) || !expect(&p, '-') || !digits(&p, 2, &mo) || !expect(&p, '-') ||
        !digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' ') || !*p++ ||
        !digits(&p, 2, &h) || !expect(&p, ':') || !digits(&p, 2, &mi) || !expect(&p, ':') ||
        !digits(&p, 2, &sec) || !fraction(&p, &frac) || !offset(&p, &off) || *p)
        return 0;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 60)
        return 0;
    int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - off;
    *ms = t * 1000 + frac;
    return 1;
}

int ts_time_parse(const char *s, int64_t *ms)
{
    size_t n = strspn(s, "0123456789");
    if (n > 0 && n <= 12 && !s[n]) {
        *ms = strtoll(s, NULL, 10) * 1000;
        return 1;
    }
    return rfc3339(s, ms);
}

void ts_time_format(int64_t ms, char buf[40])
{
    int64_t sec = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    int frac = (int)(ms - sec * 1000);
    int64_t days = sec >= 0 ? sec / 86400 : -((-sec + 86399) / 86400);
    int64_t rem = sec - days * 86400, y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    int n = snprintf(buf, 40, "%04" PRId64 "-%02d-%02dT%02d:%02d:%02d", y, m, d, (int)(rem / 3600),
                     (int)(rem / 60 % 60), (int)(rem % 60));
    if (frac)
        snprintf(buf + n, 40 - (size_t)n, ".%03dZ", frac);
    else
        snprintf(buf + n, 40 - (size_t)n, "Z");
}

int ts_duration_parse(const char *text, int64_t *ms)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || !(v > 0)) /* also "nan" */
        return 0;
    double unit = strcmp(end, "") == 0 || strcmp(end, "s") == 0 ? 1000
                  : strcmp(end, "ms") == 0                      ? 1
                  : strcmp(end, "m") == 0                       ? 60000
                  : strcmp(end, "h") == 0                       ? 3600000
                  : strcmp(end, "d") == 0                       ? 86400000
                  : strcmp(end, "w") == 0                       ? 604800000
                                                                : 0;
    if (unit == 0 || v * unit > 9e15)
        return 0;
    *ms = (int64_t)(v * unit + 0.5);
    return *ms > 0;
}

int64_t ts_clock_ms(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

double ts_clock_msf(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}
