/*
 * limits.h - the container's limit file (shim/limits.c): what the node side
 * writes for one container and the shim reads at start.
 *
 * The format (documented for users in docs/shim.md) is small key=value text:
 *
 *     # written by the tessera node agent; mounted read-only
 *     version = 1
 *     memoryLimit = 8Gi        bytes, or with Ki Mi Gi Ti Pi / K M G T P
 *     smPercent = 30           1..100 (100 = no compute limit)
 *     region = /run/tessera/ctr-1.region
 *     memoryBackstop = report  off | report | refuse (default off)
 *     backstopTolerance = 512Mi  driver figure over the charge that counts
 *     backstopIntervalMs = 1000  10..60000, how often NVML is asked
 *     pidMap = /run/tessera/pid-map   container pid -> host pid (hostpid.c)
 *     tenant = alpha           who the container is (the plan's names; the
 *     workload = chat          node agent's reports and ledger entries)
 *     onMemoryViolation = kill   what the node agent does when the driver
 *     onSmViolation = report     shows more than the limit: report | evict | kill
 *
 * `version` is required and must be 1; every other key is optional and may
 * appear once. Unknown keys, duplicates, bad values and NUL bytes are errors
 * with the line and column of the fault. The parser is a pure function of
 * its bytes (no I/O, no allocation), so the fuzzer and the unit tests drive
 * it directly, and the shim cannot be made to run unlimited by a file it
 * does not understand (the caller then fails closed). The node agent
 * (src/agent/limitfile.c) compiles this same parser in: the file the shim
 * obeys is the file the agent enforces.
 */
#ifndef SHIM_LIMITS_H
#define SHIM_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#define SHIM_LIMITS_VERSION 1
#define SHIM_REGION_PATH_MAX 256   /* bytes of the region path, with its NUL */
#define SHIM_LIMITS_FILE_MAX 65536 /* bytes a limit file may have */
/* The allocation tables (track.c) grow by segments, each twice the one
 * before: 16 of them hold 2^16 - 1 times the first (over 8 billion live
 * allocations in the pointer table), far past what a card can hold, while
 * bounding the lookups of a free. */
#define SHIM_TRACK_SEGMENTS 16
/* Memory pools one process may have settled (pool.c): applications make a
 * handful (one per device and stream class); past this a pool's reserve
 * beyond its allocations is not charged (logged once). */
#define SHIM_POOLS 256
/* What one CUDA context is charged (ctx.c): the driver's own memory for a
 * context and the modules it loads, which no allocation call shows. An
 * estimate, not a measurement: recent GPUs with lazy module loading take
 * a few hundred MiB per context; 256 MiB keeps a container from hiding
 * several contexts' worth of memory outside its limit. Below a 4 GiB limit
 * it is limit / SHIM_CTX_ESTIMATE_SHARE instead, so a small container is
 * not spent on estimates. */
#define SHIM_CTX_ESTIMATE (256ull << 20)
#define SHIM_CTX_ESTIMATE_SHARE 16
/* What one pending device-runtime launch is charged beyond the driver's
 * default 2048 (cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT),
 * legacy.c): cuda.h says raising the count makes the driver reserve device
 * memory up front but not how much; an estimate, not a measurement: each
 * pending launch buffers its parameters, up to 4 KiB (the device runtime's
 * parameter buffer). */
#define SHIM_PENDING_LAUNCH_ESTIMATE 4096ull
/* The backstop (backstop.c): what the driver may show beyond the shim's
 * charge before it counts (the driver's own per-process memory that no
 * call shows: contexts, modules, stacks, rounding), and how often it asks. */
#define SHIM_BACKSTOP_TOLERANCE (512ull << 20)
#define SHIM_BACKSTOP_INTERVAL_MS 1000u
#define SHIM_BACKSTOP_INTERVAL_MIN_MS 10u
#define SHIM_BACKSTOP_INTERVAL_MAX_MS 60000u

/* memoryBackstop: compare NVML's per-process memory with the charge. */
enum shim_backstop { SHIM_BACKSTOP_OFF, SHIM_BACKSTOP_REPORT, SHIM_BACKSTOP_REFUSE };

/* onMemoryViolation, onSmViolation: what the node agent does to a
 * container the driver shows over its limit (docs/agent.md). The shim
 * only reads them; the defaults protect the neighbours: kill for memory
 * (memory taken is memory a neighbour cannot get), report for the SM share
 * (the shim's share is work-conserving and NVML's samples are coarse). */
enum shim_action { SHIM_ACTION_REPORT, SHIM_ACTION_EVICT, SHIM_ACTION_KILL };
#define SHIM_NAME_MAX 64 /* tenant and workload names (DNS labels, 63) with NUL */

struct shim_limits {
    int version;                        /* SHIM_LIMITS_VERSION once parsed */
    int has_memory;                     /* memoryLimit was given */
    uint64_t memory_bytes;              /* the container's device memory, bytes */
    unsigned sm_percent;                /* 1..100; 100 when not given */
    char region[SHIM_REGION_PATH_MAX];  /* "" when not given */
    char pid_map[SHIM_REGION_PATH_MAX]; /* "" when not given */
    enum shim_backstop backstop;        /* SHIM_BACKSTOP_OFF when not given */
    uint64_t backstop_tolerance;        /* bytes; SHIM_BACKSTOP_TOLERANCE */
    unsigned backstop_interval_ms;      /* SHIM_BACKSTOP_INTERVAL_MS */
    char tenant[SHIM_NAME_MAX];         /* "" when not given */
    char workload[SHIM_NAME_MAX];       /* "" when not given */
    enum shim_action on_memory;         /* SHIM_ACTION_KILL when not given */
    enum shim_action on_sm;             /* SHIM_ACTION_REPORT when not given */
};

/* "report", "evict" or "kill". */
const char *shim_action_name(enum shim_action a);

/* A fault in the input: 1-based line and byte column, and what is wrong. */
struct shim_limits_error {
    int line, column;
    char msg[256]; /* lowercase, no trailing period */
};

/* Parse text[0..len) into *out. Returns 0, or -1 with *err filled (err may
 * be NULL). Thread-safe; touches nothing but out and err. */
int shim_limits_parse(const char *text, size_t len, struct shim_limits *out,
                      struct shim_limits_error *err);

/* One value, as in the file: memoryLimit's quantity ("8Gi", "1073741824"),
 * smPercent's integer and region's absolute path (copied with its NUL).
 * Return 0, or -1 with *bad = the offset of the faulty byte and *why a
 * static reason (*out untouched). Used for the environment fallback. */
int shim_limits_bytes(const char *s, size_t len, uint64_t *out, size_t *bad, const char **why);
int shim_limits_percent(const char *s, size_t len, unsigned *out, size_t *bad, const char **why);
int shim_limits_region(const char *s, size_t len, char out[SHIM_REGION_PATH_MAX], size_t *bad,
                       const char **why);

#endif
