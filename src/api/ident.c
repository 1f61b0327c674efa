/*
 * ident.c - who is asking: the identities file (docs/api.md, Identity),
 * bearer tokens compared by their SHA-256 in constant time, certificate
 * names matched to cert lines, and minting a token.
 */
#include "api/internal.h"

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN_PREFIX "tsk_"

struct ident {
    int cert;                  /* 0: token line, 1: cert line */
    unsigned char digest[32];  /* token lines */
    char match[API_NAME_MAX];  /* cert lines: "cn:NAME" or "dns:NAME" */
    int role;                  /* enum api_role */
    char tenant[API_NAME_MAX]; /* role tenant */
};

struct api_idents {
    struct ident *v;
    size_t n, certs;
};

/* One line split into at most 5 fields, each with its column. */
struct fields {
    char *f[5];
    int col[5], n, more;
};

static void split(char *line, struct fields *fs)
{
    char *c = line;
    fs->n = fs->more = 0;
    while (*c) {
        while (*c == ' ' || *c == '\t' || *c == '\r')
            *c++ = '\0';
        if (!*c || *c == '#')
            break;
        if (fs->n == 5) {
            fs->more = 1;
            break;
        }
        fs->col[fs->n] = (int)(c - line) + 1;
        fs->f[fs->n++] = c;
        while (*c && *c != ' ' && *c != '\t' && *c != '\r')
            c++;
    }
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int parse_digest(const char *s, unsigned char d[32])
{
    if (strncmp(s, "sha256:", 7) != 0 || strlen(s + 7) != 64)
        return 0;
    for (int i = 0; i < 32; i++) {
        int hi = hexval(s[7 + 2 * i]), lo = hexval(s[8 + 2 * i]);
        if (hi < 0 || lo < 0)
            return 0;
        d[i] = (unsigned char)(hi << 4 | lo);
    }
    return 1;
}

static int parse_match(const char *s, char out[API_NAME_MAX])
{
    if ((strncmp(s, "cn:", 3) != 0 && strncmp(s, "dns:", 4) != 0) || strlen(s) >= API_NAME_MAX ||
        !strchr(s, ':')[1])
        return 0;
    snprintf(out, API_NAME_MAX, "%s", s);
    return 1;
}

/* Fields 2.. of a line: the role and its tenant. */
static const char *parse_role(const struct fields *fs, struct ident *id, int *col)
{
    *col = fs->n > 2 ? fs->col[2] : 1;
    if (fs->n < 3)
        return "a line is KIND MATCH ROLE [TENANT]";
    if (strcmp(fs->f[2], "operator") == 0) {
        id->role = API_ROLE_OPERATOR;
        *col = fs->n > 3 ? fs->col[3] : *col;
        return fs->n == 3 ? NULL : "operator takes no tenant";
    }
    if (strcmp(fs->f[2], "tenant") != 0)
        return "role must be operator or tenant";
    id->role = API_ROLE_TENANT;
    *col = fs->n > 3 ? fs->col[3] : *col;
    if (fs->n != 4 || fs->more)
        return "tenant takes one tenant name";
    if (strlen(fs->f[3]) >= API_NAME_MAX)
        return "tenant name too long";
    snprintf(id->tenant, sizeof(id->tenant), "%s", fs->f[3]);
    return NULL;
}

static const char *parse_line(const struct fields *fs, struct ident *id, int *col)
{
    memset(id, 0, sizeof(*id));
    *col = fs->col[0];
    if (strcmp(fs->f[0], "token") != 0 && strcmp(fs->f[0], "cert") != 0)
        return "kind must be token or cert";
    id->cert = fs->f[0][0] == 'c';
    *col = fs->n > 1 ? fs->col[1] : *col;
    if (fs->n < 2)
        return "a line is KIND MATCH ROLE [TENANT]";
    if (!id->cert && !parse_digest(fs->f[1], id->digest))
        return "token MATCH must be sha256: and 64 lowercase hex digits";
    if (id->cert && !parse_match(fs->f[1], id->match))
        return "cert MATCH must be cn:NAME or dns:NAME";
    return parse_role(fs, id, col);
}

static int add(struct api_idents *ids, const struct ident *id)
{
    if (ids->n % 64 == 0) {
        struct ident *v = realloc(ids->v, (ids->n + 64) * sizeof(*v));
        if (!v)
            return 0;
        ids->v = v;
    }
    ids->v[ids->n++] = *id;
    ids->certs += (size_t)id->cert;
    return 1;
}

/* One line (NUL-terminated, modified): 1 unless out of memory. */
static int one_line(struct api_idents *ids, char *line, const char *file, int lineno,
                    struct ts_diag *diag)
{
    struct fields fs;
    struct ident id;
    int col;
    split(line, &fs);
    if (!fs.n)
        return 1;
    const char *why = parse_line(&fs, &id, &col);
    if (!why && ids->n == API_IDENTITIES_MAX)
        why = "more than API_IDENTITIES_MAX (4096) entries";
    if (why) {
        ts_diag_addf(diag, TS_SEV_ERROR, TS_SYNTAX, file, lineno, col, "", "%s", why);
        return 1;
    }
    return add(ids, &id);
}

ts_status api_idents_parse(const char *text, size_t len, const char *file, struct api_idents **out,
                           struct ts_diag *diag)
{
    struct api_idents *ids = calloc(1, sizeof(*ids));
    char *copy = malloc(len + 1);
    int ok = ids && copy;
    *out = NULL;
    int nul = 0;
    if (ok) {
        memcpy(copy, text, len);
        copy[len] = '\0';
        if ((nul = strlen(copy) != len))
            ts_diag_addf(diag, TS_SEV_ERROR, TS_SYNTAX, file, 1, 1, "", "a NUL byte in the file");
    }
    int lineno = 1;
    for (char *l = copy, *nl; ok && !nul && l; l = nl ? nl + 1 : NULL, lineno++) {
        if ((nl = strchr(l, '\n')))
            *nl = '\0';
        ok = one_line(ids, l, file, lineno, diag);
    }
    free(copy);
    if (!ok || ts_diag_errors(diag)) {
        api_idents_free(ids);
        return ok ? TS_SYNTAX : TS_NOMEM;
    }
    *out = ids;
    return TS_OK;
}

void api_idents_free(struct api_idents *ids)
{
    if (ids)
        free(ids->v);
    free(ids);
}

size_t api_idents_certs(const struct api_idents *ids) { return ids ? ids->certs : 0; }

static void fill(const struct ident *id, const char *via, const char *subject,
                 struct api_identity *who)
{
    who->role = id->role;
    snprintf(who->tenant, sizeof(who->tenant), "%s", id->tenant);
    who->via = via;
    snprintf(who->subject, sizeof(who->subject), "%s", subject);
}

int api_ident_token(const struct api_idents *ids, const char *authorization,
                    struct api_identity *who)
{
    const char *t = authorization;
    unsigned char d[32];
    if (!ids || !t || strncmp(t, "Bearer ", 7) != 0 || strlen(t) > API_AUTH_MAX)
        return 0;
    t += 7;
    if (strlen(t) != API_TOKEN_LEN || strncmp(t, TOKEN_PREFIX, 4) != 0 ||
        gnutls_hash_fast(GNUTLS_DIG_SHA256, t, strlen(t), d) != 0)
        return 0;
    const struct ident *hit = NULL;
    for (size_t i = 0; i < ids->n; i++) { /* every entry, every byte */
        unsigned diff = ids->v[i].cert;
        for (int k = 0; k < 32; k++)
            diff |= (unsigned)(ids->v[i].digest[k] ^ d[k]);
        hit = diff == 0 ? &ids->v[i] : hit;
    }
    if (!hit)
        return 0;
    char subject[32];
    snprintf(subject, sizeof(subject), "sha256:%02x%02x%02x%02x%02x%02x", d[0], d[1], d[2], d[3],
             d[4], d[5]);
    fill(hit, "token", subject, who);
    return 1;
}

int api_ident_cert(const struct api_idents *ids, const char *const *names, size_t n,
                   struct api_identity *who)
{
    for (size_t i = 0; ids && i < ids->n; i++)
        for (size_t k = 0; ids->v[i].cert && k < n; k++)
            if (strcmp(ids->v[i].match, names[k]) == 0) {
                fill(&ids->v[i], "certificate", names[k], who);
                return 1;
            }
    return 0;
}

void api_token_new(const unsigned char rnd[32], const char *tenant, char token[API_TOKEN_LEN + 1],
                   struct ts_sbuf *line)
{
    unsigned char d[32] = {0};
    memcpy(token, TOKEN_PREFIX, 4);
    for (int i = 0; i < 32; i++)
        snprintf(token + 4 + 2 * i, 3, "%02x", rnd[i]);
    gnutls_hash_fast(GNUTLS_DIG_SHA256, token, API_TOKEN_LEN, d);
    ts_sbuf_puts(line, "token sha256:");
    for (int i = 0; i < 32; i++)
        ts_sbuf_printf(line, "%02x", d[i]);
    if (tenant)
        ts_sbuf_printf(line, " tenant %s\n", tenant);
    else
        ts_sbuf_puts(line, " operator\n");
}
