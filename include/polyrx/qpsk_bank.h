/* polyrx QPSK demodulator bank: one object demodulates C channels (1 to several thousand) with
 * one configuration, each channel with its own streaming state, per-block estimates and running
 * stats. It is the open-loop demodulator of polyrx/qpsk.h applied to every row that the
 * channelizer writes, and each channel's output is exactly what a prx_qpsk object with the same
 * configuration gives for that row alone (same bits, same LLRs, same estimates).
 *
 * Input: C rows of n_in samples each, row c at in + c * in_stride samples (prx_chan_execute's
 * out[channel * out_stride + j]); cf32 or cf16 rows (also ci16, ci8, cu8 on the CPU backend).
 * prx_qpsk_bank_execute reads host rows; prx_qpsk_bank_execute_device reads device rows.
 *
 * Output per channel c: data bits at bits + c * bits_stride bytes, unpacked (one byte 0/1 per
 * bit) or packed (8 bits per byte, first bit in the MSB; the bits that do not fill a byte wait
 * for the next call, and flush writes the last byte padded with zeros), and optionally LLRs at
 * llrs + c * llr_stride floats (2 per data symbol). Streaming follows the single demodulator's
 * rules: the concatenated output of a channel does not depend on how its rows were cut into calls,
 * every symbol instant before the end of the stream is output once, prx_qpsk_bank_flush ends the
 * stream.
 *
 * Backends: CPU (the channels spread over a pool of worker threads, one single-channel
 * demodulator state per channel) and CUDA. With the CUDA backend the device-resident call takes
 * device pointers and a stream; see docs/ARCHITECTURE.md, "Demodulator bank", for what runs where.
 */
#ifndef POLYRX_QPSK_BANK_H
#define POLYRX_QPSK_BANK_H

#include "polyrx/core.h"
#include "polyrx/qpsk.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  prx_qpsk_config demod; /* every channel's demodulator (prx_qpsk_config_default() filled in):
                            its in_format, threads, on_block and user are not used (the bank's
                            fields below replace them) */
  unsigned channels;     /* C, 1 .. PRX_QPSK_BANK_MAX_CHANNELS */
  prx_format row_format; /* cf32 (default) or cf16; ci16, ci8, cu8 on the CPU backend */
  int packed;            /* 0: unpacked bits (default), 1: packed */
  int threads;           /* CPU worker threads over channels, 0: all cores; output identical
                            for any count */
  prx_backend backend;   /* AUTO (default): CUDA when present, else CPU */
  int device;            /* CUDA device ordinal (default 0) */
  const double *mix_hz;  /* [channels] or NULL (default): channel c's samples are mixed down by
                            mix_hz[c] Hz before it is demodulated, i.e. stream sample n (n = 0
                            at the stream's start, again after each flush) is multiplied by
                            exp(-2 pi i mix_hz[c] n / sample_rate): a carrier off its channel's
                            centre is brought to 0 Hz (|mix_hz[c]| <= sample_rate / 2; copied
                            by create). The output is that of a prx_qpsk given the mixed row */
} prx_qpsk_bank_config;

#define PRX_QPSK_BANK_MAX_CHANNELS 65536u

prx_qpsk_bank_config prx_qpsk_bank_config_default(void);

typedef struct prx_qpsk_bank prx_qpsk_bank;

/* Validates the configuration (the demodulator's checks plus the bank's), creates the channels'
 * states. The memory grows with C: each channel keeps one CFO span of samples and its filters.
 * Errors: PRX_ERR_INVALID (naming the parameter), PRX_ERR_NOMEM, PRX_ERR_NODEVICE when CUDA was
 * asked for and none is usable, PRX_ERR_UNSUPPORTED (cf16 rows on the CPU backend are fine; an
 * integer row format on the CUDA backend is not). */
prx_status prx_qpsk_bank_create(const prx_qpsk_bank_config *cfg, prx_qpsk_bank **out);
void prx_qpsk_bank_destroy(prx_qpsk_bank *b); /* accepts NULL */
/* Forgets every channel's stream and stats, as if just created. */
void prx_qpsk_bank_reset(prx_qpsk_bank *b);

/* Where one call writes (host memory for prx_qpsk_bank_execute, device memory for bits and llrs
 * in prx_qpsk_bank_execute_device; n_symbols and n_bytes are host arrays in both). */
typedef struct {
  uint8_t *bits;      /* channel c at bits + c * bits_stride; NULL: no bits */
  size_t bits_stride; /* bytes; at least prx_qpsk_bank_bits_capacity() */
  float *llrs;        /* channel c at llrs + c * llr_stride; NULL: no LLRs */
  size_t llr_stride;  /* floats; at least 2 * prx_qpsk_bank_max_symbols() */
  size_t *n_symbols;  /* [C]: data symbols written per channel (required) */
  size_t *n_bytes;    /* [C] or NULL: bytes of bits written per channel (2 n_symbols unpacked;
                         the whole bytes completed when packed) */
} prx_qpsk_bank_out;

