/*
 * smi.c - `nvidia-smi -L` output (see smi.h): a cursor over one line that
 * reads the GPU and MIG line grammar and names the first place where a
 * line departs from it, and the walk over a whole output that collects
 * GPUs with their MIG devices, within the INV_SMI_*_MAX limits.
 */
#include "inventory/smi.h"

#include <string.h>

/* A cursor over one line; errors are reported at its column. */
struct cur {
    const char *s;
    size_t len, i;
    const char *file;
    int line;
    struct ts_error *err;
};

static int is_blank(char c) { return c == ' ' || c == '\t'; }

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int col(const struct cur *c) { return (int)c->i + 1; }

static void skip_blanks(struct cur *c)
{
    while (c->i < c->len && is_blank(c->s[c->i]))
        c->i++;
}

/* Bytes of the token at the cursor (up to a blank or the end). */
static size_t tok_len(const struct cur *c)
{
    size_t n = 0;
    while (c->i + n < c->len && !is_blank(c->s[c->i + n]))
        n++;
    return n;
}

static ts_status fail(struct cur *c, ts_status code, const char *msg)
{
    return ts_err_at(c->err, code, c->file, c->line, col(c), NULL, "%s", msg);
}

/* "expected WHAT, found 'TOKEN'" at the cursor. */
static ts_status expected(struct cur *c, const char *what)
{
    skip_blanks(c);
    size_t n = tok_len(c);
    if (c->i >= c->len)
        return ts_err_at(c->err, TS_INVALID, c->file, c->line, col(c), NULL,
                         "malformed nvidia-smi -L line: expected %s, found end of line", what);
    return ts_err_at(c->err, TS_INVALID, c->file, c->line, col(c), NULL,
                     "malformed nvidia-smi -L line: expected %s, found '%.*s'", what,
                     (int)(n > 40 ? 40 : n), c->s + c->i);
}

/* The word w as a whole token at the cursor; moves past it. */
static int word(struct cur *c, const char *w)
{
    size_t n = strlen(w);
    if (c->len - c->i < n || memcmp(c->s + c->i, w, n) != 0 ||
        (c->i + n < c->len && !is_blank(c->s[c->i + n])))
        return 0;
    c->i += n;
    return 1;
}

/* "12:" as a whole token: 1 (cursor moved, *v set, may exceed max), else 0. */
static int index_token(struct cur *c, long *v)
{
    size_t j = c->i;
    *v = 0;
    while (j < c->len && is_digit(c->s[j])) {
        if (*v <= INV_SMI_INDEX_MAX)
            *v = *v * 10 + (c->s[j] - '0');
        j++;
    }
    if (j == c->i || j >= c->len || c->s[j] != ':' || (j + 1 < c->len && !is_blank(c->s[j + 1])))
        return 0;
    c->i = j + 1;
    return 1;
}

/* What the line starts like: GPU "GPU <n>:", MIG "MIG <profile> Device". */
static enum inv_smi_kind kind_of(const char *s, size_t len)
{
    struct cur c = {s, len, 0, NULL, 0, NULL};
    long v;
    skip_blanks(&c);
    if (word(&c, "GPU")) {
        skip_blanks(&c);
        return index_token(&c, &v) ? INV_SMI_GPU : INV_SMI_OTHER;
    }
    if (!word(&c, "MIG"))
        return INV_SMI_OTHER;
    skip_blanks(&c);
    c.i += tok_len(&c);
    skip_blanks(&c);
    return word(&c, "Device") ? INV_SMI_MIG : INV_SMI_OTHER;
}

/* An index token "<n>:" of 0..INV_SMI_INDEX_MAX. */
static ts_status read_index(struct cur *c, const char *what, int *out)
{
    long v;
    skip_blanks(c);
    size_t at = c->i;
    if (!index_token(c, &v))
        return expected(c, what);
    if (v > INV_SMI_INDEX_MAX) {
        c->i = at;
        int digits = (int)(tok_len(c) - 1);
        return ts_err_at(c->err, TS_INVALID, c->file, c->line, col(c), NULL,
                         "index %.*s is larger than %d", digits > 40 ? 40 : digits, c->s + at,
                         INV_SMI_INDEX_MAX);
    }
    *out = (int)v;
    return TS_OK;
}

/* The product name: everything up to "(UUID:", without the blanks before
 * it; printable ASCII, 1 to INV_SMI_NAME_MAX - 1 bytes. */
