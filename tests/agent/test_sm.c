/*
 * test_sm.c - the enforcement's SM share (src/agent/sm.c) over a scripted
 * NVML: the card sampled every 100 ms, two containers' processes with their
 * smUtil, the driver answering either every sample newer than
 * lastSeenTimeStamp or one mean per process (the two readings drivers
 * give), polled each period. Judged: a 10% container at half the contended
 * card (over, once per episode); not judged: alone on the card, a card
 * with idle time, a 90% neighbour at half, a window not yet full. A
 * hostile driver (smUtil 1000, NaN and unknown value types, counts past the
 * buffer, INSUFFICIENT_SIZE) makes no verdict out of garbage and no read
 * past a buffer; a timestamp from the far future (a clock stepped back)
 * does not blind the judgement.
 */
#include "helpers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "agent/internal.h"

#define PERIOD_US 100000ull
#define T0 1700000000000000ull

/* The scripted driver: the card's rate and each pid's smUtil per period. */
static struct {
    unsigned long long now; /* the newest sample time */
    unsigned card, util[2];
    int mean;    /* one entry per process (their mean) instead of each sample */
    int hostile; /* garbage answers */
    int value_type;
} drv;
static const unsigned pids[2] = {10, 20};

static nvmlReturn_t count(unsigned int *n) { return *n = 1, NVML_SUCCESS; }

static nvmlReturn_t handle(unsigned int i, nvmlDevice_t *d)
{
    (void)i;
    *d = (nvmlDevice_t)&drv;
    return NVML_SUCCESS;
}

static nvmlReturn_t samples(nvmlDevice_t d, int type, unsigned long long seen, int *vt,
                            unsigned int *n, agent_nvml_sample_t *s)
{
    (void)d, (void)type;
    unsigned room = *n, k = 0;
    *vt = drv.value_type;
    for (unsigned long long t = drv.now > 20 * PERIOD_US ? drv.now - 20 * PERIOD_US : 0;
         t <= drv.now && k < room; t += PERIOD_US)
        if (t > seen) {
            s[k].timeStamp = t;
            if (drv.value_type == NVML_VALUE_TYPE_DOUBLE)
                s[k].sampleValue.dVal = drv.hostile ? NAN : drv.card;
            else
                s[k].sampleValue.uiVal = drv.card;
            k++;
        }
    *n = drv.hostile ? 100000 : k; /* a driver claiming more than it wrote */
    return k ? NVML_SUCCESS : NVML_ERROR_NOT_FOUND;
}

static nvmlReturn_t procs(nvmlDevice_t d, agent_nvml_proc_sample_t *u, unsigned int *n,
                          unsigned long long seen)
{
    (void)d;
    unsigned room = *n, k = 0;
    if (drv.hostile == 2)
        return *n = room + 1, NVML_ERROR_INSUFFICIENT_SIZE;
    for (int p = 0; p < 2; p++)
        for (unsigned long long t = drv.now - 4 * PERIOD_US; t <= drv.now && k < room;
             t += PERIOD_US) {
            if (t <= seen || !drv.util[p] || (drv.mean && t != drv.now))
                continue;
            u[k++] = (agent_nvml_proc_sample_t){pids[p], t, drv.hostile ? 1000 : drv.util[p],
                                                0,       0, 0};
        }
    *n = k;
    return k ? NVML_SUCCESS : NVML_ERROR_NOT_FOUND;
}

struct fixture {
    struct agent_nvml n;
    struct agent_watch_opts o;
    struct agent_watch w;
    struct agent__round *r;
};

static void limits(struct agent__pod *p, const char *text)
{
    p->lim.state = AGENT__LIM_OK;
    assert_int_equal(shim_limits_parse(text, strlen(text), &p->lim.lim, NULL), 0);
}

static struct fixture *setup(void)
{
    struct fixture *f = calloc(1, sizeof *f);
    f->n.nvmlDeviceGetCount_v2 = count;
    f->n.nvmlDeviceGetHandleByIndex_v2 = handle;
    f->n.nvmlDeviceGetSamples = samples;
    f->n.nvmlDeviceGetProcessUtilization = procs;
    f->o.sm_window_ms = 1000;
    f->w.o = &f->o;
    f->w.n = &f->n;
    snprintf(f->w.node, sizeof f->w.node, "gpu-node-1");
    pthread_mutex_init(&f->w.lock, NULL);
    assert_int_equal(agent__enforce_new(&f->w.enf, NULL), TS_OK);
    assert_int_equal(agent__sm_new(&f->w.sm, NULL), TS_OK);
    struct agent__round *r = f->r = calloc(1, sizeof *r);
    r->np = r->nc = r->npod = 2;
    for (int i = 0; i < 2; i++) {
        r->p[i] = (struct agent__proc){.pid = pids[i], .gpu = 0, .c = i, .mem_known = 1};
        snprintf(r->c[i].id.pod, sizeof r->c[i].id.pod, "0000000%d-0000-4000-8000-000000000000", i);
        snprintf(r->c[i].id.ctr, sizeof r->c[i].id.ctr, "%s", i ? "bbbb" : "aaaa");
        r->c[i].pod = i;
        r->c[i].nproc = 1;
    }
    limits(&r->pods[0], "version = 1\nsmPercent = 10\ntenant = small\n");
    limits(&r->pods[1], "version = 1\nsmPercent = 90\ntenant = big\n");
    memset(&drv, 0, sizeof drv);
    drv.now = T0;
    drv.value_type = NVML_VALUE_TYPE_UNSIGNED_INT;
    return f;
}

