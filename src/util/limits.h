/*
 * limits.h - every cap tessera puts on its inputs and tables, in one place,
 * each with why it has the value it has. An input beyond a cap is an error
 * that names the cap (TS_TOO_LARGE), never cut silently.
 */
#ifndef TS_LIMITS_H
#define TS_LIMITS_H

/* MIG placements: memory slices of a card's placement grid. Real cards
 * have 8 (A100/H100/H200/B200) or 4 (A30); 32 leaves room for imported
 * models and fits a uint32_t bit set of starts. */
#define TS_MIG_GRID_MAX 32

#endif
