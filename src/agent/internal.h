/*
 * internal.h - what the agent's files share and nobody else uses: the
 * loaded NVML function table and the error formatter for NVML calls.
 */
#ifndef AGENT_INTERNAL_H
#define AGENT_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include "agent/agent.h"
#include "agent/nvml_abi.h"
#include "util/jsonread.h"
/* The limit file's parser, the shim's own (compiled in: limitfile.c). */
#include "../shim/limits.h"

struct agent_nvml {
    void *lib;
#define AGENT__PTR(ret, name, params) ret(*name) params;
    AGENT_NVML_FUNCS(AGENT__PTR)
#undef AGENT__PTR
#define AGENT__OPT(ret, name, params, lost) ret(*name) params;
    AGENT_NVML_OPTIONAL(AGENT__OPT)
#undef AGENT__OPT
    char unchecked[512]; /* what the optional functions missing leave unchecked */
};

/* "CALL on GPU n: <nvmlErrorString> (NVML error r)"; gpu < 0: no card. */
ts_status agent__nvml_err(const struct agent_nvml *n, nvmlReturn_t r, const char *call, int gpu,
                          struct ts_error *err);

/* Read GPU i (its NVML index) into *g: what agent_inventory_read reads for
 * each card, for one card only. */
ts_status agent__gpu_read(struct agent_nvml *n, unsigned int i, struct inv_gpu *g,
                          struct ts_error *err);

/* Before a card's change (check.c): every created instance at a placement
 * the card lists, the target geometry without overlaps. TS_INVALID naming
 * the GPU, profile and placements. */
ts_status agent__check_change(const struct inv_gpu *g, const struct reconf_diff *d,
                              struct ts_error *err);
/* Destroy GPU instance id (of profile_id) of card gpu with its compute
 * instances (apply.c). */
ts_status agent__destroy_gi(struct agent_nvml *n, nvmlDevice_t d, int gpu, int profile_id, int id,
                            struct ts_error *err);

/* journal.c: before a card's first change, what it holds and the steps
 * (written atomically); after it, removed. */
ts_status agent__journal_begin(const char *path, const struct inv_gpu *before,
                               const struct reconf_diff *d, struct ts_error *err);
void agent__journal_end(const char *path);

/* busy.c: the processes on the GPU instances the change d of card g
 * destroys (a process NVML places on no instance holds the whole card).
 * Returns how many instances are busy (then the refusal, naming each
 * process, goes to log), 0 when none, -1 when the processes cannot be
 * listed (err and log say why). */
int agent__busy(struct agent_nvml *n, nvmlDevice_t d, const struct inv_gpu *g,
                const struct reconf_diff *diff, struct ts_sbuf *log, struct ts_error *err);

/* 1 (with why) when the card's MIG mode has a change pending, else 0. */
int agent__mode_pending(const struct inv_gpu *g, char *why, size_t cap);

/* ---- the enforcement: cgroup.c, kubelet.c, enforce.c, act.c -------------- */

#define AGENT_POD_UID_MAX 37 /* a UUID and its NUL */
#define AGENT_CTR_ID_MAX 65  /* 64 hex digits and the NUL */

/* A Kubernetes container: its pod's UID and the runtime's container ID. */
struct agent__ctr_id {
    char pod[AGENT_POD_UID_MAX];
    char ctr[AGENT_CTR_ID_MAX];
};

/* /proc/PID/cgroup text: 1 and *out when it names a pod's container, 0
 * when no pod, -1 when malformed (why). cgroup_of reads PID's: also -2
 * when the process is gone. */
int agent__cgroup_parse(const char *text, size_t len, struct agent__ctr_id *out, char *why,
                        size_t cap);
int agent__cgroup_of(unsigned int pid, struct agent__ctr_id *out, char *why, size_t cap);

/* Read name (openat(dirfd, name, flags)) when it is a regular file of at
 * most max bytes: 0 with *out (NUL-terminated, the caller frees) and *len,
 * else an errno value (EFBIG: larger; EINVAL: not a regular file). */
int agent__read_at(int dirfd, const char *name, int flags, size_t max, char **out, size_t *len);

/* What the kubelet holds of a pod's limit file (kubelet.c). */
enum {
    AGENT__LIM_NONE,      /* no configMap volume holds one: not judged */
    AGENT__LIM_OK,        /* lim is the strictest the pod's volumes hold */
    AGENT__LIM_BAD,       /* a file that does not parse or is not the kubelet's: deny */
    AGENT__LIM_UNREADABLE /* the pod's folder cannot be read: unknown */
};
struct agent__pod_limits {
    int state, truncated; /* truncated: more volumes than AGENT_POD_VOLUMES_MAX */
    struct shim_limits lim;
    char volume[256];     /* the volume lim came from */
    char why[TS_MSG_MAX]; /* BAD, UNREADABLE: what and where */
};
void agent__pod_limits_read(const char *kubelet_root, const char *pod_uid,
                            struct agent__pod_limits *out);

/* One round's view (enforce.c): each GPU process, its container, the
 * container's pod and that pod's limit file. */
