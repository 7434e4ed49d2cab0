/* polyrx demod: demodulates one QPSK signal (raw IQ file, standard input or SigMF) with the
 * open-loop demodulator and writes its data bits, optionally its LLRs and a JSON report of the
 * per-block estimates.
 *
 * Streaming, in bounded memory: read a block of samples, demodulate, append the bits (and LLRs)
 * and the blocks' estimates to the report; at the end of the input flush the demodulator (the
 * symbols whose instants lie before the end are all written). The report is written block by
 * block too (cJSON builds each object, the file is assembled as it goes). */
#include "cli.h"
#include "core/internal.h"
#include "dsp/convert.h"
#include "dsp/fft_plan.h"
#include "dsp/mix.h"
#include "dsp/pack.h"

#include "plot/plot.h"
#include "qpsk/qpsk_internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CMD "demod"
#define READ_BLOCK ((size_t)1 << 18) /* input samples per read (default of --read-block) */
#define MAX_READ_BLOCK ((size_t)1 << 26)
#define IN_DEPTH 4       /* input blocks in flight (stream) */
#define OUT_DEPTH 4      /* output slots in flight */
#define WAKE_BATCH 3     /* output slots waiting before the writer is woken */
#define CONST_KEEP 65536 /* symbols drawn in --constellation, whatever the run's length */

typedef struct {
  const char *input, *format, *rate, *symbol_rate, *output, *llr, *report, *pilots, *max_cfo;
  const char *constellation; /* --constellation FILE.png (NULL: none) */
  double rolloff;
  unsigned long span, block, cfo_span, threads, read_block;
  prx_qpsk_ambiguity ambiguity;
  prx_backend backend;
  int packed, quiet, ambiguity_set;
  int swap_iq;                  /* --swap-iq */
  int pi4;                      /* --pi4 */
  const char *start, *duration; /* --start, --duration: the time range read */
  const char *center;           /* -f: the input's centre frequency */
  const char *carrier_freq;     /* --carrier-freq: the carrier's, mixed down to 0 Hz */
} options;

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: polyrx demod -i FILE|- -s RATE --symbol-rate RS -o BITS [options]\n"
      "\n"
      "Demodulates a QPSK signal with the open-loop (feed-forward, block-parallel) demodulator:\n"
      "RRC matched filter, coarse CFO from the 4th-power spectrum (refined), Oerder & Meyr\n"
      "timing, Viterbi & Viterbi phase, both unwrapped across blocks; the quarter-turn\n"
      "ambiguity resolved by differential decoding or pilot words. Writes the data bits, and\n"
      "optionally LLRs and a JSON report of the per-block estimates. Streams in bounded memory.\n"
      "\n"
      "input:\n"
      "  -i, --input FILE|-     raw interleaved IQ file, - for standard input, or a SigMF\n"
      "                         recording (X.sigmf-meta, X.sigmf-data or the base name X),\n"
      "                         or a WAV I/Q file (RIFF or RF64: format and rate from its\n"
      "                         header)\n"
      "  -F, --format FMT       raw sample format: cf32, ci16, ci8, cu8 (default cf32; SigMF,\n"
      "                         WAV: from the header);\n"
      "                         real samples (a direct-sampling receiver): rf32, ri16,\n"
      "                         ri8, ru8, read as complex at half the rate, a quarter of\n"
      "                         it above their DC (-s: the real samples' rate)\n"
      "                         a raw file named .cu8, .cs8, .cs16 or .cf32 is read as that\n"
      "  -s, --rate RATE        sample rate in Hz, e.g. 12.8k (required for raw input; SigMF,\n"
      "                         WAV: from the header, which -s overrides)\n"
      "  -f, --center FREQ      the input's centre frequency in Hz (default: its header's, else\n"
      "                         0): the frame of --carrier-freq and the report\n"
      "      --swap-iq          exchange I and Q as read: a recording whose two channels\n"
      "                         are the wrong way round (its spectrum mirrored)\n" CLI_HELP_RANGE_25
      "\n"
      "signal:\n"
      "  -r, --symbol-rate RS   symbol rate in Hz, e.g. 2400 (required; RATE/RS >= 2, need not\n"
      "                         be an integer)\n"
      "      --rolloff B        RRC roll-off (default 0.35)\n"
      "      --span N           matched-filter span in symbols (default 12)\n"
      "      --diff             data differentially encoded (the default): bits from the\n"
      "                         quarter-turn between successive symbols\n"
      "      --pilots P:L       a pilot word of L symbols starts every frame of P symbols\n"
      "                         (coherent decisions; the word sets the quarter-turn)\n"
      "      --coherent         coherent Gray decisions, quarter-turn left unresolved\n"
      "      --pi4              pi/4-QPSK: each symbol's points turned pi/4 from the last (with\n"
      "                         --diff, pi/4-DQPSK: TETRA, IS-136, P25 CQPSK and C4FM); not\n"
      "                         with --pilots. The carrier's modulation is checked on the\n"
      "                         first samples: read the other way, a warning\n"
      "      --carrier-freq F   the carrier's frequency in Hz, in the input's frame (its centre\n"
      "                         from the header or -f; a real recording's centre is a quarter\n"
      "                         of its rate above DC, so an audio file's carrier is its audio\n"
      "                         frequency): the input is mixed down by F - centre before\n"
      "                         demodulation (default: the carrier at the centre)\n"
      "      --max-cfo HZ       CFO acquisition range +-HZ (default 0.12 RS; below RS/8 =\n"
      "                         0.125 RS, where the 4th-power estimate turns ambiguous)\n"
      "\n"
      "demodulator:\n"
      "      --block N          symbols per estimation block, 256..1024 (default 512)\n"
      "      --cfo-span N       symbols per coarse CFO estimate, 1024..4194304 and 4 blocks at\n"
      "                         least (default 8192): a shorter span follows a frequency that\n"
      "                         drifts faster (a satellite's Doppler; --block 256 --cfo-span\n"
      "                         1024: 8 times the default's), a longer one weak carriers better\n"
      "  -t, --threads N        worker threads, 0 = all cores (default 0; from 8 cores, all\n"
      "                         but two, left to reading and writing); output is identical\n"
      "                         for any N\n"
      "      --read-block N     input samples per read (default %zu); reading, demodulation\n"
      "                         and writing run at once on successive blocks; output is\n"
      "                         identical for any N\n"
      "      --backend B        auto, cpu or cuda (default auto). The demodulation runs on the\n"
      "                         CPU with every backend: cuda only checks that a GPU is usable\n"
      "                         (an error where none is). The library's CUDA demodulator bank\n"
      "                         stages its rows through the host today: CPU results, copied to\n"
      "                         the GPU (docs/ARCHITECTURE.md, \"Demodulator bank\")\n"
      "\n"
      "output:\n"
      "  -o, --output BITS|-    data bits: one byte (0 or 1) per bit, b0 then b1 of each data\n"
      "                         symbol; - for standard output\n"
      "      --bits unpacked|packed  packed: 8 bits per byte, first bit in the MSB, the last\n"
      "                         byte padded with zeros (default unpacked)\n"
      "      --llr FILE         LLRs log(P(b=0)/P(b=1)), float32 little-endian, one per bit\n"
      "      --report FILE      JSON report: configuration, per-block estimates (CFO, phase,\n"
      "                         timing, clock, Es/N0, noise, signal present, flags), totals\n"
      "                         and warnings\n"
      "      --constellation FILE.png  a density plot of the corrected matched-filter symbols\n"
      "                         (up to 65536 of them, spread over the whole run)\n"
      "  -q, --quiet            no summary or progress line on standard error\n"
      "  -h, --help             this help\n"
      "\n"
      "One symbol is demodulated for every symbol centred inside the input (pilots consumed).\n"
      "Warnings (standard error, and the report's status \"warning\"): most of the input without\n"
      "a signal (or a weak one), a strong signal some blocks cannot follow (a drifting\n"
      "frequency, not QPSK), symbols on one line (BPSK), a wrong symbol rate, a carrier\n"
      "beyond --max-cfo (aliased), a symbol clock beyond +-5000 ppm, timing jumps, NaN or\n"
      "infinite samples (a wrong -F), a pi/4-QPSK carrier read without --pi4 or a QPSK one\n"
      "with it, symbols on several power levels (QAM, APSK; both by the detector's verdict\n"
      "on the first samples, from 7.5 dB), a carrier reaching past a channelize\n"
      "recording's passband.\n"
      "The bits are written all the same.\n"
      "Formats: docs/FORMATS.md. Numbers take engineering suffixes: k, M, G.\n"
      "\n"
      "examples:\n"
      "  polyrx demod -i ch.sigmf-meta -r 2400 -o ch.bits --report ch.json\n"
      "  polyrx demod -i sig.ci16 -F ci16 -s 12.8k -r 2400 --pilots 256:16 -o - --llr sig.llr\n"
      "  polyrx gen -o - -s 1M -n 1M --carrier rs=250k,diff --esn0 10 | \\\n"
      "      polyrx demod -i - -s 1M -r 250k -o out.bits\n",
      READ_BLOCK);
}

