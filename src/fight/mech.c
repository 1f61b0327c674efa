/*
 * mech.c - which isolation mechanisms can run here, and how each is set up
 * (see mech.h). Time-slicing needs nothing. The shim is LD_PRELOADed with a
 * limit file (format: docs/shim.md) giving the SLA tenant sla_share% of the
 * SMs and the noisy one noisy_share% (and, with --memory, noisy_mem_frac
 * of the memory). MPS starts its own control daemon per run, with pipe and
 * log directories under the fight's temporary directory, and quits it
 * after; the compute mode is never touched. MIG uses two existing MIG
 * devices from `nvidia-smi -L`, one per tenant; geometry is never changed.
 */
#include "fight/mech.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "util/file.h"

/* Run argv with extra env; feed input on stdin; capture stdout into out
 * (size bytes, may be NULL). Returns the exit status, -1 if it could not run. */
static int run_prog(char *const argv[], char *const env[], const char *input, char *out,
                    size_t size)
{
    int in[2], o[2];
    if (pipe(in) != 0)
        return -1;
    if (pipe(o) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(o[1], 1);
        close(in[1]);
        close(o[0]);
        for (size_t i = 0; env && env[i]; i++)
            putenv(env[i]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(in[0]);
    close(o[1]);
    if (input && pid > 0 && write(in[1], input, strlen(input)) < 0)
        input = NULL;
    close(in[1]);
    size_t len = 0;
    ssize_t n;
    char sink[512];
    while ((n = read(o[0], out && len + 1 < size ? out + len : sink,
                     out && len + 1 < size ? size - 1 - len : sizeof(sink))) > 0)
        if (out && len + 1 < size)
            len += (size_t)n;
    close(o[0]);
    if (out)
        out[len] = '\0';
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The first executable name on PATH into out; 0 when none. */
static int find_in_path(const char *name, char *out, size_t size)
{
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        snprintf(out, size, "%.*s/%s", (int)len, path, name);
        if (len && access(out, X_OK) == 0)
            return 1;
        path += len + (colon ? 1 : 0);
    }
    return 0;
}

void fight__set_reason(struct fight_phase_result *p, const char *why)
{
    size_t n = strlen(why);
    if (n >= sizeof(p->reason))
        n = sizeof(p->reason) - 1;
    memcpy(p->reason, why, n);
    p->reason[n] = '\0';
}

static void skip(struct fight_result *r, int ph, const char *why)
{
    r->ph[ph].status = FIGHT_ST_SKIPPED;
    fight__set_reason(&r->ph[ph], why);
}

/* cuInit + the name of device 0; TS_NOT_FOUND / TS_IO with the reason. */
static ts_status probe_driver(struct fight_ctx *c, struct fight_result *r, const char *driver,
                              struct ts_error *err)
{
    struct fight_cuda cu;
    ts_status st = fight__cuda_open(&cu, driver, err);
    if (st != TS_OK)
        return st;
    CUdevice dev;
    st = fight__cuda_check(&cu, cu.cuInit(0), "cuInit", err);
    if (st == TS_OK)
        st = fight__cuda_check(&cu, cu.cuDeviceGet(&dev, 0), "cuDeviceGet", err);
    if (st == TS_OK)
        st = fight__cuda_check(&cu, cu.cuDeviceGetName(r->device, (int)sizeof(r->device), dev),
                               "cuDeviceGetName", err);
    if (st == TS_OK)
        st = fight__cuda_check(&cu, cu.cuDeviceTotalMem_v2(&c->total_mem, dev), "cuDeviceTotalMem",
                               err);
    fight__cuda_close(&cu);
    if (st != TS_OK) {
        char why[TS_MSG_MAX]; /* ts_err clears err before formatting */
        snprintf(why, sizeof(why), "%s", err ? err->msg : "");
        return ts_err(err, TS_NOT_FOUND, "no usable CUDA device: %.400s", why);
    }
    return TS_OK;
}

/* nvcc on PATH and kernels.cu beside the build: compile a fatbin. */
static void try_nvcc(struct fight_ctx *c)
{
    char nvcc[512], src[600];
    const char *tree = getenv("TESSERA_SRC");
    if (!find_in_path("nvcc", nvcc, sizeof(nvcc)) || !tree)
        return;
    snprintf(src, sizeof(src), "%s/src/fight/kernels.cu", tree);
    snprintf(c->kernels, sizeof(c->kernels), "%s/fight.fatbin", c->tmp);
    char *argv[] = {nvcc, "-fatbin", "-arch=native", "-o", c->kernels, src, NULL};
    if (access(src, R_OK) != 0 || run_prog(argv, NULL, NULL, NULL, 0) != 0)
        c->kernels[0] = '\0';
}

/* One tenant's limit file (format: docs/shim.md, src/shim/limits.h), with
 * its own accounting region: each tenant is a container of its own. */
static ts_status write_limits(struct fight_ctx *c, int sla, struct ts_error *err)
{
    const struct fight_opts *o = c->o;
    const char *role = sla ? "sla" : "noisy";
    char text[1024], mem[64] = "";
    if (o->memory && !sla)
        snprintf(mem, sizeof(mem), "memoryLimit = %llu\n",
                 (unsigned long long)((double)c->total_mem * o->noisy_mem_frac));
    int n = snprintf(text, sizeof(text),
                     "# tessera fight: the %s tenant\nversion = 1\nsmPercent = %d\n%s"
                     "region = %s/%s.region\n",
                     role, sla ? o->sla_share : o->noisy_share, mem, c->tmp, role);
    char *path = sla ? c->limits[0] : c->limits[1];
    snprintf(path, sizeof(c->limits[0]), "%s/%s.limits", c->tmp, role);
    return ts_file_write(path, text, (size_t)n, err);
}

static void probe_shim(struct fight_ctx *c, struct ts_error *err)
{
    const struct fight_opts *o = c->o;
    if (o->shim)
        snprintf(c->shim, sizeof(c->shim), "%s", o->shim);
    else {
        const char *slash = strrchr(o->self, '/');
        int dir = slash ? (int)(slash - o->self) : 1;
        snprintf(c->shim, sizeof(c->shim), "%.*s/src/shim/libtessera-cuda.so", dir,
                 slash ? o->self : ".");
        if (access(c->shim, R_OK) != 0)
            snprintf(c->shim, sizeof(c->shim), "%.*s/libtessera-cuda.so", dir,
                     slash ? o->self : ".");
    }
    char why[700];
    if (access(c->shim, R_OK) != 0) {
        snprintf(why, sizeof(why), "%s not found (build src/shim or pass --shim PATH)", c->shim);
        skip(c->r, FIGHT_PH_MECH0 + FIGHT_SHIM, why);
    } else if (write_limits(c, 1, err) != TS_OK || write_limits(c, 0, err) != TS_OK) {
        snprintf(why, sizeof(why), "cannot write the limit file: %s", err->msg);
        skip(c->r, FIGHT_PH_MECH0 + FIGHT_SHIM, why);
    }
}

static void probe_mps(struct fight_ctx *c)
{
    if (c->r->synthetic)
        skip(c->r, FIGHT_PH_MECH0 + FIGHT_MPS, "synthetic run: the stand-in driver has no MPS");
    else if (!find_in_path("nvidia-cuda-mps-control", c->mps_ctl, sizeof(c->mps_ctl)))
        skip(c->r, FIGHT_PH_MECH0 + FIGHT_MPS, "nvidia-cuda-mps-control not found on PATH");
    snprintf(c->mps_pipe, sizeof(c->mps_pipe), "%s/mps-pipe", c->tmp);
    snprintf(c->mps_log, sizeof(c->mps_log), "%s/mps-log", c->tmp);
}

static void probe_mig(struct fight_ctx *c)
{
    char smi[512], why[200];
    static char text[64 * 1024];
    char uuids[FIGHT_MIG_MAX][FIGHT_UUID_MAX];
    if (c->r->synthetic) {
        skip(c->r, FIGHT_PH_MECH0 + FIGHT_MIG,
             "MIG not tested: synthetic run (the stand-in driver has no MIG)");
        return;
    }
    if (!find_in_path("nvidia-smi", smi, sizeof(smi))) {
        skip(c->r, FIGHT_PH_MECH0 + FIGHT_MIG, "MIG not tested: nvidia-smi not found on PATH");
        return;
    }
    char *argv[] = {smi, "-L", NULL};
    size_t n = run_prog(argv, NULL, NULL, text, sizeof(text)) == 0
                   ? fight_mig_parse(text, uuids, FIGHT_MIG_MAX)
                   : 0;
    if (n < 2) {
        snprintf(why, sizeof(why),
                 "MIG not tested: %zu MIG device%s here, 2 needed (the card is not in MIG mode "
                 "or has fewer instances; tessera never changes that)",
                 n, n == 1 ? "" : "s");
        skip(c->r, FIGHT_PH_MECH0 + FIGHT_MIG, why);
        return;
    }
    memcpy(c->mig[0], uuids[0], FIGHT_UUID_MAX);
    memcpy(c->mig[1], uuids[1], FIGHT_UUID_MAX);
}

ts_status fight__mech_probe(struct fight_ctx *c, const struct fight_opts *o, struct fight_result *r,
                            struct ts_error *err)
{
    memset(c, 0, sizeof(*c));
    c->o = o;
    c->r = r;
    snprintf(c->tmp, sizeof(c->tmp), "%s/tessera-fight-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(c->tmp)) {
        c->tmp[0] = '\0';
        return ts_err(err, TS_IO, "cannot create a temporary directory: %s", strerror(errno));
    }
    struct ts_error e;
    int user = o->sla_cmd && o->noisy_cmd;
    if (probe_driver(c, r, o->driver, &e) != TS_OK) {
        if (!user)
            return ts_err(err, TS_NOT_FOUND, "%s", e.msg);
        snprintf(r->device, sizeof(r->device), "unknown (%.100s)", e.msg);
    }
    r->synthetic = o->synthetic || strcmp(r->device, FIGHT_STANDIN_NAME) == 0;
    if (o->kernels)
        snprintf(c->kernels, sizeof(c->kernels), "%s", o->kernels);
    else if (!r->synthetic && !user)
        try_nvcc(c);
    for (int ph = 0; ph < FIGHT_NPHASE; ph++)
        r->ph[ph].status = FIGHT_ST_MEASURED;
    for (int m = 0; m < FIGHT_NMECH; m++)
        if (!(o->mechs & (1u << m)))
            skip(r, FIGHT_PH_MECH0 + m, "not asked for (--mechanisms)");
    if (o->mechs & (1u << FIGHT_SHIM))
        probe_shim(c, &e);
    if (o->mechs & (1u << FIGHT_MPS))
        probe_mps(c);
    if (o->mechs & (1u << FIGHT_MIG))
        probe_mig(c);
    int any = 0;
    for (int m = 0; m < FIGHT_NMECH; m++)
        any |= r->ph[FIGHT_PH_MECH0 + m].status == FIGHT_ST_MEASURED;
    if (!any)
        skip(r, FIGHT_PH_SOLO, "no mechanism runs");
    static const int alone[] = {FIGHT_PH_SHIMBASE, FIGHT_PH_MPSBASE, FIGHT_PH_MIGBASE};
    for (int i = 0; i < 3; i++)
        if (r->ph[FIGHT_PH_MECH0 + fight__mech_of(alone[i])].status != FIGHT_ST_MEASURED)
            skip(r, alone[i], "its mechanism does not run");
    return TS_OK;
}

static void add(struct fight_env *env, const char *name, const char *value)
{
    if (env->n == FIGHT_ENV_MAX)
        return;
    snprintf(env->buf[env->n], sizeof(env->buf[0]), "%.60s=%.600s", name, value);
    env->v[env->n] = env->buf[env->n];
    env->v[++env->n] = NULL;
}

static void add_num(struct fight_env *env, const char *name, long value)
{
    char num[24];
    snprintf(num, sizeof(num), "%ld", value);
    add(env, name, num);
}

void fight__mech_env(const struct fight_ctx *c, int ph, int sla, struct fight_env *env)
{
    const struct fight_opts *o = c->o;
    env->n = 0;
    env->v[0] = NULL;
    add(env, "TESSERA_FIGHT_ROLE", sla ? "sla" : "noisy");
    if (sla) {
        add_num(env, "TESSERA_FIGHT_REQUESTS", (long)(o->requests + o->warmup));
        add(env, "TESSERA_FIGHT_ARRIVAL", fight_arrival_name(o->arrival));
        char rate[32];
        snprintf(rate, sizeof(rate), "%g", o->arrival == FIGHT_ARRIVE_CLOSED ? 0 : o->rate);
        add(env, "TESSERA_FIGHT_RATE", rate);
    }
    int m = fight__mech_of(ph);
    if (m == FIGHT_SHIM) {
        const char *pre = getenv("LD_PRELOAD"); /* kept first (e.g. libasan) */
        char list[600];
        snprintf(list, sizeof(list), "%.180s%s%.400s", pre ? pre : "", pre && *pre ? " " : "",
                 c->shim);
        add(env, "LD_PRELOAD", list);
        add(env, "TESSERA_CUDA_LIMITS_FILE", c->limits[sla ? 0 : 1]);
    } else if (m == FIGHT_MPS) {
        add(env, "CUDA_MPS_PIPE_DIRECTORY", c->mps_pipe);
        add(env, "CUDA_MPS_LOG_DIRECTORY", c->mps_log);
        add_num(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", sla ? o->sla_share : o->noisy_share);
    } else if (m == FIGHT_MIG) {
        add(env, "CUDA_VISIBLE_DEVICES", c->mig[sla ? 0 : 1]);
    }
}

ts_status fight__mech_begin(struct fight_ctx *c, int ph, struct ts_error *err)
{
    if (fight__mech_of(ph) != FIGHT_MPS)
        return TS_OK;
    mkdir(c->mps_pipe, 0700);
    mkdir(c->mps_log, 0700);
    struct fight_env env;
    fight__mech_env(c, ph, 1, &env);
    char *argv[] = {c->mps_ctl, "-d", NULL};
    int rc = run_prog(argv, env.v, NULL, NULL, 0);
    if (rc != 0)
        return ts_err(err, TS_IO, "nvidia-cuda-mps-control -d failed (exit %d); see %s", rc,
                      c->mps_log);
    c->mps_up = 1;
    return TS_OK;
}

void fight__mech_end(struct fight_ctx *c, int ph)
{
    if (fight__mech_of(ph) != FIGHT_MPS || !c->mps_up)
        return;
    struct fight_env env;
    fight__mech_env(c, ph, 1, &env);
    char *argv[] = {c->mps_ctl, NULL};
    run_prog(argv, env.v, "quit\n", NULL, 0);
    c->mps_up = 0;
}

static int unlink_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path); /* best effort: go on with the rest of the tree */
    return 0;
}

void fight__ctx_release(struct fight_ctx *c)
{
    if (c->tmp[0])
        nftw(c->tmp, unlink_one, 8, FTW_DEPTH | FTW_PHYS);
    c->tmp[0] = '\0';
}
