/*
 * quantity.c - Kubernetes quantities (resource.Quantity) as admission sees
 * them: a JSON string or number, "<number><suffix>" where the number is
 * decimal (optional sign, digits, optional fraction) and the suffix is a
 * binary SI one (Ki Mi Gi Ti Pi Ei), a decimal SI one (n u m k M G T P E;
 * K is taken as k), or a decimal exponent (e3, E-2). Anything else (spaces,
 * hex, inf, nan, "1.", two suffixes) is not a quantity.
 */
#include "admit/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double suffix_scale(const char *s)
{
    static const struct {
        const char *suffix;
        double scale;
    } table[] = {
        {"", 1},        {"Ki", 0x1p10}, {"Mi", 0x1p20}, {"Gi", 0x1p30}, {"Ti", 0x1p40},
        {"Pi", 0x1p50}, {"Ei", 0x1p60}, {"n", 1e-9},    {"u", 1e-6},    {"m", 1e-3},
        {"k", 1e3},     {"K", 1e3},     {"M", 1e6},     {"G", 1e9},     {"T", 1e12},
        {"P", 1e15},    {"E", 1e18},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(s, table[i].suffix) == 0)
            return table[i].scale;
    return -1;
}

/* Digits with at most one '.', at least one digit, no trailing '.'. Returns
 * the length, 0 when there is no number. */
static size_t number_len(const char *s)
{
    size_t n = 0, digits = 0;
    int dot = 0;
    for (; s[n]; n++) {
        if (s[n] >= '0' && s[n] <= '9')
            digits++;
        else if (s[n] == '.' && !dot)
            dot = 1;
        else
            break;
    }
    if (digits == 0 || s[n - 1] == '.')
        return 0;
    return n;
}

/* "e<int>" or "E<int>" with at least one digit; returns the exponent in *exp. */
static int exponent(const char *s, long *exp)
{
    if (s[0] != 'e' && s[0] != 'E')
        return 0;
    size_t i = 1;
    if (s[i] == '+' || s[i] == '-')
        i++;
    if (s[i] < '0' || s[i] > '9')
        return 0;
    for (size_t j = i; s[j]; j++)
        if (s[j] < '0' || s[j] > '9' || j - i > 4)
            return 0;
    *exp = strtol(s + 1, NULL, 10);
    return 1;
}

int ad_quantity_str(const char *s, double *out)
{
    size_t len = strlen(s);
    if (len == 0 || len > AD_QTY_MAX)
        return -1;
    int neg = s[0] == '-';
    const char *p = s + (s[0] == '-' || s[0] == '+');
    size_t n = number_len(p);
    if (n == 0)
        return -1;
    char num[AD_QTY_MAX + 1];
    memcpy(num, p, n);
    num[n] = '\0';
    double v = strtod(num, NULL); /* digits and one '.', nothing strtod reads otherwise */
    long exp;
    double scale = exponent(p + n, &exp) ? pow(10.0, (double)exp) : suffix_scale(p + n);
    if (scale < 0 || !isfinite(v * scale))
        return -1;
    *out = neg ? -v * scale : v * scale;
    return 0;
}

int ad_quantity(const json_t *v, double *out)
{
    if (json_is_string(v))
        return ad_quantity_str(json_string_value(v), out);
    if (json_is_integer(v)) {
        *out = (double)json_integer_value(v);
        return 0;
    }
    if (json_is_real(v) && isfinite(json_real_value(v))) {
        *out = json_real_value(v);
        return 0;
    }
    return -1;
}

void ad_quantity_text(const json_t *v, char *buf, size_t size)
{
    if (json_is_string(v)) /* ASCII, at most AD_QTY_MAX, once ad_quantity took it */
        snprintf(buf, size, "%.64s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, size, "%g", json_real_value(v));
    else
        snprintf(buf, size, "?");
}
