/*
 * test_enforce.c - the enforcement's hostile-input readers (src/agent):
 * /proc/PID/cgroup text (cgroupfs and systemd layouts, cgroup v1 and v2,
 * the runtimes' prefixes, UIDs and IDs that are not, hierarchies that
 * disagree) and a pod's limit file in a kubelet root laid out by hand (the
 * atomic writer's links, a link out, a huge file, a folder, the strictest
 * of two files, a malformed one, no volumes). The key name is render's.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agent/internal.h"
#include "entitle/entitle.h"

#define UID "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
#define UID_ "0b1c2d3e_4f50_6172_8394_a5b6c7d8e9f0"
#define CTR "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

static int parse(const char *text, struct agent__ctr_id *id, char *why)
{
    return agent__cgroup_parse(text, strlen(text), id, why, TS_MSG_MAX);
}

static void test_cgroup_layouts(void **state)
{
    (void)state;
    struct agent__ctr_id id;
    char why[TS_MSG_MAX];
    static const char *const good[] = {
        "12:pids:/kubepods/burstable/pod" UID "/" CTR "\n3:cpu:/\n0::/\n",
        "0::/kubepods/pod" UID "/" CTR "\n",
        "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
        ".slice/cri-containerd-" CTR ".scope\n",
        "0::/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" CTR ".scope",
        "1:name=systemd:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
        ".slice/docker-" CTR ".scope\n4:memory:/kubepods/besteffort/pod" UID "/" CTR "\n",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        if (parse(good[i], &id, why) != 1)
            fail_msg("case %zu: %s", i, why);
        assert_string_equal(id.pod, UID);
        assert_string_equal(id.ctr, CTR);
    }
    assert_int_equal(parse("0::/user.slice/user-0.slice\n4:memory:/process_api/ab12\n", &id, why),
                     0);
    assert_int_equal(parse("", &id, why), 0);
    /* a pod without a container ID, not hex, a UID that is not one */
    assert_int_equal(parse("0::/kubepods/pod" UID "\n", &id, why), -1);
    assert_int_equal(parse("0::/kubepods/pod" UID "/../../etc\n", &id, why), -1);
    assert_int_equal(parse("0::/kubepods/pod" UID "/crio-conmon-" CTR ".scope\n", &id, why), -1);
    assert_int_equal(parse("0::/kubepods/pod../../x/" CTR "\n", &id, why), 0);
    assert_int_equal(
        parse("0::/kubepods/pod0B1C2D3E-4f50-6172-8394-a5b6c7d8e9f0/" CTR "\n", &id, why), 0);
    /* two hierarchies naming different containers; a line without fields */
    assert_int_equal(
        parse("1:pids:/kubepods/pod" UID "/" CTR "\n0::/kubepods/pod" UID "/abc\n", &id, why), -1);
    assert_non_null(strstr(why, "different containers"));
    assert_int_equal(parse("garbage\n", &id, why), -1);
}

static char root[64];

/* A file at root/rel with text (folders made). */
static void put(const char *rel, const char *text)
{
    char path[512], cmd[600];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    assert_int_equal(system(cmd), 0);
    unlink(path); /* a link left by the case before */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void link_at(const char *target, const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    unlink(path);
    assert_int_equal(symlink(target, path), 0);
}

#define VOLS "pods/" UID "/volumes/kubernetes.io~configmap/"

/* Volume vol holding text as the kubelet's atomic writer lays it out. */
static void kubelet_volume(const char *vol, const char *text)
{
    char rel[256];
    snprintf(rel, sizeof rel, VOLS "%s/..2026_01_01/" ENTITLE_SHIM_LIMITS_KEY, vol);
    put(rel, text);
    snprintf(rel, sizeof rel, VOLS "%s/..data", vol);
    link_at("..2026_01_01", rel);
    snprintf(rel, sizeof rel, VOLS "%s/" ENTITLE_SHIM_LIMITS_KEY, vol);
    link_at("..data/" ENTITLE_SHIM_LIMITS_KEY, rel);
}

static int limits(struct agent__pod_limits *out)
{
    agent__pod_limits_read(root, UID, out);
    return out->state;
}

static void test_kubelet(void **state)
{
    (void)state;
    struct agent__pod_limits l;
    snprintf(root, sizeof root, "/tmp/test_enforce.XXXXXX");
    assert_non_null(mkdtemp(root));
    assert_int_equal(limits(&l), AGENT__LIM_UNREADABLE); /* no pods folder */
    put("pods/" UID "/volumes/kubernetes.io~empty-dir/x", "");
    assert_int_equal(limits(&l), AGENT__LIM_NONE);
    kubelet_volume("tessera-limits", "version = 1\nmemoryLimit = 8Gi\ntenant = alpha\n");
    assert_int_equal(limits(&l), AGENT__LIM_OK);
    assert_true(l.lim.memory_bytes == 8ull << 30);
    assert_string_equal(l.lim.tenant, "alpha");
    /* a second file: the strictest wins, whichever volume it is in */
    kubelet_volume("mine", "version = 1\nmemoryLimit = 80Gi\n");
    assert_int_equal(limits(&l), AGENT__LIM_OK);
    assert_true(l.lim.memory_bytes == 8ull << 30);
    kubelet_volume("mine", "version = 1\nmemoryLimit = 1Gi\n");
    assert_int_equal(limits(&l), AGENT__LIM_OK);
    assert_true(l.lim.memory_bytes == 1ull << 30);
    assert_string_equal(l.volume, "mine");
    /* links out of the layout */
    link_at("/etc/passwd", VOLS "mine/" ENTITLE_SHIM_LIMITS_KEY);
    assert_int_equal(limits(&l), AGENT__LIM_BAD);
    assert_non_null(strstr(l.why, "a link to '/etc/passwd'"));
    link_at("..data/" ENTITLE_SHIM_LIMITS_KEY, VOLS "mine/" ENTITLE_SHIM_LIMITS_KEY);
    link_at("/etc", VOLS "mine/..data");
    assert_int_equal(limits(&l), AGENT__LIM_BAD);
    assert_non_null(strstr(l.why, "not to a folder beside it"));
    link_at("..2026_01_01", VOLS "mine/..data");
    link_at("/", VOLS "mine/..2026_01_01/" ENTITLE_SHIM_LIMITS_KEY);
    assert_int_equal(limits(&l), AGENT__LIM_BAD);
    /* too large, malformed */
    static char big[SHIM_LIMITS_FILE_MAX + 10];
    memset(big, '#', sizeof big - 1);
    kubelet_volume("mine", big);
    assert_int_equal(limits(&l), AGENT__LIM_BAD);
    assert_non_null(strstr(l.why, "larger than"));
    kubelet_volume("mine", "version = 1\nmemoryLimit = lots\n");
    assert_int_equal(limits(&l), AGENT__LIM_BAD);
    assert_non_null(strstr(l.why, "mine/cuda-limits:2:15: memoryLimit: expected a number"));
    /* a plain file (no atomic writer) is read too */
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/" VOLS "mine'", root);
    assert_int_equal(system(cmd), 0);
    put(VOLS "plain/" ENTITLE_SHIM_LIMITS_KEY, "version = 1\nmemoryLimit = 2Gi\n");
    assert_int_equal(limits(&l), AGENT__LIM_OK);
    assert_true(l.lim.memory_bytes == 2ull << 30);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cgroup_layouts),
        cmocka_unit_test(test_kubelet),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
