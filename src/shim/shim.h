/*
 * shim.h - what the files of libtessera-cuda.so share (all hidden: the
 * library exports only the CUDA entry points of hooks.def and dlsym).
 *
 *   resolve.c  the real driver, once (pthread_once); dlsym and
 *              cuGetProcAddress interposition; logging to fd 2
 *   config.c   the limits: the file (limits.c parses it), else environment
 *   region.c   the container's accounting region (mmapped file, per-process
 *              slots, lock-free charge/credit, dead-process reclaim)
 *   track.c    what each live allocation was charged (growing lock-free tables)
 *   mem.c      the memory hooks: linear allocations, arrays, what the card shows
 *   vmm.c      VMM: charged until the last handle reference and mapping go
 *   ipc.c      memory imported from another process (IPC, shareable handles)
 *   legacy.c   the legacy 32-bit entry points, mipmapped arrays, context limits
 *   pool.c     memory pools: the reserve a pool keeps after frees is charged
 *   graph.c    graph memory: the device's graph pool reserve is charged
 *   ctx.c      contexts: an estimate each (SHIM_CTX_ESTIMATE)
 *   module.c   modules and libraries: what the driver took at the load
 *   sm.c       the launch hooks and the SM-share limiter
 *   inflight.c the SM share's bound on launches queued and not yet run
 *   launch.c   the legacy launch hooks (cuLaunch, cuLaunchGrid, ...)
 *   backstop.c the driver's per-process memory against the charge (NVML)
 *   hostpid.c  the host pids of the container's processes (the pid map)
 * Fast paths (allocation, free, launch) take no lock, call no malloc and no
 * stdio; the one-time set-up may. The exception: a throttled launch
 * (smPercent < 100) takes inflight.c's process mutex.
 */
#ifndef SHIM_SHIM_H
#define SHIM_SHIM_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "shim/limits.h"
#include "util/cuda_abi.h"

#define SHIM_EXPORT __attribute__((visibility("default")))

#define SHIM_HOOK(name) SHIM_ID_##name,
enum shim_hook_id {
#include "shim/hooks.def"
    SHIM_HOOK_COUNT
};
#undef SHIM_HOOK

/* ---- resolve.c ---------------------------------------------------------- */

/* The real driver's function for id (NULL when the driver lacks it). The
 * first call loads libcuda.so.1 and the configuration. */
void *shim__real(enum shim_hook_id id);
#define SHIM_REAL(name) ((__typeof__(&name))shim__real(SHIM_ID_##name))
/* Our definition in place of the real function p, or p itself. */
void *shim__translate(void *p);
/* A symbol of the real driver the shim does not hook; not for fast paths. */
void *shim__driver_sym(const char *name);
/* One line to fd 2, "tessera-cuda: ...". Not for fast paths. */
void shim__log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* CLOCK_MONOTONIC in ns. */
uint64_t shim__now_ns(void);

/* ---- config.c ----------------------------------------------------------- */

struct shim_config {
    int fail_closed; /* the limits could not be read: refuse all */
    int limited;     /* a memory limit applies */
    uint64_t memory_bytes;
    unsigned sm_percent; /* 100 = no compute limit */
    char region[SHIM_REGION_PATH_MAX];
    enum shim_backstop backstop; /* memoryBackstop (file only) */
    uint64_t backstop_tolerance;
    unsigned backstop_interval_ms;
    char pid_map[SHIM_REGION_PATH_MAX]; /* hostpid.c's pid map */
};
/* Read the limit file (or the environment) once; logs what is refused. */
void shim__config_load(struct shim_config *c);

/* ---- region.c ----------------------------------------------------------- */

#define SHIM_REGION_MAGIC 0x55435354u /* "TSCU" little-endian */
#define SHIM_REGION_VERSION 5u
/* Processes one region accounts (one a slot): part of the region's layout,
 * a region with another count is refused. A container runs far fewer. */
