/*
 * ledger.h - the custody ledger: which GPU or MIG instance served which
 * tenant, when, as a tamper-evident hash chain in the store (store.h); and
 * the events of what a node holds (nvidia-smi -L, a NodeInventory with the
 * plan's tenants), ready to record.
 *
 * Canonical bytes of an entry (version 1). Every item is a netstring:
 * the length of its value in bytes as ASCII decimal (no leading zeros,
 * "0" for empty), ':', the value bytes, ','. Items, in this order:
 *
 *   | #  | item          | value                                       |
 *   |----|---------------|---------------------------------------------|
 *   | 0  | version       | the literal "tessera-ledger-v1"             |
 *   | 1  | seq           | decimal, no sign, no leading zeros          |
 *   | 2  | ts_ms         | decimal Unix milliseconds ('-' if negative) |
 *   | 3  | node          | UTF-8 bytes as stored ("" when unknown)     |
 *   | 4  | gpu_uuid      | "                                           |
 *   | 5  | instance_uuid | "                                           |
 *   | 6  | gi_id         | "                                           |
 *   | 7  | profile       | "                                           |
 *   | 8  | placement     | "                                           |
 *   | 9  | tenant        | "                                           |
 *   | 10 | workload      | "                                           |
 *   | 11 | source        | "plan", "observed", "nvidia-smi", "inventory" |
 *
 * e.g. seq 1 -> "17:tessera-ledger-v1,1:1,..." The length prefix makes the
 * encoding unambiguous: no two different entries have the same bytes.
 *
 *   hash = hex(SHA-256(prev_hash || canonical))  prev_hash as its 64 lowercase
 *          hex characters; the first entry's prev_hash is 64 '0's
 *   mac  = hex(HMAC-SHA256(key, hash))           hash as its 64 hex characters;
 *          "" when recorded without a key
 *
 * seq is in the hashed bytes, so an entry moved to another position breaks
 * its own hash. Without a key anyone with write access can rebuild a valid
 * chain; with a key (kept away from the database) only the key holder can.
 * Limits: removing the newest entries is only visible against an external
 * copy of the last hash (ledger_verify reports it for that purpose);
 * concurrent recorders on one database are not serialised (the second
 * append is detected and reported as an error).
 */
#ifndef TS_LEDGER_H
#define TS_LEDGER_H

#include <stddef.h>
#include <stdint.h>
#include "inventory/inventory.h"
#include "reconf/reconf.h"
#include "store/store.h"
#include "util/arena.h"
#include "util/error.h"
#include "util/sbuf.h"

#define LEDGER_ZERO_HASH "0000000000000000000000000000000000000000000000000000000000000000"

/* One custody event to record; NULL strings count as "". */
struct ledger_event {
    int64_t ts_ms;
    const char *node, *gpu_uuid, *instance_uuid, *gi_id, *profile, *placement, *tenant, *workload,
        *source;
};

/* An entry read back, with its own copies of the strings. */
struct ledger_row {
    int64_t seq, ts_ms;
    char *node, *gpu_uuid, *instance_uuid, *gi_id, *profile, *placement, *tenant, *workload,
        *source;
    char hash[65], prev_hash[65], mac[65];
};

struct ledger_list {
    struct ledger_row *rows;
    size_t n, cap;
};

/* The outcome of ledger_verify. */
struct ledger_report {
    int intact;        /* 1 when every check passed */
    int64_t entries;   /* entries walked */
    int64_t bad_seq;   /* the first bad entry's seq, 0 when intact */
    int macs_checked;  /* 1 when a key was given */
    char problem[256]; /* what is wrong with bad_seq, "" when intact */
    int64_t last_seq;  /* the head of the chain, for external anchoring */
    char last_hash[65];
};

/* Append e's canonical bytes (seq and ts_ms from e) to out. */
void ledger_canonical(const struct store_ledger_entry *e, struct ts_sbuf *out);
/* hash of e given prev (64 hex); out gets 64 hex + NUL. */
ts_status ledger_hash(const char *prev, const struct store_ledger_entry *e, char out[65],
                      struct ts_error *err);
ts_status ledger_mac(const void *key, size_t key_len, const char *hash, char out[65],
                     struct ts_error *err);

/* Validate ev, chain it after the last entry and append it; *seq gets its seq.
 * key may be NULL (no mac). */
ts_status ledger_record(struct store *st, const void *key, size_t key_len,
                        const struct ledger_event *ev, int64_t *seq, struct ts_error *err);

/* Walk the chain; out->intact says whether it holds. Returns an error only
 * when the store cannot be read. */
