/*
 * time.h - the times users type: Unix seconds ("1700000000") or RFC 3339
 * ("2026-11-30T10:00:00Z", "2026-11-30T11:00:00+01:00", fractional seconds
 * allowed), to Unix milliseconds; and durations like "15s", "2m", "1h";
 * and a clock read in milliseconds, the one clock reading of every module
 * but the shim (which builds alone).
 */
#ifndef TS_TIME_H
#define TS_TIME_H

#include <stdint.h>
#include <time.h>

/* 1 and *ms on success, 0 when text is neither form. */
int ts_time_parse(const char *text, int64_t *ms);
/* ms as RFC 3339 UTC: "2026-11-30T10:00:00Z" (".250Z" when it has ms). */
void ts_time_format(int64_t ms, char buf[40]);
/* "15s", "500ms", "2m", "1h", "1d", "1w" (a plain number is seconds; a
 * day is 24 h, as Prometheus counts it); 1 on success. */
int ts_duration_parse(const char *text, int64_t *ms);
/* clock in milliseconds: CLOCK_REALTIME for Unix time, CLOCK_MONOTONIC for
 * intervals that a clock set back must not stretch. */
int64_t ts_clock_ms(clockid_t clock);
/* The same to the nanosecond, as fractional milliseconds (the fight's
 * latencies are well under one). */
double ts_clock_msf(clockid_t clock);

#endif
