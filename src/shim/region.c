/*
 * region.c - the container's accounting region: one memory-mapped file that
 * every process of the container maps (path from the limit file), so the
 * limit holds for the container, not the process.
 *
 * Layout (struct shim_region in shim.h; all fields native-endian):
 *   offset 0   magic "TSCU"  version 4  size (bytes of the struct)
 *          16  limit (the creator's memoryLimit, for inspection)
 *          24  nslots (1024)  hiwater (slots ever used)
 *          32  the SM limiter's bucket (struct shim_sm_state)
 *          ..  slots[1024]: pid, launches in flight (inflight.c) and when
 *              that count last changed, start time, bytes charged, pid
 *              namespace
 * The creator sets it up under flock (a dead creator's lock goes with it);
 * a file with another magic, version or size is refused and the shim fails
 * closed. After set-up no lock is taken on the fast path: each process adds
 * to and subtracts from its own slot only, with atomics; a charge adds
 * first, then sums all live slots, and takes its charge back when the sum
 * is over the limit (two racing charges may both fail near the limit, but
 * the sum never stays over). A process killed at any instant leaves only
 * its own slot, whole. Liveness is a lock, not a pid: each owner holds an
 * fcntl write lock on its slot's byte (SHIM_SLOT_LOCK_BASE + index) for the
 * slot's life, so processes in other pid namespaces sharing the file (two
 * containers of a pod on an emptyDir) see each other alive, an exec drops
 * the old image's lock (the descriptor is close-on-exec) and the new image
 * reclaims that slot at start, and a forked child, which does not inherit
 * the lock, claims its own slot. Whoever next finds the container over its
 * limit (or asks cuMemGetInfo, or starts) frees the slots whose lock is
 * free. A slot is locked before it is marked claimed, so a reclaimer never
 * takes a slot being claimed. The pid, start time and namespace stay for
 * inspection and for the private copy below, which judges by pid.
 * When the file cannot be opened, the process accounts in a private copy
 * (the limit then holds per process) and says so on stderr.
 * Caveat of fcntl locks: a process that closes any descriptor of the region
 * file drops its locks; the application has no reason to open it.
 */
#include "shim/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static struct shim_region *region;
static struct shim_region private_region;
static struct shim_slot *_Atomic self;
static int region_fd = -1; /* kept open (close-on-exec): the slot locks live on it */
static uint64_t my_ns;     /* inode of /proc/self/ns/pid, 0 unknown */

struct shim_region *shim__region(void) { return region; }

/* Field 3 (state) and 22 (start time) of /proc/<pid>/stat: 0, or -1. */
static int proc_stat(pid_t pid, char *state, uint64_t *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ')
        return -1;
    *state = p[2];
    p += 2;
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p, ' ');
        p = p ? p + 1 : NULL;
    }
    *start = 0;
    for (; p && *p >= '0' && *p <= '9'; p++)
        *start = *start * 10 + (uint64_t)(*p - '0');
    return 0;
}

/* Pid-based liveness, when the region has no file to lock: the owner's
 * pid answers and has the start time it had (a slot of another pid
 * namespace cannot be judged by pid: kept). */
static int alive_by_pid(const struct shim_slot *s, pid_t pid)
{
    uint64_t start = atomic_load(&s->start), ns = atomic_load(&s->ns);
    if (ns && my_ns && ns != my_ns)
        return 1;
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 0;
    char state = '?';
    uint64_t now = 0;
    if (proc_stat(pid, &state, &now) != 0)
        return 1; /* cannot tell (no /proc): keep it */
    return state != 'Z' && state != 'X' && (start == 0 || now == start);
}

/* Set (F_SETLK with F_WRLCK or F_UNLCK) or test (F_GETLK) the liveness
 * byte of slot i: 0 / 1 "another process holds it", -1 on error. */
static int slot_lock(uint32_t i, int cmd, short type)
{
    struct flock fl;
    memset(&fl, 0, sizeof(fl));
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)(SHIM_SLOT_LOCK_BASE + i);
    fl.l_len = 1;
    if (fcntl(region_fd, cmd, &fl) != 0)
        return -1;
    return cmd == F_GETLK ? fl.l_type != F_UNLCK : 0;
}

/* Is the owner of slot i still the process that claimed it? Its lock says,
 * in any namespace and across exec; without a file, its pid. */
static int alive(uint32_t i, pid_t pid)
{
    int held = region_fd >= 0 ? slot_lock(i, F_GETLK, F_WRLCK) : -1;
    return held >= 0 ? held : alive_by_pid(&region->slots[i], pid);
}