static int set_ambiguity(options *o, prx_qpsk_ambiguity a, const char *opt) {
  if (o->ambiguity_set && o->ambiguity != a)
    return cli_error(CMD, "%s conflicts with an earlier --diff/--pilots/--coherent: give one", opt);
  o->ambiguity = a;
  o->ambiguity_set = 1;
  return -1;
}

static int parse_args(int argc, char **argv, options *o) {
  memset(o, 0, sizeof *o);
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  o->rolloff = 0.35;
  o->span = 12;
  o->block = 512;
  o->read_block = READ_BLOCK;
  o->cfo_span = 8192;
  o->ambiguity = PRX_QPSK_DIFFERENTIAL;
  enum {
    OPT_ROLLOFF = 256,
    OPT_SPAN,
    OPT_DIFF,
    OPT_PILOTS,
    OPT_COHERENT,
    OPT_MAXCFO,
    OPT_CARRIERFREQ,
    OPT_BLOCK,
    OPT_CFOSPAN,
    OPT_BITS,
    OPT_LLR,
    OPT_REPORT,
    OPT_READBLOCK,
    OPT_BACKEND,
    OPT_CONSTELLATION,
    OPT_PI4
  };
  static const struct option longs[] = {
      {"input", required_argument, 0, 'i'},
      {"format", required_argument, 0, 'F'},
      {"rate", required_argument, 0, 's'},
      {"symbol-rate", required_argument, 0, 'r'},
      {"rolloff", required_argument, 0, OPT_ROLLOFF},
      {"span", required_argument, 0, OPT_SPAN},
      {"diff", no_argument, 0, OPT_DIFF},
      {"pilots", required_argument, 0, OPT_PILOTS},
      {"coherent", no_argument, 0, OPT_COHERENT},
      {"pi4", no_argument, 0, OPT_PI4},
      {"max-cfo", required_argument, 0, OPT_MAXCFO},
      {"carrier-freq", required_argument, 0, OPT_CARRIERFREQ},
      {"center", required_argument, 0, 'f'},
      {"centre", required_argument, 0, 'f'},
      {"block", required_argument, 0, OPT_BLOCK},
      {"cfo-span", required_argument, 0, OPT_CFOSPAN},
      {"threads", required_argument, 0, 't'},
      {"backend", required_argument, 0, OPT_BACKEND},
      {"output", required_argument, 0, 'o'},
      {"bits", required_argument, 0, OPT_BITS},
      {"llr", required_argument, 0, OPT_LLR},
      {"report", required_argument, 0, OPT_REPORT},
      {"read-block", required_argument, 0, OPT_READBLOCK},
      {"constellation", required_argument, 0, OPT_CONSTELLATION},
      CLI_INPUT_LONGOPTS,
      {"quiet", no_argument, 0, 'q'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0},
  };
  optind = 0;
  opterr = 0;
  int c, rc;
  while ((c = getopt_long(argc, argv, ":i:F:s:f:r:t:o:qh", longs, NULL)) != -1) {
    const char *a = optarg;
    switch (c) {
    case 'i': o->input = a; break;
    case 'F': o->format = a; break;
    case 's': o->rate = a; break;
    case 'f': o->center = a; break;
    case 'r': o->symbol_rate = a; break;
    case 'o': o->output = a; break;
    case 'q': o->quiet = 1; break;
    case CLI_OPT_SWAP_IQ: o->swap_iq = 1; break;
    case CLI_OPT_START: o->start = optarg; break;
    case CLI_OPT_DURATION: o->duration = optarg; break;
    case 'h': usage(stdout); return 0;
    case OPT_ROLLOFF:
      if (cli_parse_eng(a, &o->rolloff) || !(o->rolloff > 0 && o->rolloff <= 1))
        return cli_bad_value(CMD, "--rolloff", a, "roll-off (in (0, 1])");
      break;
    case OPT_SPAN:
      if (cli_parse_uint(a, 2, 64, &o->span))
        return cli_bad_value(CMD, "--span", a, "span (a whole number of symbols, 2..64)");
      break;
    case OPT_DIFF:
      if ((rc = set_ambiguity(o, PRX_QPSK_DIFFERENTIAL, "--diff")) >= 0) return rc;
      break;
    case OPT_COHERENT:
      if ((rc = set_ambiguity(o, PRX_QPSK_NONE, "--coherent")) >= 0) return rc;
      break;
    case OPT_PILOTS:
      if ((rc = set_ambiguity(o, PRX_QPSK_PILOTS, "--pilots")) >= 0) return rc;
      o->pilots = a;
      break;
    case OPT_PI4: o->pi4 = 1; break;
    case OPT_MAXCFO: o->max_cfo = a; break;
    case OPT_CARRIERFREQ: o->carrier_freq = a; break;
    case OPT_READBLOCK:
      if (cli_parse_uint(a, 1, MAX_READ_BLOCK, &o->read_block))
        return cli_error(CMD, "--read-block: '%s' is not a valid block size (1..%zu samples)", a,
                         MAX_READ_BLOCK);
      break;
    case OPT_BLOCK:
      if ((rc = cli_parse_block(CMD, a, &o->block)) >= 0) return rc;
      break;
    case OPT_CFOSPAN:
      if ((rc = cli_parse_cfo_span(CMD, a, &o->cfo_span)) >= 0) return rc;
      break;
    case 't':
      if (cli_parse_uint(a, 0, 1024, &o->threads))
        return cli_bad_value(CMD, "--threads", a, "thread count (0..1024, 0 = all cores)");
      break;
    case OPT_BITS:
      if (!strcmp(a, "packed"))
        o->packed = 1;
      else if (strcmp(a, "unpacked"))
        return cli_error(CMD, "--bits: '%s' is not a bit format (unpacked or packed)", a);
      break;
    case OPT_BACKEND:
      if (cli_parse_backend(CMD, a, &o->backend) >= 0) return 1;
      break;
    case OPT_LLR: o->llr = a; break;
    case OPT_REPORT: o->report = a; break;
    case OPT_CONSTELLATION: o->constellation = a; break;
    case ':': return cli_error(CMD, "option %s needs a value", argv[optind - 1]);
    default:
      return cli_error(CMD, "unknown option '%s' (polyrx demod --help lists them)",
                       argv[optind - 1]);
    }
  }
  if (optind < argc)
    return cli_error(CMD, "unexpected argument '%s' (the input is given with -i)", argv[optind]);
  if (!o->input) return cli_error(CMD, "no input: give -i FILE, or -i - for standard input");
  if (!o->symbol_rate) return cli_error(CMD, "no symbol rate: give --symbol-rate RS (e.g. 2400)");
  if (!o->output) return cli_error(CMD, "no output: give -o BITS, or -o - for standard output");
  if ((rc = cli_check_cfo_span(CMD, o->cfo_span, o->block)) >= 0) return rc;
  if (o->pi4 && o->ambiguity == PRX_QPSK_PILOTS)
    return cli_error(CMD,
                     "--pi4 with --pilots is not supported: pi/4-QPSK takes --diff (pi/4-DQPSK) "
                     "or --coherent");
  if (o->constellation) {
    size_t n = strlen(o->constellation);
    if (n < 4 || strcmp(o->constellation + n - 4, ".png"))
      return cli_error(CMD, "--constellation %s: the picture is a PNG; give a name ending in .png",
                       o->constellation);
  }
  return -1;
}

