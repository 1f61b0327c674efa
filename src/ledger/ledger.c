/*
 * ledger.c - the custody hash chain: canonical bytes, hashing, recording
 * and verifying entries (see ledger.h for the layout).
 */
#include "ledger/ledger.h"

#include <gnutls/crypto.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "util/limits.h"

static const char *nz(const char *s) { return s ? s : ""; }

static void netstring(struct ts_sbuf *b, const char *v)
{
    ts_sbuf_printf(b, "%zu:", strlen(v));
    ts_sbuf_puts(b, v);
    ts_sbuf_add(b, ",", 1);
}

static void netint(struct ts_sbuf *b, int64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%" PRId64, v);
    netstring(b, num);
}

void ledger_canonical(const struct store_ledger_entry *e, struct ts_sbuf *out)
{
    const char *str[9] = {e->node,      e->gpu_uuid, e->instance_uuid, e->gi_id, e->profile,
                          e->placement, e->tenant,   e->workload,      e->source};
    netstring(out, "tessera-ledger-v1");
    netint(out, e->seq);
    netint(out, e->ts_ms);
    for (int i = 0; i < 9; i++)
        netstring(out, nz(str[i]));
}

static void to_hex(const unsigned char *d, size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[d[i] >> 4];
        out[2 * i + 1] = hx[d[i] & 15];
    }
    out[2 * n] = '\0';
}

ts_status ledger_hash(const char *prev, const struct store_ledger_entry *e, char out[65],
                      struct ts_error *err)
{
    struct ts_sbuf b;
    ts_sbuf_init(&b, LEDGER_CANON_MAX);
    ts_sbuf_puts(&b, prev);
    ledger_canonical(e, &b);
    ts_status rc = ts_sbuf_status(&b);
    unsigned char d[32];
    if (rc != TS_OK)
        rc = ts_err(err, rc, "ledger entry too large to hash");
    else if (gnutls_hash_fast(GNUTLS_DIG_SHA256, b.data, b.len, d) != 0)
        rc = ts_err(err, TS_INTERNAL, "sha-256 failed");
    else
        to_hex(d, 32, out);
    ts_sbuf_release(&b);
    return rc;
}

ts_status ledger_mac(const void *key, size_t key_len, const char *hash, char out[65],
                     struct ts_error *err)
{
    unsigned char d[32];
    if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, key, key_len, hash, strlen(hash), d) != 0)
        return ts_err(err, TS_INTERNAL, "hmac-sha256 failed");
    to_hex(d, 32, out);
    return TS_OK;
}

/* ---- record --------------------------------------------------------------- */

static int placement_ok(const char *p)
{
    if (!*p)
        return 1;
    size_t a = strspn(p, "0123456789");
    if (a == 0 || p[a] != ':')
        return 0;
    size_t b = strspn(p + a + 1, "0123456789");
    return b > 0 && p[a + 1 + b] == '\0';
}

static ts_status validate(const struct ledger_event *ev, struct ts_error *err)
{
    const char *src = nz(ev->source);
    if (ev->ts_ms <= 0)
        return ts_err(err, TS_INVALID, "ledger event needs a time after 1970");
    if (!*nz(ev->tenant))
        return ts_err(err, TS_INVALID, "ledger event needs a tenant");
    if (!*nz(ev->gpu_uuid) && !*nz(ev->instance_uuid))
        return ts_err(err, TS_INVALID, "ledger event needs a gpu uuid or an instance uuid");
    if (strcmp(src, "plan") && strcmp(src, "observed") && strcmp(src, "nvidia-smi") &&
        strcmp(src, "inventory"))
        return ts_err(err, TS_INVALID,
                      "ledger source '%s' is not one of plan, observed, nvidia-smi, inventory",
                      src);
    if (!placement_ok(nz(ev->placement)))
        return ts_err(err, TS_INVALID, "placement '%s' is not START:SIZE", ev->placement);
    return TS_OK;
}

static void entry_from_event(struct store_ledger_entry *e, const struct ledger_event *ev)
{
    memset(e, 0, sizeof(*e));
    e->ts_ms = ev->ts_ms;
    e->node = nz(ev->node);
    e->gpu_uuid = nz(ev->gpu_uuid);
    e->instance_uuid = nz(ev->instance_uuid);
    e->gi_id = nz(ev->gi_id);
    e->profile = nz(ev->profile);
    e->placement = nz(ev->placement);
    e->tenant = nz(ev->tenant);
    e->workload = nz(ev->workload);
    e->source = nz(ev->source);
}

