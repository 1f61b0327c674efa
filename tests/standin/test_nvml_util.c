/*
 * test_nvml_util.c - the stand-in NVML's utilisation answers
 * (tests/standin/nvml/nvml_util.c), which the shim's SM share and any real
 * NVML user depend on: nvmlDeviceGetProcessUtilization's NOT_FOUND with no
 * sample newer than lastSeenTimeStamp, INSUFFICIENT_SIZE with the count
 * needed for a NULL or short buffer, only samples newer than lastSeen,
 * one entry per process (the mean of its samples since lastSeen),
 * timeStamps on the sample period (CPU time, microseconds), smUtil the
 * percent of the period a process's kernels ran, by host pid; the card's
 * rate, and nvmlDeviceGetSamples's card samples, one every period; NOT_SUPPORTED
 * on a GPU in MIG mode. Kernels are placed straight
 * on the card's timeline (card.c, compiled in), so each period's busy time
 * is known; the library is loaded with dlopen as the shim loads it.
 */
#include "helpers.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "standin/card.c"

#define PERIOD_US 200000ull
#define PID_B 4000001 /* a second "process": only its counters exist */

typedef struct {
    unsigned int gpu, memory;
} util_t;
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil, memUtil, encUtil, decUtil;
} sample_t;
typedef void *dev_t_;

static int (*get_util)(dev_t_, util_t *);
static int (*get_proc)(dev_t_, sample_t *, unsigned int *, unsigned long long);
typedef struct {
    unsigned long long timeStamp, value;
} card_sample_t;
static int (*get_samples)(dev_t_, int, unsigned long long, int *, unsigned int *, card_sample_t *);
static dev_t_ gpu0, gpu1;
static char dir[] = "/tmp/test_nvml_util.XXXXXX";

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_until_us(uint64_t t)
{
    uint64_t n = now_us();
    if (t > n)
        usleep((useconds_t)(t - n));
}

/* The stand-in with a two-GPU state (GPU 1 in MIG mode) and a fresh card. */
static int setup(void **state)
{
    (void)state;
    char path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/node.state", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "gpu;uuid=GPU-0;name=NVIDIA H100 80GB HBM3;pci=00000000:1B:00.0;memory_mib=81559;"
               "mig=0;pending=0;compute_mode=0\n"
               "gpu;uuid=GPU-1;name=NVIDIA H100 80GB HBM3;pci=00000000:43:00.0;memory_mib=81559;"
               "mig=1;pending=1;compute_mode=0\n");
    fclose(f);
    setenv("TESSERA_STANDIN_NVML", path, 1);
    snprintf(path, sizeof path, "%s/gpu.lock", dir);
    setenv("TESSERA_STANDIN_GPU", path, 1);
    setenv("TESSERA_STANDIN_NVML_SAMPLE_MS", "200", 1);
    void *h = dlopen(STANDIN_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
    int (*get)(unsigned,
               dev_t_ *) = (int (*)(unsigned, dev_t_ *))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    get_util = (int (*)(dev_t_, util_t *))dlsym(h, "nvmlDeviceGetUtilizationRates");
    get_proc = (int (*)(dev_t_, sample_t *, unsigned int *, unsigned long long))dlsym(
        h, "nvmlDeviceGetProcessUtilization");
    get_samples = (int (*)(dev_t_, int, unsigned long long, int *, unsigned int *,
                           card_sample_t *))dlsym(h, "nvmlDeviceGetSamples");
    assert_true(init && get && get_util && get_proc && get_samples);
    assert_int_equal(init(), 0);
    assert_int_equal(get(0, &gpu0), 0);
    assert_int_equal(get(1, &gpu1), 0);
    assert_non_null(standin_card_map());
    return 0;
}

/* A kernel of pid running ns on the card's timeline (after what is queued). */
static void add_busy(int pid, uint64_t ns)
{
    assert_true(standin_card_submit(standin_card_map(), pid, 0, ns, NULL) != 0);
}

/* Right after a sample time t0 (written by the call), kernels of two
 * processes are placed: 50% and 10% of the period, one after the other.
 * Returns the sample time they belong to, t0 + PERIOD_US, once it has
 * passed; 0 when this process was held too long (a loaded machine: the
 * caller tries again). */
static uint64_t busy_period(void)
{
    unsigned int n = 0;
    uint64_t t0 = (now_us() / PERIOD_US + 1) * PERIOD_US;
    sleep_until_us(t0 + 5000);
    get_proc(gpu0, NULL, &n, 0); /* writes t0's sample */
    add_busy(standin_card_host_pid(), PERIOD_US * 1000 / 2);
    add_busy(PID_B, PERIOD_US * 1000 / 10);
    if (now_us() >= t0 + PERIOD_US / 4) /* the kernels end by t0 + 0.85 period */
        return 0;
    sleep_until_us(t0 + PERIOD_US + 5000);
    return t0 + PERIOD_US;
}