static ts_status read_name(struct cur *c, struct inv_smi_line *out)
{
    skip_blanks(c);
    out->name_col = col(c);
    const char *u = memmem(c->s + c->i, c->len - c->i, "(UUID:", 6);
    size_t end = u ? (size_t)(u - c->s) : c->len, n = end - c->i;
    while (n > 0 && is_blank(c->s[c->i + n - 1]))
        n--;
    if (n == 0 || n >= INV_SMI_NAME_MAX)
        return ts_err_at(c->err, TS_INVALID, c->file, c->line, col(c), NULL,
                         "product name must be 1 to %d characters", INV_SMI_NAME_MAX - 1);
    for (size_t k = 0; k < n; k++) {
        unsigned char b = (unsigned char)c->s[c->i + k];
        if (b < 0x20 || b > 0x7e)
            return ts_err_at(c->err, TS_INVALID, c->file, c->line, col(c), NULL,
                             "product name has a byte that is not printable ASCII (0x%02x)", b);
    }
    memcpy(out->name, c->s + c->i, n);
    out->name[n] = '\0';
    c->i = end;
    return TS_OK;
}

/* A MIG profile name: a digit, then [a-z0-9.+-] ("1g.10gb+me", "1c.2g.10gb"). */
static ts_status read_profile(struct cur *c, struct inv_smi_line *out)
{
    skip_blanks(c);
    out->name_col = col(c);
    size_t n = tok_len(c);
    int ok = n > 0 && n < INV_SMI_PROFILE_MAX && is_digit(c->s[c->i]);
    for (size_t k = 0; ok && k < n; k++) {
        char b = c->s[c->i + k];
        ok = (b >= 'a' && b <= 'z') || is_digit(b) || b == '.' || b == '+' || b == '-';
    }
    if (!ok)
        return expected(c, "a MIG profile name like 3g.40gb");
    memcpy(out->name, c->s + c->i, n);
    out->name[n] = '\0';
    c->i += n;
    return TS_OK;
}

/* Letters, digits and '-' (and '/' in the old MIG-GPU-<uuid>/gi/ci form). */
static int uuid_byte(char b, int slash)
{
    return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || is_digit(b) || b == '-' ||
           (slash && b == '/');
}

/* "(UUID: <prefix>...)" and nothing but blanks after it. */
static ts_status read_uuid(struct cur *c, const char *prefix, const char *what,
                           struct inv_smi_line *out)
{
    size_t n = strlen(prefix);
    skip_blanks(c);
    if (c->len - c->i < 6 || memcmp(c->s + c->i, "(UUID:", 6) != 0)
        return expected(c, "'(UUID:'");
    c->i += 6;
    if (c->i < c->len && !is_blank(c->s[c->i]))
        return expected(c, "a blank after '(UUID:'");
    skip_blanks(c);
    size_t start = c->i, end = start + n;
    if (c->len - start <= n || memcmp(c->s + start, prefix, n) != 0 ||
        !uuid_byte(c->s[end], out->kind == INV_SMI_MIG))
        return expected(c, what);
    while (end < c->len && uuid_byte(c->s[end], out->kind == INV_SMI_MIG))
        end++;
    if (end - start >= INV_SMI_UUID_MAX)
        return fail(c, TS_INVALID, "UUID is longer than 95 characters");
    out->uuid_col = col(c);
    memcpy(out->uuid, c->s + start, end - start);
    out->uuid[end - start] = '\0';
    c->i = end;
    if (c->i >= c->len || c->s[c->i] != ')')
        return expected(c, "')' after the UUID");
    c->i++;
    skip_blanks(c);
    return c->i < c->len ? expected(c, "the end of the line") : TS_OK;
}

/* "GPU 0: NVIDIA H100 PCIe (UUID: GPU-...)" */
static ts_status read_gpu(struct cur *c, struct inv_smi_line *out)
{
    word(c, "GPU");
    ts_status st = read_index(c, "a GPU index like 0:", &out->index);
    if (st == TS_OK)
        st = read_name(c, out);
    if (st == TS_OK)
        st = read_uuid(c, "GPU-", "a GPU UUID like GPU-7cd6d4d6-9fa8-13be-3c42-09a1b2280a02", out);
    return st;
}