struct agent__proc {
    unsigned int pid;
    int gpu, c;            /* c: index of its container, -1: none */
    int mem_known, shared; /* shared: on a card the plan shares */
    uint64_t mem;          /* usedGpuMemory, bytes (0 when not known) */
};
struct agent__ctr {
    struct agent__ctr_id id;
    int pod; /* index in pods */
    int nproc, unknown_mem, shared;
    uint64_t mem; /* its processes' usedGpuMemory, bytes */
};
struct agent__pod {
    char uid[AGENT_POD_UID_MAX];
    struct agent__pod_limits lim;
};
struct agent__round {
    nvmlProcessInfo_t buf[AGENT_ENFORCE_PROCS_MAX];
    struct agent__proc p[AGENT_ENFORCE_PROCS_MAX];
    struct agent__ctr c[AGENT_ENFORCE_PROCS_MAX];
    struct agent__pod pods[AGENT_ENFORCE_PROCS_MAX];
    char uuid[INV_GPUS_MAX][NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    int np, nc, npod, overflow;
    int sm_judged;          /* sm.c closed a window this round */
    char error[TS_MSG_MAX]; /* NVML could not list the processes */
};

enum { AGENT__KIND_MEMORY, AGENT__KIND_SM, AGENT__KIND_UNJUDGED };

/* A container over its limit, for act.c. */
struct agent__verdict {
    struct agent__round *r;
    int ci, kind, action;          /* action: enum shim_action */
    const struct shim_limits *lim; /* tenant, workload */
    uint64_t used, limit, allowed; /* memory: bytes; SM: percent */
    const char *deny;              /* the limit file's fault when judged as 0 */
    int gpu;                       /* SM: the card; memory: -1 (all) */
};

/* act.c: the episodes of violations (acted on, logged, counted and
 * recorded once each, until a round finds the container within again). */
void agent__episodes_begin(struct agent_watch *w);
void agent__violation(struct agent_watch *w, const struct agent__verdict *v);
/* A process or container not judged (reason: no-pod, no-limits,
 * unreadable-cgroup, unreadable-limits): logged once, counted per round. */
void agent__unjudged(struct agent_watch *w, const struct agent__proc *q, const char *reason,
                     const char *why);
void agent__unjudged_ctr(struct agent_watch *w, const struct agent__round *r, int ci,
                         const char *reason, const char *why);
void agent__episodes_end(struct agent_watch *w, const struct agent__round *r, int64_t took_ms);

/* sm.c: the SM share over the window, from NVML's process samples. The
 * state (NULL: not judged); a poll of the samples (every AGENT_SM_POLL_MS
 * from the loop); and the round's part: its slice of the window, judged. */
struct agent__sm;
ts_status agent__sm_new(struct agent__sm **out, struct ts_error *err);
void agent__sm_free(struct agent__sm *s);
void agent__sm_poll(struct agent_watch *w);
void agent__sm_round(struct agent_watch *w, struct agent__round *r);

struct agent__enforce;
ts_status agent__enforce_new(struct agent__enforce **out, struct ts_error *err);
void agent__enforce_free(struct agent__enforce *e);
/* One enforcement round over the node's cards (enforce.c). */
void agent__enforce_round(struct agent_watch *w);
/* Its metrics, appended to b (act.c; takes w->lock). */
void agent__enforce_metrics(struct agent_watch *w, struct ts_sbuf *b);
/* Evict the pod of uid through the API server (kube.c): 0 evicted, -2
 * refused (429: a PodDisruptionBudget), -1 failed; why says what. */
int agent__evict(struct agent_watch *w, const char *pod_uid, char *why, size_t cap);
struct agent__kube;
void agent__kube_free(struct agent__kube *k); /* NULL is fine */

/* ---- watch.c, status.c, custody.c ---------------------------------------- */

/* What /metrics and the probes show; written by the loop under the lock. */
struct agent__stats {
    long ok, failed, busy, plan_changes, config_errors, recoveries;
    int64_t last_ms;  /* wall clock, end of the last reconcile; 0: none */
    int64_t round_ms; /* monotonic, end of the last round */
    int last_ok, drift, planned, ready;
    int busy_instances; /* found busy by the last reconcile */
};

struct agent_watch {
    const struct agent_watch_opts *o; /* &opts */
    struct agent_watch_opts opts;     /* the caller's, with node = this->node */
    char node[256];                   /* --node, else the NodeConfig's, else the default */
    struct agent__enforce *enf;       /* the enforcement's state (NULL: off) */
    struct agent__sm *sm;             /* its SM share's (NULL: off) */
    struct agent__kube *kube;         /* the API client for evict (made at the first) */
    struct agent_nvml *n;
    pthread_mutex_t lock;
    struct agent__stats stats;
    struct reconf_plan plan;                 /* the node's last good plan (n == 0: none) */
    int have_plan, pending;                  /* pending: the plan changed and is not applied yet */
    uint64_t file_hash, bad_hash, node_hash; /* bad_hash: a file that did not load */
    int64_t backoff_ms, next_try_ms;
    /* the last config and card-reading errors: logged once until they change */
    char cfg_err[TS_MSG_MAX], obs_err[TS_MSG_MAX];
};

/* Custody events for what changed between before and after (custody.c):
 * each GPU instance created, with the plan's tenant; each destroyed, as
 * "unassigned". How many were recorded in *recorded. */
ts_status agent__custody(const struct agent_watch_opts *o, const struct inv_node *before,
                         const struct inv_node *after, const struct reconf_plan *plan,
                         int *recorded, struct ts_error *err);

#endif
