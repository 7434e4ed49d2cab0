/* The demodulator object. Layering, one way: qpsk.c (API, configuration, streaming) calls
 * qpsk_batch.c (the parallel stages and serial passes over one batch of CFO spans), and both call
 * qpsk_input.c (input access: the buffered raw samples as cf32, level and DC sums).
 *
 * Time bases (absolute, from input sample 0):
 *   input sample n;   nominal symbol time t = n / sps;   grid sample m at t = m / 4 (the
 *   pre-filter's output, 4 per symbol);   block b = symbols [bL, (b+1)L) = grid [4bL, 4(b+1)L);
 *   CFO span s = blocks [sB, (s+1)B) = symbols [sS, (s+1)S), S = B L.
 * Block b's timing model: symbol k (the grid-symbol index) has its instant at
 *     t_b(k) = (1 + d) (k + tau_b) - d C_b,      C_b = (b + 1/2) L (the block centre),
 * tau_b the unwrapped timing at the centre and d the clock slope of its CFO span (dt/dk = 1 + d;
 * a clock offset of p ppm gives d = -p 1e-6 / (1 + p 1e-6)). Block b owns k in
 * [k_end(b-1), k_end(b)) with k_end(b) = the first k with t_b(k) >= min((b+1)L, N/sps), so each
 * instant belongs to exactly one block whatever the drift, and none is skipped or repeated.
 * The timing is unwrapped around the prediction of the same model, so neighbouring blocks'
 * models disagree by at most half a symbol at their boundary. */
#ifndef PRX_QPSK_INTERNAL_H
#define PRX_QPSK_INTERNAL_H

#include "polyrx/modem.h"
#include "polyrx/qpsk.h"

#include "../core/internal.h"
#include "qpsk_decide.h"
#include "qpsk_est.h"
#include "qpsk_fir.h"

#include <fftw3.h>

#define QPSK_GM                                                                                    \
  4                            /* pre-filter grid samples kept on each side of a block (the first  \
                                  instant of a block can be half a symbol before it) */
#define QPSK_NOISE_BLOCKS 8    /* blocks in the M2M4 noise window (this one and 7 before) */
#define QPSK_LINE_SYMBOLS 64   /* a block's symbols in its second-order line (qpsk_ph_line) */
#define QPSK_LEVEL_SYMBOLS 256 /* and in its power levels (qpsk_ph_levels) */
/* The shortest CFO span (and 4 blocks at least): a carrier whose frequency drifts is followed
 * span by span, so a shorter span follows a faster drift (0.5 Hz/s at 1 kBd, 20 dB: 104 of 128
 * blocks of 512 lost with spans of 8192, none with spans of 1024 and blocks of 256); the CFO
 * estimate of 1024 symbols costs ~0.1 dB at Eb/N0 6 dB (bench/RESULTS.md) */
#define QPSK_MIN_CFO_SPAN 1024u
#define QPSK_KEEP 256 /* block estimates kept for prx_qpsk_block_estimates */
#define QPSK_PRE_SPAN                                                                              \
  4 /* pre-filter (CFO, timing): RRC span in symbols; 4 loses < 0.1 dB of                          \
       4th-power line SNR and O&M accuracy against the full span */
#define QPSK_SUB_SYMBOLS                                                                           \
  32                          /* nominal O&M sub-block for the clock drift: unambiguous to         \
                                 1e6 / (2 * 33) = 15000 ppm */
#define QPSK_SUB_MAX 33       /* sub-blocks per block (1024 / 32) + a shorter tail */
#define QPSK_DC_SPANS 4       /* CFO spans in the DC estimate (this one and 3 before) */
#define QPSK_LAGS 5           /* sub-block lags 1, 2, 4, 8, 16 for the drift (doubling precision) */
#define QPSK_MAX_DRIFT 0.0062 /* |d| is clamped here (a little beyond the flagged range) */
/* The CFO peak search's reach, |nu| <= this many cycles per 4th-power value (both backends):
 * the values are one per transmitted symbol, 1 + d nominal symbols apart, so a carrier at the
 * acquisition range's edge has its line at 4 f (1 + d), beyond 4 x the range for a slow clock
 * (d > 0: at 0.1199 Rs and -2000 ppm the peak was missed, 1.5e-4 Rs off); at most the whole
 * spectrum. */