#define SHIM_SLOTS 1024

/* A slot is alive while its owner holds a write lock on the byte at
 * SHIM_SLOT_LOCK_BASE + index of the region file: an open file description
 * lock (F_OFD_SETLK), which belongs to the owner's own descriptor of the
 * file, so another descriptor's close (the tenant opening and closing the
 * file) leaves it; the kernel drops it when the owner exits or execs (the
 * descriptor is close-on-exec), in any pid namespace; a forked child gets a
 * descriptor of its own (region.c). Past the end of the region, so no data
 * byte is locked. */
#define SHIM_SLOT_LOCK_BASE (1ull << 30)

struct shim_slot {
    _Atomic int32_t pid; /* 0 free, -1 being reclaimed, else owner (its own namespace's pid) */
    _Atomic uint32_t inflight;    /* owner's launches not known to have run (inflight.c) */
    _Atomic uint64_t inflight_at; /* CLOCK_MONOTONIC ns of the owner's last change to it */
    _Atomic uint64_t start;       /* owner's start time (/proc stat field 22) */
    _Atomic uint64_t bytes;       /* device memory charged to the owner */
    _Atomic uint64_t ns;        /* owner's pid namespace (inode of /proc/self/ns/pid), 0 unknown */
    _Atomic uint64_t sm_ran_ns; /* tokens the owner's launches took that have run and the
                                    limiter has not given back yet (sm.c) */
};

/* The SM limiter's shared state: one bucket per container (sm.c). */
struct shim_sm_state {
    _Atomic int64_t balance_ns;   /* tokens: GPU time the container may use */
    _Atomic uint64_t refill_at;   /* CLOCK_MONOTONIC of the last refill */
    _Atomic uint64_t tick_at;     /* ... of the last feedback tick */
    _Atomic uint64_t allowed_ppm; /* current refill rate, parts per million */
    _Atomic uint64_t est_cost_ns; /* estimated GPU time of one launch */
    _Atomic uint64_t launches;    /* launches (run, when tracked) since the last count */
    _Atomic uint64_t own_prev;    /* cumulative busy at the last tick */
    _Atomic uint64_t card_prev;   /* hook: the card's cumulative busy; NVML: the last rate */
    _Atomic uint64_t seen_us;     /* NVML: newest process sample consumed (its timeStamp) */
    _Atomic uint64_t counted_at;  /* CLOCK_MONOTONIC when launches was last read and zeroed */
    _Atomic uint64_t measured;    /* NVML: a tick has charged the container's samples */
};

struct shim_region {
    uint32_t magic, version;
    uint64_t size;  /* bytes of this struct */
    uint64_t limit; /* memory limit of the creator (information) */
    uint32_t nslots;
    _Atomic uint32_t hiwater;    /* slots[0..hiwater) were ever used */
    _Atomic uint64_t created_ns; /* CLOCK_MONOTONIC when the region was made */
    _Atomic uint64_t tampered;   /* repairs made by the shim's guard (region.c) */
    struct shim_sm_state sm;
    struct shim_slot slots[SHIM_SLOTS];
};

/* Map the region at path (creating it), or a private one when that fails.
 * Returns -1 when the file exists with another layout (caller fails closed). */
int shim__region_open(const char *path, uint64_t limit);
struct shim_region *shim__region(void);
/* Charge n bytes against limit: 0, or -1 when it would go over. */
int shim__charge(uint64_t n, uint64_t limit);
void shim__credit(uint64_t n);
/* Bytes charged to the container's live processes (reclaims dead ones). */
uint64_t shim__used(void);
/* The live pids of the container, for per-process utilisation. */
int shim__region_pids(pid_t *pids, int max);
/* The guard: how often each process checks that the region's path still
 * names the file it mapped and that its slot holds what it charged. */
#define SHIM_GUARD_MS 50u
/* One guard round (the guard thread runs it every SHIM_GUARD_MS): 0, or
 * the number of repairs made (a region replaced and joined again, this
 * process's slot restored). */
