/* polyrx convert: a recording in any form polyrx reads (raw, standard input, SigMF, WAV, real
 * samples) written in another: raw interleaved samples, a SigMF recording or archive, or a WAV
 * I/Q file the SDR programs open, in the sample format asked for. Samples that stay in their
 * format are copied as they are (bit for bit); the others go through cf32 and the writers' rule
 * (prx_encode_scaled: rounded, ties to even, clipped and counted). Streams in bounded memory;
 * a SigMF or WAV output is complete or absent. */
#include "cli.h"

#include "core/internal.h"
#include "dsp/pack.h"
#include "io/io_internal.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *CMD = "convert";
#define BLOCK ((size_t)1 << 16)

static void usage(FILE *f) {
  fprintf(f,
          "usage: polyrx convert -i FILE|- [-F FMT -s RATE -f CENTER --swap-iq] -o OUT\n"
          "                      [--start TIME] [--duration TIME] [--out-format FMT]\n"
          "                      [--scale S] [-q]\n"
          "\n"
          "Writes a recording in another form: any input polyrx reads (raw samples, standard\n"
          "input, a SigMF recording or archive, a WAV I/Q file, real samples) as raw samples, a\n"
          "SigMF recording or a WAV file. Samples that keep their format are copied bit for\n"
          "bit; the others are converted (rounded to the nearest, ties to even, clipped and\n"
          "counted).\n"
          "\n"
          "  -i, --input FILE     the recording ('-': standard input, raw)\n"
          "  -F, --format FMT     raw input: cf32 (default), ci16, ci8, cu8; real samples rf32,\n"
          "                       ri16, ri8, ru8 (read as complex at half the rate)\n"
          "                       a raw file named .cu8, .cs8, .cs16 or .cf32 is read as that\n"
          "  -s, --rate RATE      sample rate in Hz (raw input; overrides a header's)\n"
          "  -f, --center FREQ    centre frequency in Hz (default: the header's, else 0)\n"
          "      --swap-iq        exchange I and Q as read (a mirrored spectrum set "
          "right)\n" CLI_HELP_RANGE_23
          "  -o, --output OUT     NAME.wav: a WAV I/Q file (cf32, ci16 or cu8; the centre in its\n"
          "                       auxi chunk; RF64 past 4 GiB); NAME.sigmf-data or .sigmf-meta: a\n"
          "                       SigMF recording; NAME.sigmf: a SigMF archive; NAME.sdriq: an\n"
          "                       SDRangel file (ci16); '-': raw samples on standard output; any\n"
          "                       other name: a raw file\n"
          "      --out-format FMT cf32, ci16, ci8, cu8 or cf16 (SigMF and raw); default: the\n"
          "                       input's as read, or cf32 where the output cannot hold it\n"
          "      --scale S        multiply the samples by S (converts even the same format)\n"
          "  -q, --quiet          no summary line\n"
          "  -h, --help           this text\n"
          "\n"
          "Exit status: 0 done, 1 error, 2 usage error.\n"
          "example:\n"
          "  polyrx convert -i capture.sigmf-meta -o capture.wav --out-format ci16\n");
}

/* the kinds of output, by the name */
enum { OUT_RAW, OUT_WAV, OUT_SIGMF, OUT_SDRIQ };

