/*
 * usage.h - GPU-hours from scrape samples: the integration rules of
 * metering, as a pure function over samples ordered by (device, time).
 *
 * Between two consecutive scrapes of one device, the interval belongs to
 * the earlier scrape's tenant, model and profile, weighted by the card share
 * it is charged (allocation basis) and by that share times the engine-active
 * ratio (usage basis). An interval whose engine ratio is unknown (no
 * recognised utilisation metric, or one out of range) counts in the unknown
 * column, never as used. A gap is capped at twice the scrape interval, so a
 * missed scrape is not billed as hours of use; a repeated timestamp counts
 * once. With close_by_device set (meter_usage_scan sets it), a device's
 * keys ("UUID" and "UUID#ns/pod": the pods a shared card lists, which come
 * and go) are integrated together: each point is billed up to the device's
 * next scrape under any of its keys (the key up to '#'), which is never
 * later than the key's own next point, capped the same; a key's last point
 * is closed that way too. The points of a device are gathered until its
 * keys end (32 bytes a point), so they must come ordered by device key in
 * byte order, a device's keys adjacent. A point's interval then depends on
 * the points within two intervals after it only, so a window reading those
 * bills it as any wider window does, except for a point whose next scrape
 * is further: it is billed the cap, however late that scrape comes (an
 * outage), and the newest point of a device is billed once a later one is
 * stored. A bounded window keeps such points as tails for its reader to
 * look the device's later scrapes up (meter_usage_scan does), so an
 * outage across a window's end is billed as a wider window bills it. Only the part of an interval inside
 * the window [from_ms, to_ms) is billed, so periods that split a day add up
 * to the day exactly. Hours are
 * integers: the exact sum of interval_ms x share_ppm is kept and divided
 * once, at the end, into micro-GPU-hours (1,000,000 = one whole GPU for one
 * hour).
 */
#ifndef METER_USAGE_H
#define METER_USAGE_H

#include <stddef.h>
#include <stdint.h>
#include "util/error.h"
#include "util/limits.h" /* METER_KEY_MAX */

struct meter_point {    /* one scrape of one device */
    const char *device; /* GPU UUID, or UUID/GPU-instance for MIG */
    int64_t ts_ms;
    const char *tenant, *model, *profile;
    int64_t share_ppm;    /* the share of the card it is charged */
    int64_t util_ppm;     /* engine-active ratio, -1 unknown (the unknown column) */
    const char *workload; /* the tenant's workload, "" or NULL when not known */
};

struct meter_total {
    char tenant[METER_KEY_MAX], model[METER_KEY_MAX], profile[METER_KEY_MAX];
    char workload[METER_KEY_MAX];  /* "" in totals; named in wtotals */
    __int128 alloc_num, usage_num; /* sums of ms x ppm (x ppm / 1e6 for usage) */
    __int128 unknown_num;          /* ms x ppm of intervals of unknown engine ratio */
};

struct meter_fpoint { /* a point of the device being gathered (close_by_device) */
    int64_t ts_ms, share_ppm, util_ppm;
    size_t attr; /* its tenant, model, profile and workload: attrs[attr] */
};

struct meter_attr {
    char tenant[METER_KEY_MAX], model[METER_KEY_MAX], profile[METER_KEY_MAX];
    char workload[METER_KEY_MAX];
};

/* A device's newest point in a window read whose next scrape was not read:
 * billed only if the device has a later scrape (meter_usage_bill_tail). */
struct meter_tail {
    char family[METER_KEY_MAX]; /* the device (its key up to '#') */
    int split;                  /* some key of it at that time has a '#' */
    struct meter_fpoint p;      /* p.attr indexes tail_attrs */
};

struct meter_requests { /* a consumer's requests to a shared workload in the window */
    char owner[METER_KEY_MAX], workload[METER_KEY_MAX], consumer[METER_KEY_MAX];
    int64_t count;
};

struct meter_usage {
    int64_t interval_ms;    /* the scrape interval */
    int64_t from_ms, to_ms; /* the window billed (init: everything) */
    struct meter_total *totals;
    size_t ntotals, cap;
    /* the same hours, by tenant, workload, model and profile, of the points
     * that name their workload (for splitting a shared workload) */
    struct meter_total *wtotals;
    size_t nwtotals, wcap;
    /* the device being integrated */
    char device[METER_KEY_MAX];
    int have_prev;
    struct meter_point prev;
    char prev_tenant[METER_KEY_MAX], prev_model[METER_KEY_MAX], prev_profile[METER_KEY_MAX];
    char prev_workload[METER_KEY_MAX];
    int64_t out_of_order; /* points older than the previous one of the device */
    /* the consumers' requests to shared workloads (meter_usage_scan reads
     * them; PriceBook sharedSplit: usage) */
    struct meter_requests *requests;
    size_t nrequests, requests_cap;
    /* close_by_device: the device (key up to '#') being gathered, its
     * points and their distinct attributes */
    int close_by_device;
    char family[METER_KEY_MAX];
    struct meter_fpoint *pts;
    size_t npts, pts_cap;
    struct meter_attr *attrs;
    size_t nattrs, attrs_cap;
    /* a bounded window (to_ms < INT64_MAX): the points of each device's
     * last time read that may reach into it, whose next scrape lies beyond
     * what was read (an outage across the window's end) */
    struct meter_tail *tails;
    size_t ntails, tails_cap;
    struct meter_attr *tail_attrs;
    size_t ntail_attrs, tail_attrs_cap;
    int split_family; /* the family being gathered has a '#' key */
};

void meter_usage_init(struct meter_usage *u, int64_t interval_ms);
void meter_usage_release(struct meter_usage *u);
/* Add the next point (points must come ordered by device, then time). */
ts_status meter_usage_add(struct meter_usage *u, const struct meter_point *p);
/* End of the points: bill the last device gathered (close_by_device). */
ts_status meter_usage_finish(struct meter_usage *u);
/* Bill tail i (u->tails) as though its device's next scrape came after
 * the cap: the caller has found that the device has a later scrape. */
ts_status meter_usage_bill_tail(struct meter_usage *u, size_t i);
/* Sort the totals by tenant, model, then profile (for output). */
void meter_usage_sort(struct meter_usage *u);
/* Micro-GPU-hours of a total on each basis (rounded half up). */
int64_t meter_alloc_uh(const struct meter_total *t);
int64_t meter_usage_uh(const struct meter_total *t);
int64_t meter_unknown_uh(const struct meter_total *t);

#endif
