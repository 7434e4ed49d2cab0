/* polyrx channelize: splits a wideband IQ stream (raw file, standard input or SigMF) into K
 * channels with the polyphase filter bank and writes one SigMF recording per selected channel.
 *
 * Streaming, in bounded memory: read a block of input samples, channelize it, append each
 * channel's outputs to its recording; at the end of the input feed the part of the filter tail
 * that the alignment needs and finish each recording (data, then metadata). Memory is one input
 * block plus one block of outputs, whatever the input's length. All open files are counted
 * against RLIMIT_NOFILE and every output path checked against the input before anything is
 * written (in a directory the run made none can be the input: only the other paths given are).
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
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h> /* mallopt */
#endif
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "chan/chan_internal.h"
#include "chan_power.h"
#include "dsp/fft_plan.h"
#include "dsp/finite.h"
#include "dsp/pack.h"
#include "io/io_internal.h"

#define CMD "channelize"
#define DEFAULT_BLOCK ((size_t)1 << 18) /* CPU under 4 writers, CUDA's least: choose_block */
#define SMALL_BLOCK ((size_t)1 << 16)   /* the CPU's largest with 4 writers or more */
#define POWER_GROUP DEFAULT_BLOCK       /* input samples per power sum on the CPU (setup_chan) */
#define GPU_BLOCK ((size_t)1 << 20)     /* the CUDA backend's default block, within GPU_BUDGET */
#define GPU_BUDGET ((size_t)768 << 20)  /* output bytes in flight its default block allows */
#define OUT_DEPTH 3                     /* output slots in flight */
#define OUT_DEPTH_SMALL 6               /* ... CPU blocks under SMALL_BLOCK (stream) */
#define FRAMES_DEFAULT 1                /* the CPU channelizer writes frames (setup_chan) */
#define GPU_WRITERS 12                  /* the CUDA backend's writers from 16 cores (setup_chan) */
#define MAX_BLOCK ((size_t)1 << 26)
#define MIN_BLOCK ((size_t)4096) /* the smallest block of a short input */
#define MAX_K 4194304ul
#define TOP_CHANNELS 8
#define EXT_VERSION "0.2.0"   /* the polyrx SigMF extension, docs/polyrx.sigmf-ext.md */
#define NONFINITE_WARN 16     /* more non-finite samples than this: a warning (a wrong -F?) */
#define STOP_TAIL_SECONDS 0.5 /* after a stop signal, the tail gets this long, then is cut */
#define CHUNK_WORK ((double)(1 << 26)) /* multiply-adds per execute: a stop is seen within one */
#define NO_POWER_DBFS (-999.0)         /* polyrx:power_dbfs of a recording without power */
#define NF_RING 32 /* > the pipeline's input blocks in flight (at most 19: cli_pipe_readers) */
#define HOLD_BYTES ((size_t)4 << 20) /* a writer's room for rows of recordings not yet created */

typedef struct {
  const char *input, *format, *rate, *center, *channels, *outdir, *out_format;
  const char *report, *occupancy; /* --report FILE.json, --occupancy FILE.png (NULL: none) */
  const char *archive; /* -o NAME.sigmf: the recordings are packed into it; outdir is then a
                          temporary directory beside it */
  char *tmpdir;        /* that directory's name (malloc'd) */
  unsigned long K, oversample, taps_per_channel, threads, block;
  double atten, cutoff;
  prx_backend backend;
  prx_format outf; /* --out-format */
  int quiet, block_given, to_stdout;
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
      "  -i, --input FILE|-     raw interleaved IQ file, - for standard input, a SigMF\n"
      "                         recording (X.sigmf-meta, X.sigmf-data or the base name X)\n"
      "                         or a SigMF archive (X.sigmf); every capture segment\n"
      "                         (retune), datetime and annotation is carried into the\n"
      "                         channel recordings\n"
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
      "  -t, --threads N        worker threads, 0 = the cores that reading and writing\n"
      "                         leave, at least 1 (default 0); output is identical for\n"
      "                         any N\n"
      "      --backend B        auto, cpu or cuda (default auto: CUDA when a GPU is usable)\n"
      "      --block N          input samples per read (default %zu; with 8 cores or more\n"
      "                         up to %zu, less where the output of a block for each\n"
      "                         worker thread would leave its core's cache; with the\n"
      "                         CUDA backend up to %zu within %zu MiB of output\n"
      "                         buffers); reading, channelizing and writing run\n"
      "                         at once on successive blocks;\n"
      "                         memory is about 4 N (input sample size) + 3 N (8 selected\n"
      "                         / D) bytes (6 N on the CPU under N = %zu); the output\n"
      "                         is identical for any N\n"
      "\n"
      "output:\n"
      "  -o, --output DIR|-     output directory: the recordings and\n"
      "                         DIR/channels.sigmf-collection tying them (a DIR this run\n"
      "                         creates is written as .DIR.tmp-PID-N beside it and renamed\n"
      "                         to DIR at the end: all recordings or none); a name ending in\n"
      "                         .sigmf writes one SigMF archive holding all of them instead\n"
      "                         (packed at the end: the data is written twice); - writes the\n"
      "                         selected channels to standard output as raw samples,\n"
      "                         interleaved (one sample of each selected channel in\n"
      "                         --channels order, then the next: a single channel is a plain\n"
      "                         stream)\n"
      "      --out-format FMT   channel sample format: cf32 (default), cf16 (IEEE half) or\n"
      "                         ci16 (x 32768, saturated; docs/FORMATS.md); SigMF cf32_le,\n"
      "                         cf16_le, ci16_le\n"
      "      --report FILE      a JSON summary: input, channelizer, per channel frequency,\n"
      "                         power and samples, timing ('-': standard output)\n"
      "      --occupancy FILE   a PNG bar chart of the power per channel\n"
      "  -q, --quiet            no summary or progress line on standard error\n"
      "  -h, --help             this help\n"
      "      --version          the polyrx version\n"
      "\n"
      "Numbers take engineering suffixes: k, M, G (6.5536M = 6553600). Each channel holds\n"
      "ceil(N / D) samples for N input samples, aligned with the input: sample j is the\n"
      "channel at input sample j*D (the filter's group delay removed; the remaining fraction,\n"
      "half an input sample, is polyrx:time_offset_input_samples in the metadata).\n"
      "Non-finite cf32 input samples (NaN, inf) are replaced by 0 and counted. At the end a\n"
      "summary gives the input read, the output rate and the strongest channels with their\n"
      "power (dBFS: 0 dB is a full-scale complex tone of amplitude 1). Each recording is\n"
      "complete or absent: a .sigmf-meta is written last, beside the whole data; an earlier\n"
      "run's chNNNN files of the channels written are replaced. Exit status: 0 done, 1\n"
      "error, 2 usage error, 130 stopped by a signal (the recordings are finished).\n"
      "With the CUDA backend the command returns before the GPU driver has released its\n"
      "context (~0.1 s): a child process holding only the driver's files (no output,\n"
      "pipe or terminal) ends after it, when every GPU is in the default compute mode;\n"
      "POLYRX_CUDA_EXIT=keep waits for the release, =detach returns at once in any mode.\n"
      "\n"
      "examples:\n"
      "  polyrx channelize -i capture.cu8 -F cu8 -s 2.4M -f 100M -K 64 -o fm/\n"
      "  rtl_sdr -f 100M -s 2.4M - | polyrx channelize -i - -F cu8 -s 2.4M -f 100M -K 64 -o fm/\n"
      "  polyrx channelize -i rec.sigmf-meta -K 1024 --channels 3,7,100-120 -o out/\n"
      "  polyrx channelize -i wide.ci16 -F ci16 -s 61.44M -K 4096 --oversample 1 -P 24 -o ch/\n",
      DEFAULT_BLOCK, SMALL_BLOCK, GPU_BLOCK, GPU_BUDGET >> 20, SMALL_BLOCK);
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
  o->outf = PRX_CF32;
  enum {
    OPT_OVERSAMPLE = 256,
    OPT_ATTEN,
    OPT_CUTOFF,
    OPT_BACKEND,
    OPT_BLOCK,
    OPT_OUTFORMAT,
    OPT_REPORT,
    OPT_OCCUPANCY
  };
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
      {"report", required_argument, 0, OPT_REPORT},
      {"occupancy", required_argument, 0, OPT_OCCUPANCY},
      {"out-format", required_argument, 0, OPT_OUTFORMAT},
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
    case OPT_REPORT: o->report = a; break;
    case OPT_OCCUPANCY: o->occupancy = a; break;
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
      if (cli_parse_backend(CMD, a, &o->backend) >= 0) return 1;
      break;
    case OPT_BLOCK:
      if (cli_parse_uint(a, 1, MAX_BLOCK, &o->block))
        return cli_error(CMD, "--block: '%s' is not a valid block size (1..%zu samples)", a,
                         MAX_BLOCK);
      o->block_given = 1;
      break;
    case OPT_OUTFORMAT:
      if (!strcmp(a, "cf32"))
        o->outf = PRX_CF32;
      else if (!strcmp(a, "cf16"))
        o->outf = PRX_CF16;
      else if (!strcmp(a, "ci16"))
        o->outf = PRX_CI16;
      else
        return cli_error(CMD, "--out-format: unknown format '%s' (cf32, cf16 or ci16)", a);
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
  if (!o->outdir)
    return cli_error(CMD, "no output directory: give -o DIR (or -o - for standard output)");
  o->to_stdout = !strcmp(o->outdir, "-");
  if (o->to_stdout && isatty(STDOUT_FILENO))
    return cli_error(CMD, "-o -: standard output is a terminal: pipe it (... | program) or give "
                          "a directory");
  if (o->to_stdout && o->report && !strcmp(o->report, "-"))
    return cli_error(CMD, "--report -: standard output carries the channels (-o -): give the "
                          "report a file");
  size_t olen = strlen(o->outdir);
  if (olen >= 6 && !strcmp(o->outdir + olen - 6, ".sigmf")) {
    /* one archive holding every channel recording and the collection, packed at the end from
     * a temporary directory beside it */
    o->archive = o->outdir;
    o->tmpdir = cli_format("%s.tmp-%ld.d", o->archive, (long)getpid());
    if (!o->tmpdir) return cli_error(CMD, "out of memory");
    o->outdir = o->tmpdir;
  }
  if (o->occupancy) {
    size_t n = strlen(o->occupancy);
    if (n < 4 || strcmp(o->occupancy + n - 4, ".png"))
      return cli_error(CMD, "--occupancy %s: the picture is a PNG; give a name ending in .png",
                       o->occupancy);
  }
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
  const char *unit;
  double v = cli_hz_unit(hz, &unit);
  snprintf(buf, cap, "%.9g %s", v, unit);
  return buf;
}

/* mkdir -p; *created says whether this call made the whole path (it was not there) */
static int make_dirs(const char *path, int *created) {
  char *p = strdup(path);
  *created = 0;
  if (!p) return -1;
  int rc = 0;
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == '\0') {
      char keep = *s;
      *s = '\0';
      *created = mkdir(p, 0777) == 0; /* the last call's: the whole path made now */
      if (!*created && errno != EEXIST) rc = -1;
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

/* Makes sure `need` files can be open at once (cli_raise_open_files), else says why not. */
static int ensure_open_files(size_t need, size_t n_channels) {
  unsigned long long cur = 0, max = 0;
  if (!cli_raise_open_files(need, &cur, &max)) return 0;
  return cli_error(CMD,
                   "writing %zu channels needs %zu open files, but the limit is %llu (hard "
                   "limit %llu): select fewer channels with --channels, or raise the hard limit "
                   "(ulimit -Hn)",
                   n_channels, need, cur, max);
}

/* Grows the process's descriptor table to hold the recordings' data files now, before any
 * thread exists (the input's map, the CUDA runtime's start, the channelizer's workers, the
 * pipeline; cli_reserve_descriptors says why). The outputs are counted from the options (K, or
 * the --channels list), the writers as 64 at most. */
static void reserve_descriptors(const options *o) {
  if (o->to_stdout) return;
  size_t n = o->K, listed = 0;
  unsigned *list = NULL;
  if (o->channels && !prx_chan_parse_list(o->channels, (unsigned)o->K, &list, &listed)) n = listed;
  free(list);
  /* data and metadata (open_outputs) */
  cli_reserve_descriptors(cli_open_descriptors() + 2 * n + 64 + 40);
}

/* The C library's heaps grow and shrink HEAP_PAD at a time instead of a few pages: glibc grows
 * a thread's heap by what each allocation needs, each growth an mprotect that takes the
 * process's mapping lock for writing (every thread's page faults wait for it), and trims a heap
 * whose free top passes 128 KiB, each trim an madvise that flushes the other cores' TLBs. A run
 * of 1024 channels (openers and writers: the recordings' stdio buffers and metadata) made 1567
 * mprotects on the 2-core VM. Memory padded so is reserved, not touched. Set while this is the
 * process's only thread, before its heaps are made. */
#define HEAP_PAD (2 << 20)
static void pad_heaps(void) {
#ifdef M_TOP_PAD
  mallopt(M_TOP_PAD, HEAP_PAD);
  mallopt(M_TRIM_THRESHOLD, 2 * HEAP_PAD);
#endif
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

/* dir without its trailing slashes (malloc'd; NULL out of memory), in *leaf its last component
 * within it (the name the hidden directories beside it are made from) and in *slash the slash
 * before that (NULL where there is none). */
static char *dir_and_leaf(const char *dir, char **leaf, char **slash) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  char *path = strndup(dir, n);
  if (!path) return NULL;
  *slash = strrchr(path, '/');
  *leaf = *slash ? *slash + 1 : path;
  return path;
}

/* Counts the hidden directories beside dir that runs killed while writing it left
 * (.LEAF.tmp-*: make_hidden_dir); 0 where there are none or the parent cannot be read. */
static size_t count_hidden(const char *dir) {
  char *leaf, *slash;
  size_t found = 0;
  char *path = dir_and_leaf(dir, &leaf, &slash);
  if (!path) return 0;
  size_t cap = strlen(leaf) + 8;
  char *prefix = malloc(cap);
  if (prefix) snprintf(prefix, cap, ".%s.tmp-", leaf);
  if (slash) slash[slash == path] = '\0'; /* the parent ("/" kept) */
  DIR *d = prefix ? opendir(slash ? path : ".") : NULL;
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)))
      if (!strncmp(e->d_name, prefix, strlen(prefix))) found++;
    closedir(d);
  }
  free(prefix);
  free(path);
  return found;
}

