/*
 * limits.c - parser of the container's limit file (format in limits.h and
 * docs/shim.md). Pure: bytes in, struct shim_limits or a located error out.
 * Keys are one table; each row names its value parser and its field. No
 * libc call here allocates or does I/O (the shim calls it before anything
 * else is set up, the fuzzer calls it millions of times).
 */
#include "limits.h" /* shim/limits.h; also compiled into the agent */

#include <stdio.h>
#include <string.h>

#define LINE_MAX_BYTES 1024 /* a limit-file line: its longest real one is a path */

/* What a value parser sees: the value's bytes and where to report. */
struct val {
    const char *s;
    size_t len;
    size_t *bad;      /* OUT: offset of the faulty byte */
    const char **why; /* OUT: static reason */
};

static int fail_at(struct val *v, size_t at, const char *why)
{
    *v->bad = at;
    *v->why = why;
    return -1;
}

/* Decimal digits of v->s from *i, at most 20 of them, into *out. */
static int digits(struct val *v, size_t *i, uint64_t *out)
{
    uint64_t n = 0;
    size_t start = *i;
    for (; *i < v->len && v->s[*i] >= '0' && v->s[*i] <= '9'; (*i)++) {
        unsigned d = (unsigned)(v->s[*i] - '0');
        if (n > (UINT64_MAX - d) / 10)
            return fail_at(v, start, "number too large");
        n = n * 10 + d;
    }
    if (*i == start)
        return fail_at(v, start, "expected a number");
    *out = n;
    return 0;
}

/* The multiplier of a quantity suffix at s[0..len), 0 when unknown. */
static uint64_t suffix_mult(const char *s, size_t len)
{
    static const struct {
        const char *name;
        uint64_t mult;
    } tab[] = {
        {"", 1},
        {"Ki", 1ull << 10},
        {"Mi", 1ull << 20},
        {"Gi", 1ull << 30},
        {"Ti", 1ull << 40},
        {"Pi", 1ull << 50},
        {"k", 1000ull},
        {"K", 1000ull},
        {"M", 1000000ull},
        {"G", 1000000000ull},
        {"T", 1000000000000ull},
        {"P", 1000000000000000ull},
    };
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
        if (strlen(tab[i].name) == len && memcmp(tab[i].name, s, len) == 0)
            return tab[i].mult;
    return 0;
}

int shim_limits_bytes(const char *s, size_t len, uint64_t *out, size_t *bad, const char **why)
{
    struct val v = {s, len, bad, why};
    size_t i = 0;
    uint64_t n;
    if (digits(&v, &i, &n) != 0)
        return -1;
    uint64_t mult = suffix_mult(s + i, len - i);
    if (mult == 0)
        return fail_at(&v, i, "unknown unit (use bytes, Ki, Mi, Gi, Ti, Pi, K, M, G, T or P)");
    if (n == 0)
        return fail_at(&v, 0, "must be more than 0 bytes");
    if (n > UINT64_MAX / mult)
        return fail_at(&v, 0, "number too large");
    *out = n * mult;
    return 0;
}

int shim_limits_percent(const char *s, size_t len, unsigned *out, size_t *bad, const char **why)
{
    struct val v = {s, len, bad, why};
    size_t i = 0;
    uint64_t n;
    if (digits(&v, &i, &n) != 0)
        return -1;
    if (i != len)
        return fail_at(&v, i, "expected an integer percentage");
    if (n < 1 || n > 100)
        return fail_at(&v, 0, "must be between 1 and 100");
    *out = (unsigned)n;
    return 0;
}

static int set_version(struct val *v, struct shim_limits *l)
{
    unsigned n;
    if (shim_limits_percent(v->s, v->len, &n, v->bad, v->why) != 0 || n != SHIM_LIMITS_VERSION)
        return fail_at(v, 0, "unsupported version (this shim reads version 1)");
    l->version = (int)n;
    return 0;
}

static int set_memory(struct val *v, struct shim_limits *l)
{
    if (shim_limits_bytes(v->s, v->len, &l->memory_bytes, v->bad, v->why) != 0)
        return -1;
    l->has_memory = 1;
    return 0;
}

