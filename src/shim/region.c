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
 *              namespace, the SM tokens of its launches that ran and are
 *              not yet given back (sm.c)
 * The creator sets it up under flock (a dead creator's lock goes with it);
 * a file with another magic, version or size is refused and the shim fails
 * closed. After set-up no lock is taken on the fast path: each process adds
 * to and subtracts from its own slot only, with atomics; a charge adds
 * first, then sums all live slots, and takes its charge back when the sum
 * is over the limit (two racing charges may both fail near the limit, but
 * the sum never stays over). A process killed at any instant leaves only
 * its own slot, whole. Liveness is a lock, not a pid: each owner holds an
 * open file description lock (F_OFD_SETLK) on its slot's byte
 * (SHIM_SLOT_LOCK_BASE + index) for the slot's life. It belongs to the
 * owner's own descriptor, so the tenant opening and closing the file drops
 * nothing (a POSIX record lock would go with any close); processes in other
 * pid namespaces sharing the file see each other alive; an exec drops the
 * old image's lock (the descriptor is close-on-exec) and the new image
 * reclaims that slot at start; a forked child, which inherits the parent's
 * descriptor (and would keep the parent's slot alive, and share its
 * locks), reopens the file at once and claims a slot of its own. Whoever
 * next finds the container over its limit (or asks cuMemGetInfo, or
 * starts) frees the slots whose lock it can take, holding that lock while
 * it clears the slot, so a slot being claimed or still owned is never
 * taken. The pid, start time and namespace stay for inspection and for the
 * private copy below, which judges by pid.
 * The guard: each process keeps what it charged in its own memory too
 * (the slot is its published copy, never below it but for a write from
 * outside the shim), counts its own slot at that figure, and a thread
 * checks every SHIM_GUARD_MS that the region's path still names the file it
 * mapped (else it joins the new file, carrying its charge: removing the
 * file gains nothing once the guard ran, and a process that creates a
 * region waits GRACE_ROUNDS rounds before its first charge so the others
 * can join) and that its slot still holds its pid, namespace and charge
 * (else it writes them back). Each repair counts in the region's tampered
 * counter and is said once on stderr. What stays writable is in
 * docs/shim.md ("What a tenant can still write").
 * When the file cannot be opened, the process accounts in a private copy
 * (the limit then holds per process) and says so on stderr.
 */
#include "shim/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Guard rounds a process that made the region waits before its first
 * charge: long enough for every process of a removed region to join. */
#define GRACE_ROUNDS 3u
#define GUARD_NS (SHIM_GUARD_MS * 1000000ull)

static struct shim_region *_Atomic region;
static struct shim_region private_region;
static struct shim_slot *_Atomic self;
static _Atomic int region_fd = -1; /* kept open (close-on-exec): the slot locks live on it */
static uint64_t my_ns;             /* inode of /proc/self/ns/pid, 0 unknown */
static char region_path[SHIM_REGION_PATH_MAX];
static uint64_t region_limit;
static _Atomic uint64_t my_bytes; /* what this process charged: its slot's truth */
static _Atomic pid_t my_pid;      /* the pid and start time its slot was claimed with */
static _Atomic uint64_t my_start;
static _Atomic int settled;     /* the first charge waited for a young region */
static _Atomic pid_t guard_pid; /* the process whose guard thread runs */

struct shim_region *shim__region(void) { return atomic_load(&region); }

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

/* Take (F_WRLCK) or give back (F_UNLCK) the liveness byte of slot i on fd,
 * an open file description lock: 0, or -1 (held by another description). */
static int slot_lock(int fd, uint32_t i, short type)
{
    struct flock fl;
    memset(&fl, 0, sizeof(fl)); /* l_pid 0: required for OFD locks */
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)(SHIM_SLOT_LOCK_BASE + i);
    fl.l_len = 1;
    return fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : -1;
}

static void slot_clear(struct shim_slot *s)
{
    atomic_store(&s->bytes, 0);
    atomic_store(&s->start, 0);
    atomic_store(&s->ns, 0);
    atomic_store(&s->inflight, 0);
    atomic_store(&s->sm_ran_ns, 0);
}

/* Free slot i when its owner is gone: with a file, when its lock can be
 * taken (held while the slot is cleared, so no claimer or other reclaimer
 * meets it half done); without, by pid. 1 when freed. */
