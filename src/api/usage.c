/*
 * usage.c - GET /api/v1/usage and /api/v1/invoices: GPU-hours per step and
 * the invoices of a period, counted from the metering store as `tessera
 * usage` and `tessera invoice` count them.
 */
#include "api/internal.h"

void api__usage(struct api__req *r) { api__fail(r, 404, NULL, "not yet served"); }
void api__invoices(struct api__req *r) { api__fail(r, 404, NULL, "not yet served"); }