/* Chain ev onto the head and append it; inside store_ledger_lock. */
static ts_status append_locked(struct store *st, const void *key, size_t key_len,
                               const struct ledger_event *ev, int64_t *seq, struct ts_error *err)
{
    struct store_ledger_entry last, e;
    int found = 0;
    ts_status rc = store_ledger_last(st, &last, &found, err);
    if (rc != TS_OK)
        return rc;
    entry_from_event(&e, ev);
    e.seq = found ? last.seq + 1 : 1;
    snprintf(e.prev_hash, sizeof e.prev_hash, "%s", found ? last.hash : LEDGER_ZERO_HASH);
    if ((rc = ledger_hash(e.prev_hash, &e, e.hash, err)) != TS_OK)
        return rc;
    if (key && (rc = ledger_mac(key, key_len, e.hash, e.mac, err)) != TS_OK)
        return rc;
    int64_t got = 0;
    if ((rc = store_ledger_append(st, &e, &got, err)) != TS_OK)
        return rc;
    if (seq)
        *seq = got;
    if (got != e.seq)
        return ts_err(err, TS_INTERNAL,
                      "ledger entry stored as seq %" PRId64 " but hashed as %" PRId64
                      " (a removed head entry): run ledger verify",
                      got, e.seq);
    return TS_OK;
}

ts_status ledger_record(struct store *st, const void *key, size_t key_len,
                        const struct ledger_event *ev, int64_t *seq, struct ts_error *err)
{
    ts_status rc = validate(ev, err);
    if (rc == TS_OK)
        rc = store_ledger_lock(st, err);
    if (rc != TS_OK)
        return rc;
    rc = append_locked(st, key, key_len, ev, seq, err);
    ts_status end = store_ledger_unlock(st, rc == TS_OK, err);
    return rc == TS_OK ? end : rc;
}

/* ---- verify --------------------------------------------------------------- */

struct walk {
    const void *key;
    size_t key_len;
    struct ledger_report *rep;
    char prev[65];
    struct ts_error *err;
    ts_status rc;
};

static int bad(struct walk *w, int64_t seq, const char *what)
{
    w->rep->intact = 0;
    w->rep->bad_seq = seq;
    snprintf(w->rep->problem, sizeof w->rep->problem, "%s", what);
    return 1;
}

/* 1 (and the report filled, or w->rc set) when e breaks the chain. */
static int check_entry(struct walk *w, const struct store_ledger_entry *e)
{
    char want[65], msg[200];
    int64_t expect = w->rep->last_seq + 1;
    if (e->seq != expect) {
        snprintf(msg, sizeof msg,
                 "seq gap: expected seq %" PRId64 " (an entry was deleted, "
                 "inserted or moved)",
                 expect);
        return bad(w, e->seq, msg);
    }
    if (strcmp(e->prev_hash, w->prev) != 0)
        return bad(w, e->seq,
                   "prev_hash is not the previous entry's hash (an entry was "
                   "deleted, inserted or reordered)");
    if ((w->rc = ledger_hash(e->prev_hash, e, want, w->err)) != TS_OK)
        return 1;
    if (strcmp(want, e->hash) != 0)
        return bad(w, e->seq, "hash mismatch: the entry was edited");
    if (w->key) {
        if ((w->rc = ledger_mac(w->key, w->key_len, e->hash, want, w->err)) != TS_OK)
            return 1;
        if (strcmp(want, e->mac) != 0)
            return bad(w, e->seq,
                       *e->mac ? "mac mismatch: the entry was rewritten without "
                                 "the key"
                               : "mac missing");
    }
    return 0;
}

static int verify_one(void *ctx, const struct store_ledger_entry *e)
{
    struct walk *w = ctx;
    w->rep->entries++;
    if (check_entry(w, e))
        return 1;
    w->rep->last_seq = e->seq;
    snprintf(w->prev, sizeof w->prev, "%s", e->hash);
    return 0;
}

ts_status ledger_verify(struct store *st, const void *key, size_t key_len,
                        struct ledger_report *out, struct ts_error *err)
{
    memset(out, 0, sizeof(*out));
    out->intact = 1;
    out->macs_checked = key != NULL;
    struct walk w = {key, key_len, out, LEDGER_ZERO_HASH, err, TS_OK};
    ts_status rc = store_ledger_scan(st, verify_one, &w, err);
    if (rc == TS_OK)
        rc = w.rc;
    if (out->intact)
        snprintf(out->last_hash, sizeof out->last_hash, "%s", w.prev);
    return rc;
}