/* ---- the run ---- */

typedef struct {
  options o;
  prx_iq_reader *reader;
  prx_iq_info in;
  prx_qpsk_config qc;
  prx_qpsk *q;
  FILE *bits_f, *llr_f, *rep_f;
  uint8_t *bits, *packbuf; /* the flush's output, and the packed bits of every write */
  float *llrs;
  prx_cf32 *syms; /* corrected symbols of the compute stage and the flush (--constellation) */
  prx_cf32 *keep; /* up to CONST_KEEP of them, a uniform sample of the whole run */
  size_t n_keep;
  uint64_t n_seen, lcg;
  cli_progress progress;
  size_t cap;
  size_t slot_syms, llr_off; /* a pipeline output slot: symbols it holds, where its LLRs start */
  prx_bit_packer packer;     /* packed bits: those waiting for their byte */
  uint64_t n_in, n_bits, n_blocks;
  int rep_first;
  int fatal;        /* the demodulator or an output failed: no more symbols are written */
  int flushed;      /* the demodulator was flushed in the pipeline's final compute call */
  int write_failed; /* a write of the bits or LLRs failed, and said so */
  long long bits_bytes, llr_bytes; /* the outputs' sizes once flushed (-1: not regular files) */
  /* the flush's output slot (its sequence number; UINT64_MAX before the flush): the writer pads
   * the packed output's last byte there */
  _Atomic uint64_t flush_slot;
  uint64_t n_slots; /* output slots compute has filled */
  /* --carrier-freq: the input mixed down by mix_hz (mix: cycles a sample) as cf32 in mix_buf */
  double mix_hz, mix;
  prx_cf32 *mix_buf;
  size_t mix_cap;
  int trunc_pending[2]; /* the bits and LLR files wait to be emptied (open_out_emptied_later) */
  int rep_fatal;        /* the report could not be written */
  /* POLYRX_TIMING: each phase's wall time; compute's wall and CPU ms inside the demodulator and
   * its CPU ms in the stream; the pipeline's counts (compute's sleeps) */
  cli_timing tm;
  double ms_exec, ms_exec_cpu, ms_stream_cpu;
  /* POLYRX_TIMING: when the stream began, when compute first had samples (ms after the stream's
   * start: the threads' start and the first block's read) and when its last execute ended */
  double t_stream, ms_first_in, t_exec_end, ms_after_exec, ms_flush;
  long stream_preempted; /* compute's involuntary switches in the stream */
  /* POLYRX_TIMING: the command's start and the timing line's print in Unix time (s), for a
   * caller that timed the process from outside: its exec before, its end after */
  double unix_start;
  prx_pipe_result pipe_res;
  cli_first_block first; /* the first block, read while the demodulator is made */
  /* the first samples demodulated, for the detector's verdict on the modulation (mod_code: its
   * warning's code, NULL for none; its text in modc.car[0].text) */
  cli_mod_check modc;
  const char *mod_code;
  int levels;         /* ... and whether its symbols' power lies on several levels (QAM, APSK) */
  char passband[400]; /* beyond_passband's text: the carrier reaches past a channel recording's
                         passband (empty: it does not, or the input is not one) */
  void *fft_warm;     /* FFTW's planner made ready meanwhile (prx_qpsk_fft_warm) */
  pthread_t warm;     /* its thread, while warming */
  int warming;
} run_state;

static int setup_input(run_state *r) {
  const options *o = &r->o;
  cli_input_opts in = {o->input, o->format,  o->rate,  o->center,  "12.8k",
                       o->quiet, o->swap_iq, o->start, o->duration};
  return cli_open_input(CMD, &in, &r->reader, &r->in);
}

static void on_block(void *user, const prx_qpsk_block *b);
static int grow(run_state *r, size_t need);

static void *warm_fft(void *arg) {
  run_state *r = arg;
  r->fft_warm = prx_qpsk_fft_warm(&r->qc);
  return NULL;
}

/* After the stream: the warm thread joined, its plan destroyed (the demodulator's own plan made
 * by then, sharing its twiddles), unless the process's end frees it. */
static void end_warm(run_state *r) {
  if (r->warming) pthread_join(r->warm, NULL);
  r->warming = 0;
  if (!cli_exit_frees_skipped()) prx_fft_warm_end(r->fft_warm);
  r->fft_warm = NULL;
}