/* Free the slots of dead owners; how many were freed. */
static int reclaim_dead(void)
{
    int freed = 0;
    uint32_t n = atomic_load(&region->hiwater);
    for (uint32_t i = 0; i < n && i < SHIM_SLOTS; i++) {
        struct shim_slot *s = &region->slots[i];
        int32_t pid = atomic_load(&s->pid);
        if (pid <= 0 || s == self || alive(i, pid))
            continue;
        if (!atomic_compare_exchange_strong(&s->pid, &pid, -1))
            continue;
        atomic_store(&s->bytes, 0);
        atomic_store(&s->start, 0);
        atomic_store(&s->ns, 0);
        atomic_store(&s->inflight, 0);
        atomic_store(&s->pid, 0);
        freed++;
    }
    return freed;
}

static void raise_hiwater(uint32_t n)
{
    uint32_t cur = atomic_load(&region->hiwater);
    while (cur < n && !atomic_compare_exchange_weak(&region->hiwater, &cur, n))
        ;
}

/* A free slot, locked first (so no reclaimer takes it for dead while it
 * is being claimed), then marked with our pid. */
static struct shim_slot *try_claim(pid_t pid, uint64_t start)
{
    for (uint32_t i = 0; i < SHIM_SLOTS; i++) {
        int32_t zero = 0;
        struct shim_slot *s = &region->slots[i];
        if (atomic_load(&s->pid) != 0)
            continue;
        if (region_fd >= 0 && slot_lock(i, F_SETLK, F_WRLCK) != 0)
            continue;
        if (atomic_compare_exchange_strong(&s->pid, &zero, (int32_t)pid)) {
            atomic_store(&s->start, start);
            atomic_store(&s->ns, my_ns);
            atomic_store(&s->inflight, 0);
            raise_hiwater(i + 1);
            return s;
        }
        if (region_fd >= 0)
            slot_lock(i, F_SETLK, F_UNLCK);
    }
    return NULL;
}

static struct shim_slot *claim(void)
{
    pid_t pid = getpid();
    char state;
    uint64_t start = 0;
    if (proc_stat(pid, &state, &start) != 0)
        start = 0;
    struct shim_slot *s = try_claim(pid, start);
    if (!s && reclaim_dead() > 0)
        s = try_claim(pid, start);
    if (!s)
        shim__log("accounting region full (%d processes): allocations fail", SHIM_SLOTS);
    return s;
}

static void forked_child(void) { atomic_store(&self, NULL); }

static void header_init(struct shim_region *r, uint64_t limit)
{
    r->version = SHIM_REGION_VERSION;
    r->size = sizeof(*r);
    r->limit = limit;
    r->nslots = SHIM_SLOTS;
    __atomic_store_n(&r->magic, SHIM_REGION_MAGIC, __ATOMIC_RELEASE);
}

/* Map the file at fd (locked by the caller); NULL when its layout is not
 * ours. */
static struct shim_region *map_locked(int fd, const char *path, uint64_t limit)
{
    off_t size = lseek(fd, 0, SEEK_END); /* not fstat: glibc_compat.h */
    if (size < 0)
        return NULL;
    if (size == 0 && ftruncate(fd, (off_t)sizeof(struct shim_region)) == 0)
        (void)fchmod(fd, 0666);
    else if (size != (off_t)sizeof(struct shim_region)) {
        shim__log("%s: %lld bytes, not an accounting region of version %u (%zu bytes)", path,
                  (long long)size, SHIM_REGION_VERSION, sizeof(struct shim_region));
        return NULL;
    }
    struct shim_region *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (r == MAP_FAILED)
        return NULL;
    if (r->magic == 0)
        header_init(r, limit);
    if (r->magic != SHIM_REGION_MAGIC || r->version != SHIM_REGION_VERSION ||
        r->size != sizeof(*r) || r->nslots != SHIM_SLOTS) {
        shim__log("%s: unknown region layout (magic %08x, version %u)", path, r->magic, r->version);
        munmap(r, sizeof(*r));
        return NULL;
    }
    return r;
}

/* The inode of our pid namespace, from the link's text "pid:[INODE]" (not
 * stat: glibc_compat.h); 0 when unknown. */
static uint64_t pid_ns(void)
{
    char link[64];
    ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link));
    uint64_t ino = 0;
    if (n < 7 || memcmp(link, "pid:[", 5) != 0 || link[n - 1] != ']')
        return 0;
    for (ssize_t i = 5; i < n - 1; i++) {
        if (link[i] < '0' || link[i] > '9' || ino > UINT64_MAX / 10)
            return 0;
        ino = ino * 10 + (uint64_t)(link[i] - '0');
    }
    return ino;
}

