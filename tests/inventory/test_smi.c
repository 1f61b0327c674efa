/*
 * test_smi.c - the one `nvidia-smi -L` parser (inventory/smi.h) on real
 * outputs from tests/fixtures (plain -L of driver 535 and of R450 with the
 * old MIG-GPU-<uuid>/gi/ci UUIDs, and -L inside whole nvidia-smi sessions),
 * which lines are -L lines at all, and each malformed line rejected at its
 * line and column; the limits on GPUs and MIG devices.
 */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "inventory/smi.h"
#include "util/file.h"

static struct inv_smi smi;

static char *fixture(const char *rel, size_t *len)
{
    char *text = NULL;
    struct ts_error e;
    if (ts_file_read(th_src_path(rel), 1u << 20, &text, len, &e) != TS_OK)
        fail_msg("cannot read %s: %s", rel, e.msg);
    return text;
}

/* Parse fixture rel with flags; it must succeed. */
static void parse_fixture(const char *rel, unsigned flags)
{
    size_t len;
    struct ts_error e = {0};
    char *text = fixture(rel, &len);
    ts_status st = inv_smi_parse(text, len, rel, flags, &smi, &e);
    free(text);
    if (st != TS_OK)
        fail_msg("%s:%d:%d: %s", e.file, e.line, e.column, e.msg);
}

#define FIGHT "tests/fixtures/fight/"
#define SMI "tests/fixtures/nvidia-smi/"

/* Driver 535, one A100 80GB with seven 1g.10gb devices: -L only. */
static void test_driver_535(void **state)
{
    (void)state;
    parse_fixture(FIGHT "datadog-agent-pr33120_a100-sxm4-80gb_L_mig-7x1g10gb.txt", 0);
    assert_int_equal(smi.ngpu, 1);
    assert_int_equal(smi.nmig, 7);
    assert_int_equal(smi.gpu[0].index, 0);
    assert_string_equal(smi.gpu[0].name, "NVIDIA A100-SXM4-80GB");
    assert_string_equal(smi.gpu[0].uuid, "GPU-7fdaf0a5-179b-f636-d15d-daf243e3ff16");
    assert_int_equal(smi.gpu[0].first_mig, 0);
    assert_int_equal(smi.gpu[0].nmig, 7);
    assert_string_equal(smi.mig[0].uuid, "MIG-feb88891-0321-5fef-9c87-d4af3b54259e");
    assert_string_equal(smi.mig[6].uuid, "MIG-1aae4990-b962-574e-8375-119d6d9b9687");
    assert_string_equal(smi.mig[6].profile, "1g.10gb");
    assert_int_equal(smi.mig[6].device, 6);
    assert_int_equal(smi.mig[6].gpu, 0);
    assert_int_equal(smi.mig[6].line, 8);
}

/* R450: three GPUs, two devices each, UUIDs MIG-GPU-<uuid>/<gi>/<ci>. */
static void test_r450_uuids(void **state)
{
    (void)state;
    parse_fixture(FIGHT "dcgm-exporter-issue105_a100-sxm4-40gb_L_mig-r450-uuid-format.txt", 0);
    assert_int_equal(smi.ngpu, 3);
    assert_int_equal(smi.nmig, 6);
    assert_string_equal(smi.gpu[1].name, "A100-SXM4-40GB");
    assert_int_equal(smi.gpu[1].index, 1);
    assert_int_equal(smi.gpu[1].line, 4);
    assert_int_equal(smi.gpu[1].first_mig, 2);
    assert_int_equal(smi.gpu[1].nmig, 2);
    assert_string_equal(smi.mig[3].uuid, "MIG-GPU-604c7a18-e7d0-02e0-723a-7578be840651/2/0");
    assert_string_equal(smi.mig[3].profile, "3g.20gb");
    assert_int_equal(smi.mig[3].gpu, 1);
}

