/* polyrx gen: writes a QPSK test signal (one or many carriers, impairments, AWGN) as raw IQ or
 * SigMF, block by block (bounded memory for any length), and the transmitted bits. */
#include "cli.h"

#include "dsp/pack.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GEN_BLOCK 65536
#define GEN_MAX_CARRIERS 1024
#define GEN_MAX_GAPS 4096
#define GEN_HEADROOM_DB 12.0 /* automatic integer scaling: RMS at -12 dBFS */

static const char *CMD = "gen";

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: polyrx gen -o FILE|- -s RATE (-n SAMPLES | -d SECONDS) --carrier SPEC...\n"
      "                  [-F cf32|ci16|ci8|cu8] [-f CENTER] [--scale S]\n"
      "                  [--esn0 DB | --ebn0 DB] [--noise-seed N] [--dc DB[,phase=RAD]]\n"
      "                  [--gap START:LENGTH[:zeros|:noise]]... [--bits PREFIX]\n"
      "                  [--threads N] [-q]\n"
      "\n"
      "Generates QPSK carriers (RRC shaped, with frequency, phase, timing and clock offsets)\n"
      "summed into one complex stream, with optional white Gaussian noise, a receiver's DC\n"
      "offset and gaps.\n"
      "\n"
      "  -o, --output FILE    raw interleaved samples; '-' is standard output; a name ending in\n"
      "                       .sigmf-data (or .sigmf-meta) writes a SigMF recording (both files),\n"
      "                       one ending in .sigmf a SigMF archive (one tar file), one ending in\n"
      "                       .wav a WAV I/Q file as the SDR programs write them (cf32, ci16 or\n"
      "                       cu8; the centre in its auxi chunk; RF64 past 4 GiB), one ending\n"
      "                       in .sdriq an SDRangel file (ci16; rate and centre in its header)\n"
      "  -F, --format FMT     cf32 (default), ci16, ci8 or cu8\n"
      "  -s, --rate RATE      sample rate in Hz (engineering notation: 6.5536M, 48k)\n"
      "  -f, --center FREQ    centre frequency for the SigMF or WAV metadata only (default 0)\n"
      "  -n, --samples N      number of samples (e.g. 1M)\n"
      "  -d, --duration SEC   or a duration in seconds (rounded to whole samples)\n"
      "      --carrier SPEC   a carrier, repeatable: comma-separated key=value list\n"
      "                         f=FREQ      offset from the centre, Hz (default 0)\n"
      "                         rs=RATE     symbol rate, Hz (required; RATE/rs >= 2)\n"
      "                         rolloff=B   RRC roll-off (default 0.35)\n"
      "                         span=N      RRC span in symbols (default 12)\n"
      "                         power=DB    power relative to carrier 0's (default 0)\n"
      "                         phase=RAD   carrier phase at sample 0 (default 0)\n"
      "                         timing=T    symbol 0 centred at T symbols, 0 <= T < 1\n"
      "                         ppm=P       symbol-clock offset, ppm (default 0)\n"
      "                         diff        differential encoding\n"
      "                         pilots=P:L  L pilot symbols at the start of every P symbols\n"
      "                         pi4         pi/4-QPSK: symbol n turned by n pi/4 (with diff:\n"
      "                                     pi/4-DQPSK, TETRA's phase steps)\n"
      "                         seed=N      seed of the data bits (default: carrier index+1)\n"
      "                       e.g. --carrier f=100k,rs=2400,power=-3,diff,pilots=64:8\n"
      "      --esn0 DB        add noise: Es/N0 of carrier 0 (noise density follows from it)\n"
      "      --ebn0 DB        add noise: Eb/N0 of carrier 0 (Es/N0 = Eb/N0 + 3.01 dB)\n"
      "      --noise-seed N   seed of the noise (default 1)\n"
      "      --dc DB[,phase=RAD]\n"
      "                       add a DC offset (a constant complex sample) of power DB relative\n"
      "                       to carrier 0's power, at phase RAD (default 0); e.g. --dc -6 or\n"
      "                       --dc 10,phase=0.8\n"
      "      --gap START:LENGTH[:zeros|:noise]\n"
      "                       a gap of LENGTH seconds from START seconds (engineering notation,\n"
      "                       rounded to whole samples), repeatable: 'zeros' (default) writes\n"
      "                       exact zeros (a dropout: no signal, noise or DC); 'noise' mutes the\n"
      "                       carriers only (transmitter off). Symbols and bits run on through\n"
      "                       a gap. e.g. --gap 0.5:10m --gap 2:1:noise\n"
      "      --scale S        multiply the samples by S before writing; integer formats map\n"
      "                       1.0 to full scale. Default for integer formats: the RMS of the\n"
      "                       signal plus noise at -12 dBFS; default for cf32: 1\n"
      "      --bits PREFIX    write the data bits of carrier c to PREFIXc.bits (one byte, 0\n"
      "                       or 1, per bit; b0 then b1 of each data symbol)\n"
      "      --threads N      worker threads (default 0: all cores)\n"
      "  -q, --quiet          no summary or progress line on standard error\n"
      "  -h, --help           this text\n"
      "\n"
      "Signal model, scaling and file formats: docs/FORMATS.md.\n");
}

