/* Pieces shared by the commands' JSON reports (cJSON): numbers that may not be finite, and the
 * demodulator's summary warnings. */
#include "cli.h"

#include <cjson/cJSON.h>
#include <math.h>

void cli_json_num(cJSON *o, const char *k, double v) {
  if (isfinite(v))
    cJSON_AddNumberToObject(o, k, v);
  else
    cJSON_AddNullToObject(o, k);
}

const unsigned cli_qpsk_warn_bits[CLI_QPSK_N_WARNINGS] = {
    PRX_QPSK_WARN_NO_SIGNAL,   PRX_QPSK_WARN_WEAK_SIGNAL, PRX_QPSK_WARN_CFO_ALIAS,
    PRX_QPSK_WARN_SYMBOL_RATE, PRX_QPSK_WARN_CLOCK_RANGE, PRX_QPSK_WARN_TIMING,
    PRX_QPSK_WARN_NONFINITE};
/* the reports' codes of cli_qpsk_warn_bits, in its order */
static const char *const warn_codes[CLI_QPSK_N_WARNINGS] = {
    "no_signal",   "weak_signal",  "cfo_alias", "symbol_rate",
    "clock_range", "timing_jumps", "nonfinite"};

void cli_json_qpsk_warnings(cJSON *o, unsigned warnings) {
  cJSON *arr = cJSON_AddArrayToObject(o, "warnings");
  for (size_t i = 0; i < CLI_QPSK_N_WARNINGS; i++)
    if (warnings & cli_qpsk_warn_bits[i]) {
      cJSON *x = cJSON_CreateObject();
      cJSON_AddStringToObject(x, "code", warn_codes[i]);
      cJSON_AddStringToObject(x, "text", prx_qpsk_warning_text(cli_qpsk_warn_bits[i]));
      cJSON_AddItemToArray(arr, x);
    }
}
