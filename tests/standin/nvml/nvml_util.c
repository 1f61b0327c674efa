/*
 * nvml_util.c - the stand-in NVML's utilisation: nvmlDeviceGetUtilizationRates
 * and nvmlDeviceGetProcessUtilization over the stand-in card
 * (tests/standin/card.h), with nvml.h's semantics. Test code, plain.
 *
 * What a real driver does: it samples each GPU on a fixed period (about
 * 1/6 s on current boards, up to 1 s on others) whether or not anyone asks,
 * and keeps the samples in a ring buffer shared by every NVML client. A
 * process sample is written for each process that ran in the period:
 * smUtil is the percent of the period its kernels ran, timeStamp the CPU
 * time (microseconds since the epoch) the sample was taken. A query
 * returns one entry per process with samples newer than lastSeenTimeStamp
 * (nvml.h: one structure per running process; processSamplesCount the
 * number of processes): the newest sample's time and the mean smUtil of
 * those samples, so a query that reaches back several periods gets the
 * average (as nvitop and nvtop observe on real drivers). The device's
 * "gpu" rate is the percent of the last period in which any kernel ran.
 *
 * nvmlDeviceGetSamples(GPU utilisation) gives the card's samples, one
 * every period, idle or not (a fresh history starts with an idle one).
 *
 * The model here: the sample period is $TESSERA_STANDIN_NVML_SAMPLE_MS
 * (default 167). Sample times are the multiples of the period on
 * CLOCK_REALTIME, so every process's stand-in stamps a period alike, as
 * one driver would. The history (the ring of samples, each card slot's busy
 * time at the newest sample time, and the card's) lives in a file beside
 * the card file, $TESSERA_STANDIN_GPU.nvml, shared by every process as the
 * driver's buffer is; whichever process reaches a sample time first writes
 * its samples (under flock), the others find them written. Each process
 * that asks for utilisation starts a sampler thread that wakes at every
 * sample time, and every call first writes any sample time already passed,
 * so a late thread only delays a sample. The busy time of a period is read
 * when the sample is written (standin_card_busy_ns: elapsed card time by
 * host pid) and divided by the time since the previous read, so a late
 * write measures a slightly shifted period, not a shorter or longer one. Sample times missed while no process sampled (up to
 * SAMPLE_GAP_MAX periods) get the mean of the gap; a longer gap, or the
 * first sample of a fresh history, only records the counters. Process
 * utilisation is of GPU 0 (the one stand-in card); other GPUs have no
 * samples, and a GPU in MIG mode is NOT_SUPPORTED (nvml.h: process
 * utilisation is not supported on MIG-enabled GPUs). The sampler thread does
 * not survive fork() (it restarts at the child's next call).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../card.h"
#include "nvml_util.h"

#define HIST_MAGIC 0x4c4d564eu /* "NVML" */
#define HIST_VERSION 2u
#define RING 2048         /* process samples the driver keeps */
#define CARD_RING 256     /* card samples the driver keeps */
#define SAMPLE_GAP_MAX 16 /* missed sample times filled in, at most */

/* nvml.h's nvmlUtilization_t and nvmlProcessUtilizationSample_t. */
typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
/* ... and nvmlSample_t (the value a union of 8 bytes; here uiVal). */
typedef struct {
    unsigned long long timeStamp;
    union {
        double dVal;
        unsigned int uiVal;
        unsigned long long ullVal;
    } sampleValue;
} nvmlSample_t;
#define NVML_GPU_UTILIZATION_SAMPLES 1
#define NVML_VALUE_TYPE_UNSIGNED_INT 1

struct hist_sample {
    uint32_t pid, sm;
    uint64_t ts_us;
};