static int setup_demod(run_state *r) {
  const options *o = &r->o;
  double rs;
  if (cli_parse_eng(o->symbol_rate, &rs) || !(rs > 0))
    return cli_bad_value(CMD, "--symbol-rate", o->symbol_rate,
                         "symbol rate (a positive number of Hz)");
  prx_qpsk_config c = prx_qpsk_config_default();
  c.sample_rate = r->in.sample_rate;
  c.symbol_rate = rs;
  c.rolloff = o->rolloff;
  c.span = (unsigned)o->span;
  c.block_symbols = (unsigned)o->block;
  c.cfo_span_symbols = (unsigned)o->cfo_span;
  c.ambiguity = o->ambiguity;
  c.modulation = o->pi4 ? PRX_QPSK_PI4 : PRX_QPSK_PLAIN;
  c.in_format = r->in.format;
  c.threads = (int)o->threads;
  /* all cores (-t 0): two of them left to the pipeline's reader and writer where there are 8 or
   * more, so that no worker waits for a core they hold (the workers meet at the end of every
   * stage): the GPU host's 16 cores, 4M symbols, 6 alternating rounds, median 64.5 ms with 16
   * workers, 60.9 with 15, 59.5 with 14, 59.6 with 12, slower than 14 in every round
   * (bench/RESULTS.md, eighteenth session) */
  int cores = prx_cpu_count();
  if (!o->threads && cores >= 8) c.threads = cores - 2;
  c.on_block = on_block;
  c.user = r;
  if (o->max_cfo) {
    double hz;
    if (cli_parse_eng(o->max_cfo, &hz) || !(hz > 0))
      return cli_bad_value(CMD, "--max-cfo", o->max_cfo,
                           "frequency range (a positive number of Hz)");
    c.acquisition = hz / rs;
    if (!(c.acquisition < 0.125))
      return cli_error(CMD,
                       "--max-cfo %s Hz is %.4g symbol rates: it must be below Rs/8 = %.6g Hz "
                       "(where the 4th-power estimate turns ambiguous)",
                       o->max_cfo, c.acquisition, rs / 8);
  }
  if (o->carrier_freq) {
    double f;
    if (cli_parse_eng(o->carrier_freq, &f) || !isfinite(f))
      return cli_bad_value(CMD, "--carrier-freq", o->carrier_freq, "frequency (Hz)");
    r->mix_hz = f - r->in.center_freq;
    if (!(fabs(r->mix_hz) < r->in.sample_rate / 2))
      return cli_error(CMD,
                       "--carrier-freq %s is %.10g Hz from the input's centre (%.10g Hz): "
                       "outside its band of +-%.10g Hz",
                       o->carrier_freq, r->mix_hz, r->in.center_freq, r->in.sample_rate / 2);
    r->mix = r->mix_hz / r->in.sample_rate;
    if (r->mix != 0) c.in_format = PRX_CF32; /* the mixer's output */
  }
  if (o->pilots) {
    unsigned long p, l;
    const char *colon = strchr(o->pilots, ':');
    char head[32];
    size_t hl = colon ? (size_t)(colon - o->pilots) : 0;
    if (!colon || hl >= sizeof head)
      return cli_bad_value(CMD, "--pilots", o->pilots, "pilot layout (PERIOD:LEN, e.g. 256:16)");
    memcpy(head, o->pilots, hl);
    head[hl] = '\0';
    if (cli_parse_uint(head, 2, 1ul << 22, &p) || cli_parse_uint(colon + 1, 1, 1ul << 22, &l))
      return cli_bad_value(CMD, "--pilots", o->pilots, "pilot layout (PERIOD:LEN, e.g. 256:16)");
    c.pilot_period = (unsigned)p;
    c.pilot_len = (unsigned)l;
  }
  r->qc = c;
  /* a polyrx channel recording cuts what lies past its filter's -6 dB point: a carrier reaching
   * there is distorted (0.4 of a spacing off a channel's centre at the default cut-off drew
   * cfo_alias, 0.45 also pi4_qpsk and 5e-3 bit errors at 12 dB), which the user is told why */
  const prx_sigmf_recording *rec = prx_iq_reader_sigmf(r->reader);
  const double reach = fabs(r->mix_hz) + 0.5 * (1 + c.rolloff) * rs;
  if (rec && rec->channel_passband_hz > 0 && reach > rec->channel_passband_hz)
    snprintf(r->passband, sizeof r->passband,
             "the carrier's band reaches %.6g Hz from the channel recording's centre, past its "
             "passband (its filter's -6 dB point, %.6g Hz): its spectrum is cut there, which "
             "distorts its symbols and may draw other warnings (cfo_alias, pi4_qpsk) that are "
             "not so; channelize the capture again with a wider --cutoff (up to 1 with "
             "--oversample 2)",
             reach, rec->channel_passband_hz);
  /* the carrier at 0 Hz: the input's centre, or mixed there by --carrier-freq */
  if (cli_mod_check_init(&r->modc, c.sample_rate, 1, 1, "demodulate it with --pi4",
                         "demodulate it without --pi4"))
    return cli_error(CMD, "out of memory");
  r->modc.car[0] = (cli_mod_carrier){
      .rs = c.symbol_rate, .rolloff = c.rolloff, .pi4 = c.modulation == PRX_QPSK_PI4};
  if (o->backend == PRX_BACKEND_CUDA && !prx_cuda_available())
    return cli_error(CMD, "--backend cuda: no usable CUDA device%s (use --backend cpu or auto)",
#ifdef PRX_HAVE_CUDA
                     ""
#else
                     " (this build has no CUDA)"
#endif
    );
  /* FFTW's planner made ready on a thread while the demodulator designs its filters and makes
   * its buffers (0.6-1.6 ms): its plan then finds the wisdom imported, the planner set up and the
   * twiddles made (the plan from the wisdom file: 0.9-1.2 ms of the 1.8-2.3 of the making on the
   * development VM, 1.8 -> 1.45 ms there with a small input). With 4 cores or more: on the
   * 2-core VM, beside the first block's reader (cli_first_block), a third thread gained nothing
   * (main's start to compute's first samples the same, 6 of 12 rounds lower). POLYRX_FFT_WARM=0
   * or 1 sets it, for measurements. */
  r->warming = cli_env_int("POLYRX_FFT_WARM", 0, 1, prx_cpu_count() >= 4) &&
               !cli_thread_start(&r->warm, warm_fft, r);
  /* with the planner warming, the demodulator plans at its first CFO stage, after the first
   * samples are read and pre-filtered, where it finds the warm thread done (its join and the
   * warm plan's end after the stream, end_warm) instead of waiting for it here
   * (POLYRX_PLAN_LATER=0: planned here, for measurements) */
  prx_status st = r->warming && cli_env_int("POLYRX_PLAN_LATER", 0, 1, 1)
                      ? prx_qpsk_create_plan_later(&c, &r->q)
                      : prx_qpsk_create(&c, &r->q);
  if (st) return cli_status_error(CMD, "demodulator", st);
  /* an output slot holds the symbols of any block: the spans that can complete while a block
   * arrives, with what the demodulator holds back (under a span and its filters' reach) */
  double span_samples = (double)prx_qpsk_cfo_span(r->q) * prx_qpsk_sps(r->q);
  r->slot_syms = prx_qpsk_max_symbols(r->q, o->read_block + (size_t)(3 * span_samples)) + 16;
  r->llr_off = (2 * r->slot_syms + 63) & ~(size_t)63;
  if (grow(r, prx_qpsk_flush_max_symbols(r->q) + 1)) return cli_error(CMD, "out of memory");
  return -1;
}

/* Every output is a file of its own, and none is the input (by name, or the same file through
 * a link): checked before anything is written. Returns -1 when they are distinct. */
static int check_paths(const run_state *r) {
  cli_path p[5];
  size_t n = 0;
  if (strcmp(r->o.input, "-")) p[n++] = (cli_path){"-i", prx_iq_reader_name(r->reader), 1};
  p[n++] = (cli_path){"-o", r->o.output, 0};
  if (r->o.llr) p[n++] = (cli_path){"--llr", r->o.llr, 0};
  if (r->o.report) p[n++] = (cli_path){"--report", r->o.report, 0};
  if (r->o.constellation) p[n++] = (cli_path){"--constellation", r->o.constellation, 0};
  return cli_outputs_distinct(CMD, p, n);
}

static FILE *open_out(const char *path, const char *what, int *rc) {
  if (!strcmp(path, "-")) return stdout;
  FILE *f = fopen(path, "wb");
  if (!f) *rc = cli_error(CMD, "cannot create %s %s: %s", what, path, strerror(errno));
  return f;
}

/* open_out for the outputs only the writer writes (bits, LLRs): an existing regular file is
 * opened as it is and emptied by truncate_outputs before their first write, on the writer's
 * thread, instead of here (freeing a file's pages: 0.5-2 ms for the 8 MiB of bits of a 4M-symbol
 * run on the development VM's tmpfs, on compute's path before the stream). *pending is set
 * where it waits to be emptied. */
static FILE *open_out_emptied_later(const char *path, const char *what, int *rc, int *pending) {
  if (!strcmp(path, "-")) return stdout;
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  struct stat st;
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL; /* "w" does not truncate here */
  if (!f) {
    *rc = cli_error(CMD, "cannot create %s %s: %s", what, path, strerror(errno));
    if (fd >= 0) close(fd);
    return NULL;
  }
  *pending = fstat(fd, &st) != 0 || (S_ISREG(st.st_mode) && st.st_size > 0);
  return f;
}

/* Empties the outputs opened by open_out_emptied_later, once, before their first byte (on the
 * writer's thread, or at the end where nothing was written); -1, or an exit code. */
static int truncate_outputs(run_state *r) {
  FILE *f[2] = {r->bits_f, r->llr_f};
  const char *name[2] = {r->o.output, r->o.llr};
  for (int i = 0; i < 2; i++)
    if (r->trunc_pending[i] && f[i]) {
      r->trunc_pending[i] = 0;
      if (ftruncate(fileno(f[i]), 0) != 0) {
        r->fatal = 1;
        return cli_error(CMD, "cannot write %s: %s", name[i], strerror(errno));
      }
    }
  return -1;
}

/* ---- the JSON report ---- */

