/* polyrx channelize (placeholder until its issue lands). */
#include "cli.h"

int cmd_channelize(int argc, char **argv) {
  (void)argc;
  (void)argv;
  return cli_error("channelize", "not built yet");
}
