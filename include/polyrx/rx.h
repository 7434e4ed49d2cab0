/* polyrx receiver: a wideband stream in, every listed QPSK carrier's bits out.
 *
 * The chain: a polyphase channelizer of K channels, spacing fs/K, decimation D = K/2 (so each
 * channel runs at 2 fs/K), with the receiver's own prototype, wider than the channelizer's
 * default: flat (to 0.01 dB) within +-0.8 spacing of a channel's centre, at least 80 dB down
 * beyond +-1.2 spacing. Each carrier is taken from the channel whose centre is nearest to it
 * (at most half a spacing away), so a carrier whose occupied band Rs (1 + rolloff) is at most
 * 0.6 spacing lies inside the flat band whole, and what aliases into the channel (the
 * transition band, folded at +-1 spacing) lands outside it. A per-carrier mixer (the bank's
 * mix_hz) brings the carrier to 0 Hz and the open-loop demodulator (polyrx/qpsk.h) does the
 * rest, CFO up to its acquisition range (0.12 Rs by default) on top of the given frequency.
 * Carriers with the same demodulator settings (symbol rate, roll-off, ambiguity mode, pilots)
 * share one demodulator bank (polyrx/qpsk_bank.h); only the channels that hold a carrier are
 * computed.
 *
 * Alignment: the prototype has M = K P + 1 taps, so its group delay (M - 1) / 2 = P D input
 * samples is exactly P channel outputs; the receiver drops those and, at the end of the stream,
 * keeps exactly ceil(N / D) channel samples for N input samples. Channel sample j is then the
 * input's instant j D, each carrier's symbol timeline starts at input sample 0, and the bits are
 * the demodulator's symbol window (polyrx/qpsk.h: instants in [-1/16, N' / sps - 1/16), N' the
 * channel samples) applied to the carrier: a generated carrier (polyrx/sim.h) comes out with
 * exactly the symbols it sent, no extra symbol at either end.
 *
 * Streaming: prx_rx_execute takes any number of input samples, in the configured format, and
 * slices them into blocks of block_samples; each carrier's output goes to the on_output callback
 * as it is completed, from the calling thread, in carrier order within each block. The
 * concatenated output of a carrier does not depend on the thread count, nor on how the input
 * was cut into calls beyond the channelizer's float rounding (chan.h): LLRs agree to about
 * 1e-6 relative, the bits are the same except for a symbol exactly on a decision boundary.
 * prx_rx_flush ends the stream (the filter and demodulator tails), after which a new stream
 * can start; the stats are kept until prx_rx_reset.
 *
 * Backends: on the CPU the channelizer and the demodulator banks run on the worker threads. On
 * CUDA the receiver is device-resident: each block of input crosses to the GPU once (a DMA
 * where the caller's buffer is pinned, e.g. from prx_pipe_host_alloc or cudaHostAlloc; a staged
 * copy otherwise), the channelizer writes the selected channels into device rows, the
 * demodulator banks (polyrx/qpsk_bank.h, CUDA backend) read them there, and only the bits (and
 * LLRs when asked) come back; the channel samples come back only when on_channel is set.
 * Within a call the banks are called once per batch of blocks (about one CFO span of samples
 * per carrier; the outputs then come per batch) and the copies and the channelizer run up to a
 * batch ahead of them (device memory: 2^25 input samples, at most 512 MiB, and two row
 * buffers, at most 1 GiB), so the copy engine keeps going while the banks demodulate; every
 * block of a call is delivered before the call returns, and the caller's input is no longer read
 * once it has. The bits on CUDA are the CPU's within the GPU
 * demodulator's agreement: identical at Es/N0 >= 12 dB, at least 99.99 % identical below
 * (float rounding in the channelizer and the demodulator's per-sample arithmetic); LLRs within
 * 1e-3 relative (L2 over a carrier; test_rx_cuda measures a few 1e-5).
 */
#ifndef POLYRX_RX_H
#define POLYRX_RX_H

