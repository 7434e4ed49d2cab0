/* The demodulator's filter tables shared between filters of one design (qpsk_fir_init): two
 * filters of the same parameters hold one table, filters of other parameters their own; every
 * table holds the RRC's values (against a float64 evaluation here); a table outlives the first of
 * its users and is designed afresh after the last; threads creating the same design at once get
 * one table. Under ASan a table freed while in use shows as a use after free. */
#include "testutil.h"

#include "dsp/rrc.h"
#include "qpsk/qpsk_fir.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

typedef struct {
  double sps, beta, span, r, scale;
} design;

/* the largest difference of f's table from the RRC evaluated here in double, scaled (each value
 * once rounded to float, as the design stores it) */
static double table_error(const qpsk_fir *f, design d) {
  const double H = d.span * d.sps / 2;
  double worst = 0;
  for (unsigned j = 0; j < f->Q; j++)
    for (unsigned l = 0; l < f->ntaps; l++) {
      const double x = (double)j / f->Q + f->c - (double)l;
      const float want =
          fabs(x) <= H + 1e-9 ? (float)(d.scale * prx_rrc_pulse(x / d.sps, d.beta)) : 0.0f;
      const float *row = f->bank + (size_t)j * 2 * f->ntaps;
      worst = fmax(worst, fmax(fabs(row[2 * l] - want), fabs(row[2 * l + 1] - want)));
    }
  return worst;
}

static void sharing(void) {
  const design a = {16.0 / 3.0, 0.35, 12, 0, 1}, b = {16.0 / 3.0, 0.25, 12, 0, 1},
               p = {16.0 / 3.0, 0.35, 4, 4.0 / 3.0, 1};
  qpsk_fir f1, f2, g, h;
  CHECK_OK(qpsk_fir_init(&f1, a.sps, a.beta, a.span, a.r, a.scale));
  CHECK_OK(qpsk_fir_init(&f2, a.sps, a.beta, a.span, a.r, a.scale));
  CHECK_OK(qpsk_fir_init(&g, b.sps, b.beta, b.span, b.r, b.scale));
  CHECK_OK(qpsk_fir_init(&h, p.sps, p.beta, p.span, p.r, p.scale));
  CHECK(f1.bank == f2.bank, "two filters of one design hold two tables");
  CHECK(g.bank != f1.bank && h.bank != f1.bank && h.bank != g.bank,
        "filters of other roll-offs or spans share a table");
  CHECK(table_error(&f1, a) == 0 && table_error(&g, b) == 0 && table_error(&h, p) == 0,
        "a table differs from the RRC: %.3g, %.3g, %.3g", table_error(&f1, a), table_error(&g, b),
        table_error(&h, p));
  /* the first user gone, the second's table still whole; the last gone, a fresh design */
  qpsk_fir_free(&f1);
  CHECK(f1.bank == NULL, "a freed filter keeps its table");
  CHECK(table_error(&f2, a) == 0, "the table changed when its first user was freed");
  qpsk_fir_free(&f2);
  qpsk_fir f3;
  CHECK_OK(qpsk_fir_init(&f3, a.sps, a.beta, a.span, a.r, a.scale));
  CHECK(table_error(&f3, a) == 0, "the design made again differs: %.3g", table_error(&f3, a));
  qpsk_fir_free(&f3);
  qpsk_fir_free(&g);
  qpsk_fir_free(&h);
  qpsk_fir_free(&g); /* twice: nothing */
}

#define THREADS 8
static const design shared_design = {4.0, 0.2, 12, 0, 0.5};
static qpsk_fir made[THREADS];
static void *make_one(void *arg) {
  qpsk_fir *f = arg;
  const design d = shared_design;
  if (qpsk_fir_init(f, d.sps, d.beta, d.span, d.r, d.scale)) f->bank = NULL;
  return NULL;
}

static void threads(void) {
  pthread_t t[THREADS];
  int started[THREADS];
  for (int i = 0; i < THREADS; i++) started[i] = !pthread_create(&t[i], NULL, make_one, &made[i]);
  for (int i = 0; i < THREADS; i++)
    if (started[i]) pthread_join(t[i], NULL);
  for (int i = 0; i < THREADS; i++) {
    CHECK(started[i] && made[i].bank, "thread %d made no filter", i);
    CHECK(!made[i].bank || made[i].bank == made[0].bank, "thread %d holds a table of its own", i);
  }
  if (made[0].bank)
    CHECK(table_error(&made[0], shared_design) == 0, "the threads' table differs from the RRC");
  for (int i = 0; i < THREADS; i++) qpsk_fir_free(&made[i]);
}

int main(void) {
  sharing();
  threads();
  return test_finish("test_qpsk_fir_shared");
}
