/*
 * time.c - see time.h. Dates are converted with the proleptic Gregorian
 * calendar arithmetic (days from civil), not the C library's time zone
 * machinery, so the result never depends on TZ.
 */
#include "util/time.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return 0;
    return 1;
}

static int parse_zone(const char *z, int64_t *offset_s)
{
    int hh, mm, n = 0;
    if ((z[0] == 'Z' || z[0] == 'z') && !z[1]) {
        *offset_s = 0;
        return 1;
    }
    if ((z[0] != '+' && z[0] != '-') || sscanf(z + 1, "%2d:%2d%n", &hh, &mm, &n) != 2 ||
        z[1 + n] || n != 5 || hh > 23 || mm > 59)
        return 0;
    *offset_s = (z[0] == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
    return 1;
}

int ts_time_parse(const char *text, int64_t *ms)
{
    if (all_digits(text) && strlen(text) <= 12) {
        *ms = strtoll(text, NULL, 10) * 1000;
        return 1;
    }
    int y, mo, d, h, mi, s, n = 0;
    if (sscanf(text, "%4d-%2d-%2d%*[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) != 6 ||
        n != 19 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
        return 0;
    const char *rest = text + n;
    int64_t frac_ms = 0;
    if (*rest == '.') {
        int digits = 0;
        for (rest++; isdigit((unsigned char)*rest); rest++, digits++)
            if (digits < 3)
                frac_ms = frac_ms * 10 + (*rest - '0');
        if (!digits)
            return 0;
        for (; digits < 3; digits++)
            frac_ms *= 10;
    }
    int64_t offset;
    if (!parse_zone(rest, &offset))
        return 0;
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset;
    *ms = secs * 1000 + frac_ms;
    return 1;
}

int ts_duration_parse(const char *text, int64_t *ms)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || v <= 0)
        return 0;
    double unit = strcmp(end, "") == 0 || strcmp(end, "s") == 0 ? 1000
                  : strcmp(end, "ms") == 0                      ? 1
                  : strcmp(end, "m") == 0                       ? 60000
                  : strcmp(end, "h") == 0                       ? 3600000
                                                                : 0;
    if (unit == 0 || v * unit > 9e15)
        return 0;
    *ms = (int64_t)(v * unit + 0.5);
    return *ms > 0;
}