#include "polyrx/chan.h"
#include "polyrx/core.h"
#include "polyrx/qpsk.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Occupied bandwidth Rs (1 + rolloff) of a carrier, at most this fraction of the spacing fs/K. */
#define PRX_RX_MAX_OCCUPIED 0.6

typedef struct {
  double freq;                    /* Hz: offset of the carrier from the stream's centre, within
                                     [-fs/2, fs/2] (the same meaning as prx_sim_carrier.freq) */
  double symbol_rate;             /* Rs in Hz (> 0) */
  double rolloff;                 /* RRC roll-off in (0, 1] (default 0.35) */
  prx_qpsk_ambiguity ambiguity;   /* default PRX_QPSK_DIFFERENTIAL */
  prx_qpsk_modulation modulation; /* default PRX_QPSK_PLAIN; PRX_QPSK_PI4 not with pilots */
  unsigned pilot_period;          /* PRX_QPSK_PILOTS: frame length in symbols */
  unsigned pilot_len;             /* PRX_QPSK_PILOTS: pilot symbols per frame */
} prx_rx_carrier;

prx_rx_carrier prx_rx_carrier_default(void);

/* One carrier's new output: n_symbols data symbols, their bits (n_bytes bytes: 2 per symbol
 * unpacked, the whole bytes completed when packed) and, when asked for, their LLRs (2 per
 * symbol, else NULL). The pointers are valid during the call only. */
typedef void (*prx_rx_output_fn)(void *user, size_t carrier, const uint8_t *bits, size_t n_bytes,
                                 const float *llrs, size_t n_symbols);

/* One carrier's channel samples (cf32, at the channel rate 2 fs / K): the channel nearest to
 * it, before the carrier's mixer, aligned with the input (sample j is the input's instant
 * j K/2; ceil(N / (K/2)) samples in all for N input samples). Valid during the call only. */
typedef void (*prx_rx_channel_fn)(void *user, size_t carrier, const prx_cf32 *samples, size_t n);

typedef struct {
  double sample_rate;             /* fs in Hz (> 0) */
  double center_freq;             /* Hz, for reports (default 0) */
  unsigned channels;              /* K: even, 4 .. 65536 (default 1024) */
  unsigned taps_per_channel;      /* P: the prototype has K P + 1 taps (default 14) */
  double atten_db;                /* prototype stop-band attenuation (default 80) */
  prx_format in_format;           /* cf32 (default), ci16, ci8 or cu8 */
  const prx_rx_carrier *carriers; /* copied by create */
  size_t n_carriers;              /* 1 .. 65536 */
  unsigned block_symbols;         /* demodulator block (0: its default, 512) */
  unsigned cfo_span_symbols;      /* demodulator CFO span (0: its default, 8192) */
  int packed;                     /* 0: unpacked bits (default), 1: packed (MSB first) */
  int llrs;                       /* 1: LLRs to on_output too (default 0) */
  prx_rx_output_fn on_output;     /* required */
  void *user;                     /* passed to on_output and on_channel */
  prx_rx_channel_fn on_channel;   /* optional: each carrier's channel samples, before its
                                     output of the same block (default NULL) */
  int threads;                    /* CPU worker threads, 0: all cores; output identical */
  prx_backend backend;            /* AUTO (default): CUDA when present, else CPU; the
                                     channelizer and the demodulators run there (see above) */
  int device;                     /* CUDA device ordinal (default 0) */
  size_t block_samples;           /* input samples per internal block (0: 262144); on CUDA,
                                     larger blocks (2^20 to 2^22) cost less per sample, and a
                                     call of several blocks overlaps them */
} prx_rx_config;

prx_rx_config prx_rx_config_default(void);

typedef struct prx_rx prx_rx;

/* Whether carrier c of cfg can be received (the band, the occupied bandwidth limit, the
 * demodulator's own limits): PRX_OK, or PRX_ERR_INVALID with one line naming the limit. */