#define QPSK_CFO_SEARCH(acquisition) fmin(4 * (acquisition) * (1 + QPSK_MAX_DRIFT), 0.5)
/* Symbols are owned by the instants in [-QPSK_LEAD, N/sps - QPSK_LEAD): the window's edges sit
 * 1/16 symbol before the sample grid's, so a symbol centred exactly on the first sample (the
 * generator's default timing 0, and the usual convention of other tools) is counted whatever the
 * timing estimate's noise, and one centred exactly at the end is not */
#define QPSK_LEAD 0.0625

/* What the level, timing and NCO passes carry from span to span (qpsk_serial.h, which runs them on
 * the CPU and the GPU): the CPU's in prx_qpsk (its sr), the GPU's one per channel on the device,
 * moved between the two by qpsk_serial_state_of / _to. */
typedef struct {
  /* level */
  double dc_ring[QPSK_DC_SPANS][3]; /* the last spans' input sums: re, im, count */
  int64_t dc_span[QPSK_DC_SPANS];   /* their absolute span indices */
  int64_t dcw_prev[QPSK_DC_SPANS];  /* the last span's DC window (for a span without samples) */
  double dc_prev[2], gain_prev;     /* the last span's level (for a span without samples) */
  double dcw_prev_syms;
  unsigned dc_count, dcw_prev_n;
  /* timing */
  int have_prev;  /* a block's timing has been set */
  int have_e;     /* e_prev comes from a span with enough blocks */
  int have_clock; /* e_prev: a span of 4+ full blocks with a timing line */
  int range_prev; /* the last span's clock was beyond the supported range */
  double tau_prev, e_prev, om_prev[2], en_prev; /* e: the slope dtau/dt of the last span */
  double corr_prev[QPSK_LAGS][2]; /* the last span's sub-block correlations (for a short span) */
  int64_t k_end_prev;
  /* NCO */
  double theta_next; /* NCO phase at the next span's n_ref */
  double f_prev;     /* the last span's CFO (fallback when an estimate is not finite) */
  /* the GPU's CFO history: the region of the w row holding the last span with values (-1 none)
   * and their count (the CPU keeps its own, w_hist) */
  int hist_r;
  int64_t hist_n;
} qpsk_serial_state;

/* The shape of a block's first symbols, rotation-free (the block's phase need not be known),
 * measured where the symbols are (stage mf on the CPU; the GPU phase pass's step 0, or the bank's
 * block_ends kernel where the host runs the pass) by qpsk_shape_of (qpsk_serial_phase.h): their
 * second-order line (symbols on one line: BPSK; PRX_QPSK_WARN_NOT_QPSK), power levels (on
 * several rings: QAM; PRX_QPSK_WARN_LEVELS) and quarter steps (a quarter turn a symbol: MSK;
 * PRX_QPSK_WARN_QUARTER_STEPS). */
typedef struct {
  float line, levels, steps;
} qpsk_shape;

/* What the phase pass carries from span to span (qpsk_serial_phase.h, which runs it on the CPU and
 * the GPU): the CPU's in prx_qpsk (its ph), the GPU's one per channel on the device. */
typedef struct qpsk_phase_state {
  qpsk_sums sums_prev; /* the last block's V&V sums */
  qpsk_sums noise_ring[QPSK_NOISE_BLOCKS];
  unsigned noise_count;
  int have;         /* a block's phase has been set */
  int present_prev; /* the last block's signal-present decision */
  int pad;
  double phi_prev;             /* the last block's phase */
  double sig_prev, noise_prev; /* the last block's signal and noise powers (fallbacks) */
  qpsk_diff_prev dprev;        /* DIFFERENTIAL: the last symbol of the stream so far */
} qpsk_phase_state;