static int reclaim_one(struct shim_region *r, int fd, uint32_t i)
{
    struct shim_slot *s = &r->slots[i];
    int32_t pid = atomic_load(&s->pid);
    if (pid <= 0 || s == atomic_load(&self))
        return 0;
    if (fd >= 0 ? slot_lock(fd, i, F_WRLCK) != 0 : alive_by_pid(s, pid))
        return 0;
    int freed = atomic_compare_exchange_strong(&s->pid, &pid, -1);
    if (freed) {
        slot_clear(s);
        atomic_store(&s->pid, 0);
    }
    if (fd >= 0)
        slot_lock(fd, i, F_UNLCK);
    return freed;
}

/* Free the slots of dead owners; how many were freed. */
static int reclaim_dead(struct shim_region *r, int fd)
{
    int freed = 0;
    uint32_t n = atomic_load(&r->hiwater);
    for (uint32_t i = 0; i < n && i < SHIM_SLOTS; i++)
        freed += reclaim_one(r, fd, i);
    return freed;
}

static void raise_hiwater(struct shim_region *r, uint32_t n)
{
    uint32_t cur = atomic_load(&r->hiwater);
    while (cur < n && !atomic_compare_exchange_weak(&r->hiwater, &cur, n))
        ;
}

/* A free slot of r, locked first (so no reclaimer takes it for dead while
 * it is being claimed), then marked with our pid and holding bytes. */
static struct shim_slot *try_claim(struct shim_region *r, int fd, uint64_t bytes)
{
    pid_t pid = atomic_load(&my_pid);
    for (uint32_t i = 0; i < SHIM_SLOTS; i++) {
        int32_t zero = 0;
        struct shim_slot *s = &r->slots[i];
        if (atomic_load(&s->pid) != 0)
            continue;
        if (fd >= 0 && slot_lock(fd, i, F_WRLCK) != 0)
            continue;
        if (atomic_compare_exchange_strong(&s->pid, &zero, (int32_t)pid)) {
            slot_clear(s);
            atomic_store(&s->start, atomic_load(&my_start));
            atomic_store(&s->ns, my_ns);
            atomic_store(&s->bytes, bytes);
            raise_hiwater(r, i + 1);
            return s;
        }
        if (fd >= 0)
            slot_lock(fd, i, F_UNLCK);
    }
    return NULL;
}

static struct shim_slot *claim_in(struct shim_region *r, int fd, uint64_t bytes)
{
    pid_t pid = getpid();
    char state;
    uint64_t start = 0;
    if (proc_stat(pid, &state, &start) != 0)
        start = 0;
    atomic_store(&my_pid, pid);
    atomic_store(&my_start, start);
    struct shim_slot *s = try_claim(r, fd, bytes);
    if (!s && reclaim_dead(r, fd) > 0)
        s = try_claim(r, fd, bytes);
    if (!s)
        shim__log("accounting region full (%d processes): allocations fail", SHIM_SLOTS);
    return s;
}

static struct shim_slot *claim(void)
{
    return claim_in(atomic_load(&region), atomic_load(&region_fd), 0);
}

/* "/proc/self/fd/N" into buf (no stdio: runs in a forked child). */
static void fd_path(char buf[32], int fd)
{
    char digits[12];
    int n = 0;
    do
        digits[n++] = (char)('0' + fd % 10);
    while ((fd /= 10) > 0);
    memcpy(buf, "/proc/self/fd/", 14);
    for (int i = 0; i < n; i++)
        buf[14 + i] = digits[n - 1 - i];
    buf[14 + n] = '\0';
}

/* A forked child shares the parent's open file description, and with it
 * the parent's slot lock: it would keep a dead parent's slot alive, and
 * its own slot's lock would outlive it in the parent. It reopens the same
 * file (the inherited descriptor's, by /proc/self/fd) onto that descriptor
 * number: the parent's locks stay with the parent's description. */
static void forked_child(void)
{
    atomic_store(&self, NULL);
    atomic_store(&my_bytes, 0);
    int fd = atomic_load(&region_fd);
    if (fd < 0)
        return;
    char path[32];
    fd_path(path, fd);
    int nfd = open(path, O_RDWR | O_CLOEXEC);
    if (nfd >= 0) {
        dup3(nfd, fd, O_CLOEXEC);
        close(nfd);
    }
}

