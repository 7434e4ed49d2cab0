/* polyrx channelize: splits a wideband IQ stream (raw file, standard input or SigMF) into K
 * channels with the polyphase filter bank and writes one SigMF recording per selected channel.
 *
 * Streaming, in bounded memory: read a block of input samples, channelize it, append each
 * channel's outputs to its recording; at the end of the input feed the part of the filter tail
 * that the alignment needs and finish each recording (data, then metadata). Memory is one input
 * block plus one block of outputs, whatever the input's length. All open files are counted
 * against RLIMIT_NOFILE and every output path checked against the input before anything is
 * written.
 *
 * Alignment: the library's output j belongs to input sample jD and shows the input delayed by
 * the prototype's group delay (M - 1)/2 (polyrx/chan.h). The command drops the first
 * lead = round((M - 1) / (2D)) outputs and keeps ceil(N / D), so that a channel's sample j is
 * the channel at input time jD + offset, offset = lead D - (M - 1)/2 (|offset| <= D/2; +1/2 input
 * sample for the Kaiser prototypes, whose even length puts the centre between two samples),
 * and the recording spans the input's time: no ramp before, no tail after. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dsp/finite.h"

#define CMD "channelize"
#define DEFAULT_BLOCK ((size_t)1 << 18)
#define MAX_BLOCK ((size_t)1 << 26)
#define MAX_K 4194304ul
#define TOP_CHANNELS 8
#define EXT_VERSION "0.2.0"   /* the polyrx SigMF extension, docs/polyrx.sigmf-ext.md */
#define NONFINITE_WARN 16     /* more non-finite samples than this: a warning (a wrong -F?) */
#define STOP_TAIL_SECONDS 0.5 /* after a stop signal, the tail gets this long, then is cut */
#define CHUNK_WORK ((double)(1 << 26)) /* multiply-adds per execute: a stop is seen within one */
#define NO_POWER_DBFS (-999.0)         /* polyrx:power_dbfs of a recording without power */

typedef struct {
  const char *input, *format, *rate, *center, *channels, *outdir;
  unsigned long K, oversample, taps_per_channel, threads, block;
  double atten, cutoff;
  prx_backend backend;
  int quiet;
} options;

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: polyrx channelize -i FILE|- -s RATE -K CHANNELS -o DIR [options]\n"
      "\n"
      "Splits a wideband complex IQ stream into K channels of spacing RATE/K with a polyphase\n"
      "filter bank and writes one SigMF recording (cf32_le) per channel into DIR, named\n"
      "chNNNN.sigmf-data / chNNNN.sigmf-meta by channel index. Channel k is centred at\n"
      "CENTER + k RATE/K, wrapped into [CENTER - RATE/2, CENTER + RATE/2) (FFT order: channel 0\n"
      "at CENTER, channels above K/2 at negative offsets). Streams in bounded memory.\n"
      "\n"
      "input:\n"
      "  -i, --input FILE|-     raw interleaved IQ file, - for standard input, or a SigMF\n"
      "                         recording (X.sigmf-meta, X.sigmf-data or the base name X)\n"
      "  -F, --format FMT       raw sample format: cf32 (float32), ci16 (int16), ci8 (int8),\n"
      "                         cu8 (rtl-sdr offset binary); little-endian (default cf32;\n"
      "                         SigMF: from core:datatype)\n"
      "  -s, --rate RATE        sample rate in Hz, e.g. 6.5536M (required for raw input;\n"
      "                         SigMF: core:sample_rate, which -s overrides)\n"
      "  -f, --center FREQ      centre frequency in Hz, e.g. 100M (default 0; SigMF:\n"
      "                         captures[0].core:frequency, which -f overrides)\n"
      "\n"
      "channelizer:\n"
      "  -K, --num-channels K   number of channels (required; any even K with\n"
      "                         --oversample 2, any K with --oversample 1; K = 1 needs\n"
      "                         --cutoff below 0.5)\n"
      "      --oversample 2|1   2: output rate 2 RATE/K, 50%% overlapping channels (D = K/2);\n"
      "                         1: critically sampled, output rate RATE/K (D = K)  (default 2)\n"
      "  -P, --taps-per-channel P  prototype filter length K*P (default 16)\n"
      "      --atten DB         prototype stop-band attenuation in dB (default 80)\n"
      "      --cutoff C         prototype cut-off (-6 dB) in channel spacings (default 0.5)\n"
      "  -c, --channels LIST    channels to write, e.g. 3,7,100-120 (default: all K)\n"
      "  -t, --threads N        worker threads, 0 = all cores (default 0); output is\n"
      "                         identical for any N\n"
      "      --backend B        auto, cpu or cuda (default auto: CUDA when a GPU is usable)\n"
      "      --block N          input samples per read (default %zu); memory is about\n"
      "                         N * (input sample size + 8 * selected/D) bytes\n"
      "\n"
      "output:\n"
      "  -o, --output DIR       output directory (created if absent)\n"
      "  -q, --quiet            no summary on standard error\n"
      "  -h, --help             this help\n"
      "\n"
      "Numbers take engineering suffixes: k, M, G (6.5536M = 6553600). Each channel holds\n"
      "ceil(N / D) samples for N input samples, aligned with the input: sample j is the\n"
      "channel at input sample j*D (the filter's group delay removed; the remaining fraction,\n"
      "half an input sample, is polyrx:time_offset_input_samples in the metadata).\n"
      "Non-finite cf32 input samples (NaN, inf) are replaced by 0 and counted. At the end a\n"
      "summary gives the input read, the output rate and the strongest channels with their\n"
      "power (dBFS: 0 dB is a full-scale complex tone of amplitude 1). Each recording is\n"
      "complete or absent: a .sigmf-meta is written last, beside the whole data; an earlier\n"
      "run's chNNNN files of the channels written are replaced.\n"
      "\n"
      "examples:\n"
      "  polyrx channelize -i capture.cu8 -F cu8 -s 2.4M -f 100M -K 64 -o fm/\n"
      "  rtl_sdr -f 100M -s 2.4M - | polyrx channelize -i - -F cu8 -s 2.4M -f 100M -K 64 -o fm/\n"
      "  polyrx channelize -i rec.sigmf-meta -K 1024 --channels 3,7,100-120 -o out/\n"
      "  polyrx channelize -i wide.ci16 -F ci16 -s 61.44M -K 4096 --oversample 1 -P 24 -o ch/\n",
      DEFAULT_BLOCK);
}