int shim__region_guard(void);
/* Add delta to this process's launches in flight; the container's total
 * over its live processes. */
void shim__region_inflight_add(int delta);
uint64_t shim__region_inflight(void);
/* The SM limiter's refunds: add the tokens a launch of this process took,
 * once it has run; take (and remove) the share ppm (parts per million, at
 * most all) of what each of the container's live processes added. */
void shim__region_ran_add(uint64_t ns);
uint64_t shim__region_ran_take(uint64_t ppm);

/* ---- track.c ------------------------------------------------------------ */

enum shim_track_kind {
    SHIM_TRACK_PTR,    /* device pointers (also legacy 32-bit ones) */
    SHIM_TRACK_HANDLE, /* VMM handles; aux: references (handle + mappings) */
    SHIM_TRACK_ARRAY,  /* arrays and mipmapped arrays */
    SHIM_TRACK_MAP,    /* VMM mappings by address; bytes: size, aux: handle */
    SHIM_TRACK_GRAPH,  /* graphs: bytes of their allocation nodes */
    SHIM_TRACK_EXEC,   /* executable graphs: the same; aux: uploaded */
    SHIM_TRACK_CTX,    /* contexts of cuCtxCreate: SHIM_CTX_ESTIMATE */
    SHIM_TRACK_MODULE, /* modules and libraries: what their load took */
    SHIM_TRACK_KINDS
};
/* Remember that key was charged bytes (aux as above): 0, or -1 when the
 * table cannot grow (mmap failed or SHIM_TRACK_SEGMENTS used). */
int shim__track_put(enum shim_track_kind k, uint64_t key, uint64_t bytes, uint64_t aux);
/* Forget key: its bytes (and *aux when aux is not NULL), or 0 when unknown. */
uint64_t shim__track_take(enum shim_track_kind k, uint64_t key, uint64_t *aux);
/* Add delta to key's aux: the new value, or -1 when key is unknown. */
int64_t shim__track_ref(enum shim_track_kind k, uint64_t key, int64_t delta);

/* ---- mem.c: what vmm.c and legacy.c share with it ----------------------- */

/* A memory limit applies (and the limits were read). */
int shim__limited(void);
/* Charge n bytes before asking the driver: CUDA_SUCCESS or out of memory. */
CUresult shim__reserve(uint64_t n);
void shim__unreserve(uint64_t n);
/* After the driver answered r: remember key's charge, or undo it all. */
CUresult shim__keep(enum shim_track_kind k, CUresult r, uint64_t key, uint64_t n,
                    void (*undo)(uint64_t key));
/* The same, remembering aux with the key (a pool allocation's pool). */
CUresult shim__keep_aux(enum shim_track_kind k, CUresult r, uint64_t key, uint64_t n,
                        void (*undo)(uint64_t key), uint64_t aux);
/* Forget key's charge, ask the driver (call(key, fn, arg)), credit on success. */
CUresult shim__release(enum shim_track_kind k, uint64_t key,
                       CUresult (*call)(uint64_t key, const void *fn, const void *arg),
                       const void *fn, const void *arg);
void shim__undo_ptr(uint64_t key);
void shim__undo_array(uint64_t key);
CUresult shim__call_free(uint64_t key, const void *fn, const void *arg);
CUresult shim__call_array_destroy(uint64_t key, const void *fn, const void *arg);
/* Bytes of a w x h x d array (0 counts as 1), UINT64_MAX on overflow. */
uint64_t shim__array_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch);
/* Keep an array creation's result r (charged n bytes) or give the n back. */
CUresult shim__array_done(CUresult r, CUarray *array, uint64_t n);
/* Rows of round_up(width, 512) bytes (UINT64_MAX on overflow). */
uint64_t shim__pitch_estimate(size_t width, size_t height);

