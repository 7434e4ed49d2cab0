/* polyrx open-loop QPSK demodulator: every estimate is feed-forward over a block of symbols, so
 * blocks are independent and run in parallel; only a cheap serial pass joins them (timing and
 * phase unwrapping, ambiguity resolution). No loop bandwidths, no lock to lose.
 *
 * Pipeline (docs/ARCHITECTURE.md has the details):
 *   0. level and DC per CFO span: the span's mean (DC, over it and up to 3 spans before) is
 *      removed and the samples are scaled to unit power before every estimator and the matched
 *      filter, so any finite cf32 level gives the same bits and a DC offset (even well above the
 *      signal) is not mistaken for a carrier. A QPSK carrier's random data has no DC (its mean
 *      over the window is ~1/sqrt(symbols) of its amplitude: a floor of -39 dB of the signal in
 *      the first span, -45 dB after four). Its pilots do: the word repeats every frame, so within
 *      about Rs / cfo_span_symbols of 0 Hz (0.3 Hz at 2400 Bd by default) their mean is a true DC
 *      component of the signal (-18.5 dB of the carrier for 64:8 pilots), removed with the
 *      receiver's. In PRX_QPSK_PILOTS mode the demodulator therefore adds that share back to every
 *      symbol before its phase, noise, decisions and LLRs: from the pilot word, the frame
 *      alignment, the NCO phase and the carrier's complex gain that each block measures on its own
 *      pilots, it predicts the pilots' part of each span's mean (the span's own part solved
 *      together with its gains), so only the receiver's DC stays removed, at any CFO. The first
 *      span is restored like the others: its frames are acquired on its symbols as the filter
 *      gives them (the removed mean is one offset common to every alignment, so the word's
 *      correlation peak stands), then the restoration runs on them. What it does not restore: the
 *      short pre-filter that timing and the coarse CFO read still sees the pilots' mean removed (a
 *      constant that neither the |z|^2 line at 1/T nor the 4th-power line at 4 CFO picks up beyond
 *      the BER's tolerance). Differential and none modes have no known symbols and are unchanged;
 *   1. symbol timing by Oerder & Meyr (|z|^2 spectral line at 1/T) on a short RRC pre-filter
 *      evaluated on a grid of 4 samples/symbol (polyphase, any sps >= 2, integer or not): the
 *      clock offset of each CFO span from the drift of the line's phase between sub-blocks of
 *      ~32 symbols (lags doubling to the block length, then between blocks), one timing value
 *      per block unwrapped around the drift that offset predicts, and the span's line through
 *      them; the instants follow that line, so the timing is continuous and a clock offset
 *      never slips a symbol; a block has a timing line when its sub-blocks' O&M sums X_j give
 *      |sum X_j|^2 > 8 sum |X_j|^2 (6.19 at 256-symbol blocks, 8 sub-blocks: the same false
 *      alarms for noise alone); a block or span without a timing line (a gap, no carrier) keeps
 *      the clock before it, so the symbol count survives; a span of fewer than 4 complete blocks
 *      (the stream's last, at flush) keeps the slope of the span before it whenever an earlier
 *      span of 4 or more blocks had a timing line: its blocks' timing is unwrapped around that
 *      slope, extrapolated from the previous block, and its line (4 or more locked blocks) has
 *      that slope; its own slope, from so few sub-blocks, could move its last instants by a
 *      symbol;
 *   2. coarse CFO per CFO span (cfo_span_symbols, >= 1024 symbols): the 4th power of the
 *      pre-filter at each symbol instant (cubic Farrow), its spectrum (FFTW, zero-padded,
 *      |f| <= acquisition * Rs), the peak refined by Newton steps on the periodogram (the ML
 *      frequency of the 4th-power line);
 *   3. de-rotation (phase-continuous NCO) and the RRC matched filter evaluated only at the
 *      symbol instants (a polyphase bank: fractional interpolator and matched filter in one);
 *   4. carrier phase per block by Viterbi & Viterbi (4th power), unwrapped across blocks;
 *      noise variance and Es/N0 by the M2M4 moments estimator; a signal-present test on the
 *      strength of the V&V line;
 *   5. the quarter-turn ambiguity resolved by differential decoding or by the pilot word;
 *      hard bits and LLRs scaled by the estimated noise.
 *
 * Supported clock offsets: |offset| <= PRX_QPSK_MAX_CLOCK_PPM (5000 ppm) for every block length
 * and sps. The drift is measured over sub-blocks of ~32 symbols, so it cannot alias below
 * 1e6 / 66 = 15000 ppm; a span whose estimate lies beyond the supported range is flagged
 * (PRX_QPSK_BLOCK_CLOCK_RANGE, PRX_QPSK_WARN_CLOCK_RANGE), never silently demodulated as if it
 * were good.
 *
 * Symbols. The symbol instants are t_k = k + tau(t) symbol periods from input sample 0 (t = 0 is
 * the first input sample). The demodulator outputs one symbol for every instant in
 * [-1/16, N / sps - 1/16), N being the number of input samples after flush: the generator's
 * symbols (polyrx/sim.h: symbol 0 centred at timing_offset in [0, 1)) come out exactly when
 * timing_offset < 15/16, the window's edges 1/16 symbol away from a symbol centred on the first
 * sample (the generator's default) so that the timing estimate's noise cannot drop or add one
 * there. Every such symbol is output exactly once,
 * whatever the clock offset; in PRX_QPSK_PILOTS mode the pilot symbols are consumed and only data
 * symbols give bits.
 *
 * Streaming: the output depends only on the input samples, never on how they were cut into calls,
 * nor on the thread count. Output lags input by up to one CFO span plus the filter length;
 * prx_qpsk_flush() ends the stream (the input is taken as zero past its end) and emits the rest.
 * NaN or infinite cf32 samples are read as 0 and counted (prx_qpsk_stats.nonfinite).
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

/* The constellation's turn from symbol to symbol. */
typedef enum {
  PRX_QPSK_PLAIN = 0, /* QPSK: every symbol on the same four points */
  /* pi/4-QPSK: symbol k's four points turned by k pi/4 (with PRX_QPSK_DIFFERENTIAL, pi/4-DQPSK:
   * the phase steps by pi/4, 3 pi/4, -3 pi/4, -pi/4 for the bits 00, 01, 11, 10, as in TETRA,
   * IS-136 and APCO P25's CQPSK). The demodulator turns symbol k (its stream index, pilots
   * counted) back by k pi/4 after the matched filter and the 4th power at its instant by k pi (the
   * 4th-power line of pi/4-QPSK sits Rs/2 from 4 f), so every estimate and decision is then that
   * of QPSK: the same CFO range, BER and flags. Not with PRX_QPSK_PILOTS. */
  PRX_QPSK_PI4
} prx_qpsk_modulation;