static void header_init(struct shim_region *r, uint64_t limit)
{
    r->version = SHIM_REGION_VERSION;
    r->size = sizeof(*r);
    r->limit = limit;
    r->nslots = SHIM_SLOTS;
    atomic_store(&r->created_ns, shim__now_ns());
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

/* Open (creating) and map the region at path: the mapping and *fd, or
 * NULL (fd closed) when its layout is not ours. */
static struct shim_region *open_file(const char *path, uint64_t limit, int fd)
{
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
        ;
    struct shim_region *r = map_locked(fd, path, limit);
    flock(fd, LOCK_UN); /* explicitly: the slot locks are OFD locks on fd */
    if (!r)
        close(fd);
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

static void *guard_run(void *unused)
{
    (void)unused;
    struct timespec ts = {0, (long)GUARD_NS};
    for (;;) {
        nanosleep(&ts, NULL);
        shim__region_guard();
    }
    return NULL;
}

/* The guard thread of this process (once per process: a forked child
 * starts its own when it claims its slot). */
static void guard_start(void)
{
    pid_t me = getpid();
    if (atomic_load(&region_fd) < 0 || atomic_exchange(&guard_pid, me) == me)
        return;
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &a, guard_run, NULL) != 0)
        shim__log("%s: cannot start the region's guard thread", region_path);
    pthread_attr_destroy(&a);
}

/* At start the slots of dead owners go, our own old one among them when
 * this image replaced one that had the shim (exec drops its lock). */
int shim__region_open(const char *path, uint64_t limit)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    my_ns = pid_ns();
    snprintf(region_path, sizeof(region_path), "%s", path);
    region_limit = limit;
    if (fd < 0) {
        shim__log("%s: cannot open accounting region (%s): limits hold per process", path,
                  strerror(errno));
        header_init(&private_region, limit);
        atomic_store(&region, &private_region);
    } else {
        struct shim_region *r = open_file(path, limit, fd);
        if (!r)
            return -1;
        atomic_store(&region, r);
        atomic_store(&region_fd, fd);
        reclaim_dead(r, fd);
    }
    pthread_atfork(NULL, NULL, forked_child);
    atomic_store(&self, claim());
    guard_start();
    return 0;
}

/* This process's slot; claimed again in a forked child (two threads racing
 * there keep one slot and give the other back). */
static struct shim_slot *self_slot(void)
{
    struct shim_slot *s = atomic_load(&self);
    struct shim_region *r = atomic_load(&region);
    if (s || !r)
        return s;
    struct shim_slot *mine = claim(), *none = NULL;
    if (mine && !atomic_compare_exchange_strong(&self, &none, mine)) {
        uint32_t i = (uint32_t)(mine - r->slots);
        atomic_store(&mine->start, 0);
        atomic_store(&mine->pid, 0);
        if (atomic_load(&region_fd) >= 0)
            slot_lock(atomic_load(&region_fd), i, F_UNLCK);
        return none;
    }
    guard_start();
    return mine;
}

/* Bytes charged to the live slots of r, this process's at what it knows
 * it charged when its slot shows less. */
static uint64_t sum_live(struct shim_region *r)
{
    uint64_t total = 0, mine = atomic_load(&my_bytes);
    const struct shim_slot *me = atomic_load(&self);
    uint32_t n = atomic_load(&r->hiwater);
    for (uint32_t i = 0; i < n && i < SHIM_SLOTS; i++) {
        struct shim_slot *s = &r->slots[i];
        if (atomic_load(&s->pid) <= 0 && s != me)
            continue;
        uint64_t b = atomic_load(&s->bytes);
        b = s == me && b < mine ? mine : b;
        total = total + b < total ? UINT64_MAX : total + b;
    }
    return total;
}

/* A process that made the region (or found it just made) waits until the
 * guards of a removed region's processes have joined it. */
static void settle(struct shim_region *r)
{
    atomic_store(&settled, 1);
    if (r == &private_region)
        return;
    uint64_t made = atomic_load(&r->created_ns), now = shim__now_ns(),
             ready = made + GRACE_ROUNDS * GUARD_NS;
    if (made > now || now >= ready)
        return;
    struct timespec ts = {0, (long)(ready - now)};
    nanosleep(&ts, NULL);
}