/* ---- argument parsing ---- */

static int parse_args(int argc, char **argv, options *o) {
  memset(o, 0, sizeof *o);
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  o->oversample = 2;
  o->taps_per_channel = 16;
  o->atten = 80;
  o->cutoff = 0.5;
  o->block = DEFAULT_BLOCK;
  o->backend = PRX_BACKEND_AUTO;
  enum { OPT_OVERSAMPLE = 256, OPT_ATTEN, OPT_CUTOFF, OPT_BACKEND, OPT_BLOCK };
  int cutoff_given = 0;
  static const struct option longs[] = {
      {"input", required_argument, 0, 'i'},
      {"format", required_argument, 0, 'F'},
      {"rate", required_argument, 0, 's'},
      {"center", required_argument, 0, 'f'},
      {"centre", required_argument, 0, 'f'},
      {"num-channels", required_argument, 0, 'K'},
      {"oversample", required_argument, 0, OPT_OVERSAMPLE},
      {"taps-per-channel", required_argument, 0, 'P'},
      {"atten", required_argument, 0, OPT_ATTEN},
      {"cutoff", required_argument, 0, OPT_CUTOFF},
      {"channels", required_argument, 0, 'c'},
      {"threads", required_argument, 0, 't'},
      {"backend", required_argument, 0, OPT_BACKEND},
      {"block", required_argument, 0, OPT_BLOCK},
      {"output", required_argument, 0, 'o'},
      {"quiet", no_argument, 0, 'q'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0},
  };
  optind = 0; /* full reset of getopt's state (glibc) */
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":i:F:s:f:K:P:c:t:o:qh", longs, NULL)) != -1) {
    const char *a = optarg;
    switch (c) {
    case 'i': o->input = a; break;
    case 'F': o->format = a; break;
    case 's': o->rate = a; break;
    case 'f': o->center = a; break;
    case 'c': o->channels = a; break;
    case 'o': o->outdir = a; break;
    case 'q': o->quiet = 1; break;
    case 'h': usage(stdout); return 0;
    case 'K':
      if (cli_parse_uint(a, 1, MAX_K, &o->K))
        return cli_error(CMD, "-K: '%s' is not a valid channel count (a whole number 1..%lu)", a,
                         MAX_K);
      break;
    case OPT_OVERSAMPLE:
      if (cli_parse_uint(a, 1, 2, &o->oversample))
        return cli_error(CMD, "--oversample: '%s' is not valid: use 2 (D = K/2) or 1 (D = K)", a);
      break;
    case 'P':
      if (cli_parse_uint(a, 1, 4096, &o->taps_per_channel))
        return cli_bad_value(CMD, "--taps-per-channel", a, "tap count (a whole number 1..4096)");
      break;
    case OPT_ATTEN:
      if (cli_parse_eng(a, &o->atten) || !(o->atten > 0 && o->atten <= 300))
        return cli_bad_value(CMD, "--atten", a, "attenuation (dB, in (0, 300])");
      break;
    case OPT_CUTOFF:
      if (cli_parse_eng(a, &o->cutoff) || !(o->cutoff > 0))
        return cli_bad_value(CMD, "--cutoff", a, "cut-off (channel spacings, > 0)");
      cutoff_given = 1;
      break;
    case 't':
      if (cli_parse_uint(a, 0, 1024, &o->threads))
        return cli_bad_value(CMD, "--threads", a, "thread count (0..1024, 0 = all cores)");
      break;
    case OPT_BACKEND:
      if (!strcmp(a, "auto"))
        o->backend = PRX_BACKEND_AUTO;
      else if (!strcmp(a, "cpu"))
        o->backend = PRX_BACKEND_CPU;
      else if (!strcmp(a, "cuda"))
        o->backend = PRX_BACKEND_CUDA;
      else
        return cli_error(CMD, "--backend: unknown backend '%s' (auto, cpu or cuda)", a);
      break;
    case OPT_BLOCK:
      if (cli_parse_uint(a, 1, MAX_BLOCK, &o->block))
        return cli_error(CMD, "--block: '%s' is not a valid block size (1..%zu samples)", a,
                         MAX_BLOCK);
      break;
    case ':': return cli_error(CMD, "option %s needs a value", argv[optind - 1]);
    default:
      return cli_error(CMD, "unknown option '%s' (polyrx channelize --help lists them)",
                       argv[optind - 1]);
    }
  }
  if (optind < argc)
    return cli_error(CMD, "unexpected argument '%s' (the input is given with -i)", argv[optind]);
  if (!o->input) return cli_error(CMD, "no input: give -i FILE, or -i - for standard input");
  if (!o->K) return cli_error(CMD, "no channel count: give -K CHANNELS (e.g. -K 1024)");
  if (!o->outdir) return cli_error(CMD, "no output directory: give -o DIR");
  if (o->K == 1 && o->oversample == 1 && !cutoff_given)
    return cli_error(CMD,
                     "-K 1: one channel is the whole band, and the default cut-off (0.5 channel "
                     "spacings) is then the input's Nyquist frequency, where no low-pass can be "
                     "designed: give --cutoff below 0.5 (e.g. --cutoff 0.45), or K >= 2");
  if (o->oversample == 2 && o->K % 2)
    return cli_error(CMD,
                     "-K %lu is odd: 2x oversampling (--oversample 2, the default, D = K/2) needs "
                     "an even K; use an even K or --oversample 1",
                     o->K);
  return -1; /* go on */
}

