/* polyrx demod (placeholder until its issue lands). */
#include "cli.h"

int cmd_demod(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return cli_error("demod", "not built yet");
}
