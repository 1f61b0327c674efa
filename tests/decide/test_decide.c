/*
 * test_decide.c - the decision table rule by rule (R1..R6), explicit
 * isolation requests checked against contracts, the errors that tell a
 * user what to change, and the mechanism predicates every module shares.
 */
#include "helpers.h"

#include <stdio.h>
#include <string.h>
#include "entitle/entitle.h"

#define DOC "---\napiVersion: tessera.dev/v1alpha1\n"

/* One node of `gpus` (e.g. "{model: l40s, count: 2}") with node extras,
 * one tenant with `tenant` extras and one workload `w`. */
static const char *spec1(const char *node, const char *gpus, const char *tenant, const char *w)
{
    static char buf[8192];
    snprintf(buf, sizeof(buf),
             DOC "kind: Fleet\nmetadata: {name: f}\nspec:\n  nodes:\n  - name: n1\n%s"
                 "    gpus: [%s]\n" DOC
                 "kind: Tenant\nmetadata: {name: t}\nspec:\n  namespaces: [t]\n%s"
                 "  workloads:\n  - {name: w, %s}\n",
             node, gpus, tenant, w);
    return buf;
}

struct rule_case {
    const char *node, *gpus, *tenant, *workload;
    const char *mech, *profile, *rule, *reason_part;
    int boundary;
};

#define H100 "{model: h100-80gb-sxm, count: 2}"
#define L40S "{model: l40s, count: 2}"

static const struct rule_case rules[] = {
    /* R1: VMs */
    {"    vgpuLicensed: true\n", "{model: h100-80gb-sxm, count: 1}", "  contract: vm\n",
     "kind: inference, memoryHighWaterGiB: 15", "vgpu", "1g.20gb", "R1", "MIG-backed vGPU", 1},
    /* no licence: a MIG instance reaches a VM only as a MIG-backed vGPU, so
     * the VM gets the whole card by PCI pass-through (before: "mig", 1g.20gb,
     * which render gave as the vGPU type NVIDIA_H100-1-20C, issue 30) */
    {"", H100, "  contract: vm\n", "kind: inference, memoryHighWaterGiB: 15", "whole", NULL, "R1",
     "the whole GPU is passed through (a MIG instance reaches a VM only as", 1},
    {"", L40S, "  contract: vm\n", "kind: inference, memoryHighWaterGiB: 15", "whole", NULL, "R1",
     "whole GPU is passed through", 1},
    /* a licensed node without MIG: a vGPU there would be a time-sliced type
     * the size of the whole card, which render does not name (before: the
     * plan said vgpu and render passed the card through, issue 30), so the
     * card is passed through and the plan says so */
    {"    vgpuLicensed: true\n", L40S, "  contract: shared-trusted\n",
     "kind: inference, memoryHighWaterGiB: 15, vm: true", "whole", NULL, "R1",
     "no vGPU-licensed node has a MIG card with a profile that holds 15 GiB (a vGPU is "
     "MIG-backed here; without MIG it would be the whole card): the whole GPU is passed through",
     1},
    /* R2: whole GPUs */
    {"", H100, "  contract: dedicated\n", "kind: fine-tune, memoryHighWaterGiB: 40", "whole", NULL,
     "R2", "fine-tune needs whole-card bandwidth; 40 GiB -> 1 whole h100-80gb-sxm", 1},
    {"", H100, "  contract: shared-trusted\n",
     "kind: inference, memoryHighWaterGiB: 60, gpus: 2, peerToPeer: true", "whole", NULL, "R2",
     "needs 2 GPUs per replica with peer-to-peer", 1},
    {"", "{model: h200-141gb, count: 1}", "  contract: isolated\n",
     "kind: inference, memoryHighWaterGiB: 100, kvCacheGiB: 39.9", "whole", NULL, "R2",
     "memory above the largest MIG profile", 1},
    /* R3: hardware boundary */
    {"", H100, "  contract: isolated\n",
     "kind: inference, memoryHighWaterGiB: 30, kvCacheGiB: 8, p99Ms: 250, trust: untrusted", "mig",
     "3g.40gb", "R3",
     "untrusted data with a 250 ms p99 needs a hardware boundary; 30 GiB + 8 GiB KV cache = 38 "
     "GiB -> 3g.40gb on h100-80gb-sxm (39.50 GiB, 1.50 GiB headroom)",
     1},
    {"", H100, "  contract: shared-trusted\n  dataClass: regulated\n",
     "kind: batch, memoryHighWaterGiB: 12", "mig", "1g.20gb", "R3", "regulated data", 1},
    {"", H100, "  contract: isolated\n",
     "kind: inference, memoryHighWaterGiB: 12, p99Ms: 80, computeSlices: 3", "mig", "3g.40gb", "R3",
     "and 3 compute slices -> 3g.40gb", 1},
    {"", "{model: a30, count: 1}", "  contract: dedicated\n",
     "kind: inference, memoryHighWaterGiB: 5", "mig", "1g.6gb", "R3", "dedicated-compute contract",
     1},
    {"", L40S, "  contract: isolated\n",
     "kind: inference, memoryHighWaterGiB: 12, trust: untrusted", "whole", NULL, "R3",
     "no MIG-capable card in the fleet, so a whole GPU", 1},
    {"    cudaVersion: \"13.4\"\n", L40S, "  contract: isolated\n",
     "kind: inference, memoryHighWaterGiB: 12, p99Ms: 100", "memory-fraction", NULL, "R3",
     "enforced by the driver (every node with l40s runs CUDA 13.4+) (not a security boundary)", 0},
    /* R4: MPS for trusted latency-sensitive work */
    {"", L40S, "  contract: shared-trusted\n", "kind: inference, memoryHighWaterGiB: 9, p99Ms: 40",
     "mps", NULL, "R4", "9 GiB -> 9 GiB pinned-memory cap, 20% of SMs on l40s", 0},
    /* R5: memory-enforced fraction */
    {"    cudaVersion: \"12.2\"\n", L40S, "  contract: shared-trusted\n",
     "kind: batch, memoryHighWaterGiB: 7.1", "memory-fraction", NULL, "R5",
     "7.1 GiB -> 7.25 GiB memory-enforced fraction of l40s, enforced by tessera's shim", 0},
    /* R6: time-slicing */
    {"", L40S, "  contract: best-effort\n", "kind: batch, memoryHighWaterGiB: 7", "time-slicing",
     NULL, "R6", "best-effort batch work time-slices: no isolation and no guarantee", 0},
    {"", H100, "  contract: shared-trusted\n", "kind: dev, memoryHighWaterGiB: 7", "time-slicing",
     NULL, "R6", "best-effort dev work", 0},
    /* explicit requests the contract allows */
    {"", H100, "  contract: shared-trusted\n",
     "kind: batch, memoryHighWaterGiB: 7, isolation: time-slicing", "time-slicing", NULL, "R6",
     "isolation: time-slicing was requested", 0},
    {"", H100, "  contract: shared-trusted\n",
     "kind: batch, memoryHighWaterGiB: 7, isolation: whole", "whole", NULL, "R2",
     "isolation: whole was requested", 1},
};

