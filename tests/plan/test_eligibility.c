/*
 * test_eligibility.c - node eligibility (issue 12): mixed fleets the other
 * tests do not contain (some nodes vGPU-licensed, some on CUDA 12.2, some on
 * 13.4, some without MPS). Every placement honours decide_card_refuses,
 * every reason is true of the fleet, and a workload no node can host gets
 * an error naming the constraint. th_run_text runs the independent checker
 * (th_check_plan) on every plan, which is what fails when a row lands on a
 * node that may not host it.
 */
#include "helpers.h"

#include <stdio.h>
#include <string.h>
#include "entitle/entitle.h"

#define DOC "---\napiVersion: tessera.dev/v1alpha1\n"

static char *spec(const char *nodes, const char *tenant, const char *workloads)
{
    static char buf[8192];
    snprintf(buf, sizeof(buf),
             DOC "kind: Fleet\nmetadata: {name: f}\nspec:\n  nodes:\n%s" DOC
                 "kind: Tenant\nmetadata: {name: t}\nspec:\n  namespaces: [t]\n%s"
                 "  workloads:\n%s",
             nodes, tenant, workloads);
    return buf;
}

/* The node of the first card holding tenant t's workload w, or NULL. */
static const char *node_of(const struct plan *p, const char *w)
{
    for (size_t i = 0; i < p->ngpus; i++)
        for (size_t k = 0; k < p->gpus[i].ninst; k++)
            if (p->gpus[i].inst[k].row && strcmp(p->gpus[i].inst[k].row->workload->name, w) == 0)
                return p->gpus[i].node->name;
    return NULL;
}

static void run_ok(struct th_job *j, const char *yaml)
{
    th_run_text(j, yaml, PLAN_SOLVER_AUTO);
    if (j->st != TS_OK)
        fail_msg("%s", th_first_error(j));
}

static void expect_error(const char *yaml, const char *part)
{
    struct th_job j;
    th_run_text(&j, yaml, PLAN_SOLVER_AUTO);
    assert_int_not_equal(j.st, TS_OK);
    if (!strstr(th_first_error(&j), part))
        fail_msg("expected '%s', got '%s'", part, th_first_error(&j));
    th_free(&j);
}

/* The licensed node holds an A100, the first node an unlicensed H100: the
 * VM gets MIG-backed vGPU on the A100, and no reason says no node is
 * licensed. */
static void test_vgpu_on_the_licensed_model(void **state)
{
    (void)state;
    struct th_job j;
    run_ok(&j,
           spec("  - name: a\n    gpus: [{model: h100-80gb-sxm, count: 1}]\n"
                "  - name: b\n    vgpuLicensed: true\n"
                "    gpus: [{model: a100-80gb, count: 1}]\n",
                "  contract: vm\n", "  - {name: w, kind: inference, memoryHighWaterGiB: 15}\n"));
    const struct decide_row *r = th_row(&j, "t", "w");
    assert_string_equal(decide_mech_names[r->mech], "vgpu");
    assert_string_equal(r->model->name, "a100-80gb");
    assert_null(strstr(r->reason, "no node is vGPU-licensed"));
    assert_string_equal(node_of(j.plan, "w"), "b");
    th_free(&j);
}

/* One H100 licensed, one not: vGPU replicas only on the licensed one. */
static void test_vgpu_only_on_licensed_nodes(void **state)
{
    (void)state;
    const char *nodes = "  - name: a\n    gpus: [{model: h100-80gb-sxm, count: 1}]\n"
                        "  - name: b\n    vgpuLicensed: true\n"
                        "    gpus: [{model: h100-80gb-sxm, count: 1}]\n";
    struct th_job j;
    run_ok(&j, spec(nodes, "  contract: vm\n",
                    "  - {name: w, kind: inference, memoryHighWaterGiB: 15, replicas: 3, "
                    "spread: none}\n"));
    assert_string_equal(decide_mech_names[th_row(&j, "t", "w")->mech], "vgpu");
    for (size_t i = 0; i < j.plan->ngpus; i++)
        if (j.plan->gpus[i].ninst)
            assert_string_equal(j.plan->gpus[i].node->name, "b");
    th_free(&j);
    /* two replicas on distinct cards: only one card is licensed */
    expect_error(spec(nodes, "  contract: vm\n",
                      "  - {name: w, kind: inference, memoryHighWaterGiB: 15, replicas: 2}\n"),
                 "vGPU needs a node with vgpuLicensed: true: 1 of 2 nodes with h100-80gb-sxm "
                 "qualify");
}

/* Reasons for VMs without vGPU say why, truthfully. */
static void test_vm_reasons(void **state)
{
    (void)state;
    struct th_job j;
    run_ok(&j, spec("  - name: a\n    vgpuLicensed: true\n"
                    "    gpus: [{model: h100-80gb-sxm, count: 2}]\n",
                    "  contract: vm\n",
                    "  - {name: w, kind: training, memoryHighWaterGiB: 100, gpus: 2}\n"));
    const struct decide_row *r = th_row(&j, "t", "w");
    assert_null(strstr(r->reason, "no node is vGPU-licensed"));
    assert_non_null(strstr(r->reason, "a vGPU is one GPU and it needs 2 per replica"));
    th_free(&j);
    expect_error(spec("  - name: a\n    gpus: [{model: h100-80gb-sxm, count: 1}]\n",
                      "  contract: vm\n",
                      "  - {name: w, kind: inference, memoryHighWaterGiB: 15, isolation: vgpu}\n"),
                 "isolation: vgpu was requested but no node is vGPU-licensed");
}