typedef struct {
  int64_t s;      /* absolute span index */
  size_t nw;      /* pre-pass values present (S, fewer for the last span of a stream) */
  prx_cf32 *w;    /* S values: x^4 of the pre-filter at the two half-symbol phases of symbol sS+i */
  prx_cf32 *win;  /* nfft: the estimation window, zero padded (FFT input) */
  prx_cf32 *spec; /* nfft: its spectrum */
  double f;       /* CFO estimate, cycles per symbol */
  double dc[2];   /* the input's mean over the span's samples */
  int64_t dc_win[QPSK_DC_SPANS]; /* the spans whose samples make that mean (absolute indices) */
  unsigned dc_nwin;              /* how many */
  double dc_syms;                /* their samples / sps: the symbols the mean is taken over */
  int dc_own;                    /* the span has samples of its own (it enters later windows) */
  double pil[2];   /* PILOTS: sum of its pilots as the input carries them (gain removed) */
  double pil_e[2]; /* PILOTS: the pilots' share of the removed DC, after the gain (qpsk_pilot_dc) */
  double gain;     /* 1 / RMS of the input (DC removed) over them: the scale to unit power */
  double e;        /* clock slope dtau/dt (the timing model's d = e / (1 - e)); the clock
                      offset is -e 1e6 ppm */
  int out_range;   /* the clock offset is beyond PRX_QPSK_MAX_CLOCK_PPM */
  int line;        /* the span's symbol-timing (O&M) line adds up over it */
  int64_t n_ref;   /* NCO reference sample floor(s S sps) */
  double theta;    /* NCO phase at n_ref */
  size_t nz;       /* win[nz, nfft) is zero (the FFT leaves its input as it is) */
} qpsk_span;

typedef struct {
  int64_t b;                    /* absolute block index */
  int span;                     /* its span within the batch */
  prx_cf32 *grid;               /* matched filter on grid samples 4bL - GM .. 4(b+1)L + GM - 1 */
  prx_cf32 *scratch;            /* input window (converted, de-rotated) */
  double mom[3];                /* input sums over its own samples: re, im, |x|^2 (finite ones) */
  double mom_n;                 /* how many finite samples */
  unsigned nonfinite;           /* how many not finite */
  double osub[QPSK_SUB_MAX][2]; /* O&M sums over its sub-blocks (inside the stream) */
  double osub_t[QPSK_SUB_MAX];  /* their centres, nominal symbols */
  double corr[QPSK_LAGS][2];    /* sums of osub[j] conj(osub[j - 2^i]) over complete sub-blocks */
  unsigned nsub;                /* sub-blocks present */
  double om[2];                 /* O&M sum referred to the block centre with the span's drift */
  double om_n;                  /* grid samples summed */
  double om_en;                 /* sum of |osub|^2: the noise level of |om|^2 */
  int locked;                /* its O&M line stands out of the noise: tau measured, not predicted */
  double tau;                /* unwrapped timing at the block centre, symbol periods */
  double d;                  /* clock slope used for its instants */
  double tres;               /* tau minus the span's clock line */
  int64_t k0, k1;            /* owned grid-symbol indices [k0, k1) */
  prx_cf32 *sym;             /* matched-filter output at their instants */
  qpsk_sums sums;            /* V&V and moments over sym */
  double phi;                /* unwrapped V&V phase (after de-rotation) */
  double sig, noise;         /* M2M4 over the noise window: signal power, noise variance */
  double sig_own, noise_own; /* this block's own M2M4 powers (normalised units) */
  double vv_stat;            /* signal-present statistic (prx_qpsk_block.signal) */
  qpsk_shape shape;          /* its first symbols' shape (qpsk_shape_of) */
  unsigned flags;            /* PRX_QPSK_BLOCK_*, and QPSK_BLK_LEVELS, QPSK_BLK_STEPS */
  uint8_t *tag;              /* PILOTS: per symbol 0..3 = data with that quarter-turn, 4 = pilot */
  qpsk_diff_prev prev;       /* DIFFERENTIAL: the symbol before sym[0] */
  uint64_t j0;               /* stream index of sym[0] */
  size_t out0;               /* output offset (data symbols) within the current call */
  unsigned n_data;
  int quarter;     /* PILOTS: quarter-turn at the block centre (for the report) */
  double pil_g[2]; /* PILOTS: sum of sym conj(pilot) over its pilots (qpsk_pilot_dc) */
  double pil_u[2]; /* PILOTS: sum of exp(j theta) pilot over them (theta: the NCO phase) */
  double pil_n;    /* PILOTS: its pilot symbols */
} qpsk_blk;

