/* polyrx rx's arguments: the options they give, checked, and the usage text. */

#include "rx_run.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READ_BLOCK ((size_t)1 << 18)

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
      "  -i, --input FILE     raw interleaved IQ, '-' for standard input, a SigMF recording\n"
      "                       (.sigmf-data/.sigmf-meta/.sigmf) or a WAV I/Q file (RIFF or\n"
      "                       RF64): format, rate and centre from its metadata\n"
      "  -F, --format FMT     cf32 (default), ci16, ci8 or cu8; real samples (a direct-sampling\n"
      "                       receiver): rf32, ri16, ri8, ru8, read as complex at half the rate,\n"
      "                       a quarter of it above their DC (-s, -f: their rate and DC)\n"
      "                       a raw file named .cu8, .cs8, .cs16 or .cf32 is read as that\n"
      "  -s, --rate RATE      sample rate in Hz (engineering notation: 6.5536M)\n"
      "  -f, --center FREQ    centre frequency in Hz, for the report (default: metadata or 0)\n"
      "      --swap-iq        exchange I and Q as read: a recording whose two channels are the\n"
      "                       wrong way round (its spectrum mirrored)\n" CLI_HELP_RANGE_23
      "  -K, --channels K     channels of the channelizer (even, e.g. 1024)\n"
      "      --carrier SPEC   a carrier, repeatable, with the keys of `polyrx gen`:\n"
      "                         f=FREQ      offset from the centre, Hz (default 0)\n"
      "                         freq=FREQ   or the carrier's frequency, Hz (the centre from\n"
      "                                     the input's header or -f taken off)\n"
      "                         rs=RATE     symbol rate, Hz (required)\n"
      "                         rolloff=B   RRC roll-off (default 0.35)\n"
      "                         diff        differentially encoded data (the default)\n"
      "                         pilots=P:L  a pilot word of L symbols starts every P symbols\n"
      "                         diff=0      coherent: the quarter-turn is left unresolved\n"
      "                         pi4         pi/4-QPSK (with diff: pi/4-DQPSK, TETRA's, P25's\n"
      "                                     CQPSK and C4FM); not with pilots. Each carrier's\n"
      "                                     modulation is checked on the first samples: one\n"
      "                                     that looks like the other, or like QAM (its\n"
      "                                     symbols' power on several levels), gets a warning\n"
      "      --detect         find the QPSK carriers by themselves (power against the noise\n"
      "                       floor, the symbol-rate and 4th-power lines), symbol rates from\n"
      "                       RATE/K/16 up, in the first 800 symbols of the slowest (1 s at\n"
      "                       6.5536 Msps, K = 1024) and receive those that fit, as\n"
      "                       differential, pi/4-QPSK ones as pi4 (with --carrier: those\n"
      "                       listed, then the others found); the report lists what was found\n"
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

int rx_parse_args(int argc, char **argv, options *o) {
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
      CLI_INPUT_LONGOPTS,
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
    case CLI_OPT_SWAP_IQ: o->swap_iq = 1; break;
    case CLI_OPT_START: o->start = optarg; break;
    case CLI_OPT_DURATION: o->duration = optarg; break;
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
      if ((rc = cli_parse_cfo_span(CMD, a, &o->cfo_span)) >= 0) return rc;
      break;
    case OPT_BLOCK:
      if ((rc = cli_parse_block(CMD, a, &o->block)) >= 0) return rc;
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
  if (o->start && o->truth)
    return cli_usage_error(CMD, "--truth compares from the recording's first symbol: not with "
                                "--start (compare a range's bits with polyrx ber, which aligns)");
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