prx_status prx_rx_check_carrier(const prx_rx_config *cfg, const prx_rx_carrier *c);

/* The channel of cfg's bank a carrier at offset freq (Hz from the centre) is taken from: the
 * nearest centre, its index k in 0..K-1, and in *centre (when not NULL) that centre's offset in
 * Hz (within half a spacing of freq; for freq near +-fs/2, beyond the band's edge). */
unsigned prx_rx_channel_of(const prx_rx_config *cfg, double freq, double *centre);
/* The receiver's channelizer for cfg: K channels, D = K/2, its prototype (K P + 1 Kaiser taps at
 * atten_db, -6 dB at one spacing: flat to 0.8 spacing), cfg's input format, threads, backend
 * and device, the n_select channels select names (in that order), in blocks of block_samples
 * (0: the channelizer's choice). prx_rx_create makes its own this way; a caller that wants the
 * receiver's channels of some samples (polyrx rx's modulation check) makes another. */
prx_status prx_rx_make_channelizer(const prx_rx_config *cfg, const unsigned *select,
                                   size_t n_select, size_t block_samples, prx_chan **out);

/* Validates everything (every carrier as prx_rx_check_carrier), designs the prototype, creates
 * the channelizer and one demodulator bank per group of carriers with the same settings.
 * Errors: PRX_ERR_INVALID (naming the parameter or carrier), PRX_ERR_NOMEM, PRX_ERR_NODEVICE
 * (CUDA asked for and none usable). */
prx_status prx_rx_create(const prx_rx_config *cfg, prx_rx **out);
void prx_rx_destroy(prx_rx *rx); /* accepts NULL */
/* Forgets the stream and the stats, as if just created. */
void prx_rx_reset(prx_rx *rx);

/* Feeds n samples (in_format) of the wideband stream; completed output goes to on_output. */
prx_status prx_rx_execute(prx_rx *rx, const void *in, size_t n);
/* Ends the stream: every carrier's remaining symbols go to on_output; the stream restarts. */
prx_status prx_rx_flush(prx_rx *rx);

/* Carrier c's running demodulator stats and where the receiver takes it from. */
typedef struct {
  prx_qpsk_stats demod; /* as prx_qpsk_get_stats (cfo_hz is relative to freq) */
  double freq;          /* Hz: the configured offset from the centre */
  unsigned channel;     /* the channel index k it is taken from */
  double channel_freq;  /* Hz: that channel's centre offset from the stream's centre */
  double mix_hz;        /* Hz: freq - channel_freq (the mixer before the demodulator) */
  unsigned group;       /* the demodulator bank it belongs to */
} prx_rx_stats;
prx_status prx_rx_get_stats(const prx_rx *rx, size_t c, prx_rx_stats *out);

size_t prx_rx_n_carriers(const prx_rx *rx);
size_t prx_rx_n_groups(const prx_rx *rx);
/* The demodulators' CFO span in symbols (every group's: prx_rx_config's, rounded up to whole
 * blocks); 0 for NULL or a receiver without carriers. */
unsigned prx_rx_cfo_span(const prx_rx *rx);
prx_backend prx_rx_backend(const prx_rx *rx); /* CPU or CUDA, after AUTO resolved */
double prx_rx_channel_rate(const prx_rx *rx); /* 2 fs / K in Hz */
/* The prototype in use (K P + 1 taps, sum 1). */
const float *prx_rx_taps(const prx_rx *rx, size_t *n);
/* Input samples consumed since create or reset, and the seconds spent in the channelizer and
 * in the demodulators (wall clock, the calling thread's view; on CUDA the channelizer's share
 * holds queueing the copies and the channelizer and the wait at the call's end, the
 * demodulators' the banks' calls and the bits' copies back, with the waits for the copies and
 * channelizer still in flight then). */
void prx_rx_get_times(const prx_rx *rx, uint64_t *samples, double *chan_seconds,
                      double *demod_seconds);

#ifdef __cplusplus
}
#endif
#endif