/* ---- DC offset and gaps ---- */

/* "DB[,phase=RAD]": the DC's power (dB relative to carrier 0) and phase. */
static int parse_dc(const char *spec, double *db, double *phase) {
  char num[64];
  const char *comma = strchr(spec, ',');
  size_t len = comma ? (size_t)(comma - spec) : strlen(spec);
  *phase = 0;
  int bad = len == 0 || len >= sizeof num;
  if (!bad) {
    memcpy(num, spec, len);
    num[len] = 0;
    bad = cli_parse_eng(num, db) || !(fabs(*db) <= 200);
  }
  if (bad)
    return cli_error(CMD, "--dc '%s': bad power (dB relative to carrier 0, within +-200, e.g. -6)",
                     spec);
  if (comma && (strncmp(comma + 1, "phase=", 6) || cli_parse_eng(comma + 7, phase) ||
                !(fabs(*phase) <= 1e6)))
    return cli_error(CMD, "--dc '%s': expected DB or DB,phase=RAD (e.g. 10,phase=0.8)", spec);
  return 0;
}

/* A gap as given: seconds, and the kind. */
typedef struct {
  const char *spec;
  double start, length;
  int zeros;
} gen_gap_spec;

/* "START:LENGTH[:zeros|:noise]" in seconds. */
static int parse_gap(const char *spec, gen_gap_spec *g) {
  char buf[128];
  if (strlen(spec) >= sizeof buf) return cli_error(CMD, "--gap '%.40s...': too long", spec);
  strcpy(buf, spec);
  char *len = strchr(buf, ':'), *kind = len ? strchr(len + 1, ':') : NULL;
  if (len) *len++ = 0;
  if (kind) *kind++ = 0;
  g->spec = spec;
  g->zeros = 1;
  if (kind && !strcmp(kind, "noise"))
    g->zeros = 0;
  else if (kind && strcmp(kind, "zeros"))
    return cli_error(CMD, "--gap '%s': unknown kind '%s' (expected zeros or noise)", spec, kind);
  if (!len || cli_parse_eng(buf, &g->start) || cli_parse_eng(len, &g->length) || !(g->start >= 0) ||
      !(g->length > 0))
    return cli_error(CMD,
                     "--gap '%s': expected START:LENGTH[:zeros|:noise] in seconds, START >= 0 and "
                     "LENGTH > 0 (e.g. 0.5:10m)",
                     spec);
  return 0;
}

static int gap_order(const void *a, const void *b) {
  const gen_gap_spec *x = a, *y = b;
  return (x->start > y->start) - (x->start < y->start);
}

/* The gaps in samples, sorted by start: a gap that rounds to no sample, starts after the end of
 * the signal, or overlaps another is refused with its specification named. */