static int rep_write_item(run_state *r, cJSON *item) {
  char *s = cJSON_PrintUnformatted(item);
  cJSON_Delete(item);
  if (!s) return -1;
  int ok = fputs(s, r->rep_f) >= 0;
  free(s);
  return ok ? 0 : -1;
}

static int report_begin(run_state *r) {
  cJSON *cfg = cJSON_CreateObject(), *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "path", r->o.input);
  cJSON_AddStringToObject(in, "format", prx_format_name(r->in.format));
  cli_json_num(in, "sample_rate", r->in.sample_rate);
  cJSON_AddBoolToObject(in, "sigmf", r->in.is_sigmf);
  cJSON_AddBoolToObject(in, "wav", r->in.is_wav);
  cJSON_AddBoolToObject(in, "swap_iq", r->o.swap_iq);
  cli_json_num(in, "start_sample", (double)prx_iq_reader_window_start(r->reader));
  cJSON_AddBoolToObject(in, "real", prx_iq_reader_is_real(r->reader));
  cli_json_num(in, "center_frequency", r->in.center_freq);
  const prx_qpsk_config *c = &r->qc;
  cli_json_num(cfg, "symbol_rate", c->symbol_rate);
  cli_json_num(cfg, "samples_per_symbol", prx_qpsk_sps(r->q));
  cli_json_num(cfg, "rolloff", c->rolloff);
  cli_json_num(cfg, "span", c->span);
  cli_json_num(cfg, "block_symbols", c->block_symbols);
  cli_json_num(cfg, "cfo_span_symbols", prx_qpsk_cfo_span(r->q));
  cli_json_num(cfg, "acquisition_hz", c->acquisition * c->symbol_rate);
  cli_json_num(cfg, "mix_hz", r->mix_hz); /* --carrier-freq less the centre (0: none) */
  cJSON_AddStringToObject(cfg, "ambiguity", prx_qpsk_ambiguity_name(c->ambiguity));
  cJSON_AddStringToObject(cfg, "modulation", prx_qpsk_modulation_name(c->modulation));
  if (c->ambiguity == PRX_QPSK_PILOTS) {
    cli_json_num(cfg, "pilot_period", c->pilot_period);
    cli_json_num(cfg, "pilot_len", c->pilot_len);
  }
  cli_json_num(cfg, "threads", c->threads);
  cJSON_AddStringToObject(cfg, "bits", r->o.packed ? "packed" : "unpacked");
  if (fprintf(r->rep_f,
              "{\"polyrx_version\":\"%s\",\"command\":\"demod\",\"input\":", prx_version()) < 0 ||
      rep_write_item(r, in) || fputs(",\"config\":", r->rep_f) < 0 || rep_write_item(r, cfg) ||
      fputs(",\n\"blocks\":[", r->rep_f) < 0)
    return -1;
  r->rep_first = 1;
  return 0;
}

static void on_block(void *user, const prx_qpsk_block *b) {
  run_state *r = user;
  r->n_blocks++;
  if (!r->rep_f || r->rep_fatal) return;
  cJSON *o = cJSON_CreateObject();
  cli_json_num(o, "index", (double)b->index);
  cli_json_num(o, "first_symbol", (double)b->first_symbol);
  cli_json_num(o, "symbols", b->n_symbols);
  cli_json_num(o, "data_symbols", b->n_data);
  cli_json_num(o, "time_s", b->time);
  cli_json_num(o, "cfo_hz", b->cfo);
  cli_json_num(o, "phase_rad", b->phase);
  cli_json_num(o, "timing_symbols", b->timing);
  cli_json_num(o, "clock_ppm", b->clock_ppm);
  cli_json_num(o, "esn0_db", b->esn0_db);
  cli_json_num(o, "noise_var", b->noise_var);
  cli_json_num(o, "amplitude", b->amplitude);
  cli_json_num(o, "signal", b->signal);
  cJSON_AddBoolToObject(o, "signal_present", !(b->flags & PRX_QPSK_BLOCK_NO_SIGNAL));
  if (b->flags) {
    static const struct {
      unsigned bit;
      const char *name;
    } names[] = {{PRX_QPSK_BLOCK_NO_SIGNAL, "no_signal"},
                 {PRX_QPSK_BLOCK_CLOCK_RANGE, "clock_range"},
                 {PRX_QPSK_BLOCK_TIMING_JUMP, "timing_jump"},
                 {PRX_QPSK_BLOCK_NONFINITE, "nonfinite"}};
    cJSON *fl = cJSON_AddArrayToObject(o, "flags");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
      if (b->flags & names[i].bit) cJSON_AddItemToArray(fl, cJSON_CreateString(names[i].name));
  }
  if (b->nonfinite) cli_json_num(o, "nonfinite", b->nonfinite);
  if (fputs(r->rep_first ? "\n" : ",\n", r->rep_f) < 0 || rep_write_item(r, o)) r->rep_fatal = 1;
  r->rep_first = 0;
}

/* the demodulator's summary, with the modulation check's finding of several power levels among
 * its warnings (its own test of the blocks sees them at high Es/N0 only) */
static void get_stats(const run_state *r, prx_qpsk_stats *s) {
  prx_qpsk_get_stats(r->q, s);
  if (r->levels) s->warnings |= PRX_QPSK_WARN_LEVELS;
}

static int report_end(run_state *r, const char *status, double elapsed) {
  prx_qpsk_stats s;
  get_stats(r, &s);
  cJSON *t = cJSON_CreateObject();
  cli_json_num(t, "samples", (double)r->n_in);
  cli_json_num(t, "duration_s", r->n_in / r->in.sample_rate);
  cli_json_num(t, "symbols", (double)s.symbols);
  cli_json_num(t, "data_symbols", (double)s.data_symbols);
  cli_json_num(t, "bits", (double)r->n_bits);
  cli_json_num(t, "blocks", (double)r->n_blocks);
  cli_json_num(t, "blocks_no_signal", (double)s.blocks_no_signal);
  cli_json_num(t, "blocks_clock_range", (double)s.blocks_clock_range);
  cli_json_num(t, "blocks_timing_jump", (double)s.blocks_timing_jump);
  cli_json_num(t, "nonfinite_samples", (double)s.nonfinite);
  cli_json_num(t, "esn0_db", s.esn0_db);
  cli_json_num(t, "cfo_hz_mean", s.cfo_hz);
  cli_json_num(t, "cfo_hz_min", s.cfo_min_hz);
  cli_json_num(t, "cfo_hz_max", s.cfo_max_hz);
  cli_json_num(t, "cfo_drift_hz_per_s", s.cfo_drift_hz_per_s);
  cli_json_num(t, "clock_offset_ppm", s.clock_ppm);
  if (r->qc.ambiguity == PRX_QPSK_PILOTS) cli_json_num(t, "frame_offset", (double)s.frame_offset);
  cli_json_num(t, "elapsed_s", elapsed);
  cli_json_qpsk_warnings(t, s.warnings);
  int input_warned = cli_json_input_warnings(cJSON_GetObjectItem(t, "warnings"), r->reader);
  if (r->mod_code) {
    cli_json_warning(cJSON_GetObjectItem(t, "warnings"), r->mod_code, r->modc.car[0].text);
    input_warned = 1;
  }
  if (r->passband[0]) {
    cli_json_warning(cJSON_GetObjectItem(t, "warnings"), "beyond_passband", r->passband);
    input_warned = 1;
  }
  /* what the files hold: after a failed write (a full disk) less than the bits above */
  if (r->bits_bytes >= 0) cli_json_num(t, "bits_file_bytes", (double)r->bits_bytes);
  if (r->llr_bytes >= 0) cli_json_num(t, "llr_file_bytes", (double)r->llr_bytes);
  cJSON_AddStringToObject(
      t, "status", !strcmp(status, "ok") && (s.warnings || input_warned) ? "warning" : status);
  if (!strcmp(status, "error") && cli_first_error()[0])
    cJSON_AddStringToObject(t, "error", cli_first_error());
  if (fputs("\n],\n\"totals\":", r->rep_f) < 0 || rep_write_item(r, t) ||
      fputs("}\n", r->rep_f) < 0)
    return -1;
  return 0;
}

