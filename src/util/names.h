/*
 * names.h - tessera's own names on the wire, written once: the API group its
 * documents, labels and Kueue resources live under, and the apiVersion of
 * every document it reads or writes (Fleet, Tenant, PriceBook, GpuModel,
 * NodeInventory, the plan and invoice JSON). Labels built on the group are
 * in entitle/entitle.h.
 */
#ifndef TS_NAMES_H
#define TS_NAMES_H

#define TS_API_GROUP "tessera.dev"
#define TS_API_VERSION TS_API_GROUP "/v1alpha1"

#endif
