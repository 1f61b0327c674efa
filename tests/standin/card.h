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
#define STANDIN_CARD_VERSION 2u
#define STANDIN_CARD_SLOTS 256

struct standin_card_counters {
    _Atomic uint64_t busy_ns, launches;
};

/* One process's slot: pid 0 is a free slot. */
struct standin_card_slot {
    _Atomic int32_t pid;
    struct standin_card_counters c;
    _Atomic uint64_t mem; /* device memory the process holds */
};

struct standin_card {
    uint32_t magic, version;
    struct standin_card_counters all; /* the whole card */
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
/* The slot of pid; with claim (under the lock), a free or dead one is
 * taken for it. NULL when it has none. */
struct standin_card_slot *standin_card_slot(struct standin_card *c, int pid, int claim);
/* Count a kernel of host_pid that held the card for held_ns (under the
 * lock). */
void standin_card_count(struct standin_card *c, int host_pid, uint64_t held_ns);
/* Card time pid's kernels (pid 0: every process) have run up to now_ns:
 * elapsed time only, never work still queued. */
uint64_t standin_card_busy_ns(struct standin_card *c, int host_pid, uint64_t now_ns);
/* Kernels pid (0: every process) has launched. */
uint64_t standin_card_launches(struct standin_card *c, int host_pid);
/* Device memory process pid holds (0 when it has no slot). */
uint64_t standin_card_mem_bytes(struct standin_card *c, int host_pid);
/* CLOCK_MONOTONIC in nanoseconds (the card's clock). */
uint64_t standin_card_now_ns(void);

#pragma GCC visibility pop

#endif