/* ---- the run ---- */

/* POLYRX_TIMING: one thread's (or the process's) CPU time, minor page faults and context
 * switches (voluntary: it waited; involuntary: it was preempted), from getrusage. */
typedef struct {
  double cpu_ms;
  long faults, waits, preempted;
  int taken;
} thread_use;

/* The CPU time in ms of the calling thread (who = RUSAGE_THREAD) or of the process
 * (RUSAGE_SELF), from the scheduler's clock (cli_thread_cpu_ms). */
static double cpu_ms(int who) {
  if (who == RUSAGE_THREAD) return cli_thread_cpu_ms();
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void take_use(thread_use *u, int who) {
  struct rusage ru;
  if (getrusage(who, &ru) != 0) return;
  u->cpu_ms = cpu_ms(who);
  u->faults = ru.ru_minflt;
  u->waits = ru.ru_nvcsw;
  u->preempted = ru.ru_nivcsw;
  u->taken = 1;
}

typedef struct run_state {
  options o;
  prx_iq_reader *reader;
  prx_iq_info in; /* format, rate and centre in use */
  prx_chan *chan;
  unsigned *select;
  size_t n_sel;
  prx_sigmf_writer **w;
  unsigned char *failed; /* per selected channel: its recording had a write error */
  _Atomic size_t n_failed;
  size_t n_complete;
  double *energy;     /* sum |y|^2 per selected channel (written by the channel's writer) */
  chan_power *power;  /* per selected channel: the sums of the group in progress (its writer's) */
  size_t power_group; /* input samples per power sum group (chan_power.h): main's blocks */
  /* the CUDA backend packs the rows into the output format on the device and forms the power
   * sums there (prx_chan_power_take, each block's after its rows in the slot): the writers
   * only add the sums and copy bytes; row_osz is the rows' bytes per sample */
  int dev_post;
  size_t row_osz;
  /* the CPU channelizer writes the slots' rows with streaming stores (prx_chan_config's
   * stream_out): the writers, not compute, read them next */
  int stream_out;
  /* the pipeline: an output slot is a slot_head, then n_sel rows of `stride` outputs, or with
   * the frames layout (the CPU channelizer's PRX_CHAN_FRAMES) up to `stride` frames of n_sel
   * outputs, which each writer gathers its channels from (gather_frames) */
  int frames;
  int n_writers;
  struct writer_state *ws;
  size_t stride;
  int stop_seen; /* compute saw the stop signal: later blocks are not channelized */
  /* non-finite input samples per block, counted by the reader (chan_read), taken by compute in
   * the same order; NF_RING exceeds the input blocks in flight */
  size_t nf_count[NF_RING];
  uint64_t nf_read, nf_taken;
  size_t chunk;     /* input samples per execute (a stop is noticed between two) */
  uint64_t lead;    /* library outputs dropped at the start (the group delay, in outputs) */
  double offset;    /* output j is the channel at input time jD + offset (input samples) */
  uint64_t n_in;    /* input samples channelized */
  uint64_t fed;     /* samples given to the channelizer: the input, then the tail's zeros */
  uint64_t lib_out; /* library outputs per channel so far (the first `lead` are dropped) */
  uint64_t n_out;   /* outputs written per channel */
  uint64_t target;  /* ceil(n_in / D): the outputs the recordings should hold */
  uint64_t nonfinite_in, nonfinite_out, saturated;
  int tail_cut;   /* a stop signal cut the filter tail short */
  int chan_error; /* the channelizer failed: the recordings would lack their end */
  int fatal;      /* a channelizer error, or every output failed: nothing more is written */
  cli_progress progress;
  /* the recordings are created by n_openers openers (threads while the stream starts, or the
   * main thread before it: open_outputs); opener i creates outputs i, i + n_openers, ... */
  struct opener_state *op;
  int n_openers;
  pthread_mutex_t open_lock;
  pthread_cond_t open_cv; /* the openers' progress, for the writers */
  int open_lock_made, open_threaded;
  int open_slow;   /* POLYRX_OPENER=slow: a pause before each recording (the tests') */
  int outdir_made; /* this run made the output directory: no earlier recordings in it */
  /* the directory published whole (make_hidden_dir): the recordings go to pub_tmp, a hidden
   * directory beside DIR (o.outdir while they are written), renamed to DIR (pub_given, as given;
   * pub_final without its trailing slashes) once they are all finished (publish_outputs) */
  const char *pub_given;
  char *pub_final, *pub_tmp;
  int published;
  int meta_ahead;     /* the openers make each recording's metadata file (prepare_meta) */
  size_t data_buffer; /* a block's row in bytes where the data files' buffers are staggered
                         (data_buffer()), else 0 */
  _Atomic int open_failed;
  int n_open_done;   /* openers finished (under open_lock) */
  char (*hash)[129]; /* per output: the SHA-512 of its metadata once finished ("" before) */
  /* the CUDA runtime's start (module, context) on a thread of its own from the start (warm_cuda) */
  pthread_t warm_thread;
  int warming;
  double ms_cuda_ready; /* POLYRX_TIMING: when the context was made, ms from the command's start */
  /* the FFT planner made ready on a thread of its own while the input is opened and the
   * prototype designed (warm_fft) */
  pthread_t fft_thread;
  int fft_warming;
  void *fft_warm;
  /* the finishers (start_finishers): fin_go once compute has its last block, fin_stop once the
   * pipeline has ended */
  struct finisher_state *fin;
  int n_fin;
  int fin_go, fin_stop; /* under fin_mu */
  pthread_mutex_t fin_mu;
  pthread_cond_t fin_cv;
  int n_fin_made;    /* POLYRX_TIMING: the finishers, */
  size_t n_fin_done; /* the recordings they finished */
  double ms_fin;     /* and their time in close_one */
  double t_flush;    /* POLYRX_TIMING: when compute began its flush (the tail's origin) */
  double t_fin_done; /* and when the last finisher ended */
  /* POLYRX_TIMING: the pipeline's buffers (made, freed) and the first block's compute, ms */
  double ms_alloc, ms_free, ms_first;
  int computed;
  cli_timing tm; /* POLYRX_TIMING: the wall time of each phase, printed at the end */
  thread_use use_reader, use_main; /* and each writer's and opener's in their states */
  double ms_exec;     /* compute: in prx_chan_execute (the rest of the stream it waited or led) */
  double ms_exec_cpu; /* compute: its thread's CPU time in prx_chan_execute */
  /* POLYRX_TIMING: the stream's start, compute's first execute (ms after it) and the end of
   * its last (ms); the stream's time after that last execute */
  double t_stream, ms_first_exec, t_exec_end, ms_after_exec;
  prx_pipe_result pipe_res; /* the pipeline's counts (compute's waits for POLYRX_TIMING) */
  double ms_close_io;       /* the main thread's recordings finished (close_one) */
  int n_readers;            /* the pipeline's reader threads (cli_pipe_readers) */
  /* the input in place (cli_input_map_open), with the CUDA backend; its close, ms */
  prx_pipe_map *map;
  prx_pipe_map_stats map_stats; /* taken as it closes */
  double ms_map_close;
} run_state;

/* What one writer thread keeps: its channels are part w of the W writers (part_first ...) */
typedef struct writer_state {
  void *pack;     /* packed samples of one row (or, to standard output, of all rows interleaved) */
  prx_cf32 *rows; /* the frames layout: its channels' outputs of the slot gathered into rows of
                     `stride` outputs (gather_frames) */
  void *row;      /* to standard output as cf16 or ci16: one row packed before it is interleaved */
  int ready;      /* its channels' recordings are created and hold nothing back (wait_opened) */
  /* the rows of channels whose recordings are still being created, packed, kept here instead
   * of waiting for the opener (hold_row): local channel i (part_index) has held[i] bytes at
   * hold + i * region; made on first use */
  unsigned char *hold;
  size_t *held, region;
  size_t rows_held; /* POLYRX_TIMING: rows kept back so */
  uint64_t nonfinite_out, saturated;
  chan_power_group group; /* where its channels' power sums stand */
  /* POLYRX_TIMING: wall ms in the power sums, the appends, the data files' end, waiting for
   * the opener; the thread's use at its last slot */
  double ms_energy, ms_write, ms_end, ms_wait, ms_close;
  /* POLYRX_TIMING: when its last slot began, its data files ended, its part of the finish ended */
  double t_last, t_ended, t_done;
  thread_use use;
  size_t n_complete; /* recordings it finished */
  /* the finish of its recordings, shared with the finishers: 0 not yet, 1 their data ended (the
   * recordings may be finished), -1 not to be finished here; the next of its recordings to
   * claim */
  _Atomic int fin_state;
  _Atomic size_t fin_next;
} writer_state;

/* A finisher: a thread that sleeps through the stream and, once compute has its last block,
 * finishes recordings (close_one) beside their writers. */
typedef struct finisher_state {
  struct run_state *r;
  int i;
  pthread_t thread;
  size_t n_complete;
  double ms_close, t_done; /* t_done: POLYRX_TIMING's clock at its end */
} finisher_state;

/* One opener: creates outputs i, i + n_openers, ...; the first `opened` of them are created. */
typedef struct opener_state {
  struct run_state *r;
  int i, done;
  pthread_t thread;
  int started; /* a thread was made (joined by wait_outputs) */
  _Atomic size_t opened;
  thread_use use;
} opener_state;

/* The head of an output slot: of the library outputs in its rows (out_n of them per channel),
 * the first `skip` are dropped (the alignment) and the next `keep` written; `last` marks the
 * flush's slot, the recordings' end. */
typedef struct {
  uint64_t skip, keep;
  int last, group_end; /* group_end: the power sums' group ends with this block (chan_power.h) */
} slot_head;
#define SLOT_ROWS 64 /* the rows start here, after the head, 64-byte aligned */

/* A clock in ms for POLYRX_TIMING's sums (0 without it: no clock read). */
static double tick(const run_state *r) { return r->tm.on ? cli_seconds() * 1e3 : 0; }

static void phase_end(run_state *r, const char *name) { cli_timing_phase(&r->tm, name); }

/* The stream's tail on the writers' side, from compute's flush on: when the writers began their
 * last slot, ended their data files and their share of the finish (earliest and latest), and
 * when the last finisher ended. */
static void print_tail(const run_state *r) {
  if (!r->ws || r->t_flush <= 0) return;
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
  for (int w = 0; w < r->n_writers; w++) {
    const double t[3] = {r->ws[w].t_last, r->ws[w].t_ended, r->ws[w].t_done};
    for (int k = 0; k < 3; k++) {
      double d = t[k] - r->t_flush;
      lo[k] = d < lo[k] ? d : lo[k];
      hi[k] = d > hi[k] ? d : hi[k];
    }
  }
  fprintf(stderr,
          "polyrx %s: the tail (ms after compute's flush began): the writers' last slot begun "
          "%.2f-%.2f, their data files ended %.2f-%.2f, their finish done %.2f-%.2f; the "
          "finishers done %.2f\n",
          CMD, lo[0], hi[0], lo[1], hi[1], lo[2], hi[2],
          r->t_fin_done > 0 ? r->t_fin_done - r->t_flush : 0);
}

static void print_timing(const run_state *r) {
  if (!r->tm.on) return;
  cli_timing_print(&r->tm, CMD,
                   "CUDA ready at %.1f; in the stream: block %lu, buffers made %.1f, freed "
                   "%.1f, first block %.1f; %d reader(s)",
                   r->ms_cuda_ready, r->o.block, r->ms_alloc, r->ms_free, r->ms_first,
                   r->n_readers);
  cli_input_map_timing(CMD, &r->map_stats, r->ms_map_close);
  /* where the CPU went: each thread's CPU time, minor faults and context switches; the
   * channelizer's workers are the process's rest */
  thread_use self = {0}, main_now = {0};
  take_use(&self, RUSAGE_SELF);
  take_use(&main_now, RUSAGE_THREAD);
  double rest = self.cpu_ms - main_now.cpu_ms - r->use_reader.cpu_ms;
  long rest_faults = self.faults - main_now.faults - r->use_reader.faults;
  fprintf(stderr, "polyrx %s: cpu (ms, minor faults, waits, preempted):", CMD);
  const struct {
    const char *name;
    const thread_use *u;
  } rows[] = {
      {"main", &main_now}, {"main in the stream", &r->use_main}, {"reader", &r->use_reader}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (rows[i].u->taken)
      fprintf(stderr, " %s %.1f %ld %ld %ld;", rows[i].name, rows[i].u->cpu_ms, rows[i].u->faults,
              rows[i].u->waits, rows[i].u->preempted);
  for (int i = 0; r->op && i < r->n_openers; i++) {
    const thread_use *u = &r->op[i].use;
    if (!u->taken) continue;
    rest -= u->cpu_ms;
    rest_faults -= u->faults;
    fprintf(stderr, " opener%d %.1f %ld %ld %ld;", i, u->cpu_ms, u->faults, u->waits, u->preempted);
  }
  for (int w = 0; r->ws && w < r->n_writers; w++) {
    const writer_state *ws = &r->ws[w];
    rest -= ws->use.cpu_ms;
    rest_faults -= ws->use.faults;
    fprintf(stderr,
            " writer%d %.1f %ld %ld %ld (power sums %.1f, appends %.1f, data ends %.1f, waiting "
            "for the openers %.1f, rows held for them %zu, recordings finished %.1f);",
            w, ws->use.cpu_ms, ws->use.faults, ws->use.waits, ws->use.preempted, ws->ms_energy,
            ws->ms_write, ws->ms_end, ws->ms_wait, ws->rows_held, ws->ms_close);
  }
  fprintf(stderr,
          " the workers and the rest %.1f %ld; process %.1f %ld %ld %ld; compute's first "
          "execute at %.1f of the stream, compute in execute %.1f (its thread's CPU %.1f), "
          "the stream after the last execute %.1f, compute's sleeps for input %llu (%.1f ms) "
          "and for a slot %llu (%.1f ms), the writers after compute's end %.1f, recordings "
          "finished by the main thread %.1f, by %d finishers %zu (%.1f ms)\n",
          rest, rest_faults, self.cpu_ms, self.faults, self.waits, self.preempted, r->ms_first_exec,
          r->ms_exec, r->ms_exec_cpu, r->ms_after_exec,
          (unsigned long long)r->pipe_res.compute_waits_in, r->pipe_res.ms_compute_wait_in,
          (unsigned long long)r->pipe_res.compute_waits_out, r->pipe_res.ms_compute_wait_out,
          r->pipe_res.ms_writers_after, r->ms_close_io, r->n_fin_made, r->n_fin_done, r->ms_fin);
  print_tail(r);
}

/* The CUDA runtime's start-up on a thread (cli_warm_cuda), begun once the input is open (and
 * mapped): the channelizer's CPU part (the channel list, the prototype) runs beside it. */
static void start_warm_cuda(run_state *r) {
  r->warming = cli_warm_cuda_start(&r->warm_thread, r->o.backend);
}

static void end_warm_cuda(run_state *r) {
  cli_warm_cuda_end(r->warm_thread, r->warming);
  if (r->warming) r->ms_cuda_ready = (cli_warm_cuda_done() - r->tm.t_start) * 1e3;
  r->warming = 0;
}

/* The FFT planner's set-up and the K-point plan (prx_chan_cpu_warm, ~0.5 ms of a first plan on
 * the 2-core VM) on a thread, begun once the heaps are padded (pad_heaps: while this is the
 * only thread) and ended once the channelizer is made, whose own plans then find the planner
 * ready. Not for an explicit CUDA backend. */
static void *warm_fft(void *arg) {
  run_state *r = arg;
  r->fft_warm = prx_chan_cpu_warm(r->o.K);
  return NULL;
}

static void start_warm_fft(run_state *r) {
  if (r->o.backend == PRX_BACKEND_CUDA) return;
  pthread_attr_t attr, *ap = prx_pipe_stage_attr(&attr);
  r->fft_warming = !pthread_create(&r->fft_thread, ap, warm_fft, r);
  if (ap) pthread_attr_destroy(ap);
}

static void end_warm_fft(run_state *r) {
  if (r->fft_warming) pthread_join(r->fft_thread, NULL);
  r->fft_warming = 0;
}

static int setup_input(run_state *r) {
  const options *o = &r->o;
  cli_input_opts in = {o->input, o->format, o->rate, o->center, "6.5536M", o->quiet};
  int rc = cli_open_input(CMD, &in, &r->reader, &r->in);
  /* every capture segment, datetime and annotation of a SigMF input is carried, or the run is
   * refused here: never a mislabelled channel */
  if (rc < 0) rc = cli_carry_check(CMD, prx_iq_reader_sigmf(r->reader), o->center != NULL);
  /* read while the CUDA runtime starts, pinned as the stream starts; closed in setup_chan if the
   * channelizer is not on CUDA */
  if (rc < 0) r->map = cli_input_map_open(r->reader, o->backend);
  return rc;
}

/* Part p of P (writer p of the writers, opener p of the openers): with the rows layout every
 * P-th channel from p; with the frames layout one contiguous range of channels, so that a
 * writer reads whole lines of each frame and none of another writer's. Its channels are
 * part_first + i * part_step for i < part_count; output s is in part part_of, at part_index. */
static size_t part_first(const run_state *r, size_t p, size_t P) {
  return r->frames ? r->n_sel * p / P : p;
}
static size_t part_step(const run_state *r, size_t P) { return r->frames ? 1 : P; }
static size_t part_count(const run_state *r, size_t p, size_t P) {
  if (r->frames) return r->n_sel * (p + 1) / P - r->n_sel * p / P;
  return r->n_sel > p ? (r->n_sel - p + P - 1) / P : 0;
}
static size_t part_of(const run_state *r, size_t s, size_t P) {
  return r->frames ? ((s + 1) * P - 1) / r->n_sel : s % P;
}
static size_t part_index(const run_state *r, size_t s, size_t P) {
  return r->frames ? s - part_first(r, part_of(r, s, P), P) : s / P;
}

/* The alignment of the channel recordings: output j is the input's instant jD + offset. */
static cli_alignment alignment(const run_state *r) {
  cli_alignment a = {prx_chan_decimation(r->chan), r->offset, r->in.sample_rate};
  return a;
}

/* The default block. On the CPU, with 4 writers or more (8 cores or more: the stages each on
 * cores of their own), the largest of 2^16 samples down to a whole FFT batch whose OUT_DEPTH
 * output slots, shared among the channelizer's workers, fit half a core's L2
 * (prx_pipe_chan_cpu_block; K = 1024 with all channels: 2^14 with one worker, 2^15 with two, 2^16
 * with all cores or with 64 channels): larger blocks are slower there (bench/RESULTS.md,
 * "channelize on 16 cores", sixth to ninth sessions). With fewer writers, 2^18: the stages
 * share the cores, and each block's hand-overs cost context switches (the 2-core VM, one worker:
 * 2^16 / 2^17 / 2^18 took 255-272 / 204-259 / 212-231 ms; 2^20 took 1.3x the time of 2^18).
 * With the CUDA backend, GPU_BLOCK samples, as far as OUT_DEPTH slots of outputs fit in
 * GPU_BUDGET: on the H200 host, 2^28 ci16 samples into 64 channels took 528 / 594 / 694 / 1136
 * ms with blocks of 2^20 / 2^22 / 2^24 / 2^26 (larger page-locked buffers cost more to make
 * than their transfers save at this length). */
static size_t choose_block(prx_backend backend, size_t K, size_t D, size_t n_sel, int n_writers,
                           int workers) {
  if (backend != PRX_BACKEND_CUDA)
    return n_writers < 4 ? DEFAULT_BLOCK
                         : prx_pipe_chan_cpu_block(SMALL_BLOCK, K, D, n_sel, OUT_DEPTH, workers);
  size_t fit = GPU_BUDGET / (OUT_DEPTH * 8 * (n_sel ? n_sel : 1)) * D;
  size_t block = fit < GPU_BLOCK ? fit : GPU_BLOCK;
  return block < DEFAULT_BLOCK ? DEFAULT_BLOCK : block > MAX_BLOCK ? MAX_BLOCK : block;
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
  int cores = prx_cpu_count();
  size_t n_sel = r->select ? r->n_sel : K; /* the outputs, before the object says */
  r->n_writers = o->to_stdout ? 1 : cores >= 16 ? 8 : cores >= 8 ? 4 : cores >= 4 ? 2 : 1;
  /* POLYRX_WRITERS=N (1..64): the tests' way to the many-writer paths on a small machine, and
   * a measurement's */
  const char *nw = getenv("POLYRX_WRITERS");
  if (nw && !o->to_stdout) {
    int v = atoi(nw);
    r->n_writers = v < 1 ? 1 : v > 64 ? 64 : v;
  }
  if ((size_t)r->n_writers > n_sel) r->n_writers = n_sel ? (int)n_sel : 1;
  /* all cores (-t 0): the channelizer's workers get those the reader and the writers leave, so
   * that no worker waits for a core a writer holds (the workers meet at the end of every
   * execute): 2-core VM, K = 1024, all channels written: 1 worker 342-445 ms, 2 workers
   * 345-540 (alternating runs); the GPU host's 16 cores: 16 workers no faster than 1 */
  if (!o->threads) c.threads = cores - 1 - r->n_writers > 1 ? cores - 1 - r->n_writers : 1;
  c.backend = o->backend;
  /* The CPU rows go to the slots with streaming stores (the writers read them, compute does
   * not) except where one worker writes many channels: its three slots stay in its own cache and
   * the writers take them from there, while streaming sends every byte to memory from that one
   * core. The GPU host's 16 cores, 16M cf32 samples, K = 1024, medians of alternating rounds
   * against plain stores: all cores, all 1024 channels 0.93x the time (10 rounds), 64 channels
   * 0.94x; one worker, 64 channels 0.79x (3 rounds), all 1024 channels 1.09x (10 rounds)
   * (bench/RESULTS.md, "streaming stores"). POLYRX_CHAN_STREAM=0|1 forces either, for the A/B. */
  const char *cs = getenv("POLYRX_CHAN_STREAM");
  c.stream_out =
      cs && (!strcmp(cs, "0") || !strcmp(cs, "1")) ? cs[0] == '1' : c.threads > 1 || n_sel <= 64;
  /* the device packs and sums where the backend is CUDA (a CPU object refuses both at once,
   * before anything is made, and is made without them); POLYRX_GPU_POST=0: the writers pack and
   * sum, as on the CPU (the tests compare the two) */
  const char *gp = getenv("POLYRX_GPU_POST");
  int post = o->backend != PRX_BACKEND_CPU && !(gp && !strcmp(gp, "0"));
  if (post) {
    c.out_format = o->outf;
    c.power_sums = 1;
  }
  /* The CPU channelizer writes frames (every channel of an output side by side, the FFT's own
   * order: no transpose on compute's core) and each writer gathers its range of channels from
   * them, where recordings are written; to standard output the rows stay. POLYRX_CHAN_FRAMES=0|1
   * forces either, for the A/B (bench/RESULTS.md, "the frame layout"). */
  int frames = cli_env_int("POLYRX_CHAN_FRAMES", 0, 1, FRAMES_DEFAULT) && !o->to_stdout;
  c.layout = frames && !post ? PRX_CHAN_FRAMES : PRX_CHAN_ROWS;
  st = prx_chan_create(&c, &r->chan);
  if (post && st == PRX_ERR_UNSUPPORTED) {
    c.out_format = PRX_CF32;
    c.power_sums = 0;
    c.layout = frames ? PRX_CHAN_FRAMES : PRX_CHAN_ROWS;
    post = 0;
    st = prx_chan_create(&c, &r->chan);
  }
  if (c.layout == PRX_CHAN_FRAMES && st == PRX_ERR_UNSUPPORTED) { /* not the CPU backend */
    c.layout = PRX_CHAN_ROWS;
    st = prx_chan_create(&c, &r->chan);
  }
  if (st) return cli_status_error(CMD, "channelizer", st);
  r->frames = c.layout == PRX_CHAN_FRAMES;
  r->dev_post = post;
  r->stream_out = c.stream_out && prx_chan_backend(r->chan) == PRX_BACKEND_CPU;
  r->row_osz = post ? prx_format_size(o->outf) : sizeof(prx_cf32);
  /* with the CUDA backend compute waits for the GPU and the host's cores are the writers': 12
   * from 16 cores, beside the main thread and the readers. The H200 host writes tmpfs at about
   * 1.1 GB/s per thread; served, all 1024 channels, 12 writers took 0.69-0.76x the time of 8,
   * 16 writers more than 12 (bench/GPU_NOTES.md, "Commands writing many channels") */
  if (prx_chan_backend(r->chan) == PRX_BACKEND_CUDA && !nw && !o->to_stdout && cores >= 16)
    r->n_writers = GPU_WRITERS;
  if (prx_chan_backend(r->chan) != PRX_BACKEND_CUDA) {
    prx_pipe_map_close(r->map);
    r->map = NULL;
  }
  r->n_sel = prx_chan_n_outputs(r->chan);
  size_t D = prx_chan_decimation(r->chan), M;
  prx_chan_taps(r->chan, &M);
  if (!o->block_given)
    r->o.block = choose_block(prx_chan_backend(r->chan), K, D, r->n_sel, r->n_writers, c.threads);
  /* POLYRX_CPU_BLOCK=N (a power of two from 2^12 to 2^18): the CPU's block without --block, whose
   * power sums stay those of POWER_GROUP samples (the same metadata): for measurements */
  if (!o->block_given && prx_chan_backend(r->chan) == PRX_BACKEND_CPU) {
    int b = cli_env_int("POLYRX_CPU_BLOCK", 4096, (int)POWER_GROUP, 0);
    if (b && !(b & (b - 1))) r->o.block = (size_t)b;
  }
  /* an input of known length shorter than a block: buffers of its size (page-locked memory for
   * the GPU costs time to make and free) */
  uint64_t total = cli_input_samples(r->reader, o->input);
  if (!o->block_given && total && total < r->o.block)
    r->o.block = total < MIN_BLOCK ? MIN_BLOCK : (size_t)total;
  /* the data files' buffers staggered where the CPU's blocks are small (data_buffer);
   * POLYRX_STAGGER=0|1 leaves them at the C library's size or staggers any block, for the A/B */
  int stagger = cli_env_int("POLYRX_STAGGER", 0, 1, -1);
  if (!o->to_stdout &&
      (stagger == 1 ||
       (stagger < 0 && prx_chan_backend(r->chan) == PRX_BACKEND_CPU && r->o.block < SMALL_BLOCK)))
    r->data_buffer = (r->o.block + D - 1) / D * prx_format_size(o->outf);
  /* the power sums of a block (--block N, the CUDA backend) or of POWER_GROUP input samples
   * (the CPU's default: SMALL_BLOCK blocks are summed as the 2^18-sample blocks are, so that
   * the metadata's power has the same last digits whatever the core count) */
  r->power_group =
      o->block_given || prx_chan_backend(r->chan) == PRX_BACKEND_CUDA ? r->o.block : POWER_GROUP;
  /* the alignment: drop round((M - 1) / (2D)) outputs */
  r->lead = (M - 1 + D) / (2 * D);
  if (r->dev_post) prx_chan_power_window(r->chan, r->lead, UINT64_MAX);
  r->offset = (double)r->lead * D - (M - 1) / 2.0;
  /* execute in pieces of about CHUNK_WORK multiply-adds, so that a stop signal is seen
   * promptly whatever the configuration (the whole block at the usual sizes) */
  double work = (double)M / D + (double)K / D * log2((double)K) + 1;
  double chunk = floor(CHUNK_WORK / work);
  r->chunk = chunk >= (double)o->block ? o->block : chunk < (double)D ? D : (size_t)chunk;
  /* one stride fits the outputs of a whole block, and of the tail (under M / 2 zeros) */
  r->stride = (o->block > M ? o->block : M) / D + 4;
  /* streamed rows on whole 64-byte lines (the slots' rows start on one): a line shared by two
   * rows would be written partly streamed, partly not */
  if (r->stream_out) r->stride = (r->stride + 7) & ~(size_t)7;
  if ((size_t)r->n_writers > r->n_sel) r->n_writers = r->n_sel ? (int)r->n_sel : 1;
  r->energy = calloc(r->n_sel, sizeof *r->energy);
  r->power = aligned_alloc(64, (r->n_sel ? r->n_sel : 1) * sizeof *r->power);
  if (r->power) memset(r->power, 0, (r->n_sel ? r->n_sel : 1) * sizeof *r->power);
  r->w = calloc(r->n_sel, sizeof *r->w);
  r->failed = calloc(r->n_sel, 1);
  r->hash = calloc(r->n_sel ? r->n_sel : 1, sizeof *r->hash);
  r->ws = calloc((size_t)r->n_writers, sizeof *r->ws);
  size_t pack_bytes = (o->to_stdout ? r->n_sel : 1) * r->stride * 8;
  int packs = 1;
  for (int w = 0; r->ws && w < r->n_writers; w++) {
    packs &= (r->ws[w].pack = malloc(pack_bytes)) != 0;
    if (r->frames)
      packs &= (r->ws[w].rows = malloc(part_count(r, (size_t)w, (size_t)r->n_writers) * r->stride *
                                       sizeof(prx_cf32))) != 0;
    if (o->to_stdout && o->outf != PRX_CF32) packs &= (r->ws[w].row = malloc(r->stride * 4)) != 0;
  }
  if (!r->energy || !r->power || !r->w || !r->failed || !r->hash || !r->ws || !packs)
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
  size_t n = 2 * r->n_sel + 6, m = 0, cap = strlen(r->o.outdir) + 32;
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
  char coll[4096];
  snprintf(coll, sizeof coll, "%s/channels.sigmf-collection", r->o.outdir);
  paths[m++] = (cli_path){"the collection", coll, 0};
  if (r->o.report) paths[m++] = (cli_path){"--report", r->o.report, 0};
  if (r->o.archive) paths[m++] = (cli_path){"-o", r->o.archive, 0};
  if (r->o.occupancy) paths[m++] = (cli_path){"--occupancy", r->o.occupancy, 0};
  rc = cli_outputs_distinct(CMD, paths, m);
out:
  free(paths);
  free(names);
  free(roles);
  return rc;
}

/* The data file's buffer of output s where the rows are small (data_buffer set): a whole
 * number of rows, at least 4 KiB, 16 sizes over each writer's channels (s / W: their local
 * index), so that a writer's channels go to the file system in different blocks: with one size
 * all of them fill their buffers in the same block (every 16 blocks of 2^14 samples at K = 1024,
 * D = 512, cf32), and the writer's 128 writes there take about three blocks' compute, which
 * compute waits for unless the ring holds more slots than its cache holds well. */
static size_t data_buffer(const run_state *r, size_t s) {
  size_t row = r->data_buffer, n0 = (4096 + row - 1) / row;
  return row * (n0 + part_index(r, s, (size_t)r->n_writers) % 16);
}

/* Creates output s's recording (a temporary data file) with the metadata known at the start. */
static prx_status open_one(run_state *r, size_t s) {
  const options *o = &r->o;
  unsigned K = prx_chan_channels(r->chan);
  size_t cap = strlen(o->outdir) + 32;
  char *base = malloc(cap), desc[160];
  if (!base) return PRX_ERR_NOMEM;
  prx_chan_channel ch;
  prx_chan_channel_info(r->chan, s, &ch);
  output_base(r, s, base, cap);
  snprintf(desc, sizeof desc, "polyrx channelize: channel %u of %u", ch.index, K);
  prx_sigmf_meta m = prx_sigmf_meta_default();
  m.sample_rate = prx_chan_output_rate(r->chan);
  m.description = desc;
  const prx_sigmf_recording *rec = prx_iq_reader_sigmf(r->reader);
  cli_alignment al = alignment(r);
  double off = ch.center_freq - r->in.center_freq;
  char datetime[48];
  m.format = o->outf;
  prx_status st = cli_carry_first_capture(rec, &al, r->in.center_freq, off, &m, datetime);
  m.center_freq = ch.center_freq;
  /* in a directory made by this run there is no earlier recording to remove */
  if (!st)
    st = r->pub_tmp       ? prx_sigmf_writer_open_direct(base, &m, &r->w[s])
         : r->outdir_made ? prx_sigmf_writer_open_new(base, &m, &r->w[s])
                          : prx_sigmf_writer_open(base, &m, &r->w[s]);
  if (!st && r->meta_ahead) st = prx_sigmf_writer_prepare_meta(r->w[s]);
  if (!st && r->data_buffer) st = prx_sigmf_writer_set_buffer(r->w[s], data_buffer(r, s));
  if (!st) st = describe(r, s, r->w[s]);
  if (!st) st = cli_carry_captures(r->w[s], rec, &al, off);
  free(base);
  return st;
}

#define OPEN_NOTIFY 32 /* an opener wakes the writers every this many recordings */

/* Creates recordings i, i + n_openers, ..., on threads of their own where there are cores for
 * them (1024 recordings: 15-30 ms of directory operations and metadata on one thread; 3-9 ms of
 * CPU on each of 8 openers on the 16-core GPU host): the pipeline starts and the first blocks
 * are channelized meanwhile; a writer keeps the rows of its channels whose recordings do not
 * exist yet (hold_row) and appends them once they do, so that compute does not wait for the
 * openers through the writers, and waits for a recording only where its room for them is full
 * or at the last slot (wait_opened). */
static void *opener(void *arg) {
  opener_state *op = arg;
  run_state *r = op->r;
  size_t O = (size_t)r->n_openers, k = 0, n = part_count(r, (size_t)op->i, O);
  for (size_t s = part_first(r, (size_t)op->i, O); k < n && !r->open_failed; s += part_step(r, O)) {
    if (r->open_slow) nanosleep(&(struct timespec){0, 2000000}, NULL);
    prx_status st = open_one(r, s);
    if (st) {
      pthread_mutex_lock(&r->open_lock);
      /* the run ends with nothing written: cleanup discards the others */
      if (!r->open_failed) cli_status_error(CMD, "output", st);
      r->open_failed = 1;
      pthread_mutex_unlock(&r->open_lock);
      break;
    }
    atomic_store_explicit(&op->opened, ++k, memory_order_release); /* r->w[s] is set */
    if (k % OPEN_NOTIFY == 0) {
      pthread_mutex_lock(&r->open_lock);
      pthread_cond_broadcast(&r->open_cv);
      pthread_mutex_unlock(&r->open_lock);
    }
  }
  if (r->tm.on && r->open_threaded) take_use(&op->use, RUSAGE_THREAD);
  pthread_mutex_lock(&r->open_lock);
  op->done = 1;
  r->n_open_done++;
  pthread_cond_broadcast(&r->open_cv);
  pthread_mutex_unlock(&r->open_lock);
  return NULL;
}

/* Non-zero when output s's recording is created (its opener's count past it). */
static int is_opened(run_state *r, size_t s) {
  size_t O = (size_t)r->n_openers;
  const opener_state *op = &r->op[part_of(r, s, O)];
  return atomic_load_explicit(&op->opened, memory_order_acquire) >= part_index(r, s, O) + 1;
}

/* Waits until output s's recording is created; non-zero when it cannot be (reported). */
static int wait_opened(run_state *r, size_t s) {
  if (is_opened(r, s)) return 0;
  const opener_state *op = &r->op[part_of(r, s, (size_t)r->n_openers)];
  pthread_mutex_lock(&r->open_lock);
  while (!is_opened(r, s) && !op->done) pthread_cond_wait(&r->open_cv, &r->open_lock);
  pthread_mutex_unlock(&r->open_lock);
  return !is_opened(r, s);
}

/* Waits until every opener has finished; non-zero when a recording could not be created. */
static int wait_all_opened(run_state *r) {
  pthread_mutex_lock(&r->open_lock);
  while (r->n_open_done < r->n_openers) pthread_cond_wait(&r->open_cv, &r->open_lock);
  int failed = r->open_failed;
  pthread_mutex_unlock(&r->open_lock);
  return failed;
}

/* Where DIR does not exist (and no other path is given: --report, --occupancy and -o NAME.sigmf
 * keep the directory made at once), the recordings are written into a hidden directory beside it
 * on the same file system (.LEAF.tmp-PID-N), each file under its own name, and the directory is
 * renamed to DIR once every recording is finished: a reader of DIR sees all of them or none, and
 * finishing a recording takes no directory operation (1024 recordings: 2048 renames and links
 * serialized on the directory's lock otherwise). 0 with o.outdir set to the hidden directory;
 * -1 where the run keeps the directory made at once (DIR there, even as a dangling link; a name
 * without a leaf; a parent that cannot be made: make_dirs then reports). POLYRX_PUBLISH=0 keeps
 * it always (the A/B). */
static int make_hidden_dir(run_state *r) {
  const options *o = &r->o;
  const char *how = getenv("POLYRX_PUBLISH");
  struct stat sb;
  if ((how && !strcmp(how, "0")) || o->report || o->occupancy || o->archive ||
      lstat(o->outdir, &sb) == 0 || errno != ENOENT)
    return -1;
  char *leaf, *slash;
  char *final = dir_and_leaf(o->outdir, &leaf, &slash);
  if (!final) return -1;
  size_t cap = strlen(final) + 64;
  char *tmp = malloc(cap);
  int fresh, rc = -1;
  if (!tmp || !leaf[0] || !strcmp(leaf, ".") || !strcmp(leaf, "..")) goto out;
  if (slash && slash > final) { /* the parent made as -o's is (mkdir -p) */
    *slash = '\0';
    int bad = make_dirs(final, &fresh);
    *slash = '/';
    if (bad) goto out;
  }
  for (unsigned k = 0; k < 1000; k++) {
    snprintf(tmp, cap, "%.*s.%s.tmp-%ld-%u", (int)(leaf - final), final, leaf, (long)getpid(), k);
    if (mkdir(tmp, 0777) == 0) {
      rc = 0;
      break;
    }
    if (errno != EEXIST) break;
  }
out:
  if (rc) {
    free(final);
    free(tmp);
    return -1;
  }
  r->pub_given = o->outdir;
  r->pub_final = final;
  r->pub_tmp = tmp;
  r->o.outdir = tmp;
  return 0;
}

/* The output directory as the user named it (the hidden one's name is the run's own). */
static const char *shown_dir(const run_state *r) {
  return r->pub_given ? r->pub_given : r->o.outdir;
}

/* Checks the output directory and paths, then starts creating the recordings (openers). */
static int open_outputs(run_state *r) {
  const options *o = &r->o;
  int fresh = 1;
  if (make_hidden_dir(r) != 0 && make_dirs(o->outdir, &fresh) != 0)
    return cli_error(CMD, "cannot create output directory '%s': %s", o->outdir, strerror(errno));
  /* those open now, the metadata files written at close (one per writer) and a margin, plus
   * one data file per channel */
  size_t need = cli_open_descriptors() + r->n_sel + r->n_writers + 8;
  if (ensure_open_files(need, r->n_sel)) return 1;
  /* in a directory made just now no output can be the input or another file, unless a path of
   * another kind is given (--report, --occupancy, -o NAME.sigmf): the check (a stat and a link
   * check of each of 2 K paths: 5-11 ms for 1024 channels) is then left out */
  int rc = fresh && !o->report && !o->occupancy && !o->archive ? -1 : check_paths(r);
  if (rc >= 0) return rc;
  r->outdir_made = fresh;
  if (pthread_mutex_init(&r->open_lock, NULL) != 0) return cli_error(CMD, "cannot make a mutex");
  if (pthread_cond_init(&r->open_cv, NULL) != 0) {
    pthread_mutex_destroy(&r->open_lock);
    return cli_error(CMD, "cannot make a condition variable");
  }
  r->open_lock_made = 1;
  /* with fewer than 4 cores (compute, writer, reader and an opener), the openers compete with
   * the stream for them and slow it (2-core VM: +10 % with all 1024 channels): the main thread
   * creates the recordings before the stream. Else one opener per writer, so that each writer
   * follows one opener. POLYRX_OPENER=thread or inline chooses (the tests' way to the openers'
   * threads on a small machine, a measurement); slow: threads that pause 2 ms before each
   * recording (the tests' way to the writers' held rows, hold_row). */
  const char *how = getenv("POLYRX_OPENER");
  r->open_slow = how && !strcmp(how, "slow");
  r->open_threaded = how && (!strcmp(how, "thread") || r->open_slow) ? 1
                     : how && !strcmp(how, "inline")                 ? 0
                                                                     : prx_cpu_count() >= 4;
  r->n_openers = r->open_threaded ? r->n_writers : 1;
  /* the openers' threads make the metadata's unnamed files too, beside the stream, where the
   * limit allows one more descriptor a recording (prx_sigmf_writer_prepare_meta): not at the end,
   * where 1024 recordings finish in series (~8 us each on the 16-core GPU host's tmpfs); an
   * opener on the main thread would make them before the stream instead (2-core VM: +5 ms) */
  r->meta_ahead = r->open_threaded && cli_raise_open_files(need + r->n_sel, NULL, NULL) == 0;
  r->op = calloc((size_t)r->n_openers, sizeof *r->op);
  if (!r->op) return cli_error(CMD, "out of memory");
  for (int i = 0; i < r->n_openers; i++) {
    r->op[i].r = r;
    r->op[i].i = i;
  }
  /* the openers on the pipeline's stage stacks (kept in the C library's cache when joined) */
  pthread_attr_t attr;
  pthread_attr_t *ap = r->open_threaded ? prx_pipe_stage_attr(&attr) : NULL;
  for (int i = 0; i < r->n_openers; i++) {
    opener_state *op = &r->op[i];
    op->started = r->open_threaded && pthread_create(&op->thread, ap, opener, op) == 0;
    if (!op->started) opener(op);
  }
  if (ap) pthread_attr_destroy(ap);
  return r->open_failed && !r->open_threaded ? 1 : -1;
}

/* Waits until every recording is created; non-zero when one could not be. Called on the main
 * thread only (the writers wait with wait_opened). */
static int wait_outputs(run_state *r) {
  for (int i = 0; r->op && i < r->n_openers; i++)
    if (r->op[i].started) {
      pthread_join(r->op[i].thread, NULL);
      r->op[i].started = 0;
    }
  return r->open_failed;
}

/* ---- the pipeline's stages (src/pipeline): reading, channelizing and writing run at once on
 * successive blocks ---- */

/* The bytes of a slot's rows: n_sel rows of `stride` outputs in the rows' format (cf16 and ci16
 * rows packed on the device take half of cf32's: the page-locked slots of all 1024 channels are
 * 3 x 8.4 MB instead of 3 x 16.8, ~0.5 ms per MiB to make on the H200 host), to a whole line. */
static size_t slot_rows_bytes(const run_state *r) {
  return (r->n_sel * r->stride * r->row_osz + 63) & ~(size_t)63;
}

/* The device's power sums of the slot's block (dev_post), after its rows. */
static double *slot_sums(const run_state *r, const void *slot) {
  return (double *)((unsigned char *)slot + SLOT_ROWS + slot_rows_bytes(r));
}

/* Channelizes n samples (in == NULL: the tail) into the slot's rows, appending. */
static prx_status run_chan(run_state *r, const void *in, size_t k, unsigned char *rows,
                           size_t *filled, const char *what) {
  size_t n_out = 0;
  double t = tick(r), c = r->tm.on ? cpu_ms(RUSAGE_THREAD) : 0;
  if (r->tm.on && r->ms_first_exec == 0) r->ms_first_exec = t - r->t_stream;
  /* the next outputs: further along the rows, or the next frames (n_sel outputs each) */
  size_t pitch = r->frames ? r->n_sel : r->stride;
  unsigned char *at = rows + *filled * (r->frames ? r->n_sel : 1) * r->row_osz;
  prx_status st = in ? prx_chan_execute(r->chan, in, k, at, pitch, &n_out)
                     : prx_chan_execute_zeros(r->chan, k, at, pitch, &n_out);
  r->t_exec_end = tick(r);
  r->ms_exec += r->t_exec_end - t;
  if (r->tm.on) r->ms_exec_cpu += cpu_ms(RUSAGE_THREAD) - c;
  if (st) {
    r->fatal = r->chan_error = 1;
    cli_status_error(CMD, what, st);
    return st;
  }
  r->fed += k;
  *filled += n_out;
  return PRX_OK;
}

/* A block just read, for cf32 input: its non-finite samples replaced by 0; returns their count. */
static size_t zero_nonfinite_read(const run_state *r, void *buf, size_t n) {
  return r->in.format == PRX_CF32 ? prx_cf32_zero_nonfinite(buf, n) : 0;
}

/* The reader's stage: reads a block and, for cf32 input, replaces its non-finite samples by 0
 * there, off the compute stage's path (a pass over the input: 5-10 % of the channelizer's time
 * with a few channels selected); their count goes to compute with the block, in read order. */
static prx_status chan_read(void *ctx, void *buf, size_t max, size_t *n) {
  run_state *r = ctx;
  prx_status st = prx_pipe_iq_read(r->reader, buf, max, n);
  if (*n) r->nf_count[r->nf_read++ % NF_RING] = zero_nonfinite_read(r, buf, *n);
  if (r->tm.on) take_use(&r->use_reader, RUSAGE_THREAD);
  return st;
}

/* chan_read for several readers (positional reads, src/pipeline): block `first / block` counts
 * its non-finite samples into its own place of the ring, which compute takes in stream order. */
static prx_status chan_read_at(void *ctx, void *buf, size_t max, uint64_t first, size_t *n) {
  run_state *r = ctx;
  prx_status st = prx_pipe_iq_read_at(r->reader, buf, max, first, n);
  if (*n) r->nf_count[(first / max) % NF_RING] = zero_nonfinite_read(r, buf, *n);
  return st;
}

static void signal_finishers(run_state *r, int stop);

/* Compute (on this thread): channelizes a block in pieces of r->chunk, so that a stop signal is
 * seen within one piece (the rest of the input is then not channelized); the final call feeds the
 * tail the alignment needs (after a stop signal for STOP_TAIL_SECONDS at most). The slot's head
 * says which of its outputs the writers keep. */
static prx_status chan_compute(void *ctx, const void *in, size_t n, uint64_t pos, void *out,
                               size_t *out_n) {
  run_state *r = ctx;
  (void)pos;
  slot_head *head = out;
  unsigned char *rows = (unsigned char *)out + SLOT_ROWS;
  size_t filled = 0, ss = prx_format_size(r->in.format);
  uint64_t keep = UINT64_MAX;
  prx_status st = PRX_OK;
  if (in) r->nf_taken++;
  if (in && !r->stop_seen) {
    /* the reader zeroed its non-finite samples (chan_read) */
    r->nonfinite_in += r->nf_count[(r->nf_taken - 1) % NF_RING];
    for (size_t off = 0; off < n && !st;) {
      size_t k = n - off < r->chunk ? n - off : r->chunk;
      st = run_chan(r, (const unsigned char *)in + off * ss, k, rows, &filled, "channelizer");
      r->n_in += k;
      cli_progress_update(&r->progress, r->n_in);
      off += k;
      if (off < n && cli_interrupted()) r->stop_seen = 1;
      if (r->stop_seen) break;
    }
  } else if (!in && r->n_in) {
    r->t_flush = tick(r);
    signal_finishers(r, 0); /* the writers' last slot follows this one */
    unsigned D = prx_chan_decimation(r->chan);
    r->target = (r->n_in + D - 1) / D;
    uint64_t last = r->lead + r->target - 1; /* the last library output needed */
    if (r->dev_post) prx_chan_power_window(r->chan, r->lead, last + 1);
    while (r->lib_out + filled <= last && !st) {
      if (cli_interrupted() && cli_seconds_since_stop() > STOP_TAIL_SECONDS) {
        r->tail_cut = 1;
        break;
      }
      /* zeros up to input sample last * D (the one output `last` belongs to), in chunks */
      uint64_t need = last * D + 1 - r->fed;
      size_t k = need < r->chunk ? (size_t)need : r->chunk;
      st = run_chan(r, NULL, k, rows, &filled, "channelizer tail");
    }
    keep = r->target - r->n_out;
  }
  if (st) return st;
  if (r->dev_post) { /* the block's sums, of the outputs the writers keep (the window) */
    uint64_t nf = 0, sat = 0;
    prx_chan_power_take(r->chan, slot_sums(r, out), &nf, &sat);
    r->nonfinite_out += nf;
    r->saturated += sat;
  }
  /* the alignment: the first `lead` library outputs of the stream are dropped */
  uint64_t skip = r->lib_out >= r->lead ? 0 : r->lead - r->lib_out;
  if (skip > filled) skip = filled;
  r->lib_out += filled;
  uint64_t k = filled - skip;
  if (k > keep) k = keep;
  head->skip = skip;
  head->keep = k;
  head->last = in == NULL;
  /* a group of power sums ends every power_group input samples, with the input (a short block)
   * and with the flush */
  head->group_end = !in || n < r->o.block || r->n_in % r->power_group == 0;
  r->n_out += k;
  *out_n = filled;
  return PRX_OK;
}

/* Converts k outputs to the output format into dst; returns its bytes. */
static size_t pack_row(run_state *r, writer_state *ws, const prx_cf32 *y, size_t k, void *dst) {
  switch (r->o.outf) {
  case PRX_CF16: prx_pack_cf16(y, k, dst); return 4 * k;
  case PRX_CI16: ws->saturated += prx_pack_ci16(y, k, PRX_CI16_SCALE, dst); return 4 * k;
  default: memcpy(dst, y, 8 * k); return 8 * k;
  }
}

/* Ends the power sums' group of writer w's channels (chan_power_end into r->energy). */
static void end_power(run_state *r, int w) {
  writer_state *ws = &r->ws[w];
  size_t W = (size_t)r->n_writers, n = part_count(r, (size_t)w, W), s = part_first(r, (size_t)w, W);
  for (size_t i = 0; i < n; i++, s += part_step(r, W))
    r->energy[s] += chan_power_end(&r->power[s], &ws->group);
  chan_power_restart(&ws->group);
}

/* Marks output s failed (its recording is removed at close); the first failure of the run prints
 * its error line. Returns non-zero when every output has failed. */
static int output_failed(run_state *r, size_t s, prx_status st) {
  r->failed[s] = 1;
  size_t before = atomic_fetch_add(&r->n_failed, 1);
  if (before == 0) cli_status_error(CMD, "output", st);
  return before + 1 == r->n_sel;
}

/* Finishes output s's recording (data, then metadata, its hash kept for the collection); a
 * failed one leaves no files. The first failure of the run (a write error counts) prints its
 * error line. On the main thread after the stream, or on the channel's writer after its last
 * slot; *ms gathers the time (POLYRX_TIMING). */
static prx_status close_one(run_state *r, size_t s, double *ms) {
  if (!r->w[s]) return PRX_ERR_IO; /* failed before */
  double t = tick(r);
  if (r->chan_error) { /* recordings without their end are none: complete or absent */
    prx_sigmf_writer_discard(r->w[s]);
    r->w[s] = NULL;
    return PRX_ERR_IO;
  }
  double p = r->n_out ? r->energy[s] / (double)r->n_out : 0;
  /* never absent and never NaN: a recording without power gets NO_POWER_DBFS */
  double db = p > 0 ? 10 * log10(p) : NO_POWER_DBFS;
  if (!(db > NO_POWER_DBFS)) db = NO_POWER_DBFS;
  if (!(db < 1000)) db = 1000;
  prx_sigmf_writer_set_number(r->w[s], "polyrx:input_samples", (double)r->n_in);
  prx_sigmf_writer_set_number(r->w[s], "polyrx:power_dbfs", db);
  prx_sigmf_writer_set_number(r->w[s], "polyrx:nonfinite_input_samples", (double)r->nonfinite_in);
  prx_chan_channel ch;
  prx_chan_channel_info(r->chan, s, &ch);
  cli_alignment al = alignment(r);
  prx_status st = cli_carry_annotations(r->w[s], prx_iq_reader_sigmf(r->reader), &al, r->n_out,
                                        r->in.center_freq, ch.center_freq - r->in.center_freq,
                                        prx_chan_output_rate(r->chan));
  if (st) {
    prx_sigmf_writer_discard(r->w[s]);
  } else {
    st = prx_sigmf_writer_close_hash(r->w[s], r->hash[s]);
  }
  r->w[s] = NULL;
  if (st && !r->failed[s]) {
    r->failed[s] = 1;
    if (atomic_fetch_add(&r->n_failed, 1) == 0) cli_status_error(CMD, "output", st);
  }
  *ms += tick(r) - t;
  return st;
}

/* Keeps output s's row of k outputs (y, in the slot) in writer w's hold, packed as it will be
 * written, while its recording is still being created: the writer goes on with its other
 * channels and the slot is freed for compute instead of waiting for the opener (with 8 openers
 * creating 1024 recordings the writers waited 2-12 ms for them on the 16-core GPU host, and
 * compute, 3 slots ahead at most, with them). 0 where there is no room (the caller waits). */
static int hold_row(run_state *r, int w, size_t s, const unsigned char *y, size_t k, int packed) {
  writer_state *ws = &r->ws[w];
  size_t W = (size_t)r->n_writers, i = part_index(r, s, W), osz = prx_format_size(r->o.outf);
  if (!ws->hold) {
    size_t n_local = part_count(r, (size_t)w, W);
    /* each channel's room 64-byte aligned: the packers store 2- and 4-byte values into it */
    ws->region = HOLD_BYTES / n_local / 64 * 64;
    ws->held = calloc(n_local, sizeof *ws->held);
    ws->hold = ws->held ? malloc(ws->region * n_local) : NULL;
    if (!ws->hold) {
      free(ws->held);
      ws->held = NULL;
      ws->region = 0;
      return 0;
    }
  }
  if (k * osz > ws->region - ws->held[i]) return 0;
  unsigned char *dst = ws->hold + i * ws->region + ws->held[i];
  if (packed)
    memcpy(dst, y, k * osz);
  else
    pack_row(r, ws, (const prx_cf32 *)y, k, dst);
  ws->held[i] += k * osz;
  ws->rows_held++;
  return 1;
}

/* Appends what writer w held of output s (hold_row) to its recording, which exists. */
static prx_status write_held(run_state *r, int w, size_t s) {
  writer_state *ws = &r->ws[w];
  size_t i = part_index(r, s, (size_t)r->n_writers);
  if (!ws->held || !ws->held[i]) return PRX_OK;
  size_t n = ws->held[i] / prx_format_size(r->o.outf);
  ws->held[i] = 0;
  return prx_sigmf_write(r->w[s], ws->hold + i * ws->region, n);
}

/* Before writer w's last slot: every row it holds written, waiting for the openers as needed;
 * 0, or an error reported. */
static prx_status write_all_held(run_state *r, int w) {
  size_t W = (size_t)r->n_writers, n = part_count(r, (size_t)w, W), s = part_first(r, (size_t)w, W);
  for (size_t i = 0; r->ws[w].held && i < n; i++, s += part_step(r, W)) {
    if (r->failed[s] || !r->ws[w].held[i]) continue;
    if (wait_opened(r, s)) return PRX_ERR_IO; /* reported */
    prx_status st = write_held(r, w, s);
    if (st && output_failed(r, s, st)) return st;
  }
  return PRX_OK;
}

/* After the last slot: a writer flushes and closes its channels' data files (the rest of each
 * recording, the metadata, follows in last_slot_written), several writers at once, newest file
 * first (glibc's fclose walks its list of open FILEs from the newest: oldest first, 1024 files
 * cost 15 ms of list walking on the 2-core VM). */
static prx_status end_data(run_state *r, int w) {
  size_t W = (size_t)r->n_writers;
  if (r->o.to_stdout) return PRX_OK;
  for (size_t i = part_count(r, (size_t)w, W); i-- > 0;) {
    size_t s = part_first(r, (size_t)w, W) + i * part_step(r, W);
    if (!r->ws[w].ready && wait_opened(r, s)) return PRX_ERR_IO; /* reported */
    prx_status st = r->failed[s] ? PRX_OK : prx_sigmf_writer_end_data(r->w[s]);
    if (st && output_failed(r, s, st)) return st;
  }
  return PRX_OK;
}

/* Finishes writer w's recordings not yet claimed (by it or a finisher), in channel order; *n
 * counts those complete, *ms gathers the time. */
static void finish_claimed(run_state *r, int w, size_t *n, double *ms) {
  size_t W = (size_t)r->n_writers, n_local = part_count(r, (size_t)w, W), i;
  while ((i = atomic_fetch_add(&r->ws[w].fin_next, 1)) < n_local)
    if (!close_one(r, part_first(r, (size_t)w, W) + i * part_step(r, W), ms)) (*n)++;
}

/* After a writer's last slot: its channels' data files ended (end_data), then their recordings
 * finished (close_one: metadata, its hash), the writers side by side and the finishers with
 * them, off the main thread's path after the stream (1024 recordings: 30-50 ms of one thread on
 * the GPU host's CPU). Not when an opener failed: that run leaves no recordings (cleanup). */
static prx_status last_slot_written(run_state *r, int w) {
  writer_state *ws = &r->ws[w];
  double t = tick(r);
  prx_status st = end_data(r, w);
  ws->t_ended = tick(r);
  ws->ms_end += ws->t_ended - t;
  if (!st && !r->o.to_stdout && !wait_all_opened(r)) {
    atomic_store(&ws->fin_state, 1);
    finish_claimed(r, w, &ws->n_complete, &ws->ms_close);
  } else {
    atomic_store(&ws->fin_state, -1);
  }
  ws->t_done = tick(r);
  if (r->tm.on) take_use(&ws->use, RUSAGE_THREAD);
  return st;
}

/* A finisher: waits for compute's last block, then takes recordings of every writer whose data
 * files have ended (looking every 20 us for those that have not) until none is left. */
static void *finisher(void *arg) {
  finisher_state *f = arg;
  run_state *r = f->r;
  pthread_mutex_lock(&r->fin_mu);
  while (!r->fin_go && !r->fin_stop) pthread_cond_wait(&r->fin_cv, &r->fin_mu);
  pthread_mutex_unlock(&r->fin_mu);
  const struct timespec look = {0, 20000};
  for (;;) {
    int pending = 0;
    for (int k = 0; k < r->n_writers; k++) {
      int w = (f->i + k) % r->n_writers; /* the finishers start at different writers */
      int state = atomic_load(&r->ws[w].fin_state);
      if (state > 0) finish_claimed(r, w, &f->n_complete, &f->ms_close);
      pending |= state == 0;
    }
    pthread_mutex_lock(&r->fin_mu);
    int stop = r->fin_stop;
    pthread_mutex_unlock(&r->fin_mu);
    if (!pending || stop) break;
    nanosleep(&look, NULL);
  }
  f->t_done = tick(r);
  return NULL;
}

/* The finishers: where the cores outnumber the writers, the cores the writers leave (compute and
 * the readers are done by then) finish recordings beside them, so that the metadata and hashes
 * of 1024 recordings are spread over up to twice the threads. POLYRX_FINISHERS=N (0..64) sets
 * their number, for measurements. Made before the stream, asleep until compute's last block. */
static void start_finishers(run_state *r) {
  if (r->o.to_stdout) return;
  int cores = prx_cpu_count(), n = cores > r->n_writers ? cores - r->n_writers : 0;
  if (n > r->n_writers) n = r->n_writers;
  n = cli_env_int("POLYRX_FINISHERS", 0, 64, n);
  if (n <= 0 || !(r->fin = calloc((size_t)n, sizeof *r->fin))) return;
  pthread_mutex_init(&r->fin_mu, NULL);
  pthread_cond_init(&r->fin_cv, NULL);
  pthread_attr_t attr, *ap = prx_pipe_stage_attr(&attr);
  for (int i = 0; i < n; i++) {
    r->fin[r->n_fin].r = r;
    r->fin[r->n_fin].i = i;
    if (!pthread_create(&r->fin[r->n_fin].thread, ap, finisher, &r->fin[r->n_fin])) r->n_fin++;
  }
  if (ap) pthread_attr_destroy(ap);
}

/* Lets the finishers go (compute has its last block) or, with stop, end. */
static void signal_finishers(run_state *r, int stop) {
  if (!r->fin) return;
  pthread_mutex_lock(&r->fin_mu);
  r->fin_go = 1;
  r->fin_stop |= stop;
  pthread_cond_broadcast(&r->fin_cv);
  pthread_mutex_unlock(&r->fin_mu);
}

/* After the pipeline: the finishers ended and joined, their counts added to the writers'. */
static void end_finishers(run_state *r) {
  if (!r->fin) return;
  signal_finishers(r, 1);
  for (int i = 0; i < r->n_fin; i++) {
    pthread_join(r->fin[i].thread, NULL);
    r->n_complete += r->fin[i].n_complete;
    r->n_fin_done += r->fin[i].n_complete;
    r->ms_fin += r->fin[i].ms_close;
    if (r->fin[i].t_done > r->t_fin_done) r->t_fin_done = r->fin[i].t_done;
  }
  r->n_fin_made = r->n_fin;
  pthread_mutex_destroy(&r->fin_mu);
  pthread_cond_destroy(&r->fin_cv);
  free(r->fin);
  r->fin = NULL;
  r->n_fin = 0;
}

/* Where writer w finds output s's kept outputs of a slot: its row in the slot, or with the frames
 * layout its row of the writer's gathered rows (gather_frames). */
static unsigned char *slot_row(const run_state *r, int w, const void *slot, size_t s) {
  const slot_head *head = slot;
  if (r->frames)
    return (unsigned char *)(r->ws[w].rows + part_index(r, s, (size_t)r->n_writers) * r->stride);
  return (unsigned char *)slot + SLOT_ROWS + (s * r->stride + head->skip) * r->row_osz;
}

/* The frames layout: writer w's channels (one contiguous range of each frame) of the slot's kept
 * outputs gathered into rows of `stride` outputs, in the writer's own buffer, so that the power
 * sums, the packing and the appends run on rows as with the rows layout; the writer reads only
 * the lines of its range, once. */
static void gather_frames(run_state *r, int w, const void *slot) {
  const slot_head *head = slot;
  size_t W = (size_t)r->n_writers, n = part_count(r, (size_t)w, W), k = (size_t)head->keep;
  const prx_cf32 *f = (const prx_cf32 *)((const unsigned char *)slot + SLOT_ROWS) +
                      head->skip * r->n_sel + part_first(r, (size_t)w, W);
  prx_cf32 *rows = r->ws[w].rows;
  for (size_t j = 0; j < k; j++, f += r->n_sel)
    for (size_t i = 0; i < n; i++) rows[i * r->stride + j] = f[i];
}

/* Writer w's channels' power sums of a slot: the device's sums of its block (dev_post), or the
 * kept cf32 outputs summed here in groups of blocks (chan_power.h; the flush's outputs are a
 * group of their own, after the stream's last one), their non-finite outputs zeroed before they
 * are written. */
static void add_power(run_state *r, int w, const void *slot) {
  writer_state *ws = &r->ws[w];
  const slot_head *head = slot;
  size_t k = (size_t)head->keep, W = (size_t)r->n_writers, n_local = part_count(r, (size_t)w, W);
  size_t first = part_first(r, (size_t)w, W), step = part_step(r, W);
  if (r->dev_post) {
    const double *sums = slot_sums(r, slot);
    for (size_t i = 0; i < n_local; i++) r->energy[first + i * step] += sums[first + i * step];
    return;
  }
  if (head->last) end_power(r, w);
  for (size_t i = 0; k && i < n_local; i += CHAN_POWER_ROWS) {
    chan_power *ps[CHAN_POWER_ROWS];
    prx_cf32 *ys[CHAN_POWER_ROWS];
    size_t n = 0;
    for (; i + n < n_local && n < CHAN_POWER_ROWS; n++) {
      size_t t = first + (i + n) * step;
      ps[n] = &r->power[t];
      ys[n] = (prx_cf32 *)slot_row(r, w, slot, t);
    }
    chan_power_add(ps, ys, n, k, &ws->group, &ws->nonfinite_out);
  }
  chan_power_next(&ws->group, k);
  if (head->group_end) end_power(r, w);
}

/* A writer: appends its channels' kept outputs to their recordings (or, to standard output, the
 * channels interleaved). A channel whose write fails loses its recording; the others go on; when
 * every channel has failed, the run stops. */
static prx_status chan_write(void *ctx, int w, const void *out, size_t out_n, uint64_t block) {
  run_state *r = ctx;
  writer_state *ws = &r->ws[w];
  (void)out_n;
  (void)block;
  const slot_head *head = out;
  size_t k = (size_t)head->keep, W = (size_t)r->n_writers;
  double t_power = tick(r);
  if (head->last) ws->t_last = t_power;
  if (r->frames && k) gather_frames(r, w, out);
  add_power(r, w, out);
  ws->ms_energy += tick(r) - t_power;
  /* the recordings end with this slot, which may keep no output (no lead and whole outputs:
   * the loop below then does not run): the rows held are written first */
  if (head->last && !ws->ready && !r->o.to_stdout) {
    prx_status st = write_all_held(r, w);
    if (st) return st;
  }
  if (!k) return head->last ? last_slot_written(r, w) : PRX_OK;
  int held = 0; /* rows of this slot kept back (hold_row) */
  size_t osz = prx_format_size(r->o.outf);
  const int packed = r->dev_post || r->o.outf == PRX_CF32; /* the rows are in the output format */
  size_t n_local = part_count(r, (size_t)w, W), s = part_first(r, (size_t)w, W);
  for (size_t i = 0; i < n_local; i++, s += part_step(r, W)) {
    const unsigned char *yb = slot_row(r, w, out, s);
    const prx_cf32 *y = (const prx_cf32 *)yb;
    if (r->o.to_stdout) {
      /* interleaved: sample j of every channel, in selection order (cf32 copied as it is) */
      unsigned char *dst = (unsigned char *)ws->pack + s * osz;
      size_t step = r->n_sel * osz;
      const unsigned char *src = yb;
      if (!packed) { /* the row packed at once (the vector paths), then spread */
        pack_row(r, ws, y, k, ws->row);
        src = ws->row;
      }
      for (size_t j = 0; j < k; j++) memcpy(dst + j * step, src + j * osz, osz);
      continue;
    }
    if (r->failed[s]) continue;
    /* a channel whose recording the opener has not yet created: its row is kept back while
     * there is room (not at the last slot, nor once an opener failed: the run ends then), else
     * the writer waits for the recording */
    if (!ws->ready && !head->last && !r->open_failed && !is_opened(r, s) &&
        hold_row(r, w, s, yb, k, packed)) {
      held = 1;
      continue;
    }
    /* POLYRX_TIMING reads the clock around the wait only where the recording is not yet
     * created: two reads around every row cost a writer 5-7 ms on the GPU host (1024 slots of
     * 128 rows), which showed as a wait for the openers where there was none */
    double t1 = tick(r);
    if (!ws->ready && !is_opened(r, s)) {
      if (wait_opened(r, s)) return PRX_ERR_IO; /* reported */
      double t = tick(r);
      ws->ms_wait += t - t1;
      t1 = t;
    }
    prx_status st = ws->ready ? PRX_OK : write_held(r, w, s); /* its earlier rows first */
    const void *data = yb;
    if (!st && !packed) {
      pack_row(r, ws, y, k, ws->pack);
      data = ws->pack;
    }
    if (!st) st = prx_sigmf_write(r->w[s], data, k);
    ws->ms_write += tick(r) - t1;
    /* the first failure is reported; the writer keeps its error for close */
    if (st && output_failed(r, s, st)) return st;
  }
  if (r->o.to_stdout) {
    size_t bytes = k * r->n_sel * osz;
    if (fwrite(ws->pack, 1, bytes, stdout) != bytes) {
      cli_error(CMD, "cannot write standard output: %s", strerror(errno));
      atomic_store(&r->n_failed, r->n_sel);
      return PRX_ERR_IO;
    }
  }
  ws->ready = !held;
  return head->last ? last_slot_written(r, w) : PRX_OK;
}

/* The pipeline's buffers, timed for POLYRX_TIMING: page-locked with the CUDA backend; on the
 * CPU plain aligned memory; neither cleared (prx_pipe_host_alloc): the pages are first touched
 * by the reader's and the channelizer's writes, on their threads, instead of being cleared
 * before the stream starts (20 MiB with all 1024 channels: 8-11 ms on the 2-core VM). */
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER; /* several readers make theirs */

static int pinned_buffers(const run_state *r) {
  return prx_chan_backend(r->chan) == PRX_BACKEND_CUDA;
}

static void *timed_alloc(void *ctx, size_t bytes) {
  run_state *r = ctx;
  double t = cli_seconds();
  void *p = prx_pipe_host_alloc(bytes, pinned_buffers(r));
  pthread_mutex_lock(&alloc_lock);
  r->ms_alloc += (cli_seconds() - t) * 1e3;
  pthread_mutex_unlock(&alloc_lock);
  return p;
}

/* Whether the CUDA objects and page-locked buffers are left to the process's end: only where it
 * follows (cli_exit_frees_skipped) behind the command (cli_exit_detach_wanted), whose child then
 * releases them with the context. Left to an end in the command's own process, the runtime's
 * teardown took longer than the frees save (the H200 host: all 1024 channels cf16, held, 4
 * rounds: 415.9 / 416.3 ms best / median against 401.3 / 403.8 freed; bench/RESULTS.md,
 * "fifteenth session"). */
static int cuda_left_to_exit(void) { return cli_exit_frees_skipped() && cli_exit_detach_wanted(); }

static void timed_free(void *ctx, void *p) {
  run_state *r = ctx;
  double t = cli_seconds();
  if (!pinned_buffers(r) || !cuda_left_to_exit()) prx_pipe_host_free(p);
  r->ms_free += (cli_seconds() - t) * 1e3;
}

/* Compute, with its first call timed (POLYRX_TIMING: a GPU's first launch loads its kernels). */
static prx_status chan_compute_timed(void *ctx, const void *in, size_t n, uint64_t pos, void *out,
                                     size_t *out_n) {
  run_state *r = ctx;
  if (r->computed) return chan_compute(ctx, in, n, pos, out, out_n);
  r->computed = 1;
  double t = cli_seconds();
  prx_status st = chan_compute(ctx, in, n, pos, out, out_n);
  r->ms_first = (cli_seconds() - t) * 1e3;
  return st;
}

/* Reads, channelizes and writes until the input ends (the tail included); returns -1 at a clean
 * end, else an exit code. A write error of some channels does not stop the others; one of every
 * channel does. */
static int stream(run_state *r) {
  prx_pipe_config c;
  cli_pipe_setup(&c, r->reader, &r->in, r->o.block);
  c.read = chan_read;
  c.read_ctx = r;
  c.compute = chan_compute_timed;
  c.write = chan_write;
  c.ctx = r;
  c.n_writers = r->n_writers;
  /* Where the CPU's blocks are small (2^14 with one worker and all 1024 channels) a writer's 128
   * appends to its recordings' files come in bursts that take a few blocks' compute, so compute
   * needs more slots of slack than OUT_DEPTH: OUT_DEPTH_SMALL, although 6 such slots and the
   * channelizer's own state pass a core's 2 MiB L2 (with the staggered buffers, data_buffer, 3
   * slots left compute waiting for a slot 180 times a run on a busy host, 6 slots 24 times:
   * bench/RESULTS.md, "fourteenth session"). The block is chosen for OUT_DEPTH slots
   * (choose_block). POLYRX_OUT_DEPTH=N (2..16) sets the slots, for measurements. */
  int depth = prx_chan_backend(r->chan) == PRX_BACKEND_CPU && r->o.block < SMALL_BLOCK
                  ? OUT_DEPTH_SMALL
                  : OUT_DEPTH;
  c.out_depth = cli_env_int("POLYRX_OUT_DEPTH", 2, 16, depth);
  c.out_bytes = SLOT_ROWS + slot_rows_bytes(r) + (r->dev_post ? r->n_sel * sizeof(double) : 0);
  /* page-locked buffers where the CUDA backend copies them to the device (timed_alloc) */
  c.alloc = timed_alloc;
  c.free = timed_free;
  c.alloc_ctx = r;
  /* a file read by several threads while the GPU computes */
  r->n_readers = cli_pipe_readers(&c, r->reader, prx_chan_backend(r->chan) == PRX_BACKEND_CUDA);
  if (r->n_readers > 1 || r->map) c.read_at = chan_read_at;
  /* a file in place: its blocks are not read (an integer format: nothing to zero, chan_read_at
   * counts no non-finite sample) */
  cli_pipe_use_map(&c, r->reader, r->map);
  prx_pipe_result res;
  start_finishers(r);
  r->t_stream = tick(r);
  int rc = cli_pipe_run(CMD, &c, NULL, &res);
  if (r->t_exec_end > 0) r->ms_after_exec = tick(r) - r->t_exec_end;
  end_finishers(r); /* every recording a writer or a finisher took is finished */
  r->pipe_res = res;
  for (int w = 0; w < r->n_writers; w++) {
    r->nonfinite_out += r->ws[w].nonfinite_out;
    r->saturated += r->ws[w].saturated;
  }
  if (r->stop_seen && rc < 0) { /* (cli_pipe_run said so where it saw the stop itself) */
    rc = 130;
    fprintf(stderr, "polyrx %s: interrupted: stopping after %llu input samples\n", CMD,
            (unsigned long long)r->n_in);
  }
  if (res.failed == PRX_PIPE_WRITE) r->fatal = 1;
  if (rc < 0 && r->n_failed) rc = 1;
  return rc;
}

/* Finishes the recordings the writers have not (a run that ended without its last slot).
 * Returns the first error's exit code. */
static int close_outputs(run_state *r) {
  if (!r->w) return -1;
  /* a writer without its last slot holds no row of a recording kept: the pipeline writes the
   * flush's slot after a read error or a stop, and ends without it only after a compute error
   * (every recording discarded) or a writer's (every output failed, or an opener) */
  for (int w = 0; w < r->n_writers; w++) r->n_complete += r->ws[w].n_complete;
  for (size_t s = 0; s < r->n_sel; s++)
    if (r->w[s] && !close_one(r, s, &r->ms_close_io)) r->n_complete++;
  return r->n_failed ? 1 : -1;
}

/* -o NAME.sigmf: the collection and every complete recording packed into the archive (replacing
 * an earlier run's), then the temporary directory removed. */
static int pack_archive(run_state *r) {
  size_t n = 0, cap = strlen(r->o.outdir) + 48, dir_len = strlen(r->o.outdir) + 1;
  char **names = calloc(2 * r->n_sel + 1, sizeof *names);
  int rc = names ? -1 : cli_error(CMD, "out of memory");
  if (rc < 0 && r->n_complete && !(names[n++] = strdup("channels.sigmf-collection")))
    rc = cli_error(CMD, "out of memory");
  for (size_t s = 0; rc < 0 && s < r->n_sel; s++) {
    if (r->failed[s] || r->chan_error) continue;
    for (int k = 0; k < 2 && rc < 0; k++) {
      char *name = malloc(cap);
      if (!name) {
        rc = cli_error(CMD, "out of memory");
        break;
      }
      output_base(r, s, name, cap);
      memmove(name, name + dir_len, strlen(name + dir_len) + 1);
      strcat(name, k ? ".sigmf-data" : ".sigmf-meta");
      names[n++] = name;
    }
  }
  if (rc < 0 && n) {
    prx_status st =
        prx_sigmf_archive_pack(r->o.archive, r->o.outdir, (const char *const *)names, n);
    if (st) rc = cli_status_error(CMD, "-o", st);
  }
  for (size_t i = 0; names && i < n; i++) free(names[i]);
  free(names);
  return rc;
}

/* Removes the temporary directory of -o NAME.sigmf and what it holds (only the names this run
 * writes there). */
static void remove_tmpdir(run_state *r) {
  DIR *d = opendir(r->o.tmpdir);
  if (d) {
    struct dirent *e;
    size_t cap = strlen(r->o.tmpdir) + 300;
    char *path = malloc(cap);
    while (path && (e = readdir(d))) {
      if (strncmp(e->d_name, "ch", 2) && strncmp(e->d_name, "channels.", 9)) continue;
      snprintf(path, cap, "%s/%s", r->o.tmpdir, e->d_name);
      unlink(path);
    }
    free(path);
    closedir(d);
  }
  rmdir(r->o.tmpdir);
}

/* Moves the file NAME (relative) of the hidden directory into DIR; an error reported. */
static int move_in(const run_state *r, const char *name, char *from, char *to, size_t cap) {
  snprintf(from, cap, "%s/%s", r->pub_tmp, name);
  snprintf(to, cap, "%s/%s", r->pub_final, name);
  if (rename(from, to) == 0) return 0;
  cli_error(CMD, "cannot move '%s' to '%s': %s", from, to, strerror(errno));
  unlink(from);
  return -1;
}

/* DIR was made by another process while this run wrote (a directory: the rename does not
 * replace it): each finished recording is moved into it as a run into an existing directory
 * writes it, an earlier run's metadata removed first, the data, then the metadata (a .sigmf-meta
 * only beside its whole data), then the collection; the hidden directory removed. Returns -1, or
 * 1 where a file could not be moved (that recording is then absent: its files removed). */
static int move_each(run_state *r) {
  int fresh, rc = -1;
  if (make_dirs(r->pub_final, &fresh) != 0) {
    cli_error(CMD, "cannot create output directory '%s': %s", r->pub_final, strerror(errno));
    return 1;
  }
  size_t cap = strlen(r->pub_tmp) + strlen(r->pub_final) + 64, dir_len = strlen(r->pub_tmp) + 1;
  char *base = malloc(cap), *name = malloc(cap), *from = malloc(cap), *to = malloc(cap);
  if (!base || !name || !from || !to) {
    rc = cli_error(CMD, "out of memory");
    goto out;
  }
  for (size_t s = 0; s < r->n_sel; s++) {
    output_base(r, s, base, cap); /* in the hidden directory (o.outdir) */
    const char *leaf = base + dir_len;
    int stale = 0;
    for (int k = 0; k < 2 && !stale; k++) { /* an earlier run's pair, its metadata first */
      snprintf(to, cap, "%s/%s.sigmf-%s", r->pub_final, leaf, k ? "data" : "meta");
      stale = unlink(to) != 0 && errno != ENOENT;
    }
    if (stale) {
      rc = cli_error(CMD, "cannot remove '%s' of an earlier run: %s", to, strerror(errno));
      continue;
    }
    snprintf(from, cap, "%s.sigmf-meta", base);
    if (access(from, F_OK) != 0) continue; /* no recording: it failed */
    snprintf(name, cap, "%s.sigmf-data", leaf);
    if (move_in(r, name, from, to, cap) == 0) {
      snprintf(name, cap, "%s.sigmf-meta", leaf);
      if (move_in(r, name, from, to, cap) == 0) continue;
      snprintf(to, cap, "%s/%s.sigmf-data", r->pub_final, leaf);
      unlink(to);
    }
    snprintf(from, cap, "%s.sigmf-meta", base);
    unlink(from);
    rc = 1;
  }
  snprintf(from, cap, "%s/channels.sigmf-collection", r->pub_tmp);
  if (access(from, F_OK) == 0 && move_in(r, "channels.sigmf-collection", from, to, cap)) rc = 1;
  /* what no recording kept (failed ones' files are removed as they fail) */
  for (size_t s = 0; s < r->n_sel; s++) {
    output_base(r, s, base, cap);
    snprintf(from, cap, "%s.sigmf-data", base);
    unlink(from);
  }
out:
  if (rmdir(r->pub_tmp) != 0 && rc < 0)
    rc = cli_error(CMD, "cannot remove '%s': %s", r->pub_tmp, strerror(errno));
  free(base);
  free(name);
  free(from);
  free(to);
  return rc;
}

/* Publishes the hidden directory as DIR (make_hidden_dir), once every recording in it is finished
 * or removed: one rename that never replaces (renameat2's RENAME_NOREPLACE), so that a DIR another
 * process made meanwhile is kept and the recordings are moved into it one by one (move_each).
 * Returns -1, or 1 where something could not be published (reported). Once per run. */
static int publish_outputs(run_state *r) {
  if (!r->pub_tmp || r->published) return -1;
  r->published = 1;
  const char *how = getenv("POLYRX_PUBLISH");
  if (how && !strcmp(how, "race")) { /* the tests': DIR made by another process just now */
    mkdir(r->pub_final, 0777);
    char *p = malloc(strlen(r->pub_final) + 16);
    if (p) {
      sprintf(p, "%s/other", r->pub_final);
      FILE *f = fopen(p, "w");
      if (f) fclose(f);
      free(p);
    }
  }
  int rc = -1;
#ifdef RENAME_NOREPLACE
  if (renameat2(AT_FDCWD, r->pub_tmp, AT_FDCWD, r->pub_final, RENAME_NOREPLACE) != 0)
    rc = move_each(r);
#else
  /* without renameat2: a directory made here, empty, is replaced; one that holds files is not */
  if (mkdir(r->pub_final, 0777) != 0 || rename(r->pub_tmp, r->pub_final) != 0) rc = move_each(r);
#endif
  r->o.outdir = r->pub_given;
  return rc;
}

/* --report and --occupancy, after the recordings are closed. */
static int write_summaries(run_state *r, double elapsed, int exit_status) {
  if (!r->o.report && !r->o.occupancy) return -1;
  size_t n = r->n_sel, cap = strlen(r->o.outdir) + 48;
  unsigned *index = calloc(n ? n : 1, sizeof *index);
  double *freq = calloc(n ? n : 1, sizeof *freq), *db = calloc(n ? n : 1, sizeof *db);
  char **files = calloc(n ? n : 1, sizeof *files);
  unsigned char *ok = calloc(n ? n : 1, 1);
  int rc = -1;
  if (!index || !freq || !db || !files || !ok) rc = cli_error(CMD, "out of memory");
  for (size_t s = 0; s < n && rc < 0; s++) {
    prx_chan_channel ch;
    prx_chan_channel_info(r->chan, s, &ch);
    index[s] = ch.index;
    freq[s] = ch.center_freq;
    double p = r->n_out ? r->energy[s] / (double)r->n_out : 0;
    db[s] = p > 0 ? 10 * log10(p) : -INFINITY;
    ok[s] = !r->o.to_stdout && !r->failed[s] && !r->chan_error;
    if (!(files[s] = malloc(cap))) {
      rc = cli_error(CMD, "out of memory");
      break;
    }
    output_base(r, s, files[s], cap);
    if (r->o.archive) { /* a member name inside the archive */
      size_t dir_len = strlen(r->o.outdir) + 1;
      memmove(files[s], files[s] + dir_len, strlen(files[s] + dir_len) + 1);
    }
  }
  size_t M = 0;
  prx_chan_taps(r->chan, &M);
  cli_chan_summary sum = {r->o.input,
                          &r->in,
                          prx_iq_reader_sigmf(r->reader),
                          r->n_in,
                          r->nonfinite_in,
                          prx_chan_channels(r->chan),
                          prx_chan_decimation(r->chan),
                          M,
                          r->offset,
                          prx_backend_name(prx_chan_backend(r->chan)),
                          n,
                          index,
                          freq,
                          db,
                          (const char *const *)files,
                          ok,
                          r->n_out,
                          elapsed,
                          exit_status,
                          r->o.archive};
  if (rc < 0 && r->o.report) rc = cli_chan_write_report(CMD, r->o.report, &sum);
  if (rc < 0 && r->o.occupancy) rc = cli_chan_write_occupancy(CMD, r->o.occupancy, &sum);
  for (size_t s = 0; files && s < n; s++) free(files[s]);
  free(files);
  free(index);
  free(freq);
  free(db);
  free(ok);
  return rc;
}

/* DIR/channels.sigmf-collection ties the run's complete recordings (SigMF core:streams, each
 * with the SHA-512 of its metadata); a run without any removes an earlier run's collection. */
static int write_collection(run_state *r) {
  size_t cap = strlen(r->o.outdir) + 40;
  char *path = malloc(cap), **names = calloc(r->n_sel ? r->n_sel : 1, sizeof *names);
  const char **hashes = calloc(r->n_sel ? r->n_sel : 1, sizeof *hashes);
  int rc = -1;
  if (!path || !names || !hashes) rc = cli_error(CMD, "out of memory");
  size_t n = 0, dir_len = strlen(r->o.outdir) + 1;
  for (size_t s = 0; rc < 0 && s < r->n_sel; s++) {
    if (r->failed[s] || r->chan_error) continue;
    char *base = malloc(cap);
    if (!base) {
      rc = cli_error(CMD, "out of memory");
      break;
    }
    output_base(r, s, base, cap);
    memmove(base, base + dir_len, strlen(base + dir_len) + 1); /* relative to DIR */
    hashes[n] = r->hash[s]; /* its metadata's, from close_one: the files are not read back */
    names[n++] = base;
  }
  if (rc < 0) {
    snprintf(path, cap, "%s/channels.sigmf-collection", r->o.outdir);
    char desc[96];
    snprintf(desc, sizeof desc, "polyrx channelize: %zu channels of %u", n,
             prx_chan_channels(r->chan));
    prx_status st =
        n ? prx_sigmf_collection_write_hashed(path, (const char *const *)names, hashes, n, desc)
          : PRX_OK;
    if (!n) unlink(path);
    if (st) rc = cli_status_error(CMD, "collection", st);
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  free(hashes);
  free(path);
  return rc;
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
  if (r->saturated)
    fprintf(stderr,
            "%swarning: %llu ci16 output values were beyond full scale (|x| >= 1) and were "
            "saturated\n",
            quiet ? "polyrx " CMD ": " : "  ", (unsigned long long)r->saturated);
}

static void summary(run_state *r, double elapsed) {
  char b1[48], b2[48], b3[48];
  double fs = r->in.sample_rate;
  unsigned K = prx_chan_channels(r->chan), D = prx_chan_decimation(r->chan);
  fprintf(stderr, "polyrx %s: read %llu samples (%.6g s at %s) in %.3g s (%.3g Msample/s)\n", CMD,
          (unsigned long long)r->n_in, r->n_in / fs, fmt_hz(fs, b1, sizeof b1), elapsed,
          elapsed > 0 ? r->n_in / elapsed / 1e6 : 0.0);
  if (r->o.to_stdout)
    fprintf(stderr, "  wrote %zu of %u channels (%s, interleaved)", r->n_sel, K,
            prx_format_name(r->o.outf));
  else if (!r->n_failed)
    fprintf(stderr, "  wrote %zu of %u channels", r->n_complete, K);
  else
    fprintf(stderr,
            "  wrote %zu of %zu channels (%zu failed to write and have no recording; K = %u)",
            r->n_complete, r->n_sel, r->n_failed, K);
  fprintf(stderr, " to %s%s: %llu samples each at %s (D = %u), channel spacing %s\n",
          r->o.to_stdout ? "standard output"
          : r->o.archive ? r->o.archive
                         : shown_dir(r),
          r->o.to_stdout || r->o.archive ? "" : "/", (unsigned long long)r->n_out,
          fmt_hz(fs / D, b2, sizeof b2), D, fmt_hz(fs / K, b3, sizeof b3));
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
  qsort(sorted, r->n_sel, sizeof *sorted, cli_cmp_double);
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
          "(%zu), %.4g dB, %s backend -> %zu %s %s%s\n",
          CMD, r->o.input, prx_format_name(r->in.format), r->in.is_sigmf ? ", SigMF" : "",
          fmt_hz(r->in.sample_rate, b1, sizeof b1), fmt_hz(r->in.center_freq, b2, sizeof b2), K, D,
          r->o.taps_per_channel, M, r->o.atten, prx_backend_name(prx_chan_backend(r->chan)),
          r->n_sel, r->o.to_stdout ? "channels interleaved to" : "SigMF recordings in",
          r->o.to_stdout ? "standard output"
          : r->o.archive ? r->o.archive
                         : shown_dir(r),
          r->o.to_stdout ? ""
          : r->o.archive ? " (archive)"
                         : "/");
}

static void cleanup(run_state *r) {
  end_warm_cuda(r);
  end_warm_fft(r);
  prx_fft_warm_end(r->fft_warm);
  wait_outputs(r);
  if (r->open_lock_made) {
    pthread_mutex_destroy(&r->open_lock);
    pthread_cond_destroy(&r->open_cv);
  }
  if (r->o.tmpdir) {
    remove_tmpdir(r);
    free(r->o.tmpdir);
  }
  /* writers still open here belong to a run that failed before streaming began: their empty
   * data files are removed and no metadata is written */
  if (r->w)
    for (size_t s = 0; s < r->n_sel; s++) prx_sigmf_writer_discard(r->w[s]);
  publish_outputs(r); /* a run that failed before its end: the directory as it is (empty) */
  free(r->pub_final);
  free(r->pub_tmp);
  free(r->w);
  free(r->failed);
  free(r->hash);
  free(r->energy);
  free(r->power);
  /* the writers' buffers are left to the process's end where it follows
   * (cli_exit_frees_skipped): each one's hold is 4 MiB, mapped of its own, so its free is an
   * munmap, a TLB shoot-down on every core the process ran on. (The pipeline's blocks and slots
   * come from the arenas' padded tops: their frees are cheap, and the collection's allocations
   * reuse that memory instead of faulting fresh pages.) */
  for (int w = 0; r->ws && w < r->n_writers; w++) {
    if (!cli_exit_frees_skipped()) {
      free(r->ws[w].pack);
      free(r->ws[w].rows);
      free(r->ws[w].row);
      free(r->ws[w].hold);
      free(r->ws[w].held);
    }
    r->ws[w].pack = r->ws[w].row = NULL;
    r->ws[w].rows = NULL;
    r->ws[w].hold = NULL;
    r->ws[w].held = NULL;
  }
  free(r->select);
  /* a CPU channelizer (its worker pool, FFTW plan and buffers: three of them mapped of their
   * own) is left to the process's end where it follows; a CUDA one (its device memory, streams
   * and page-locked sums; its calls are done, each execute ends synchronised) only where that
   * end is behind the command (cuda_left_to_exit) */
  int left = r->chan && (prx_chan_backend(r->chan) == PRX_BACKEND_CUDA ? cuda_left_to_exit()
                                                                       : cli_exit_frees_skipped());
  if (!left) prx_chan_destroy(r->chan);
  r->ms_map_close = cli_input_map_close(r->map, &r->map_stats);
  prx_iq_close(r->reader);
}

int cmd_channelize(int argc, char **argv) {
  run_state r;
  memset(&r, 0, sizeof r);
  cli_timing_start(&r.tm);
  int rc = parse_args(argc, argv, &r.o);
  if (rc > 0) rc = 2; /* every error of the arguments is a usage error */
  /* the stop signals are for the pipeline's reader, not the worker pools made below */
  if (rc < 0) cli_hold_stop_signals();
  if (rc < 0) reserve_descriptors(&r.o); /* while this is the process's only thread */
  if (rc < 0) pad_heaps();
  if (rc < 0) start_warm_fft(&r);
  if (rc < 0) rc = setup_input(&r);
  /* after the stop signals are blocked: the CUDA runtime's threads keep this mask; after the
   * input's map is made (its mapping and threads: the driver's start holds the process's mapping
   * lock, which they wait for: 45-60 ms on the H200 host) */
  if (rc < 0) start_warm_cuda(&r);
  phase_end(&r, "input");
  /* the channel list, the prototype's design and the rest of the object's CPU part run while
   * the warm thread makes the device's context; the object's device part waits for it there */
  if (rc < 0) rc = setup_chan(&r);
  end_warm_fft(&r);
  phase_end(&r, "channelizer");
  end_warm_cuda(&r);
  phase_end(&r, "cuda");
  /* a file-size limit (ulimit -f) makes a write fail with EFBIG, reported, instead of killing
   * the process mid-write */
  if (rc < 0) signal(SIGXFSZ, SIG_IGN);
  if (rc < 0 && !r.o.to_stdout) rc = open_outputs(&r);
  phase_end(&r, "open");
  if (rc < 0) {
    if (!r.o.quiet) banner(&r);
    /* Ctrl-C / SIGTERM end the stream cleanly within a second: what was read is channelized,
     * the tail fed for at most STOP_TAIL_SECONDS, the recordings finished; a second signal
     * kills as usual (leaving temporary files, never a .sigmf-meta) */
    cli_catch_stop_signals();
    double t0 = cli_seconds();
    cli_progress_start(&r.progress, CMD, cli_input_samples(r.reader, r.o.input), r.o.quiet);
    /* the tail is fed after an input error too: every complete sample read is written */
    rc = stream(&r);
    if (r.tm.on) take_use(&r.use_main, RUSAGE_THREAD);
    phase_end(&r, "stream");
    cli_progress_end(&r.progress);
    cli_release_stop_signals();
    if (wait_outputs(&r)) goto done;           /* reported; cleanup removes what was created */
    if (rc < 0 && cli_interrupted()) rc = 130; /* the signal came during the last read */
    int rc_close = close_outputs(&r);
    phase_end(&r, "close");
    int rc_coll = r.o.to_stdout ? -1 : write_collection(&r);
    if (rc_coll < 0 && r.o.archive) rc_coll = pack_archive(&r);
    int rc_pub = publish_outputs(&r);
    if (rc_coll < 0) rc_coll = rc_pub;
    phase_end(&r, "collection");
    if (r.o.to_stdout && fflush(stdout) != 0 && rc < 0)
      rc = cli_error(CMD, "cannot write standard output: %s", strerror(errno));
    if (rc < 0) rc = rc_close >= 0 ? rc_close : rc_coll;
    if (rc < 0 && cli_interrupted()) rc = 130; /* the signal came during the tail */
    double elapsed = cli_seconds() - t0;
    int rc_sum = write_summaries(&r, elapsed, rc < 0 ? 0 : rc);
    if (rc < 0) rc = rc_sum;
    phase_end(&r, "summaries");
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
        size_t hidden = r.pub_tmp ? count_hidden(r.o.outdir) : 0;
        if (hidden)
          fprintf(stderr,
                  "polyrx %s: note: %zu hidden director(ies) beside %s/ (.NAME.tmp-*) are what "
                  "runs killed while writing it left: they were never published and can be "
                  "removed\n",
                  CMD, hidden, r.o.outdir);
        free(written);
      }
      if (rc > 0 && !r.fatal && !r.n_failed)
        fprintf(stderr,
                "polyrx %s: the outputs of the %llu complete input samples read were written\n",
                CMD, (unsigned long long)r.n_in);
    }
  }
  phase_end(&r, "notes");
done:
  if (r.open_failed) rc = 1;
  cleanup(&r);
  phase_end(&r, "cleanup");
  print_timing(&r);
  free(r.ws); /* after print_timing, which reads the writers' and openers' figures */
  free(r.op);
  return rc < 0 ? 0 : rc;
}