static int set_sm(struct val *v, struct shim_limits *l)
{
    return shim_limits_percent(v->s, v->len, &l->sm_percent, v->bad, v->why);
}

int shim_limits_region(const char *s, size_t len, char out[SHIM_REGION_PATH_MAX], size_t *bad,
                       const char **why)
{
    struct val v = {s, len, bad, why};
    if (len == 0 || s[0] != '/')
        return fail_at(&v, 0, "must be an absolute path");
    if (len >= SHIM_REGION_PATH_MAX)
        return fail_at(&v, SHIM_REGION_PATH_MAX - 1, "path too long");
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return fail_at(&v, i, "control character in path");
    memcpy(out, s, len);
    out[len] = '\0';
    return 0;
}

static int set_region(struct val *v, struct shim_limits *l)
{
    return shim_limits_region(v->s, v->len, l->region, v->bad, v->why);
}

static int set_backstop(struct val *v, struct shim_limits *l)
{
    static const char *const names[] = {"off", "report", "refuse"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strlen(names[i]) == v->len && memcmp(names[i], v->s, v->len) == 0) {
            l->backstop = (enum shim_backstop)i;
            return 0;
        }
    return fail_at(v, 0, "expected off, report or refuse");
}

static int set_tolerance(struct val *v, struct shim_limits *l)
{
    return shim_limits_bytes(v->s, v->len, &l->backstop_tolerance, v->bad, v->why);
}

static int set_interval(struct val *v, struct shim_limits *l)
{
    size_t i = 0;
    uint64_t n;
    if (digits(v, &i, &n) != 0)
        return -1;
    if (i != v->len)
        return fail_at(v, i, "expected an integer number of milliseconds");
    if (n < SHIM_BACKSTOP_INTERVAL_MIN_MS || n > SHIM_BACKSTOP_INTERVAL_MAX_MS)
        return fail_at(v, 0, "must be between 10 and 60000");
    l->backstop_interval_ms = (unsigned)n;
    return 0;
}

static int set_pid_map(struct val *v, struct shim_limits *l)
{
    return shim_limits_region(v->s, v->len, l->pid_map, v->bad, v->why);
}

/* tenant, workload: a DNS-1123 label as the spec's names (lowercase
 * letters, digits, '-', starting and ending with a letter or digit). */
static int set_name(struct val *v, char out[SHIM_NAME_MAX])
{
    if (v->len >= SHIM_NAME_MAX)
        return fail_at(v, SHIM_NAME_MAX - 1, "name too long (over 63 bytes)");
    for (size_t i = 0; i < v->len; i++) {
        char c = v->s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && (c != '-' || i == 0 || i + 1 == v->len))
            return fail_at(v, i, "expected a name (lowercase letters, digits and '-')");
    }
    memcpy(out, v->s, v->len);
    out[v->len] = '\0';
    return 0;
}

static int set_tenant(struct val *v, struct shim_limits *l) { return set_name(v, l->tenant); }

static int set_workload(struct val *v, struct shim_limits *l) { return set_name(v, l->workload); }

static const char *const action_names[] = {"report", "evict", "kill"};

const char *shim_action_name(enum shim_action a)
{
    return (unsigned)a < sizeof(action_names) / sizeof(action_names[0]) ? action_names[a] : "?";
}

static int set_action(struct val *v, enum shim_action *out)
{
    for (size_t i = 0; i < sizeof(action_names) / sizeof(action_names[0]); i++)
        if (strlen(action_names[i]) == v->len && memcmp(action_names[i], v->s, v->len) == 0) {
            *out = (enum shim_action)i;
            return 0;
        }
    return fail_at(v, 0, "expected report, evict or kill");
}

static int set_on_memory(struct val *v, struct shim_limits *l)
{
    return set_action(v, &l->on_memory);
}

static int set_on_sm(struct val *v, struct shim_limits *l) { return set_action(v, &l->on_sm); }