static int gaps_to_samples(gen_gap_spec *spec, size_t n, double fs, uint64_t total,
                           prx_sim_gap *out) {
  qsort(spec, n, sizeof *spec, gap_order);
  for (size_t i = 0; i < n; i++) {
    double a = floor(spec[i].start * fs + 0.5),
           b = floor((spec[i].start + spec[i].length) * fs + 0.5);
    if (a >= (double)total)
      return cli_error(CMD,
                       "--gap '%s': starts at sample %.0f, after the end of the signal (%llu "
                       "samples)",
                       spec[i].spec, a, (unsigned long long)total);
    if (b <= a)
      return cli_error(CMD, "--gap '%s': shorter than one sample at %g Hz", spec[i].spec, fs);
    out[i].start = (uint64_t)a;
    out[i].length = (uint64_t)(b - a);
    out[i].zeros = spec[i].zeros;
    if (i > 0 && out[i].start < out[i - 1].start + out[i - 1].length)
      return cli_error(CMD, "--gap '%s' overlaps --gap '%s'", spec[i].spec, spec[i - 1].spec);
  }
  return 0;
}

/* ---- sample formats ---- */

/* ---- SigMF metadata ---- */

typedef struct {
  double fs, center, scale, esn0;
  int noise;
  uint64_t noise_seed, n;
  prx_format format;
  const prx_sim_carrier *car;
  size_t n_car;
  const prx_sim_gap *gaps;
  size_t n_gaps;
  int have_dc;
  double dc_db, dc_phase;
} gen_meta;

/* Opens the recording BASE.sigmf-data through the library's writer, with the metadata that is
 * known before the samples: the signal in core:description, one annotation per carrier (its
 * band and every parameter) and one per gap. The writer writes the metadata at close. */
static prx_status open_sigmf(const char *base, const gen_meta *m, prx_sigmf_writer **out) {
  char desc[512], text[512];
  int len = snprintf(desc, sizeof desc, "polyrx test signal: %zu QPSK carrier%s, ", m->n_car,
                     m->n_car == 1 ? "" : "s");
  if (m->noise)
    len += snprintf(desc + len, sizeof desc - len, "AWGN at Es/N0 %.2f dB of carrier 0 (seed %llu)",
                    m->esn0, (unsigned long long)m->noise_seed);
  else
    len += snprintf(desc + len, sizeof desc - len, "no noise");
  if (m->have_dc)
    len += snprintf(desc + len, sizeof desc - len,
                    "; DC offset %.9g dB relative to carrier 0, phase %.9g rad", m->dc_db,
                    m->dc_phase);
  snprintf(desc + len, sizeof desc - len, "; samples scaled by %.9g", m->scale);
  prx_sigmf_meta meta = prx_sigmf_meta_default();
  meta.format = m->format;
  meta.sample_rate = m->fs;
  meta.center_freq = m->center;
  meta.description = desc;
  prx_sigmf_writer *w = NULL;
  prx_status st = prx_sigmf_writer_open(base, &meta, &w);
  if (st != PRX_OK) return st;
  snprintf(text, sizeof text, "polyrx gen %s", prx_version());
  st = prx_sigmf_writer_set_string(w, "core:recorder", text);
  if (st == PRX_OK) st = prx_sigmf_writer_set_number(w, "core:num_channels", 1);
  for (size_t i = 0; i < m->n_car && st == PRX_OK; i++) {
    const prx_sim_carrier *c = &m->car[i];
    double bw = (1 + c->rolloff) * c->symbol_rate;
    char label[64];
    snprintf(label, sizeof label, "%sQPSK carrier %zu", c->pi4 ? "pi/4-" : "", i);
    int at =
        snprintf(text, sizeof text,
                 "f=%.9g rs=%.9g rolloff=%g span=%u power=%g dB phase=%.9g timing=%.9g "
                 "ppm=%.9g seed=%llu%s%s",
                 c->freq, c->symbol_rate, c->rolloff, c->span, c->power_db, c->phase,
                 c->timing_offset, c->clock_ppm, (unsigned long long)(c->seed ? c->seed : i + 1),
                 c->differential ? " diff" : "", c->pi4 ? " pi4" : "");
    if (c->pilot_period)
      snprintf(text + at, sizeof text - at, " pilots=%u:%u", c->pilot_period, c->pilot_len);
    prx_sigmf_annotation a = {
        0,     m->n, 1,           m->center + c->freq - bw / 2, m->center + c->freq + bw / 2,
        label, text, "polyrx gen"};
    st = prx_sigmf_writer_add_annotation(w, &a);
  }
  for (size_t i = 0; i < m->n_gaps && st == PRX_OK; i++) {
    const prx_sim_gap *g = &m->gaps[i];
    uint64_t count = g->start + g->length <= m->n ? g->length : m->n - g->start;
    prx_sigmf_annotation a = {
        g->start, count,       0, 0, 0, g->zeros ? "gap (zeros)" : "gap (transmitter off)",
        NULL,     "polyrx gen"};
    st = prx_sigmf_writer_add_annotation(w, &a);
  }
  if (st != PRX_OK) {
    prx_sigmf_writer_discard(w);
    return st;
  }
  *out = w;
  return PRX_OK;
}

