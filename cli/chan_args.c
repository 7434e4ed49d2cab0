/* polyrx channelize's arguments: the options they give, checked, and the usage text. */

#include "chan_run.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_K 4194304ul

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
      "                         channel recordings; or a WAV I/Q file (SDR#, HDSDR,\n"
      "                         SDRuno, SDR Console, Perseus: RIFF or RF64, PCM 8-32 or\n"
      "                         float; format, rate and centre from its header)\n"
      "  -F, --format FMT       raw sample format: cf32 (float32), ci16 (int16), ci8 (int8),\n"
      "                         cu8 (rtl-sdr offset binary); little-endian (default cf32;\n"
      "                         SigMF, WAV: from the header);\n"
      "                         real samples (a direct-sampling receiver): rf32, ri16,\n"
      "                         ri8, ru8, read as complex at half the rate, a quarter of\n"
      "                         it above their DC (-s, -f: the real samples' rate and DC)\n"
      "                         a raw file named .cu8, .cs8, .cs16 or .cf32 is read as that\n"
      "  -s, --rate RATE        sample rate in Hz, e.g. 6.5536M (required for raw input;\n"
      "                         SigMF: core:sample_rate, which -s overrides)\n"
      "  -f, --center FREQ      centre frequency in Hz, e.g. 100M (default 0; SigMF:\n"
      "                         captures[0].core:frequency, which -f overrides)\n"
      "      --swap-iq          exchange I and Q as read: a recording whose two channels\n"
      "                         are the wrong way round (its spectrum mirrored)\n" CLI_HELP_RANGE_25
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

int chan_parse_args(int argc, char **argv, options *o) {
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
      CLI_INPUT_LONGOPTS,
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
    case CLI_OPT_SWAP_IQ: o->swap_iq = 1; break;
    case CLI_OPT_START: o->start = a; break;
    case CLI_OPT_DURATION: o->duration = a; break;
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