static const struct key {
    const char *name;
    int (*set)(struct val *v, struct shim_limits *l);
} keys[] = {
    {"version", set_version},
    {"memoryLimit", set_memory},
    {"smPercent", set_sm},
    {"region", set_region},
    {"memoryBackstop", set_backstop},
    {"backstopTolerance", set_tolerance},
    {"backstopIntervalMs", set_interval},
    {"pidMap", set_pid_map},
    {"tenant", set_tenant},
    {"workload", set_workload},
    {"onMemoryViolation", set_on_memory},
    {"onSmViolation", set_on_sm},
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* The parser's position and the keys seen so far. */
struct parse {
    struct shim_limits *out;
    struct shim_limits_error *err;
    int line;
    int seen[NKEYS];
};

static int err_at(struct parse *p, size_t col0, const char *why, const char *what)
{
    if (p->err) {
        p->err->line = p->line;
        p->err->column = (int)col0 + 1;
        snprintf(p->err->msg, sizeof(p->err->msg), "%s%s%s", what ? what : "", what ? ": " : "",
                 why);
    }
    return -1;
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Trim blanks from both ends of line[*a..*b). */
static void trim(const char *line, size_t *a, size_t *b)
{
    while (*a < *b && is_blank(line[*a]))
        (*a)++;
    while (*b > *a && is_blank(line[*b - 1]))
        (*b)--;
}

static const struct key *find_key(const char *s, size_t len)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strlen(keys[i].name) == len && memcmp(keys[i].name, s, len) == 0)
            return &keys[i];
    return NULL;
}

/* One line (without its '\n'): blank, a comment, or key = value. */
static int parse_line(struct parse *p, const char *line, size_t len)
{
    size_t a = 0, b = len;
    trim(line, &a, &b);
    if (a == b || line[a] == '#')
        return 0;
    const char *eq = memchr(line + a, '=', b - a);
    if (!eq)
        return err_at(p, a, "expected key = value", NULL);
    size_t ka = a, kb = (size_t)(eq - line), va = kb + 1, vb = b;
    trim(line, &ka, &kb);
    trim(line, &va, &vb);
    const struct key *k = find_key(line + ka, kb - ka);
    if (!k)
        return err_at(p, ka,
                      "unknown key (expected version, memoryLimit, smPercent, "
                      "region, pidMap, memoryBackstop, backstopTolerance, "
                      "backstopIntervalMs, tenant, workload, onMemoryViolation or "
                      "onSmViolation)",
                      NULL);
    if (p->seen[k - keys]++)
        return err_at(p, ka, "key given twice", k->name);
    if (va == vb)
        return err_at(p, (size_t)(eq - line) + 1, "empty value", k->name);
    size_t bad = 0;
    const char *why = "";
    struct val v = {line + va, vb - va, &bad, &why};
    if (k->set(&v, p->out) != 0)
        return err_at(p, va + bad, why, k->name);
    return 0;
}

int shim_limits_parse(const char *text, size_t len, struct shim_limits *out,
                      struct shim_limits_error *err)
{
    struct parse p = {out, err, 0, {0}};
    memset(out, 0, sizeof(*out));
    out->sm_percent = 100;
    out->backstop_tolerance = SHIM_BACKSTOP_TOLERANCE;
    out->backstop_interval_ms = SHIM_BACKSTOP_INTERVAL_MS;
    out->on_memory = SHIM_ACTION_KILL;
    out->on_sm = SHIM_ACTION_REPORT;
    if (len > SHIM_LIMITS_FILE_MAX) {
        p.line = 1;
        return err_at(&p, 0, "file too large (over 64 KiB)", NULL);
    }
    size_t pos = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        p.line++;
        if (end - pos > LINE_MAX_BYTES)
            return err_at(&p, LINE_MAX_BYTES, "line too long (over 1024 bytes)", NULL);
        const char *nul = memchr(text + pos, '\0', end - pos);
        if (nul)
            return err_at(&p, (size_t)(nul - text) - pos, "NUL byte", NULL);
        if (parse_line(&p, text + pos, end - pos) != 0)
            return -1;
        pos = end + 1;
    }
    if (out->version != SHIM_LIMITS_VERSION) {
        p.line = p.line ? p.line : 1;
        return err_at(&p, 0, "missing 'version = 1'", NULL);
    }
    return 0;
}
