/* polyrx open-loop QPSK demodulator: every estimate is feed-forward over a block of symbols, so
 * blocks are independent and run in parallel; only a cheap serial pass joins them (timing and
 * phase unwrapping, ambiguity resolution). No loop bandwidths, no lock to lose.
 *
 * Pipeline (docs/ARCHITECTURE.md has the details):
 *   1. symbol timing per block by Oerder & Meyr (|z|^2 spectral line at 1/T) on a short RRC
 *      pre-filter evaluated on a grid of 4 samples/symbol (polyphase, any sps >= 2, integer or
 *      not), unwrapped across blocks so that a clock offset never slips a symbol;
 *   2. coarse CFO per CFO span (cfo_span_symbols, >= 4096 symbols): the 4th power of the
 *      pre-filter at each symbol instant (cubic Farrow), its spectrum (FFTW, zero-padded,
 *      |f| <= acquisition * Rs), the peak refined by Newton steps on the periodogram (the ML
 *      frequency of the 4th-power line);
 *   3. de-rotation (phase-continuous NCO) and the RRC matched filter evaluated only at the
 *      symbol instants (a polyphase bank: fractional interpolator and matched filter in one);
 *   4. carrier phase per block by Viterbi & Viterbi (4th power), unwrapped across blocks;
 *      noise variance and Es/N0 by the M2M4 moments estimator;
 *   5. the quarter-turn ambiguity resolved by differential decoding or by the pilot word;
 *      hard bits and LLRs scaled by the estimated noise.
 *
 * Symbols. The symbol instants are t_k = k + tau(t) symbol periods from input sample 0 (t = 0 is
 * the first input sample). The demodulator outputs one symbol for every instant in [0, N / sps),
 * N being the number of input samples after flush: the generator's convention (polyrx/sim.h:
 * symbol 0 is centred in the first symbol period). Every such symbol is output exactly once,
 * whatever the clock offset; in PRX_QPSK_PILOTS mode the pilot symbols are consumed and only data
 * symbols give bits.
 *
 * Streaming: the output depends only on the input samples, never on how they were cut into calls,
 * nor on the thread count. Output lags input by up to one CFO span plus the filter length;
 * prx_qpsk_flush() ends the stream (the input is taken as zero past its end) and emits the rest.
 * NaN or infinite cf32 samples are read as 0.
 *
 * Bits: unpacked, one byte (0 or 1) per bit, b0 then b1 of each data symbol (Gray map of
 * polyrx/modem.h). LLRs: one float per bit, log(P(b = 0) / P(b = 1)), scaled by the estimated
 * noise variance (coherent: LLR(b0) = 2 sqrt(2) Re(u) / sigma^2 for the unit-energy symbol u;
 * differential: the exact two-symbol LLR, see docs/FORMATS.md).
 */
#ifndef POLYRX_QPSK_H
#define POLYRX_QPSK_H

#include "polyrx/core.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  /* data differentially encoded (polyrx/modem.h): bits from the quadrant step between successive
   * coherent decisions, immune to the quarter-turn ambiguity. The first symbol of the stream is
   * decoded against the reference (1+j)/sqrt(2) in the demodulator's own (arbitrary) quarter-turn,
   * so its bits carry no information. */
  PRX_QPSK_DIFFERENTIAL = 0,
  /* a pilot word (prx_qpsk_pilot) of pilot_len symbols starts every frame of pilot_period
   * symbols: the frame alignment is found by correlation over the first CFO span, and each pilot
   * word sets the quarter-turn for the data that follow it (coherent Gray decisions). */
  PRX_QPSK_PILOTS,
  /* coherent Gray decisions in the V&V phase's arbitrary quarter-turn (the caller resolves it) */
  PRX_QPSK_NONE
} prx_qpsk_ambiguity;

/* Estimates of one block, as used for its symbols. */
typedef struct {
  uint64_t index;        /* block number from the start of the stream */
  uint64_t first_symbol; /* stream index of its first symbol (pilots counted) */
  unsigned n_symbols;    /* symbols it owns: block_symbols, or one more or less where the
                            timing crossed a symbol boundary (clock offset) */
  unsigned n_data;       /* of which data symbols (bits output) */
  double time;           /* s: nominal centre of the block, from input sample 0 */
  double cfo;            /* Hz: carrier frequency offset (its CFO span's estimate) */
  double phase;          /* rad in (-pi, pi]: carrier phase at the block centre (with PILOTS the
                            true phase; otherwise known modulo pi/2) */
  double timing;         /* symbol periods: unwrapped timing offset of the symbol instants from
                            the nominal grid k / Rs (a clock offset makes it drift) */
  double esn0_db;        /* Es/N0 of this block alone (M2M4), dB */
  double noise_var;      /* N0/Es used for its LLRs (M2M4 over this and up to 7 earlier blocks) */
  double amplitude;      /* sqrt(Es) at the matched-filter output, in input units */
} prx_qpsk_block;

typedef void (*prx_qpsk_block_fn)(void *user, const prx_qpsk_block *block);

