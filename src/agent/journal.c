/*
 * journal.c - the change in flight, on disk, so that an agent killed in the
 * middle of a card's change (kill -9, the node's OOM killer, a crash) can
 * clean up after itself when it starts again.
 *
 * Before a card's first NVML call that changes it, apply writes (atomic
 * rename) one JSON object: {"gpu": N, "uuid": "GPU-...", "before": [GPU
 * instances the card held: id, profileId, profile, start, size],
 * "steps": [{"action": "destroy"|"create", "gpuInstance", "profileId",
 * "profile", "start", "size"}]}; when the card is done (verified, or rolled
 * back) the file is removed. A journal found at start means a change was
 * cut short. NVML's steps are each atomic, so what can be left half made
 * is a GPU instance without its compute instance (killed between the two
 * creates, or between destroying the compute instances and the GPU
 * instance): recovery destroys every GPU instance of the journal's card
 * that has no compute instance and sits where the journal created or
 * destroyed one, then removes the journal. The watch's first reconcile
 * after that completes the change towards the plan it reads then (the
 * normal path: whole-target checks, busy refusal, rollback on failure).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent/internal.h"
#include "util/file.h"
#include "util/jsonwrite.h"

static json_t *gi_json(int id, int profile_id, const char *profile, struct inv_placement pl)
{
    return json_pack("{s:i, s:i, s:s, s:i, s:i}", "gpuInstance", id, "profileId", profile_id,
                     "profile", profile, "start", pl.start, "size", pl.size);
}

static json_t *journal_doc(const struct inv_gpu *before, const struct reconf_diff *d)
{
    json_t *held = json_array(), *steps = json_array();
    for (int i = 0; i < before->ngi; i++) {
        const struct inv_gi *g = &before->gi[i];
        json_array_append_new(held, gi_json(g->id, g->profile_id, g->profile, g->pl));
    }
    for (int k = 0; k < d->nstep; k++) {
        const struct reconf_step *s = &d->step[k];
        json_t *o = gi_json(s->gi_id, s->profile_id, s->profile, s->pl);
        json_object_set_new(o, "action",
                            json_string(s->kind == RECONF_DESTROY ? "destroy" : "create"));
        json_array_append_new(steps, o);
    }
    return json_pack("{s:s, s:i, s:s, s:o, s:o}", "kind", "AgentJournal", "gpu", before->index,
                     "uuid", before->uuid, "before", held, "steps", steps);
}

ts_status agent__journal_begin(const char *path, const struct inv_gpu *before,
                               const struct reconf_diff *d, struct ts_error *err)
{
    json_t *doc = journal_doc(before, d);
    struct ts_sbuf b;
    ts_sbuf_init(&b, AGENT_JOURNAL_MAX);
    ts_status st = doc ? ts_json_write(doc, JSON_INDENT(2) | JSON_SORT_KEYS, &b) : TS_NOMEM;
    json_decref(doc);
    if (st == TS_OK)
        st = ts_file_write(path, ts_sbuf_str(&b), b.len, err);
    else
        ts_err(err, st, "journal %s: cannot build it", path);
    ts_sbuf_release(&b);
    return st;
}

void agent__journal_end(const char *path) { unlink(path); }

/* 1 when the journal's steps name a GPU instance at g's place. */
static int journal_names(json_t *steps, const struct inv_gi *g)
{
    for (size_t i = 0; i < json_array_size(steps); i++) {
        json_t *s = json_array_get(steps, i);
        if (json_integer_value(json_object_get(s, "profileId")) == g->profile_id &&
            json_integer_value(json_object_get(s, "start")) == g->pl.start)
            return 1;
    }
    return 0;
}

/* Destroy the half-made GPU instances of card gpu; how many, or -1. */
static int clean_card(struct agent_nvml *n, int gpu, json_t *steps, struct ts_sbuf *log,
                      struct ts_error *err)
{
    struct inv_gpu *now = calloc(1, sizeof *now);
    nvmlDevice_t d;
    int cleaned = 0;
    if (!now || agent__gpu_read(n, (unsigned)gpu, now, err) != TS_OK ||
        n->nvmlDeviceGetHandleByIndex_v2((unsigned)gpu, &d) != NVML_SUCCESS) {
        free(now);
        return -1;
    }
    for (int i = 0; i < now->ngi && cleaned >= 0; i++) {
        const struct inv_gi *g = &now->gi[i];
        if (g->nci > 0 || !journal_names(steps, g))
            continue;
        if (agent__destroy_gi(n, d, gpu, g->profile_id, g->id, err) != TS_OK)
            cleaned = -1;
        else
            ts_sbuf_printf(log, "GPU %d: destroyed half-made %s at %d:%d (no compute instance)\n",
                           gpu, g->profile, g->pl.start, g->pl.size);
        cleaned += cleaned >= 0;
    }
    free(now);
    return cleaned;
}

ts_status agent_journal_recover(struct agent_nvml *n, const char *path, int *found,
                                struct ts_sbuf *log, struct ts_error *err)
{
    char *text = NULL;
    size_t len = 0;
    json_t *doc = NULL;
    *found = access(path, F_OK) == 0;
    if (!*found)
        return TS_OK;
    ts_status st = ts_file_read(path, AGENT_JOURNAL_MAX, &text, &len, err);
    if (st == TS_OK)
        st = ts_jread_load(text, len, path, &doc, err);
    free(text);
    json_t *gpu = json_object_get(doc, "gpu"), *steps = json_object_get(doc, "steps");
    if (st == TS_OK && (!json_is_integer(gpu) || !json_is_array(steps)))
        st = ts_err_at(err, TS_INVALID, path, 0, 0, json_is_integer(gpu) ? "steps" : "gpu",
                       "not an agent journal");
    if (st == TS_OK) {
        int g = (int)json_integer_value(gpu);
        ts_sbuf_printf(log, "GPU %d: a change was cut short (journal %s, %zu steps)\n", g, path,
                       json_array_size(steps));
        if (clean_card(n, g, steps, log, err) < 0)
            st = err->code ? err->code : TS_INTERNAL;
    }
    json_decref(doc);
    if (st == TS_OK)
        unlink(path);
    return st;
}
