/* prx_rx_multi's parts (not installed): the per-carrier stitcher and the NUMA placement. */
#ifndef PRX_RX_MULTI_INTERNAL_H
#define PRX_RX_MULTI_INTERNAL_H

#include "polyrx/rx_multi.h"

#include <stddef.h>
#include <stdint.h>

/* One carrier's output of one worker's stream: unpacked bits (2 per symbol), LLRs when asked. */
typedef struct {
  uint8_t *bits;
  float *llrs;
  size_t n_sym, cap_sym;
  int with_llrs;
} rxm_run;

prx_status rxm_run_append(rxm_run *r, const uint8_t *bits, const float *llrs, size_t n_sym);
void rxm_run_free(rxm_run *r);

/* The seam between two consecutive workers' runs of one carrier: the index in prev whose
 * symbol is next's symbol m_cut, found by matching next's w symbols before m_cut against prev
 * around j_nominal (+- range), and the quarter-turn (0..3) that takes next's bits to prev's
 * (only searched when quarter_turns is set: coherent decisions without pilots). Returns 1 and
 * *j, *turn when the best match differs in at most an eighth of the window's bits, else 0. */
int rxm_find_seam(const rxm_run *prev, const rxm_run *next, size_t m_cut, size_t w,
                  size_t j_nominal, size_t range, int quarter_turns, size_t *j, unsigned *turn);

/* Applies `turn` quarter-turns (multiplication by j^turn) to symbols [from, n_sym) of r: the
 * Gray bits (b0, b1) of s j are (!b1, b0), their LLRs (-l1, l0). */
void rxm_rotate(rxm_run *r, size_t from, unsigned turn);

/* NUMA node of the PCI display or 3-D controller of NVIDIA's that is the ordinal-th in bus
 * order (CUDA's order on a host of identical GPUs), -1 when unknown or the host has one node. */
int rxm_gpu_numa_node(int ordinal);
/* Pins the calling thread to the CPUs of NUMA node `node`; 0 on success. */
int rxm_pin_to_node(int node);

#endif