/* -L inside whole sessions: other output is skipped only when mixed. */
static void test_sessions(void **state)
{
    (void)state;
    struct ts_error e = {0};
    size_t len;
    const char *rtx = SMI "rtx-pro-6000-bw-server_nvidia-smi-L-lgip-lgipp-lgi.txt";
    char *text = fixture(rtx, &len);
    assert_int_equal(inv_smi_parse(text, len, "rtx.txt", 0, &smi, &e), TS_INVALID);
    assert_string_equal(e.file, "rtx.txt");
    assert_int_equal(e.line, 1);
    assert_int_equal(e.column, 1);
    assert_non_null(strstr(e.msg, "not an nvidia-smi -L line"));
    assert_int_equal(inv_smi_parse(text, len, "rtx.txt", INV_SMI_MIXED, &smi, &e), TS_OK);
    free(text);
    assert_int_equal(smi.ngpu, 8);
    assert_int_equal(smi.nmig, 0);
    assert_string_equal(smi.gpu[7].name, "NVIDIA RTX PRO 6000 Blackwell Server Edition");
    assert_string_equal(smi.gpu[7].uuid, "GPU-f4c61521-240a-da09-2787-e576034e197e");
    assert_int_equal(smi.gpu[7].index, 7);
    parse_fixture(SMI "a100-sxm4-40gb_nvidia-smi-mig-lgip-cgi-lgi-lcip-L.txt", INV_SMI_MIXED);
    assert_int_equal(smi.ngpu, 1);
    assert_int_equal(smi.nmig, 4);
    assert_int_equal(smi.gpu[0].line, 326);
    assert_string_equal(smi.mig[1].profile, "1c.2g.10gb");
    assert_string_equal(smi.mig[1].uuid, "MIG-8970491e-16e0-5140-9f8f-d561baa3c186");
    assert_int_equal(smi.mig[3].device, 3);
    parse_fixture(SMI "h100-pcie-80gb_nvidia-smi-mig-lgip-lgipp-lgi-L.txt", INV_SMI_MIXED);
    assert_int_equal(smi.ngpu, 1);
    assert_int_equal(smi.nmig, 4);
    assert_string_equal(smi.gpu[0].name, "NVIDIA H100 PCIe");
    assert_string_equal(smi.mig[0].profile, "3g.40gb");
}

/* Every real output: no line that starts like -L is malformed. */
static void test_every_fixture(void **state)
{
    (void)state;
    static const char *const files[] = {
        "a100-40gb_mig-cgi-2x3g20gb.txt",
        "a100-40gb_mig-lgi-2x3g20gb.txt",
        "a100-40gb_nvidia-smi-mig-devices-2x3g20gb.txt",
        "a30-24gb_mig-lgip-all-used.txt",
        "a30-24gb_mig-lgipp.txt",
        "a30-24gb_nvidia-smi-mig-lgip-lgipp-lgi.txt",
        "cubecos-issue312_rtx-pro-6000-blackwell_mig-lgip-partial-wide.txt",
        "dcgm-exporter-issue544_h100-nvl_nvidia-smi-mig-enabled-partial.txt",
        "gpu-operator-pr1303_gb200_mig-lgip-partial.txt",
        "h100-80gb-hbm3_mig-lgip.txt",
        "h100-80gb-hbm3_mig-lgipp.txt",
        "h100-nvl-94gb_azure_nvidia-smi-mig-lgip-lgipp-smi.txt",
        "h100-sxm5-80gb_nvidia-smi-mig-lgip.txt",
        "mig-parted-issue120_h200-141gb_mig-lgip-partial.txt",
        "mig-parted-issue227_gb200_mig-lgip-partial-wide.txt"};
    char rel[256];
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(rel, sizeof(rel), SMI "%s", files[i]);
        parse_fixture(rel, INV_SMI_MIXED);
        assert_int_equal(smi.ngpu, 0);
    }
    parse_fixture(SMI "h100-80gb-hbm3_L.txt", 0);
    assert_int_equal(smi.ngpu, 1);
    assert_string_equal(smi.gpu[0].name, "NVIDIA H100 80GB HBM3");
}

/* Lines of other output that look a little like -L are not -L lines. */
static void test_other_lines(void **state)
{
    (void)state;
    static const char *const other[] = {"",
                                        "   ",
                                        "GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1",
                                        "GPU 00000000:17:00.0",
                                        "    MIG Mode",
                                        "    MIG Device",
                                        "GPU0     X      NV18",
                                        "| GPU  Name        Persistence-M | Bus-Id        Disp.A |",
                                        "  MIG 1g.10gb",
                                        "No devices were found",
                                        "GPU instances:",
                                        "MIG devices:"};
    struct inv_smi_line l;
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        assert_int_equal(inv_smi_line(other[i], strlen(other[i]), NULL, 1, &l, NULL), TS_OK);
        assert_int_equal(l.kind, INV_SMI_OTHER);
    }
    /* blanks, tabs and a CRLF line end around a GPU and a MIG line */
    const char *g = "\tGPU\t12:  NVIDIA H200  (UUID:\tGPU-1a-B2) \r";
    assert_int_equal(inv_smi_line(g, strlen(g), NULL, 1, &l, NULL), TS_OK);
    assert_int_equal(l.kind, INV_SMI_GPU);
    assert_int_equal(l.index, 12);
    assert_string_equal(l.name, "NVIDIA H200");
    assert_int_equal(l.name_col, 11);
    assert_string_equal(l.uuid, "GPU-1a-B2");
    assert_int_equal(l.uuid_col, 31);
    const char *m = "MIG 1g.10gb+me Device 6: (UUID: MIG-x)";
    assert_int_equal(inv_smi_line(m, strlen(m), NULL, 1, &l, NULL), TS_OK);
    assert_int_equal(l.kind, INV_SMI_MIG);
    assert_string_equal(l.name, "1g.10gb+me");
    assert_int_equal(l.index, 6);
    assert_string_equal(l.uuid, "MIG-x");
}