struct prx_qpsk {
  prx_qpsk_config cfg;
  double sps;          /* fs / Rs */
  unsigned L, B, S, G; /* block symbols, blocks per span, span symbols, spans per batch */
  unsigned Lmax;       /* most symbols one block can own (clock offsets up to QPSK_MAX_DRIFT) */
  unsigned nsub, Ls;   /* O&M sub-blocks per block and their length in symbols */
  unsigned nlags;      /* sub-block lags used: 2^i <= nsub / 2 */
  double pre_gain;     /* DC gain of the pre-filter (the sum of its taps) */
  size_t nfft;
  qpsk_fir mf;     /* matched filter on the 4/T grid */
  qpsk_fir pre;    /* CFO pre-filter on the 2/T grid */
  fftwf_plan plan; /* made by prx_qpsk_create, or at the first CFO stage (plan_later) */
  int plan_failed; /* that late plan could not be made: the call returns an error */
  prx_pool *pool;
  size_t in_size; /* bytes per input sample */
  size_t scratch_len;

  /* input: raw samples [buf_base, buf_base + buf_len) kept from earlier calls, then during a call
   * the caller's chunk [ext_base, ext_base + ext_n) read in place */
  uint8_t *buf;
  size_t buf_cap;
  int64_t buf_base;
  size_t buf_len;
  const uint8_t *ext;
  int64_t ext_base;
  size_t ext_n;
  int64_t n_total; /* samples received */
  int flushing;    /* inside flush: samples at or after n_total read as zero */

  /* the batch being processed */
  qpsk_span *spans; /* G */
  qpsk_blk *blks;   /* G * B */
  void *work;       /* the spans' and blocks' buffers, carved from one allocation (qpsk.c) */
  size_t n_blks;
  prx_cf32 *acq;     /* PILOTS: corrected symbols for frame acquisition (S + 2 (L + 1)) */
  uint8_t *out_bits; /* the call's output buffers, current position */
  float *out_llrs;
  prx_cf32 *out_syms; /* corrected symbols (prx_qpsk_execute_symbols), or NULL */

  /* stream state carried from batch to batch */
  int64_t next_span;
  qpsk_serial_state sr; /* the level, timing and NCO passes' */
  qpsk_phase_state ph;  /* the phase pass's */
  prx_cf32 *w_hist;     /* the previous span's pre-pass values, for a short span's window (in
                           work: swapped with a span's) */
  size_t w_hist_n;
  double pil_ring[QPSK_DC_SPANS][2]; /* PILOTS: the pilots' sums (span.pil) of the last spans */
  int64_t pil_span[QPSK_DC_SPANS];   /* with samples of their own, and their absolute indices */
  unsigned pil_count;
  int64_t frame_off;    /* PILOTS: frame alignment (stream index of a frame start), -1: none */
  double pcorr[2];      /* PILOTS: correlation of the current frame's pilot word so far */
  int quarter;          /* PILOTS: quarter-turn of the latest pilot word */
  uint64_t n_sym;       /* symbols demodulated in this stream (stream index of the next) */
  prx_qpsk_stats stats; /* totals since create/reset */
  double acc_sig, acc_noise, acc_cfo, acc_d, acc_n; /* summary sums (blocks with a signal) */
  double all_sig, all_noise, all_cfo, all_d, all_n; /* the same over all blocks */
  /* the CFO's drift: sums over the blocks with a signal of their time t (s, from the first such
   * block's, dr_t0: exact sums far into a stream) and CFO f (Hz): t, t^2, f, t f, count; the
   * first and last such block's span */
  double dr_t0, dr_t, dr_tt, dr_f, dr_tf, dr_n;
  int64_t dr_s0, dr_s1;
  double all_cfo_min, all_cfo_max;
  /* the weak-carrier test (qpsk_weak_add, prx_qpsk_get_stats): the open CFO span's index, the sum
   * of its full blocks' V&V statistics and their count; the spans tested and those whose blocks
   * together show the line */
  int64_t wk_span;
  double wk_sum;
  unsigned wk_n;
  int wk_timing; /* the open span's symbol-timing line (qpsk_span.line) */
  uint64_t wk_spans, wk_lines, wk_timings;
  /* the blocks flagged without a signal whose own M2M4 Es/N0 is above QPSK_UNLOCKED_ESN0_DB
   * (PRX_QPSK_WARN_UNLOCKED) */
  uint64_t blk_unlocked;
  /* the full blocks with a signal, and of them those whose symbols lie on one line
   * (the shape's line above QPSK_LINE_MIN: PRX_QPSK_WARN_NOT_QPSK), whose symbols' power lies on
   * several levels (QPSK_BLK_LEVELS: PRX_QPSK_WARN_LEVELS) and whose symbols turn by a quarter
   * turn each (QPSK_BLK_STEPS: PRX_QPSK_WARN_QUARTER_STEPS) */
  uint64_t blk_full_signal, blk_line, blk_levels, blk_steps;
  /* the CFO alias test (qpsk_alias.c): on or not, the samples measured and their sums (a bank on
   * the CUDA driver measures on the device and sets them: qpsk_bank_gpu.c) */
  int al_on;
  size_t al_n;
  qpsk_alias_sums al;
  prx_cf32 *pilot; /* PILOTS: the pilot word */
  void *sr_tmp;    /* the serial passes' records of one span (qpsk_serial_scratch_bytes) */

