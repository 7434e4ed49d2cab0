/* polyrx spectrum: a waterfall picture (PNG) of a recording of any length: time down, frequency
 * across (absolute, from the centre frequency), the mean power of each pixel's stretch of the
 * recording in dBFS through a colour scale, labelled axes, and optionally the channel grid of a
 * K-channel channelizer. Memory is bounded: the recording is read block by block into a fixed
 * number of averaged rows (src/plot). */
#include "cli.h"
#include "plot/plot.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *CMD = "spectrum";

#define SPEC_BLOCK 65536
#define SPEC_MAX_WIDTH 1024       /* plot columns at most; longer FFTs average bins into columns */
#define SPEC_MIN_WIDTH 512        /* shorter FFTs repeat each bin over several columns */
#define SPEC_MAX_CELLS (1u << 24) /* rows x FFT length held in memory (128 MiB of doubles) */
/* layout in pixels */
#define M_LEFT 72
#define M_TOP 42
#define M_BOTTOM 40
#define M_RIGHT 84
#define BG 0x101418u
#define FG 0xd8dde3u
#define GRID 0xffffffu

static void usage(FILE *f) {
  fprintf(f, "usage: polyrx spectrum -i FILE|- -o FILE.png [-F FORMAT] [-s RATE] [-f CENTER]\n"
             "                       [--fft N] [--rows R] [-K CHANNELS] [--range MIN:MAX] [-q]\n"
             "\n"
             "Draws a waterfall of a recording: time down, frequency across, power in dBFS (a\n"
             "full-scale complex tone at a bin centre reads 0 dB) through a colour scale, with\n"
             "labelled axes; any length in bounded memory (each row averages its stretch).\n"
             "\n"
             "  -i, --input FILE     SigMF recording, WAV I/Q file or raw samples; '-' reads\n"
             "                       standard input (raw)\n"
             "  -o, --output FILE    the PNG to write\n"
             "  -F, --format FMT     raw input: cf32 (default), ci16, ci8 or cu8; real samples:\n"
             "                       rf32, ri16, ri8, ru8 (read as complex at half the rate)\n"
             "                       a raw file named .cu8, .cs8, .cs16 or .cf32 is read as that\n"
             "  -s, --rate RATE      sample rate in Hz (raw input; overrides SigMF and WAV)\n"
             "  -f, --center FREQ    centre frequency in Hz (default: SigMF's or WAV's, else 0)\n"
             "      --swap-iq        exchange I and Q as read (a mirrored spectrum set "
             "right)\n" CLI_HELP_RANGE_23
             "      --fft N          FFT length, frequency bins across (default 1024; 8..65536)\n"
             "      --rows R         rows of the waterfall (default 512; 16..4096)\n"
             "  -K, --channels K     draw the channel edges of a K-channel channelizer (channel k\n"
             "                       centred at centre + k fs/K), numbered where they fit\n"
             "      --range MIN:MAX  colour scale in dBFS (default: from the data)\n"
             "  -q, --quiet          no summary on standard error\n"
             "  -h, --help           this text\n");
}

typedef struct {
  const char *input, *output, *format, *rate, *center;
  unsigned long nfft, rows, channels;
  int have_range, quiet;
  int swap_iq;                  /* --swap-iq */
  const char *start, *duration; /* --start, --duration: the time range drawn */
  double db_lo, db_hi;
} spec_opts;

static int parse_range(const char *v, double *lo, double *hi) {
  char buf[64];
  const char *colon = strchr(v, ':');
  if (!colon || (size_t)(colon - v) >= sizeof buf) return -1;
  memcpy(buf, v, (size_t)(colon - v));
  buf[colon - v] = 0;
  return cli_parse_eng(buf, lo) || cli_parse_eng(colon + 1, hi) || !(*hi > *lo) ? -1 : 0;
}

