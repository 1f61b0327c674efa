/*
 * time.h - the times users type: Unix seconds ("1700000000") or RFC 3339
 * ("2026-11-30T10:00:00Z", "2026-11-30T11:00:00+01:00", fractional seconds
 * allowed), to Unix milliseconds; and durations like "15s", "2m", "1h".
 */
#ifndef TS_TIME_H
#define TS_TIME_H

#include <stdint.h>

/* 1 and *ms on success, 0 when text is neither form. */
int ts_time_parse(const char *text, int64_t *ms);
/* ms as RFC 3339 UTC: "2026-11-30T10:00:00Z" (".250Z" when it has ms). */
void ts_time_format(int64_t ms, char buf[40]);
/* "15s", "500ms", "2m", "1h" (a plain number is seconds); 1 on success. */
int ts_duration_parse(const char *text, int64_t *ms);

#endif
