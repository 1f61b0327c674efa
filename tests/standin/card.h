/*
 * card.h - the stand-in GPU's shared card file (test code): its layout and
 * the functions that map, lock and read it. Compiled into the stand-in
 * libcuda (tests/standin/cuda), which launches kernels on it, and linkable
 * into the stand-in libnvidia-ml (tests/standin/nvml), which reads it.
 *
 * The file is named by $TESSERA_STANDIN_GPU (default
 * /tmp/tessera-standin-gpu.lock); every process on the machine maps the
 * same one. Writers take the card lock (flock(LOCK_EX) on the file, plus a
 * mutex between the threads of one process). Pids are HOST pids (NSpid's
 * first field), as NVML reports them.
 */
#ifndef STANDIN_CARD_H
#define STANDIN_CARD_H

#include <stdatomic.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

#define STANDIN_CARD_MAGIC 0x44524143u /* "CARD" */
#define STANDIN_CARD_VERSION 4u
#define STANDIN_CARD_SLOTS 256
/* Kernels one process may have queued and not finished: a launch beyond
 * them blocks until its oldest ends (a real launch blocks on a full push
 * buffer the same way). */
#define STANDIN_CARD_PENDING 1024

struct standin_card_counters {
    _Atomic uint64_t busy_ns, launches;
};

/* A kernel on the card's timeline: it runs over [start, end). */
struct standin_card_seg {
    uint64_t start, end;
};

/* One process's slot: pid 0 is a free slot. c.busy_ns holds its finished
 * kernels; pending[head..head+n) (a ring, oldest first) the ones placed and
 * not yet folded into it. dry_ns is the time its queue stood empty between
 * its first launch and its last (from its previous kernel's end to its next
 * launch): time it left the card to others. */
struct standin_card_slot {
    _Atomic int32_t pid;
    uint32_t head, n;
    struct standin_card_counters c;
    uint64_t last_end;
    _Atomic uint64_t dry_ns;
    _Atomic uint64_t mem; /* device memory the process holds */
    struct standin_card_seg pending[STANDIN_CARD_PENDING];
};

/* The card: ONE first-in first-out timeline shared by every process.
 * free_at is when the last kernel placed on it ends. */
struct standin_card {
    uint32_t magic, version;
    uint64_t free_at;
    struct standin_card_counters all; /* the whole card's finished kernels */
    struct standin_card_slot slots[STANDIN_CARD_SLOTS];
};

/* Open $TESSERA_STANDIN_GPU, map it and initialise it (a fresh or foreign
 * file is reset); once per process. NULL on failure. */
struct standin_card *standin_card_map(void);
/* Take and release the card lock (flock + this process's mutex). */
void standin_card_lock(struct standin_card *c);
void standin_card_unlock(struct standin_card *c);
/* This process's host pid: NSpid's first field, else getpid(). */
int standin_card_host_pid(void);
/* The slot of pid; with claim (under the lock), a free one, or one whose
 * process is dead and whose kernels have all ended, is taken for it. NULL
 * when it has none. */
struct standin_card_slot *standin_card_slot(struct standin_card *c, int pid, int claim);
/* Place a kernel of host_pid running dur_ns on the timeline: start =
 * max(now, after, the card's free_at), then moved by stall (NULL: none);
 * returns at once with its end, blocking first while host_pid has
 * STANDIN_CARD_PENDING kernels unfinished. 0: no slot for host_pid. */
uint64_t standin_card_submit(struct standin_card *c, int host_pid, uint64_t after, uint64_t dur_ns,
                             uint64_t (*stall)(uint64_t));
/* Card time pid's kernels (pid 0: every process) have run up to now_ns:
 * elapsed time only, never work still queued. */
uint64_t standin_card_busy_ns(struct standin_card *c, int host_pid, uint64_t now_ns);
/* Time pid's queue stood empty between two of its launches (0 without a
 * slot): how long it asked nothing of the card. */
uint64_t standin_card_dry_ns(struct standin_card *c, int host_pid);
/* Kernels pid (0: every process) has launched. */
uint64_t standin_card_launches(struct standin_card *c, int host_pid);
/* Kernels pid (0: every process) has placed that have not ended by now_ns. */
unsigned standin_card_pending(struct standin_card *c, int host_pid, uint64_t now_ns);
/* Device memory process pid holds (0 when it has no slot). */
uint64_t standin_card_mem_bytes(struct standin_card *c, int host_pid);
/* CLOCK_MONOTONIC in nanoseconds (the card's clock). */
uint64_t standin_card_now_ns(void);
/* Wait until the card's clock reaches t: sleep until about 200 us before
 * it, spin the rest (card.c says why). */
void standin_card_wait_until(uint64_t t);

#pragma GCC visibility pop

#endif