/* Supported symbol-clock offset (both signs). */
#define PRX_QPSK_MAX_CLOCK_PPM 5000.0

/* prx_qpsk_block.flags */
enum {
  /* no QPSK signal seen: the 4th-power (V&V) line of the block's symbols does not stand out of
   * the noise (signal < 5, see prx_qpsk_block.signal): no carrier, a gap, Es/N0 below about
   * 4 dB (512-symbol blocks: reliably present from 5 dB; below, the bits are unreliable but not
   * noise: BER ~0.27 at 0 dB differential), or a carrier the demodulator does not follow (wrong
   * symbol rate, CFO far out of range). Not flagged: a carrier whose 4th-power line aliases
   * onto one inside the acquisition range (see prx_qpsk_config.acquisition and
   * PRX_QPSK_WARN_CFO_ALIAS). */
  PRX_QPSK_BLOCK_NO_SIGNAL = 1,
  /* the clock offset estimated over the block's CFO span is beyond PRX_QPSK_MAX_CLOCK_PPM */
  PRX_QPSK_BLOCK_CLOCK_RANGE = 2,
  /* with a signal present, the block's timing lies more than 0.25 symbol off its span's clock
   * line (a timing jump: a clock that wanders faster than one line per span can follow) */
  PRX_QPSK_BLOCK_TIMING_JUMP = 4,
  /* the block's input held NaN or infinite samples (read as 0) */
  PRX_QPSK_BLOCK_NONFINITE = 8
};

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
                            the nominal grid k / Rs at the block centre (a clock offset makes it
                            drift; inside the block it follows clock_ppm) */
  double clock_ppm;      /* symbol-clock offset of its CFO span, ppm (positive: the symbol rate
                            is above the nominal one) */
  double esn0_db;        /* Es/N0 of this block alone (M2M4), dB */
  double noise_var;      /* N0/Es used for its LLRs (M2M4 over this and up to 7 earlier blocks) */
  double amplitude;      /* sqrt(Es) at the matched-filter output, in input units */
  double signal;         /* the signal-present statistic: the block's V&V line power
                            |sum y^4|^2 over its mean for noise alone, 6 (sum |y|^4)^2 / n
                            (exponential of mean 1 without a signal; present above 5; about
                            n / 6 at high Es/N0) */
  unsigned flags;        /* PRX_QPSK_BLOCK_* */
  unsigned nonfinite;    /* NaN or infinite input samples in the block's own sample range */
} prx_qpsk_block;

