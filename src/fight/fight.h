/*
 * fight.h - `tessera fight`, the noisy-neighbour acceptance test: an SLA
 * tenant sends fixed requests at a target rate (open loop) while a noisy
 * tenant keeps the same GPU busy; the harness measures the SLA tenant's
 * latency tail alone (on what each mechanism gives it) and beside the
 * neighbour under each isolation mechanism (plain time-slicing, tessera's
 * shim, MPS, MIG), over interleaved repeats after an A/A control, and says
 * PASS, FAIL or INCONCLUSIVE from the interval of the p99 change.
 *
 * Pieces, one file each:
 *   stats.c   percentiles (type 7), the distribution-free p99 interval, the
 *             interval of the median change over repeats, the verdicts;
 *   judge.c   from pooled runs to each phase's verdict and the run's;
 *   nvml.c    the card's clocks, temperature and power (read only);
 *   latpipe.c the latency pipe every tenant writes (format in docs/fight.md);
 *   mig.c     MIG device UUIDs out of `nvidia-smi -L`;
 *   cuda.c    the driver API through dlopen (src/util/cuda_abi.h);
 *   ptx.c     the embedded PTX kernels (same as kernels.cu);
 *   worker.c  the built-in SLA and noisy workloads (`tessera fight --worker`);
 *   tenant.c  one tenant process: fork/exec, its pipe, its end;
 *   run.c     the two blocks of runs, order, warm-up, pooling;
 *   report.c  text and JSON; plot.c the SVG.
 * Nothing here prints or exits: the CLI (src/cli/cmd_fight.c) does.
 */
#ifndef FIGHT_FIGHT_H
#define FIGHT_FIGHT_H

#include <stddef.h>
#include <stdint.h>
#include "inventory/smi.h" /* INV_SMI_UUID_MAX */
#include "util/error.h"
#include "util/limits.h" /* FIGHT_*_MAX */
#include "util/sbuf.h"

/* ---- statistics (stats.c) ---------------------------------------------- */

#define FIGHT_CI_LEVEL 0.95
/* The warm-up is over when the medians of the last two windows of this
 * many SLA requests differ by at most FIGHT_WARM_STEADY (run.c) ... */
#define FIGHT_WARM_WINDOW 32
#define FIGHT_WARM_STEADY 0.05
/* ... and, where NVML gives the SM clock, it moved at most this much
 * between two such checks. */
#define FIGHT_WARM_CLOCK 0.02

struct fight_summary {
    size_t n;
    double min, mean, max;
    double p50, p99, p999; /* type-7 percentiles, microseconds */
    int ci_ok;             /* 0 when n is too small for a 95% interval */
    double p99_lo, p99_hi; /* 95% distribution-free interval of p99 */
};

/* Refuse a series that statistics cannot use: fewer than 2 values, NaN,
 * infinite or negative values (the error names what and x[index]). */
ts_status fight_check_series(const double *x, size_t n, const char *name, struct ts_error *err);
/* Type-7 (Hyndman-Fan, numpy's default) percentile of sorted[0..n), q in
 * [0,1]: h = (n-1)q, linear between the order statistics around h. */
double fight_percentile(const double *sorted, size_t n, double q);
/* 1-based ranks lo < hi with P(X(lo) <= true q-quantile <= X(hi)) >= conf
 * for any continuous distribution (exact binomial, equal tails). TS_INVALID
 * when n is too small for such ranks. */
ts_status fight_quantile_ranks(size_t n, double q, double conf, size_t *lo, size_t *hi,
                               struct ts_error *err);
/* The fewest samples fight_quantile_ranks can bound q with conf (0 when
 * even FIGHT_REQUESTS_MAX cannot): 368 for the p99 at 95%. */
size_t fight_quantile_min_n(double q, double conf);
/* Sort a copy of x and fill s; errors as fight_check_series. */
ts_status fight_summarise(const double *x, size_t n, const char *name, struct fight_summary *s,
                          struct ts_error *err);
/* PASS (1) when p99 <= base_p99 * (1 + tol), with 1e-9 relative slack for
 * rounding; tol is a fraction (0.10 = 10%). */