/* ---- small helpers ---- */

/* Hz as "100.1088 MHz" (9 significant digits, engineering prefix). */
static const char *fmt_hz(double hz, char *buf, size_t cap) {
  double a = fabs(hz);
  const char *unit = "Hz";
  double v = hz;
  if (a >= 1e9)
    v = hz / 1e9, unit = "GHz";
  else if (a >= 1e6)
    v = hz / 1e6, unit = "MHz";
  else if (a >= 1e3)
    v = hz / 1e3, unit = "kHz";
  snprintf(buf, cap, "%.9g %s", v, unit);
  return buf;
}

/* mkdir -p */
static int make_dirs(const char *path) {
  char *p = strdup(path);
  if (!p) return -1;
  int rc = 0;
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == '\0') {
      char keep = *s;
      *s = '\0';
      if (mkdir(p, 0777) != 0 && errno != EEXIST) rc = -1;
      *s = keep;
      if (rc || !keep) break;
    }
  }
  free(p);
  struct stat st;
  if (rc == 0 && (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))) {
    if (errno == 0 || !S_ISDIR(st.st_mode)) errno = ENOTDIR;
    rc = -1;
  }
  return rc;
}

/* Descriptors open now (the input, standard streams, and those of a GPU driver, which holds a
 * few dozen): counted in /proc/self/fd where there is one, else a margin of 16. */
static size_t open_descriptors(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 16;
  size_t n = 0;
  while (readdir(d)) n++;
  closedir(d);
  return n; /* ".", ".." and the directory's own descriptor: a margin of 3 */
}

/* Makes sure `need` files can be open at once: raises the soft RLIMIT_NOFILE as far as the
 * hard limit allows. */
static int ensure_open_files(size_t need, size_t n_channels) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0; /* unknown: try anyway */
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) return 0;
  if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need) {
    rl.rlim_cur = need;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0) return 0;
  }
  return cli_error(CMD,
                   "writing %zu channels needs %zu open files, but the limit is %llu (hard "
                   "limit %llu): select fewer channels with --channels, or raise the hard limit "
                   "(ulimit -Hn)",
                   n_channels, need, (unsigned long long)rl.rlim_cur,
                   rl.rlim_max == RLIM_INFINITY ? 0ull : (unsigned long long)rl.rlim_max);
}

/* Removes repeated channels from the list (keeping the first), so that no two outputs write
 * one file; returns how many were dropped. */
static size_t dedupe(unsigned *list, size_t *n, unsigned K) {
  unsigned char *seen = calloc(K, 1);
  if (!seen) return 0;
  size_t m = 0;
  for (size_t i = 0; i < *n; i++)
    if (!seen[list[i]]) {
      seen[list[i]] = 1;
      list[m++] = list[i];
    }
  free(seen);
  size_t dropped = *n - m;
  *n = m;
  return dropped;
}

static int digits(unsigned long v) {
  int d = 1;
  while (v >= 10) v /= 10, d++;
  return d;
}

/* Counts chNNNN.sigmf-* files in dir that this run did not write (left by an earlier run with
 * another K or channel list), and temporary files of a run that was killed
 * (chNNNN.sigmf-*.tmp-*), so the user is told rather than misled. */
