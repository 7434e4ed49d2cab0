/* The demodulator bank shared by its front end and CPU path (qpsk_bank.c) and its CUDA path
 * (qpsk_bank_cuda.cu). Not installed. */
#ifndef PRX_QPSK_BANK_INTERNAL_H
#define PRX_QPSK_BANK_INTERNAL_H

#include "polyrx/qpsk_bank.h"

#include "../dsp/pack.h"

#include <stdint.h>

/* a bank's channel without the CFO alias test (qpsk_alias.c): where the CUDA driver cannot measure
 * it on the device (a module without the stage kernels' alias entry) */
void qpsk_alias_off(prx_qpsk *q);

/* one worker slot's scratch: converted input (cf16 rows, mixed rows) and unpacked bits (packed
 * output) */
typedef struct {
  prx_cf32 *conv;
  size_t conv_cap; /* samples */
  uint8_t *bits;
  size_t bits_cap; /* bytes */
} prx_qpsk_bank_slot;

struct prx_qpsk_bank {
  prx_qpsk_bank_config cfg;
  unsigned C;
  prx_backend backend;    /* CPU or CUDA (AUTO resolved) */
  prx_qpsk **ch;          /* C single-channel demodulators (threads = 1, cf32 or the row format) */
  prx_bit_packer *packer; /* [C]: packed output, the bits waiting for their byte */
  size_t *n_bytes;        /* [C]: the staged device path's byte counts when the caller takes none */
  double *mix;            /* [C] or NULL: mix_hz / sample_rate, cycles per sample */
  uint64_t *mix_n;        /* [C]: the channel's stream samples so far (the mixer's index) */
  struct prx_pool *pool;
  unsigned n_slots;
  prx_qpsk_bank_slot *slots;
  const struct prx_qpsk_bank_cuda *gpu; /* the CUDA path (the module's), NULL on the CPU */
  void *cuda; /* the staged path's state (qpsk_bank_cuda.cu), NULL unless the bank stages */
  struct prx_qpsk_bank_gpu *drv; /* the stage-major driver (qpsk_bank_gpu.c), NULL unless the
                                    CUDA backend runs the stage kernels */
};

/* Packs n_bits unpacked bits of channel c after its leftover bits into dst; with flush, the last
 * partial byte too (padded with zeros), and the next stream starts on a byte. Returns the bytes
 * written. */
size_t prx_qpsk_bank_pack(prx_qpsk_bank *b, unsigned c, const uint8_t *bits, size_t n_bits,
                          uint8_t *dst, int flush);

/* ---- the stage-major driver on the CUDA backend (qpsk_bank_gpu.c) ---- */

typedef struct prx_qpsk_bank_gpu prx_qpsk_bank_gpu;
struct prx_cuda_module;
struct qpsk_block_end; /* qpsk_serial_phase.h */

/* where the driver's time went since create (host wall clock) */
typedef struct {
  double total_s;  /* inside prx_qpsk_bank_gpu_run */
  double wait_s;   /* waiting for the device (kernels and copies not overlapped with the CPU) */
  double serial_s; /* the serial passes (and the CFO stage where it runs on the CPU), on the pool */
  double issue_s;  /* issuing a span's launches and copies up to its wait (GPU serial passes) */
  double calls, spans;
  double ahead;      /* spans whose pre ran ahead, beside the serial passes of the span before */
  double late;       /* spans written into the channels in a later call (beside its device work) */
  double ring_moves; /* the ring's samples moved to its buffer's start (prx_qpsk_bank_gpu.c) */
  double ring_bytes; /* device memory the ring holds (made at its first append) */
  int gpu_cfo;       /* the CFO stage runs on the GPU */
  int fold;          /* the O&M stage's path (qpsk_om_path) */
  int gpu_serial;    /* the level, timing and NCO passes on the GPU (qpsk_serial.h) */
  int gpu_phase;     /* the last call ran the phase pass on the GPU too (qpsk_serial_phase.h) */
} prx_qpsk_bank_gpu_timing;

/* Creates b->drv for the bank's channels (b->ch, created) with the module's stage kernels; mix:
 * the C mixing frequencies (cycles per sample) or NULL. PRX_ERR_UNSUPPORTED where the kernels
 * cannot take the configuration (the bank then stages through the host). */
