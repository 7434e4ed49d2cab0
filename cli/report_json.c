/* Pieces shared by the commands' JSON reports (cJSON): numbers that may not be finite, and the
 * demodulator's summary warnings. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>

void cli_json_num(cJSON *o, const char *k, double v) {
  if (isfinite(v))
    cJSON_AddNumberToObject(o, k, v);
  else
    cJSON_AddNullToObject(o, k);
}

/* the demodulator's warnings and the reports' codes for them, in the order they are listed: one
 * list, so that a bit and its code cannot part */
#define QPSK_WARNINGS(X)                                                                           \
  X(PRX_QPSK_WARN_NO_SIGNAL, "no_signal")                                                          \
  X(PRX_QPSK_WARN_WEAK_SIGNAL, "weak_signal")                                                      \
  X(PRX_QPSK_WARN_CFO_ALIAS, "cfo_alias")                                                          \
  X(PRX_QPSK_WARN_SYMBOL_RATE, "symbol_rate")                                                      \
  X(PRX_QPSK_WARN_UNLOCKED, "unlocked")                                                            \
  X(PRX_QPSK_WARN_NOT_QPSK, "not_qpsk")                                                            \
  X(PRX_QPSK_WARN_LEVELS, "power_levels")                                                          \
  X(PRX_QPSK_WARN_QUARTER_STEPS, "quarter_steps")                                                  \
  X(PRX_QPSK_WARN_CLOCK_RANGE, "clock_range")                                                      \
  X(PRX_QPSK_WARN_TIMING, "timing_jumps")                                                          \
  X(PRX_QPSK_WARN_NONFINITE, "nonfinite")
#define WARN_BIT(bit, code) bit,
#define WARN_CODE(bit, code) code,
const unsigned cli_qpsk_warn_bits[] = {QPSK_WARNINGS(WARN_BIT)};
static const char *const warn_codes[] = {QPSK_WARNINGS(WARN_CODE)};
_Static_assert(sizeof warn_codes / sizeof *warn_codes == CLI_QPSK_N_WARNINGS,
               "CLI_QPSK_N_WARNINGS: the warnings listed");

void cli_json_warning(cJSON *arr, const char *code, const char *text) {
  cJSON *x = cJSON_CreateObject();
  cJSON_AddStringToObject(x, "code", code);
  cJSON_AddStringToObject(x, "text", text);
  cJSON_AddItemToArray(arr, x);
}

int cli_json_input_warnings(cJSON *arr, const prx_iq_reader *r) {
  const prx_wav_info *w = prx_iq_reader_wav(r);
  if (!arr || !w || !w->gps_gaps) return 0;
  char text[256];
  snprintf(text, sizeof text,
           "the input's KiwiSDR time stamps show %llu gap%s where samples were lost (the first "
           "before sample %llu): %llu zero samples stand for them, their bits are noise",
           (unsigned long long)w->gps_gaps, w->gps_gaps == 1 ? "" : "s",
           (unsigned long long)w->gps_first_gap, (unsigned long long)w->gps_filled);
  cli_json_warning(arr, "input_gaps", text);
  return 1;
}

void cli_json_qpsk_warnings(cJSON *o, unsigned warnings) {
  cJSON *arr = cJSON_AddArrayToObject(o, "warnings");
  for (size_t i = 0; i < CLI_QPSK_N_WARNINGS; i++)
    if (warnings & cli_qpsk_warn_bits[i])
      cli_json_warning(arr, warn_codes[i], prx_qpsk_warning_text(cli_qpsk_warn_bits[i]));
}