typedef void (*prx_qpsk_block_fn)(void *user, const prx_qpsk_block *block);

typedef struct {
  double sample_rate;             /* fs in Hz */
  double symbol_rate;             /* Rs in Hz; fs / Rs >= 2 (need not be an integer), <= 1024 */
  double rolloff;                 /* RRC roll-off beta in (0, 1] (default 0.35) */
  unsigned span;                  /* matched-filter span in symbols, 2..64 (default 12) */
  unsigned block_symbols;         /* symbols per estimation block, 256..1024 (default 512): one
                                     timing level, carrier phase and Es/N0 per block; the clock
                                     slope is the CFO span's, so the block length does not limit
                                     the clock offset */
  unsigned cfo_span_symbols;      /* symbols per coarse-CFO, level, DC and clock-offset estimate,
                                     1024..4194304 and 4 blocks at least, rounded up to a
                                     multiple of block_symbols (default 8192): a drifting
                                     frequency (a satellite's Doppler) is followed span by span,
                                     so a shorter span follows a faster drift (1024 symbols with
                                     blocks of 256: 8 times the drift of the default), a longer
                                     one estimates a weak carrier's CFO better */
  double acquisition;             /* CFO acquisition range |f| <= acquisition * Rs, in
                                     (0, 0.125) (default 0.12): Rs/8 itself is ambiguous (the
                                     4th-power lines of +Rs/8 and -Rs/8 coincide). A carrier
                                     beyond it aliases: its 4th-power line at 4f is that of
                                     f -+ Rs/4, which the estimate returns; the symbols then turn
                                     by a quarter a symbol, still a QPSK constellation with its
                                     V&V line, so the blocks are not flagged and the bits are
                                     wrong (BER 0.25 at 0.13-0.25 Rs, 0.5 at 0.3 and 0.45-0.65
                                     Rs): prx_qpsk and a bank's channels warn
                                     PRX_QPSK_WARN_CFO_ALIAS. Centre the input first. */
  prx_qpsk_ambiguity ambiguity;   /* default PRX_QPSK_DIFFERENTIAL */
  prx_qpsk_modulation modulation; /* default PRX_QPSK_PLAIN */
  unsigned pilot_period;          /* PILOTS: frame length in symbols (pilots included), at most
                                     cfo_span_symbols */
  unsigned pilot_len;             /* PILOTS: pilot symbols at the start of each frame, >= 1 */
  prx_format in_format;           /* cf32 (default), ci16, ci8 or cu8 */
  int threads;                    /* worker threads, 0: all cores. Output identical for any count */
  prx_qpsk_block_fn on_block;     /* optional: called for every block, in order, from the thread
                                     that calls execute/flush, after its bits are written */
  void *user;                     /* passed to on_block */
} prx_qpsk_config;

prx_qpsk_config prx_qpsk_config_default(void);

typedef struct prx_qpsk prx_qpsk;