typedef struct {
  double sample_rate;           /* fs in Hz */
  double symbol_rate;           /* Rs in Hz; fs / Rs >= 2 (need not be an integer), <= 1024 */
  double rolloff;               /* RRC roll-off beta in (0, 1] (default 0.35) */
  unsigned span;                /* matched-filter span in symbols, 2..64 (default 12) */
  unsigned block_symbols;       /* symbols per estimation block, 256..1024 (default 512). The
                                   timing is one value per block: a symbol-clock offset of p
                                   ppm leaves p 1e-6 L/2 symbol of timing error at the block
                                   edges (0.013 T at 50 ppm; 0.077 T, ~0.3 dB, at 300 ppm:
                                   take 256 for offsets of hundreds of ppm), and the
                                   unwrapping needs |p| < 1e6 / (2 L) (977 ppm at 512) */
  unsigned cfo_span_symbols;    /* symbols per coarse-CFO estimate, >= 4096, rounded up to a
                                   multiple of block_symbols (default 8192) */
  double acquisition;           /* CFO acquisition range |f| <= acquisition * Rs, in
                                   (0, 0.125) (default 0.12) */
  prx_qpsk_ambiguity ambiguity; /* default PRX_QPSK_DIFFERENTIAL */
  unsigned pilot_period;        /* PILOTS: frame length in symbols (pilots included), at most
                                   cfo_span_symbols */
  unsigned pilot_len;           /* PILOTS: pilot symbols at the start of each frame, >= 1 */
  prx_format in_format;         /* cf32 (default), ci16, ci8 or cu8 */
  int threads;                  /* worker threads, 0: all cores. Output identical for any count */
  prx_qpsk_block_fn on_block;   /* optional: called for every block, in order, from the thread
                                   that calls execute/flush, after its bits are written */
  void *user;                   /* passed to on_block */
} prx_qpsk_config;

prx_qpsk_config prx_qpsk_config_default(void);

typedef struct prx_qpsk prx_qpsk;

/* Validates the configuration, designs the filters, plans the FFTs and allocates everything.
 * Errors: PRX_ERR_INVALID (naming the parameter and value), PRX_ERR_NOMEM. */
prx_status prx_qpsk_create(const prx_qpsk_config *cfg, prx_qpsk **out);
void prx_qpsk_destroy(prx_qpsk *q); /* accepts NULL */
/* Forgets the stream, as if just created. */
void prx_qpsk_reset(prx_qpsk *q);

/* Upper bound on the data symbols that the next prx_qpsk_execute() with n_in samples (or
 * prx_qpsk_flush()) writes: the capacity to give it. */
size_t prx_qpsk_max_symbols(const prx_qpsk *q, size_t n_in);
size_t prx_qpsk_flush_max_symbols(const prx_qpsk *q);

/* Feeds n_in samples (in_format). Writes the data symbols it completes: bits (2 bytes per
 * symbol, may be NULL) and llrs (2 floats per symbol, may be NULL); capacity counts symbols and
 * must be at least prx_qpsk_max_symbols(q, n_in) (PRX_ERR_CAPACITY otherwise, nothing consumed).
 * *n_symbols receives the number of data symbols written. */
prx_status prx_qpsk_execute(prx_qpsk *q, const void *in, size_t n_in, uint8_t *bits, float *llrs,
                            size_t capacity, size_t *n_symbols);
/* Ends the stream: demodulates what is left (every symbol instant before the end of the input)
 * like execute, then resets. */
prx_status prx_qpsk_flush(prx_qpsk *q, uint8_t *bits, float *llrs, size_t capacity,
                          size_t *n_symbols);

/* As prx_qpsk_execute and prx_qpsk_flush, and also each data symbol's matched-filter output
 * after the carrier correction (the block's phase, and with pilots the frame's quarter turn;
 * known modulo pi/2 otherwise), scaled to unit symbol energy, into symbols (capacity entries,
 * may be NULL): the constellation, for pictures and diagnostics. */
prx_status prx_qpsk_execute_symbols(prx_qpsk *q, const void *in, size_t n_in, uint8_t *bits,
                                    float *llrs, prx_cf32 *symbols, size_t capacity,
                                    size_t *n_symbols);
prx_status prx_qpsk_flush_symbols(prx_qpsk *q, uint8_t *bits, float *llrs, prx_cf32 *symbols,
                                  size_t capacity, size_t *n_symbols);

/* The estimates of the blocks completed by the last execute/flush call, oldest first; at most the
 * newest 256 of them are kept (use on_block to see every block of a large call). The pointer is
 * valid until the next call. */
const prx_qpsk_block *prx_qpsk_block_estimates(const prx_qpsk *q, size_t *n);

/* Totals since create or prx_qpsk_reset (flush ends a stream but keeps them). */
typedef struct {
  uint64_t samples;      /* input samples consumed */
  uint64_t symbols;      /* symbols demodulated, pilots included */
  uint64_t data_symbols; /* data symbols output */
  uint64_t blocks;       /* blocks completed */
  int64_t frame_offset;  /* PILOTS: stream symbol index of the first pilot word found (the frame
                            alignment); -1 before it is found or in other modes */
} prx_qpsk_stats;
void prx_qpsk_get_stats(const prx_qpsk *q, prx_qpsk_stats *out);

/* Samples per symbol fs / Rs, and the effective CFO span (a multiple of block_symbols). */
double prx_qpsk_sps(const prx_qpsk *q);
unsigned prx_qpsk_cfo_span(const prx_qpsk *q);
const char *prx_qpsk_ambiguity_name(prx_qpsk_ambiguity a); /* "differential", "pilots", "none" */

#ifdef __cplusplus
}
#endif
#endif