/* ---- streaming ---- */

/* makes the output buffers hold at least `need` symbols (the demodulator says how many the next
 * call may give: it depends on how much input it holds) */
static int grow(run_state *r, size_t need) {
  if (need < r->slot_syms) need = r->slot_syms; /* packbuf serves the slots' writes too */
  if (need <= r->cap) return 0;
  uint8_t *b = realloc(r->bits, 2 * need), *pk = realloc(r->packbuf, need / 4 + 2);
  if (b) r->bits = b;
  if (pk) r->packbuf = pk;
  float *l = r->llrs;
  if (r->o.llr && (l = realloc(r->llrs, 2 * need * sizeof(float)))) r->llrs = l;
  prx_cf32 *sy = r->syms;
  if (r->o.constellation && (sy = realloc(r->syms, need * sizeof *sy))) r->syms = sy;
  if (!b || !pk || (r->o.llr && !l) || (r->o.constellation && !sy)) return -1;
  r->cap = need;
  return 0;
}

/* --constellation: reservoir sampling (a fixed-seed LCG) keeps CONST_KEEP symbols drawn
 * uniformly from every symbol of the run, in bounded memory (on the compute thread). */
static void keep_symbols(run_state *r, const prx_cf32 *syms, size_t n) {
  for (size_t i = 0; syms && i < n; i++, r->n_seen++) {
    if (r->n_keep < CONST_KEEP) {
      r->keep[r->n_keep++] = syms[i];
      continue;
    }
    r->lcg = r->lcg * 6364136223846793005ULL + 1442695040888963407ULL;
    uint64_t j = (r->lcg >> 11) % (r->n_seen + 1);
    if (j < CONST_KEEP) r->keep[j] = syms[i];
  }
}

/* Writes n symbols' bits (and LLRs); last: the packed output's last byte too, padded with
 * zeros. */
static int write_symbols(run_state *r, const uint8_t *bits, const float *llrs, size_t n, int last) {
  size_t nb = 2 * n;
  if (!nb && !(last && r->o.packed && r->packer.n)) return -1;
  int rc = truncate_outputs(r);
  if (rc >= 0) return rc;
  size_t w;
  if (r->o.packed) {
    size_t m = prx_pack_bits(&r->packer, bits, nb, last, r->packbuf);
    w = fwrite(r->packbuf, 1, m, r->bits_f) == m;
  } else {
    w = fwrite(bits, 1, nb, r->bits_f) == nb;
  }
  const char *failed = w ? NULL : cli_output_name(r->o.output);
  if (w && r->llr_f && fwrite(llrs, sizeof(float), nb, r->llr_f) != nb)
    failed = cli_output_name(r->o.llr);
  if (failed) {
    r->fatal = 1;
    r->write_failed = 1;
    return cli_error(CMD, "cannot write %s: %s", failed, strerror(errno));
  }
  r->n_bits += nb;
  return -1;
}

/* The pipeline's final compute call: the demodulator's flush (the symbols before the input's
 * end) into the last output slot, which the writer writes as the packed output's end. Run here,
 * the flush's compute overlaps the writer's last slots instead of following them (0.3 ms of a
 * 4M-symbol run on the development VM). Where its symbols might not fit a slot (they are what
 * the demodulator holds back, under the slot's three spans), finish does it after the pipeline. */
static prx_status flush_into_slot(run_state *r, uint8_t *bits, float *llrs, size_t *out_n) {
  if (prx_qpsk_flush_max_symbols(r->q) > r->slot_syms) return PRX_OK;
  double t = r->tm.on ? cli_seconds() : 0;
  prx_status st = prx_qpsk_flush_symbols(r->q, bits, llrs, r->syms, r->slot_syms, out_n);
  if (st) {
    r->fatal = 1;
    cli_status_error(CMD, "demodulator flush", st);
    return st;
  }
  keep_symbols(r, r->syms, *out_n);
  r->flushed = 1;
  atomic_store(&r->flush_slot, r->n_slots++);
  if (r->tm.on) r->ms_flush = (cli_seconds() - t) * 1e3;
  return PRX_OK;
}

/* The pipeline's compute stage (on this thread): demodulates one block into an output slot, in
 * pieces whose symbols are sure to fit (the output does not depend on the pieces); the final
 * call (in == NULL) flushes the demodulator into the last slot. */
static prx_status demod_compute(void *ctx, const void *in, size_t n, uint64_t pos, void *out,
                                size_t *out_n) {
  run_state *r = ctx;
  (void)pos;
  *out_n = 0;
  uint8_t *bits = out;
  float *llrs = r->o.llr ? (float *)((uint8_t *)out + r->llr_off) : NULL;
  if (!in) return r->fatal ? PRX_OK : flush_into_slot(r, bits, llrs, out_n);
  r->n_slots++;
  size_t used = 0, ss = prx_format_size(r->in.format);
  if (r->mix != 0) { /* the carrier to 0 Hz: sample m of the stream times exp(-2 pi i mix m) */
    if (n > r->mix_cap) {
      prx_cf32 *b = realloc(r->mix_buf, n * sizeof *b);
      if (!b) {
        r->fatal = 1;
        return prx_fail(PRX_ERR_NOMEM, "out of memory mixing the input");
      }
      r->mix_buf = b;
      r->mix_cap = n;
    }
    prx_convert_block(r->in.format, in, n, r->mix_buf);
    prx_mix_down(r->mix_buf, r->mix_buf, n, r->mix, r->n_in);
    in = r->mix_buf;
    ss = sizeof(prx_cf32);
  }
  cli_mod_check_add(&r->modc, r->mix != 0 ? PRX_CF32 : r->in.format, in, n);
  for (size_t off = 0; off < n;) {
    size_t piece = n - off, got = 0;
    while (piece > 1 && prx_qpsk_max_symbols(r->q, piece) > r->slot_syms - used)
      piece = (piece + 1) / 2;
    prx_cf32 *syms = r->syms; /* the compute stage's own buffer: kept at once */
    double t = r->tm.on ? cli_seconds() : 0, c = r->tm.on ? cli_thread_cpu_ms() : 0;
    if (r->tm.on && r->ms_first_in == 0) r->ms_first_in = (t - r->t_stream) * 1e3;
    prx_status st =
        prx_qpsk_execute_symbols(r->q, (const uint8_t *)in + off * ss, piece, bits + 2 * used,
                                 llrs ? llrs + 2 * used : NULL, syms, r->slot_syms - used, &got);
    if (r->tm.on) {
      r->t_exec_end = cli_seconds();
      r->ms_exec += (r->t_exec_end - t) * 1e3;
      r->ms_exec_cpu += cli_thread_cpu_ms() - c;
    }
    if (st) {
      r->fatal = 1;
      cli_status_error(CMD, "demodulator", st);
      return st;
    }
    keep_symbols(r, syms, got);
    used += got;
    off += piece;
    r->n_in += piece;
    cli_progress_update(&r->progress, r->n_in);
  }
  *out_n = used;
  /* symbols out: the demodulator's plan is made, the detector's planning no longer holds it */
  if (used) cli_mod_check_start(&r->modc);
  if (r->rep_fatal) {
    cli_error(CMD, "cannot write the report %s", r->o.report);
    return PRX_ERR_IO;
  }
  return PRX_OK;
}

