/*
 * units.h - the fixed-point units tessera counts in, written once.
 *
 * Card shares and utilisation are integers in parts per million (a whole
 * card is TS_PPM), so GPU-hours add up exactly; money and hours are
 * integers in micro-units (price_micro, hours_uh) and print with six
 * decimals.
 */
#ifndef TS_UNITS_H
#define TS_UNITS_H

/* Parts per million in one whole. */
#define TS_PPM 1000000
/* Micro-units in one unit. */
#define TS_MICRO 1000000

#endif
