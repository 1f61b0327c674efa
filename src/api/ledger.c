/*
 * ledger.c - GET /api/v1/ledger/holders, /ledger/history and /violations:
 * the custody ledger, each entry shown only to who may see its tenant.
 */
#include "api/internal.h"

void api__holders(struct api__req *r) { api__fail(r, 404, NULL, "not yet served"); }
void api__history(struct api__req *r) { api__fail(r, 404, NULL, "not yet served"); }
void api__violations(struct api__req *r) { api__fail(r, 404, NULL, "not yet served"); }
