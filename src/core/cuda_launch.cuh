/* Kernel launches with Hopper's programmatic dependent launch (PDL), for the CUDA module's kernels
 * that follow one another on a stream (the demodulator bank's span: stage kernels and serial
 * passes).
 *
 * A kernel launched with prx_launch(..., pdl = true) right after another kernel on the same stream
 * may start before that one ends: its thread blocks become resident while the kernel before runs
 * its last wave, and wait in prx_pdl_enter, which returns once every kernel before it on the
 * stream has completed and its writes are visible (griddepcontrol.wait), then allows the next
 * kernel's launch (griddepcontrol.launch_dependents). So a kernel calls prx_pdl_enter before its
 * first global load of anything a kernel or copy before it may write and before its first global
 * store, in every thread block (before any early return: a kernel whose blocks all returned
 * without waiting would complete before the one it follows, and the kernel after it would no
 * longer wait for that one). Only launch-time arguments, index math and shared memory set-up come
 * before it. Without the attribute, or below compute capability 9.0, prx_pdl_enter does nothing
 * and the launch is an ordinary stream-ordered one. */
#ifndef PRX_CUDA_LAUNCH_CUH
#define PRX_CUDA_LAUNCH_CUH

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>
#include <utility>

/* Whether launches on the current device take PDL: where the environment sets POLYRX_CUDA_PDL=1
 * (read once per process) and the device has compute capability 9.0 or later. Off by default: on
 * the H200 the bank's span was no faster with it (its launch gaps are ~20 us a 1.1 ms call, and
 * half the span's launches stay ordinary ones; bench/GPU_NOTES.md, eleventh session). */
static inline bool prx_pdl_on(void) {
  static const bool env = [] {
    const char *e = getenv("POLYRX_CUDA_PDL");
    return e && !strcmp(e, "1");
  }();
  int dev = 0, major = 0;
  if (!env || cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess)
    return false;
  return major >= 9;
}

/* Launches kernel k over grid g of blocks b with smem bytes of dynamic shared memory on stream s;
 * with pdl, as a programmatic dependent of the kernel before it on s (k calls prx_pdl_enter). The
 * launch's error, else the error an earlier asynchronous call left (cleared, as
 * cudaGetLastError after a <<<>>> launch). */
template <typename... KArgs, typename... Args>
static inline cudaError_t prx_launch(void (*k)(KArgs...), dim3 g, dim3 b, size_t smem,
                                     cudaStream_t s, bool pdl, Args &&...args) {
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = g;
  cfg.blockDim = b;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cfg.attrs = at;
  cfg.numAttrs = pdl ? 1 : 0;
  const cudaError_t e = cudaLaunchKernelEx(&cfg, k, std::forward<Args>(args)...);
  const cudaError_t last = cudaGetLastError(); /* (taken, as after a <<<>>> launch) */
  return e != cudaSuccess ? e : last;
}

/* A kernel's wait for the kernels before it on the stream (their writes visible), then its
 * dependents' launch allowed: they may become resident as this kernel's blocks finish, and wait
 * in turn. Called by every thread block, before its first dependent load or any store. */
__device__ __forceinline__ void prx_pdl_enter(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

#endif