/* H100s on CUDA 12.2 and 13.4: a fraction cannot count on the driver, so
 * the shim enforces it everywhere (and render writes its limit). */
static void test_fraction_on_mixed_drivers(void **state)
{
    (void)state;
    struct th_job j;
    run_ok(&j, spec("  - name: old\n    cudaVersion: \"12.2\"\n"
                    "    gpus: [{model: h100-80gb-sxm, count: 1}]\n"
                    "  - name: new\n    cudaVersion: \"13.4\"\n"
                    "    gpus: [{model: h100-80gb-sxm, count: 1}]\n",
                    "  contract: shared-trusted\n",
                    "  - {name: w, kind: batch, memoryHighWaterGiB: 30, replicas: 2}\n"));
    const struct decide_row *r = th_row(&j, "t", "w");
    assert_string_equal(decide_mech_names[r->mech], "memory-fraction");
    assert_int_equal(r->enforce, DECIDE_ENFORCE_SHIM);
    assert_true(entitle_needs_shim(r));
    if (!strstr(r->reason, "tessera's shim (1 of 2 nodes with h100-80gb-sxm runs CUDA below 13.4)"))
        fail_msg("reason: %s", r->reason);
    th_free(&j);
    /* every node on 13.4: the driver, and only there */
    run_ok(&j, spec("  - name: new\n    cudaVersion: \"13.4\"\n"
                    "    gpus: [{model: h100-80gb-sxm, count: 2}]\n",
                    "  contract: shared-trusted\n",
                    "  - {name: w, kind: batch, memoryHighWaterGiB: 30, replicas: 2}\n"));
    assert_int_equal(th_row(&j, "t", "w")->enforce, DECIDE_ENFORCE_DRIVER);
    th_free(&j);
}

/* The first node forbids MPS: MPS clients go to the node that allows it. */
static void test_mps_only_where_allowed(void **state)
{
    (void)state;
    const char *nodes = "  - name: nomps\n    mps: false\n    gpus: [{model: l40s, count: 2}]\n"
                        "  - name: ok\n    gpus: [{model: l40s, count: 1}]\n";
    struct th_job j;
    run_ok(&j, spec(nodes, "  contract: shared-trusted\n",
                    "  - {name: w, kind: inference, memoryHighWaterGiB: 9, p99Ms: 50, "
                    "replicas: 2, spread: none}\n"));
    assert_string_equal(decide_mech_names[th_row(&j, "t", "w")->mech], "mps");
    assert_string_equal(node_of(j.plan, "w"), "ok");
    th_free(&j);
    expect_error(spec(nodes, "  contract: shared-trusted\n",
                      "  - {name: w, kind: inference, memoryHighWaterGiB: 9, p99Ms: 50, "
                      "replicas: 2}\n"),
                 "MPS needs a node with mps: true: 1 of 2 nodes with l40s qualify");
}

/* gpuModel picks a card without MIG in a fleet that has MIG cards. */
static void test_no_mig_reason_is_true(void **state)
{
    (void)state;
    struct th_job j;
    run_ok(&j, spec("  - name: a\n    gpus: [{model: h100-80gb-sxm, count: 1}, "
                    "{model: l40s, count: 1}]\n",
                    "  contract: isolated\n",
                    "  - {name: w, kind: inference, memoryHighWaterGiB: 12, trust: untrusted, "
                    "gpuModel: l40s}\n"));
    const struct decide_row *r = th_row(&j, "t", "w");
    assert_null(strstr(r->reason, "no MIG-capable card in the fleet"));
    assert_non_null(strstr(r->reason, "its gpuModel(s) not MIG-capable"));
    th_free(&j);
}

/* The checker itself fails on a plan that breaks a node rule. */
static void test_checker_catches_ineligible(void **state)
{
    (void)state;
    struct th_job j;
    run_ok(&j,
           spec("  - name: a\n    gpus: [{model: h100-80gb-sxm, count: 1}]\n"
                "  - name: b\n    vgpuLicensed: true\n"
                "    gpus: [{model: h100-80gb-sxm, count: 1}]\n",
                "  contract: vm\n", "  - {name: w, kind: inference, memoryHighWaterGiB: 15}\n"));
    assert_null(th_check_plan(j.plan));
    /* move the licensed card (with its vGPU instance) onto node a */
    for (size_t i = 0; i < j.plan->ngpus; i++)
        if (j.plan->gpus[i].ninst)
            j.plan->gpus[i].node = &j.model->fleet->nodes[0];
    const char *bad = th_check_plan(j.plan);
    assert_non_null(bad);
    assert_non_null(strstr(bad, "not vgpuLicensed"));
    th_free(&j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vgpu_on_the_licensed_model),
        cmocka_unit_test(test_vgpu_only_on_licensed_nodes),
        cmocka_unit_test(test_vm_reasons),
        cmocka_unit_test(test_fraction_on_mixed_drivers),
        cmocka_unit_test(test_mps_only_where_allowed),
        cmocka_unit_test(test_no_mig_reason_is_true),
        cmocka_unit_test(test_checker_catches_ineligible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