static int parse_args(int argc, char **argv, spec_opts *o) {
  static const struct option longopts[] = {{"input", required_argument, 0, 'i'},
                                           {"output", required_argument, 0, 'o'},
                                           {"format", required_argument, 0, 'F'},
                                           {"rate", required_argument, 0, 's'},
                                           {"center", required_argument, 0, 'f'},
                                           {"fft", required_argument, 0, 'N'},
                                           {"rows", required_argument, 0, 'R'},
                                           {"channels", required_argument, 0, 'K'},
                                           {"range", required_argument, 0, 'r'},
                                           {"quiet", no_argument, 0, 'q'},
                                           CLI_INPUT_LONGOPTS,
                                           {"help", no_argument, 0, 'h'},
                                           {0, 0, 0, 0}};
  optind = 1;
  opterr = 0;
  int opt;
  while ((opt = getopt_long(argc, argv, ":i:o:F:s:f:K:qh", longopts, NULL)) != -1) {
    switch (opt) {
    case 'i': o->input = optarg; break;
    case 'o': o->output = optarg; break;
    case 'F': o->format = optarg; break;
    case 's': o->rate = optarg; break;
    case 'f': o->center = optarg; break;
    case 'N':
      if (cli_parse_uint(optarg, 8, 65536, &o->nfft))
        return cli_error(CMD, "--fft: bad length '%s' (8 to 65536)", optarg);
      break;
    case 'R':
      if (cli_parse_uint(optarg, 16, 4096, &o->rows))
        return cli_error(CMD, "--rows: bad count '%s' (16 to 4096)", optarg);
      break;
    case 'K':
      if (cli_parse_uint(optarg, 1, 1u << 20, &o->channels))
        return cli_error(CMD, "-K: bad channel count '%s' (1 to 1048576)", optarg);
      break;
    case 'r':
      if (parse_range(optarg, &o->db_lo, &o->db_hi))
        return cli_error(CMD, "--range: bad value '%s' (MIN:MAX in dB, MIN < MAX, e.g. -90:0)",
                         optarg);
      o->have_range = 1;
      break;
    case 'q': o->quiet = 1; break;
    case CLI_OPT_SWAP_IQ: o->swap_iq = 1; break;
    case CLI_OPT_START: o->start = optarg; break;
    case CLI_OPT_DURATION: o->duration = optarg; break;
    case 'h': usage(stdout); return -1;
    case ':': return cli_error(CMD, "option %s needs a value", argv[optind - 1]);
    default:
      return cli_error(CMD, "unknown option '%s' (polyrx spectrum --help)", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return cli_error(CMD, "unexpected argument '%s' (polyrx spectrum --help)", argv[optind]);
  if (!o->input) return cli_error(CMD, "no input: give -i FILE (or -i - for standard input)");
  if (!o->output) return cli_error(CMD, "no output: give -o FILE.png");
  if ((uint64_t)o->nfft * o->rows > SPEC_MAX_CELLS)
    return cli_error(CMD, "--fft %lu x --rows %lu is too large (at most %u cells)", o->nfft,
                     o->rows, SPEC_MAX_CELLS);
  return 0;
}

typedef struct {
  int x0, y0, pw, ph; /* plot area */
  double f_lo, f_hi;  /* Hz at the left edge of column 0 and the right edge of the last */
  double t0, t_end;   /* s at the top and bottom edges, from the input's start (--start: t0) */
  double db_lo, db_hi;
} spec_layout;

/* The picture: waterfall pixels, axes, colour bar, channel grid, title. */
static prx_status draw(plot_canvas *cv, const spec_layout *L, const float *db, size_t n_rows,
                       const spec_opts *o, double fs, double fc, const char *name,
                       uint64_t samples) {
  prx_status st = plot_canvas_init(cv, L->x0 + L->pw + M_RIGHT, L->y0 + L->ph + M_BOTTOM, BG);
  if (st != PRX_OK) return st;
  /* waterfall: pixel row y shows data row floor((y + 0.5) n_rows / ph) */
  for (int y = 0; y < L->ph; y++) {
    size_t r = (size_t)(((double)y + 0.5) * (double)n_rows / L->ph);
    if (r >= n_rows) r = n_rows - 1;
    for (int x = 0; x < L->pw; x++) {
      double t = (db[r * (size_t)L->pw + (size_t)x] - L->db_lo) / (L->db_hi - L->db_lo);
      plot_pixel(cv, L->x0 + x, L->y0 + y, plot_colormap(t));
    }
  }
  char text[160];
  double ticks[64], step;
  const char *prefix;
  /* channel grid: edges at fc + (m + 1/2) fs/K, numbers at the centres where they fit */
  if (o->channels) {
    double sp = fs / (double)o->channels, px = sp / (L->f_hi - L->f_lo) * L->pw;
    int labels = px >= plot_text_width("0000", 1) + 4;
    for (long m = (long)floor((L->f_lo - fc) / sp) - 1; fc + (m - 0.5) * sp <= L->f_hi; m++) {
      double edge = fc + (m + 0.5) * sp;
      int x = L->x0 + (int)lround((edge - L->f_lo) / (L->f_hi - L->f_lo) * L->pw);
      if (x > L->x0 && x < L->x0 + L->pw) plot_vline(cv, x, L->y0, L->y0 + L->ph - 1, GRID, 3);
      double centre = fc + (double)m * sp;
      int xc = L->x0 + (int)lround((centre - L->f_lo) / (L->f_hi - L->f_lo) * L->pw);
      if (labels && xc >= L->x0 && xc < L->x0 + L->pw) {
        long k = ((m % (long)o->channels) + (long)o->channels) % (long)o->channels;
        snprintf(text, sizeof text, "%ld", k);
        plot_text(cv, xc, L->y0 - 11, text, GRID, 1, 1);
      }
    }
  }
  /* frame */
  plot_hline(cv, L->x0 - 1, L->x0 + L->pw, L->y0 - 1, FG, 1);
  plot_hline(cv, L->x0 - 1, L->x0 + L->pw, L->y0 + L->ph, FG, 1);
  plot_vline(cv, L->x0 - 1, L->y0 - 1, L->y0 + L->ph, FG, 1);
  plot_vline(cv, L->x0 + L->pw, L->y0 - 1, L->y0 + L->ph, FG, 1);
  /* frequency axis */
  double div = plot_eng_unit(fmax(fabs(L->f_lo), fabs(L->f_hi)), &prefix);
  size_t n = plot_ticks(L->f_lo, L->f_hi, 7, ticks, 64, &step);
  for (size_t i = 0; i < n; i++) {
    int x = L->x0 + (int)lround((ticks[i] - L->f_lo) / (L->f_hi - L->f_lo) * L->pw);
    plot_vline(cv, x, L->y0 + L->ph + 1, L->y0 + L->ph + 4, FG, 1);
    plot_tick_label(text, sizeof text, ticks[i], step, div);
    plot_text(cv, x, L->y0 + L->ph + 7, text, FG, 1, 1);
  }
  snprintf(text, sizeof text, "frequency (%sHz)", prefix);
  plot_text(cv, L->x0 + L->pw / 2, L->y0 + L->ph + 22, text, FG, 1, 1);
  /* time axis */
  div = L->t_end >= 1 ? 1 : 1e-3;
  n = plot_ticks(L->t0, L->t_end, 8, ticks, 64, &step);
  for (size_t i = 0; i < n; i++) {
    int y = L->y0 + (int)lround((ticks[i] - L->t0) / (L->t_end - L->t0) * L->ph);
    plot_hline(cv, L->x0 - 5, L->x0 - 2, y, FG, 1);
    plot_tick_label(text, sizeof text, ticks[i], step, div);
    plot_text(cv, L->x0 - 8, y - 3, text, FG, 1, 2);
  }
  plot_text(cv, L->x0 - 8, L->y0 - 25, div == 1 ? "time (s)" : "time (ms)", FG, 1, 2);
  /* colour bar */
  int bx = L->x0 + L->pw + 14, bw = 14;
  for (int y = 0; y < L->ph; y++)
    plot_fill(cv, bx, L->y0 + y, bw, 1, plot_colormap(1 - ((double)y + 0.5) / L->ph));
  plot_hline(cv, bx - 1, bx + bw, L->y0 - 1, FG, 1);
  plot_hline(cv, bx - 1, bx + bw, L->y0 + L->ph, FG, 1);
  plot_vline(cv, bx - 1, L->y0 - 1, L->y0 + L->ph, FG, 1);
  plot_vline(cv, bx + bw, L->y0 - 1, L->y0 + L->ph, FG, 1);
  n = plot_ticks(L->db_lo, L->db_hi, 6, ticks, 64, &step);
  for (size_t i = 0; i < n; i++) {
    int y = L->y0 + (int)lround((L->db_hi - ticks[i]) / (L->db_hi - L->db_lo) * L->ph);
    plot_hline(cv, bx + bw + 1, bx + bw + 4, y, FG, 1);
    plot_tick_label(text, sizeof text, ticks[i], step, 1);
    plot_text(cv, bx + bw + 7, y - 3, text, FG, 1, 0);
  }
  plot_text(cv, bx + bw / 2, L->y0 - 25, "dBFS", FG, 1, 1);
  /* title */
  double udiv = plot_eng_unit(fs, &prefix);
  snprintf(text, sizeof text, "%.60s  fs %.6g %sHz  FFT %lu  %.6g s", name, fs / udiv, prefix,
           o->nfft, (double)samples / fs);
  plot_text(cv, L->x0, 4, text, FG, 1, 0);
  return PRX_OK;
}

int cmd_spectrum(int argc, char **argv) {
  spec_opts o;
  memset(&o, 0, sizeof o);
  o.nfft = 1024;
  o.rows = 512;
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc < 0 ? 0 : 2; /* every error of the arguments is a usage error */
  const char *ext = strrchr(o.output, '.');
  if (!ext || strcmp(ext, ".png"))
    return cli_usage_error(CMD, "-o %s: the picture is a PNG; give a name ending in .png",
                           o.output);

  prx_iq_reader *reader = NULL;
  prx_iq_info info;
  cli_input_opts in = {o.input, o.format,  o.rate,  o.center,  "6.5536M",
                       o.quiet, o.swap_iq, o.start, o.duration};
  rc = cli_open_input(CMD, &in, &reader, &info);
  if (rc >= 0) {
    prx_iq_close(reader);
    return rc;
  }
  rc = 0;
  /* an input of known length (a file; the window of one) gets a fixed number of frames per
   * row; a stream merges rows */
  uint64_t per_row = 0, total = cli_input_samples(reader);
  size_t ss = prx_format_size(info.format);
  if (total) {
    uint64_t frames = total / o.nfft;
    per_row = frames / o.rows + (frames % o.rows != 0);
    if (per_row == 0) per_row = 1;
  }
  plot_waterfall *wf = NULL;
  prx_status st = plot_waterfall_create(o.nfft, o.rows, per_row, &wf);
  void *raw = malloc(SPEC_BLOCK * ss);
  prx_cf32 *x = malloc(SPEC_BLOCK * sizeof *x);
  float *db = NULL;
  plot_canvas cv = {0, 0, NULL};
  if (st != PRX_OK) {
    rc = cli_status_error(CMD, "waterfall", st);
    goto done;
  }
  if (!raw || !x) {
    rc = cli_error(CMD, "out of memory");
    goto done;
  }
  uint64_t done_samples = 0;
  for (;;) {
    size_t n;
    rc = cli_read_block(CMD, reader, raw, SPEC_BLOCK, done_samples, &n);
    if (rc >= 0) goto done;
    rc = 0;
    if (n == 0) break;
    prx_convert_to_cf32(info.format, raw, n, x);
    plot_waterfall_add(wf, x, n);
    done_samples += n;
  }
  size_t n_rows = plot_waterfall_rows(wf);
  if (n_rows == 0) {
    rc = cli_error(CMD, "%s holds %llu samples: fewer than one FFT frame (--fft %lu)",
                   prx_iq_reader_name(reader), (unsigned long long)done_samples, o.nfft);
    goto done;
  }
  /* columns: the FFT bins averaged (long FFTs) or repeated (short ones) */
  int pw = (int)o.nfft;
  if (pw > SPEC_MAX_WIDTH) pw = SPEC_MAX_WIDTH;
  if (pw < SPEC_MIN_WIDTH) pw = (int)(o.nfft * ((SPEC_MIN_WIDTH + o.nfft - 1) / o.nfft));
  db = malloc(n_rows * (size_t)pw * sizeof *db);
  if (!db) {
    rc = cli_error(CMD, "out of memory");
    goto done;
  }
  for (size_t r = 0; r < n_rows; r++) {
    const double *p = plot_waterfall_row(wf, r);
    for (int c = 0; c < pw; c++) {
      size_t b0 = (size_t)c * o.nfft / (size_t)pw, b1 = (size_t)(c + 1) * o.nfft / (size_t)pw;
      if (b1 <= b0) b1 = b0 + 1;
      double s = 0;
      for (size_t b = b0; b < b1; b++) s += p[b];
      db[r * (size_t)pw + (size_t)c] = (float)(10 * log10(s / (double)(b1 - b0) + 1e-30));
    }
  }
  spec_layout L;
  L.x0 = M_LEFT;
  L.y0 = M_TOP;
  L.pw = pw;
  L.ph = (int)o.rows;
  /* bin k (shifted) is centred at fc + (k - nfft/2) fs / nfft */
  double bin = info.sample_rate / (double)o.nfft;
  L.f_lo = info.center_freq + (-(double)(o.nfft / 2) - 0.5) * bin;
  L.f_hi = L.f_lo + (double)o.nfft * bin;
  uint64_t shown = plot_waterfall_samples(wf);
  L.t0 = (double)prx_iq_reader_window_start(reader) / info.sample_rate;
  L.t_end = L.t0 + (double)shown / info.sample_rate;
  if (o.have_range) {
    L.db_lo = o.db_lo;
    L.db_hi = o.db_hi;
  } else {
    /* top: the strongest pixel; bottom: 10 dB under the 5th percentile (the noise floor) */
    size_t cells = n_rows * (size_t)pw;
    double *sorted = malloc(cells * sizeof *sorted);
    if (!sorted) {
      rc = cli_error(CMD, "out of memory");
      goto done;
    }
    for (size_t i = 0; i < cells; i++) sorted[i] = db[i];
    qsort(sorted, cells, sizeof *sorted, cli_cmp_double);
    L.db_hi = ceil(sorted[cells - 1] / 5) * 5;
    L.db_lo = floor((sorted[cells / 20] - 10) / 5) * 5;
    free(sorted);
    if (L.db_hi - L.db_lo < 20) L.db_lo = L.db_hi - 20;
    if (L.db_hi - L.db_lo > 120) L.db_lo = L.db_hi - 120;
  }
  const char *name = prx_iq_reader_name(reader), *slash = strrchr(name, '/');
  st = draw(&cv, &L, db, n_rows, &o, info.sample_rate, info.center_freq, slash ? slash + 1 : name,
            shown);
  if (st == PRX_OK) {
    char area[96], freq[96], time[96], range[96], fft[96], version[64];
    snprintf(area, sizeof area, "%d %d %d %d", L.x0, L.y0, L.pw, L.ph);
    snprintf(freq, sizeof freq, "%.17g %.17g", L.f_lo, L.f_hi);
    snprintf(time, sizeof time, "%.17g %.17g", L.t0, L.t_end);
    snprintf(range, sizeof range, "%.17g %.17g", L.db_lo, L.db_hi);
    snprintf(fft, sizeof fft, "%lu %llu %zu", o.nfft,
             (unsigned long long)plot_waterfall_frames_per_row(wf), n_rows);
    snprintf(version, sizeof version, "polyrx %s", prx_version());
    const char *keys[] = {
        "Software",        "polyrx:plot_area",      "polyrx:freq_range_hz", "polyrx:time_range_s",
        "polyrx:db_range", "polyrx:fft_frames_rows"};
    const char *values[] = {version, area, freq, time, range, fft};
    st = plot_write_png(&cv, o.output, keys, values, 6);
  }
  if (st != PRX_OK) {
    rc = cli_status_error(CMD, "picture", st);
    goto done;
  }
  if (!o.quiet)
    fprintf(stderr,
            "polyrx spectrum: %llu samples (%.6g s) -> %s: %dx%d, %zu rows of %llu frames of %lu, "
            "%.0f to %.0f dBFS\n",
            (unsigned long long)done_samples, (double)done_samples / info.sample_rate, o.output,
            cv.w, cv.h, n_rows, (unsigned long long)plot_waterfall_frames_per_row(wf), o.nfft,
            L.db_lo, L.db_hi);
done:
  plot_canvas_free(&cv);
  plot_waterfall_destroy(wf);
  prx_iq_close(reader);
  free(raw);
  free(x);
  free(db);
  return rc;
}