static void teardown(struct fixture *f)
{
    agent__sm_free(f->w.sm);
    agent__enforce_free(f->w.enf);
    pthread_mutex_destroy(&f->w.lock);
    free(f->r);
    free(f);
}

/* periods periods, polled each (every step-th only), a round each 5. */
static void run(struct fixture *f, int periods, int step)
{
    for (int i = 1; i <= periods; i++) {
        drv.now += PERIOD_US;
        if (i % step == 0)
            agent__sm_poll(&f->w);
        if (i % 5 == 0) {
            agent__episodes_begin(&f->w);
            agent__sm_round(&f->w, f->r);
            agent__episodes_end(&f->w, f->r, 0);
        }
    }
}

/* The count of tenant's SM violations on /metrics. */
static int verdicts(struct fixture *f, const char *tenant)
{
    struct ts_sbuf b;
    char want[256];
    ts_sbuf_init(&b, 1 << 20);
    agent__enforce_metrics(&f->w, &b);
    snprintf(want, sizeof want,
             "tessera_agent_violations_total{tenant=\"%s\",workload=\"unknown\",kind=\"sm\","
             "action=\"report\"} ",
             tenant);
    const char *at = strstr(ts_sbuf_str(&b), want);
    int n = at ? atoi(at + strlen(want)) : 0;
    ts_sbuf_release(&b);
    return n;
}

static void test_contended(void **state)
{
    (void)state;
    for (int mean = 0; mean < 2; mean++) {
        struct fixture *f = setup();
        drv.mean = mean;
        drv.card = 100;
        drv.util[0] = drv.util[1] = 50;
        run(f, 5, 1);
        assert_int_equal(verdicts(f, "small"), 0); /* the window not full yet */
        run(f, 30, 1);
        assert_int_equal(verdicts(f, "small"), 1); /* over, once per episode */
        assert_int_equal(verdicts(f, "big"), 0);   /* 50 within 90 + 10 */
        teardown(f);
    }
}

static void test_not_judged(void **state)
{
    (void)state;
    struct fixture *f = setup();
    drv.card = 100; /* alone on the card: nobody else wanted it */
    drv.util[0] = 100;
    run(f, 40, 1);
    assert_int_equal(verdicts(f, "small"), 0);
    teardown(f);
    f = setup();
    drv.card = 80; /* idle time to give: not contended */
    drv.util[0] = 60;
    drv.util[1] = 20;
    run(f, 40, 1);
    assert_int_equal(verdicts(f, "small"), 0);
    teardown(f);
    f = setup();
    drv.card = 100; /* within 10 + 10 */
    drv.util[0] = 18;
    drv.util[1] = 82;
    run(f, 40, 1);
    assert_int_equal(verdicts(f, "small"), 0);
    teardown(f);
}

/* Polls five periods apart (at the rounds only): each sample counts one
 * period when the driver gives each; one mean counts one period for five
 * (in the tenant's favour): 50% of the window becomes 10%, not judged. */
static void test_late_polls(void **state)
{
    (void)state;
    for (int mean = 0; mean < 2; mean++) {
        struct fixture *f = setup();
        drv.mean = mean;
        drv.card = 100;
        drv.util[0] = drv.util[1] = 50;
        run(f, 45, 5);
        assert_int_equal(verdicts(f, "small"), mean ? 0 : 1);
        teardown(f);
    }
}

static void test_hostile(void **state)
{
    (void)state;
    for (int h = 1; h <= 2; h++) {
        struct fixture *f = setup();
        drv.hostile = h;
        drv.value_type = h == 1 ? NVML_VALUE_TYPE_DOUBLE : 99; /* NaN; unknown: 0 */
        drv.card = 100;
        drv.util[0] = drv.util[1] = 50;
        run(f, 40, 1);
        assert_int_equal(verdicts(f, "small"), 0); /* the card never measured busy */
        teardown(f);
    }
    struct fixture *f = setup(); /* a sample from the far future (a clock stepped back) */
    drv.card = 100;
    drv.util[0] = drv.util[1] = 50;
    unsigned long long now = drv.now;
    drv.now = ~0ull - 4 * PERIOD_US;
    agent__sm_poll(&f->w);
    drv.now = now;
    run(f, 40, 1);
    assert_int_equal(verdicts(f, "small"), 1); /* counted again from the next poll */
    teardown(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contended),
        cmocka_unit_test(test_not_judged),
        cmocka_unit_test(test_late_polls),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
