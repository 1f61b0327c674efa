/*
 * catalog.h - GPU models, their MIG profiles and valid placements.
 *
 * A catalog is a set of GpuModel documents (the same YAML envelope as the
 * spec). tessera ships one built in (catalog/builtin.yaml, compiled into the
 * binary; each model's comment there names its sources: the NVIDIA MIG
 * User Guide and published nvidia-smi mig -lgip/-lgipp outputs) and a
 * user can add or replace models with --catalog FILE, typically made by
 * `tessera catalog import` from the real `nvidia-smi mig -lgip/-lgipp`
 * output of their board and driver.
 *
 * Placement model (NVML's): a card's memory is a grid of `grid` units (8 on
 * most cards, 4 on A30, 12 on RTX PRO 6000). A profile occupies
 * `mem_units` consecutive units starting at one of its allowed starts.
 * A geometry is valid iff every instance sits at an allowed start, no two
 * overlap, no profile exceeds its max count, and compute slices add up to
 * at most the card's. Profile names are display only; profiles are keyed on
 * (compute slices, memory units, attributes).
 */
#ifndef CAT_CATALOG_H
#define CAT_CATALOG_H

#include <stddef.h>
#include "spec/schema.h"
#include "util/arena.h"
#include "util/error.h"

#include "util/limits.h"

struct cat_profile {
    struct spec_loc loc;
    const char *name;  /* e.g. "3g.40gb" (display only) */
    int id;            /* nvidia-smi / NVML profile ID on this board */
    int compute;       /* compute (SM) slices */
    int mem_units;     /* placement size in grid units */
    double memory_gib; /* usable memory, as nvidia-smi -lgip reports */
    int sms;           /* multiprocessors, 0 if unknown */
    int max_count;     /* instances of this profile a card can hold */
    const char *attrs; /* "" or "+me", "+gfx", "-me", "+me.all" */
    int *starts;       /* allowed start units, ascending */
    size_t nstarts;
};

struct cat_model {
    struct spec_loc loc;
    const char *name;           /* catalog key, e.g. "h100-80gb-sxm" */
    const char *display;        /* e.g. "NVIDIA H100 80GB HBM3" */
    const char **product_names; /* names NVML / nvidia-smi report for it */
    size_t nproduct_names;
    double memory_gib;         /* whole card */
    int sms;                   /* whole card, 0 if unknown */
    const char *arch;          /* volta, turing, ampere, ada, hopper, blackwell */
    int mig;                   /* 1 if MIG-capable */
    int grid;                  /* placement grid units (MIG cards) */
    int compute_slices;        /* compute slices of the full MIG card */
    int mps_max_clients;       /* 48 before Ampere (Volta), 64 after */
    const char *pci_device_id; /* e.g. "2330" (vendor 10DE), or NULL */
    struct cat_profile *profiles;
    size_t nprofiles;
};

struct cat_catalog {
    struct ts_arena arena;
    struct cat_model *models;
    size_t nmodels;
};

/* The built-in catalog; add_paths (may be 0) are loaded on top: a model of
 * the same name replaces the built-in one. Errors go to diag. */
ts_status cat_load(const char *const *add_paths, size_t npaths, struct cat_catalog **out,
                   struct ts_diag *diag);
/* Load GpuModel documents from text only (no built-ins); for tests/fuzzing. */
ts_status cat_load_text(const char *text, size_t len, const char *name, struct cat_catalog **out,
                        struct ts_diag *diag);
void cat_free(struct cat_catalog *c);

/* The built-in catalog's YAML text. */
extern const char cat_builtin_yaml[];

/* Model by catalog name, product name or display name (case-insensitive). */
const struct cat_model *cat_model_find(const struct cat_catalog *c, const char *name);
/* 1 if name names m as cat_model_find reads names: its key, display or
 * product name, in any case. */
int cat_model_named(const struct cat_model *m, const char *name);
/* The PriceBook's price for a GPU hour of model, in micro-units, or -1 when
 * pb (may be NULL) lists none; an entry names its model as cat_model_named
 * reads it ("L40S" prices l40s). Decide refuses a PriceBook listing one
 * model twice. */
struct spec_pricebook;
int64_t cat_price_of(const struct spec_pricebook *pb, const struct cat_model *model);

/* Profile by exact name, or by the (compute, memory GB, attrs) its name
 * encodes, so "7g.79gb" finds the catalog's "7g.80gb". NULL if none. */
const struct cat_profile *cat_profile_find(const struct cat_model *m, const char *name);

/* Plain profiles (no attributes) a planner may use, smallest first. */
int cat_profile_plain(const struct cat_profile *p);

/* 1 if the profile may start at unit. */
int cat_profile_allows(const struct cat_profile *p, int unit);

/* The full-card profile (all compute slices), or NULL. */
const struct cat_profile *cat_profile_full(const struct cat_model *m);

/* Geometry check: n instances (profile pointers into m, start units).
 * Returns TS_OK or fills err naming the first broken rule. */
ts_status cat_geometry_check(const struct cat_model *m, const struct cat_profile *const *profiles,
                             const int *starts, size_t n, struct ts_error *err);

/* The Markdown reference of the GpuModel format (for docs). */
void cat_doc_reference(struct ts_sbuf *out);

#endif