static size_t count_stale(const char *dir, const unsigned char *written, unsigned K, int width,
                          size_t *temporary) {
  *temporary = 0;
  DIR *d = opendir(dir);
  if (!d) return 0;
  size_t stale = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    const char *name = e->d_name;
    if (strncmp(name, "ch", 2)) continue;
    const char *p = name + 2, *q = p;
    while (*q >= '0' && *q <= '9') q++;
    if (q == p) continue;
    if ((!strncmp(q, ".sigmf-meta.tmp-", 16) || !strncmp(q, ".sigmf-data.tmp-", 16))) {
      (*temporary)++;
      continue;
    }
    if (strcmp(q, ".sigmf-meta") && strcmp(q, ".sigmf-data")) continue;
    unsigned long k = strtoul(p, NULL, 10);
    if (q - p != width || k >= K || !written[k]) stale++;
  }
  closedir(d);
  return stale;
}

/* ---- the run ---- */

typedef struct {
  options o;
  prx_iq_reader *reader;
  prx_iq_info in; /* format, rate and centre in use */
  prx_chan *chan;
  unsigned *select;
  size_t n_sel;
  prx_sigmf_writer **w;
  unsigned char *failed; /* per selected channel: its recording had a write error */
  size_t n_failed, n_complete;
  double *energy; /* sum |y|^2 per selected channel */
  void *inbuf;
  prx_cf32 *outbuf;
  size_t stride;
  size_t chunk;     /* input samples per execute (a stop is noticed between two) */
  uint64_t lead;    /* library outputs dropped at the start (the group delay, in outputs) */
  double offset;    /* output j is the channel at input time jD + offset (input samples) */
  uint64_t n_in;    /* input samples channelized */
  uint64_t fed;     /* samples given to the channelizer: the input, then the tail's zeros */
  uint64_t lib_out; /* library outputs per channel so far (the first `lead` are dropped) */
  uint64_t n_out;   /* outputs written per channel */
  uint64_t target;  /* ceil(n_in / D): the outputs the recordings should hold */
  uint64_t nonfinite_in, nonfinite_out;
  int tail_cut;   /* a stop signal cut the filter tail short */
  int chan_error; /* the channelizer failed: the recordings would lack their end */
  int fatal;      /* a channelizer error, or every output failed: nothing more is written */
} run_state;

static int setup_input(run_state *r) {
  const options *o = &r->o;
  cli_input_opts in = {o->input, o->format, o->rate, o->center, "6.5536M", o->quiet};
  return cli_open_input(CMD, &in, &r->reader, &r->in);
}

static int setup_chan(run_state *r) {
  const options *o = &r->o;
  prx_status st;
  unsigned K = (unsigned)o->K;
  if (o->channels) {
    if ((st = prx_chan_parse_list(o->channels, K, &r->select, &r->n_sel)))
      return cli_status_error(CMD, "--channels", st);
    size_t dropped = dedupe(r->select, &r->n_sel, K);
    if (dropped && !o->quiet)
      fprintf(stderr, "polyrx %s: note: %zu channel(s) listed more than once are written once\n",
              CMD, dropped);
  }
  prx_chan_config c = prx_chan_config_default();
  c.channels = K;
  c.decimation = o->oversample == 2 ? K / 2 : K;
  c.taps_per_channel = (unsigned)o->taps_per_channel;
  c.atten_db = o->atten;
  c.cutoff = o->cutoff;
  c.select = r->select;
  c.n_select = r->n_sel;
  c.in_format = r->in.format;
  c.sample_rate = r->in.sample_rate;
  c.center_freq = r->in.center_freq;
  c.threads = (int)o->threads;
  c.backend = o->backend;
  if ((st = prx_chan_create(&c, &r->chan))) return cli_status_error(CMD, "channelizer", st);
  r->n_sel = prx_chan_n_outputs(r->chan);
  size_t D = prx_chan_decimation(r->chan), M;
  prx_chan_taps(r->chan, &M);
  /* the alignment: drop round((M - 1) / (2D)) outputs */
  r->lead = (M - 1 + D) / (2 * D);
  r->offset = (double)r->lead * D - (M - 1) / 2.0;
  /* execute in pieces of about CHUNK_WORK multiply-adds, so that a stop signal is seen
   * promptly whatever the configuration (the whole block at the usual sizes) */
  double work = (double)M / D + (double)K / D * log2((double)K) + 1;
  double chunk = floor(CHUNK_WORK / work);
  r->chunk = chunk >= (double)o->block ? o->block : chunk < (double)D ? D : (size_t)chunk;
  /* one stride fits the outputs of any chunk */
  r->stride = r->chunk / D + 2;
  r->inbuf = malloc(o->block * prx_format_size(r->in.format));
  r->outbuf = malloc(r->n_sel * r->stride * sizeof *r->outbuf);
  r->energy = calloc(r->n_sel, sizeof *r->energy);
  r->w = calloc(r->n_sel, sizeof *r->w);
  r->failed = calloc(r->n_sel, 1);
  if (!r->inbuf || !r->outbuf || !r->energy || !r->w || !r->failed)
    return cli_error(CMD,
                     "out of memory for a block of %lu samples and %zu channels (try a "
                     "smaller --block)",
                     o->block, r->n_sel);
  return -1;
}

/* The metadata every channel's recording carries (the polyrx extension, described in
 * docs/polyrx.sigmf-ext.md). */
