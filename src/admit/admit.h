/*
 * admit.h - the admission policy: AdmissionReview v1 in, verdict out.
 *
 * admit_policy_build turns a plan into what each namespace may use: the
 * tenant that owns it, the DRA DeviceClasses (render's names) and device
 * plugin / KubeVirt resources it is entitled to with their per-claim and
 * per-container maxima, the sharing settings its claims must carry (MPS
 * thread percentage and pinned-memory ceilings, memory-fraction limits),
 * and the nodes its workloads were planned on. The policy copies what it
 * needs, so the plan may be freed once it is built. The policy is immutable
 * once built: many server threads read one policy at a time, and a reload
 * builds a new one.
 *
 * admit_review is a pure function of (policy, request body): it decodes the
 * AdmissionReview, checks Pods (every container, init and ephemeral
 * container), the pod templates of Deployments, ReplicaSets, StatefulSets,
 * DaemonSets, Jobs and CronJobs, and DRA ResourceClaims and
 * ResourceClaimTemplates, and writes the AdmissionReview response. A
 * malformed body (not JSON, not an AdmissionReview v1, missing uid, too
 * large or too deep, wrong types, invalid UTF-8, duplicate keys) gets HTTP
 * 400 and {"error": "<where>: <what>"}, where is a JSON path such as
 * request.object.spec.containers[2].env[0].value (or "body").
 * A denial is 200 with response.allowed false and status {code: 403,
 * message}: every problem found, joined with "; ", each naming its rule and
 * the fix. An allowed Pod, workload or claim carries the auditAnnotations
 * tenant, mechanism and profile. The choices the issue left open are in
 * review.c's and hatch.c's top comments.
 */
#ifndef ADMIT_ADMIT_H
#define ADMIT_ADMIT_H

#include <stddef.h>
#include "plan/plan.h"
#include "util/limits.h" /* ADMIT_BODY_MAX, ADMIT_DEPTH_MAX */
#include "util/sbuf.h"

struct admit_options {
    const char *const *runtime_classes; /* allowed runtimeClassName values, NULL-terminated;
                                           NULL = {"nvidia"} */
    const char *shim_path;              /* the one LD_PRELOAD value allowed; NULL: render's
                                           ENTITLE_SHIM_LIBRARY where the plan needs the
                                           shim, else none */
};

struct admit_policy;

ts_status admit_policy_build(const struct plan *p, const struct admit_options *opt,
                             struct admit_policy **out, struct ts_error *err);
void admit_policy_free(struct admit_policy *pol);

/* What happened, for logs and metrics. */
struct admit_verdict {
    int http_status; /* 200 for a review answered, 400 for a malformed body */
    int allowed;
    char uid[128];
    char rule[48];      /* the first rule that denied ("escape-hatch/privileged",
                               "entitlement/class", "no-tenant"...) or "" */
    char message[1024]; /* denial or 400 message */
    char tenant[64];    /* "" when the namespace belongs to no tenant */
    char kind[64];      /* request.kind.kind */
    char ns[128];
};

/* Decode body (len bytes; NULL with 0 is an empty body), decide, and append
 * the HTTP response body to out (initialised by the caller): an
 * AdmissionReview, or for 400 {"error": ...}. Fills every field of v.
 * Never aborts on any input. Thread-safe for concurrent calls on one
 * policy: no state outside the call. */
void admit_review(const struct admit_policy *pol, const char *body, size_t len, struct ts_sbuf *out,
                  struct admit_verdict *v);

#endif
