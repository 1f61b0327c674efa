/*
 * inflight.c - the SM share's in-flight bound. A launch returns before its
 * kernel runs (the driver queues it), so the token bucket (sm.c) alone
 * would let a throttled container queue seconds of work that then runs
 * whatever its neighbours need. After each of its launches the shim records
 * an event on the launch's stream (the driver's own cuEventRecord; events
 * made with CU_EVENT_DISABLE_TIMING, pooled: one per ring slot, made the
 * first time the slot is used and reused after, all destroyed before the
 * application destroys a context or releases its last primary context
 * reference, since an event dies with its context). Each process publishes
 * how many of its launches are in flight (event not yet completed) in its
 * slot of the region; the container's count times the limiter's estimated
 * GPU time of one launch is its outstanding work. Before a launch, while
 * that and the new launch pass the share's worth (smPercent x 50 ms of GPU
 * time), the launching thread waits for its own oldest event; a process
 * with nothing in flight (events belong to the process that made them: it
 * cannot wait for a sibling's) sleeps while its siblings' counts pass the
 * worth, at most 100 ms, and launches when the container has nothing in
 * flight. While no estimate exists yet each launch counts as the whole
 * worth. A count goes stale while its process has stopped launching and
 * has not synchronised since its work ran: its siblings ignore a count
 * unchanged for 100 ms (region.c; the worth runs within 50 ms at the
 * share), and a dead process's slot is reclaimed with its count. The
 * limiter's tick counts a tracked launch when its event is seen completed,
 * not when it is submitted: its per-launch estimate (busy time / launches)
 * divides the time that ran by the launches that ran, where dividing by
 * those submitted would shrink it while a queue grows, and the bound with
 * it, and gives back the tokens it took (kept in the ring with it). A
 * process mutex guards the ring (taken only when throttled).
 */
#include "shim/shim.h"

#include <pthread.h>
#include <time.h>

#define INFLIGHT_MAX 256                 /* events one process keeps in flight */
#define INFLIGHT_WORTH_NS 50000000ull    /* the share's worth: smPercent x 50 ms */
#define SIBLING_WAIT_MAX_NS 100000000ull /* a wait on siblings' counts, at most */
#define SIBLING_NAP_MIN_NS 50000ull
#define SIBLING_NAP_MAX_NS 2000000ull

typedef CUresult (*event_create_fn)(CUevent *, unsigned int);
typedef CUresult (*event_record_fn)(CUevent, CUstream);
typedef CUresult (*event_fn)(CUevent);

static struct {
    int on;
    uint64_t worth_ns;
    event_create_fn create;
    event_record_fn record;
    event_fn query, sync, destroy;
    pthread_mutex_t mu;
    CUevent ev[INFLIGHT_MAX];    /* the pool: ev[i] serves ring slot i */
    uint64_t cost[INFLIGHT_MAX]; /* the tokens slot i's launch took (ns) */
    unsigned head, n;
} in = {.mu = PTHREAD_MUTEX_INITIALIZER};

void shim__inflight_init(unsigned sm_percent)
{
    in.worth_ns = sm_percent * INFLIGHT_WORTH_NS / 100;
    in.create = (event_create_fn)shim__driver_sym("cuEventCreate");
    in.record = (event_record_fn)shim__driver_sym("cuEventRecord");
    in.query = (event_fn)shim__driver_sym("cuEventQuery");
    in.sync = (event_fn)shim__driver_sym("cuEventSynchronize");
    in.destroy = (event_fn)shim__driver_sym("cuEventDestroy_v2");
    in.on = in.create && in.record && in.query && in.sync && in.destroy;
    if (!in.on)
        shim__log("smPercent=%u: the driver has no events: launches in flight not bounded",
                  sm_percent);
}

int shim__inflight_on(void) { return in.on; }

/* A launch known to have run, which took taken_ns of tokens: the
 * limiter's tick counts it and gives its tokens back (sm.c). */
static void ran(uint64_t taken_ns)
{
    atomic_fetch_add(&shim__region()->sm.launches, 1);
    shim__region_ran_add(taken_ns);
}