int fight_within(double base_p99, double p99, double tol);

/* The p99 change over repeats: repeat i of a phase is paired with repeat i
 * of its baseline (the same round of the interleaved order), and the
 * ratios p99_i / base_i are treated as n draws of one distribution. est is
 * their median; [lo, hi] the distribution-free interval of that median
 * (order statistics, fight_quantile_ranks at q = 0.5), whose exact
 * coverage for any continuous distribution is level (>= conf). */
struct fight_change {
    size_t n;
    int ok;        /* 0: n too small for conf; lo/hi are then min/max */
    double est;    /* median ratio (1.25 = the p99 rose 25%) */
    double lo, hi; /* interval of the median ratio */
    double level;  /* its exact coverage */
};
/* P(lo <= B <= hi-1) for B ~ Binomial(n, q): how often [X(lo), X(hi)]
 * covers the true q-quantile of a continuous distribution. */
double fight_quantile_level(size_t n, double q, size_t lo, size_t hi);
/* Fill c from n paired p99s (1..FIGHT_REPEAT_MAX); TS_INVALID when a
 * baseline is not > 0 or a value is not finite (naming the repeat). */
ts_status fight_change_interval(const double *p99, const double *base, size_t n, double conf,
                                struct fight_change *c, struct ts_error *err);
/* FIGHT_ST_PASS when hi <= 1 + tol, FIGHT_ST_FAIL when lo > 1 + tol (both
 * with 1e-9 relative slack for rounding), FIGHT_ST_INCONCLUSIVE otherwise
 * or when there is no interval. */
int fight_verdict3(const struct fight_change *c, double tol);
/* Rough count of repeats that would decide an INCONCLUSIVE change: the
 * interval's reach toward 1 + tol shrinks as 1/sqrt(n), so n * (reach /
 * gap)^2, at least n + 1; without an interval the fewest repeats that
 * give one. 0 when the estimate sits on the tolerance (none decides it). */
size_t fight_repeats_needed(const struct fight_change *c, double tol, double conf);
/* The A/A control's verdict: PASS when the whole interval lies within
 * [1/(1 + tol), 1 + tol] (identical conditions must not move the p99
 * either way), FAIL when it lies wholly outside, INCONCLUSIVE otherwise;
 * the same 1e-9 slack. */
int fight_verdict_aa(const struct fight_change *c, double tol);

/* ---- the latency pipe (latpipe.c) --------------------------------------- */
/* (FIGHT_LINE_MAX bytes a line, FIGHT_SAMPLES_MAX samples a tenant) */

/* A gap longer than this in a waiting tenant's spin on the clock is the
 * host taking its CPU (another process, the hypervisor): a host stall. */
#define FIGHT_HOST_GAP_US 200

/* One served request as its tenant reported it (NAN: not said): its
 * latency, the kernel's time between events, and the time the host took
 * the CPU from the tenant while it waited to send it (open loop). */
struct fight_sample {
    double lat_us, gpu_us, host_us;
};
/* What one tenant reported over its pipe. */
struct fight_series {
    double *lat_us;  /* latency_us values, in order (malloc'd) */
    double *gpu_us;  /* gpu_us values, NAN where a line had none */
    double *host_us; /* host_us values, NAN where a line had none */
    size_t n, cap;
    size_t errors; /* "error" lines */
    char first_error[128];
    double mem_mib_max; /* largest "mem_mib" value, 0 if none */
};
void fight_series_release(struct fight_series *s);
/* Append one sample; TS_TOO_LARGE past the cap. */
ts_status fight_series_push(struct fight_series *s, const struct fight_sample *v,
                            struct ts_error *err);

/* A line-by-line reader that may be fed any chunks. */
struct fight_reader {
    const char *name; /* for errors, e.g. "sla tenant" */
    struct fight_series *out;
    long line; /* lines completed */
    char buf[FIGHT_LINE_MAX + 1];
    size_t len;
    int too_long, failed;
};
void fight_reader_init(struct fight_reader *r, const char *name, struct fight_series *out);
/* TS_SYNTAX (name:line:column: what) at the first bad line; sticky. */
ts_status fight_reader_feed(struct fight_reader *r, const char *data, size_t n,
                            struct ts_error *err);