/* "MIG 3g.40gb     Device  0: (UUID: MIG-...)" */
static ts_status read_mig(struct cur *c, struct inv_smi_line *out)
{
    word(c, "MIG");
    ts_status st = read_profile(c, out);
    if (st == TS_OK) {
        skip_blanks(c);
        if (!word(c, "Device"))
            return expected(c, "'Device'");
        st = read_index(c, "a device index like 0:", &out->index);
    }
    if (st == TS_OK)
        st = read_uuid(c, "MIG-",
                       "a MIG device UUID like MIG-da06d78f-7534-56a0-a062-"
                       "62fef012be91",
                       out);
    return st;
}

ts_status inv_smi_line(const char *s, size_t len, const char *file, int line,
                       struct inv_smi_line *out, struct ts_error *err)
{
    if (len > 0 && s[len - 1] == '\r')
        len--;
    struct cur c = {s, len, 0, file, line, err};
    memset(out, 0, sizeof(*out));
    skip_blanks(&c);
    out->col = col(&c);
    out->kind = kind_of(s, len);
    if (out->kind == INV_SMI_GPU)
        return read_gpu(&c, out);
    if (out->kind == INV_SMI_MIG)
        return read_mig(&c, out);
    return TS_OK;
}

/* ---- a whole output ----------------------------------------------------- */

static ts_status add_gpu(struct inv_smi *o, const struct inv_smi_line *l, const char *file,
                         int line, struct ts_error *err)
{
    if (o->ngpu == INV_SMI_GPUS_MAX)
        return ts_err_at(err, TS_TOO_LARGE, file, line, l->col, NULL,
                         "more than %d GPUs in the nvidia-smi -L output", INV_SMI_GPUS_MAX);
    struct inv_smi_gpu *g = &o->gpu[o->ngpu++];
    g->index = l->index;
    memcpy(g->name, l->name, sizeof(g->name));
    memcpy(g->uuid, l->uuid, sizeof(g->uuid));
    g->line = line;
    g->first_mig = o->nmig;
    g->nmig = 0;
    return TS_OK;
}

static ts_status add_mig(struct inv_smi *o, const struct inv_smi_line *l, const char *file,
                         int line, struct ts_error *err)
{
    if (o->ngpu == 0)
        return ts_err_at(err, TS_INVALID, file, line, l->col, NULL,
                         "MIG device line before any GPU line (nvidia-smi -L lists each GPU's "
                         "MIG devices under it)");
    if (o->nmig == INV_SMI_MIGS_MAX)
        return ts_err_at(err, TS_TOO_LARGE, file, line, l->col, NULL,
                         "more than %d MIG devices in the nvidia-smi -L output", INV_SMI_MIGS_MAX);
    struct inv_smi_mig *m = &o->mig[o->nmig++];
    m->gpu = o->ngpu - 1;
    m->device = l->index;
    memcpy(m->profile, l->name, sizeof(m->profile));
    memcpy(m->uuid, l->uuid, sizeof(m->uuid));
    m->line = line;
    o->gpu[m->gpu].nmig++;
    return TS_OK;
}

static int blank_line(const char *s, size_t n)
{
    while (n > 0 && (is_blank(s[n - 1]) || s[n - 1] == '\r'))
        n--;
    return n == 0;
}

static ts_status take_line(struct inv_smi *o, const char *s, size_t n, const char *file, int line,
                           unsigned flags, struct ts_error *err)
{
    struct inv_smi_line l;
    ts_status st = inv_smi_line(s, n, file, line, &l, err);
    if (st != TS_OK)
        return st;
    if (l.kind == INV_SMI_GPU)
        return add_gpu(o, &l, file, line, err);
    if (l.kind == INV_SMI_MIG)
        return add_mig(o, &l, file, line, err);
    if ((flags & INV_SMI_MIXED) || blank_line(s, n))
        return TS_OK;
    return ts_err_at(err, TS_INVALID, file, line, l.col, NULL,
                     "not an nvidia-smi -L line: expected 'GPU <n>: <name> (UUID: GPU-...)' or "
                     "'MIG <profile> Device <n>: (UUID: MIG-...)'");
}

ts_status inv_smi_parse(const char *text, size_t len, const char *file, unsigned flags,
                        struct inv_smi *out, struct ts_error *err)
{
    ts_status st = TS_OK;
    int line = 0;
    out->ngpu = out->nmig = 0;
    for (size_t pos = 0; st == TS_OK && pos < len;) {
        const char *p = text + pos;
        const char *nl = memchr(p, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - p) : len - pos;
        pos += n + (nl != NULL);
        st = take_line(out, p, n, file, ++line, flags, err);
    }
    return st;
}