struct history {
    uint32_t magic, version;
    uint64_t period_us; /* the period it was written with */
    uint64_t last_us;   /* the newest sample time written (0: none) */
    uint64_t card_ns;   /* the card's busy time then */
    uint64_t read_ns;   /* when the counters were read (card clock) */
    uint32_t card_pct;  /* the card's rate over the last period */
    struct {
        int32_t pid;
        uint64_t busy_ns;
    } prev[STANDIN_CARD_SLOTS]; /* each card slot's busy time then */
    uint64_t written;           /* process samples ever written */
    struct hist_sample ring[RING];
    uint64_t card_written;                   /* card samples ever written */
    struct hist_sample card_ring[CARD_RING]; /* pid unused, sm: the card's rate */
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static struct standin_card *card;
static struct history *hist;
static int hist_fd = -1;
static uint64_t period_us;

static uint64_t realtime_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void lock(void)
{
    pthread_mutex_lock(&mutex);
    while (flock(hist_fd, LOCK_EX) != 0 && errno == EINTR)
        ;
}

static void unlock(void)
{
    flock(hist_fd, LOCK_UN);
    pthread_mutex_unlock(&mutex);
}

/* The history file next to the card file, mapped (a fresh one, or one
 * written with another period or layout, starts empty). */
static void open_history(void)
{
    const char *gpu = getenv("TESSERA_STANDIN_GPU"), *ms = getenv("TESSERA_STANDIN_NVML_SAMPLE_MS");
    char path[4096];
    snprintf(path, sizeof path, "%s.nvml", gpu && *gpu ? gpu : "/tmp/tessera-standin-gpu.lock");
    period_us = (ms && atoi(ms) > 0 ? (uint64_t)atoi(ms) : 167u) * 1000u;
    card = standin_card_map();
    hist_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (!card || hist_fd < 0 || ftruncate(hist_fd, sizeof *hist) != 0)
        return;
    void *p = mmap(NULL, sizeof *hist, PROT_READ | PROT_WRITE, MAP_SHARED, hist_fd, 0);
    if (p == MAP_FAILED)
        return;
    lock();
    hist = p;
    if (hist->magic != HIST_MAGIC || hist->version != HIST_VERSION ||
        hist->period_us != period_us) {
        memset(hist, 0, sizeof *hist);
        hist->magic = HIST_MAGIC;
        hist->version = HIST_VERSION;
        hist->period_us = period_us;
    }
    unlock();
}

/* Busy time since the last sample time: a counter that went back is a
 * new process in the slot (or a new card file), counted from 0. */
static uint64_t grown(uint64_t now, uint64_t before) { return now >= before ? now - before : now; }

/* Write the samples of sample time t, k periods after the last one (k 0:
 * only record the counters). */
static void write_samples(uint64_t t, uint64_t k)
{
    uint64_t now = standin_card_now_ns(), span_ns = now > hist->read_ns ? now - hist->read_ns : 1;
    uint64_t all = standin_card_busy_ns(card, 0, now), late_us = realtime_us() - t;
    /* a first read stands for sample time t: the next period starts there */
    hist->read_ns = k || now < late_us * 1000 ? now : now - late_us * 1000;
    if (hist->last_us) /* else a fresh history: the card was idle */
        hist->card_pct = (uint32_t)((grown(all, hist->card_ns) * 100 + span_ns / 2) / span_ns);
    hist->card_pct = hist->card_pct > 100 ? 100 : hist->card_pct;
    hist->card_ns = all;
    for (uint64_t j = k ? 1 : 0; j <= k; j++) /* the card has a sample every period */
        hist->card_ring[hist->card_written++ % CARD_RING] = (struct hist_sample){
            0, hist->card_pct, t - (k - j) * period_us};
    for (int i = 0; i < STANDIN_CARD_SLOTS; i++) {
        int32_t pid = atomic_load(&card->slots[i].pid);
        uint64_t busy = pid > 0 ? standin_card_busy_ns(card, pid, now) : 0;
        uint64_t d = hist->prev[i].pid == pid ? grown(busy, hist->prev[i].busy_ns) : busy;
        hist->prev[i].pid = pid;
        hist->prev[i].busy_ns = busy;
        uint32_t pct = k ? (uint32_t)((d * 100 + span_ns / 2) / span_ns) : 0;
        for (uint64_t j = 1; d && k && j <= k; j++)
            hist->ring[hist->written++ % RING] = (struct hist_sample){
                (uint32_t)pid, pct > 100 ? 100 : pct, t - (k - j) * period_us};
    }
    hist->last_us = t;
}

/* Write every sample time passed and not written yet (under the lock). */
static void catch_up(void)
{
    uint64_t t = realtime_us() / period_us * period_us;
    if (t <= hist->last_us)
        return;
    uint64_t k = hist->last_us ? (t - hist->last_us) / period_us : 0;
    write_samples(t, k > SAMPLE_GAP_MAX ? 0 : k);
}

static void *sampler(void *unused)
{
    (void)unused;
    for (;;) {
        uint64_t next = (realtime_us() / period_us + 1) * period_us;
        struct timespec ts = {(time_t)(next / 1000000u), (long)(next % 1000000u) * 1000};
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        lock();
        catch_up();
        unlock();
    }
    return NULL;
}

/* The history, up to date, locked; NULL (unlocked) when there is none. */
static struct history *history(void)
{
    static pid_t started;
    pthread_once(&once, open_history);
    if (!hist)
        return NULL;
    lock();
    if (started != getpid()) { /* first call, or first in a forked child */
        pthread_t t;
        started = getpid();
        if (pthread_create(&t, NULL, sampler, NULL) == 0)
            pthread_detach(t);
    }
    catch_up();
    return hist;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
    int mig, g = standin_nvml_gpu(device, &mig);
    if (g < 0 || !utilization)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct history *h = g == 0 ? history() : NULL;
    utilization->gpu = h ? h->card_pct : 0;
    utilization->memory = 0;
    if (h)
        unlock();
    return NVML_SUCCESS;
}

/* nvml.h: the card's samples of type (here only GPU utilisation) newer
 * than lastSeenTimeStamp, every sample period, idle or not; with samples
 * NULL, the count only. */
nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t device, int type,
                                  unsigned long long lastSeenTimeStamp, int *sampleValType,
                                  unsigned int *sampleCount, nvmlSample_t *samples)
{
    int mig, g = standin_nvml_gpu(device, &mig);
    if (g < 0 || !sampleValType || !sampleCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (type != NVML_GPU_UTILIZATION_SAMPLES)
        return NVML_ERROR_NOT_SUPPORTED;
    struct history *h = g == 0 ? history() : NULL;
    unsigned int n = 0, room = *sampleCount;
    uint64_t first = h && h->card_written > CARD_RING ? h->card_written - CARD_RING : 0;
    for (uint64_t i = first; h && i < h->card_written; i++) {
        const struct hist_sample *c = &h->card_ring[i % CARD_RING];
        if (c->ts_us <= lastSeenTimeStamp)
            continue;
        if (samples && n < room)
            samples[n] = (nvmlSample_t){.timeStamp = c->ts_us, .sampleValue.uiVal = c->sm};
        n++;
    }
    if (h)
        unlock();
    *sampleValType = NVML_VALUE_TYPE_UNSIGNED_INT;
    *sampleCount = n;
    if (!n)
        return NVML_ERROR_NOT_FOUND;
    return !samples || room >= n ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
}

/* One entry per process with samples newer than seen (nvml.h: "one
 * utilization sample structure is returned per process running"): its
 * newest sample's time, and the mean smUtil of its samples newer than seen
 * (a query reaching further back gets the average, not the latest). Copied
 * into out while room lasts; the count of processes. */
static unsigned int newer(const struct history *h, uint64_t seen,
                          nvmlProcessUtilizationSample_t *out, unsigned int room)
{
    struct {
        uint32_t pid, k;
        uint64_t ts, sum;
    } e[STANDIN_CARD_SLOTS];
    unsigned int n = 0;
    uint64_t first = h->written > RING ? h->written - RING : 0;
    for (uint64_t i = first; i < h->written; i++) {
        const struct hist_sample *s = &h->ring[i % RING];
        unsigned int j = 0;
        if (s->ts_us <= seen)
            continue;
        while (j < n && e[j].pid != s->pid)
            j++;
        if (j == n && n == STANDIN_CARD_SLOTS)
            continue;
        if (j == n)
            e[n++] = (__typeof__(e[0])){s->pid, 0, 0, 0};
        e[j].k++;
        e[j].sum += s->sm;
        e[j].ts = s->ts_us > e[j].ts ? s->ts_us : e[j].ts;
    }
    for (unsigned int j = 0; out && j < n && j < room; j++)
        out[j] = (nvmlProcessUtilizationSample_t){
            e[j].pid, e[j].ts, (unsigned)((e[j].sum + e[j].k / 2) / e[j].k), 0, 0, 0};
    return n;
}

/* nvml.h: samples with timeStamp > lastSeenTimeStamp; INSUFFICIENT_SIZE with
 * the count needed when utilization is NULL or *processSamplesCount is too
 * small; NOT_FOUND when there is none. */
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount,
                                             unsigned long long lastSeenTimeStamp)
{
    int mig, g = standin_nvml_gpu(device, &mig);
    if (g < 0 || !processSamplesCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (mig)
        return NVML_ERROR_NOT_SUPPORTED;
    struct history *h = g == 0 ? history() : NULL;
    unsigned int room = *processSamplesCount, n = h ? newer(h, lastSeenTimeStamp, NULL, 0) : 0;
    if (n && utilization && room >= n)
        newer(h, lastSeenTimeStamp, utilization, room);
    if (h)
        unlock();
    *processSamplesCount = n;
    if (!n)
        return NVML_ERROR_NOT_FOUND;
    return utilization && room >= n ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
}
