/* polyrx: the command. Dispatches to one subcommand per file (cli/cmd_*.c); the commands that
 * gain from a warm process go to a polyrx server first where one answers (serve_client.c). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *what;
  int served; /* run by a polyrx server where one answers */
} commands[] = {
    {"channelize", cmd_channelize, "split a wideband IQ stream into channels (SigMF out)", 1},
    {"gen", cmd_gen, "generate a QPSK test signal (one or many carriers)", 0},
    {"demod", cmd_demod, "demodulate QPSK open-loop: bits, LLRs, JSON report", 1},
    {"rx", cmd_rx, "receive every listed QPSK carrier of a wideband stream: bits, report", 1},
    {"ber", cmd_ber, "bit error rate between sent and received bit files (aligned)", 0},
    {"info", cmd_info, "describe a recording: format, rate, centre, length, captures", 0},
    {"convert", cmd_convert, "write a recording in another form: raw, SigMF, WAV; another format",
     0},
    {"spectrum", cmd_spectrum, "draw a waterfall (PNG) of a recording of any length", 0},
    {"serve", cmd_serve, "keep the CUDA context warm and run channelize/demod/rx for clients", 0},
};

static void usage(FILE *f) {
  fprintf(f, "polyrx %s: wideband channelizer and open-loop QPSK demodulator\n\n", prx_version());
  fprintf(f, "usage: polyrx COMMAND [OPTIONS]   (polyrx COMMAND --help for its options)\n\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].what);
  fprintf(f, "\nCUDA backend: %s\n", prx_cuda_available() ? "available" : "not available");
}

/* The command's index, -1 where none has that name. */
static int find(const char *name) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(name, commands[i].name)) return (int)i;
  return -1;
}

/* Whether the command's arguments (up to "--") hold one of the two options. */
static int has_option(int argc, char **argv, const char *a, const char *b) {
  for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
    if (!strcmp(argv[i], a) || (b && !strcmp(argv[i], b))) return 1;
  return 0;
}

int cli_dispatch(int argc, char **argv) {
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
  int i = find(argv[1]);
  if (i < 0) {
    fprintf(stderr, "polyrx: error: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
  }
  /* --version on every subcommand, answered here before its own parsing (up to "--") */
  if (has_option(argc, argv, "--version", NULL)) {
    printf("polyrx %s\n", prx_version());
    return 0;
  }
  return commands[i].run(argc - 1, argv + 1);
}

int main(int argc, char **argv) {
  int i = argc >= 2 ? find(argv[1]) : -1;
  /* the process ends with the command (its large buffers left to the exit), except polyrx
   * serve's, which runs many commands */
  cli_process_ends = i < 0 || commands[i].run != cmd_serve;
  if (i >= 0 && commands[i].served && !has_option(argc, argv, "--version", NULL) &&
      !has_option(argc, argv, "--help", "-h")) {
    int rc = cli_serve_client(argc - 1, argv + 1);
    if (rc >= 0) return rc;
  }
  int rc = cli_dispatch(argc, argv);
  /* where safe (cli_exit_detach_wanted): the driver's release behind the command */
  cli_exit_detached(rc);
  return rc;
}