  /* estimates of the current call */
  prx_qpsk_block *est;
  size_t n_est;

  /* called after each batch's stages with its spans and blocks complete (NULL: none): the tests
   * that hold the CUDA stage kernels to the CPU stages read the blocks' inputs and outputs here */
  void (*batch_probe)(void *ctx, const prx_qpsk *q);
  void *probe_ctx;
};

/* qpsk_batch.c: demodulates spans [s0, s0 + g) (their blocks below the stream end when flushing),
 * writing data symbols at q->out_bits / q->out_llrs and advancing them; returns the count. */
size_t qpsk_run_batch(prx_qpsk *q, int64_t s0, unsigned g);

/* The serial passes of a batch, over the spans and blocks (q->spans, q->blks) as the parallel
 * stages leave them: the CPU stages of qpsk_run_batch, or the CUDA stage kernels' per-block
 * records (qpsk_stage_blocks.h) copied into the blocks, so that both backends take their
 * block-level decisions with these same functions. level: the spans' DC and gain from the
 * blocks' input sums (after stage pre); timing: clock slope, timing, ownership (after om); nco:
 * the spans' NCO phases (after the CFO stage), each span by span through qpsk_serial.h's passes
 * (qpsk_serial.c: the GPU's kernels run the same); phase: V&V phase, noise, flags, ambiguity,
 * output offsets (after mf; qpsk_batch.c). */
void qpsk_serial_level(prx_qpsk *q, unsigned g);
void qpsk_serial_timing(prx_qpsk *q, unsigned g);
void qpsk_serial_nco(prx_qpsk *q, unsigned g);
void qpsk_serial_phase(prx_qpsk *q);
/* A block's V&V sums and shape (qpsk_shape_of) over its n symbols bk->sym (0 or
 * fewer: none, zeros): stage mf's, and again after the pilots' DC share. */
void qpsk_blk_measure(qpsk_blk *bk, int64_t n);

/* The bytes of q->sr_tmp, the level and timing passes' records of one span of B blocks
 * (qpsk_serial.c). */
size_t qpsk_serial_scratch_bytes(size_t B);

/* qpsk_pilot_dc.c, PILOTS, in the phase pass once the frames are aligned: the pilot word repeats
 * every frame, so near 0 Hz the span's DC (the input's mean) holds the pilots' mean, which the
 * level step removed from every sample. This predicts that share from the pilots (their known
 * symbols, the carrier's complex gain measured on them per block, the NCO phase) and adds it back
 * to the blocks' symbols, recomputing their sums: the receiver's DC stays removed, the signal's
 * pilots do not. */
void qpsk_pilot_dc(prx_qpsk *q);

/* qpsk_run_batch in steps, for the bank's stage-major driver (qpsk_bank_gpu.c), which runs the
 * parallel stages on the GPU between the serial passes: begin lays out the blocks of spans
 * [s0, s0 + g) (returns their count), stage_cfo and stage_out are the CPU stages of span i and
 * block t, end reports the blocks, carries the state to the next batch and returns the data
 * symbols. */
size_t qpsk_batch_begin(prx_qpsk *q, int64_t s0, unsigned g);
void qpsk_stage_cfo(prx_qpsk *q, unsigned i);
void qpsk_stage_out(prx_qpsk *q, size_t t);
size_t qpsk_batch_end(prx_qpsk *q, unsigned g);

