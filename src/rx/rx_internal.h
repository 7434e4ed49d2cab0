/* The receiver's state, shared by its front end and CPU path (rx.c) and its device-resident
 * CUDA path (rx_gpu.c). Not installed. */
#ifndef PRX_RX_INTERNAL_H
#define PRX_RX_INTERNAL_H

#include "polyrx/chan.h"
#include "polyrx/qpsk_bank.h"
#include "polyrx/rx.h"
#include "rx_gpu.h"

#define RX_DEFAULT_BLOCK 262144
#define RX_MAX_CARRIERS 65536

typedef struct {
  prx_qpsk_bank *bank;
  size_t first_row, n; /* its rows in the channelizer's output */
  uint8_t *bits;
  float *llrs;
  size_t bits_stride, llr_stride; /* current capacities (bytes, floats) */
  size_t *n_symbols, *n_bytes;
  double *mix_hz;
} rx_group;

struct prx_rx {
  prx_rx_config cfg;
  prx_rx_carrier *car;
  size_t n_car;
  unsigned K, D, P;
  double spacing, chan_rate;
  prx_chan *chan;
  rx_group *g;
  size_t n_groups;
  size_t *group_of, *row_of; /* per carrier: its group and its row within the group */
  unsigned *channel;         /* per carrier: channel index k */
  double *channel_freq;      /* per carrier: the nearest centre (unwrapped), Hz */
  prx_cf32 *rows;            /* n_car rows of stride samples */
  size_t stride, block;
  /* this stream */
  uint64_t in_stream; /* input samples since the stream's start */
  uint64_t drop_left; /* channel outputs of the group delay still to drop */
  uint64_t emitted;   /* channel outputs given to the banks */
  /* since create or reset */
  uint64_t samples;
  double t_chan, t_demod;
  prx_rx_setup_times setup; /* create's parts (rx_gpu.h) */
  struct rx_gpu *gpu;       /* the device-resident path (rx_gpu.c), NULL unless the CUDA backend */
};

/* The most channel outputs per row that n input samples give the channelizer: ceil(n / D) + 1. */
size_t rx_most_outputs(const prx_rx *rx, size_t n);
/* A row pitch of at least need samples: a multiple of 8 (64-byte rows). */
size_t rx_row_pitch(size_t need);
/* Grows group g's output strides to what a call with n_in samples per row (or the flush) may
 * write, and with host its host output buffers (bits, LLRs) with them (the GPU path brings the
 * bits back into buffers of its own). */
prx_status rx_ensure_capacity(const prx_rx *rx, rx_group *g, size_t n_in, int flush, int host);
/* The same for a call that writes syms symbols per row at most. */
prx_status rx_ensure_symbols(const prx_rx *rx, rx_group *g, size_t syms, int host);
/* The part of n_out new channel outputs per row that goes to the banks: the first *skip drop
 * what remains of the group delay, then *m outputs, capped so that the stream's outputs given
 * to the banks stay within limit (the stream's end); updates drop_left. */
void rx_take(prx_rx *rx, size_t n_out, uint64_t limit, size_t *skip, size_t *m);
/* Group g's bank output into bits and llrs (NULL: none), host or device buffers of the group's
 * strides, the counts into the group's host arrays. */
prx_qpsk_bank_out rx_bank_out(const rx_group *g, uint8_t *bits, float *llrs);
/* Every carrier's output of the banks' last call (the groups' host buffers), in carrier order. */
void rx_deliver(prx_rx *rx);
/* The same from the output fields (bits, llrs, strides, counts) of groups[0 .. n_groups - 1]
 * in place of the groups' own (the GPU path's pinned rows). */
void rx_deliver_from(prx_rx *rx, const rx_group *groups);
/* on_channel (when set) for every carrier, in carrier order: m channel samples of its row in
 * host rows laid out as rx->rows (the group delay already skipped). */
void rx_deliver_channels(prx_rx *rx, const prx_cf32 *rows, size_t m);

#endif
