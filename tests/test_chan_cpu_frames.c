/* The CPU channelizer's frames layout (prx_chan_config.layout = PRX_CHAN_FRAMES): every output
 * lands in its frame, out[j * pitch + s], with exactly the bits the rows layout gives at
 * out[s * stride + j], and nothing is written between or after the frames. Fresh random input
 * (fixed seeds), calls of uneven length (tails shorter than an FFT batch, a call of fewer samples
 * than D) and the flush; all channels (the transform straight into the frames when they are
 * aligned and K a multiple of 8, the copy otherwise), runs and odd subsets out of order, the few
 * channels of the direct DFT; frame pitches equal to and larger than the selection, frames on a
 * 64-byte boundary and 8 bytes past one; 1 and 3 workers; stream_out on and off; K = 1024 at D =
 * 512 (the command's), K = 64 at D = 32 and 64, K = 63 at D = 63 (odd). A few outputs are also
 * set against the definition's direct sum in double (polyrx/chan.h), written out here. And the
 * configuration's checks: a pitch under the selection is PRX_ERR_CAPACITY, an unknown layout
 * PRX_ERR_INVALID. */
#include "polyrx.h"
#include "testutil.h"

#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 12345.0f

typedef struct {
  unsigned K, D;
  const unsigned *sel; /* NULL: all K */
  size_t n_sel;
  int threads, stream;
  size_t extra; /* frame pitch = selection + extra */
  size_t off;   /* the output's first sample this many samples past a 64-byte boundary */
} frame_case;

/* Channelizes x (n samples) in calls of uneven length and a flush, into rows (frames = 0: out[s
 * * stride + j]) or frames (out[j * stride + s]); returns the outputs per channel. */
static size_t run(const frame_case *fc, const prx_cf32 *x, size_t n, int frames, prx_cf32 *out,
                  size_t stride, prx_chan **keep) {
  prx_chan_config cfg = prx_chan_config_default();
  cfg.channels = fc->K;
  cfg.decimation = fc->D;
  cfg.select = fc->sel;
  cfg.n_select = fc->sel ? fc->n_sel : 0;
  cfg.threads = fc->threads;
  cfg.backend = PRX_BACKEND_CPU;
  cfg.stream_out = fc->stream;
  cfg.layout = frames ? PRX_CHAN_FRAMES : PRX_CHAN_ROWS;
  prx_chan *c = NULL;
  CHECK_OK(prx_chan_create(&cfg, &c));
  if (!c) return 0;
  /* a batch is 32 outputs at K = 1024 and 64 at K = 64 (prx_chan_cpu_batch_outputs): calls of
   * several batches and a remainder, of less than a batch, of less than D samples */
  const size_t chunk[5] = {5000, 7 * (size_t)fc->D + 3, 2048, (size_t)fc->D / 2 + 1, 40000};
  size_t off = 0, got = 0, k;
  for (int i = 0; off < n; i++) {
    size_t m = n - off < chunk[i % 5] ? n - off : chunk[i % 5];
    CHECK_OK(prx_chan_execute(c, x + off, m, out + (frames ? got * stride : got), stride, &k));
    off += m;
    got += k;
  }
  CHECK_OK(prx_chan_flush(c, out + (frames ? got * stride : got), stride, &k));
  got += k;
  if (keep)
    *keep = c;
  else
    prx_chan_destroy(c);
  return got;
}

/* y_k[j] of the definition in polyrx/chan.h, in double */
static double complex reference(const prx_cf32 *x, size_t n, const float *h, size_t M, unsigned K,
                                unsigned D, unsigned k, size_t j) {
  double complex y = 0;
  for (size_t m = 0; m < M; m++) {
    long long t = (long long)(j * D) - (long long)m;
    if (t < 0 || (size_t)t >= n) continue;
    double ph = -2 * M_PI * (double)(((long long)k * t) % K) / K;
    y += h[m] * (x[t].re + I * x[t].im) * cexp(I * ph);
  }
  return y;
}