/* The weak-carrier test (qpsk_batch.c): a CFO span whose full blocks' V&V statistics average
 * above QPSK_WEAK_LINE shows the carrier's 4th-power line as a whole, though each block's own
 * (qpsk_ph_own: above 5) may not. Noise alone averages 1.33 a block after the CFO search (its
 * peak is noise's largest), a carrier at Es/N0 0 dB 2.4, at 1 dB 3.5. qpsk_weak_add counts a
 * reported block into its span's sums (a new span closes the last), qpsk_weak_close closes the
 * open span (a stream's end), qpsk_weak_counts gives the spans tested, those with the line and
 * those with a symbol-timing line (qpsk_span.line: a signal at twice or half the symbol rate
 * shows its blocks' 4th-power line but no timing line), the open span included. */
#define QPSK_WEAK_LINE 2.0

/* PRX_QPSK_WARN_UNLOCKED: a full block flagged without a signal whose own M2M4 Es/N0 is above
 * this is a strong signal the block could not follow: QPSK shows its 4th-power line in a block
 * of 256 symbols from ~4 dB, and noise alone reaches ~5 dB by M2M4 at 3 sigma over 512 symbols
 * (-14 dB its median) */
#define QPSK_UNLOCKED_ESN0_DB 10.0
/* ... and whose symbols' power (the span's level made 1) is above this: a block in a gap of
 * zeros keeps a near-constant remainder, 60 dB by M2M4 at ~1e-4 of the span's power */
#define QPSK_UNLOCKED_POWER 0.1

/* PRX_QPSK_WARN_NOT_QPSK: a full block with a signal whose second-order line (qpsk_ph_line) is
 * above this holds symbols on one line (BPSK reaches it from ~0 dB Es/N0: Es / (Es + N0); QPSK in
 * ~1e-6 of its blocks); the warning is raised where most blocks with a signal (two at least) do */
#define QPSK_LINE_MIN 0.5

/* PRX_QPSK_WARN_LEVELS: a block whose power levels (qpsk_ph_levels) read below this is flagged
 * QPSK_BLK_LEVELS, a flag of the demodulator's own (not in prx_qpsk_block.flags: up to one QPSK
 * block in ~55 has it by chance); the warning is raised where most full blocks with a signal
 * (three at least) have it: by chance for QPSK in ~6e-5 of the streams of 5 blocks at 14 dB,
 * the worst case */
#define QPSK_LEVELS_MAX 2.5f
/* ... where their variance is at least this share of their mean's square (16QAM's: 0.32, two
 * paths of 1 and 0.3: 0.15; QPSK's noise: 2 N0 / Es, 0.05 at 16 dB) */
#define QPSK_LEVELS_SPREAD 0.05
#define QPSK_BLK_LEVELS (1u << 16)
/* PRX_QPSK_WARN_QUARTER_STEPS: a block whose quarter steps (qpsk_ph_line's) are above this is
 * flagged QPSK_BLK_STEPS (the demodulator's own, as QPSK_BLK_LEVELS); the warning is raised
 * where most full blocks with a signal (two at least) have it (MSK from ~3 dB Es/N0: its measure
 * Es / (Es + N0) squared; QPSK above it in ~1e-4 of its blocks: a one-dimensional walk of 63
 * signs, as qpsk_ph_line's) */
#define QPSK_STEPS_MIN 0.5f
#define QPSK_BLK_STEPS (1u << 17)

/* The CFO alias test (qpsk_alias.c): the input's first qpsk_alias_len(sps) samples since create
 * or reset measured (qpsk_alias_add from execute; a bank on the CUDA driver measures its rows on
 * the device: the stage kernels' alias entry), their spectrum's centre against the estimate f_est
 * (cycles a symbol): qpsk_alias_suspect is 1 where it lies at least QPSK_ALIAS_WAY of the way
 * to an alias's (a carrier beyond the acquisition range, its 4th-power line aliased), from
 * qpsk_alias_min(sps) samples on. The length is QPSK_ALIAS_SYMBOLS symbols (32768 samples at
 * least): a random symbol stream's own spectrum moves the measure by ~1/sqrt(symbols) of its
 * band, and over 512 symbols (32768 samples at sps 64) it reached an alias's angle in 6 of 25
 * trials of a carrier within the range. */
