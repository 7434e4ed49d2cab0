/* polyrx rx: the receiver. A wideband stream (raw IQ file, standard input or SigMF) in, every
 * listed QPSK carrier's bits out (DIR/cN.bits, optionally DIR/cN.llr), a summary table on
 * standard output and an optional JSON report; with --truth the bit error rate of every
 * carrier against the bits `polyrx gen --bits` wrote.
 *
 * Streaming, in bounded memory: the host pipeline reads blocks while the receiver (prx_rx)
 * works on the previous one on this thread; its output callback appends each carrier's new bits
 * to its files (and compares them with the truth) as they come. */
#include "cli.h"
#include "rx/rx_gpu.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CMD "rx"
#define READ_BLOCK ((size_t)1 << 18)
/* CUDA: samples per read (pinned buffers, 4 in flight) and per receiver block, so that each
 * read holds 4 blocks whose copies and channelizer overlap the previous block's demodulation */
#define READ_BLOCK_CUDA ((size_t)1 << 23)
#define RX_BLOCK_CUDA ((size_t)1 << 21)
#define RX_MANY_CARRIERS 256 /* from here the demodulator banks bound the GPU receiver */
#define MAX_CARRIERS 4096

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: polyrx rx -i FILE|- [-F FMT -s RATE -f CENTER] -K CHANNELS\n"
      "                 (--carrier f=OFFSET,rs=RATE[,rolloff=B][,diff|pilots=P:L] ... | --detect)\n"
      "                 -o DIR\n"
      "                 [--report FILE.json] [--backend auto|cpu|cuda] [--bits packed]\n"
      "                 [--llr] [--truth PREFIX] [--taps P] [--threads N] [-q]\n"
      "                 [--devices 0,1,...|all | --workers N]\n"
      "\n"
      "Receives every listed QPSK carrier of a wideband stream: a polyphase channelizer of K\n"
      "channels (spacing RATE/K, 2x oversampled), the channel nearest to each carrier, a mixer\n"
      "that brings the carrier to 0 Hz and the open-loop demodulator. A carrier may lie anywhere\n"
      "in the band (on a channel centre or between two) as long as it occupies at most 0.6 of the\n"
      "channel spacing: rs (1 + rolloff) <= 0.6 RATE / K. Its CFO may reach 0.12 rs on top of f.\n"
      "\n"
      "  -i, --input FILE     raw interleaved IQ, '-' for standard input, or a SigMF recording\n"
      "                       (.sigmf-data/.sigmf-meta/.sigmf: format, rate and centre from its\n"
      "                       metadata)\n"
      "  -F, --format FMT     cf32 (default), ci16, ci8 or cu8\n"
      "  -s, --rate RATE      sample rate in Hz (engineering notation: 6.5536M)\n"
      "  -f, --center FREQ    centre frequency in Hz, for the report (default: metadata or 0)\n"
      "  -K, --channels K     channels of the channelizer (even, e.g. 1024)\n"
      "      --carrier SPEC   a carrier, repeatable, with the keys of `polyrx gen`:\n"
      "                         f=FREQ      offset from the centre, Hz (default 0)\n"
      "                         rs=RATE     symbol rate, Hz (required)\n"
      "                         rolloff=B   RRC roll-off (default 0.35)\n"
      "                         diff        differentially encoded data (the default)\n"
      "                         pilots=P:L  a pilot word of L symbols starts every P symbols\n"
      "                         diff=0      coherent: the quarter-turn is left unresolved\n"
      "      --detect         find the QPSK carriers by themselves (power against the noise\n"
      "                       floor, the symbol-rate and 4th-power lines), symbol rates from\n"
      "                       RATE/K/16 up, in the first 800 symbols of the slowest (1 s at\n"
      "                       6.5536 Msps, K = 1024) and receive those that fit, as\n"
      "                       differential (with --carrier: those listed, then the others\n"
      "                       found); the report lists what was found\n"
      "      --detect-min-esn0 DB  the weakest carrier --detect reports, Es/N0 in dB\n"
      "                       (default 8; below ~5 dB a carrier's bits are mostly errors)\n"
      "  -o, --output DIR     the directory of the outputs (made if missing): cN.bits for the\n"
      "                       N-th carrier (in the order given), one byte 0/1 per bit\n"
      "      --bits packed    8 bits per byte instead (first bit in the MSB)\n"
      "      --llr            also cN.llr: float32 LLRs, 2 per data symbol\n"
      "      --iq             also cN.sigmf-data/-meta: the carrier's channel (cf32 at 2 RATE/K,\n"
      "                       centred on that channel, aligned with the input)\n"
      "      --truth PREFIX   the sent bits, PREFIXN.bits for carrier N (as `polyrx gen --bits\n"
      "                       PREFIX` writes them): bit errors and BER per carrier\n"
      "      --report FILE    a JSON report (per carrier: frequency, channel, CFO, Es/N0, clock\n"
      "                       offset, locked fraction, symbols, BER; throughput, time split)\n"
      "      --backend B      auto (default), cpu or cuda\n"
      "      --taps P         prototype taps per channel: K P + 1 taps (default 14)\n"
      "      --threads N      worker threads (default 0: all cores)\n"
      "      --cfo-span N     symbols per CFO estimate, 1024..4194304 and 4 blocks at least\n"
      "                       (default 8192): a shorter span follows a carrier whose frequency\n"
      "                       drifts faster (a satellite's Doppler; --block 256 --cfo-span\n"
      "                       1024: 8 times the default's), a longer one weak carriers better\n"
      "      --block N        symbols per estimation block, 256..1024 (default 512)\n"
      "      --read-block N   input samples per read (default 262144; on CUDA 8388608, in\n"
      "                       receiver blocks of a quarter of it)\n"
      "      --devices LIST   receive on several GPUs (ordinals, a GPU may be listed twice; all:\n"
      "                       every GPU): the stream in segments, one receiver per GPU, the\n"
      "                       bits stitched (docs/ARCHITECTURE.md, \"Receiver across several\n"
      "                       workers\"); the report's estimates are the last segment's\n"
      "      --workers N      the same with N receivers on the CPU (N >= 2)\n"
      "  -q, --quiet          no progress line\n"
      "  -h, --help           this text\n"
      "\n"
      "Each carrier's bits are its symbols centred inside the input, aligned with it: a carrier\n"
      "made by `polyrx gen` comes out with exactly the symbols it sent. Outputs: docs/FORMATS.md.\n"
      "example:\n"
      "  polyrx gen -o cap.cf32 -s 6.5536M -d 1 --carrier f=100k,rs=2400,diff \\\n"
      "    --carrier f=-1.2032M,rs=2400,diff --esn0 20 --bits tx\n"
      "  polyrx rx -i cap.cf32 -s 6.5536M -K 1024 --carrier f=100k,rs=2400 \\\n"
      "    --carrier f=-1.2032M,rs=2400 -o out --truth tx\n");
}

typedef struct {
  const char *input, *format, *rate, *center, *output, *report, *truth;
  const char *spec[MAX_CARRIERS];
  unsigned given[MAX_CARRIERS]; /* the keys of each --carrier, by bit */
  prx_sim_carrier car[MAX_CARRIERS];
  size_t n_car;
  unsigned long K, taps, threads, read_block, cfo_span, block;
  prx_backend backend;
  int packed, llr, quiet, detect, iq;
  int read_block_set;                    /* --read-block given */
  double detect_min_esn0;                /* --detect-min-esn0, NAN: the detector's default */
  int devices[PRX_RX_MULTI_MAX_WORKERS]; /* --devices (all: every GPU) */
  size_t n_devices;
  unsigned long workers; /* --workers */
} options;

/* --devices 0,1,...|all into o->devices: -1, else the exit code after the error line. */
static int parse_devices(const char *a, options *o) {
  o->n_devices = 0;
  size_t all = strcmp(a, "all") ? 0 : prx_rx_multi_gpu_count();
  if (!strcmp(a, "all") && !all) return cli_error(CMD, "--devices all: no usable CUDA device");
  for (size_t i = 0; i < all && i < PRX_RX_MULTI_MAX_WORKERS; i++)
    o->devices[o->n_devices++] = (int)i;
  for (const char *p = a; !all && *p;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 0 || v > 1023 || (*end && *end != ',') ||
        o->n_devices == PRX_RX_MULTI_MAX_WORKERS)
      return cli_bad_value(CMD, "--devices", a, "GPU ordinals 0,1,... (at most 64) or all");
    o->devices[o->n_devices++] = (int)v;
    p = *end ? end + 1 : end;
  }
  if (!o->n_devices) return cli_bad_value(CMD, "--devices", a, "GPU ordinals 0,1,... or all");
  return -1;
}