/* A malformed line: TS_INVALID at file:1:col with msg in the message. */
struct bad {
    const char *line;
    int col;
    const char *msg;
};

static const struct bad bad_lines[] = {
    {"GPU 0: NVIDIA H100 PCIe", 24, "expected '(UUID:', found end of line"},
    {"GPU 0: (UUID: GPU-1)", 8, "product name must be 1 to 127 characters"},
    {"GPU 0: NVIDIA H100 PCIe (UUID: GPU-1", 37, "expected ')' after the UUID, found end"},
    {"GPU 0: NVIDIA H100 PCIe (UUID: x)", 32, "expected a GPU UUID like GPU-"},
    {"GPU 0: NVIDIA H100 PCIe (UUID: GPU-)", 32, "expected a GPU UUID like GPU-"},
    {"GPU 0: NVIDIA H100 PCIe (UUID: GPU-1) x", 39, "expected the end of the line, found 'x'"},
    {"GPU 0: NVIDIA H100 PCIe (UUID:GPU-1)", 31, "expected a blank after '(UUID:'"},
    {"GPU 0: NVIDIA H100 PCIe (UUID: GPU-1/0)", 37, "expected ')' after the UUID, found '/0)'"},
    {"GPU 1025: NVIDIA H100 (UUID: GPU-1)", 5, "index 1025 is larger than 1024"},
    {"GPU 0: NVIDIA H\xc3\xa9 (UUID: GPU-1)", 8, "not printable ASCII (0xc3)"},
    {"  MIG 1g.10gb Device 0: (UUID: MIG-abc", 39, "expected ')' after the UUID"},
    {"  MIG 1g.10gb Device 1: (UUID: GPU-abcdef)", 32, "expected a MIG device UUID like MIG-"},
    {"  MIG 1g.10gb Device 2: (UUID: MIG-a b)", 38, "expected ')' after the UUID, found 'b)'"},
    {"  MIG 1g.10gb Device 3:", 24, "expected '(UUID:', found end of line"},
    {"  MIG 1G.10GB Device 0: (UUID: MIG-1)", 7, "expected a MIG profile name like 3g.40gb"},
    {"  MIG 1g.10gb Device x: (UUID: MIG-1)", 22, "expected a device index like 0:, found 'x:'"},
    {"  MIG 1g.10gb Device 0 (UUID: MIG-1)", 22, "expected a device index like 0:, found '0'"},
};

static void test_malformed_lines(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
        const struct bad *b = &bad_lines[i];
        struct ts_error e = {0};
        struct inv_smi_line l;
        ts_status st = inv_smi_line(b->line, strlen(b->line), "smi.txt", 1, &l, &e);
        if (st != TS_INVALID || e.column != b->col || strcmp(e.file, "smi.txt") != 0 ||
            !strstr(e.msg, b->msg))
            fail_msg("'%s': status %d at %d:%d '%s', want column %d '%s'", b->line, st, e.line,
                     e.column, e.msg, b->col, b->msg);
    }
}

/* Names and UUIDs at and past their limits. */
static void test_long_fields(void **state)
{
    (void)state;
    char line[512], name[INV_SMI_NAME_MAX + 1], uuid[INV_SMI_UUID_MAX + 1];
    struct inv_smi_line l;
    struct ts_error e = {0};
    memset(name, 'N', sizeof(name) - 1);
    name[INV_SMI_NAME_MAX - 1] = '\0';
    snprintf(line, sizeof(line), "GPU 0: %s (UUID: GPU-1)", name);
    assert_int_equal(inv_smi_line(line, strlen(line), NULL, 1, &l, &e), TS_OK);
    assert_int_equal(strlen(l.name), INV_SMI_NAME_MAX - 1);
    name[INV_SMI_NAME_MAX - 1] = 'N';
    name[INV_SMI_NAME_MAX] = '\0';
    snprintf(line, sizeof(line), "GPU 0: %s (UUID: GPU-1)", name);
    assert_int_equal(inv_smi_line(line, strlen(line), NULL, 1, &l, &e), TS_INVALID);
    assert_string_equal(e.msg, "product name must be 1 to 127 characters");
    memcpy(uuid, "GPU-", 4);
    memset(uuid + 4, 'a', sizeof(uuid) - 5);
    uuid[INV_SMI_UUID_MAX - 1] = '\0';
    snprintf(line, sizeof(line), "GPU 0: X (UUID: %s)", uuid);
    assert_int_equal(inv_smi_line(line, strlen(line), NULL, 1, &l, &e), TS_OK);
    uuid[INV_SMI_UUID_MAX - 1] = 'a';
    uuid[INV_SMI_UUID_MAX] = '\0';
    snprintf(line, sizeof(line), "GPU 0: X (UUID: %s)", uuid);
    assert_int_equal(inv_smi_line(line, strlen(line), NULL, 1, &l, &e), TS_INVALID);
    assert_int_equal(e.column, 17);
    assert_string_equal(e.msg, "UUID is longer than 95 characters");
}