/* Forget the oldest launch, which has run (under the lock). */
static void pop(void)
{
    uint64_t cost = in.cost[in.head];
    in.head = (in.head + 1) % INFLIGHT_MAX;
    in.n--;
    shim__region_inflight_add(-1);
    ran(cost);
}

/* The container's launches in flight and one more pass the worth. */
static int over(uint64_t est)
{
    if (!est)
        return 1;
    return (shim__region_inflight() + 1) * est > in.worth_ns;
}

/* Forget the launches that have completed, oldest first (an event the
 * driver no longer knows counts as completed). */
static void reap(void)
{
    while (in.n && in.query(in.ev[in.head]) != CUDA_ERROR_NOT_READY)
        pop();
}

/* With nothing of its own in flight a process has no event to wait for:
 * it sleeps while its siblings' launches in flight and this one pass the
 * worth, reading their published counts a quarter of a launch apart (each
 * reaps its own while it waits for tokens too, sm.c), for at most
 * SIBLING_WAIT_MAX_NS (a count that stops changing is ignored after 100 ms
 * anyway, region.c). So the container's queue is bounded, not each
 * process's: four processes of 16 ms kernels at 10% had four in flight. */
static void wait_siblings(uint64_t est)
{
    uint64_t nap = est / 4, until = shim__now_ns() + SIBLING_WAIT_MAX_NS;
    nap = nap < SIBLING_NAP_MIN_NS ? SIBLING_NAP_MIN_NS : nap;
    nap = nap > SIBLING_NAP_MAX_NS ? SIBLING_NAP_MAX_NS : nap;
    while (shim__region_inflight() && over(est) && shim__now_ns() < until) {
        struct timespec ts = {0, (long)nap};
        nanosleep(&ts, NULL);
    }
}

void shim__inflight_wait(uint64_t est)
{
    if (!in.on)
        return;
    pthread_mutex_lock(&in.mu);
    reap();
    while (in.n && (in.n == INFLIGHT_MAX || over(est))) {
        in.sync(in.ev[in.head]);
        pop();
    }
    unsigned mine = in.n;
    pthread_mutex_unlock(&in.mu);
    if (!mine)
        wait_siblings(est);
}

/* Record ring slot i's event on stream, making it first; once more with a
 * new event, made in the current context, when the old one was made in
 * another (a process switching contexts). */
static int record(unsigned i, CUstream stream)
{
    for (int tries = 0; tries < 2; tries++) {
        if (!in.ev[i] && in.create(&in.ev[i], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
            in.ev[i] = NULL;
            return -1;
        }
        if (in.record(in.ev[i], stream) == CUDA_SUCCESS)
            return 0;
        in.destroy(in.ev[i]);
        in.ev[i] = NULL;
    }
    return -1;
}

void shim__inflight_record(CUstream stream, uint64_t taken_ns)
{
    if (!in.on)
        return;
    pthread_mutex_lock(&in.mu);
    if (in.n == INFLIGHT_MAX) { /* another thread launched meanwhile */
        in.sync(in.ev[in.head]);
        pop();
    }
    unsigned i = (in.head + in.n) % INFLIGHT_MAX;
    if (record(i, stream) == 0) {
        in.cost[i] = taken_ns;
        in.n++;
        shim__region_inflight_add(1);
    } else
        ran(taken_ns); /* not tracked: counted now, as without the bound */
    pthread_mutex_unlock(&in.mu);
}

void shim__inflight_reap(void)
{
    if (!in.on)
        return;
    pthread_mutex_lock(&in.mu);
    reap();
    pthread_mutex_unlock(&in.mu);
}

void shim__inflight_release(void)
{
    if (!in.on)
        return;
    pthread_mutex_lock(&in.mu);
    while (in.n) {
        in.sync(in.ev[in.head]);
        pop();
    }
    for (int i = 0; i < INFLIGHT_MAX; i++)
        if (in.ev[i]) {
            in.destroy(in.ev[i]);
            in.ev[i] = NULL;
        }
    pthread_mutex_unlock(&in.mu);
}
