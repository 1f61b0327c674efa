/*
 * fuzz_cgroup.c - libFuzzer target for what the node agent reads of a GPU
 * process's /proc/PID/cgroup (agent/cgroup.c, agent__cgroup_parse): the
 * pod and container it is judged as. Invariants checked (abort otherwise):
 * the answer is -1, 0 or 1; on 1 the pod is a lowercase UUID (8-4-4-4-12)
 * and the container 1..64 lowercase hex digits, both NUL-ended in their
 * fields (the pod names a folder under the kubelet's root: nothing else may
 * pass); on -1 the reason is said; the same bytes give the same answer.
 * Seeds in fuzz/corpus/cgroup/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "agent/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

static void check_uuid(const char *s)
{
    static const int dash[] = {8, 13, 18, 23};
    if (strlen(s) != 36)
        abort();
    for (int i = 0, d = 0; i < 36; i++)
        if (d < 4 && i == dash[d] ? (d++, s[i] != '-') : !lower_hex(s[i]))
            abort();
}

static void check_ctr(const char *s)
{
    size_t n = strnlen(s, AGENT_CTR_ID_MAX);
    if (n == 0 || n > 64 || n == AGENT_CTR_ID_MAX)
        abort();
    for (size_t i = 0; i < n; i++)
        if (!lower_hex(s[i]))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct agent__ctr_id a, b;
    char why[256] = "", why2[256] = "";
    int r = agent__cgroup_parse((const char *)data, size, &a, why, sizeof why);
    int r2 = agent__cgroup_parse((const char *)data, size, &b, why2, sizeof why2);
    if (r < -1 || r > 1 || r != r2 || (r == -1 && !why[0]))
        abort();
    if (r == 1) {
        if (!memchr(a.pod, 0, sizeof a.pod) || !memchr(a.ctr, 0, sizeof a.ctr))
            abort();
        check_uuid(a.pod);
        check_ctr(a.ctr);
        if (memcmp(&a, &b, sizeof a) != 0)
            abort();
    }
    return 0;
}