/* ---- pool.c ------------------------------------------------------------- */

/* Charge pool's reserve beyond its allocations (what the driver keeps after
 * frees), or trim the pool when the limit has no room for it. */
void shim__pool_settle(CUmemoryPool pool);
/* Before an allocation of n bytes from pool: up to n of its charged reserve
 * is credited, since the driver serves the allocation from it first (the
 * settlement after the allocation charges what is left). */
void shim__pool_lend(CUmemoryPool pool, uint64_t n);

/* ---- graph.c ------------------------------------------------------------ */

/* Before a launch of g on stream (ptsz: the _ptsz path): its allocations
 * made and charged; CUDA_ERROR_OUT_OF_MEMORY when the limit has no room. */
CUresult shim__graph_before_launch(CUgraphExec g, CUstream stream, int ptsz);

/* ---- sm.c --------------------------------------------------------------- */

/* Set up the busy source (stand-in hook, else NVML) for a share < 100. */
void shim__sm_init(unsigned sm_percent);
/* Wait until the container may launch, then take one launch's tokens
 * (and wait for the in-flight bound). */
void shim__sm_gate(void);
/* After the driver answered r to a launch on stream: tracked by the
 * in-flight bound when it succeeded. Returns r. */
CUresult shim__sm_launched(CUstream stream, CUresult r);
/* On a _ptsz entry point the NULL stream is the per-thread default one. */
#define SHIM_PTSZ(stream) ((stream) ? (stream) : CU_STREAM_PER_THREAD)

/* ---- inflight.c --------------------------------------------------------- */

/* Find the driver's event entry points; the share's worth from sm_percent. */
void shim__inflight_init(unsigned sm_percent);
/* Before a launch of est ns (0: unknown): wait for this process's oldest
 * launches while the container's not yet run and this one pass the share's
 * worth. */
void shim__inflight_wait(uint64_t est);
/* After a launch on stream that took taken_ns of the limiter's tokens:
 * record an event there to know when it ran. */
void shim__inflight_record(CUstream stream, uint64_t taken_ns);
/* After the application synchronised: forget the launches that ran. */
void shim__inflight_reap(void);
/* Before a context goes: wait for the launches in flight, destroy the
 * pooled events (made again on the next launch). */
void shim__inflight_release(void);
/* The bound tracks launches (the driver has events): the limiter's tick
 * then counts a launch when it has run, not when it is submitted. */
int shim__inflight_on(void);

/* ---- backstop.c --------------------------------------------------------- */

/* Start the backstop's thread when memoryBackstop is report or refuse. */
void shim__backstop_init(const struct shim_config *c);
/* The driver shows more than the shim charged (memoryBackstop = refuse):
 * allocations are refused until it no longer does. */
int shim__backstop_refusing(void);
/* ---- hostpid.c ---------------------------------------------------------- */

/* Processes whose host pids one call finds (the first this many slots). */
#define SHIM_HOSTPID_MAX 256

/* One line of the pid map: a process's pid namespace, its pid there, and
 * its pid in the host's namespace. */
struct shim_pidmap_entry {
    uint64_t ns;
    pid_t pid, host;
};
/* Parse one line (without its '\n'): 1 with *e filled, 0 for a blank line or
 * a comment, -1 when malformed (*col: 0-based byte column, *why: reason). */
int shim__pidmap_line(const char *s, size_t len, struct shim_pidmap_entry *e, size_t *col,
                      const char **why);
/* The host pids of the region's live processes, at most max of them into
 * host: how many, or -1 when one of them has none (no pid map, unreadable,
 * malformed, or the process is missing from it); the reason goes to stderr
 * once until it changes. A process of the initial pid namespace is its own
 * host pid (no map needed). No malloc, no stdio, no lock. */
int shim__host_pids(pid_t *host, int max);

/* The configuration, valid after the first shim__real() call. */
const struct shim_config *shim__config(void);

#endif