/* Subtract up to n from *v, never below 0: what was subtracted. */
static uint64_t take(_Atomic uint64_t *v, uint64_t n)
{
    uint64_t cur = atomic_load(v), t;
    do
        t = cur >= n ? n : cur;
    while (!atomic_compare_exchange_weak(v, &cur, cur - t));
    return t;
}

/* Ordering, so that a slot below my_bytes means a write from outside: a
 * charge adds to the slot first, a credit subtracts from my_bytes first. */
int shim__charge(uint64_t n, uint64_t limit)
{
    struct shim_slot *s = self_slot();
    if (!s || n > limit)
        return -1;
    if (!atomic_load(&settled))
        settle(atomic_load(&region));
    struct shim_region *r = atomic_load(&region);
    atomic_fetch_add(&s->bytes, n);
    atomic_fetch_add(&my_bytes, n);
    if (sum_live(r) <= limit)
        return 0;
    if (reclaim_dead(r, atomic_load(&region_fd)) > 0 && sum_live(r) <= limit)
        return 0;
    take(&s->bytes, take(&my_bytes, n));
    return -1;
}

void shim__credit(uint64_t n)
{
    struct shim_slot *s = self_slot();
    if (!s)
        return;
    take(&s->bytes, take(&my_bytes, n));
}

uint64_t shim__used(void)
{
    struct shim_region *r = atomic_load(&region);
    if (!r)
        return 0;
    reclaim_dead(r, atomic_load(&region_fd));
    return sum_live(r);
}

