/*
 * card.c - the stand-in GPU's shared card file (card.h): mapping, the lock,
 * process slots and the counters read by the stand-in libcuda's test hooks
 * and the stand-in NVML. Test code, written plainly.
 */
#include "card.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* A synchronisation sleeps until this long before the work's end and
 * spins the rest, as the real driver does under its default
 * CU_CTX_SCHED_AUTO (cuda.h: it spins while the process has fewer active
 * contexts than the machine has cores, which a test's always has): a
 * wake-up from sleep on this VM comes about 67 us late, which would
 * otherwise be added to every measured kernel. */
#define STANDIN_CARD_SPIN_NS 200000ull

static pthread_once_t card_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t card_mutex = PTHREAD_MUTEX_INITIALIZER;
static int card_fd = -1;
static struct standin_card *card;

static void init_card(struct standin_card *c)
{
    if (c->magic == STANDIN_CARD_MAGIC && c->version == STANDIN_CARD_VERSION)
        return;
    memset(c, 0, sizeof(*c));
    c->version = STANDIN_CARD_VERSION;
    c->magic = STANDIN_CARD_MAGIC;
}

static void open_card(void)
{
    const char *path = getenv("TESSERA_STANDIN_GPU");
    if (!path || !*path)
        path = "/tmp/tessera-standin-gpu.lock";
    card_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (card_fd < 0)
        return;
    flock(card_fd, LOCK_EX);
    if (lseek(card_fd, 0, SEEK_END) < (off_t)sizeof(struct standin_card) &&
        ftruncate(card_fd, sizeof(struct standin_card)) != 0) {
        flock(card_fd, LOCK_UN);
        return;
    }
    void *p = mmap(NULL, sizeof(struct standin_card), PROT_READ | PROT_WRITE, MAP_SHARED, card_fd,
                   0);
    if (p != MAP_FAILED) {
        card = p;
        init_card(card);
    }
    flock(card_fd, LOCK_UN);
}

struct standin_card *standin_card_map(void)
{
    pthread_once(&card_once, open_card);
    return card;
}

void standin_card_lock(struct standin_card *c)
{
    (void)c;
    pthread_mutex_lock(&card_mutex);
    while (flock(card_fd, LOCK_EX) != 0 && errno == EINTR)
        ;
}

void standin_card_unlock(struct standin_card *c)
{
    (void)c;
    flock(card_fd, LOCK_UN);
    pthread_mutex_unlock(&card_mutex);
}

int standin_card_host_pid(void)
{
    static int pid, for_pid;
    if (pid && for_pid == getpid())
        return pid;
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = '\0';
    const char *p = strstr(buf, "\nNSpid:");
    for_pid = getpid();
    pid = p ? atoi(p + 8) : 0;
    if (pid <= 0)
        pid = for_pid;
    return pid;
}

/* A host pid's process is alive: seen in /proc (a host pid is not
 * visible to kill() from inside a pid namespace). */
static int host_alive(int pid)
{
    char path[32];
    snprintf(path, sizeof(path), "/proc/%d", pid);
    return access(path, F_OK) == 0;
}

/* Fold s's kernels that ended by now into its busy time and the card's. */
static void fold(struct standin_card *c, struct standin_card_slot *s, uint64_t now)
{
    while (s->n && s->pending[s->head].end <= now) {
        uint64_t d = s->pending[s->head].end - s->pending[s->head].start;
        atomic_fetch_add(&s->c.busy_ns, d);
        atomic_fetch_add(&c->all.busy_ns, d);
        s->head = (s->head + 1) % STANDIN_CARD_PENDING;
        s->n--;
    }
}

/* The part of s's oldest pending kernel that has run by now (the card runs
 * one kernel at a time: after a fold only that one can have started). */
static uint64_t running(const struct standin_card_slot *s, uint64_t now)
{
    if (!s->n || s->pending[s->head].start >= now)
        return 0;
    return now - s->pending[s->head].start;
}

/* A slot that may be taken: free, or its process dead with nothing left
 * on the card (what it had finished is folded first). */
static int reclaimable(struct standin_card *c, struct standin_card_slot *s)
{
    int32_t p = atomic_load(&s->pid);
    if (p == 0)
        return 1;
    if (host_alive(p))
        return 0;
    fold(c, s, standin_card_now_ns());
    return s->n == 0;
}

struct standin_card_slot *standin_card_slot(struct standin_card *c, int pid, int claim)
{
    for (int i = 0; i < STANDIN_CARD_SLOTS; i++)
        if (atomic_load(&c->slots[i].pid) == pid)
            return &c->slots[i];
    for (int i = 0; claim && i < STANDIN_CARD_SLOTS; i++) {
        struct standin_card_slot *s = &c->slots[i];
        if (reclaimable(c, s)) {
            atomic_store(&s->c.busy_ns, 0);
            atomic_store(&s->c.launches, 0);
            atomic_store(&s->mem, 0);
            atomic_store(&s->dry_ns, 0);
            s->last_end = 0;
            s->head = s->n = 0;
            atomic_store(&s->pid, pid);
            return s;
        }
    }
    return NULL;
}

/* Under the lock: s has room for one more kernel, waiting (unlocked) for
 * its oldest to end while it has none. */
static void make_room(struct standin_card *c, struct standin_card_slot *s)
{
    for (;;) {
        fold(c, s, standin_card_now_ns());
        if (s->n < STANDIN_CARD_PENDING)
            return;
        uint64_t t = s->pending[s->head].end;
        standin_card_unlock(c);
        standin_card_wait_until(t);
        standin_card_lock(c);
    }
}

uint64_t standin_card_submit(struct standin_card *c, int host_pid, uint64_t after, uint64_t dur_ns,
                             uint64_t (*stall)(uint64_t))
{
    standin_card_lock(c);
    struct standin_card_slot *s = standin_card_slot(c, host_pid, 1);
    if (!s) {
        standin_card_unlock(c);
        return 0;
    }
    make_room(c, s);
    uint64_t start = standin_card_now_ns();
    if (!s->n && s->last_end && start > s->last_end)
        atomic_fetch_add(&s->dry_ns, start - s->last_end);
    start = start > after ? start : after;
    start = start > c->free_at ? start : c->free_at;
    start = stall ? stall(start) : start;
    uint64_t end = start + dur_ns;
    s->last_end = end;
    s->pending[(s->head + s->n) % STANDIN_CARD_PENDING] = (struct standin_card_seg){start, end};
    s->n++;
    c->free_at = end;
    atomic_fetch_add(&s->c.launches, 1);
    atomic_fetch_add(&c->all.launches, 1);
    standin_card_unlock(c);
    return end;
}

/* Busy time of every process: what the card folded, and the one kernel
 * running now (under the lock). */
static uint64_t card_busy(struct standin_card *c, uint64_t now)
{
    uint64_t run = 0;
    for (int i = 0; i < STANDIN_CARD_SLOTS; i++) {
        struct standin_card_slot *s = &c->slots[i];
        if (atomic_load(&s->pid) == 0 || !s->n)
            continue;
        fold(c, s, now);
        run += running(s, now);
    }
    return atomic_load(&c->all.busy_ns) + run;
}

uint64_t standin_card_busy_ns(struct standin_card *c, int host_pid, uint64_t now_ns)
{
    if (!c)
        return 0;
    standin_card_lock(c);
    uint64_t b = 0;
    struct standin_card_slot *s = host_pid ? standin_card_slot(c, host_pid, 0) : NULL;
    if (!host_pid)
        b = card_busy(c, now_ns);
    else if (s) {
        fold(c, s, now_ns);
        b = atomic_load(&s->c.busy_ns) + running(s, now_ns);
    }
    standin_card_unlock(c);
    return b;
}

uint64_t standin_card_dry_ns(struct standin_card *c, int host_pid)
{
    struct standin_card_slot *s = c && host_pid > 0 ? standin_card_slot(c, host_pid, 0) : NULL;
    return s ? atomic_load(&s->dry_ns) : 0;
}

uint64_t standin_card_launches(struct standin_card *c, int host_pid)
{
    if (!c)
        return 0;
    if (host_pid == 0)
        return atomic_load(&c->all.launches);
    struct standin_card_slot *s = standin_card_slot(c, host_pid, 0);
    return s ? atomic_load(&s->c.launches) : 0;
}

unsigned standin_card_pending(struct standin_card *c, int host_pid, uint64_t now_ns)
{
    if (!c)
        return 0;
    unsigned n = 0;
    standin_card_lock(c);
    for (int i = 0; i < STANDIN_CARD_SLOTS; i++) {
        struct standin_card_slot *s = &c->slots[i];
        int32_t pid = atomic_load(&s->pid);
        if (pid == 0 || (host_pid && pid != host_pid))
            continue;
        fold(c, s, now_ns);
        n += s->n;
    }
    standin_card_unlock(c);
    return n;
}

uint64_t standin_card_mem_bytes(struct standin_card *c, int host_pid)
{
    struct standin_card_slot *s = c && host_pid > 0 ? standin_card_slot(c, host_pid, 0) : NULL;
    return s ? atomic_load(&s->mem) : 0;
}

uint64_t standin_card_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void standin_card_wait_until(uint64_t t)
{
    uint64_t now = standin_card_now_ns();
    if (t > now + STANDIN_CARD_SPIN_NS) {
        uint64_t wake = t - STANDIN_CARD_SPIN_NS;
        struct timespec ts = {(time_t)(wake / 1000000000ull), (long)(wake % 1000000000ull)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    while (standin_card_now_ns() < t)
        ;
}