prx_status prx_qpsk_bank_gpu_create(prx_qpsk_bank *b, const struct prx_cuda_module *m,
                                    const double *mix);
void prx_qpsk_bank_gpu_destroy(prx_qpsk_bank_gpu *g); /* accepts NULL */
void prx_qpsk_bank_gpu_reset(prx_qpsk_bank_gpu *g);   /* forgets the ring */
/* The O&M stage's paths on the GPU. Folded into pre, possible where the kernels have it and the
 * pre-filter is register-blocked (sps 4, where FOLDED is the default), its O&M sums round otherwise
 * than om's (qpsk_om_combine): the bits stay, the estimates move by rounding (GPU_NOTES). */
typedef enum {
  QPSK_OM_APART = 0,  /* pre, om, x4 */
  QPSK_OM_FOLDED = 1, /* pre_om, om_sums, x4_level */
} qpsk_om_path;
/* Selects the path (a qpsk_om_path; FOLDED where not possible falls back to APART)
 * between calls. Returns the path now in use. */
int prx_qpsk_bank_gpu_set_fold(prx_qpsk_bank_gpu *g, int path);
/* The level, timing and NCO passes on the GPU (1, the default where the module has them and the
 * CFO stage runs there: one host wait per span) or on the CPU between the stage kernels (0:
 * four), between calls (the passes' state moves to the side that runs them). Returns the side
 * now in use (1 GPU), or a negative prx_status where the state's copy failed. */
int prx_qpsk_bank_gpu_set_serial(prx_qpsk_bank_gpu *g, int on);
/* The phase pass on the GPU too (1, the default) where the serial passes run there and the GPU
 * decides the bits (calls without LLRs or packed bits, not PILOTS: those run it on the CPU), or
 * on the CPU (0), between calls (its state moves at the next call). Returns whether the module
 * can run it there and on is set. */
int prx_qpsk_bank_gpu_set_phase(prx_qpsk_bank_gpu *g, int on);
/* With the phase pass on the GPU the channels' prx_qpsk (reports, stats, stream counts) are
 * written lazily: settle writes the spans still pending (before the caller reads estimates or
 * stats; accepts NULL); pending_symbols is what they hold of prx_qpsk_max_symbols' bound (their
 * symbols' room, B Lmax per span), which the channels do not know yet. */
void prx_qpsk_bank_gpu_settle(prx_qpsk_bank_gpu *g);
/* Puts the phase pass's carried state where the next call with outputs out wants it (on the
 * device where the GPU decides the bits), now: a small host-to-device copy and a wait on the
 * bank's stream, which that call otherwise makes first (a stream's first call, after create,
 * reset or a flush). A caller that queues its own host-to-device copies before that call (the
 * receiver's input) calls this first, so that the state's copy does not queue behind them on the
 * copy engine. Nothing where the state is there already (called again) or spans are pending (the
 * state is on the device; the call settles them before it moves the state back); accepts NULL. */
prx_status prx_qpsk_bank_gpu_prepare(prx_qpsk_bank_gpu *g, const prx_qpsk_bank_out *out);
size_t prx_qpsk_bank_gpu_pending_symbols(const prx_qpsk_bank_gpu *g);
void prx_qpsk_bank_gpu_get_timing(const prx_qpsk_bank_gpu *g, prx_qpsk_bank_gpu_timing *t);
/* Where a call's device time goes (benchmarks only): the driver calls fn(ctx, stream, mark) on the
 * calling thread at the call's start, after each launch group of a span with the serial passes
 * on the GPU, and at the call's end, so that the caller can record a timed event on stream and
 * read its own clock there (the library records nothing itself). NULL: no marks (the default). */