/* The most memory prx_qpsk_create allocates for one demodulator: 2 GiB */
#define PRX_QPSK_MAX_BYTES ((size_t)2 << 30)

/* Validates the configuration, designs the filters, plans the FFTs and allocates everything.
 * The memory it needs grows with cfo_span_symbols, sps and the thread count; above
 * PRX_QPSK_MAX_BYTES it refuses at once (PRX_ERR_INVALID, saying how much it would need).
 * Work per input sample does not depend on the configuration beyond the filter spans.
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

/* prx_qpsk_stats.warnings: what makes the output of a stream doubtful */
enum {
  PRX_QPSK_WARN_NO_SIGNAL = 1,   /* more than half of the blocks had no signal */
  PRX_QPSK_WARN_CLOCK_RANGE = 2, /* some span's clock offset was beyond PRX_QPSK_MAX_CLOCK_PPM */
  PRX_QPSK_WARN_TIMING = 4,      /* more than 1 % of the blocks with a signal had timing jumps */
  PRX_QPSK_WARN_NONFINITE = 8,   /* more than 8 NaN or infinite input samples (wrong format?) */
  /* instead of PRX_QPSK_WARN_NO_SIGNAL where the carrier is there but weak: more than half of
   * the blocks had no signal of their own, yet in most CFO spans (two at least) their V&V
   * statistics together show the carrier's line and the span has a symbol-timing line (Es/N0
   * from about -0.5 to 3 dB, where the bits are unreliable rather than noise; without the
   * timing lines: PRX_QPSK_WARN_SYMBOL_RATE) */
  PRX_QPSK_WARN_WEAK_SIGNAL = 16,
  /* the spectrum of the input's first 32768 samples lies where an alias of the CFO estimate
   * (f -+ Rs/4, f -+ Rs/2) would put the carrier, not where the estimate does: a carrier beyond
   * the acquisition range whose 4th-power line aliased onto one inside it, its bits wrong though
   * its blocks show a signal. Tested by prx_qpsk and by a bank's channels on both backends (the
   * CUDA backend over the device rows); may miss an alias below ~3 dB Es/N0 (noise pulls the
   * measure towards the estimate) or where the input's first samples hold no carrier */
  PRX_QPSK_WARN_CFO_ALIAS = 32,
  /* most blocks had a signal, but most CFO spans (two at least) showed no symbol-timing (O&M)
   * line at the given symbol rate: a signal at another rate (twice or half of it: sampled at the
   * wrong rate, its symbols still look like QPSK, so its blocks are not flagged), its bits wrong */
  PRX_QPSK_WARN_SYMBOL_RATE = 64,
  /* a strong signal the blocks cannot follow: some blocks (a twentieth of them, two at least)
   * had no signal of their own though their moments (M2M4) put them above 10 dB Es/N0, where a
   * QPSK block always shows its 4th-power line: the phase moves within a block (a frequency
   * that drifts faster than the CFO spans follow: from ~10 Hz/s at 12 kBd with spans of 8192
   * symbols; phase noise) or the signal is not QPSK (8PSK, ...). Those blocks' bits are noise.
   * Instead of PRX_QPSK_WARN_NO_SIGNAL (and weak_signal, symbol_rate) where such blocks are most
   * of those without a signal */
  PRX_QPSK_WARN_UNLOCKED = 128,
  /* most blocks with a signal (two at least) hold symbols on one line through the origin
   * (|sum y^2| over a block's first 64 symbols above half their power, where QPSK's y^2, +-j
   * times their power, cancel): BPSK or another real signal (AM, PAM) read as QPSK, each
   * symbol's two bits equal or opposite, not the sent bits; a carrier without modulation; QPSK
   * whose data do not vary. From ~0 dB Es/N0 for BPSK; not raised by QPSK with varying data */
  PRX_QPSK_WARN_NOT_QPSK = 256,
  /* most blocks with a signal (three at least) hold symbols whose power lies on several levels,
   * where QPSK's lie on one ring (the kurtosis of |y|^2 over a block's first 256 symbols below
   * 2.5 where their spread is wide enough to matter; QPSK with noise: 3 or more): QAM read as
   * QPSK (its 4th-power line makes its blocks look like QPSK's; each symbol's bits are its
   * quadrant's, the Es/N0 reads low: 16QAM's 6.7 dB at any level), or QPSK through strong
   * inter-symbol interference (a two-path channel, a pulse other than the matched filter's) or
   * a large I/Q imbalance. 16QAM from ~15 dB Es/N0, 64QAM from ~22 dB; QPSK by chance in at most
   * ~2 % of its blocks, too few to raise it */
  PRX_QPSK_WARN_LEVELS = 512,
  /* most blocks with a signal (two at least) hold symbols that each turn by a quarter turn from
   * the one before (-Re sum z^2 / sum |z|^2 over z = y_i conj(y_(i-1)), a block's first 64
   * symbols, above 0.5; QPSK's z turn by 0, 1/4, 1/2, 3/4 at random and cancel): MSK, or 2-FSK
   * whose shift is half the symbol rate, read as QPSK at its bit rate; its 4th-power line and
   * timing are QPSK's, so its blocks show a signal. Differentially decoded, each symbol's two
   * bits come out opposite (one MSK bit a symbol). From ~3 dB Es/N0 */
  PRX_QPSK_WARN_QUARTER_STEPS = 1024
};