static void test_fresh_has_no_samples(void **state)
{
    (void)state;
    unsigned int n = 8;
    sample_t s[8];
    assert_int_equal(get_proc(gpu0, s, &n, 0), 6); /* NVML_ERROR_NOT_FOUND */
    assert_int_equal(n, 0);
}

static void test_samples(void **state)
{
    (void)state;
    uint64_t t1 = 0;
    for (int i = 0; i < 5 && !t1; i++)
        t1 = busy_period();
    assert_true(t1);
    sample_t s[8];
    unsigned int n = 8, mine = 0, other = 0;
    assert_int_equal(get_proc(gpu0, s, &n, t1 - 1), 0);
    assert_int_equal(n, 2);
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(s[i].timeStamp, t1);
        assert_int_equal(s[i].timeStamp % PERIOD_US, 0);
        if (s[i].pid == (unsigned)standin_card_host_pid())
            mine = s[i].smUtil;
        else if (s[i].pid == PID_B)
            other = s[i].smUtil;
    }
    /* over the period as read: 100 and 20 ms of kernels in the time between
     * the two reads, 200 ms when neither is late; a loaded machine reads
     * t0's sample up to a quarter period late (busy_period's limit) and
     * t1's late too (CI: t1 read 10 ms late, 57% for 60%), so the span is
     * 150-250 ms: the shares are 40-67% and 8-14%, 5 to 1, and the card's
     * rate over the same span is their sum */
    assert_in_range(mine, 40, 67);
    assert_in_range(other, 8, 14);
    assert_in_range(mine, 5 * other - 5, 5 * other + 5);
    util_t u;
    assert_int_equal(get_util(gpu0, &u), 0);
    assert_in_range(u.gpu, mine + other - 1, mine + other + 1);

    /* only samples newer than lastSeenTimeStamp */
    n = 8;
    assert_int_equal(get_proc(gpu0, s, &n, t1), 6);
    assert_int_equal(n, 0);
    /* the count needed: NULL buffer, or one too short */
    n = 0;
    assert_int_equal(get_proc(gpu0, NULL, &n, t1 - 1), 7); /* INSUFFICIENT_SIZE */
    assert_int_equal(n, 2);
    n = 1;
    assert_int_equal(get_proc(gpu0, s, &n, t1 - 1), 7);
    assert_int_equal(n, 2);
    /* everything kept, one entry per process: its newest sample, the mean
     * of its samples (the earlier periods were idle: no sample) */
    n = 8;
    assert_int_equal(get_proc(gpu0, s, &n, 0), 0);
    assert_int_equal(n, 2);
    assert_true(s[0].pid != s[1].pid);
    assert_int_equal(s[0].timeStamp, t1);
    assert_int_equal(s[1].timeStamp, t1);

    /* the card's samples: one every period, idle ones too */
    card_sample_t c[64];
    int type = -1;
    n = 64;
    assert_int_equal(get_samples(gpu0, 1, t1 - 1, &type, &n, c), 0);
    assert_int_equal(type, 1); /* NVML_VALUE_TYPE_UNSIGNED_INT */
    assert_int_equal(n, 1);
    assert_int_equal(c[0].timeStamp, t1);
    assert_in_range((unsigned)c[0].value, mine + other - 1, mine + other + 1);
    n = 64;
    assert_int_equal(get_samples(gpu0, 1, 0, &type, &n, c), 0);
    assert_true(n >= 3);
    for (unsigned i = 1; i < n; i++)
        assert_int_equal(c[i].timeStamp - c[i - 1].timeStamp, PERIOD_US);
    n = 64;
    assert_int_equal(get_samples(gpu0, 1, t1, &type, &n, c), 6);
    assert_int_equal(get_samples(gpu0, 0, 0, &type, &n, c), 3); /* power: NOT_SUPPORTED */
}

static void test_bad_calls(void **state)
{
    (void)state;
    unsigned int n = 8;
    sample_t s[8];
    assert_int_equal(get_proc(gpu1, s, &n, 0), 3); /* MIG mode: NOT_SUPPORTED */
    assert_int_equal(get_proc(gpu0, s, NULL, 0), 2);
    assert_int_equal(get_proc(NULL, s, &n, 0), 2);
    assert_int_equal(get_util(gpu0, NULL), 2);
}

static int teardown(void **state)
{
    (void)state;
    const char *names[] = {"node.state", "gpu.lock", "gpu.lock.nvml"};
    char path[128];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_has_no_samples),
        cmocka_unit_test(test_samples),
        cmocka_unit_test(test_bad_calls),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