/* The pipeline's writer: appends a slot's bits (and LLRs) to the outputs. */
static prx_status demod_write(void *ctx, int writer, const void *out, size_t n, uint64_t block) {
  run_state *r = ctx;
  (void)writer;
  const float *llrs = r->o.llr ? (const float *)((const uint8_t *)out + r->llr_off) : NULL;
  int last = block == atomic_load(&r->flush_slot);
  return write_symbols(r, out, llrs, n, last) >= 0 ? PRX_ERR_IO : PRX_OK;
}

/* The pipeline's polling period for blocks of `block` samples (stream, above): 0 (woken) under
 * 2^16 samples, where a block's compute is too short for a poller's delay. */
static unsigned demod_poll_us(size_t block) {
  if (block < ((size_t)1 << 16)) return 0;
  return block / 512 < 1000 ? (unsigned)(block / 512) : 1000;
}

/* Reads, demodulates and writes until the input ends, the three at once on successive blocks
 * (src/pipeline); returns -1 at a clean end, else an exit code. */
static int stream(run_state *r) {
  prx_pipe_config c;
  cli_pipe_setup(&c, r->reader, &r->in, r->o.read_block);
  cli_first_block_use(&c, &r->first);
  c.compute = demod_compute;
  c.write = demod_write;
  c.ctx = r;
  c.out_bytes = r->llr_off + (r->o.llr ? 2 * r->slot_syms * sizeof(float) : 0);
  /* the hand-overs' wakes, each a futex call on compute's thread (~30 us on a KVM guest, ~3 ms
   * of a 4M-symbol run with a wake a block): the writer, which writes a slot in a small share
   * of a block's compute, is woken once WAKE_BATCH slots wait, and the reader, woken once half
   * its ring is free (src/pipeline), gets IN_DEPTH blocks. POLYRX_WAKE_BATCH, POLYRX_IN_DEPTH
   * and POLYRX_OUT_DEPTH set them, for measurements. */
  c.out_depth = cli_env_int("POLYRX_OUT_DEPTH", 2, 16, OUT_DEPTH);
  c.wake_batch = cli_env_int("POLYRX_WAKE_BATCH", 1, 16, WAKE_BATCH);
  c.in_depth = cli_env_int("POLYRX_IN_DEPTH", 3, 16, IN_DEPTH);
  /* and with blocks of 2^16 samples or more, the reader and the writer look for their next
   * buffer every block/512 us (512 us at the default 2^18: a quarter of a block's compute at
   * one worker's ~145 Msps, with half the ring, 2 blocks, still ahead of compute) instead of
   * being woken: compute makes no wake at all. Development VM, 10 alternating runs: compute's
   * CPU outside the demodulator 3.0 -> 1.0 ms, the run 118.7 -> 114.9 ms (medians).
   * POLYRX_PIPE_POLL=US sets it (0: woken) */
  c.poll_us = (unsigned)cli_env_int("POLYRX_PIPE_POLL", 0, 1000, demod_poll_us(r->o.read_block));
  prx_pipe_result res;
  double c0 = r->tm.on ? cli_thread_cpu_ms() : 0;
  struct rusage u0, u1;
  int use = r->tm.on && !getrusage(RUSAGE_THREAD, &u0);
  r->t_stream = cli_seconds();
  int rc = cli_pipe_run(CMD, &c, NULL, &res);
  double t_end = cli_seconds();
  if (r->tm.on) r->ms_stream_cpu = cli_thread_cpu_ms() - c0;
  if (use && !getrusage(RUSAGE_THREAD, &u1)) r->stream_preempted = u1.ru_nivcsw - u0.ru_nivcsw;
  r->pipe_res = res;
  r->ms_after_exec = r->t_exec_end > 0 ? (t_end - r->t_exec_end) * 1e3 : 0;
  if (rc < 0 && res.samples_read == 0)
    return cli_error(CMD, "%s is empty: no samples to demodulate", prx_iq_reader_name(r->reader));
  return rc;
}

/* The flush where the pipeline's final compute call did not run it (the pipeline stopped before
 * it): after the writers are done. */
static int finish(run_state *r) {
  if (r->fatal || r->flushed) return -1;
  size_t got = 0;
  if (grow(r, prx_qpsk_flush_max_symbols(r->q))) return cli_error(CMD, "out of memory");
  prx_status st = prx_qpsk_flush_symbols(r->q, r->bits, r->llrs, r->syms, r->cap, &got);
  if (st) {
    r->fatal = 1;
    return cli_status_error(CMD, "demodulator flush", st);
  }
  keep_symbols(r, r->syms, got);
  return write_symbols(r, r->bits, r->llrs, got, 1);
}

/* --constellation: the density plot of the symbols kept. */
static int write_constellation(run_state *r) {
  if (!r->n_keep) return cli_error(CMD, "--constellation: no symbol was demodulated");
  char title[200];
  const char *slash = strrchr(r->o.input, '/');
  snprintf(title, sizeof title, "%.60s  %llu symbols (%zu drawn)  %.6g samples/symbol",
           slash ? slash + 1 : r->o.input, (unsigned long long)r->n_seen, r->n_keep,
           prx_qpsk_sps(r->q));
  prx_status st = plot_constellation_png(r->o.constellation, r->keep, r->n_keep, title);
  return st ? cli_status_error(CMD, "--constellation", st) : -1;
}

static void summary(const run_state *r, double elapsed) {
  prx_qpsk_stats s;
  get_stats(r, &s);
  double fs = r->in.sample_rate;
  fprintf(stderr,
          "polyrx %s: read %llu samples (%.6g s at %.9g Hz, %.4g samples/symbol) in %.3g s\n"
          "  %llu symbols (%llu data) -> %llu bits%s%s; %.3g Msymbol/s\n",
          CMD, (unsigned long long)r->n_in, r->n_in / fs, fs, prx_qpsk_sps(r->q), elapsed,
          (unsigned long long)s.symbols, (unsigned long long)s.data_symbols,
          (unsigned long long)r->n_bits, r->o.packed ? " (packed)" : "", r->llr_f ? " + LLRs" : "",
          elapsed > 0 ? s.symbols / elapsed / 1e6 : 0.0);
  if (s.blocks) {
    char drift[48] = "";
    if (isfinite(s.cfo_drift_hz_per_s))
      snprintf(drift, sizeof drift, ", drifting %+.3g Hz/s", s.cfo_drift_hz_per_s);
    fprintf(stderr,
            "  Es/N0 %.2f dB, CFO %.6g Hz (%.6g .. %.6g)%s, clock offset %+.1f ppm; %llu blocks, "
            "%llu without signal\n",
            s.esn0_db, s.cfo_hz, s.cfo_min_hz, s.cfo_max_hz, drift, s.clock_ppm,
            (unsigned long long)s.blocks, (unsigned long long)s.blocks_no_signal);
  }
  if (s.nonfinite)
    fprintf(stderr, "  %llu NaN or infinite input samples read as 0\n",
            (unsigned long long)s.nonfinite);
  if (r->qc.ambiguity == PRX_QPSK_PILOTS)
    fprintf(stderr, "  pilots: frames start at symbol %lld (mod %u)\n", (long long)s.frame_offset,
            r->qc.pilot_period);
}

/* the warnings on standard error, with or without -q: the bits may be noise */
static void warnings(const run_state *r) {
  prx_qpsk_stats s;
  get_stats(r, &s);
  for (size_t i = 0; i < CLI_QPSK_N_WARNINGS; i++)
    if (s.warnings & cli_qpsk_warn_bits[i])
      fprintf(stderr, "polyrx %s: warning: %s\n", CMD,
              prx_qpsk_warning_text(cli_qpsk_warn_bits[i]));
  if (r->mod_code) fprintf(stderr, "polyrx %s: warning: %s\n", CMD, r->modc.car[0].text);
  if (r->passband[0]) fprintf(stderr, "polyrx %s: warning: %s\n", CMD, r->passband);
  if (!r->o.quiet) cli_mod_check_note(&r->modc, CMD);
}