#define QPSK_ALIAS_SYMBOLS 8192.0
static inline size_t qpsk_alias_len(double sps) {
  const double n = ceil(QPSK_ALIAS_SYMBOLS * sps);
  return n > 32768 ? (size_t)n : 32768;
}
static inline size_t qpsk_alias_min(double sps) { return qpsk_alias_len(sps) / 8; }
#define QPSK_ALIAS_K 2       /* the aliases f -+ Rs/4, f -+ Rs/2 */
#define QPSK_ALIAS_WAY 0.625 /* how far towards an alias's angle the measure must lie */
void qpsk_alias_start(prx_qpsk *q);
void qpsk_alias_add(prx_qpsk *q, const void *in, size_t n);
int qpsk_alias_suspect(const prx_qpsk *q, double f_est);
void qpsk_weak_add(prx_qpsk *q, int64_t span, int timing, double vv_stat, int full);
void qpsk_weak_close(prx_qpsk *q);
void qpsk_weak_counts(const prx_qpsk *q, uint64_t *spans, uint64_t *lines, uint64_t *timings);

/* qpsk.c, for the same driver, which keeps its channels' input on the device: the input span s
 * reads, [*lo, *end), and the stream's reset after a flush (the totals kept) */
void qpsk_span_need(const prx_qpsk *q, int64_t s, int64_t *lo, int64_t *end);
void qpsk_stream_reset(prx_qpsk *q);

/* ---- qpsk_input.c ---- */

/* Input samples [lo, hi) as cf32 into out (dc before 0 and at or after n_total, non-finite
 * samples as 0), then (x - dc) gain exp(-j (theta + omega (n - lo))) when rotate is set. Returns
 * out, or a pointer into the input buffer when no copy is needed (rotate not set). Samples
 * [fin_lo, fin_hi) are known to be finite (not tested again; an empty range for none). */
const prx_cf32 *qpsk_fetch(const prx_qpsk *q, int64_t lo, int64_t hi, prx_cf32 *out, int rotate,
                           double theta, double omega, const double dc[2], double gain,
                           int64_t fin_lo, int64_t fin_hi);

/* Sums over input samples [lo, hi) clipped to the stream: mom = (sum re, sum im, sum |x|^2) and
 * *n_fin of the finite ones, *n_bad the non-finite ones. scratch holds hi - lo samples. */
void qpsk_input_moments(const prx_qpsk *q, int64_t lo, int64_t hi, prx_cf32 *scratch, double mom[3],
                        double *n_fin, unsigned *n_bad);

/* The part of input samples [lo, hi) that lies in the caller's chunk of the current call (not
 * yet read by any stage: its first read comes from memory): its raw bytes, *bytes of them
 * (NULL and 0 for none). */
const void *qpsk_input_in_chunk(const prx_qpsk *q, int64_t lo, int64_t hi, size_t *bytes);

/* Input range [lo, hi) read by the matched filter for the symbols of block b. */
void qpsk_mf_window(const prx_qpsk *q, int64_t b, int64_t *lo, int64_t *hi);

/* Number of integers k >= 0 with k * step < limit. */
int64_t qpsk_count_below(double limit, double step);

/* prx_fft_warm (dsp/fft_plan.h) for prx_qpsk_create(cfg): the span's transform with the effort
 * the demodulator plans it with. NULL where cfg is invalid; destroyed by prx_fft_warm_end (after
 * the demodulator has planned: the twiddles are shared). */
void *prx_qpsk_fft_warm(const prx_qpsk_config *cfg);

/* prx_qpsk_create without the span's FFT plan, which the first CFO stage makes: the making no
 * longer waits for FFTW's planner (its set-up, the wisdom's import, the plan: ~1 ms), which a
 * prx_qpsk_fft_warm on another thread makes ready meanwhile while the first samples are read and
 * pre-filtered. The demodulator's output is the same (the same plan from the same wisdom). */
prx_status prx_qpsk_create_plan_later(const prx_qpsk_config *cfg, prx_qpsk **out);

/* Makes q's span FFT plan where it is not made yet; non-zero where FFTW could not. */
int qpsk_plan_span_fft(prx_qpsk *q);

#endif
