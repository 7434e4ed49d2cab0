/* The channels' power sums of polyrx channelize (sum |y|^2 per channel, in double), taken over
 * groups of outputs that span several of the pipeline's blocks and given bit for bit as one sum
 * over each whole group would be: four chains per channel (re^2 and im^2 of the outputs at
 * even and at odd positions of the group), added in the group's order, combined at its end as
 * (even re + odd re) + (even im + odd im), and a group of odd length adds its last output as
 * re^2 + im^2 to the even re chain. A float's square is exact in double, so a fused multiply-add
 * changes nothing. Each channel holds its last output back until the next block or the group's
 * end, where it is known whether that output is the group's odd last one. */
#ifndef CLI_CHAN_POWER_H
#define CLI_CHAN_POWER_H

#include "polyrx.h"

#include <stddef.h>
#include <stdint.h>

#define CHAN_POWER_ROWS 4 /* channels summed side by side */

/* One channel's sums in the current group (64 bytes: channels of different writers do not
 * share a cache line). */
typedef struct {
  _Alignas(64) double c[4]; /* re^2, im^2 of even positions; re^2, im^2 of odd positions */
  prx_cf32 held;            /* the last output added, held back (chan_power_group.holding) */
} chan_power;

/* Where a group stands, the same for every channel (they all get the same outputs). */
typedef struct {
  uint64_t count; /* outputs in the chains (the held one not counted) */
  int holding;    /* each channel holds one more output */
} chan_power_group;

/* Adds the k outputs y[c][0..k) of n channels (n <= CHAN_POWER_ROWS) to their sums p[c]. A
 * channel with a non-finite output has its non-finite outputs replaced by 0 (in y, before they
 * are written; counted into *zeroed) and is summed without them. Then chan_power_next. */
void chan_power_add(chan_power *const *p, prx_cf32 *const *y, size_t n, size_t k,
                    const chan_power_group *g, uint64_t *zeroed);
/* The group has k more outputs (after every channel's chan_power_add). */
void chan_power_next(chan_power_group *g, size_t k);
/* The group's sum of one channel; its chains start again (0 for an empty group). */
double chan_power_end(chan_power *p, const chan_power_group *g);
/* After every channel's chan_power_end: the next group starts. */
void chan_power_restart(chan_power_group *g);

#endif