/* At start the slots of dead owners go, our own old one among them when
 * this image replaced one that had the shim (exec drops its lock). */
int shim__region_open(const char *path, uint64_t limit)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    my_ns = pid_ns();
    if (fd < 0) {
        shim__log("%s: cannot open accounting region (%s): limits hold per process", path,
                  strerror(errno));
        header_init(&private_region, limit);
        region = &private_region;
    } else {
        while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
            ;
        region = map_locked(fd, path, limit);
        flock(fd, LOCK_UN); /* explicitly: the slot locks are fcntl locks on fd */
        if (!region) {
            close(fd);
            return -1;
        }
        region_fd = fd;
        reclaim_dead();
    }
    pthread_atfork(NULL, NULL, forked_child);
    atomic_store(&self, claim());
    return 0;
}

/* This process's slot; claimed again in a forked child (two threads racing
 * there keep one slot and give the other back). */
static struct shim_slot *self_slot(void)
{
    struct shim_slot *s = atomic_load(&self);
    if (s || !region)
        return s;
    struct shim_slot *mine = claim(), *none = NULL;
    if (mine && !atomic_compare_exchange_strong(&self, &none, mine)) {
        uint32_t i = (uint32_t)(mine - region->slots);
        atomic_store(&mine->start, 0);
        atomic_store(&mine->pid, 0);
        if (region_fd >= 0)
            slot_lock(i, F_SETLK, F_UNLCK);
        return none;
    }
    return mine;
}

static uint64_t sum_live(void)
{
    uint64_t total = 0;
    uint32_t n = atomic_load(&region->hiwater);
    for (uint32_t i = 0; i < n && i < SHIM_SLOTS; i++) {
        struct shim_slot *s = &region->slots[i];
        if (atomic_load(&s->pid) <= 0)
            continue;
        uint64_t b = atomic_load(&s->bytes);
        total = total + b < total ? UINT64_MAX : total + b;
    }
    return total;
}

int shim__charge(uint64_t n, uint64_t limit)
{
    struct shim_slot *s = self_slot();
    if (!s || n > limit)
        return -1;
    atomic_fetch_add(&s->bytes, n);
    if (sum_live() <= limit)
        return 0;
    if (reclaim_dead() > 0 && sum_live() <= limit)
        return 0;
    atomic_fetch_sub(&s->bytes, n);
    return -1;
}

void shim__credit(uint64_t n)
{
    struct shim_slot *s = self_slot();
    if (!s)
        return;
    uint64_t cur = atomic_load(&s->bytes);
    while (!atomic_compare_exchange_weak(&s->bytes, &cur, cur >= n ? cur - n : 0))
        ;
}

uint64_t shim__used(void)
{
    if (!region)
        return 0;
    reclaim_dead();
    return sum_live();
}

int shim__region_pids(pid_t *pids, int max)
{
    int n = 0;
    uint32_t hw = region ? atomic_load(&region->hiwater) : 0;
    for (uint32_t i = 0; i < hw && i < SHIM_SLOTS && n < max; i++) {
        int32_t pid = atomic_load(&region->slots[i].pid);
        if (pid > 0)
            pids[n++] = pid;
    }
    return n;
}

void shim__region_inflight_add(int delta)
{
    struct shim_slot *s = self_slot();
    if (!s)
        return;
    atomic_fetch_add(&s->inflight, (uint32_t)delta);
    atomic_store(&s->inflight_at, shim__now_ns());
}

/* A sibling's count unchanged this long is stale: its launches are the
 * share's worth at most (smPercent x 50 ms of GPU time), which run within
 * 50 ms of wall time at the share; it stopped launching and has not
 * synchronised since, so nothing reaped them. */
#define INFLIGHT_STALE_NS 100000000ull

uint64_t shim__region_inflight(void)
{
    uint64_t total = 0, now = shim__now_ns();
    uint32_t hw = region ? atomic_load(&region->hiwater) : 0;
    const struct shim_slot *mine = self_slot();
    for (uint32_t i = 0; i < hw && i < SHIM_SLOTS; i++) {
        const struct shim_slot *s = &region->slots[i];
        if (atomic_load(&s->pid) <= 0)
            continue;
        /* signed: a sibling may have stamped its count after now was read */
        if (s != mine && (int64_t)(now - atomic_load(&s->inflight_at)) > (int64_t)INFLIGHT_STALE_NS)
            continue;
        total += atomic_load(&s->inflight);
    }
    return total;
}