/* Whole-output rules: the line of an error, MIG before GPU, blank lines. */
static void test_whole_output(void **state)
{
    (void)state;
    struct ts_error e = {0};
    static const char good[] = "\nGPU 0: A (UUID: GPU-0)\n  \r\nGPU 1: B (UUID: GPU-1)\n"
                               "  MIG 7g.80gb Device 0: (UUID: MIG-1)";
    assert_int_equal(inv_smi_parse(good, sizeof(good) - 1, "f", 0, &smi, &e), TS_OK);
    assert_int_equal(smi.ngpu, 2);
    assert_int_equal(smi.gpu[0].nmig, 0);
    assert_int_equal(smi.gpu[1].first_mig, 0);
    assert_int_equal(smi.gpu[1].nmig, 1);
    assert_int_equal(smi.mig[0].gpu, 1);
    assert_int_equal(smi.mig[0].line, 5);
    assert_int_equal(inv_smi_parse("", 0, "f", 0, &smi, &e), TS_OK);
    assert_int_equal(smi.ngpu, 0);
    static const char early[] = "junk\n  MIG 7g.80gb Device 0: (UUID: MIG-1)\n";
    assert_int_equal(inv_smi_parse(early, sizeof(early) - 1, "f", INV_SMI_MIXED, &smi, &e),
                     TS_INVALID);
    assert_int_equal(e.line, 2);
    assert_int_equal(e.column, 3);
    assert_non_null(strstr(e.msg, "MIG device line before any GPU line"));
    static const char bad3[] = "GPU 0: A (UUID: GPU-0)\nother output\nGPU 1: B (UUID: GPU-1\n";
    assert_int_equal(inv_smi_parse(bad3, sizeof(bad3) - 1, NULL, INV_SMI_MIXED, &smi, &e),
                     TS_INVALID);
    assert_string_equal(e.file, "");
    assert_int_equal(e.line, 3);
    assert_int_equal(e.column, 22);
}

/* One GPU or MIG device more than the limits is an error, not a cut. */
static void test_limits(void **state)
{
    (void)state;
    size_t cap = (size_t)(INV_SMI_GPUS_MAX + 1) * 64 + (size_t)(INV_SMI_MIGS_MAX + 1) * 64;
    char *text = malloc(cap);
    struct ts_error e = {0};
    assert_non_null(text);
    size_t n = 0;
    for (int i = 0; i <= INV_SMI_GPUS_MAX; i++)
        n += (size_t)snprintf(text + n, cap - n, "GPU %d: A (UUID: GPU-%d)\n", i, i);
    assert_int_equal(inv_smi_parse(text, n, "f", 0, &smi, &e), TS_TOO_LARGE);
    assert_int_equal(e.line, INV_SMI_GPUS_MAX + 1);
    assert_non_null(strstr(e.msg, "more than 64 GPUs"));
    n = (size_t)snprintf(text, cap, "GPU 0: A (UUID: GPU-0)\n");
    size_t at_max = 0;
    for (int i = 0; i <= INV_SMI_MIGS_MAX; i++) {
        at_max = n;
        n += (size_t)snprintf(text + n, cap - n, "  MIG 1g.5gb Device %d: (UUID: MIG-%d)\n", i % 8,
                              i);
    }
    assert_int_equal(inv_smi_parse(text, n, "f", 0, &smi, &e), TS_TOO_LARGE);
    assert_int_equal(e.line, INV_SMI_MIGS_MAX + 2);
    assert_non_null(strstr(e.msg, "more than 512 MIG devices"));
    assert_int_equal(inv_smi_parse(text, at_max, "f", 0, &smi, &e), TS_OK);
    assert_int_equal(smi.nmig, INV_SMI_MIGS_MAX);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_driver_535),  cmocka_unit_test(test_r450_uuids),
        cmocka_unit_test(test_sessions),    cmocka_unit_test(test_every_fixture),
        cmocka_unit_test(test_other_lines), cmocka_unit_test(test_malformed_lines),
        cmocka_unit_test(test_long_fields), cmocka_unit_test(test_whole_output),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
