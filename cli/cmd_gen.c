/* polyrx gen (placeholder until its issue lands). */
#include "cli.h"

int cmd_gen(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return cli_error("gen", "not built yet");
}