/* The running summary since create or prx_qpsk_reset (flush ends a stream but keeps it): what
 * every command prints. The estimates average over the blocks with a signal (all blocks when
 * most had none), weighted by their symbols. */
typedef struct {
  uint64_t samples;            /* input samples consumed */
  uint64_t symbols;            /* symbols demodulated, pilots included */
  uint64_t data_symbols;       /* data symbols output */
  uint64_t blocks;             /* blocks completed */
  uint64_t blocks_no_signal;   /* of which flagged PRX_QPSK_BLOCK_NO_SIGNAL */
  uint64_t blocks_clock_range; /* flagged PRX_QPSK_BLOCK_CLOCK_RANGE */
  uint64_t blocks_timing_jump; /* flagged PRX_QPSK_BLOCK_TIMING_JUMP */
  uint64_t nonfinite;          /* NaN or infinite input samples (read as 0) */
  int64_t frame_offset;        /* PILOTS: stream symbol index of the first pilot word found (the
                                  frame alignment); -1 before it is found or in other modes */
  double esn0_db;              /* Es/N0: total signal over total noise power (linear), dB; NaN
                                  before the first block */
  double cfo_hz, cfo_min_hz, cfo_max_hz; /* CFO: mean, least, greatest */
  double clock_ppm;                      /* symbol-clock offset, ppm */
  unsigned warnings;                     /* PRX_QPSK_WARN_* */
  uint64_t blocks_locked;    /* of the blocks, those flagged neither PRX_QPSK_BLOCK_NO_SIGNAL nor
                                PRX_QPSK_BLOCK_CLOCK_RANGE: a signal followed at its symbol rate */
  double cfo_drift_hz_per_s; /* the CFO's drift: the least-squares slope of the blocks' CFO over
                                their time, over the blocks with a signal; NaN until they span
                                two CFO spans (a satellite's Doppler: which --cfo-span follows it,
                                README) */
} prx_qpsk_stats;
void prx_qpsk_get_stats(const prx_qpsk *q, prx_qpsk_stats *out);

/* One line of text for one PRX_QPSK_WARN_* bit ("most of the input had no signal", ...); NULL
 * for an unknown bit. */
const char *prx_qpsk_warning_text(unsigned warning);

/* Samples per symbol fs / Rs, and the effective CFO span (a multiple of block_symbols). */
double prx_qpsk_sps(const prx_qpsk *q);
unsigned prx_qpsk_cfo_span(const prx_qpsk *q);
const char *prx_qpsk_ambiguity_name(prx_qpsk_ambiguity a);   /* "differential", "pilots", "none" */
const char *prx_qpsk_modulation_name(prx_qpsk_modulation m); /* "qpsk", "pi4-qpsk" */

#ifdef __cplusplus
}
#endif
#endif
