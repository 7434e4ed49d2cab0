/* polyrx test-signal generator: QPSK carriers with RRC shaping and impairments, summed into
 * one complex baseband stream with AWGN. Streaming: prx_sim_generate() continues where the
 * last call stopped, so seconds of a wideband signal are made block by block. */
#ifndef POLYRX_SIM_H
#define POLYRX_SIM_H

#include "polyrx/core.h"
#include "polyrx/modem.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  double freq;           /* carrier frequency offset from the stream's centre, Hz (the CFO) */
  double symbol_rate;    /* Rs in Hz; sample_rate / Rs >= 2, need not be an integer */
  double rolloff;        /* RRC roll-off (default 0.35) */
  unsigned span;         /* RRC span in symbols (default 12) */
  double power_db;       /* carrier power in dB relative to carrier 0 (carrier 0: 0 dB = power 1) */
  double phase;          /* carrier phase at sample 0, radians */
  double timing_offset;  /* symbol 0 is centred at this fraction of a symbol, in [0, 1) */
  double clock_ppm;      /* symbol-clock offset: the true symbol rate is Rs (1 + ppm 1e-6) */
  int differential;      /* 1: differential encoding of the data symbols (polyrx/modem.h) */
  unsigned pilot_period; /* 0: no pilots; else a frame of pilot_period symbols starts with */
  unsigned pilot_len;    /*   pilot_len pilot symbols (prx_qpsk_pilot) */
  uint64_t seed;         /* seed of the data bits (0: derived from the carrier's index) */
} prx_sim_carrier;

prx_sim_carrier prx_sim_carrier_default(void);

typedef struct {
  double sample_rate;              /* Hz */
  const prx_sim_carrier *carriers; /* copied by create */
  size_t n_carriers;               /* 1 or more */
  int noise;                       /* 0: no noise; 1: AWGN set by esn0_db */
  double esn0_db;                  /* Es/N0 of carrier 0 (noise density N0 follows from it;
                                      other carriers have Es/N0 shifted by their power_db and
                                      10 log10(Rs0 / Rs)) */
  uint64_t noise_seed;             /* seed of the noise (default 1) */
  int threads;                     /* worker threads, 0: all cores */
} prx_sim_config;

prx_sim_config prx_sim_config_default(void);
/* Eb/N0 to Es/N0 for QPSK (2 bits per symbol): + 10 log10(2) dB. */
double prx_sim_ebn0_to_esn0(double ebn0_db);

typedef struct prx_sim prx_sim;
prx_status prx_sim_create(const prx_sim_config *cfg, prx_sim **out);
void prx_sim_destroy(prx_sim *s);
/* Writes the next n samples of the stream. */
prx_status prx_sim_generate(prx_sim *s, prx_cf32 *out, size_t n);
/* Data bits (unpacked, one 0/1 byte per bit, b0 then b1 of each data symbol) of carrier c
 * whose symbols have been started so far and not yet taken: copies up to max, returns count in
 * *n. Pilot symbols carry no data and give no bits. */
prx_status prx_sim_take_bits(prx_sim *s, size_t c, uint8_t *bits, size_t max, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
