/* polyrx channelizer: a polyphase filter bank (PFB) that splits a wideband complex stream
 * into K channels of spacing fs/K, decimated by D (D = K/2: 2x oversampled, 50% overlapping
 * channels; D = K: critically sampled).
 *
 * Definition (every backend computes exactly this, to float rounding). With the prototype
 * low-pass filter h[0..M-1] (sum h = 1, so unit gain), input x[n] (x[n] = 0 for n < 0) and
 * output index j >= 0, channel k is
 *
 *     y_k[j] = sum_{m=0}^{M-1} h[m] * x[jD - m] * exp(-i 2 pi k (jD - m) / K)
 *
 * i.e. the input mixed down by k fs/K (phase referenced to input sample 0), low-pass filtered
 * and kept at every D-th sample. Output j is produced as soon as input sample jD has been
 * given, so after N input samples exactly ceil(N / D) outputs exist. The group delay is
 * (M - 1) / 2 input samples. prx_chan_flush() then feeds M - 1 zeros (the filter's tail),
 * emits the outputs that completes, and resets the stream.
 *
 * Channel k is centred at fc + k fs / K, wrapped into [fc - fs/2, fc + fs/2) (FFT order).
 */
#ifndef POLYRX_CHAN_H
#define POLYRX_CHAN_H

#include "polyrx/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct prx_chan prx_chan;

/* The layout of execute's outputs (prx_chan_config.layout). ROWS: one row per selected channel,
 * out[s * out_stride + j] (channel-major). FRAMES: one frame per output index, every selected
 * channel side by side, out[j * out_stride + s] (the FFT's own order: the CPU backend writes
 * each frame contiguously instead of transposing it into rows; for callers that read every
 * channel of an output together, or a range of channels of each). The same values either way. */
typedef enum { PRX_CHAN_ROWS = 0, PRX_CHAN_FRAMES = 1 } prx_chan_layout;

typedef struct {
  unsigned channels;         /* K; any even K >= 2 for D = K/2, any K >= 1 for D = K */
  unsigned decimation;       /* D; 0 means K/2. K/D must be an integer: 1 or 2 */
  unsigned taps_per_channel; /* P, the prototype has M = K*P taps (default 16) */
  double atten_db;           /* Kaiser design: stop-band attenuation in dB (default 80) */
  double cutoff;             /* Kaiser design: cut-off (-6 dB) in channel spacings (default 0.5) */
  const float *taps;         /* optional caller prototype (copied); NULL: Kaiser design */
  size_t n_taps;             /* its length M (any M >= 1); it is used as given, not rescaled */
  const unsigned *select;    /* optional channel subset, output in this order; NULL: all K */
  size_t n_select;
  prx_format in_format;   /* cf32 (default), ci16, ci8 or cu8 */
  prx_format out_format;  /* cf32 (default), or cf16 or ci16 (CUDA backend only): cf16 the
                             IEEE binary16 nearest (ties to even); ci16 round(x * 32768), ties
                             to even, saturated to [-32768, 32767] (docs/FORMATS.md) */
  double sample_rate;     /* fs in Hz, for reports (default 1) */
  double center_freq;     /* fc in Hz, for reports (default 0) */
  int threads;            /* CPU worker threads; 0: all cores. Output is identical for any count */
  prx_backend backend;    /* AUTO (default): CUDA when present, else CPU */
  int device;             /* CUDA device ordinal (default 0) */
  size_t block_samples;   /* input samples per internal block (0: backend's choice); execute
                             accepts any n_in and slices it into such blocks */
  int power_sums;         /* CUDA backend only (PRX_ERR_UNSUPPORTED otherwise): execute,
                             execute_zeros and flush also form each channel's power sums on the
                             device (prx_chan_power_take); prx_chan_execute_device is then
                             refused. Default 0 */
  int stream_out;         /* CPU backend: non-zero writes the outputs with streaming
                             (non-temporal) stores, which go to memory without fetching the
                             lines or keeping them in this core's caches: for outputs that
                             go to memory (every channel's whole output), not for a buffer
                             reused every call, which the caches keep (bench/RESULTS.md). The
                             same values; other backends ignore it. Default 0 */
  prx_chan_layout layout; /* where execute writes the outputs (PRX_CHAN_ROWS, the default, or
                             PRX_CHAN_FRAMES: CPU backend only, PRX_ERR_UNSUPPORTED with the
                             CUDA backend); see prx_chan_execute. Frames of every channel in
                             order (pitch K) are written by the FFT itself, without streaming
                             stores whatever stream_out says */
} prx_chan_config;

prx_chan_config prx_chan_config_default(void);

/* Validates the configuration, designs the prototype, allocates and plans everything.
 * Errors: PRX_ERR_INVALID (with a message naming the parameter), PRX_ERR_NOMEM,
 * PRX_ERR_NODEVICE when CUDA was asked for explicitly and none is usable.
 *
 * Resource caps, checked before anything is allocated (PRX_ERR_INVALID with the figures):
 * - memory: about 28 M + 8 B bytes (M prototype taps, B = block_samples, or min(4 M, 2^22)
 *   when 0) must be at most 4 GiB and at most half the machine's physical memory;
 * - work per input sample: W = M/D + (K/D) log2 K multiply-adds, at most 16384;
 * - work independent of the input's length (filling the filter at the start, flushing it at
 *   the end): M W, at most 2^34 multiply-adds (seconds, not hours, on one core).
 * So K = 65536 with P = 4096 (2^28 taps, about 7 GiB, 2^41 to fill) is refused at once. */
prx_status prx_chan_create(const prx_chan_config *cfg, prx_chan **out);
void prx_chan_destroy(prx_chan *c); /* accepts NULL */