/* End of input: a last line without '\n' still counts. */
ts_status fight_reader_finish(struct fight_reader *r, struct ts_error *err);

/* ---- MIG devices (mig.c) ------------------------------------------------ */

/* Bytes of a MIG device UUID with its NUL: what the -L parser keeps. */
#define FIGHT_UUID_MAX INV_SMI_UUID_MAX
/* The MIG device UUIDs in `nvidia-smi -L` text, in order; returns the count
 * (at most FIGHT_MIG_MAX). */
size_t fight_mig_parse(const char *text, char uuids[][FIGHT_UUID_MAX], size_t max);

/* ---- the run (run.c) ---------------------------------------------------- */

/* The neighbour's kinds; idle holds a context and submits nothing (the
 * A/A control's neighbour, and a check that an idle neighbour PASSes). */
enum fight_noisy {
    FIGHT_NOISY_MATMUL,
    FIGHT_NOISY_STREAM,
    FIGHT_NOISY_BURST,
    FIGHT_NOISY_MEMORY,
    FIGHT_NOISY_IDLE,
    FIGHT_NNOISY
};
/* How the SLA tenant's requests arrive: at a fixed interval or a Poisson
 * process of --rate (open loop: latency from the intended send time), or
 * each after the previous one's answer (closed loop). */
enum fight_arrival { FIGHT_ARRIVE_POISSON, FIGHT_ARRIVE_FIXED, FIGHT_ARRIVE_CLOSED };
enum fight_mech { FIGHT_TIMESLICE, FIGHT_SHIM, FIGHT_MPS, FIGHT_MIG, FIGHT_NMECH };

/* "matmul"/"stream"/"burst"/"memory"/"idle" and back; -1 when unknown. */
int fight_noisy_parse(const char *s);
const char *fight_noisy_name(int kind);
/* "poisson"/"fixed"/"closed" and back; -1 when unknown. */
int fight_arrival_parse(const char *s);
const char *fight_arrival_name(int a);
int fight_mech_parse(const char *s);
const char *fight_mech_name(int mech);

struct fight_opts {
    const char *self;                /* the tessera binary, to exec workers */
    const char *driver;              /* "libcuda.so.1" or a path */
    const char *kernels;             /* fatbin/cubin/PTX file, or NULL: embedded PTX */
    const char *shim;                /* libtessera-cuda.so, or NULL: not found */
    const char *sla_cmd, *noisy_cmd; /* user programs (sh -c), or NULL */
    int noisy_kind, synthetic, memory;
    unsigned mechs;     /* bit per enum fight_mech asked for */
    unsigned expect;    /* mechanisms that gate the exit code; 0: default */
    double tolerance;   /* fraction */
    double control_tol; /* the A/A control's, both ways; < 0: tolerance */
    uint64_t seed;
    int repeat;
    size_t requests, warmup;
    int64_t phase_ms;           /* cap on one phase */
    int64_t solo_ms;            /* the noisy tenant alone */
    int sla_share, noisy_share; /* percent of SMs (shim, MPS) */
    double noisy_mem_frac;      /* memory fight: the noisy tenant's limit */
    int arrival;                /* enum fight_arrival */
    double rate;                /* SLA requests per second (open loop) */
    int noisy_depth;            /* the neighbour's operations in flight */
    /* Called with one line of progress after each run (may be NULL). */
    void (*progress)(void *ctx, const char *line);
    void *progress_ctx;
};
void fight_opts_default(struct fight_opts *o);

