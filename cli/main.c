/* polyrx: the command. Dispatches to one subcommand per file (cli/cmd_*.c). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *what;
} commands[] = {
    {"channelize", cmd_channelize, "split a wideband IQ stream into channels (SigMF out)"},
    {"gen", cmd_gen, "generate a QPSK test signal (one or many carriers)"},
    {"demod", cmd_demod, "demodulate QPSK open-loop: bits, LLRs, JSON report"},
    {"rx", cmd_rx, "receive every listed QPSK carrier of a wideband stream: bits, report"},
    {"ber", cmd_ber, "bit error rate between sent and received bit files (aligned)"},
    {"info", cmd_info, "describe a recording: format, rate, centre, length, captures"},
    {"spectrum", cmd_spectrum, "draw a waterfall (PNG) of a recording of any length"},
};

static void usage(FILE *f) {
  fprintf(f, "polyrx %s: wideband channelizer and open-loop QPSK demodulator\n\n", prx_version());
  fprintf(f, "usage: polyrx COMMAND [OPTIONS]   (polyrx COMMAND --help for its options)\n\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].what);
  fprintf(f, "\nCUDA backend: %s\n", prx_cuda_available() ? "available" : "not available");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("polyrx %s\n", prx_version());
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(argv[1], commands[i].name)) continue;
    /* --version on every subcommand, answered here before its own parsing (up to "--") */
    for (int a = 2; a < argc && strcmp(argv[a], "--"); a++) {
      if (!strcmp(argv[a], "--version")) {
        printf("polyrx %s\n", prx_version());
        return 0;
      }
    }
    return commands[i].run(argc - 1, argv + 1);
  }
  fprintf(stderr, "polyrx: error: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
