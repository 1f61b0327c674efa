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

static void reset_slot(struct standin_card_slot *s, int pid)
{
    atomic_store(&s->c.busy_ns, 0);
    atomic_store(&s->c.launches, 0);
    atomic_store(&s->mem, 0);
    atomic_store(&s->pid, pid);
}

struct standin_card_slot *standin_card_slot(struct standin_card *c, int pid, int claim)
{
    for (int i = 0; i < STANDIN_CARD_SLOTS; i++)
        if (atomic_load(&c->slots[i].pid) == pid)
            return &c->slots[i];
    for (int i = 0; claim && i < STANDIN_CARD_SLOTS; i++) {
        int32_t p = atomic_load(&c->slots[i].pid);
        if (p == 0 || !host_alive(p)) {
            reset_slot(&c->slots[i], pid);
            return &c->slots[i];
        }
    }
    return NULL;
}

static void count(struct standin_card_counters *k, uint64_t held)
{
    atomic_fetch_add(&k->busy_ns, held);
    atomic_fetch_add(&k->launches, 1);
}

void standin_card_count(struct standin_card *c, int host_pid, uint64_t held_ns)
{
    struct standin_card_slot *s = standin_card_slot(c, host_pid, 1);
    count(&c->all, held_ns);
    if (s)
        count(&s->c, held_ns);
}

/* The counters of pid, pid 0 the whole card; NULL when it has none. */
static struct standin_card_counters *counters_of(struct standin_card *c, int pid)
{
    if (!c)
        return NULL;
    if (pid == 0)
        return &c->all;
    struct standin_card_slot *s = standin_card_slot(c, pid, 0);
    return s ? &s->c : NULL;
}

uint64_t standin_card_busy_ns(struct standin_card *c, int host_pid, uint64_t now_ns)
{
    (void)now_ns; /* launches are synchronous: what is counted has run */
    struct standin_card_counters *k = counters_of(c, host_pid);
    return k ? atomic_load(&k->busy_ns) : 0;
}

uint64_t standin_card_launches(struct standin_card *c, int host_pid)
{
    struct standin_card_counters *k = counters_of(c, host_pid);
    return k ? atomic_load(&k->launches) : 0;
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