/* Upper bound on the data symbols per channel that the next execute with n_in samples per row
 * (or flush, n_in = 0 and flush = 1) writes, and the bytes of bits that needs. */
size_t prx_qpsk_bank_max_symbols(const prx_qpsk_bank *b, size_t n_in, int flush);
size_t prx_qpsk_bank_bits_capacity(const prx_qpsk_bank *b, size_t n_in, int flush);

/* Feeds n_in samples of every channel: row c at (row_format *)in + c * in_stride (in samples,
 * >= n_in). Writes each channel's completed data symbols as described in out. Capacity errors
 * (PRX_ERR_CAPACITY) are reported before anything is consumed. */
prx_status prx_qpsk_bank_execute(prx_qpsk_bank *b, const void *in, size_t in_stride, size_t n_in,
                                 const prx_qpsk_bank_out *out);
/* Ends every channel's stream (like prx_qpsk_flush) and writes what is left; the packed mode's
 * last partial byte is padded with zeros. The streams restart; the stats are kept. */
prx_status prx_qpsk_bank_flush(prx_qpsk_bank *b, const prx_qpsk_bank_out *out);

/* Device-resident variant (CUDA backend only, PRX_ERR_UNSUPPORTED otherwise): d_in, out->bits
 * and out->llrs are device pointers, stream is a cudaStream_t (NULL: the default stream). The
 * counts (out->n_symbols, out->n_bytes) are written on the host, so the call returns once they
 * are known; the bits and LLRs are ordered on stream. */
prx_status prx_qpsk_bank_execute_device(prx_qpsk_bank *b, const void *d_in, size_t in_stride,
                                        size_t n_in, const prx_qpsk_bank_out *out, void *stream);
prx_status prx_qpsk_bank_flush_device(prx_qpsk_bank *b, const prx_qpsk_bank_out *out, void *stream);
/* The device call for a caller whose rows keep the stream's history in place (the receiver's
 * channelizer writes each batch after the samples before it). Row c holds, just before d_in + c *
 * in_stride, the `kept` samples of the stream that the bank was given last (the end of the
 * earlier calls' rows; fewer at the stream's start), so in_stride >= kept + n_in where C > 1. The
 * bank reads every span in place and keeps no samples of its own, so no sample is copied; it
 * reads the rows on stream (they stay unchanged until stream passes the call). Once such a call
 * ran, the stream's recent samples are in the caller's rows only: each next call must be this
 * one with prx_qpsk_bank_history(b) samples kept (all of the stream's where it is shorter); one
 * that lacks samples the bank reads, or a plain call (prx_qpsk_bank_execute, _flush,
 * _execute_device, _flush_device), fails with PRX_ERR_INVALID before consuming anything.
 * flush = 1 ends the stream: d_in at the stream's end with the kept samples before it (n_in
 * ignored); it, or prx_qpsk_bank_reset, ends the obligation. Where prx_qpsk_bank_history(b) is 0
 * (the staged CUDA path) the bank keeps its history itself and the kept samples are not read.
 * The outputs are those of prx_qpsk_bank_execute_device on the same chunks; PRX_ERR_UNSUPPORTED
 * on the CPU backend. */
prx_status prx_qpsk_bank_execute_device_kept(prx_qpsk_bank *b, const void *d_in, size_t in_stride,
                                             size_t n_in, size_t kept, int flush,
                                             const prx_qpsk_bank_out *out, void *stream);
/* The samples a call of prx_qpsk_bank_execute_device_kept reads before its chunk, at most (a
 * CFO span's window, fixed at create); 0 where the bank keeps its history on the host (the CUDA
 * path staged through the host, the CPU backend) and for NULL. */
size_t prx_qpsk_bank_history(const prx_qpsk_bank *b);

/* Channel c's block estimates from the last execute/flush (as prx_qpsk_block_estimates) and its
 * running stats (as prx_qpsk_get_stats). NULL / PRX_ERR_INVALID for c >= C. With the CUDA backend
 * the last calls' reports can still be pending in the bank (written into the channels lazily,
 * docs/ARCHITECTURE.md, "Demodulator bank"): these calls write them first, so, const as the bank
 * is here, they modify it: never call them on one bank from two threads at once, nor beside
 * another call on it. */
const prx_qpsk_block *prx_qpsk_bank_block_estimates(const prx_qpsk_bank *b, unsigned c, size_t *n);
prx_status prx_qpsk_bank_get_stats(const prx_qpsk_bank *b, unsigned c, prx_qpsk_stats *out);

unsigned prx_qpsk_bank_channels(const prx_qpsk_bank *b);
prx_backend prx_qpsk_bank_backend(const prx_qpsk_bank *b); /* CPU or CUDA, after AUTO resolved */
/* The channels' CFO span in symbols (prx_qpsk_cfo_span: the configuration's, a whole number of
 * blocks); 0 for NULL. */
unsigned prx_qpsk_bank_cfo_span(const prx_qpsk_bank *b);

#ifdef __cplusplus
}
#endif
#endif
