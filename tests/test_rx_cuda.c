/* The receiver with the CUDA backend (the channelizer on the GPU, the demodulators on the CPU):
 * every carrier of a generated capture with exactly the symbols sent, the strong ones without
 * error, and the same bits as the CPU backend with LLRs within the backends' float agreement;
 * independent of chunking. Exits 77 where no GPU is usable. */
#include "test_rx_scene.h"

#define FS 409600.0
#define KCH 64
#define SP (FS / KCH)

int main(void) {
  if (!prx_cuda_available()) {
    printf("test_rx_cuda: no usable CUDA device, skipped\n");
    return TEST_SKIP;
  }
  scene s;
  memset(&s, 0, sizeof s);
  s.fs = FS;
  s.K = KCH;
  scene_add(&s, 5 * SP, 0, 30, 0, 0.3, 0.35, 0);
  scene_add(&s, 10.25 * SP, 0.1 * 2400, 30, 300, 0.6, 0.35, 0);
  scene_add(&s, -7.5 * SP, -0.12 * 2400, 30, -500, 0.1, 0.35, 0);
  scene_add(&s, FS / 2 - 0.3 * SP, 50, 30, 100, 0.9, 0.35, 0);
  scene_add(&s, -FS / 2 + 0.45 * SP, -80, 30, 0, 0.5, 0.35, 1);
  scene_add(&s, 20.3 * SP, 0, 30, 0, 0.2, 0.35, 0);
  scene_add(&s, 19.7 * SP, 0, 30, -200, 0.4, 0.2, 0);
  scene_add(&s, -15.5 * SP, -0.1 * 2400, 9, 200, 0.7, 0.35, 0);
  CHECK(scene_make(&s, (size_t)1 << 21, 3) == 0, "scene");
  collect cpu, gpu, chunked;
  memset(&cpu, 0, sizeof cpu);
  memset(&gpu, 0, sizeof gpu);
  memset(&chunked, 0, sizeof chunked);
  prx_rx_config rc = scene_rx_config(&s, &cpu);
  rc.llrs = 1;
  CHECK(scene_receive(&s, &rc, 0, NULL) == 0, "CPU");
  rc = scene_rx_config(&s, &gpu);
  rc.llrs = 1;
  rc.backend = PRX_BACKEND_CUDA;
  prx_rx *rx = NULL;
  CHECK(scene_receive(&s, &rc, 0, &rx) == 0, "CUDA");
  CHECK(rx && prx_rx_backend(rx) == PRX_BACKEND_CUDA, "backend %s",
        rx ? prx_backend_name(prx_rx_backend(rx)) : "none");
  prx_rx_destroy(rx);
  rc = scene_rx_config(&s, &chunked);
  rc.backend = PRX_BACKEND_CUDA;
  rc.block_samples = 50000;
  CHECK(scene_receive(&s, &rc, 123457, NULL) == 0, "CUDA, chunked");
  for (size_t c = 0; c < s.n_car; c++) {
    long e = scene_errors(&s, &gpu, c);
    CHECK(e >= 0, "carrier %zu: %zu bits out, %zu sent", c, gpu.nbits[c], s.nref[c]);
    if (s.sim[c].power_db == 0) CHECK(e == 0, "carrier %zu: %ld errors", c, e);
    CHECK(gpu.nbits[c] == cpu.nbits[c] && !memcmp(gpu.bits[c], cpu.bits[c], cpu.nbits[c]),
          "carrier %zu: CUDA bits differ from the CPU's", c);
    CHECK(chunked.nbits[c] == cpu.nbits[c] && !memcmp(chunked.bits[c], cpu.bits[c], cpu.nbits[c]),
          "carrier %zu: chunked CUDA bits differ from the CPU's", c);
    double worst = gpu.nllr[c] == cpu.nllr[c] ? 0 : INFINITY;
    for (size_t i = 0; worst < INFINITY && i < cpu.nllr[c]; i++)
      worst =
          fmax(worst, fabs((double)gpu.llrs[c][i] - cpu.llrs[c][i]) / (1 + fabs(cpu.llrs[c][i])));
    CHECK(worst < 1e-3, "carrier %zu: CUDA LLRs differ from the CPU's by %.3g", c, worst);
    printf("carrier %zu: %zu bits, %ld errors, LLRs within %.2g of the CPU's\n", c, gpu.nbits[c], e,
           worst);
  }
  collect_free(&cpu);
  collect_free(&gpu);
  collect_free(&chunked);
  scene_free(&s);
  return test_finish("test_rx_cuda");
}