static int parse_args(int argc, char **argv, options *o) {
  memset(o, 0, sizeof *o);
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  o->taps = 14;
  o->read_block = READ_BLOCK;
  o->detect_min_esn0 = NAN;
  enum {
    OPT_CARRIER = 256,
    OPT_BITS,
    OPT_LLR,
    OPT_TRUTH,
    OPT_REPORT,
    OPT_BACKEND,
    OPT_TAPS,
    OPT_READBLOCK,
    OPT_DETECT,
    OPT_DETECT_MIN,
    OPT_IQ,
    OPT_DEVICES,
    OPT_WORKERS,
    OPT_CFOSPAN,
    OPT_BLOCK
  };
  static const struct option longs[] = {
      {"input", required_argument, 0, 'i'},
      {"format", required_argument, 0, 'F'},
      {"rate", required_argument, 0, 's'},
      {"center", required_argument, 0, 'f'},
      {"channels", required_argument, 0, 'K'},
      {"carrier", required_argument, 0, OPT_CARRIER},
      {"output", required_argument, 0, 'o'},
      {"bits", required_argument, 0, OPT_BITS},
      {"llr", no_argument, 0, OPT_LLR},
      {"truth", required_argument, 0, OPT_TRUTH},
      {"report", required_argument, 0, OPT_REPORT},
      {"backend", required_argument, 0, OPT_BACKEND},
      {"taps", required_argument, 0, OPT_TAPS},
      {"threads", required_argument, 0, 't'},
      {"read-block", required_argument, 0, OPT_READBLOCK},
      {"cfo-span", required_argument, 0, OPT_CFOSPAN},
      {"block", required_argument, 0, OPT_BLOCK},
      {"detect", no_argument, 0, OPT_DETECT},
      {"detect-min-esn0", required_argument, 0, OPT_DETECT_MIN},
      {"iq", no_argument, 0, OPT_IQ},
      {"devices", required_argument, 0, OPT_DEVICES},
      {"workers", required_argument, 0, OPT_WORKERS},
      {"quiet", no_argument, 0, 'q'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0},
  };
  optind = 0;
  opterr = 0;
  int c, rc;
  while ((c = getopt_long(argc, argv, ":i:F:s:f:K:o:t:qh", longs, NULL)) != -1) {
    const char *a = optarg;
    switch (c) {
    case 'i': o->input = a; break;
    case 'F': o->format = a; break;
    case 's': o->rate = a; break;
    case 'f': o->center = a; break;
    case 'o': o->output = a; break;
    case 'q': o->quiet = 1; break;
    case 'h': usage(stdout); return 0;
    case 'K':
      if (cli_parse_uint(a, 4, 65536, &o->K) || o->K % 2)
        return cli_bad_value(CMD, "-K", a, "channel count (even, 4..65536)");
      break;
    case OPT_CARRIER:
      if (o->n_car == MAX_CARRIERS)
        return cli_error(CMD, "too many carriers (at most %d)", MAX_CARRIERS);
      if (cli_parse_carrier(CMD, a, CLI_CARRIER_RX_KEYS, &o->car[o->n_car], &o->given[o->n_car]))
        return 2;
      o->spec[o->n_car++] = a;
      break;
    case OPT_BITS:
      if (!strcmp(a, "packed"))
        o->packed = 1;
      else if (strcmp(a, "unpacked"))
        return cli_bad_value(CMD, "--bits", a, "bit format (unpacked or packed)");
      break;
    case OPT_LLR: o->llr = 1; break;
    case OPT_DETECT: o->detect = 1; break;
    case OPT_DETECT_MIN:
      if (cli_parse_eng(a, &o->detect_min_esn0) || o->detect_min_esn0 < -10 ||
          o->detect_min_esn0 > 60)
        return cli_bad_value(CMD, "--detect-min-esn0", a, "Es/N0 in dB (-10..60)");
      break;
    case OPT_IQ: o->iq = 1; break;
    case OPT_TRUTH: o->truth = a; break;
    case OPT_REPORT: o->report = a; break;
    case OPT_BACKEND:
      if (cli_parse_backend(CMD, a, &o->backend) >= 0) return 2;
      break;
    case OPT_TAPS:
      if (cli_parse_uint(a, 1, 4096, &o->taps))
        return cli_bad_value(CMD, "--taps", a, "taps per channel (1..4096)");
      break;
    case 't':
      if (cli_parse_uint(a, 0, 1024, &o->threads))
        return cli_bad_value(CMD, "--threads", a, "thread count (0..1024, 0 = all cores)");
      break;
    case OPT_READBLOCK:
      if (cli_parse_uint(a, 1, (unsigned long)1 << 26, &o->read_block))
        return cli_bad_value(CMD, "--read-block", a, "block size (1..67108864 samples)");
      o->read_block_set = 1;
      break;
    case OPT_CFOSPAN:
      if (cli_parse_uint(a, 1024, 1ul << 22, &o->cfo_span))
        return cli_bad_value(CMD, "--cfo-span", a, "CFO span (1024..4194304 symbols)");
      break;
    case OPT_BLOCK:
      if (cli_parse_uint(a, 256, 1024, &o->block))
        return cli_bad_value(CMD, "--block", a, "block size (256..1024 symbols)");
      break;
    case OPT_DEVICES:
      if ((rc = parse_devices(a, o)) >= 0) return rc;
      break;
    case OPT_WORKERS:
      if (cli_parse_uint(a, 2, PRX_RX_MULTI_MAX_WORKERS, &o->workers))
        return cli_bad_value(CMD, "--workers", a, "CPU receiver count (2..64)");
      break;
    case ':': return cli_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
    default: return cli_usage_error(CMD, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return cli_usage_error(CMD, "unexpected argument '%s' (the input is given with -i)",
                           argv[optind]);
  if (!o->input) return cli_usage_error(CMD, "no input: give -i FILE, or -i - for standard input");
  if (!o->K) return cli_usage_error(CMD, "no channel count: give -K CHANNELS (e.g. -K 1024)");
  if (!o->n_car && !o->detect)
    return cli_usage_error(CMD, "no carrier: give --carrier f=OFFSET,rs=RATE for each carrier, "
                                "or --detect");
  if (!o->detect && !isnan(o->detect_min_esn0))
    return cli_usage_error(CMD, "--detect-min-esn0 without --detect");
  if (o->detect && o->truth)
    return cli_usage_error(CMD, "--truth needs the carriers listed in the generator's order, not "
                                "--detect");
  if (!o->output) return cli_usage_error(CMD, "no output: give -o DIR");
  if (o->n_devices && o->workers) return cli_usage_error(CMD, "--devices or --workers, not both");
  if ((o->n_devices || o->workers) && o->iq)
    return cli_usage_error(CMD, "--iq is not available with --devices or --workers");
  if (o->n_devices && o->backend == PRX_BACKEND_CPU)
    return cli_usage_error(CMD, "--devices with --backend cpu (use --workers N)");
  if (o->workers && o->backend == PRX_BACKEND_CUDA)
    return cli_usage_error(CMD, "--workers runs on the CPU (use --devices for GPUs)");
  return cli_check_cfo_span(CMD, o->cfo_span, o->block);
}

/* ---- the run ---- */

typedef struct {
  FILE *bits, *llr, *truth;
  char *bits_name, *llr_name, *truth_name;
  prx_sigmf_writer *iq; /* --iq */
  char *iq_base;
  uint64_t n_bits, n_symbols; /* data bits and symbols received */
  uint64_t file_bits;         /* bits written (packed: whole bytes, the last padded) */
  uint64_t errors, compared;  /* --truth: bit errors over the bits compared */
  uint64_t truth_short;       /* bits received beyond the truth file's end */
  uint8_t *tbuf;
  size_t tcap;
  int open_err, close_err; /* the errno of its files' opening / closing (open_files, close_files) */
  int open_which;          /* which file failed to open: 1 truth, 2 bits, 3 LLRs */
  int bits_bad, llr_bad;   /* their closes failed (close_files) */
} carrier_out;

typedef struct run_state {
  options o;
  prx_iq_reader *reader;
  prx_iq_info in;
  prx_rx_config rc;
  prx_rx_carrier *car;
  size_t n_car;      /* listed, then detected */
  const char **spec; /* per carrier: its --carrier text, or what detection made of it */
  char **spec_made;  /* the texts made for detected carriers (owned) */
  /* --detect: what was found, and whether each is received (else why not) */
  prx_detect_carrier *found;
  size_t n_found;
  long *found_as; /* carrier index, or -1 */
  char (*found_why)[512];
  void *pre; /* the samples read for detection, fed to the receiver first */
  size_t pre_n;
  prx_rx *rx;          /* with several workers: the latest segment's, for the report */
  prx_rx_multi *multi; /* --devices, --workers */
  carrier_out *out;
  FILE *rep_f;
  cli_progress progress;
  uint64_t n_in;
  int fatal;      /* an output failed: the run stops */
  cli_timing tm;  /* POLYRX_TIMING: the wall time of each phase, printed at the end */
  int n_readers;  /* the pipeline's reader threads (cli_pipe_readers) */
  pthread_t warm; /* the CUDA runtime's start (cli_warm_cuda_start) */
  int warming;
  /* the input in place (cli_input_map_open) with the device-resident receiver; its figures,
   * taken as it closes, and the close, ms */
  prx_pipe_map *map;
  prx_pipe_map_stats map_stats;
  double ms_map_close;
  prx_rx_setup_times setup; /* the receiver's set-up's parts, taken before it is destroyed */
  /* the receiver's callbacks' user: the slot that names the run they write for (r->self, or the
   * kept receiver's slot: rx_keep below) */
  struct run_state *self;
  /* the bits and LLRs go to their files on the pipeline's writer threads (bits_batch below):
   * writer w writes the carriers c with c % n_writers == w */
  int n_writers;
  struct bits_batch *cur;  /* the batch compute fills, NULL: on_output writes the files */
  struct bits_batch *idle; /* the batches the writers are done with (under batch_lock) */
  struct bits_batch *all;  /* every batch made (freed at the end) */
  pthread_mutex_t batch_lock;
  atomic_int write_failed; /* a writer's error (its line printed once) */
  prx_rx_stats *stats;     /* per carrier, taken once the stream has ended */
  char **car_json;         /* per carrier, its report object's text (write_report) */
  int kept;                /* r->rx is the kept receiver (rx_keep) */
  int reused;              /* ... made by an earlier run */
  double ms_keep_take;     /* its reset for this run, ms */
} run_state;

/* ---- the receiver kept between served runs ----
 *
 * A resident process (polyrx serve, cli_rx_keep_enable) keeps the receiver of its last run that
 * ended well: a run whose receiver configuration (input rate, centre and format, K, taps, the
 * carriers in order with their settings, the backend, block, bit and LLR options) is the same
 * takes it after prx_rx_reset, which makes it as if just created (the same bits, stats and
 * report as a fresh one), instead of making 1024 carriers' banks and demodulators again. One at
 * most: dropped before a receiver of another configuration is made, after a run that failed,
 * before any other command of the server (which may need its memory: cli_rx_keep_drop) and at
 * the server's end. Its callbacks' user is the slot `run`, which names the run it serves. */
static struct {
  int enabled;
  prx_rx *rx;
  prx_rx_config cfg; /* as made; carriers: car */
  prx_rx_carrier *car;
  struct run_state *run;
} rx_keep;

/* ---- the outputs on writer threads ----
 *
 * The receiver's callback runs on the compute thread: it copies each carrier's new bits (and
 * LLRs) into the batch of the current compute call, which the pipeline hands to its writer
 * threads as that call's output slot (the slot holds the batch's address); each writer appends
 * its carriers' records to their files in order, so every file gets the bytes it got from
 * on_output itself, and the compute thread does not wait for the writes. The last writer done
 * with a batch returns it for reuse (at most out_depth + 1 are in use: the pipeline's slots
 * bound them); its buffers keep their size. */
typedef struct {
  uint32_t carrier, llr; /* llr: the record is LLRs (to the carrier's .llr) */
  size_t off, len;       /* bytes in the batch's buffer */
} bits_rec;

typedef struct bits_batch {
  uint8_t *buf;
  size_t len, cap;
  bits_rec *rec;
  size_t n_rec, rec_cap;
  atomic_int left;              /* writers still to write it */
  struct bits_batch *next_idle; /* in run_state.idle */
  struct bits_batch *next_made; /* in run_state.all */
} bits_batch;

/* A batch to fill: an idle one, else a new one (NULL: out of memory). */
static bits_batch *batch_take(run_state *r) {
  pthread_mutex_lock(&r->batch_lock);
  bits_batch *b = r->idle;
  if (b) r->idle = b->next_idle;
  pthread_mutex_unlock(&r->batch_lock);
  if (!b && (b = calloc(1, sizeof *b))) {
    b->next_made = r->all;
    r->all = b;
  }
  if (b) b->len = b->n_rec = 0;
  return b;
}

static void batch_give(run_state *r, bits_batch *b) {
  pthread_mutex_lock(&r->batch_lock);
  b->next_idle = r->idle;
  r->idle = b;
  pthread_mutex_unlock(&r->batch_lock);
}

static void batches_free(run_state *r) {
  for (bits_batch *b = r->all, *next; b; b = next) {
    next = b->next_made;
    free(b->buf);
    free(b->rec);
    free(b);
  }
  r->all = r->idle = r->cur = NULL;
}

/* Appends one record to the current batch: 0, or -1 out of memory. */
static int batch_add(bits_batch *b, size_t c, int llr, const void *p, size_t len) {
  if (b->len + len > b->cap) {
    size_t cap = 2 * (b->len + len) + 65536;
    uint8_t *q = realloc(b->buf, cap);
    if (!q) return -1;
    b->buf = q;
    b->cap = cap;
  }
  if (b->n_rec == b->rec_cap) {
    size_t cap = 2 * b->rec_cap + 1024;
    bits_rec *q = realloc(b->rec, cap * sizeof *q);
    if (!q) return -1;
    b->rec = q;
    b->rec_cap = cap;
  }
  memcpy(b->buf + b->len, p, len);
  b->rec[b->n_rec++] = (bits_rec){(uint32_t)c, (uint32_t)llr, b->len, len};
  b->len += len;
  return 0;
}

/* the receiver's callback: appends a carrier's new bits and LLRs (to the batch of the writers, or
 * to the files), compares with the truth */
static void on_output(void *user, size_t c, const uint8_t *bits, size_t n_bytes, const float *llrs,
                      size_t n_symbols) {
  run_state *r = *(run_state **)user;
  carrier_out *k = &r->out[c];
  if (r->fatal) return;
  if (r->cur) {
    if (batch_add(r->cur, c, 0, bits, n_bytes) ||
        (llrs && batch_add(r->cur, c, 1, llrs, 2 * n_symbols * sizeof *llrs))) {
      cli_error(CMD, "out of memory for the bits on their way to the files");
      r->fatal = 1;
      return;
    }
  } else if (fwrite(bits, 1, n_bytes, k->bits) != n_bytes ||
             (llrs && fwrite(llrs, sizeof *llrs, 2 * n_symbols, k->llr) != 2 * n_symbols)) {
    cli_error(CMD, "cannot write %s: %s", llrs ? k->llr_name : k->bits_name, strerror(errno));
    r->fatal = 1;
    return;
  }
  /* the data bits of this call: unpacked, n_bytes; packed, the bits of its whole bytes, less
   * the zero padding of the flush's last byte */
  uint64_t in_file = k->file_bits + (r->o.packed ? 8 * (uint64_t)n_bytes : n_bytes);
  uint64_t real = 2 * (k->n_symbols + n_symbols);
  size_t have = (size_t)((in_file < real ? in_file : real) - k->n_bits);
  if (k->truth && have) {
    if (have > k->tcap) {
      uint8_t *p = realloc(k->tbuf, have);
      if (!p) {
        cli_error(CMD, "out of memory");
        r->fatal = 1;
        return;
      }
      k->tbuf = p;
      k->tcap = have;
    }
    size_t got = fread(k->tbuf, 1, have, k->truth);
    /* the first symbol of a differential chain carries no information */
    uint64_t skip = r->car[c].ambiguity == PRX_QPSK_DIFFERENTIAL ? 2 : 0;
    for (size_t i = 0; i < got; i++) { /* the call's bits start at file bit n_bits */
      unsigned b = r->o.packed ? (bits[i / 8] >> (7 - i % 8)) & 1 : bits[i];
      if (k->compared + i >= skip) k->errors += b != (k->tbuf[i] != 0);
    }
    k->compared += got;
    k->truth_short += have - got;
  }
  k->n_bits += have;
  k->file_bits = in_file;
  k->n_symbols += n_symbols;
}

/* --iq: appends a carrier's channel samples to its recording */
static void on_channel(void *user, size_t c, const prx_cf32 *y, size_t n) {
  run_state *r = *(run_state **)user;
  carrier_out *k = &r->out[c];
  if (r->fatal) return;
  prx_status st = prx_sigmf_write(k->iq, y, n);
  if (st) {
    cli_status_error(CMD, k->iq_base, st);
    r->fatal = 1;
  }
}

/* The listed carriers into r->car (a bad one: one line, exit 2). */
static int listed_carriers(run_state *r) {
  const options *o = &r->o;
  for (size_t i = 0; i < o->n_car; i++) {
    const prx_sim_carrier *s = &o->car[i];
    prx_rx_carrier *k = &r->car[i];
    *k = prx_rx_carrier_default();
    k->freq = s->freq;
    k->symbol_rate = s->symbol_rate;
    k->rolloff = s->rolloff;
    if (s->pilot_period) {
      k->ambiguity = PRX_QPSK_PILOTS;
      k->pilot_period = s->pilot_period;
      k->pilot_len = s->pilot_len;
    } else {
      /* diff (the default, as for `demod`) unless diff=0 was given */
      int diff_given = o->given[i] & (1u << CLI_CARRIER_KEY_DIFF);
      k->ambiguity = s->differential || !diff_given ? PRX_QPSK_DIFFERENTIAL : PRX_QPSK_NONE;
    }
    if (s->pilot_period && s->differential)
      return cli_usage_error(CMD, "--carrier '%s': give diff or pilots, not both", o->spec[i]);
    if (prx_rx_check_carrier(&r->rc, k)) {
      cli_error(CMD, "--carrier '%s': %s", o->spec[i], prx_last_error());
      return 2; /* a usage error, in the one line that says why */
    }
    r->spec[i] = o->spec[i];
  }
  r->n_car = o->n_car;
  return -1;
}

/* the weakest Es/N0 (dB) --detect reports: --detect-min-esn0, else the detector's default */
static double detect_min_esn0(const options *o) {
  return isnan(o->detect_min_esn0) ? prx_detect_config_default().min_esn0_db : o->detect_min_esn0;
}

/* --detect: reads the samples the detector needs (kept for the receiver), finds the carriers
 * and appends those the receiver can take (differential decoding assumed; a listed carrier
 * within a symbol rate of a found one stands for it). */
static int detect_carriers(run_state *r) {
  prx_detect_config dc = prx_detect_config_default();
  dc.sample_rate = r->in.sample_rate;
  dc.threads = (int)r->o.threads;
  dc.min_esn0_db = detect_min_esn0(&r->o);
  /* carriers down to 1/16 of the spacing (32 samples per symbol in a channel), so that the
   * detector's span (800 symbols of the slowest) stays within seconds at any K */
  dc.min_symbol_rate = fmax(r->in.sample_rate / 8192, r->in.sample_rate / r->o.K / 16);
  size_t need = prx_detect_min_samples(&dc), size = prx_format_size(r->in.format);
  prx_cf32 *x = malloc(need * sizeof *x);
  r->pre = malloc(need * size);
  r->found = calloc(256, sizeof *r->found);
  r->found_as = calloc(256, sizeof *r->found_as);
  r->found_why = calloc(256, sizeof *r->found_why);
  if (!x || !r->pre || !r->found || !r->found_as || !r->found_why) {
    free(x);
    return cli_error(CMD, "out of memory for the %zu samples detection needs", need);
  }
  while (r->pre_n < need) {
    size_t got = 0;
    int rc = cli_read_block(CMD, r->reader, (uint8_t *)r->pre + r->pre_n * size, need - r->pre_n,
                            r->pre_n, &got);
    if (rc >= 0) {
      free(x);
      return rc;
    }
    if (!got) break;
    r->pre_n += got;
  }
  if (r->pre_n < need)
    fprintf(stderr,
            "polyrx %s: warning: --detect: the input has %zu samples, fewer than the %zu the "
            "detector needs: what it finds may be wrong\n",
            CMD, r->pre_n, need);
  prx_status st = prx_convert_to_cf32(r->in.format, r->pre, r->pre_n, x);
  if (!st) st = prx_detect_carriers(&dc, x, r->pre_n, r->found, 256, &r->n_found);
  free(x);
  if (st) return cli_status_error(CMD, "--detect", st);
  for (size_t i = 0; i < r->n_found; i++) {
    const prx_detect_carrier *d = &r->found[i];
    r->found_as[i] = -1;
    size_t j = 0;
    while (j < r->o.n_car && fabs(r->car[j].freq - d->freq) > d->symbol_rate) j++;
    if (j < r->o.n_car) {
      r->found_as[i] = (long)j;
      snprintf(r->found_why[i], sizeof r->found_why[i], "listed as carrier %zu", j);
      continue;
    }
    prx_rx_carrier k = prx_rx_carrier_default();
    k.freq = d->freq;
    k.symbol_rate = d->symbol_rate;
    k.rolloff = d->rolloff;
    if (prx_rx_check_carrier(&r->rc, &k)) {
      snprintf(r->found_why[i], sizeof r->found_why[i], "%s", prx_last_error());
      fprintf(stderr, "polyrx %s: warning: --detect: not received: %s\n", CMD, r->found_why[i]);
      continue;
    }
    char text[160];
    snprintf(text, sizeof text, "detected: f=%.1f,rs=%.3f,rolloff=%.2f", d->freq, d->symbol_rate,
             d->rolloff);
    size_t c = r->n_car++;
    r->car[c] = k;
    r->spec_made[c] = strdup(text);
    if (!r->spec_made[c]) return cli_error(CMD, "out of memory");
    r->spec[c] = r->spec_made[c];
    r->found_as[i] = (long)c;
    snprintf(r->found_why[i], sizeof r->found_why[i], "received as carrier %zu", c);
  }
  if (!r->o.quiet)
    fprintf(stderr,
            "polyrx %s: --detect: %zu carrier%s at Es/N0 %g dB or more found in %zu samples, %zu "
            "received\n",
            CMD, r->n_found, r->n_found == 1 ? "" : "s", dc.min_esn0_db, r->pre_n,
            r->n_car - r->o.n_car);
  return -1;
}

void cli_rx_keep_enable(void) { rx_keep.enabled = 1; }

void cli_rx_keep_drop(void) {
  prx_rx_destroy(rx_keep.rx);
  free(rx_keep.car);
  rx_keep.rx = NULL;
  rx_keep.car = NULL;
  rx_keep.run = NULL;
}

static int same_carrier(const prx_rx_carrier *a, const prx_rx_carrier *b) {
  return a->freq == b->freq && a->symbol_rate == b->symbol_rate && a->rolloff == b->rolloff &&
         a->ambiguity == b->ambiguity && a->pilot_period == b->pilot_period &&
         a->pilot_len == b->pilot_len;
}

/* Whether a receiver made with a would be the one made with b (the callbacks are this file's,
 * their user the run's slot). */
static int same_receiver(const prx_rx_config *a, const prx_rx_config *b) {
  if (a->sample_rate != b->sample_rate || a->center_freq != b->center_freq ||
      a->channels != b->channels || a->taps_per_channel != b->taps_per_channel ||
      a->atten_db != b->atten_db || a->in_format != b->in_format ||
      a->n_carriers != b->n_carriers || a->block_symbols != b->block_symbols ||
      a->cfo_span_symbols != b->cfo_span_symbols || a->packed != b->packed || a->llrs != b->llrs ||
      a->on_output != b->on_output || a->on_channel != b->on_channel || a->threads != b->threads ||
      a->backend != b->backend || a->device != b->device || a->block_samples != b->block_samples)
    return 0;
  for (size_t i = 0; i < a->n_carriers; i++)
    if (!same_carrier(&a->carriers[i], &b->carriers[i])) return 0;
  return 1;
}

/* The run's receiver: the kept one where it was made with the same configuration (reset: as if
 * just created), else a new one (kept at the run's end where the process keeps receivers). */
static prx_status make_receiver(run_state *r) {
  prx_rx_config c = r->rc;
  if (!rx_keep.enabled) return prx_rx_create(&c, &r->rx);
  if (rx_keep.rx && same_receiver(&rx_keep.cfg, &c)) {
    double t0 = cli_seconds();
    prx_rx_reset(rx_keep.rx);
    r->ms_keep_take = (cli_seconds() - t0) * 1e3;
    r->rx = rx_keep.rx;
    rx_keep.run = r;
    r->kept = r->reused = 1;
    return PRX_OK;
  }
  cli_rx_keep_drop(); /* its memory freed before the new one is made */
  rx_keep.car = malloc(c.n_carriers * sizeof *rx_keep.car);
  if (!rx_keep.car) return prx_rx_create(&c, &r->rx); /* not kept */
  memcpy(rx_keep.car, c.carriers, c.n_carriers * sizeof *rx_keep.car);
  c.user = &rx_keep.run;
  prx_status st = prx_rx_create(&c, &r->rx);
  if (st) {
    cli_rx_keep_drop();
    return st;
  }
  rx_keep.rx = r->rx;
  rx_keep.cfg = c;
  rx_keep.cfg.carriers = rx_keep.car;
  rx_keep.run = r;
  r->kept = 1;
  return PRX_OK;
}

static int setup(run_state *r) {
  options *o = &r->o;
  cli_input_opts in = {o->input, o->format, o->rate, o->center, "6.5536M", o->quiet};
  int rc = cli_open_input(CMD, &in, &r->reader, &r->in);
  /* read while the CUDA runtime starts, pinned as the stream starts (closed below where the
   * receiver is not the device-resident one) */
  if (rc < 0) r->map = cli_input_map_open(r->reader, o->backend);
  /* the CUDA runtime's start on a thread, after the input's map is made (its mapping and threads:
   * the driver's start holds the process's mapping lock, which they wait for: 45-60 ms on the
   * H200 host); the stop signals are held: the runtime's threads keep the mask */
  if (rc < 0) r->warming = cli_warm_cuda_start(&r->warm, o->backend);
  cli_timing_phase(&r->tm, "input");
  if (rc >= 0) return rc;
  size_t max = o->n_car + (o->detect ? 256 : 0);
  r->car = calloc(max, sizeof *r->car);
  r->out = calloc(max, sizeof *r->out);
  r->spec = calloc(max, sizeof *r->spec);
  r->spec_made = calloc(max, sizeof *r->spec_made);
  if (!r->car || !r->out || !r->spec || !r->spec_made) return cli_error(CMD, "out of memory");
  prx_rx_config *c = &r->rc;
  *c = prx_rx_config_default();
  c->sample_rate = r->in.sample_rate;
  c->center_freq = r->in.center_freq;
  c->channels = (unsigned)o->K;
  c->taps_per_channel = (unsigned)o->taps;
  c->in_format = r->in.format;
  c->carriers = r->car;
  c->packed = o->packed;
  c->llrs = o->llr;
  c->on_channel = o->iq ? on_channel : NULL;
  c->on_output = on_output;
  r->self = r;
  c->user = &r->self;
  c->threads = (int)o->threads;
  c->backend = o->backend;
  c->block_samples = o->read_block;
  c->cfo_span_symbols = (unsigned)o->cfo_span; /* (0: the demodulator's default) */
  c->block_symbols = (unsigned)o->block;       /* (0: the demodulator's default) */
  int cuda = o->backend != PRX_BACKEND_CPU && prx_cuda_available(); /* waits for the module */
  cli_timing_phase(&r->tm, "module");
  if (cuda) {
    /* the device-resident receiver: large pinned reads, each of several receiver blocks */
    if (!o->read_block_set) o->read_block = READ_BLOCK_CUDA;
    c->block_samples = o->read_block >= 4 * RX_BLOCK_CUDA ? o->read_block / 4 : o->read_block;
  }
  if ((rc = listed_carriers(r)) >= 0) return rc;
  if (o->backend == PRX_BACKEND_CUDA && !prx_cuda_available())
    return cli_error(CMD, "--backend cuda: no usable CUDA device (use --backend cpu or auto)");
  if (o->detect && (rc = detect_carriers(r)) >= 0) return rc;
  c->n_carriers = r->n_car;
  if (!r->n_car) return -1; /* --detect found nothing: the report says so */
  prx_status st;
  cli_timing_phase(&r->tm, "carriers");
  /* made while the warm thread makes the device's context: the banks' CPU part needs none */
  if (o->n_devices || o->workers) {
    prx_rx_multi_config mc = prx_rx_multi_config_default();
    mc.rx = *c;
    mc.devices = o->n_devices ? o->devices : NULL;
    mc.n_devices = o->n_devices;
    mc.cpu_workers = (unsigned)o->workers;
    cli_rx_keep_drop(); /* a receiver of another configuration: the kept one's memory freed first */
    st = prx_rx_multi_create(&mc, &r->multi);
    if (!st) r->rx = (prx_rx *)prx_rx_multi_latest(r->multi);
  } else {
    st = make_receiver(r);
  }
  cli_timing_phase(&r->tm, "receiver");
  if (st) return cli_status_error(CMD, "receiver", st);
  if (r->multi || prx_rx_backend(r->rx) != PRX_BACKEND_CUDA) {
    prx_pipe_map_close(r->map);
    r->map = NULL;
  }
  return -1;
}

/* ---- the carriers' files, opened and closed on several threads ----
 *
 * Creating and closing a file costs a few tens of microseconds of the kernel's time (the
 * directory, the inode, the page cache's truncation): 1024 carriers' files take tens of ms on one
 * thread, which the stream does not overlap. The openers (threads of the command, each the
 * carriers c with c % n == i) share it; the errors are reported afterwards in carrier order: the
 * first failure's line, the one a single thread would meet first. */
typedef struct {
  run_state *r;
  void (*fn)(run_state *r, size_t c);
  size_t i, n;
} carrier_job;

static void *carrier_job_run(void *arg) {
  carrier_job *j = arg;
  for (size_t c = j->i; c < j->r->n_car; c += j->n) j->fn(j->r, c);
  return NULL;
}

/* fn(r, c) for every carrier, on up to 4 threads where there are cores for them and 16 carriers
 * each (cli_thread_start: threads that take no signal). */
static void for_each_carrier(run_state *r, void (*fn)(run_state *r, size_t c)) {
  int cores = prx_cpu_count();
  size_t n = cores >= 8 ? 4 : 1, started = 0;
  if (n > r->n_car / 16) n = r->n_car >= 32 ? r->n_car / 16 : 1;
  /* POLYRX_OPENERS=N (1..4): the tests' way to several threads on a small machine */
  n = (size_t)cli_env_int("POLYRX_OPENERS", 1, 4, (int)n);
  if (n > r->n_car) n = r->n_car ? r->n_car : 1;
  carrier_job job[4];
  pthread_t t[4];
  for (size_t i = 1; i < n; i++) {
    job[i] = (carrier_job){r, fn, i, n};
    if (cli_thread_start(&t[i], carrier_job_run, &job[i]) != 0) break;
    started = i;
  }
  /* this thread takes share 0, and the shares of the threads that could not start */
  for (size_t i = 0; i < n; i++) {
    if (i && i <= started) continue;
    job[i] = (carrier_job){r, fn, i, n};
    carrier_job_run(&job[i]);
  }
  for (size_t i = 1; i <= started; i++) pthread_join(t[i], NULL);
}

static void open_carrier(run_state *r, size_t c) {
  carrier_out *k = &r->out[c];
  const options *o = &r->o;
  if (o->truth && !(k->truth = fopen(k->truth_name, "rb")))
    k->open_which = 1;
  else if (!(k->bits = fopen(k->bits_name, "wb")))
    k->open_which = 2;
  else if (o->llr && !(k->llr = fopen(k->llr_name, "wb")))
    k->open_which = 3;
  if (k->open_which) k->open_err = errno;
}

static void close_carrier(run_state *r, size_t c) {
  carrier_out *k = &r->out[c];
  errno = 0;
  if (k->bits) k->bits_bad = ferror(k->bits) | fclose(k->bits);
  if (k->bits_bad) k->close_err = errno;
  errno = 0;
  if (k->llr) k->llr_bad = ferror(k->llr) | fclose(k->llr);
  if (k->llr_bad && !k->close_err) k->close_err = errno;
  if (k->truth) fclose(k->truth);
  k->bits = k->llr = k->truth = NULL;
}

/* The descriptors the outputs of n carriers hold at once, beside those open now: each carrier's
 * bits, LLRs, truth and IQ recording (its metadata written at the close), and a margin for the
 * report, the readers' and what opens later (a GPU driver's few dozen where it has not started). */
static size_t descriptors_for(const options *o, size_t n, size_t margin) {
  return cli_open_descriptors() + n * (1 + !!o->llr + !!o->truth + 2 * !!o->iq) + margin;
}

/* The carriers' files created (and the truth files opened): -1, or the exit code after the first
 * failure's line in carrier order. */
static int open_files(run_state *r) {
  for_each_carrier(r, open_carrier);
  for (size_t c = 0; c < r->n_car; c++) {
    const carrier_out *k = &r->out[c];
    const char *e = strerror(k->open_err);
    if (k->open_which == 1) return cli_error(CMD, "--truth: cannot open %s: %s", k->truth_name, e);
    if (k->open_which == 2) return cli_error(CMD, "cannot create %s: %s", k->bits_name, e);
    if (k->open_which == 3) return cli_error(CMD, "cannot create %s: %s", k->llr_name, e);
  }
  return -1;
}

/* The carriers' files closed; rc as cli_close_output leaves it, the first failure's line in
 * carrier order. */
static int close_files(run_state *r, int rc) {
  for_each_carrier(r, close_carrier);
  for (size_t c = 0; c < r->n_car && rc < 0; c++) {
    const carrier_out *k = &r->out[c];
    if (k->bits_bad || k->llr_bad)
      rc = cli_error(CMD, "cannot write %s: %s", k->bits_bad ? k->bits_name : k->llr_name,
                     strerror(k->close_err));
  }
  return rc;
}

static int open_outputs(run_state *r) {
  options *o = &r->o;
  if (mkdir(o->output, 0777) != 0 && errno != EEXIST)
    return cli_error(CMD, "cannot make the directory %s: %s", o->output, strerror(errno));
  size_t n = r->n_car;
  for (size_t c = 0; c < n; c++) {
    carrier_out *k = &r->out[c];
    k->bits_name = cli_format("%s/c%zu.bits", o->output, c);
    if (o->llr) k->llr_name = cli_format("%s/c%zu.llr", o->output, c);
    if (o->truth) k->truth_name = cli_format("%s%zu.bits", o->truth, c);
    if (o->iq) k->iq_base = cli_format("%s/c%zu", o->output, c);
    if (!k->bits_name || (o->llr && !k->llr_name) || (o->truth && !k->truth_name) ||
        (o->iq && !k->iq_base))
      return cli_error(CMD, "out of memory");
  }
  /* every output a file of its own, none the input or a truth file */
  cli_path *p = calloc(5 * n + 2, sizeof *p);
  char **iq_names = calloc(2 * n + 1, sizeof *iq_names);
  if (!p || !iq_names) {
    free(p);
    free(iq_names);
    return cli_error(CMD, "out of memory");
  }
  size_t m = 0;
  if (strcmp(o->input, "-")) p[m++] = (cli_path){"-i", prx_iq_reader_name(r->reader), 1};
  if (o->report) p[m++] = (cli_path){"--report", o->report, 0};
  for (size_t c = 0; c < n; c++) {
    p[m++] = (cli_path){"bits", r->out[c].bits_name, 0};
    if (o->llr) p[m++] = (cli_path){"LLRs", r->out[c].llr_name, 0};
    if (o->truth) p[m++] = (cli_path){"--truth", r->out[c].truth_name, 1};
    for (int e = 0; o->iq && e < 2; e++) {
      const char *ext = e ? ".sigmf-meta" : ".sigmf-data";
      iq_names[2 * c + e] = cli_format("%s%s", r->out[c].iq_base, ext);
      p[m++] = (cli_path){"--iq", iq_names[2 * c + e] ? iq_names[2 * c + e] : "", 0};
    }
  }
  int rc = cli_outputs_distinct(CMD, p, m);
  free(p);
  for (size_t i = 0; i < 2 * n; i++) free(iq_names[i]);
  free(iq_names);
  if (rc >= 0) return rc;
  unsigned long long cur = 0, max = 0;
  size_t need = descriptors_for(o, n, 16);
  if (cli_raise_open_files(need, &cur, &max))
    return cli_error(CMD,
                     "receiving %zu carriers needs %zu open files, but the limit is %llu (hard "
                     "limit %llu): receive fewer carriers at once, or raise the hard limit "
                     "(ulimit -Hn)",
                     n, need, cur, max);
  if ((rc = open_files(r)) >= 0) return rc;
  for (size_t c = 0; o->iq && c < n; c++) {
    carrier_out *k = &r->out[c];
    prx_rx_stats st;
    prx_rx_get_stats(r->rx, c, &st);
    char desc[200];
    snprintf(desc, sizeof desc,
             "polyrx rx: channel %u of %u (D = %u), the channel of carrier %zu (%s, %+.1f Hz "
             "off the channel's centre)",
             st.channel, r->rc.channels, r->rc.channels / 2, c, r->spec[c], st.mix_hz);
    prx_sigmf_meta meta = prx_sigmf_meta_default();
    meta.format = PRX_CF32;
    meta.sample_rate = 2 * r->in.sample_rate / r->rc.channels;
    meta.center_freq = r->in.center_freq + st.channel_freq;
    meta.description = desc;
    prx_status s2 = prx_sigmf_writer_open(k->iq_base, &meta, &k->iq);
    if (s2) return cli_status_error(CMD, "--iq", s2);
  }
  if (o->report && !(r->rep_f = strcmp(o->report, "-") ? fopen(o->report, "w") : stdout))
    return cli_error(CMD, "cannot create %s: %s", o->report, strerror(errno));
  return -1;
}

/* ---- streaming ---- */

static prx_status rx_compute(void *ctx, const void *in, size_t n, uint64_t pos, void *out,
                             size_t *out_n) {
  run_state *r = ctx;
  (void)pos;
  *out_n = 0;
  if (r->n_writers && !r->cur && !(r->cur = batch_take(r))) {
    cli_error(CMD, "out of memory for the bits on their way to the files");
    r->fatal = 1;
    return PRX_ERR_NOMEM;
  }
  prx_status st;
  if (r->multi) {
    st = in ? prx_rx_multi_execute(r->multi, in, n) : prx_rx_multi_flush(r->multi);
    r->rx = (prx_rx *)prx_rx_multi_latest(r->multi);
  } else {
    st = in ? prx_rx_execute(r->rx, in, n) : prx_rx_flush(r->rx);
  }
  if (st) {
    cli_status_error(CMD, "receiver", st);
    r->fatal = 1;
    return st;
  }
  if (r->fatal) return PRX_ERR_IO;
  if (r->cur && r->cur->n_rec) { /* the call's output to the writers */
    atomic_store(&r->cur->left, r->n_writers);
    memcpy(out, &r->cur, sizeof r->cur);
    *out_n = 1;
    r->cur = NULL;
  }
  r->n_in += n;
  cli_progress_update(&r->progress, r->n_in);
  return PRX_OK;
}

/* Writer `writer`'s carriers' records of one batch, in order, to their files. */
static prx_status rx_write(void *ctx, int writer, const void *out, size_t n, uint64_t block) {
  run_state *r = ctx;
  (void)block;
  if (!n) return PRX_OK;
  bits_batch *b;
  memcpy(&b, out, sizeof b);
  prx_status st = PRX_OK;
  for (size_t i = 0; i < b->n_rec && !st; i++) {
    const bits_rec *e = &b->rec[i];
    if (e->carrier % (unsigned)r->n_writers != (unsigned)writer) continue;
    carrier_out *k = &r->out[e->carrier];
    if (fwrite(b->buf + e->off, 1, e->len, e->llr ? k->llr : k->bits) != e->len) {
      if (!atomic_exchange(&r->write_failed, 1))
        cli_error(CMD, "cannot write %s: %s", e->llr ? k->llr_name : k->bits_name, strerror(errno));
      st = PRX_ERR_IO;
    }
  }
  if (atomic_fetch_sub(&b->left, 1) == 1) batch_give(r, b);
  return st;
}

static int stream(run_state *r) {
  if (r->pre_n) { /* the samples --detect read come first */
    prx_status st = r->multi ? prx_rx_multi_execute(r->multi, r->pre, r->pre_n)
                             : prx_rx_execute(r->rx, r->pre, r->pre_n);
    if (st) return cli_status_error(CMD, "receiver", st);
    if (r->fatal) return 1;
    r->n_in = r->pre_n;
  }
  prx_pipe_config c;
  cli_pipe_setup(&c, r->reader, &r->in, r->o.read_block);
  c.compute = rx_compute;
  c.write = rx_write;
  c.ctx = r;
  /* each output slot holds a batch's address (the writers' bits); with several receivers (the
   * stitching) the files are written from the compute stage */
  c.out_bytes = sizeof(bits_batch *);
  if (!r->multi) {
    int cores = prx_cpu_count();
    r->n_writers = cores >= 16 ? 4 : cores >= 8 ? 2 : 1;
    /* POLYRX_WRITERS=N (1..64): the tests' way to several writers on a small machine */
    r->n_writers = cli_env_int("POLYRX_WRITERS", 1, 64, r->n_writers);
    if ((size_t)r->n_writers > r->n_car) r->n_writers = (int)r->n_car;
    c.n_writers = r->n_writers;
  }
  c.pinned = prx_rx_backend(r->rx) == PRX_BACKEND_CUDA; /* the input blocks go by DMA */
  /* a file read by several threads while the GPU computes */
  r->n_readers = cli_pipe_readers(&c, r->reader, prx_rx_backend(r->rx) == PRX_BACKEND_CUDA);
  /* several readers read one receiver block each (2^21 samples, not the one reader's 2^23): 7
   * blocks in flight need a quarter of the page-locked memory (0.5 ms per MiB to make), and the
   * receiver meets the same blocks (a read of 2^23 is cut into 4 of them) and gives the same
   * output */
  if (r->n_readers > 1 && !r->map && !r->o.read_block_set && r->rc.block_samples &&
      r->o.read_block % r->rc.block_samples == 0)
    c.block_samples = r->rc.block_samples;
  /* a file in place: the receiver's copies take its blocks where they lie, a whole read (4
   * receiver blocks, overlapped within the call) per block as there are no buffers to make; with
   * many carriers a whole batch of the receiver's (about a CFO span a row) per block, so that
   * each call runs the banks once a span (a read of 2^23 samples is about a third of a span at
   * 6.5536 Msps and K = 1024: a bank call each, at ~0.5 ms of the banks' own cost a call with
   * 1024 channels) */
  if (r->map && !r->o.read_block_set && r->n_car >= RX_MANY_CARRIERS) {
    size_t batch = prx_rx_gpu_batch_blocks(r->rx) * r->rc.block_samples;
    if (batch > c.block_samples) c.block_samples = batch;
  }
  cli_pipe_use_map(&c, r->reader, r->map);
  prx_pipe_result res;
  int rc = cli_pipe_run(CMD, &c, NULL, &res);
  if (rc < 0 && r->n_in == 0)
    return cli_error(CMD, "%s is empty: no samples to receive", prx_iq_reader_name(r->reader));
  return rc;
}

/* ---- what the run found ---- */

/* Theoretical BER at Es/N0 (dB): coherent Gray QPSK p = Q(sqrt(Es/N0)); differential decoding
 * 2p(1 - p). */
static double ber_theory(double esn0_db, prx_qpsk_ambiguity a) {
  double p = 0.5 * erfc(sqrt(pow(10, esn0_db / 10) / 2));
  return a == PRX_QPSK_DIFFERENTIAL ? 2 * p * (1 - p) : p;
}

static double carrier_ber(const carrier_out *k, prx_qpsk_ambiguity a) {
  uint64_t counted = k->compared > 2 && a == PRX_QPSK_DIFFERENTIAL ? k->compared - 2 : k->compared;
  return counted ? (double)k->errors / (double)counted : NAN;
}

/* The fraction of a carrier's blocks that are locked: a signal seen (not no_signal) and followed
 * at its symbol rate (not clock_range: a clock beyond the supported offset is a wrong symbol
 * rate, and those bits are noise whatever the signal statistic says); NaN before any block. */
static double locked_fraction(const prx_qpsk_stats *s) {
  return s->blocks ? (double)s->blocks_locked / (double)s->blocks : NAN;
}

/* Carrier c's object of the report, printed (cJSON's formatted text, as at depth 0) into
 * r->car_json[c]: made on the openers' threads, from the stats taken before. */
static void carrier_json(run_state *r, size_t c) {
  const prx_rx_stats s = r->stats[c];
  const prx_rx_carrier *k = &r->car[c];
  const carrier_out *w = &r->out[c];
  cJSON *o = cJSON_CreateObject();
  cli_json_num(o, "index", (double)c);
  cJSON_AddStringToObject(o, "spec", r->spec[c]);
  cli_json_num(o, "offset_hz", k->freq);
  cli_json_num(o, "frequency_hz", r->in.center_freq + k->freq);
  cli_json_num(o, "symbol_rate", k->symbol_rate);
  cli_json_num(o, "rolloff", k->rolloff);
  cJSON_AddStringToObject(o, "ambiguity", prx_qpsk_ambiguity_name(k->ambiguity));
  cli_json_num(o, "channel", s.channel);
  cli_json_num(o, "channel_offset_hz", s.channel_freq);
  cli_json_num(o, "mix_hz", s.mix_hz);
  cli_json_num(o, "cfo_hz", s.demod.cfo_hz);
  cli_json_num(o, "cfo_hz_min", s.demod.cfo_min_hz);
  cli_json_num(o, "cfo_hz_max", s.demod.cfo_max_hz);
  cli_json_num(o, "esn0_db", s.demod.esn0_db);
  cli_json_num(o, "clock_offset_ppm", s.demod.clock_ppm);
  cli_json_num(o, "blocks", (double)s.demod.blocks);
  cli_json_num(o, "blocks_no_signal", (double)s.demod.blocks_no_signal);
  cli_json_num(o, "blocks_clock_range", (double)s.demod.blocks_clock_range);
  cli_json_num(o, "blocks_locked", (double)s.demod.blocks_locked);
  cli_json_num(o, "locked_fraction", locked_fraction(&s.demod));
  cli_json_num(o, "symbols", (double)s.demod.symbols);
  cli_json_num(o, "data_symbols", (double)s.demod.data_symbols);
  cli_json_num(o, "bits", (double)w->n_bits);
  cJSON_AddStringToObject(o, "file", w->bits_name);
  if (w->truth) {
    cli_json_num(o, "bit_errors", (double)w->errors);
    cli_json_num(o, "bits_compared", (double)w->compared);
    cli_json_num(o, "ber", carrier_ber(w, k->ambiguity));
    cli_json_num(o, "ber_theory", ber_theory(s.demod.esn0_db, k->ambiguity));
  }
  cli_json_qpsk_warnings(o, s.demod.warnings);
  r->car_json[c] = cJSON_Print(o);
  cJSON_Delete(o);
}

/* text with "\"carriers\":\t[]" replaced by the carriers' texts, each two levels deeper (two
 * tabs after each of its line breaks: the root object's and the array's), as cJSON prints them
 * inside the array: the report's text (NULL: out of memory or a carrier's text missing). */
static char *splice_carriers(const run_state *r, const char *text) {
  static const char key[] = "\"carriers\":\t[]";
  const char *at = strstr(text, key);
  if (!at) return NULL;
  size_t len = strlen(text) + 2 * r->n_car + 2;
  for (size_t c = 0; c < r->n_car; c++) {
    if (!r->car_json[c]) return NULL;
    len += strlen(r->car_json[c]);
    for (const char *q = r->car_json[c]; (q = strchr(q, '\n')); q++) len += 2;
  }
  char *out = malloc(len + 1), *w = out;
  if (!out) return NULL;
  size_t head = (size_t)(at - text) + sizeof key - 2; /* up to the '[' included */
  memcpy(w, text, head);
  w += head;
  for (size_t c = 0; c < r->n_car; c++) {
    if (c) *w++ = ',', *w++ = ' ';
    for (const char *q = r->car_json[c]; *q; q++) {
      *w++ = *q;
      if (*q == '\n') *w++ = '\t', *w++ = '\t';
    }
  }
  strcpy(w, at + sizeof key - 2); /* from the ']' on */
  return out;
}

static int write_report(run_state *r, const char *status, double elapsed) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "polyrx_version", prx_version());
  cJSON_AddStringToObject(root, "command", "rx");
  cJSON *in = cJSON_AddObjectToObject(root, "input");
  cJSON_AddStringToObject(in, "path", r->o.input);
  cJSON_AddStringToObject(in, "format", prx_format_name(r->in.format));
  cli_json_num(in, "sample_rate", r->in.sample_rate);
  cli_json_num(in, "center_frequency", r->in.center_freq);
  cJSON_AddBoolToObject(in, "sigmf", r->in.is_sigmf);
  cli_json_num(in, "samples", (double)r->n_in);
  cJSON *cfg = cJSON_AddObjectToObject(root, "receiver");
  cli_json_num(cfg, "channels", r->rc.channels);
  cli_json_num(cfg, "decimation", r->rc.channels / 2);
  cli_json_num(cfg, "channel_spacing_hz", r->in.sample_rate / r->rc.channels);
  cli_json_num(cfg, "channel_rate_hz", 2 * r->in.sample_rate / r->rc.channels);
  cli_json_num(cfg, "taps", (double)r->rc.channels * r->rc.taps_per_channel + 1);
  cli_json_num(cfg, "cfo_span_symbols", prx_rx_cfo_span(r->rx));
  cli_json_num(cfg, "demodulator_groups", (double)prx_rx_n_groups(r->rx));
  cJSON_AddStringToObject(cfg, "backend", prx_backend_name(prx_rx_backend(r->rx)));
  cli_json_num(cfg, "threads", r->rc.threads);
  cJSON_AddStringToObject(cfg, "bits", r->o.packed ? "packed" : "unpacked");
  cJSON_AddBoolToObject(cfg, "llr", r->o.llr);
  cJSON_AddArrayToObject(root, "carriers"); /* its items spliced into the text below */
  if (r->o.detect) {
    cJSON *det = cJSON_AddArrayToObject(root, "detected");
    for (size_t i = 0; i < r->n_found; i++) {
      const prx_detect_carrier *d = &r->found[i];
      cJSON *o = cJSON_CreateObject();
      cli_json_num(o, "offset_hz", d->freq);
      cli_json_num(o, "frequency_hz", r->in.center_freq + d->freq);
      cli_json_num(o, "symbol_rate", d->symbol_rate);
      cli_json_num(o, "bandwidth_hz", d->bandwidth);
      cli_json_num(o, "rolloff", d->rolloff);
      cli_json_num(o, "esn0_db", d->esn0_db);
      if (r->found_as[i] >= 0)
        cli_json_num(o, "carrier", (double)r->found_as[i]);
      else
        cJSON_AddNullToObject(o, "carrier");
      cJSON_AddStringToObject(o, "note", r->found_why[i]);
      cJSON_AddItemToArray(det, o);
    }
    cli_json_num(root, "detect_samples", (double)r->pre_n);
    cli_json_num(root, "detect_min_esn0_db", detect_min_esn0(&r->o));
  }
  uint64_t samples;
  double t_chan, t_demod;
  prx_rx_get_times(r->rx, &samples, &t_chan, &t_demod);
  cJSON *t = cJSON_AddObjectToObject(root, "totals");
  cli_json_num(t, "samples", (double)r->n_in);
  cli_json_num(t, "duration_s", (double)r->n_in / r->in.sample_rate);
  cli_json_num(t, "elapsed_s", elapsed);
  cli_json_num(t, "input_rate_sps", elapsed > 0 ? (double)r->n_in / elapsed : NAN);
  cli_json_num(t, "realtime_factor",
               elapsed > 0 ? (double)r->n_in / r->in.sample_rate / elapsed : NAN);
  cJSON *split = cJSON_AddObjectToObject(t, "time_s");
  cli_json_num(split, "channelizer", t_chan);
  cli_json_num(split, "demodulators", t_demod);
  cli_json_num(split, "other", elapsed - t_chan - t_demod);
  cJSON_AddStringToObject(root, "status", status);
  char *head = cJSON_Print(root);
  cJSON_Delete(root);
  r->car_json = calloc(r->n_car ? r->n_car : 1, sizeof *r->car_json);
  if (head && r->car_json) for_each_carrier(r, carrier_json);
  char *text = head && r->car_json ? splice_carriers(r, head) : NULL;
  for (size_t c = 0; r->car_json && c < r->n_car; c++) free(r->car_json[c]);
  free(r->car_json);
  r->car_json = NULL;
  free(head);
  if (!text) return cli_error(CMD, "out of memory for the report");
  int ok = fputs(text, r->rep_f) >= 0 && fputc('\n', r->rep_f) >= 0;
  free(text);
  return ok ? -1 : cli_error(CMD, "cannot write the report %s: %s", r->o.report, strerror(errno));
}

/* how many carriers have any of the demodulator warnings bits (their bits may be noise) */
static size_t carriers_with(const run_state *r, unsigned bits) {
  size_t n = 0;
  for (size_t c = 0; r->stats && c < r->n_car; c++) n += (r->stats[c].demod.warnings & bits) != 0;
  return n;
}
static size_t carriers_warned(const run_state *r) { return carriers_with(r, ~0u); }

static void table(const run_state *r, double elapsed) {
  int truth = r->o.truth != NULL;
  printf("%3s %14s %9s %5s %7s %9s %8s %7s %10s", "#", "frequency Hz", "offset Hz", "chan", "Es/N0",
         "CFO Hz", "clk ppm", "locked", "bits");
  if (truth) printf(" %8s %10s %10s", "errors", "BER", "theory");
  printf("\n");
  for (size_t c = 0; c < r->n_car; c++) {
    const prx_rx_stats s = r->stats[c];
    const carrier_out *w = &r->out[c];
    double locked = s.demod.blocks ? 100 * locked_fraction(&s.demod) : 0;
    printf("%3zu %14.1f %+9.1f %5u %7.2f %+9.2f %+8.1f %6.1f%% %10llu", c,
           r->in.center_freq + s.freq, s.freq, s.channel, s.demod.esn0_db, s.demod.cfo_hz,
           s.demod.clock_ppm, locked, (unsigned long long)w->n_bits);
    if (truth)
      printf(" %8llu %10.3g %10.3g", (unsigned long long)w->errors,
             carrier_ber(w, r->car[c].ambiguity), ber_theory(s.demod.esn0_db, r->car[c].ambiguity));
    /* "locked" counts the blocks with a signal followed at its symbol rate: a warning (timing
     * jumps, non-finite input) says that even those bits may be noise */
    printf("%s\n", s.demod.warnings ? "  !" : "");
  }
  const size_t n_warned = carriers_warned(r);
  if (n_warned)
    printf("! %zu carrier%s with demodulator warnings (standard error, the report's warnings): "
           "their bits may be noise\n",
           n_warned, n_warned == 1 ? "" : "s");
  uint64_t samples;
  double t_chan, t_demod;
  prx_rx_get_times(r->rx, &samples, &t_chan, &t_demod);
  double dur = (double)r->n_in / r->in.sample_rate;
  printf("%llu samples (%.6g s at %.9g Hz) in %.3g s: %.4g Msamples/s, %.3g x real time "
         "(channelizer %.3g s, demodulators %.3g s, %s)\n",
         (unsigned long long)r->n_in, dur, r->in.sample_rate, elapsed,
         elapsed > 0 ? (double)r->n_in / elapsed / 1e6 : 0.0, elapsed > 0 ? dur / elapsed : 0.0,
         t_chan, t_demod, prx_backend_name(prx_rx_backend(r->rx)));
}

/* A warning more than WARN_LIST carriers share goes to standard error as one line, with their
 * count and indices: a receiver given every channel of a band has most of them without a signal
 * (1130 lines for 1024 carriers, one a carrier and warning). The report keeps each carrier's. */
#define WARN_LIST 8

/* the carriers c with warning bit set, as "0-4, 6, 9-1023" into buf (cut with ", ..." at cap) */
static void carrier_ranges(const run_state *r, unsigned bit, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = 0;
  for (size_t c = 0; c < r->n_car; c++) {
    if (!(r->stats[c].demod.warnings & bit)) continue;
    size_t e = c;
    while (e + 1 < r->n_car && (r->stats[e + 1].demod.warnings & bit)) e++;
    char item[48];
    int k = e > c ? snprintf(item, sizeof item, "%s%zu-%zu", len ? ", " : "", c, e)
                  : snprintf(item, sizeof item, "%s%zu", len ? ", " : "", c);
    if (k < 0 || len + (size_t)k + 6 >= cap) {
      snprintf(buf + len, cap - len, ", ...");
      return;
    }
    memcpy(buf + len, item, (size_t)k + 1);
    len += (size_t)k;
    c = e;
  }
}

/* the demodulators' warnings on standard error: those bits may be noise */
static void warnings(const run_state *r) {
  unsigned grouped = 0; /* the warning bits shared by more than WARN_LIST carriers */
  for (size_t i = 0; i < CLI_QPSK_N_WARNINGS; i++)
    if (carriers_with(r, cli_qpsk_warn_bits[i]) > WARN_LIST) grouped |= cli_qpsk_warn_bits[i];
  for (size_t c = 0; c < r->n_car; c++) {
    const prx_rx_stats s = r->stats[c];
    for (size_t i = 0; i < CLI_QPSK_N_WARNINGS; i++)
      if (s.demod.warnings & cli_qpsk_warn_bits[i] & ~grouped)
        fprintf(stderr, "polyrx %s: warning: carrier %zu (%s): %s\n", CMD, c, r->spec[c],
                prx_qpsk_warning_text(cli_qpsk_warn_bits[i]));
    if (r->out[c].truth_short)
      fprintf(stderr, "polyrx %s: warning: carrier %zu: %s ends %llu bits before the output\n", CMD,
              c, r->out[c].truth_name, (unsigned long long)r->out[c].truth_short);
  }
  for (size_t i = 0; i < CLI_QPSK_N_WARNINGS; i++) {
    const unsigned bit = cli_qpsk_warn_bits[i];
    if (!(grouped & bit)) continue;
    char list[160];
    carrier_ranges(r, bit, list, sizeof list);
    fprintf(stderr, "polyrx %s: warning: %zu carriers (%s): %s\n", CMD, carriers_with(r, bit), list,
            prx_qpsk_warning_text(bit));
  }
}

int cmd_rx(int argc, char **argv) {
  run_state *r = calloc(1, sizeof *r);
  if (!r) return cli_error(CMD, "out of memory");
  pthread_mutex_init(&r->batch_lock, NULL);
  cli_timing_start(&r->tm);
  int rc = parse_args(argc, argv, &r->o);
  if (rc > 0) rc = 2; /* every error of the arguments is a usage error */
  if (rc < 0) cli_hold_stop_signals();
  /* while this is the process's only thread (cli_reserve_descriptors): the carriers listed, or
   * with --detect as many as it may find */
  if (rc < 0)
    cli_reserve_descriptors(descriptors_for(&r->o, r->o.detect ? MAX_CARRIERS : r->o.n_car, 64));
  if (rc < 0) rc = setup(r);
  cli_warm_cuda_end(r->warm, r->warming);
  cli_timing_phase(&r->tm, "cuda");
  if (rc < 0) rc = open_outputs(r);
  if (rc < 0) signal(SIGXFSZ, SIG_IGN);
  cli_timing_phase(&r->tm, "outputs");
  if (rc < 0) {
    cli_catch_stop_signals();
    double t0 = cli_seconds();
    cli_progress_start(&r->progress, CMD, cli_input_samples(r->reader, r->o.input), r->o.quiet);
    if (r->rx)
      rc = stream(r);
    else { /* --detect found nothing the receiver can take */
      fprintf(stderr, "polyrx %s: --detect: no carrier to receive\n", CMD);
      r->n_in = r->pre_n;
    }
    cli_progress_end(&r->progress);
    cli_release_stop_signals();
    if (rc < 0 && cli_interrupted()) rc = 130;
    double elapsed = cli_seconds() - t0;
    cli_timing_phase(&r->tm, "stream");
    /* the carriers' stats, once, for the table, the warnings and the report */
    if (r->rx && !(r->stats = calloc(r->n_car, sizeof *r->stats)) && rc < 0)
      rc = cli_error(CMD, "out of memory");
    for (size_t c = 0; r->stats && c < r->n_car; c++) prx_rx_get_stats(r->rx, c, &r->stats[c]);
    if (r->n_in && r->rx && r->stats) {
      table(r, elapsed);
      warnings(r);
    }
    cli_timing_phase(&r->tm, "table");
    if (r->rep_f && (r->stats || !r->rx)) {
      /* "warning" where some carrier's bits may be noise, as demod's report */
      const char *status = rc >= 0              ? (rc == 130 ? "interrupted" : "error")
                           : carriers_warned(r) ? "warning"
                                                : "ok";
      int rc_rep = write_report(r, status, elapsed);
      if (rc < 0) rc = rc_rep;
    }
    cli_timing_phase(&r->tm, "report");
  }
  if (r->out) rc = close_files(r, rc);
  for (size_t c = 0; r->out && c < r->n_car; c++) {
    carrier_out *k = &r->out[c];
    if (k->iq && (rc < 0 || rc == 130)) { /* (an interrupted run keeps what it read) */
      prx_status st = prx_sigmf_writer_close(k->iq);
      if (st) rc = cli_status_error(CMD, k->iq_base, st);
    } else if (k->iq) {
      prx_sigmf_writer_discard(k->iq);
    }
    free(k->iq_base);
    free(k->bits_name);
    free(k->llr_name);
    free(k->truth_name);
    free(k->tbuf);
  }
  rc = cli_close_output(CMD, r->rep_f, r->o.report ? r->o.report : "report", rc);
  cli_timing_phase(&r->tm, "files");
  prx_rx_get_setup_times(r->rx, &r->setup);
  if (r->multi)
    prx_rx_multi_destroy(r->multi); /* r->rx is one of its workers' */
  else if (r->kept && rc < 0)
    rx_keep.run = NULL; /* kept for the next run */
  else if (r->kept)
    cli_rx_keep_drop(); /* a failed or stopped run's receiver is not reused */
  else if (!(cli_exit_frees_skipped() && r->rx && prx_rx_backend(r->rx) == PRX_BACKEND_CPU))
    prx_rx_destroy(r->rx);
  /* (a CPU receiver is left to the process's end where it follows: the kernel takes its pages
   * back at once, where a destroy frees each channel's buffers on its own, ~45 ms for 1024
   * carriers on the development VM) */
  cli_timing_phase(&r->tm, "receiver");
  r->ms_map_close = cli_input_map_close(r->map, &r->map_stats);
  prx_iq_close(r->reader);
  for (size_t c = 0; r->spec_made && c < r->n_car; c++) free(r->spec_made[c]);
  free(r->spec_made);
  free(r->spec);
  free(r->pre);
  free(r->found);
  free(r->found_as);
  free(r->found_why);
  free(r->out);
  free(r->stats);
  batches_free(r);
  pthread_mutex_destroy(&r->batch_lock);
  cli_timing_phase(&r->tm, "close");
  cli_timing_print(&r->tm, CMD, "%d reader(s)", r->n_readers);
  if (r->tm.on && r->reused)
    fprintf(stderr, "polyrx %s: receiver: kept from the previous run, reset in %.1f ms\n", CMD,
            r->ms_keep_take);
  else if (r->tm.on)
    fprintf(stderr,
            "polyrx %s: receiver's set-up (ms): banks (the device's context met) %.1f, "
            "prototype and channelizer %.1f, rows %.1f, streams and events %.1f, device ring "
            "%.1f, flush zeros %.1f, outputs %.1f\n",
            CMD, r->setup.banks * 1e3, r->setup.chan * 1e3, r->setup.rows * 1e3,
            r->setup.gpu_streams * 1e3, r->setup.gpu_ring * 1e3, r->setup.gpu_zero * 1e3,
            r->setup.gpu_outputs * 1e3);
  if (r->tm.on) cli_input_map_timing(CMD, &r->map_stats, r->ms_map_close);
  free(r->car);
  free(r);
  return rc < 0 ? 0 : rc;
}
