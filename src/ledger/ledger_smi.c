/*
 * ledger_smi.c - custody events from `nvidia-smi -L` output:
 *   GPU 0: NVIDIA H100 PCIe (UUID: GPU-...)
 *     MIG 3g.40gb     Device  0: (UUID: MIG-...)
 * Other lines (other nvidia-smi output in the same file) are ignored. A GPU
 * with MIG devices gives one event per device; a GPU without gives one.
 */
#include <stdlib.h>
#include <string.h>
#include "ledger/ledger.h"

struct smi_line {
    int mig;          /* 0: GPU line, 1: MIG device line */
    char *uuid, *profile;
};

/* The UUID in "(UUID: X)" on line (NUL-terminated in place), or NULL. */
static char *uuid_of(char *line)
{
    char *u = strstr(line, "(UUID: ");
    if (!u)
        return NULL;
    u += 7;
    char *end = strchr(u, ')');
    if (!end || end == u)
        return NULL;
    *end = '\0';
    return u;
}

/* Classify line (modified in place); 0 when it is neither kind. */
static int smi_line(char *line, struct smi_line *out)
{
    char *p = line + strspn(line, " \t");
    if (strncmp(p, "GPU ", 4) == 0 && (out->uuid = uuid_of(p)) && !strncmp(out->uuid, "GPU-", 4)) {
        out->mig = 0;
        out->profile = "";
        return 1;
    }
    if (strncmp(p, "MIG ", 4) != 0 || !strstr(p, "Device"))
        return 0;
    char *prof = p + 4 + strspn(p + 4, " ");
    size_t n = strcspn(prof, " \t");
    if (!(out->uuid = uuid_of(p)))
        return 0;
    prof[n] = '\0';
    out->mig = 1;
    out->profile = prof;
    return 1;
}

struct ledger_event ledger_event_of(const struct ledger_event *tmpl, const char *gpu_uuid,
                                    const char *instance_uuid, const char *profile,
                                    const char *source)
{
    struct ledger_event ev = *tmpl;
    ev.gpu_uuid = gpu_uuid;
    ev.instance_uuid = instance_uuid ? instance_uuid : "";
    ev.profile = profile ? profile : "";
    ev.tenant = tmpl->tenant ? tmpl->tenant : "unassigned";
    ev.source = source;
    return ev;
}

static struct ledger_event event(const struct ledger_event *tmpl, const char *gpu,
                                 const struct smi_line *l)
{
    return ledger_event_of(tmpl, gpu, l->mig ? l->uuid : "", l->profile, "nvidia-smi");
}

/* Emit the pending GPU line's event when it had no MIG devices. */
static void flush_gpu(struct ledger_event *evs, size_t *n, const struct ledger_event *tmpl,
                      const struct smi_line *gpu, int had_mig)
{
    if (gpu->uuid && !had_mig)
        evs[(*n)++] = event(tmpl, gpu->uuid, gpu);
}

ts_status ledger_parse_smi(const char *text, const struct ledger_event *tmpl,
                           struct ledger_event **evs, size_t *n, char **arena,
                           struct ts_error *err)
{
    size_t lines = 1;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    char *buf = strdup(text);
    struct ledger_event *out = calloc(lines, sizeof(*out));
    if (!buf || !out) {
        free(buf);
        free(out);
        return ts_err(err, TS_NOMEM, "out of memory");
    }
    struct smi_line gpu = {0}, l;
    int had_mig = 0;
    size_t k = 0;
    for (char *line = buf, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        line[strcspn(line, "\r")] = '\0';
        if (!smi_line(line, &l))
            continue;
        if (!l.mig) {
            flush_gpu(out, &k, tmpl, &gpu, had_mig);
            gpu = l;
            had_mig = 0;
        } else if (gpu.uuid) {
            out[k++] = event(tmpl, gpu.uuid, &l);
            had_mig = 1;
        }
    }
    flush_gpu(out, &k, tmpl, &gpu, had_mig);
    if (k == 0) {
        free(buf);
        free(out);
        return ts_err(err, TS_INVALID, "no 'GPU n: ... (UUID: ...)' lines (nvidia-smi -L output)");
    }
    *evs = out;
    *n = k;
    *arena = buf;
    return TS_OK;
}