static prx_status describe(run_state *r, size_t s, prx_sigmf_writer *w) {
  unsigned K = prx_chan_channels(r->chan), D = prx_chan_decimation(r->chan);
  size_t M;
  prx_chan_taps(r->chan, &M);
  prx_chan_channel ch;
  prx_chan_channel_info(r->chan, s, &ch);
  double fs = r->in.sample_rate, gd = prx_chan_group_delay(r->chan);
  prx_status st;
  if ((st = prx_sigmf_writer_add_extension(w, "polyrx", EXT_VERSION, 1))) return st;
  const struct {
    const char *key;
    double v;
  } nums[] = {
      {"polyrx:channel_index", ch.index},
      {"polyrx:channels", K},
      {"polyrx:decimation", D},
      {"polyrx:channel_spacing", fs / K},
      {"polyrx:taps_per_channel", (double)r->o.taps_per_channel},
      {"polyrx:prototype_taps", (double)M},
      {"polyrx:atten_db", r->o.atten},
      {"polyrx:cutoff", r->o.cutoff},
      {"polyrx:group_delay_input_samples", gd},
      {"polyrx:group_delay_seconds", gd / fs},
      {"polyrx:time_offset_input_samples", r->offset},
      {"polyrx:input_sample_rate", fs},
      {"polyrx:input_center_frequency", r->in.center_freq},
  };
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
    if ((st = prx_sigmf_writer_set_number(w, nums[i].key, nums[i].v))) return st;
  if ((st = prx_sigmf_writer_set_string(w, "polyrx:input_format", prx_format_name(r->in.format))))
    return st;
  return prx_sigmf_writer_set_string(w, "polyrx:input", r->o.input);
}

/* DIR/chNNNN (the base of output s's recording) into buf. */
static void output_base(const run_state *r, size_t s, char *buf, size_t cap) {
  unsigned K = prx_chan_channels(r->chan);
  int width = digits(K - 1) < 4 ? 4 : digits(K - 1);
  prx_chan_channel ch;
  prx_chan_channel_info(r->chan, s, &ch);
  snprintf(buf, cap, "%s/ch%0*u", r->o.outdir, width, ch.index);
}

/* No output file is the input (which the writers would remove as an earlier run's file): the
 * input as given, its data file, and a recording's metadata beside it. */
static int check_paths(run_state *r) {
  size_t n = 2 * r->n_sel + 3, m = 0, cap = strlen(r->o.outdir) + 32;
  cli_path *paths = calloc(n, sizeof *paths);
  char *names = malloc(n * (cap + 16)), *roles = malloc(n * 32);
  int rc = -1;
  if (!paths || !names || !roles) {
    rc = cli_error(CMD, "out of memory");
    goto out;
  }
  const char *data = prx_iq_reader_name(r->reader);
  paths[m++] = (cli_path){"-i", r->o.input, 1};
  if (strcmp(r->o.input, "-")) paths[m++] = (cli_path){"its data file", data, 1};
  size_t len = strlen(data);
  char meta[4096];
  if (r->in.is_sigmf && len > 11 && len < sizeof meta && !strcmp(data + len - 11, ".sigmf-data")) {
    snprintf(meta, sizeof meta, "%.*s.sigmf-meta", (int)(len - 11), data);
    paths[m++] = (cli_path){"its metadata", meta, 1};
  }
  for (size_t s = 0; s < r->n_sel; s++) {
    prx_chan_channel ch;
    prx_chan_channel_info(r->chan, s, &ch);
    for (int k = 0; k < 2; k++) {
      char *name = names + m * (cap + 16), *role = roles + m * 32;
      output_base(r, s, name, cap);
      strcat(name, k ? ".sigmf-meta" : ".sigmf-data");
      snprintf(role, 32, "output %s", k ? "metadata" : "data");
      paths[m++] = (cli_path){role, name, 0};
    }
  }
  rc = cli_outputs_distinct(CMD, paths, m);
out:
  free(paths);
  free(names);
  free(roles);
  return rc;
}

static int open_outputs(run_state *r) {
  const options *o = &r->o;
  if (make_dirs(o->outdir) != 0)
    return cli_error(CMD, "cannot create output directory '%s': %s", o->outdir, strerror(errno));
  /* those open now, the metadata file written at close and a margin, plus one data file per
   * channel */
  if (ensure_open_files(open_descriptors() + r->n_sel + 8, r->n_sel)) return 1;
  int rc = check_paths(r);
  if (rc >= 0) return rc;
  unsigned K = prx_chan_channels(r->chan);
  size_t cap = strlen(o->outdir) + 32;
  char *base = malloc(cap), desc[160];
  if (!base) return cli_error(CMD, "out of memory");
  for (size_t s = 0; s < r->n_sel; s++) {
    prx_chan_channel ch;
    prx_chan_channel_info(r->chan, s, &ch);
    output_base(r, s, base, cap);
    snprintf(desc, sizeof desc, "polyrx channelize: channel %u of %u", ch.index, K);
    prx_sigmf_meta m = prx_sigmf_meta_default();
    m.sample_rate = prx_chan_output_rate(r->chan);
    m.center_freq = ch.center_freq;
    m.description = desc;
    prx_status st = prx_sigmf_writer_open(base, &m, &r->w[s]);
    if (!st) st = describe(r, s, r->w[s]);
    if (st) {
      free(base);
      return cli_status_error(CMD, "output", st);
    }
  }
  free(base);
  return -1;
}

