/* Internal pieces of the test-signal generator (src/sim): the counter-based random numbers,
 * the polyphase pulse table and the per-carrier state. */
#ifndef PRX_SIM_INTERNAL_H
#define PRX_SIM_INTERNAL_H

#include "polyrx/sim.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* fractional phases of the pulse table (linear interpolation) */
#define SIM_PHASES 256
/* the rotator is re-anchored from an exact phase every this many samples */
#define SIM_NCO_LEN 1024
/* samples per internal block (the symbol windows are sized for it) */
#define SIM_BLOCK 65536
/* samples per parallel task */
#define SIM_TASK 4096
/* taps are padded to a multiple of this (one AVX vector of floats) */
#define SIM_LANES 8
/* from this many samples per symbol on, a carrier uses the symbol-major kernel */
#define SIM_MAJOR_SPS 48.0

/* A vector of SIM_LANES floats (GCC/Clang vector extension; lowered to whatever the target has).
 * Lane-wise arithmetic is plain IEEE float arithmetic, so results are the same on any target. */
typedef float sim_v8 __attribute__((vector_size(SIM_LANES * sizeof(float))));
static inline sim_v8 sim_v8_load(const float *p) {
  sim_v8 v;
  memcpy(&v, p, sizeof v); /* unaligned load */
  return v;
}
static inline float sim_v8_sum(sim_v8 v) {
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

/* Output j (0-based) of SplitMix64 seeded with seed: a pure function of (seed, j), so any
 * sample or bit can be computed without running the generator up to it. */
static inline uint64_t sim_splitmix64(uint64_t seed, uint64_t j) {
  uint64_t z = seed + (j + 1) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Data bit i of the stream seeded with seed (documented in polyrx/sim.h). */
static inline unsigned sim_data_bit(uint64_t seed, uint64_t i) {
  return (unsigned)(sim_splitmix64(seed, i >> 6) >> (i & 63)) & 1u;
}

/* Pulse table: SIM_PHASES rows, row r for the fraction mu = r / SIM_PHASES; each row holds
 * `taps` values (taps = span rounded up to SIM_LANES, leading entries zero) followed by `taps`
 * slopes (the next row, mu + 1/SIM_PHASES, minus this one), so one row is all a sample needs.
 * Entry i of a row multiplies symbol nw - taps + 1 + i, where nw = floor(w), mu = w - nw and
 * w = (sample position in symbols) + span/2. The pulse is the RRC truncated to
 * [-span/2, span/2) and rescaled to unit energy. */
size_t sim_pulse_taps(unsigned span);
void sim_pulse_table(double beta, unsigned span, float *table);

/* One carrier's state. The symbol window holds the symbols that the samples of the current
 * block reach, made in order by sim.c; the kernels read it. */
typedef struct {
  prx_sim_carrier cfg;
  uint64_t seed;    /* effective data seed */
  double r;         /* symbols per sample: Rs (1 + ppm 1e-6) / fs */
  double w0;        /* span/2 - timing_offset, so w(k) = k r + w0 (see sim_pulse_table) */
  double nu;        /* carrier cycles per sample: f / fs */
  double amp;       /* A_c */
  int symbol_major; /* 1: sim_kernel's symbol-major path (samples per symbol >= SIM_MAJOR_SPS) */
  size_t taps;      /* span rounded up to SIM_LANES */
  float *table;     /* SIM_PHASES rows of 2 * taps floats (sim_pulse_table) */
  float *columns;   /* symbol-major only: per real tap t, its SIM_PHASES values then slopes */
  prx_cf32 *rot;    /* exp(i 2 pi nu j), j < SIM_NCO_LEN */
  prx_cf32 *pilots; /* the pilot word (pilot_len symbols) */
  uint64_t next;    /* symbols made so far (= symbols started) */
  uint64_t data;    /* data symbols among them */
  unsigned g;       /* differential state: the last data symbol is ref * j^g */
  prx_cf32 diff_symbols[4]; /* ref * j^g, g = 0..3 */
  uint64_t word;    /* the output of the bit stream that holds the current data symbol's bits */
  float *sre, *sim; /* symbol window: entry i is symbol base + i; negative indices are 0 */
  int64_t base;
  size_t count, cap;
  uint64_t bits_taken;
} sim_carrier;

/* Scratch of one task for the symbol-major kernel: for the window ending at symbol nw, the sums
 * over the window's symbols of each table row's values (p) and slopes (s), re and im. */
typedef struct {
  float *pr, *pi, *sr, *si; /* SIM_PHASES each */
  int64_t nw;
} sim_rows;

/* floor(w(k)) for sample k: the newest symbol that sample k reaches. */
int64_t sim_symbol_at(const sim_carrier *c, uint64_t k);
/* Adds carrier c's samples k0 .. k0+n-1 to out (its symbol window must cover them). */
void sim_carrier_add(const sim_carrier *c, sim_rows *rows, uint64_t k0, size_t n, prx_cf32 *out);
/* Fills c->columns from c->table (symbol-major carriers). */
void sim_columns(sim_carrier *c);

/* Complex Gaussian noise with E|n|^2 = 2 sigma^2 for samples k0 .. k0+n-1 of the stream
 * seeded with seed, written to out (overwriting). */
void sim_noise(uint64_t seed, float sigma, uint64_t k0, size_t n, prx_cf32 *out);

#endif