int cmd_convert(int argc, char **argv) {
  enum { OPT_OUTFORMAT = 256, OPT_SCALE };
  static const struct option longs[] = {{"input", required_argument, 0, 'i'},
                                        {"format", required_argument, 0, 'F'},
                                        {"rate", required_argument, 0, 's'},
                                        {"center", required_argument, 0, 'f'},
                                        {"centre", required_argument, 0, 'f'},
                                        CLI_INPUT_LONGOPTS,
                                        {"output", required_argument, 0, 'o'},
                                        {"out-format", required_argument, 0, OPT_OUTFORMAT},
                                        {"scale", required_argument, 0, OPT_SCALE},
                                        {"quiet", no_argument, 0, 'q'},
                                        {"help", no_argument, 0, 'h'},
                                        {0, 0, 0, 0}};
  cli_input_opts in = {NULL, NULL, NULL, NULL, "48k", 0, 0, NULL, NULL};
  cli_carry_own own = {0};
  const char *out_path = NULL, *out_format = NULL, *scale_text = NULL;
  int opt;
  optind = 0;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":i:F:s:f:o:qh", longs, NULL)) != -1) {
    switch (opt) {
    case 'i': in.input = optarg; break;
    case 'F': in.format = optarg; break;
    case 's': in.rate = optarg; break;
    case 'f': in.center = optarg; break;
    case CLI_OPT_SWAP_IQ: in.swap_iq = 1; break;
    case CLI_OPT_START: in.start = optarg; break;
    case CLI_OPT_DURATION: in.duration = optarg; break;
    case 'o': out_path = optarg; break;
    case OPT_OUTFORMAT: out_format = optarg; break;
    case OPT_SCALE: scale_text = optarg; break;
    case 'q': in.quiet = 1; break;
    case 'h': usage(stdout); return 0;
    case ':': return cli_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
    default: return cli_usage_error(CMD, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc) return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
  if (!in.input) return cli_usage_error(CMD, "no input: give -i FILE (or -i - for a pipe)");
  if (!out_path) return cli_usage_error(CMD, "no output: give -o OUT");
  const int kind = cli_ends_with(out_path, ".wav") || cli_ends_with(out_path, ".WAV") ? OUT_WAV
                   : cli_ends_with(out_path, ".sigmf-data") ||
                           cli_ends_with(out_path, ".sigmf-meta") ||
                           cli_ends_with(out_path, ".sigmf")
                       ? OUT_SIGMF
                   : cli_ends_with(out_path, ".sdriq") ? OUT_SDRIQ
                                                       : OUT_RAW;
  double scale = 1;
  if (scale_text && (cli_parse_eng(scale_text, &scale) || !isfinite(scale) || scale == 0))
    return cli_bad_value(CMD, "--scale", scale_text, "scale factor (a finite number, not 0)");
  prx_format outf = PRX_CF32;
  if (out_format && prx_format_parse(out_format, &outf))
    return cli_bad_value(CMD, "--out-format", out_format,
                         "sample format (cf32, ci16, ci8, cu8, cf16)");
  if (out_format && kind == OUT_SDRIQ && outf != PRX_CI16)
    return cli_usage_error(CMD, "--out-format %s: an .sdriq file holds ci16 samples here",
                           out_format);
  if (out_format && kind == OUT_WAV && outf != PRX_CF32 && outf != PRX_CI16 && outf != PRX_CU8)
    return cli_usage_error(CMD,
                           "--out-format %s: a WAV file holds cf32, ci16 or cu8 (its 8 bits are "
                           "unsigned)",
                           out_format);

  prx_iq_reader *r = NULL;
  prx_iq_info info;
  int rc = cli_open_input(CMD, &in, &r, &info);
  if (rc >= 0) {
    prx_iq_close(r);
    return rc;
  }
  if (!out_format) /* the input's format where the output holds it */
    outf = kind == OUT_SDRIQ                           ? PRX_CI16
           : kind == OUT_WAV && info.format == PRX_CI8 ? PRX_CF32
                                                       : info.format;
  /* the outputs must not be the input */
  cli_path paths[2] = {{"-i", prx_iq_reader_name(r), 1}, {"-o", out_path, 0}};
  if (strcmp(in.input, "-") && strcmp(out_path, "-") &&
      (rc = cli_outputs_distinct(CMD, paths, 2)) >= 0) {
    prx_iq_close(r);
    return rc;
  }
  const int copy = outf == info.format && scale == 1;
  const size_t isz = prx_format_size(info.format), osz = prx_format_size(outf);
  unsigned char *ibuf = malloc(BLOCK * isz), *obuf = malloc(BLOCK * osz);
  prx_cf32 *mid = malloc(BLOCK * sizeof *mid);
  prx_sigmf_writer *sw = NULL;
  prx_wav_writer *ww = NULL;
  FILE *raw = NULL;
  prx_status st = PRX_OK;
  if (!ibuf || !obuf || !mid) {
    rc = cli_error(CMD, "out of memory");
    goto done;
  }
  if (kind == OUT_WAV) {
    st = prx_wav_writer_open(out_path, outf, info.sample_rate, info.center_freq, &ww);
  } else if (kind == OUT_SIGMF) {
    char *base = strdup(out_path);
    if (!base) {
      rc = cli_error(CMD, "out of memory");
      goto done;
    }
    if (!cli_ends_with(base, ".sigmf")) base[strlen(base) - strlen(".sigmf-data")] = 0;
    const prx_sigmf_recording *rec = NULL;
    st = cli_carry_source(r, info.center_freq, info.sample_rate, &own, &rec);
    char desc[512];
    snprintf(desc, sizeof desc, "polyrx convert of %s", in.input);
    prx_sigmf_meta m = prx_sigmf_meta_default();
    m.format = outf;
    m.sample_rate = info.sample_rate;
    m.center_freq = info.center_freq;
    m.description = desc;
    m.datetime = rec ? rec->captures[0].datetime : NULL;
    if (!st) st = prx_sigmf_writer_open(base, &m, &sw);
    free(base);
    if (!st && rec && (rec->n_captures > 1 || rec->n_annotations) && !in.quiet)
      fprintf(stderr,
              "polyrx %s: note: the input's later captures and its annotations are not carried "
              "(%zu captures, %zu annotations; polyrx channelize carries them)\n",
              CMD, rec->n_captures, rec->n_annotations);
  } else {
    int rc_out = cli_open_raw_output(CMD, out_path, &raw);
    if (rc_out < 0 && kind == OUT_SDRIQ) {
      cli_carry_own dated;
      const prx_sigmf_recording *rec = NULL;
      st = cli_carry_source(r, info.center_freq, info.sample_rate, &dated, &rec);
      const char *start =
          !st && rec && rec->captures[0].sample_start == 0 ? rec->captures[0].datetime : NULL;
      rc_out = st ? cli_status_error(CMD, "input", st)
                  : cli_write_sdriq_header(CMD, info.sample_rate, info.center_freq, start, out_path,
                                           raw);
      cli_carry_own_free(&dated);
    }
    if (rc_out >= 0) {
      rc = rc_out;
      goto done;
    }
  }
  if (st) {
    rc = cli_status_error(CMD, out_path, st);
    goto done;
  }
  uint64_t total = 0, clipped = 0;
  prx_status end = PRX_OK;
  for (;;) {
    size_t n = 0;
    end = prx_iq_read(r, ibuf, BLOCK, &n);
    if (end || !n) break;
    const void *data = ibuf;
    if (!copy) {
      prx_convert_to_cf32(info.format, ibuf, n, mid);
      if (outf == PRX_CF16) {
        for (size_t i = 0; scale != 1 && i < n; i++)
          mid[i].re = (float)(scale * mid[i].re), mid[i].im = (float)(scale * mid[i].im);
        prx_pack_cf16(mid, n, (uint16_t *)obuf);
      } else {
        clipped += prx_encode_scaled(outf, mid, n, scale, obuf);
      }
      data = obuf;
    }
    if (ww)
      st = prx_wav_write(ww, data, n);
    else if (sw)
      st = prx_sigmf_write(sw, data, n);
    else if (fwrite(data, osz, n, raw) != n)
      st = prx_fail(PRX_ERR_IO, "cannot write %s: %s", cli_output_name(out_path),
                    strerror(errno ? errno : EIO));
    if (st) {
      rc = cli_status_error(CMD, "output", st);
      goto done;
    }
    total += n;
  }
  /* a cut input: its whole samples are written, then the error */
  if (end && end != PRX_ERR_TRUNCATED) {
    rc = cli_status_error(CMD, "input", end);
    goto done;
  }
  if (end) rc = cli_status_error(CMD, "input", end);
  if (ww) st = prx_wav_writer_close(ww);
  if (sw) st = prx_sigmf_writer_close(sw);
  ww = NULL;
  sw = NULL;
  if (!st && raw && (fflush(raw) != 0 || (raw != stdout && fclose(raw) != 0)))
    st = prx_fail(PRX_ERR_IO, "cannot write %s: %s", cli_output_name(out_path), strerror(errno));
  if (raw != stdout) raw = NULL;
  if (st) {
    rc = cli_status_error(CMD, "output", st);
    goto done;
  }
  if (!in.quiet) {
    fprintf(stderr, "polyrx %s: %llu samples, %s (%s) -> %s (%s)", CMD, (unsigned long long)total,
            in.input, prx_iq_reader_stored(r, NULL), out_path, prx_format_name(outf));
    if (copy)
      fprintf(stderr, ", the samples as read\n");
    else
      fprintf(stderr, ", converted, %llu clipped\n", (unsigned long long)clipped);
  }
  if (clipped)
    fprintf(stderr,
            "polyrx %s: warning: %llu of %llu samples clipped (or not finite): lower --scale\n",
            CMD, (unsigned long long)clipped, (unsigned long long)total);
done:
  cli_carry_own_free(&own);
  prx_wav_writer_discard(ww);
  prx_sigmf_writer_discard(sw);
  if (raw && raw != stdout) fclose(raw);
  free(ibuf);
  free(obuf);
  free(mid);
  prx_iq_close(r);
  return rc < 0 ? 0 : rc;
}