/* Appends the aligned part of n library outputs per channel (in outbuf) to the recordings:
 * the first `lead` library outputs of the stream are dropped, and at most `keep` are
 * written. A channel whose write fails loses its recording; the others go on. */
static int write_outputs(run_state *r, size_t n, uint64_t keep) {
  size_t skip = r->lib_out >= r->lead ? 0 : (size_t)(r->lead - r->lib_out);
  if (skip > n) skip = n;
  r->lib_out += n;
  size_t k = n - skip;
  if (k > keep) k = keep;
  if (!k) return -1;
  int rc = -1;
  for (size_t s = 0; s < r->n_sel; s++) {
    prx_cf32 *y = r->outbuf + s * r->stride + skip;
    double e = 0;
    for (size_t j = 0; j < k; j++) e += (double)y[j].re * y[j].re + (double)y[j].im * y[j].im;
    if (!isfinite(e)) {
      /* a finite input can still overflow float32 in the filter (values near 3.4e38): such
       * outputs are zeroed like non-finite input (the sum of squares in double overflows only
       * through them) */
      r->nonfinite_out += prx_cf32_zero_nonfinite(y, k);
      e = 0;
      for (size_t j = 0; j < k; j++) e += (double)y[j].re * y[j].re + (double)y[j].im * y[j].im;
    }
    r->energy[s] += e;
    if (r->failed[s]) continue;
    prx_status st = prx_sigmf_write(r->w[s], y, k);
    if (st) {
      /* the first failure is reported; the writer keeps its error for close */
      if (!r->n_failed) rc = cli_status_error(CMD, "output", st);
      r->failed[s] = 1;
      r->n_failed++;
    }
  }
  r->n_out += k;
  if (r->n_failed == r->n_sel) r->fatal = 1;
  return rc;
}

/* Channelizes n input samples from inbuf in pieces of r->chunk; returns -1, or an exit code. */
static int channelize(run_state *r, size_t n) {
  for (size_t off = 0; off < n && !r->fatal;) {
    size_t k = n - off < r->chunk ? n - off : r->chunk, n_out = 0;
    const unsigned char *in = (const unsigned char *)r->inbuf + off * prx_format_size(r->in.format);
    prx_status st = prx_chan_execute(r->chan, in, k, r->outbuf, r->stride, &n_out);
    if (st) {
      r->fatal = r->chan_error = 1;
      return cli_status_error(CMD, "channelizer", st);
    }
    r->n_in += k;
    r->fed += k;
    off += k;
    write_outputs(r, n_out, UINT64_MAX);
    if (off < n && cli_interrupted()) {
      fprintf(stderr, "polyrx %s: interrupted: stopping after %llu input samples\n", CMD,
              (unsigned long long)r->n_in);
      return 130;
    }
  }
  return -1;
}

/* Reads, channelizes and writes until the input ends; returns -1 at a clean end, else an exit
 * code (the outputs of every sample channelized are still finished by the caller). A write
 * error of some channels does not stop the others; one of every channel does. */
static int stream(run_state *r) {
  int rc_out = -1;
  for (;;) {
    size_t n = 0;
    int rc = cli_read_block(CMD, r->reader, r->inbuf, r->o.block, r->n_in, &n);
    if (rc >= 0) return rc;
    if (n == 0) return rc_out;
    if (r->in.format == PRX_CF32) r->nonfinite_in += prx_cf32_zero_nonfinite(r->inbuf, n);
    size_t failed = r->n_failed;
    rc = channelize(r, n);
    if (r->n_failed > failed && rc_out < 0) rc_out = 1;
    if (rc >= 0) return rc;
    if (r->fatal) return 1;
  }
}

/* The filter tail the alignment needs: zeros until library output lead + ceil(N / D) - 1
 * exists. After a stop signal it gets STOP_TAIL_SECONDS, then is cut short (with a note). */
static int finish(run_state *r) {
  unsigned D = prx_chan_decimation(r->chan);
  r->target = (r->n_in + D - 1) / D;
  if (r->fatal || r->n_in == 0) return -1;
  uint64_t last = r->lead + r->target - 1; /* the last library output needed */
  int rc = -1;
  while (r->lib_out <= last && !r->fatal) {
    if (cli_interrupted() && cli_seconds_since_stop() > STOP_TAIL_SECONDS) {
      r->tail_cut = 1;
      break;
    }
    /* zeros up to input sample last * D (the one output `last` belongs to), in chunks */
    uint64_t need = last * D + 1 - r->fed;
    size_t k = need < r->chunk ? (size_t)need : r->chunk, n_out = 0;
    r->fed += k;
    prx_status st = prx_chan_execute_zeros(r->chan, k, r->outbuf, r->stride, &n_out);
    if (st) {
      r->fatal = r->chan_error = 1;
      return cli_status_error(CMD, "channelizer tail", st);
    }
    int w = write_outputs(r, n_out, r->target - r->n_out);
    if (w >= 0 && rc < 0) rc = w;
  }
  return rc;
}