/* ---- the command ---- */

typedef struct {
  const char *out, *bits_prefix;
  prx_format format;
  int format_given; /* -F */
  double fs, center, scale;
  int have_fs, have_scale, quiet;
  uint64_t n;
  int have_n, have_d;
  double duration;
  prx_sim_config cfg;
  prx_sim_carrier *car;
  size_t n_car;
  int have_esn0, have_ebn0;
  int have_dc;
  double dc_db, dc_phase;
  gen_gap_spec *gap_spec;
  prx_sim_gap *gaps;
  size_t n_gaps;
} gen_args;

enum {
  OPT_CARRIER = 256,
  OPT_ESN0,
  OPT_EBN0,
  OPT_NOISE_SEED,
  OPT_BITS,
  OPT_THREADS,
  OPT_SCALE,
  OPT_DC,
  OPT_GAP
};

static int parse_args(int argc, char **argv, gen_args *a) {
  static const struct option longopts[] = {{"output", required_argument, 0, 'o'},
                                           {"format", required_argument, 0, 'F'},
                                           {"rate", required_argument, 0, 's'},
                                           {"center", required_argument, 0, 'f'},
                                           {"samples", required_argument, 0, 'n'},
                                           {"duration", required_argument, 0, 'd'},
                                           {"carrier", required_argument, 0, OPT_CARRIER},
                                           {"esn0", required_argument, 0, OPT_ESN0},
                                           {"ebn0", required_argument, 0, OPT_EBN0},
                                           {"noise-seed", required_argument, 0, OPT_NOISE_SEED},
                                           {"bits", required_argument, 0, OPT_BITS},
                                           {"threads", required_argument, 0, OPT_THREADS},
                                           {"scale", required_argument, 0, OPT_SCALE},
                                           {"dc", required_argument, 0, OPT_DC},
                                           {"gap", required_argument, 0, OPT_GAP},
                                           {"quiet", no_argument, 0, 'q'},
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  optind = 1;
  opterr = 0;
  int opt;
  unsigned long u;
  double esn0 = 0;
  while ((opt = getopt_long(argc, argv, ":o:F:s:f:n:d:qh", longopts, NULL)) != -1) {
    switch (opt) {
    case 'o': a->out = optarg; break;
    case 'F':
      if (prx_format_parse(optarg, &a->format) != PRX_OK || a->format == PRX_CF16)
        return cli_error(CMD,
                         "-F: unknown or unsupported sample format '%s' (expected cf32, "
                         "ci16, ci8 or cu8)",
                         optarg);
      a->format_given = 1;
      break;
    case 's':
      if (cli_parse_eng(optarg, &a->fs) || !(a->fs > 0))
        return cli_error(CMD, "-s: bad sample rate '%s' (a positive number, e.g. 6.5536M)", optarg);
      a->have_fs = 1;
      break;
    case 'f':
      if (cli_parse_eng(optarg, &a->center))
        return cli_error(CMD, "-f: bad centre frequency '%s'", optarg);
      break;
    case 'n':
      if (cli_parse_uint(optarg, 1, (1ul << 52), &u))
        return cli_error(CMD, "-n: bad sample count '%s' (1 to 2^52, e.g. 1M)", optarg);
      a->n = u;
      a->have_n = 1;
      break;
    case 'd':
      if (cli_parse_eng(optarg, &a->duration) || !(a->duration > 0))
        return cli_error(CMD, "-d: bad duration '%s' (seconds, > 0)", optarg);
      a->have_d = 1;
      break;
    case OPT_CARRIER:
      if (a->n_car == GEN_MAX_CARRIERS)
        return cli_error(CMD, "too many carriers (max %d)", GEN_MAX_CARRIERS);
      if (cli_parse_carrier(CMD, optarg, CLI_CARRIER_ALL_KEYS, &a->car[a->n_car], NULL)) return 2;
      a->n_car++;
      break;
    case OPT_ESN0:
    case OPT_EBN0:
      if (cli_parse_eng(optarg, &esn0))
        return cli_error(CMD, "--%s: bad value '%s' (dB)", opt == OPT_ESN0 ? "esn0" : "ebn0",
                         optarg);
      a->cfg.noise = 1;
      a->cfg.esn0_db = opt == OPT_ESN0 ? esn0 : prx_sim_ebn0_to_esn0(esn0);
      *(opt == OPT_ESN0 ? &a->have_esn0 : &a->have_ebn0) = 1;
      break;
    case OPT_NOISE_SEED:
      if (cli_parse_seed(optarg, &a->cfg.noise_seed))
        return cli_error(CMD, "--noise-seed: bad value '%s' (a non-negative integer)", optarg);
      break;
    case OPT_BITS: a->bits_prefix = optarg; break;
    case OPT_THREADS:
      if (cli_parse_uint(optarg, 0, 1024, &u))
        return cli_error(CMD, "--threads: bad value '%s' (0 = all cores, up to 1024)", optarg);
      a->cfg.threads = (int)u;
      break;
    case OPT_SCALE:
      if (cli_parse_eng(optarg, &a->scale) || !(a->scale > 0))
        return cli_error(CMD, "--scale: bad value '%s' (a positive number)", optarg);
      a->have_scale = 1;
      break;
    case OPT_DC:
      if (parse_dc(optarg, &a->dc_db, &a->dc_phase)) return 1;
      a->have_dc = 1;
      break;
    case OPT_GAP:
      if (a->n_gaps == GEN_MAX_GAPS) return cli_error(CMD, "too many gaps (max %d)", GEN_MAX_GAPS);
      if (parse_gap(optarg, &a->gap_spec[a->n_gaps])) return 1;
      a->n_gaps++;
      break;
    case 'q': a->quiet = 1; break;
    case 'h': usage(stdout); return -1;
    case ':': return cli_error(CMD, "option %s needs a value", argv[optind - 1]);
    default: return cli_error(CMD, "unknown option '%s' (polyrx gen --help)", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return cli_error(CMD, "unexpected argument '%s' (polyrx gen --help)", argv[optind]);
  if (!a->out) return cli_error(CMD, "no output: give -o FILE or -o - for standard output");
  if (!a->have_fs) return cli_error(CMD, "no sample rate: give -s RATE (e.g. -s 6.5536M)");
  if (a->have_n == a->have_d)
    return cli_error(CMD, "give the length as either -n SAMPLES or -d SECONDS%s",
                     a->have_n ? ", not both" : "");
  if (a->have_esn0 && a->have_ebn0) return cli_error(CMD, "give --esn0 or --ebn0, not both");
  if (a->n_car == 0)
    return cli_error(CMD, "no carrier: give at least one --carrier (e.g. --carrier rs=2400)");
  if (a->have_d) {
    double n = floor(a->duration * a->fs + 0.5);
    if (!(n >= 1 && n <= (double)(1ull << 52)))
      return cli_error(CMD, "-d %g s at %g Hz is %.0f samples (1 to 2^52)", a->duration, a->fs, n);
    a->n = (uint64_t)n;
  }
  if (a->n_gaps && gaps_to_samples(a->gap_spec, a->n_gaps, a->fs, a->n, a->gaps)) return 1;
  a->cfg.gaps = a->gaps;
  a->cfg.n_gaps = a->n_gaps;
  if (a->have_dc) {
    /* power relative to carrier 0's */
    double amp = sqrt(pow(10, (a->car[0].power_db + a->dc_db) / 10));
    a->cfg.dc_re = amp * cos(a->dc_phase);
    a->cfg.dc_im = amp * sin(a->dc_phase);
  }
  return 0;
}

/* Default scale: 1 for cf32; for integer formats the RMS of signal, noise and DC at -12 dBFS. */
static double default_scale(const gen_args *a, const prx_sim *s) {
  if (a->format == PRX_CF32) return 1;
  double p = prx_sim_noise_variance(s) + a->cfg.dc_re * a->cfg.dc_re + a->cfg.dc_im * a->cfg.dc_im;
  for (size_t c = 0; c < a->n_car; c++) p += pow(10, a->car[c].power_db / 10);
  return pow(10, -GEN_HEADROOM_DB / 20) / sqrt(p);
}

/* Every file gen writes is a file of its own: the samples (both halves of a SigMF recording)
 * and each carrier's bits. Returns -1 when they are distinct, else the exit code. */
static int check_outputs_distinct(const gen_args *a) {
  size_t n = 2 + (a->bits_prefix ? a->n_car : 0), m = 0;
  cli_path *paths = calloc(n, sizeof *paths);
  char **names = calloc(n, sizeof *names);
  int oom = !paths || !names;
  if (!oom && (cli_ends_with(a->out, ".sigmf-data") || cli_ends_with(a->out, ".sigmf-meta"))) {
    const char *ext[2] = {".sigmf-data", ".sigmf-meta"}, *role[2] = {"-o", "-o (its metadata)"};
    size_t stem = strlen(a->out) - strlen(ext[0]);
    for (int i = 0; i < 2 && !oom; i++) {
      oom = !(names[m] = cli_format("%.*s%s", (int)stem, a->out, ext[i]));
      if (oom) break;
      paths[m] = (cli_path){role[i], names[m], 0};
      m++;
    }
  } else if (!oom) {
    paths[m++] = (cli_path){"-o", a->out, 0};
  }
  for (size_t c = 0; !oom && a->bits_prefix && c < a->n_car; c++) {
    oom = !(names[m] = cli_format("%s%zu.bits", a->bits_prefix, c));
    if (oom) break;
    paths[m] = (cli_path){"--bits", names[m], 0};
    m++;
  }
  int rc = oom ? cli_error(CMD, "out of memory") : cli_outputs_distinct(CMD, paths, m);
  for (size_t i = 0; i < m; i++) free(names[i]);
  free(names);
  free(paths);
  return rc;
}

int cmd_gen(int argc, char **argv) {
  gen_args a;
  memset(&a, 0, sizeof a);
  a.format = PRX_CF32;
  a.cfg = prx_sim_config_default();
  a.car = calloc(GEN_MAX_CARRIERS, sizeof *a.car);
  a.gap_spec = calloc(GEN_MAX_GAPS, sizeof *a.gap_spec);
  a.gaps = calloc(GEN_MAX_GAPS, sizeof *a.gaps);
  int rc = !a.car || !a.gap_spec || !a.gaps ? cli_error(CMD, "out of memory")
                                            : parse_args(argc, argv, &a);
  if (rc) {
    free(a.car);
    free(a.gap_spec);
    free(a.gaps);
    return rc < 0 ? 0 : 2; /* every error of the arguments is a usage error */
  }
  if (cli_ends_with(a.out, ".sdriq")) { /* SDRangel's files hold ci16 here */
    if (a.format_given && a.format != PRX_CI16) {
      free(a.car);
      free(a.gap_spec);
      free(a.gaps);
      return cli_usage_error(CMD, "-o %s: an .sdriq file holds ci16 samples (give -F ci16)", a.out);
    }
    a.format = PRX_CI16;
  }
  a.cfg.sample_rate = a.fs;
  a.cfg.carriers = a.car;
  a.cfg.n_carriers = a.n_car;

  prx_sim *sim = NULL;
  prx_status st = prx_sim_create(&a.cfg, &sim);
  if (st != PRX_OK) {
    free(a.car);
    free(a.gap_spec);
    free(a.gaps);
    return cli_status_error(CMD, "invalid signal", st);
  }
  double scale = a.have_scale ? a.scale : default_scale(&a, sim);

  /* the output: raw samples to a file or standard output, or a SigMF recording through the
   * library's writer */
  char *base = NULL;
  cli_progress progress = {0}; /* started with the samples; ended at done too (errors) */
  FILE *out = NULL, **bits = calloc(a.n_car, sizeof *bits);
  prx_sigmf_writer *rec = NULL;
  prx_wav_writer *wav = NULL;
  prx_cf32 *buf = malloc(GEN_BLOCK * sizeof *buf);
  void *enc = malloc(GEN_BLOCK * prx_format_size(a.format));
  uint8_t *bitbuf = malloc(4 * GEN_BLOCK + 64);
  if (!bits || !buf || !enc || !bitbuf) {
    rc = cli_error(CMD, "out of memory");
    goto done;
  }
  int clash = check_outputs_distinct(&a);
  if (clash >= 0) {
    rc = clash;
    goto done;
  }
  if (cli_ends_with(a.out, ".sigmf-data") || cli_ends_with(a.out, ".sigmf-meta") ||
      cli_ends_with(a.out, ".sigmf")) {
    base = strdup(a.out);
    if (!base) {
      rc = cli_error(CMD, "out of memory");
      goto done;
    }
    /* a pair: the base without the extension; an archive: the .sigmf file itself */
    if (!cli_ends_with(a.out, ".sigmf")) base[strlen(base) - strlen(".sigmf-data")] = 0;
    gen_meta meta = {a.fs,      a.center, scale,     a.cfg.esn0_db, a.cfg.noise, a.cfg.noise_seed,
                     a.n,       a.format, a.car,     a.n_car,       a.gaps,      a.n_gaps,
                     a.have_dc, a.dc_db,  a.dc_phase};
    st = open_sigmf(base, &meta, &rec);
    if (st != PRX_OK) {
      rc = cli_status_error(CMD, "cannot start the recording", st);
      goto done;
    }
  } else if (cli_ends_with(a.out, ".wav") || cli_ends_with(a.out, ".WAV")) {
    st = prx_wav_writer_open(a.out, a.format, a.fs, a.center, &wav);
    if (st != PRX_OK) {
      rc = cli_status_error(CMD, "cannot start the WAV file", st);
      goto done;
    }
  } else {
    int rc_out = cli_open_raw_output(CMD, a.out, &out);
    if (rc_out < 0 && cli_ends_with(a.out, ".sdriq")) /* SDRangel's: its header first */
      rc_out = cli_write_sdriq_header(CMD, a.fs, a.center, NULL, a.out, out);
    if (rc_out >= 0) {
      rc = rc_out;
      goto done;
    }
  }
  for (size_t c = 0; c < a.n_car && a.bits_prefix; c++) {
    char path[4096];
    snprintf(path, sizeof path, "%s%zu.bits", a.bits_prefix, c);
    bits[c] = fopen(path, "wb");
    if (!bits[c]) {
      rc = cli_error(CMD, "cannot create %s: %s", path, strerror(errno));
      goto done;
    }
  }

  uint64_t clipped = 0, written = 0, nbits_total = 0;
  size_t fsize = prx_format_size(a.format);
  cli_progress_start(&progress, CMD, a.n, a.quiet);
  while (written < a.n) {
    cli_progress_update(&progress, written);
    size_t m = a.n - written < GEN_BLOCK ? (size_t)(a.n - written) : GEN_BLOCK;
    st = prx_sim_generate(sim, buf, m);
    if (st != PRX_OK) {
      rc = cli_status_error(CMD, "generating", st);
      goto done;
    }
    clipped += prx_encode_scaled(a.format, buf, m, scale, enc);
    if (rec || wav) {
      st = rec ? prx_sigmf_write(rec, enc, m) : prx_wav_write(wav, enc, m);
      if (st != PRX_OK) {
        rc = cli_status_error(CMD, "writing the recording", st);
        goto done;
      }
    } else if (fwrite(enc, fsize, m, out) != m) {
      rc = cli_error(CMD, "cannot write %s: %s", cli_output_name(a.out), strerror(errno));
      goto done;
    }
    written += m;
    for (size_t c = 0; c < a.n_car && a.bits_prefix; c++) {
      size_t nb;
      do {
        prx_sim_take_bits(sim, c, bitbuf, 4 * GEN_BLOCK, &nb);
        if (fwrite(bitbuf, 1, nb, bits[c]) != nb) {
          rc = cli_error(CMD, "cannot write %s%zu.bits: %s", a.bits_prefix, c, strerror(errno));
          goto done;
        }
        nbits_total += nb;
      } while (nb == 4 * GEN_BLOCK);
    }
  }
  cli_progress_end(&progress);
  if (rec) {
    st = prx_sigmf_writer_close(rec); /* the data checked, then the metadata */
    rec = NULL;
    if (st != PRX_OK) {
      rc = cli_status_error(CMD, "finishing the recording", st);
      goto done;
    }
  } else if (wav) {
    st = prx_wav_writer_close(wav); /* the sizes filled in, then renamed into place */
    wav = NULL;
    if (st != PRX_OK) {
      rc = cli_status_error(CMD, "finishing the WAV file", st);
      goto done;
    }
  } else if (fflush(out) != 0 || (out != stdout && fclose(out) != 0)) {
    out = NULL;
    rc = cli_error(CMD, "cannot write %s: %s", a.out, strerror(errno));
    goto done;
  }
  if (out != stdout) out = NULL;
  for (size_t c = 0; c < a.n_car && a.bits_prefix; c++) {
    FILE *f = bits[c];
    bits[c] = NULL;
    if (fclose(f) != 0) {
      rc = cli_error(CMD, "cannot write %s%zu.bits: %s", a.bits_prefix, c, strerror(errno));
      goto done;
    }
  }
  if (!a.quiet) {
    fprintf(stderr, "polyrx gen: %llu samples (%s, %.6g s), %zu carrier%s, ",
            (unsigned long long)a.n, prx_format_name(a.format), a.n / a.fs, a.n_car,
            a.n_car == 1 ? "" : "s");
    if (a.cfg.noise)
      fprintf(stderr, "Es/N0 %.2f dB (noise variance %.4g)", a.cfg.esn0_db,
              prx_sim_noise_variance(sim));
    else
      fprintf(stderr, "no noise");
    if (a.have_dc) fprintf(stderr, ", DC %+.1f dB", a.dc_db);
    if (a.n_gaps) fprintf(stderr, ", %zu gap%s", a.n_gaps, a.n_gaps == 1 ? "" : "s");
    if (a.format != PRX_CF32 || a.have_scale)
      fprintf(stderr, ", scale %.6g, %llu clipped", scale, (unsigned long long)clipped);
    if (a.bits_prefix) fprintf(stderr, ", %llu bits", (unsigned long long)nbits_total);
    fprintf(stderr, "\n");
  }
  if (clipped)
    fprintf(stderr, "polyrx gen: warning: %llu of %llu samples clipped (%.3g%%): lower --scale\n",
            (unsigned long long)clipped, (unsigned long long)a.n, 100.0 * clipped / a.n);

done:
  cli_progress_end(&progress);
  /* a run that failed leaves no recording behind (its data file is removed) */
  prx_sigmf_writer_discard(rec);
  prx_wav_writer_discard(wav);
  if (out && out != stdout) fclose(out);
  for (size_t c = 0; bits && c < a.n_car; c++)
    if (bits[c]) fclose(bits[c]);
  free(bits);
  free(buf);
  free(enc);
  free(bitbuf);
  free(base);
  prx_sim_destroy(sim);
  free(a.car);
  free(a.gap_spec);
  free(a.gaps);
  return rc;
}
