/* The polyphase FIR's design (see qpsk_fir.h): its phases and taps, and the tap tables shared by
 * every filter of one design. Apart from qpsk_fir.c, which is built once per instruction set
 * (POLYRX_ISA_SOURCES): the process keeps one list of tables, not one per build of the kernels. */
#include "qpsk_fir.h"

#include "../core/internal.h"
#include "../dsp/rrc.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Smallest Q dividing 240 such that r Q is an integer (exact positions), 0 if none. */
static unsigned exact_phases(double r) {
  static const unsigned cand[] = {1,  2,  3,  4,  5,  6,  8,  10, 12,  15,
                                  16, 20, 24, 30, 40, 48, 60, 80, 120, 240};
  for (size_t k = 0; k < sizeof cand / sizeof cand[0]; k++) {
    double rq = r * cand[k];
    if (fabs(rq - nearbyint(rq)) < 1e-9 * (1 + rq)) return cand[k];
  }
  return 0;
}

/* The tap tables designed in this process, shared: a bank's C channels (a receiver's every
 * carrier of one rate) are C demodulators of one configuration, each of which would design the
 * same tables (the matched filter's at sps 16/3: 256 phases x 68 taps, ~17000 RRC values with
 * their sines and cosines: `polyrx rx` with 1024 carriers made its receiver in 0.44 s, designing
 * and faulting in 142 MB of identical tables; 0.05 s with them shared). The first design of a set
 * of parameters is kept with a count of its users and freed with the last; the values are those
 * the design gives, whoever made it. A qpsk_fir is therefore never copied by value (each copy
 * would be freed). */
typedef struct fir_table {
  struct fir_table *next;
  double sps, beta, span_sym, r, scale;
  size_t users;
  float *bank;
} fir_table;
static fir_table *fir_tables;
static pthread_mutex_t fir_tables_lock = PTHREAD_MUTEX_INITIALIZER;

/* the table of f's shape for these parameters, designed here where none is kept; NULL: no
 * memory. Called with fir_tables_lock held. */
static const float *fir_table_take(const qpsk_fir *f, double sps, double beta, double span_sym,
                                   double r, double scale) {
  for (fir_table *t = fir_tables; t; t = t->next)
    if (t->sps == sps && t->beta == beta && t->span_sym == span_sym && t->r == r &&
        t->scale == scale) {
      t->users++;
      return t->bank;
    }
  fir_table *t = calloc(1, sizeof *t);
  float *bank = prx_alloc((size_t)f->Q * 2 * f->ntaps, sizeof(float));
  if (!t || !bank) {
    free(t);
    prx_free(bank);
    return NULL;
  }
  const double H = span_sym * sps / 2; /* half-length in input samples */
  for (unsigned j = 0; j < f->Q; j++) {
    float *row = bank + (size_t)j * 2 * f->ntaps;
    for (unsigned l = 0; l < f->ntaps; l++) {
      double d = (double)j / f->Q + f->c - (double)l;
      float v = fabs(d) <= H + 1e-9 ? (float)(scale * prx_rrc_pulse(d / sps, beta)) : 0.0f;
      row[2 * l] = v;
      row[2 * l + 1] = v;
    }
  }
  *t = (fir_table){fir_tables, sps, beta, span_sym, r, scale, 1, bank};
  fir_tables = t;
  return bank;
}

prx_status qpsk_fir_init(qpsk_fir *f, double sps, double beta, double span_sym, double r,
                         double scale) {
  memset(f, 0, sizeof *f);
  f->r = r;
  unsigned q = r > 0 ? exact_phases(r) : 0;
  if (r > 0) {
    f->Q = q ? q : 240;
  } else { /* arbitrary positions: round to 1/(Q sps) <= 1/1024 symbol, i.e. <= 5e-4 T error */
    f->Q = 16;
    while (f->Q < 256 && f->Q * sps < 1024) f->Q *= 2;
  }
  f->rq = q ? (int64_t)llround(r * q) : -1;
  double H = span_sym * sps / 2; /* half-length in input samples */
  f->c = (int)ceil(H);
  unsigned nt = 2u * (unsigned)f->c + 2u;
  f->ntaps = (nt + 3u) & ~3u;
  pthread_mutex_lock(&fir_tables_lock);
  f->bank = fir_table_take(f, sps, beta, span_sym, r, scale);
  pthread_mutex_unlock(&fir_tables_lock);
  if (!f->bank)
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate the matched-filter bank (%u x %u)", f->Q,
                    f->ntaps);
  return PRX_OK;
}

void qpsk_fir_free(qpsk_fir *f) {
  if (!f->bank) return;
  pthread_mutex_lock(&fir_tables_lock);
  for (fir_table **p = &fir_tables; *p; p = &(*p)->next)
    if ((*p)->bank == f->bank) {
      fir_table *t = *p;
      if (--t->users == 0) {
        *p = t->next;
        prx_free(t->bank);
        free(t);
      }
      break;
    }
  pthread_mutex_unlock(&fir_tables_lock);
  f->bank = NULL;
}