/* Outputs per channel that the next prx_chan_execute() with n_in samples will produce. */
size_t prx_chan_output_count(const prx_chan *c, size_t n_in);
/* Outputs per channel that prx_chan_flush() will produce now. */
size_t prx_chan_flush_count(const prx_chan *c);

/* Feeds n_in samples (in the configured in_format) from host memory. Writes the outputs of
 * selected channel s (s-th entry of select) to out[s * out_stride + 0 .. n_out-1], in
 * out_format (out is prx_cf32 * for cf32). out_stride is in samples and must be at least
 * prx_chan_output_count(c, n_in) (PRX_ERR_CAPACITY otherwise). *n_out receives the count.
 * With the FRAMES layout, output j of selected channel s goes to out[j * out_stride + s] for
 * j = 0 .. n_out-1: out_stride (the frame's pitch) must be at least the number of selected
 * channels (PRX_ERR_CAPACITY otherwise) and out must hold prx_chan_output_count(c, n_in)
 * frames; the same for execute_zeros and flush. */
prx_status prx_chan_execute(prx_chan *c, const void *in, size_t n_in, void *out, size_t out_stride,
                            size_t *n_out);
/* Feeds n_zeros zero samples, exactly as execute of n_zeros samples of value 0 (exact zeros
 * in any input format, which cu8 has not): a partial tail of the filter, in pieces a caller
 * can interrupt. */
prx_status prx_chan_execute_zeros(prx_chan *c, size_t n_zeros, void *out, size_t out_stride,
                                  size_t *n_out);
/* Ends the stream: emits the filter tail (see above) like execute, then resets. */
prx_status prx_chan_flush(prx_chan *c, void *out, size_t out_stride, size_t *n_out);
/* Forgets all history, as if just created (the power sums' window and the sums not yet taken
 * stay: prx_chan_power_window). */
void prx_chan_reset(prx_chan *c);

/* Device-resident variant (CUDA backend only, PRX_ERR_UNSUPPORTED otherwise): in and out are
 * device pointers, work is queued on stream (a cudaStream_t; NULL for the default stream)
 * and this call returns without waiting for it. Same layout and counts as execute. Speed:
 * let the call's rows start on 64 bytes (d_out aligned so, out_stride a multiple of 8 cf32 or
 * 16 cf16 samples; calls that append to the same rows keep that with inputs of a multiple of
 * 8 D samples): rows 16 bytes off the 32-byte sectors cost the H200 a fifth of its rate
 * (bench/GPU_NOTES.md, "Output rows and sectors"). An object with ci16 output or power_sums
 * refuses it (PRX_ERR_UNSUPPORTED): their post pass runs in the host calls only. */
prx_status prx_chan_execute_device(prx_chan *c, const void *d_in, size_t n_in, void *d_out,
                                   size_t out_stride, size_t *n_out, void *stream);

/* Power sums (power_sums set; PRX_ERR_UNSUPPORTED otherwise). The host calls (execute,
 * execute_zeros, flush) then also, for every selected channel s and every output j of theirs
 * (j counted from the stream's start, as in the definition) with from <= j < to (the window:
 * every output until set):
 * - an output with a non-finite part (a float overflow in the filter) is written as 0 and
 *   counted as non-finite, not summed;
 * - |y_s[j]|^2 is added, in double, to the channel's sum: each launch of the device (a block of
 *   the host pipeline) sums its outputs in a fixed tree order, and the launches' sums are added
 *   in stream order, so the figures are the same on every run of the same calls;
 * - with ci16 output, every part that is saturated is counted.
 * Outside the window only the zeroing applies; from >= to sums nothing. prx_chan_reset (and
 * flush's reset) keeps the window and the sums not yet taken, so a flush's sums are taken after
 * it. */
prx_status prx_chan_power_window(prx_chan *c, uint64_t from, uint64_t to);
/* Gives the sums formed since the last take (sums[s] for each selected channel s; NULL to drop
 * them) and the counts of non-finite outputs and saturated parts (either may be NULL), and
 * starts them again from 0. */
prx_status prx_chan_power_take(prx_chan *c, double *sums, uint64_t *nonfinite, uint64_t *saturated);

/* What the object is. */
typedef struct {
  unsigned index;     /* channel index k in 0..K-1 */
  double center_freq; /* Hz: fc + k fs/K wrapped into [fc - fs/2, fc + fs/2) */
} prx_chan_channel;

unsigned prx_chan_channels(const prx_chan *c);   /* K */
unsigned prx_chan_decimation(const prx_chan *c); /* D */
size_t prx_chan_n_outputs(const prx_chan *c);    /* number of selected channels */
prx_status prx_chan_channel_info(const prx_chan *c, size_t s, prx_chan_channel *out);
double prx_chan_output_rate(const prx_chan *c);                /* fs / D in Hz */
double prx_chan_group_delay(const prx_chan *c);                /* (M-1)/2 in input samples */
const float *prx_chan_taps(const prx_chan *c, size_t *n_taps); /* the prototype in use */
prx_backend prx_chan_backend(const prx_chan *c); /* CPU or CUDA, after AUTO resolved */
/* Parses a channel list such as "3,7,100-120" for K channels into a newly malloc'd array. */
prx_status prx_chan_parse_list(const char *text, unsigned K, unsigned **out, size_t *n_out);

/* Designs a Kaiser-window low-pass prototype of n taps with the given stop-band attenuation
 * and -6 dB cut-off (cycles/sample, 0 < cutoff < 0.5), scaled to unit DC gain (sum = 1). */
prx_status prx_design_kaiser(size_t n, double atten_db, double cutoff, float *taps);

#ifdef __cplusplus
}
#endif
#endif