static void check(test_rng *rng, const frame_case *fc, size_t n) {
  size_t ns = fc->sel ? fc->n_sel : fc->K, cap = n / fc->D + 64, pitch = ns + fc->extra;
  prx_cf32 *x = malloc(n * sizeof *x);
  test_fill_cf32(rng, x, n, 1.0);
  prx_cf32 *rows = malloc(ns * cap * sizeof *rows);
  size_t len = fc->off + cap * pitch + 16;
  prx_cf32 *buf = aligned_alloc(64, (len * sizeof *buf + 63) & ~(size_t)63);
  for (size_t i = 0; i < len; i++) buf[i] = (prx_cf32){GUARD, -GUARD};
  prx_chan *c = NULL;
  size_t n_rows = run(fc, x, n, 0, rows, cap, NULL);
  size_t n_frames = run(fc, x, n, 1, buf + fc->off, pitch, &c);
  CHECK(n_rows == n_frames, "outputs %zu (rows) against %zu (frames)", n_rows, n_frames);
  size_t bad = 0, guard_bad = 0, first = 0;
  for (size_t j = 0; j < n_frames && j < n_rows; j++)
    for (size_t s = 0; s < ns; s++)
      if (memcmp(&buf[fc->off + j * pitch + s], &rows[s * cap + j], sizeof(prx_cf32)) && !bad++)
        first = j * ns + s;
  for (size_t i = 0; i < len; i++) {
    int inside = i >= fc->off && (i - fc->off) / pitch < n_frames && (i - fc->off) % pitch < ns;
    if (!inside && (buf[i].re != GUARD || buf[i].im != -GUARD)) guard_bad++;
  }
  CHECK(!bad && !guard_bad,
        "K %u D %u channels %zu threads %d stream %d pitch %zu offset %zu: %zu outputs differ "
        "from the rows layout's (the first: output %zu channel %zu), %zu samples written outside "
        "the frames",
        fc->K, fc->D, ns, fc->threads, fc->stream, pitch, fc->off, bad, first / ns, first % ns,
        guard_bad);
  /* a few outputs against the definition (the flush's zeros are x = 0 past n) */
  size_t M;
  const float *h = c ? prx_chan_taps(c, &M) : NULL;
  double worst = 0;
  for (int t = 0; h && t < 6; t++) {
    size_t j = (size_t)(test_rng_u64(rng) % n_frames), s = (size_t)(test_rng_u64(rng) % ns);
    unsigned k = fc->sel ? fc->sel[s] : (unsigned)s;
    double complex want = reference(x, n, h, M, fc->K, fc->D, k, j);
    prx_cf32 got = buf[fc->off + j * pitch + s];
    double err = cabs(got.re + I * got.im - want), scale = cabs(want) + 1e-3;
    if (err / scale > worst) worst = err / scale;
  }
  CHECK(worst < 1e-4, "K %u D %u: relative error %.3g against the direct sum in double", fc->K,
        fc->D, worst);
  prx_chan_destroy(c);
  free(x);
  free(rows);
  free(buf);
}

static void check_config(void) {
  prx_chan_config cfg = prx_chan_config_default();
  cfg.channels = 64;
  cfg.backend = PRX_BACKEND_CPU;
  cfg.threads = 1;
  cfg.layout = (prx_chan_layout)7;
  prx_chan *c = NULL;
  CHECK(prx_chan_create(&cfg, &c) == PRX_ERR_INVALID && !c, "layout 7 accepted");
  cfg.layout = PRX_CHAN_FRAMES;
  CHECK_OK(prx_chan_create(&cfg, &c));
  if (!c) return;
  prx_cf32 x[256] = {{0}}, y[64 * 16];
  size_t k = 99;
  CHECK(prx_chan_execute(c, x, 256, y, 63, &k) == PRX_ERR_CAPACITY && k == 0,
        "a frame pitch of 63 for 64 channels accepted");
  CHECK_OK(prx_chan_execute(c, x, 256, y, 64, &k));
  CHECK(k == 8, "256 samples at D = 32 gave %zu outputs", k);
  prx_chan_destroy(c);
}

int main(void) {
  test_rng rng;
  test_rng_seed(&rng, 0xf4a3e5u);
  unsigned scattered[13] = {5, 9, 2, 13, 14, 15, 40, 63, 0, 1, 2, 33, 7};
  unsigned runs[12] = {8, 9, 10, 11, 20, 21, 22, 30, 31, 32, 33, 62};
  unsigned few[3] = {3, 60, 17}; /* the direct DFT's */
  unsigned odd[9] = {62, 0, 31, 1, 30, 2, 29, 3, 28};
  unsigned wide[37]; /* K = 1024: a range across the middle and a few past it, out of order */
  for (unsigned i = 0; i < 33; i++) wide[i] = 480 + i;
  wide[33] = 1023, wide[34] = 0, wide[35] = 700, wide[36] = 701;
  const struct {
    unsigned K, D;
    const unsigned *sel;
    size_t n_sel, n;
  } shapes[] = {
      {1024, 512, NULL, 0, 150000},   {1024, 512, wide, 37, 100000}, {64, 32, NULL, 0, 40000},
      {64, 32, scattered, 13, 40000}, {64, 32, runs, 12, 40000},     {64, 32, few, 3, 20000},
      {64, 64, NULL, 0, 40000},       {64, 64, odd, 9, 40000},       {63, 63, NULL, 0, 30000},
      {63, 63, odd, 9, 30000},
  };
  for (size_t q = 0; q < sizeof shapes / sizeof *shapes; q++)
    for (int threads = 1; threads <= 3; threads += 2)
      for (int stream = 0; stream < 2; stream++)
        for (size_t extra = 0; extra < 2; extra++)
          for (size_t off = 0; off < 2; off++) {
            if (shapes[q].K == 1024 && threads == 3 && (extra || off)) continue; /* time */
            frame_case fc = {shapes[q].K, shapes[q].D, shapes[q].sel, shapes[q].n_sel,
                             threads,     stream,      extra * 5,     off};
            check(&rng, &fc, shapes[q].n);
          }
  check_config();
  return test_finish("test_chan_cpu_frames");
}
