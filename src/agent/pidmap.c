/*
 * pidmap.c - the container-to-host pid map of the processes on this node's
 * GPUs, for the shim. NVML names processes by host pid; a container sees
 * its own pids. The agent (hostPID) asks NVML for the processes of each
 * card (nvmlDeviceGetComputeRunningProcesses_v3) and reads, for each host
 * pid, its pid namespace (the inode of /proc/PID/ns/pid) and its pid in
 * that namespace (the last NSpid field of /proc/PID/status). Format
 * (docs/agent.md), one process a line after a comment line:
 *
 *   PIDNS-INODE CONTAINER-PID HOST-PID GPU-INDEX GPU-INSTANCE-ID|-
 *
 * sorted as NVML lists them, card by card. A process that exits between
 * NVML's answer and the read of /proc is left out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "agent/internal.h"
#include "util/file.h"

/* The pid in the innermost namespace (last NSpid field), or -1. */
static long inner_pid(unsigned int pid)
{
    char path[64], *text = NULL;
    size_t len = 0;
    struct ts_error e = {0};
    snprintf(path, sizeof path, "/proc/%u/status", pid);
    if (ts_file_read(path, AGENT_PROC_STATUS_MAX, &text, &len, &e) != TS_OK)
        return -1;
    long last = -1;
    char *line = strstr(text, "\nNSpid:");
    for (char *p = line ? line + 7 : NULL; p && *p && *p != '\n';) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        last = v;
        p = end;
    }
    free(text);
    return last;
}

static void add_process(const nvmlProcessInfo_t *p, int gpu, struct ts_sbuf *out)
{
    char ns[64];
    struct stat sb;
    snprintf(ns, sizeof ns, "/proc/%u/ns/pid", p->pid);
    long inner = inner_pid(p->pid);
    if (inner < 0 || stat(ns, &sb) != 0)
        return; /* gone already */
    ts_sbuf_printf(out, "%llu %ld %u %d ", (unsigned long long)sb.st_ino, inner, p->pid, gpu);
    if (p->gpuInstanceId == 0xFFFFFFFFu)
        ts_sbuf_puts(out, "-\n");
    else
        ts_sbuf_printf(out, "%u\n", p->gpuInstanceId);
}

static ts_status card_processes(struct agent_nvml *n, int gpu, struct ts_sbuf *out,
                                struct ts_error *err)
{
    nvmlDevice_t d;
    nvmlProcessInfo_t p[AGENT_PROCS_MAX];
    unsigned int count = AGENT_PROCS_MAX;
    memset(p, 0, sizeof p);
    nvmlReturn_t r = n->nvmlDeviceGetHandleByIndex_v2((unsigned)gpu, &d);
    if (r != NVML_SUCCESS)
        return agent__nvml_err(n, r, "nvmlDeviceGetHandleByIndex_v2", gpu, err);
    r = n->nvmlDeviceGetComputeRunningProcesses_v3(d, &count, p);
    if (r != NVML_SUCCESS)
        return agent__nvml_err(n, r, "nvmlDeviceGetComputeRunningProcesses_v3", gpu, err);
    for (unsigned int i = 0; i < count && i < AGENT_PROCS_MAX; i++)
        add_process(&p[i], gpu, out);
    return TS_OK;
}

ts_status agent_pidmap_write(struct agent_nvml *n, const struct inv_node *inv, const char *path,
                             struct ts_error *err)
{
    struct ts_sbuf b;
    ts_sbuf_init(&b, (size_t)INV_GPUS_MAX * AGENT_PROCS_MAX * 64 + 256);
    ts_sbuf_puts(&b, "# tessera pid map v1: pidns-inode container-pid host-pid gpu-index "
                     "gpu-instance-id\n");
    ts_status st = TS_OK;
    for (int i = 0; st == TS_OK && i < inv->ngpu; i++)
        st = card_processes(n, inv->gpu[i].index, &b, err);
    if (st == TS_OK && ts_sbuf_status(&b) != TS_OK)
        st = ts_err(err, TS_NOMEM, "pid map: out of memory");
    if (st == TS_OK)
        st = ts_file_write(path, ts_sbuf_str(&b), b.len, err);
    ts_sbuf_release(&b);
    return st;
}