int shim__region_pids(pid_t *pids, int max)
{
    int n = 0;
    struct shim_region *r = atomic_load(&region);
    uint32_t hw = r ? atomic_load(&r->hiwater) : 0;
    for (uint32_t i = 0; i < hw && i < SHIM_SLOTS && n < max; i++) {
        int32_t pid = atomic_load(&r->slots[i].pid);
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

/* A process without a slot keeps its refunds here. */
static _Atomic uint64_t ran_unslotted;

void shim__region_ran_add(uint64_t ns)
{
    struct shim_slot *s = self_slot();
    atomic_fetch_add(s ? &s->sm_ran_ns : &ran_unslotted, ns);
}

/* Remove the share ppm of *v: what was removed. */
static uint64_t take_share(_Atomic uint64_t *v, uint64_t ppm)
{
    uint64_t cur = atomic_load(v), t;
    do
        t = ppm >= 1000000u ? cur : (uint64_t)((double)cur * (double)ppm / 1e6);
    while (t && !atomic_compare_exchange_weak(v, &cur, cur - t));
    return t;
}

uint64_t shim__region_ran_take(uint64_t ppm)
{
    uint64_t total = take_share(&ran_unslotted, ppm);
    struct shim_region *r = atomic_load(&region);
    uint32_t hw = r ? atomic_load(&r->hiwater) : 0;
    for (uint32_t i = 0; i < hw && i < SHIM_SLOTS; i++)
        if (atomic_load(&r->slots[i].pid) > 0)
            total += take_share(&r->slots[i].sm_ran_ns, ppm);
    return total;
}

/* A sibling's count unchanged this long is stale: its launches are the
 * share's worth at most (smPercent x 50 ms of GPU time), which run within
 * 50 ms of wall time at the share; it stopped launching and has not
 * synchronised since, so nothing reaped them. */
#define INFLIGHT_STALE_NS 100000000ull

uint64_t shim__region_inflight(void)
{
    uint64_t total = 0, now = shim__now_ns();
    struct shim_region *r = atomic_load(&region);
    uint32_t hw = r ? atomic_load(&r->hiwater) : 0;
    const struct shim_slot *mine = self_slot();
    for (uint32_t i = 0; i < hw && i < SHIM_SLOTS; i++) {
        const struct shim_slot *s = &r->slots[i];
        if (atomic_load(&s->pid) <= 0)
            continue;
        /* signed: a sibling may have stamped its count after now was read */
        if (s != mine && (int64_t)(now - atomic_load(&s->inflight_at)) > (int64_t)INFLIGHT_STALE_NS)
            continue;
        total += atomic_load(&s->inflight);
    }
    return total;
}

/* ---- the guard ---------------------------------------------------------- */

/* Device and inode of path (follow links), or of fd with path NULL: 0, or
 * -1. statx by system call: no stat symbol (glibc_compat.h). */
static int file_id(const char *path, int fd, uint64_t id[2])
{
    struct statx sx;
    memset(&sx, 0, sizeof(sx));
    long rc = path ? syscall(SYS_statx, AT_FDCWD, path, 0, STATX_INO, &sx)
                   : syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_INO, &sx);
    if (rc != 0)
        return -1;
    id[0] = ((uint64_t)sx.stx_dev_major << 32) | sx.stx_dev_minor;
    id[1] = sx.stx_ino;
    return 0;
}

/* The region's path no longer names the file this process mapped (removed,
 * or replaced by another). */
static int replaced(int fd)
{
    uint64_t mine[2], now[2];
    if (file_id(NULL, fd, mine) != 0)
        return 0; /* cannot tell */
    return file_id(region_path, -1, now) != 0 || mine[0] != now[0] || mine[1] != now[1];
}

/* Join the file the path now names (creating it when it is gone), with a
 * slot holding what this process charged; the old file's descriptor is
 * replaced (its lock goes), its mapping kept (other threads may be in it).
 * 1 when joined. */
static int rejoin(int old)
{
    int fd = open(region_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    struct shim_region *r = fd >= 0 ? open_file(region_path, region_limit, fd) : NULL;
    if (!r)
        return 0;
    struct shim_slot *s = claim_in(r, fd, atomic_load(&my_bytes));
    if (!s) {
        munmap(r, sizeof(*r));
        close(fd);
        return 0;
    }
    dup3(fd, old, O_CLOEXEC);
    close(fd);
    atomic_store(&region, r);
    atomic_store(&self, s);
    return 1;
}

/* This process's charge (*mine) and its slot's (*slot) at one moment: the
 * slot is never below my_bytes (shim__charge and shim__credit order their
 * two writes so), but a charge or credit between two loads can make it
 * look so (a credit between them: the table of 300,000 allocations, once,
 * under ASan). my_bytes read before and after the slot and unchanged is a
 * consistent pair; 0 when other threads kept changing it (not judged now). */
static int bytes_snapshot(struct shim_slot *s, uint64_t *mine, uint64_t *slot)
{
    for (int tries = 0; tries < 8; tries++) {
        *mine = atomic_load(&my_bytes);
        *slot = atomic_load(&s->bytes);
        if (atomic_load(&my_bytes) == *mine)
            return 1;
    }
    return 0;
}

/* Write back what the slot must hold: 1 when something was not. */
static int restore_self(void)
{
    struct shim_slot *s = atomic_load(&self);
    if (!s || atomic_load(&region) == &private_region)
        return 0;
    int fixed = 0;
    int32_t pid = atomic_load(&s->pid), want_pid = (int32_t)atomic_load(&my_pid);
    if (pid != want_pid && atomic_compare_exchange_strong(&s->pid, &pid, want_pid))
        fixed = 1;
    if (atomic_load(&s->ns) != my_ns) {
        atomic_store(&s->ns, my_ns);
        fixed = 1;
    }
    if (atomic_load(&s->start) != atomic_load(&my_start)) {
        atomic_store(&s->start, atomic_load(&my_start));
        fixed = 1;
    }
    uint64_t want, have;
    if (bytes_snapshot(s, &want, &have) && have < want &&
        atomic_compare_exchange_strong(&s->bytes, &have, want))
        fixed = 1;
    return fixed;
}

int shim__region_guard(void)
{
    int fd = atomic_load(&region_fd), n = 0;
    if (fd >= 0 && atomic_load(&self) && replaced(fd))
        n += rejoin(fd);
    n += restore_self();
    if (!n)
        return 0;
    atomic_fetch_add(&atomic_load(&region)->tampered, (uint64_t)n);
    static _Atomic int said;
    if (!atomic_exchange(&said, 1))
        shim__log("%s: the accounting region was written by something other than the shim "
                  "(removed, replaced, or this process's slot changed): repaired; the node "
                  "agent compares the driver's figures with the limits",
                  region_path);
    return n;
}