/* Finishes every recording (data, then metadata); a failed one leaves no files. Returns the
 * first error's exit code. */
static int close_outputs(run_state *r) {
  int rc = -1;
  if (!r->w) return rc;
  for (size_t s = 0; s < r->n_sel; s++) {
    if (!r->w[s]) continue;
    if (r->chan_error) { /* recordings without their end are none: complete or absent */
      prx_sigmf_writer_discard(r->w[s]);
      r->w[s] = NULL;
      continue;
    }
    double p = r->n_out ? r->energy[s] / (double)r->n_out : 0;
    /* never absent and never NaN: a recording without power gets NO_POWER_DBFS */
    double db = p > 0 ? 10 * log10(p) : NO_POWER_DBFS;
    if (!(db > NO_POWER_DBFS)) db = NO_POWER_DBFS;
    if (!(db < 1000)) db = 1000;
    prx_sigmf_writer_set_number(r->w[s], "polyrx:input_samples", (double)r->n_in);
    prx_sigmf_writer_set_number(r->w[s], "polyrx:power_dbfs", db);
    prx_sigmf_writer_set_number(r->w[s], "polyrx:nonfinite_input_samples", (double)r->nonfinite_in);
    prx_status st = prx_sigmf_writer_close(r->w[s]);
    r->w[s] = NULL;
    if (!st) {
      r->n_complete++;
    } else if (!r->failed[s]) {
      r->failed[s] = 1;
      if (!r->n_failed++ && rc < 0) rc = cli_status_error(CMD, "output", st);
    }
  }
  if (r->n_failed && rc < 0) rc = 1;
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Non-finite samples: a note when a few, a warning when more than NONFINITE_WARN (shown even
 * with -q: quiet, the summary's note lines are left out). */
static void report_nonfinite(const run_state *r, int quiet) {
  int warn = r->nonfinite_in > NONFINITE_WARN;
  if (r->nonfinite_in && (warn || !quiet))
    fprintf(stderr,
            "%s%s: %llu of %llu input samples were not finite (NaN or inf) and were replaced by "
            "0%s\n",
            quiet ? "polyrx " CMD ": " : "  ", warn ? "warning" : "note",
            (unsigned long long)r->nonfinite_in, (unsigned long long)r->n_in,
            warn ? ": is the input really cf32 (-F)?" : "");
  if (r->nonfinite_out)
    fprintf(stderr, "%swarning: %llu channel samples overflowed float32 and were replaced by 0\n",
            quiet ? "polyrx " CMD ": " : "  ", (unsigned long long)r->nonfinite_out);
}

static void summary(run_state *r, double elapsed) {
  char b1[48], b2[48], b3[48];
  double fs = r->in.sample_rate;
  unsigned K = prx_chan_channels(r->chan), D = prx_chan_decimation(r->chan);
  fprintf(stderr, "polyrx %s: read %llu samples (%.6g s at %s) in %.3g s (%.3g Msample/s)\n", CMD,
          (unsigned long long)r->n_in, r->n_in / fs, fmt_hz(fs, b1, sizeof b1), elapsed,
          elapsed > 0 ? r->n_in / elapsed / 1e6 : 0.0);
  if (!r->n_failed)
    fprintf(stderr, "  wrote %zu of %u channels", r->n_complete, K);
  else
    fprintf(stderr,
            "  wrote %zu of %zu channels (%zu failed to write and have no recording; K = %u)",
            r->n_complete, r->n_sel, r->n_failed, K);
  fprintf(stderr, " to %s/: %llu samples each at %s (D = %u), channel spacing %s\n", r->o.outdir,
          (unsigned long long)r->n_out, fmt_hz(fs / D, b2, sizeof b2), D,
          fmt_hz(fs / K, b3, sizeof b3));
  if (r->tail_cut)
    fprintf(stderr,
            "  note: the stop signal cut the filter tail short: the recordings end %llu samples "
            "before the input's end\n",
            (unsigned long long)(r->target - r->n_out));
  report_nonfinite(r, 0);
  if (!r->n_out || !r->n_sel) return;
  double *db = malloc(r->n_sel * sizeof *db), *sorted = malloc(r->n_sel * sizeof *sorted);
  size_t *order = malloc(r->n_sel * sizeof *order);
  if (!db || !sorted || !order) goto out;
  for (size_t s = 0; s < r->n_sel; s++) {
    double p = r->energy[s] / (double)r->n_out;
    db[s] = sorted[s] = p > 0 ? 10 * log10(p) : NO_POWER_DBFS;
    order[s] = s;
  }
  qsort(sorted, r->n_sel, sizeof *sorted, cmp_double);
  double median =
      r->n_sel % 2 ? sorted[r->n_sel / 2] : 0.5 * (sorted[r->n_sel / 2 - 1] + sorted[r->n_sel / 2]);
  size_t top = r->n_sel < TOP_CHANNELS ? r->n_sel : TOP_CHANNELS;
  /* partial selection sort: the `top` strongest, strongest first */
  for (size_t i = 0; i < top; i++)
    for (size_t j = i + 1; j < r->n_sel; j++)
      if (db[order[j]] > db[order[i]]) {
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
      }
  fprintf(stderr, "  strongest channels (median channel power %.1f dBFS):\n", median);
  fprintf(stderr, "    %8s  %18s  %12s  %12s\n", "channel", "centre", "power dBFS", "above median");
  for (size_t i = 0; i < top; i++) {
    prx_chan_channel ch;
    prx_chan_channel_info(r->chan, order[i], &ch);
    fprintf(stderr, "    %8u  %18s  %12.1f  %9.1f dB\n", ch.index,
            fmt_hz(ch.center_freq, b1, sizeof b1), db[order[i]], db[order[i]] - median);
  }
out:
  free(db);
  free(sorted);
  free(order);
}

static void banner(const run_state *r) {
  char b1[48], b2[48];
  unsigned K = prx_chan_channels(r->chan), D = prx_chan_decimation(r->chan);
  size_t M;
  prx_chan_taps(r->chan, &M);
  fprintf(stderr,
          "polyrx %s: %s (%s%s) at %s, centre %s -> %u channels, D = %u, %lu taps/channel "
          "(%zu), %.4g dB, %s backend -> %zu SigMF recordings in %s/\n",
          CMD, r->o.input, prx_format_name(r->in.format), r->in.is_sigmf ? ", SigMF" : "",
          fmt_hz(r->in.sample_rate, b1, sizeof b1), fmt_hz(r->in.center_freq, b2, sizeof b2), K, D,
          r->o.taps_per_channel, M, r->o.atten, prx_backend_name(prx_chan_backend(r->chan)),
          r->n_sel, r->o.outdir);
}

static void cleanup(run_state *r) {
  /* writers still open here belong to a run that failed before streaming began: their empty
   * data files are removed and no metadata is written */
  if (r->w)
    for (size_t s = 0; s < r->n_sel; s++) prx_sigmf_writer_discard(r->w[s]);
  free(r->w);
  free(r->failed);
  free(r->energy);
  free(r->inbuf);
  free(r->outbuf);
  free(r->select);
  prx_chan_destroy(r->chan);
  prx_iq_close(r->reader);
}

int cmd_channelize(int argc, char **argv) {
  run_state r;
  memset(&r, 0, sizeof r);
  int rc = parse_args(argc, argv, &r.o);
  if (rc < 0) rc = setup_input(&r);
  if (rc < 0) rc = setup_chan(&r);
  /* a file-size limit (ulimit -f) makes a write fail with EFBIG, reported, instead of killing
   * the process mid-write */
  if (rc < 0) signal(SIGXFSZ, SIG_IGN);
  if (rc < 0) rc = open_outputs(&r);
  if (rc < 0) {
    if (!r.o.quiet) banner(&r);
    /* Ctrl-C / SIGTERM end the stream cleanly within a second: what was read is channelized,
     * the tail fed for at most STOP_TAIL_SECONDS, the recordings finished; a second signal
     * kills as usual (leaving temporary files, never a .sigmf-meta) */
    cli_catch_stop_signals();
    double t0 = cli_seconds();
    rc = stream(&r);
    if (rc < 0 && cli_interrupted()) rc = 130; /* the signal came during the last read */
    /* the tail is fed after an input error too: every complete sample read is written */
    int rc_flush = finish(&r);
    int rc_close = close_outputs(&r);
    if (rc < 0) rc = rc_flush >= 0 ? rc_flush : rc_close;
    if (rc < 0 && cli_interrupted()) rc = 130; /* the signal came during the tail */
    double elapsed = cli_seconds() - t0;
    if (r.o.quiet) report_nonfinite(&r, 1);
    if (!r.o.quiet) {
      summary(&r, elapsed);
      unsigned K = prx_chan_channels(r.chan);
      unsigned char *written = calloc(K, 1);
      if (written) {
        for (size_t s = 0; s < r.n_sel; s++) {
          prx_chan_channel ch;
          prx_chan_channel_info(r.chan, s, &ch);
          written[ch.index] = 1;
        }
        int width = digits(K - 1) < 4 ? 4 : digits(K - 1);
        size_t temporary, stale = count_stale(r.o.outdir, written, K, width, &temporary);
        if (stale)
          fprintf(stderr,
                  "polyrx %s: note: %s/ also holds %zu ch*.sigmf-* file(s) this run did not "
                  "write (an earlier run?)\n",
                  CMD, r.o.outdir, stale);
        if (temporary)
          fprintf(stderr,
                  "polyrx %s: note: %s/ holds %zu temporary file(s) of a run that was killed "
                  "(ch*.sigmf-*.tmp-*): they are no recordings and can be removed\n",
                  CMD, r.o.outdir, temporary);
        free(written);
      }
      if (rc > 0 && !r.fatal && !r.n_failed)
        fprintf(stderr,
                "polyrx %s: the outputs of the %llu complete input samples read were written\n",
                CMD, (unsigned long long)r.n_in);
    }
  }
  cleanup(&r);
  return rc < 0 ? 0 : rc;
}
