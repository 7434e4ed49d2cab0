/* The receiver across several workers on the GPU: device 0 listed twice (two workers on one
 * GPU, so the stitching runs wherever one GPU is), against the single receiver on the CPU: every
 * carrier's symbol count equal, the bits identical, and the bits sent received without error.
 * The capture (9.2 M samples, 22 s) is longer than a worker's lead-in (five CFO spans of 4096
 * symbols and a grid step, 5.8 M samples) plus a segment, so the workers of the last segments
 * start their streams inside it, on the single run's grid, and their seams are real ones (the
 * earlier workers start at the capture's start). Blocks of 512 symbols: the demodulator's timing
 * locks, so the workers' bits are the single run's. Skips (77) without a usable CUDA device. */
#include "test_rx_scene.h"

#include "polyrx/rx_multi.h"

#define FS 409600.0 /* K = 64 channels of 6400 Hz (as test_rx_cuda): 2400 Bd */
#define KCH 64
#define SP (FS / KCH)

int main(void) {
  if (!prx_cuda_available()) {
    printf("test_rx_multi_cuda: no usable CUDA device, skipped\n");
    return TEST_SKIP;
  }
  scene s = {0};
  s.fs = FS;
  s.K = KCH;
  scene_add(&s, 5 * SP, 0.1 * 2400, 30, 1000, 0.3, 0.35, 0);
  scene_add(&s, -7.5 * SP, -0.12 * 2400, 25, -1000, 0.1, 0.35, 0);
  scene_add(&s, 10.25 * SP, 0.05 * 2400, 25, 700, 0.6, 0.35, 1);
  CHECK(scene_make(&s, 9200000, 23) == 0, "scene");
  collect one = {0}, k = {0};
  prx_rx_config rc = scene_rx_config(&s, &one);
  rc.block_symbols = 512;
  rc.cfo_span_symbols = 4096;
  CHECK(scene_receive(&s, &rc, 0, NULL) == 0, "single receiver (CPU)");
  prx_rx_multi_config mc = prx_rx_multi_config_default();
  mc.rx = rc;
  mc.rx.user = &k;
  k.n_car = s.n_car;
  mc.rx.backend = PRX_BACKEND_CUDA;
  int devices[2] = {0, 0};
  mc.devices = devices;
  mc.n_devices = 2;
  mc.segment_samples = 2200000;
  const size_t seams_want = (s.n + mc.segment_samples - 1) / mc.segment_samples - 1;
  prx_rx_multi *m = NULL;
  CHECK_OK(prx_rx_multi_create(&mc, &m));
  if (m) {
    size_t seg = 0, lead = 0, tail = 0;
    prx_rx_multi_get_layout(m, &seg, &lead, &tail);
    /* the last segment's worker starts at least a grid step into the capture */
    CHECK(seg == mc.segment_samples && seams_want * seg >= lead + KCH,
          "layout: segment %zu, lead-in %zu: no worker starts inside the capture", seg, lead);
    printf("segments of %zu samples, lead-in %zu, run-out %zu, %zu seams\n", seg, lead, tail,
           seams_want);
    CHECK_OK(prx_rx_multi_execute(m, s.x, s.n));
    CHECK_OK(prx_rx_multi_flush(m));
    CHECK(prx_rx_backend(prx_rx_multi_worker(m, 1)) == PRX_BACKEND_CUDA, "worker backend");
    for (size_t c = 0; c < s.n_car; c++) {
      uint64_t seams = 0, unmatched = 0;
      prx_rx_multi_seams(m, c, &seams, &unmatched);
      CHECK(seams == seams_want && unmatched == 0,
            "carrier %zu: %llu seams (want %zu), %llu unmatched", c, (unsigned long long)seams,
            seams_want, (unsigned long long)unmatched);
    }
    prx_rx_multi_destroy(m);
  }
  CHECK(!k.bad, "output for a carrier that does not exist");
  for (size_t c = 0; c < s.n_car; c++) {
    CHECK(k.nbits[c] == one.nbits[c], "carrier %zu: %zu bits, single CPU run %zu", c, k.nbits[c],
          one.nbits[c]);
    size_t d = 0;
    for (size_t i = 0; i < k.nbits[c] && k.nbits[c] == one.nbits[c]; i++)
      d += k.bits[c][i] != one.bits[c][i];
    CHECK(d == 0, "carrier %zu: %zu bits differ from the single CPU run", c, d);
    long e = scene_errors(&s, &k, c);
    CHECK(e == 0, "carrier %zu: %ld errors against the bits sent (-1: count)", c, e);
    printf("carrier %zu: %zu bits, %zu differ\n", c, k.nbits[c], d);
  }
  collect_free(&one);
  collect_free(&k);
  scene_free(&s);
  return test_finish("test_rx_multi_cuda");
}