static void test_rules(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
        const struct rule_case *c = &rules[i];
        struct th_job j;
        th_run_text(&j, spec1(c->node, c->gpus, c->tenant, c->workload), PLAN_SOLVER_AUTO);
        if (j.st != TS_OK)
            fail_msg("case %zu: %s", i, th_first_error(&j));
        const struct decide_row *r = th_row(&j, "t", "w");
        assert_non_null(r);
        if (strcmp(decide_mech_names[r->mech], c->mech) != 0 || strcmp(r->rule, c->rule) != 0 ||
            !strstr(r->reason, c->reason_part))
            fail_msg("case %zu: got %s %s '%s'", i, decide_mech_names[r->mech], r->rule, r->reason);
        if (c->profile)
            assert_string_equal(r->profile->name, c->profile);
        else
            assert_null(r->profile);
        assert_int_equal(r->security_boundary, c->boundary);
        th_free(&j);
    }
}

struct error_case {
    const char *node, *gpus, *tenant, *workload, *message;
};

static const struct error_case errors[] = {
    {"", H100, "  contract: shared-trusted\n",
     "kind: inference, memoryHighWaterGiB: 7, isolation: cuda-streams",
     "test.yaml:17:5: Tenant/t.spec.workloads[0]: isolation: CUDA streams are not a tenancy "
     "mechanism"},
    {"", H100, "  contract: dedicated\n", "kind: inference, memoryHighWaterGiB: 7, isolation: mps",
     "isolation: mps is not allowed for tenant 't': a dedicated contract promises compute no "
     "other process shares"},
    {"", H100, "  contract: shared-trusted\n",
     "kind: batch, memoryHighWaterGiB: 7, trust: untrusted, isolation: time-slicing",
     "untrusted, confidential or regulated data needs a hardware boundary (mig or whole)"},
    {"", H100, "  contract: isolated\n", "kind: inference, memoryHighWaterGiB: 7, isolation: mps",
     "an isolated (SLA) contract cannot share SMs with other processes"},
    {"", H100, "  contract: isolated\n", "kind: inference, memoryHighWaterGiB: 95",
     "needs 95.0 GiB, more than any card in the fleet (largest 79.6 GiB); set gpus: 2"},
    {"", H100, "  contract: isolated\n", "kind: inference, memoryHighWaterGiB: 5, gpuModel: l4",
     "gpuModel: no node in the fleet has a 'l4'"},
    {"", H100, "  contract: isolated\n", "kind: inference, memoryHighWaterGiB: 5, gpuModel: h900",
     "gpuModel: unknown GPU model 'h900'"},
    {"    mps: false\n", L40S, "  contract: shared-trusted\n",
     "kind: inference, memoryHighWaterGiB: 5, p99Ms: 10",
     "MPS needs a node that allows it (mps: true)"},
    {"", "{model: h100-sxm, count: 1}", "  contract: isolated\n",
     "kind: inference, memoryHighWaterGiB: 5",
     "test.yaml:8:12: Fleet/f.spec.nodes[0].gpus[0]: model: unknown GPU model 'h100-sxm' (known: "
     "a100-40gb"},
    {"    canary: 1g.5gb\n", H100, "  contract: isolated\n",
     "kind: inference, memoryHighWaterGiB: 5", "canary: h100-80gb-sxm has no MIG profile '1g.5gb'"},
    {"    canary: 1g.10gb\n", L40S, "  contract: isolated\n",
     "kind: inference, memoryHighWaterGiB: 5",
     "canary: node 'n1' has no MIG-capable GPU to keep a '1g.10gb' slice free on"},
    {"", H100, "  contract: isolated\n",
     "kind: inference, memoryHighWaterGiB: 30, isolation: mig, "
     "computeSlices: 8",
     "isolation: mig was requested but no MIG-capable card"},
    /* a VM asking for a MIG instance or a pool share: refused, never a
     * device render cannot give it */
    {"", H100, "  contract: vm\n", "kind: inference, memoryHighWaterGiB: 15, isolation: mig",
     "isolation: mig cannot be given to a VM"},
    {"", H100, "  contract: shared-trusted\n",
     "kind: inference, memoryHighWaterGiB: 15, vm: true, isolation: time-slicing",
     "isolation: time-slicing cannot be given to a VM"},
};