typedef enum {
  QPSK_MARK_START,  /* the call's start, before its first copy or launch */
  QPSK_MARK_PRE,    /* pre (pre_om) issued */
  QPSK_MARK_LEVEL,  /* the level pass */
  QPSK_MARK_OM,     /* om (om_sums) */
  QPSK_MARK_TIMING, /* the timing pass */
  QPSK_MARK_X4,     /* x4 (x4_level) */
  QPSK_MARK_CFO,    /* the CFO window's reach-back copy, fill, cuFFT and peak */
  QPSK_MARK_NCO,    /* the NCO pass */
  QPSK_MARK_MF,     /* mf (and its copies back where the phase pass runs on the CPU) */
  QPSK_MARK_PHASE,  /* the phase pass (on the GPU) */
  QPSK_MARK_OUT,    /* out */
  QPSK_MARK_PEND,   /* the reports' records into their pinned slot */
  QPSK_MARK_DRAIN,  /* the earlier calls' reports written (host work beside the device) */
  QPSK_MARK_RING,   /* the ring's move of the kept samples */
  QPSK_MARK_COUNTS, /* the output counts' copy back, before the call's wait */
  QPSK_MARK_END,    /* the call's end (after its waits) */
  QPSK_MARK_N
} qpsk_bank_mark;
typedef void (*prx_qpsk_bank_gpu_mark_fn)(void *ctx, void *stream, int mark);
void prx_qpsk_bank_gpu_set_mark(prx_qpsk_bank_gpu *g, prx_qpsk_bank_gpu_mark_fn fn, void *ctx);
/* One call of every channel: n_in samples of C rows at in (in_stride samples apart; device
 * memory when in_dev, else host), or the flush; outputs as out describes (device memory when
 * out_dev: ordered on stream, the counts on return; else host memory, complete on return).
 * kept: QPSK_BANK_RING where the bank keeps the samples its next call reads in its ring; else
 * (device rows only) the rows hold the stream's kept samples before in (in the flush too: in
 * at the stream's end), and the bank keeps none (prx_qpsk_bank_execute_device_kept); such a
 * flush may bring the stream's last n_in samples too (one call for the stream's end: the
 * receiver's). The caller has checked the arguments and the capacities (a flush with samples:
 * prx_qpsk_bank_gpu_end_symbols). */
#define QPSK_BANK_RING ((size_t)-1)
prx_status prx_qpsk_bank_gpu_run(prx_qpsk_bank *b, const void *in, size_t in_stride, size_t n_in,
                                 size_t kept, int in_dev, int flush, const prx_qpsk_bank_out *out,
                                 int out_dev, void *stream);
/* the most samples before its chunk that a call after a kept call reads (a span's window) */
size_t prx_qpsk_bank_gpu_history(const prx_qpsk_bank_gpu *g);
/* The symbols per channel that a flush bringing n_in more samples writes at most (NULL or no
 * driver: 0). */
size_t prx_qpsk_bank_gpu_end_symbols(const prx_qpsk_bank *b, size_t n_in);
/* The next call, where it is a flush whose spans' bits the device decides, leaves its end to the
 * caller: it returns with the counts and the bits in place, and prx_qpsk_bank_gpu_end (or any
 * later call, settle or reset) then writes its spans' reports into the channels and resets their
 * streams, so that the caller's copy of the bits runs beside that host work (the receiver's).
 * Until then the channels hold the ended stream, which prx_qpsk_bank_max_symbols reads: size the
 * next stream's outputs after the end. */
void prx_qpsk_bank_gpu_hold_end(prx_qpsk_bank_gpu *g);
void prx_qpsk_bank_gpu_end(prx_qpsk_bank_gpu *g);
/* Whether a call with n_in more samples (not a flush) runs a span, i.e. completes symbols (no
 * driver: 1). */
int prx_qpsk_bank_gpu_runs_span(const prx_qpsk_bank *b, size_t n_in);

/* The CPU path: demodulates host rows (cf32, cf16 or the integer formats) into host outputs.
 * flush: ignore in and n_in and end every channel's stream. */
prx_status prx_qpsk_bank_run_host(prx_qpsk_bank *b, const void *in, size_t in_stride, size_t n_in,
                                  int flush, const prx_qpsk_bank_out *out);