/* POLYRX_TIMING's line: the phases, then the compute stage's figures (in the demodulator: wall
 * and CPU; its CPU in the stream, the demodulator included; its sleeps for an input block and
 * for a free output slot), to set against the library's loop on the same samples
 * (bench_commands demod) */
static double unix_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void print_timing(const run_state *r) {
  const prx_pipe_result *p = &r->pipe_res;
  if (!r->tm.on) return;
  cli_timing_print(&r->tm, CMD,
                   "compute's first samples at %.1f of the stream, compute in execute %.1f (its "
                   "thread's CPU %.1f), compute's CPU in the stream %.1f (preempted %ld times), "
                   "its sleeps for input %llu (%.1f ms) and for a slot %llu (%.1f ms), the stream "
                   "after the last execute %.1f (the flush in it %.1f), the writer after compute's "
                   "end %.1f; %llu blocks; "
                   "unix time at the start %.6f, at this line %.6f",
                   r->ms_first_in, r->ms_exec, r->ms_exec_cpu, r->ms_stream_cpu,
                   r->stream_preempted, (unsigned long long)p->compute_waits_in,
                   p->ms_compute_wait_in, (unsigned long long)p->compute_waits_out,
                   p->ms_compute_wait_out, r->ms_after_exec, r->ms_flush, p->ms_writers_after,
                   (unsigned long long)p->blocks_read, r->unix_start, unix_seconds());
}

int cmd_demod(int argc, char **argv) {
  run_state r;
  memset(&r, 0, sizeof r);
  atomic_init(&r.flush_slot, UINT64_MAX);
  cli_timing_start(&r.tm);
  if (r.tm.on) r.unix_start = unix_seconds();
  int rc = parse_args(argc, argv, &r.o);
  if (rc > 0) rc = 2; /* every error of the arguments is a usage error */
  if (rc < 0 && r.o.constellation && !(r.keep = malloc(CONST_KEEP * sizeof *r.keep)))
    rc = cli_error(CMD, "out of memory");
  /* the stop signals are for the pipeline's reader, not the worker pools made below */
  if (rc < 0) cli_hold_stop_signals();
  if (rc < 0) rc = setup_input(&r);
  /* the first block's read (and its pages' first touch) runs while the demodulator is made */
  if (rc < 0) cli_first_block_start(&r.first, r.reader, r.o.read_block);
  cli_timing_phase(&r.tm, "input");
  if (rc < 0) rc = setup_demod(&r);
  cli_timing_phase(&r.tm, "demodulator");
  if (rc < 0) rc = check_paths(&r);
  if (rc < 0 &&
      !(r.bits_f = open_out_emptied_later(r.o.output, "output", &rc, &r.trunc_pending[0])) &&
      rc < 0)
    rc = 1;
  if (rc < 0 && r.o.llr &&
      !(r.llr_f = open_out_emptied_later(r.o.llr, "LLR file", &rc, &r.trunc_pending[1])) && rc < 0)
    rc = 1;
  if (rc < 0 && r.o.report && !(r.rep_f = open_out(r.o.report, "report", &rc)) && rc < 0) rc = 1;
  if (rc < 0 && r.rep_f && report_begin(&r))
    rc = cli_error(CMD, "cannot write the report %s: %s", r.o.report, strerror(errno));
  /* a file-size limit (ulimit -f) makes a write fail with EFBIG, reported, instead of killing
   * the process mid-write */
  if (rc < 0) signal(SIGXFSZ, SIG_IGN);
  cli_timing_phase(&r.tm, "outputs");
  if (rc < 0) {
    cli_catch_stop_signals();
    double t0 = cli_seconds();
    cli_progress_start(&r.progress, CMD, cli_input_samples(r.reader), r.o.quiet);
    rc = stream(&r);
    cli_timing_phase(&r.tm, "stream");
    cli_progress_end(&r.progress);
    cli_release_stop_signals();
    if (rc < 0 && cli_interrupted()) rc = 130;
    /* after an input error (a truncated file) the symbols of every complete sample read are
     * still demodulated and written */
    int rc_flush = r.n_in ? finish(&r) : -1;
    if (rc < 0) rc = rc_flush;
    end_warm(&r);
    if (r.n_in && !cli_interrupted() && cli_mod_check_end(&r.modc)) {
      r.mod_code = r.modc.car[0].code;
      r.levels = r.modc.car[0].levels;
    }
    cli_timing_phase(&r.tm, "flush");
    double elapsed = cli_seconds() - t0;
    if (r.o.constellation && (rc < 0 || rc == 130)) {
      int rc_png = write_constellation(&r);
      if (rc < 0) rc = rc_png;
    }
    /* the outputs written out before the report: a write that fails only now (the last
     * buffer on a full disk) makes the run an error there, and the sizes are final */
    int c0 = truncate_outputs(&r); /* an output nothing was written to holds nothing */
    if (rc < 0) rc = c0;
    r.bits_bytes = r.llr_bytes = -1;
    for (int i = 0; i < 2; i++) {
      FILE *f = i ? r.llr_f : r.bits_f;
      if (cli_flush_output(f, i ? &r.llr_bytes : &r.bits_bytes) && !r.write_failed) {
        r.write_failed = r.fatal = 1;
        int e = cli_error(CMD, "cannot write %s: %s", cli_output_name(i ? r.o.llr : r.o.output),
                          strerror(errno));
        if (rc < 0) rc = e;
      }
    }
    if (r.rep_f && !r.rep_fatal) {
      const char *status = rc < 0 ? "ok" : (rc == 130 ? "interrupted" : "error");
      if (report_end(&r, status, elapsed) && rc < 0)
        rc = cli_error(CMD, "cannot write the report %s: %s", r.o.report, strerror(errno));
    }
    if (!r.o.quiet && r.n_in) summary(&r, elapsed);
    if (r.n_in && r.q) warnings(&r);
    if (rc > 0 && !r.fatal && r.n_in && !r.o.quiet)
      fprintf(stderr,
              "polyrx %s: the symbols of the %llu complete input samples read were written\n", CMD,
              (unsigned long long)r.n_in);
  }
  int c0 = truncate_outputs(&r); /* those nothing was written to: emptied all the same */
  if (rc < 0) rc = c0;
  /* a failed write has had its line (naming the file and its errno, on the writer's thread):
   * the outputs' closes then add none */
  int closed = r.write_failed ? 1 : -1;
  int c1 = cli_close_output(CMD, r.bits_f, r.o.output ? r.o.output : "output", closed);
  int c2 = cli_close_output(CMD, r.llr_f, r.o.llr ? r.o.llr : "LLRs", closed);
  int c3 = cli_close_output(CMD, r.rep_f, r.o.report ? r.o.report : "report", -1);
  if (rc < 0) rc = c1 >= 0 ? c1 : (c2 >= 0 ? c2 : c3);
  cli_timing_phase(&r.tm, "close");
  end_warm(&r);                  /* where there was no stream */
  cli_first_block_end(&r.first); /* before the reader is closed */
  prx_iq_close(r.reader);
  /* the demodulator (its buffers, FFTW plans, worker pool) and the output buffers are left to
   * the process's end where it follows (cli_exit_frees_skipped): the kernel frees the pages
   * anyway, and each large free is an munmap of its own */
  if (!cli_exit_frees_skipped()) {
    prx_qpsk_destroy(r.q);
    free(r.bits);
    free(r.packbuf);
    free(r.llrs);
    free(r.syms);
    free(r.keep);
    cli_mod_check_free(&r.modc);
    free(r.mix_buf);
  }
  cli_timing_phase(&r.tm, "cleanup");
  print_timing(&r);
  return rc < 0 ? 0 : rc;
}