ts_status ledger_verify(struct store *st, const void *key, size_t key_len,
                        struct ledger_report *out, struct ts_error *err);

/* The entry for uuid (a GPU or instance UUID) current at at_ms: the latest
 * with ts_ms <= at_ms (the higher seq on equal times). *found = 0 if none;
 * otherwise release out with ledger_row_free. */
ts_status ledger_who(struct store *st, const char *uuid, int64_t at_ms, struct ledger_row *out,
                     int *found, struct ts_error *err);

/* Everyone on uuid at at_ms, custody told from observation. uuid is a GPU
 * UUID (then each of its MIG instances and the whole card are asked about)
 * or an instance UUID. For each device (an instance UUID, or the whole GPU),
 * custody holds the latest entry with ts_ms <= at_ms whose source is not
 * "observed" (plan, nvidia-smi, inventory: who holds it); observed holds
 * the "observed" entries (a pod seen on the device, a custody violation)
 * from that custody entry's time on (all of them, when the device has no
 * custody entry). Both in seq order; release with ledger_holders_free. */
struct ledger_holders {
    struct ledger_list custody, observed;
};
ts_status ledger_holders(struct store *st, const char *uuid, int64_t at_ms,
                         struct ledger_holders *out, struct ts_error *err);
void ledger_holders_free(struct ledger_holders *h);

/* Entries of tenant (NULL: every tenant) with from_ms <= ts_ms < to_ms, in seq order. */
ts_status ledger_history(struct store *st, const char *tenant, int64_t from_ms, int64_t to_ms,
                         struct ledger_list *out, struct ts_error *err);

void ledger_row_free(struct ledger_row *r);
void ledger_list_free(struct ledger_list *l);

/* Auditor formats: CSV (RFC 4180, CRLF line ends, header row) and JSON
 * ({"entries": [...]}, keys sorted, 2-space indent). */
void ledger_csv(const struct ledger_list *l, struct ts_sbuf *out);
ts_status ledger_json(const struct ledger_list *l, char **out, struct ts_error *err);

/* TIME: Unix seconds (digits) or RFC 3339 (2026-11-30T10:00:00Z, optional
 * fraction, Z or +hh:mm/-hh:mm). TS_USAGE on anything else. */
ts_status ledger_parse_time(const char *s, int64_t *ms, struct ts_error *err);
/* ms as RFC 3339 UTC ("...T10:00:00Z", ".123" added when not whole seconds). */
void ledger_format_time(int64_t ms, char buf[40]);

/* Events from `nvidia-smi -L` text: one per MIG device (gpu_uuid, instance_uuid,
 * profile) and one per GPU that lists no MIG device. tmpl gives ts_ms, node and
 * tenant ("unassigned" when NULL); source is "nvidia-smi". The strings of
 * *evs point into *arena (one allocation); free both with free(). */
/* An event from tmpl for one device: gpu_uuid, instance_uuid ("" for a
 * whole GPU) and profile set, tenant "unassigned" when tmpl has none, and
 * source. The one place events of observed devices are made
 * (`--from-nvidia-smi` and `--inventory`). */
struct ledger_event ledger_event_of(const struct ledger_event *tmpl, const char *gpu_uuid,
                                    const char *instance_uuid, const char *profile,
                                    const char *source);

ts_status ledger_parse_smi(const char *text, const struct ledger_event *tmpl,
                           struct ledger_event **evs, size_t *n, char **arena,
                           struct ts_error *err);

/* Events made here (ledger_inventory_events): n of them in ev; the strings
 * not borrowed from the inputs live in arena. */
struct ledger_events {
    struct ledger_event *ev;
    size_t n, cap;
    struct ts_arena arena;
};

/* The custody events of a NodeInventory (`tessera agent inventory -o json`):
 * one per GPU instance (instance_uuid its first compute instance's MIG
 * device UUID, gi_id, placement "start:size", profile), or one per GPU that
 * has none; source "inventory", node tmpl->node or else inv->node, ts_ms
 * and the rest from tmpl. With plan (NULL: tmpl's tenant, "unassigned" when
 * none) the tenant and workload are the plan's for that node and GPU: the
 * planned instance of the same profile and placement, the card's owner for
 * a GPU without instances, else "unassigned". Strings are borrowed from
 * inv, plan and tmpl, which must outlive out; release with
 * ledger_events_release (done already when this fails). */
ts_status ledger_inventory_events(const struct inv_node *inv, const struct reconf_plan *plan,
                                  const struct ledger_event *tmpl, struct ledger_events *out,
                                  struct ts_error *err);
void ledger_events_release(struct ledger_events *out);

#endif