/* IEEE binary16 to float (every value, subnormals, infinities and NaN included) */
static inline float prx_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, bits;
  if (e == 31) {
    bits = sign | 0x7f800000u | (m << 13);
  } else if (e == 0) {
    float f = (float)m * (1.0f / 16777216.0f); /* subnormal or zero: m 2^-24, exact */
    return sign ? -f : f;
  } else {
    bits = sign | ((e + 127 - 15) << 23) | (m << 13);
  }
  union {
    uint32_t u;
    float f;
  } v = {bits};
  return v.f;
}

/* The CUDA path's entry points (qpsk_bank_cuda.cu, in the CUDA module:
 * prx_cuda_module_get()->qpsk_bank). The device rows are staged through pinned host memory and
 * the library runs the CPU path between the two copies (qpsk_bank.c), as the module never calls
 * the library. */
typedef struct prx_qpsk_bank_cuda {
  /* the staging state for device `device` into *state (NULL on failure) */
  prx_status (*create)(int device, void **state);
  void (*destroy)(void *state); /* waits for the copies in flight; accepts NULL */
  /* Waits for the previous call's copies back; copies n_in samples of sample_size bytes of C
   * device rows (d_in, in_stride samples apart) into pinned dense rows *h_in and waits for them
   * (*h_in NULL when n_in is 0); gives pinned outputs of bits_bytes and llr_bytes in *h_bits and
   * *h_llrs (NULL for 0 bytes). */
  prx_status (*stage_in)(void *state, const void *d_in, size_t in_stride, size_t n_in, size_t C,
                         size_t sample_size, size_t bits_bytes, size_t llr_bytes, void *stream,
                         const void **h_in, uint8_t **h_bits, float **h_llrs);
  /* Copies the first bits_width bytes of each of the C pinned bit rows (bits_stride bytes apart)
   * to d_bits and the first llr_width floats of each LLR row (llr_stride floats apart) to
   * d_llrs (a NULL destination or a zero width: nothing), on the stream, without waiting. */
  prx_status (*stage_out)(void *state, uint8_t *d_bits, size_t bits_stride, size_t bits_width,
                          float *d_llrs, size_t llr_stride, size_t llr_width, size_t C,
                          void *stream);

  /* ---- the stage-major driver's device services (qpsk_bank_gpu.c; module ABI 5) ---- */

  /* cudaMalloc on device `device` (*p NULL on failure) and cudaFree (accepts NULL) */
  prx_status (*dev_alloc)(int device, size_t bytes, void **p);
  void (*dev_free)(void *p);
  /* a stream of its own (non-blocking) on device `device`, and its end */
  prx_status (*stream_create)(int device, void **stream);
  void (*stream_destroy)(void *stream);
  /* asynchronous copies on stream, in any direction (cudaMemcpyDefault): bytes, and height rows
   * of width bytes (pitches in bytes) */
  prx_status (*copy)(void *dst, const void *src, size_t bytes, void *stream);
  prx_status (*copy2d)(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                       size_t height, void *stream);
  /* waits for everything on stream */
  prx_status (*sync)(void *stream);
  /* qpsk_block_end_of each of the n_blk blocks (blk: k1 - k0 symbols at sym + i Lmax) into
   * ends[i], on stream: what the host's phase pass reads of the symbols (the differential
   * chain's link, the second-order line) */
  prx_status (*block_ends)(const void *blk, const prx_cf32 *sym, size_t n_blk, unsigned Lmax,
                           struct qpsk_block_end *ends, void *stream);
  /* within each of the C rows of w (stride values apart): ops[3 c + 2] values from ops[3 c] to
   * ops[3 c + 1] (value offsets in the row; the two ranges do not overlap), on stream: a span's
   * CFO window reaching back into earlier 4th-power values (ops: device memory) */
  prx_status (*row_copy)(prx_cf32 *w, size_t stride, const int64_t *ops, size_t C, void *stream);
  /* copy2d between two device buffers of the device by a kernel (module ABI 11): the copy
   * engine's 2-D copy pays ~0.3 us a row, which the ring's move of C short rows feels (~0.33 ms
   * at 1024 channels); the rows must not overlap */
  prx_status (*copy2d_dev)(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                           size_t height, void *stream);
} prx_qpsk_bank_cuda;
extern const prx_qpsk_bank_cuda prx_qpsk_bank_cuda_entries;

#endif