/* One pooled phase kind. */
struct fight_phase_result {
    const char *name;                   /* "baseline", "timeslice", ... */
    int ran;                            /* runs done */
    int status;                         /* enum below */
    char reason[256];                   /* skipped/error: why */
    struct fight_series sla;            /* pooled samples after the warm-up */
    struct fight_series noisy;          /* errors and mem_mib_max only: no samples */
    struct fight_summary s;             /* of sla (when status >= PASS) */
    double p99_runs[FIGHT_REPEAT_MAX];  /* p99 of each repeat */
    size_t warm_runs[FIGHT_REPEAT_MAX]; /* warm-up requests of each repeat */
    int unsteady;                       /* repeats whose warm-up hit --warmup */
    struct fight_change change;         /* against its baseline (or cost) */
    size_t repeats_needed;              /* INCONCLUSIVE: fight_repeats_needed */
    int nvml_n;                         /* card readings taken (one a run) */
    double sm_mhz_min, sm_mhz_max, temp_c_max, power_w_sum;
    /* The host: of the measured requests that said host_us (host_n), those
     * that waited through a stall of the tenant's CPU (host_stalls) and the
     * time stalled (us); a busy or virtual host shows here, not on the card. */
    size_t host_n, host_stalls;
    double host_stall_us;
    double sla_rps, noisy_ops; /* per second, pooled over runs */
    double sla_secs, noisy_secs;
    double slowdown; /* noisy solo ops/s / noisy ops/s here */
    int sla_killed;  /* the SLA tenant died of a signal */
    int sla_exit;    /* its exit status, last run */
    int gating;
};
/* A phase's status; a mechanism's verdict is PASS, FAIL or INCONCLUSIVE,
 * and the whole run's may also be NOISY (the A/A control did not pass). */
enum {
    FIGHT_ST_SKIPPED,
    FIGHT_ST_ERROR,
    FIGHT_ST_MEASURED,
    FIGHT_ST_PASS,
    FIGHT_ST_FAIL,
    FIGHT_ST_INCONCLUSIVE,
    FIGHT_ST_NOISY
};

/* Phases: the A/A control (the SLA tenant alone, and beside an idle
 * neighbour), run first; the SLA tenant alone on the whole card; the
 * neighbour alone; the SLA tenant alone on what each mechanism gives it
 * (its baseline there); then each mechanism with both tenants. */
enum {
    FIGHT_PH_AABASE,
    FIGHT_PH_AA,
    FIGHT_PH_BASE,
    FIGHT_PH_SOLO,
    FIGHT_PH_SHIMBASE,
    FIGHT_PH_MPSBASE,
    FIGHT_PH_MIGBASE,
    FIGHT_PH_MECH0
};
#define FIGHT_NPHASE (FIGHT_PH_MECH0 + FIGHT_NMECH)

struct fight_result {
    struct fight_opts opt;
    char device[128];
    int synthetic; /* the synthetic timings were used */
    struct fight_phase_result ph[FIGHT_NPHASE];
    char order[FIGHT_NPHASE * FIGHT_REPEAT_MAX][16]; /* phase names in the order run */
    size_t norder;
    int verdict; /* FIGHT_ST_PASS, _FAIL, _INCONCLUSIVE or _NOISY */
    char verdict_why[384];
};

/* Run the whole fight; TS_USAGE/TS_NOT_FOUND when the driver or a needed
 * program is missing, TS_IO/TS_INTERNAL when the harness itself fails. */
ts_status fight_run(const struct fight_opts *o, struct fight_result *r, struct ts_error *err);
void fight_result_release(struct fight_result *r);

/* ---- output (report.c, plot.c) ------------------------------------------ */

void fight_report_text(const struct fight_result *r, struct ts_sbuf *out);
ts_status fight_report_json(const struct fight_result *r, struct ts_sbuf *out,
                            struct ts_error *err);
void fight_plot_svg(const struct fight_result *r, struct ts_sbuf *out);

/* ---- the built-in workloads (worker.c) ---------------------------------- */

struct fight_worker_opts {
    const char *role; /* "sla" or "noisy" */
    const char *driver, *kernels;
    int noisy_kind, synthetic, memory;
    size_t requests; /* sla: warm-up included */
    int fd;          /* where lines go */
    int arrival;     /* sla: enum fight_arrival */
    double rate;     /* sla: requests per second when open loop */
    uint64_t seed;   /* sla: the Poisson arrivals */
    int depth;       /* noisy: operations in flight */
};
/* Run a worker until done (sla) or SIGTERM (noisy). */
ts_status fight_worker(const struct fight_worker_opts *w, struct ts_error *err);

#endif