static void test_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
        const struct error_case *c = &errors[i];
        struct th_job j;
        th_run_text(&j, spec1(c->node, c->gpus, c->tenant, c->workload), PLAN_SOLVER_AUTO);
        assert_int_equal(j.st, TS_INVALID);
        if (!strstr(th_first_error(&j), c->message))
            fail_msg("case %zu: got '%s'", i, th_first_error(&j));
        assert_null(j.d);
        th_free(&j);
    }
}

/* The located form of a decide error: file:line:col of the workload. */
static void test_error_location(void **state)
{
    (void)state;
    struct th_job j;
    th_run_text(&j,
                spec1("", H100, "  contract: dedicated\n",
                      "kind: inference, memoryHighWaterGiB: 7, isolation: mps"),
                PLAN_SOLVER_AUTO);
    assert_int_equal(j.diag.count, 1);
    const struct ts_error *e = &j.diag.items[0];
    assert_string_equal(e->file, "test.yaml");
    assert_int_equal(e->line, 17);
    assert_int_equal(e->column, 5);
    assert_string_equal(e->path, "Tenant/t.spec.workloads[0]");
    th_free(&j);
}

/* One rule per question, the same truth table at every site that asks. */
static void test_mech_predicates(void **state)
{
    (void)state;
    static const struct {
        int mech, shares, memory_cap, plan_mode;
        const char *strategy;
    } rows[] = {
        {DECIDE_WHOLE, 0, 0, PLAN_WHOLE, NULL},
        {DECIDE_MIG, 0, 0, PLAN_MIG, NULL},
        {DECIDE_MPS, 1, 1, PLAN_MPS, "MPS"},
        {DECIDE_TIME_SLICING, 1, 0, PLAN_TIME_SLICING, "TimeSlicing"},
        {DECIDE_MEMORY_FRACTION, 1, 1, PLAN_MEMORY_FRACTION, "TimeSlicing"},
        {DECIDE_VGPU, 0, 0, PLAN_VGPU, NULL},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        assert_int_equal(decide_mech_shares_card(rows[i].mech), rows[i].shares);
        assert_int_equal(decide_mech_has_memory_cap(rows[i].mech), rows[i].memory_cap);
        assert_int_equal(plan_mode_shares_card(rows[i].plan_mode), rows[i].shares);
        const char *s = entitle_sharing_strategy(rows[i].mech);
        if (rows[i].strategy)
            assert_string_equal(s, rows[i].strategy);
        else
            assert_null(s);
    }
    assert_int_equal(plan_mode_shares_card(PLAN_FREE), 0);
    assert_int_equal(decide_mech_shares_card(-1), 0);
    char buf[64];
    entitle_kueue_resource("tessera-h100-mps", buf, sizeof(buf));
    assert_string_equal(buf, "tessera.dev/tessera-h100-mps");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_error_location),
        cmocka_unit_test(test_mech_predicates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
