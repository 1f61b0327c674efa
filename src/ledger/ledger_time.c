/*
 * ledger_time.c - TIME arguments of the ledger commands, through util/time
 * (shared with metering), with the ledger's error message.
 */
#include "ledger/ledger.h"
#include "util/time.h"

ts_status ledger_parse_time(const char *s, int64_t *ms, struct ts_error *err)
{
    if (ts_time_parse(s, ms))
        return TS_OK;
    return ts_err(err, TS_USAGE,
                  "bad time '%s': want Unix seconds or RFC 3339 (2026-11-30T10:00:00Z)", s);
}

void ledger_format_time(int64_t ms, char buf[40]) { ts_time_format(ms, buf); }
