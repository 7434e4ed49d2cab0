/* What a CUDA command's start-up and end cost on this host, each alone, with the CUDA runtime
 * (no polyrx): the driver's init, the primary context, page-locked memory made with cudaHostAlloc
 * and pinned with cudaHostRegister (malloc'd memory, and a mapping of a file in RAM: tmpfs), a
 * first cuFFT plan, copies to the device from page-locked and from pageable memory, and the
 * process's end with the runtime's teardown (return from main) against _exit. One line each:
 * "probe NAME VALUE UNIT". Not built by CMake (bench/bench_commands.sh gpu-ab compiles it):
 *
 *   nvcc -O2 -arch=sm_90 -o probe bench/cuda_startup_probe.cu -lcufft
 *   ./probe [FILE_IN_TMPFS]                 (the file: 1 GiB or more, e.g. the benchmark's input)
 *   ./probe --hold SECONDS                  (holds a context open that long, nothing else)
 */
#include "bench_clock.h"

#include <cuda_runtime.h>
#include <cufft.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void report(const char *name, double v, const char *unit) {
  printf("probe %-34s %10.2f %s\n", name, v, unit);
  fflush(stdout);
}

#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) printf("probe error %s: %s\n", #call, cudaGetErrorString(e_));          \
  } while (0)

/* A child that makes a context, 128 MiB of page-locked memory and 256 MiB on the device, then
 * ends by returning from main (the runtime's teardown; how 0), by _exit (how 1), or by freeing
 * both first and then returning (how 2): the time from its last word to its reaping, the frees
 * included. */
static double exit_cost(int how) {
  int fd[2];
  if (pipe(fd)) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    void *p = NULL;
    cudaFree(0);
    cudaHostAlloc(&p, (size_t)128 << 20, cudaHostAllocPortable);
    void *d = NULL;
    cudaMalloc(&d, (size_t)256 << 20);
    char c = 1;
    if (write(fd[1], &c, 1) != 1) _exit(3);
    if (how == 1) _exit(0);
    if (how == 2) {
      cudaFreeHost(p);
      cudaFree(d);
    }
    exit(0); /* atexit handlers: the runtime's teardown */
  }
  close(fd[1]);
  char c;
  if (read(fd[0], &c, 1) != 1) return -1;
  double t0 = bench_now();
  int status;
  waitpid(pid, &status, 0);
  close(fd[0]);
  return (bench_now() - t0) * 1e3;
}

int main(int argc, char **argv) {
  /* --hold SECONDS: only a context held open meanwhile (the "held" case of bench_commands.sh's
   * gpustart: the driver's state kept alive by another process) */
  if (argc > 2 && !strcmp(argv[1], "--hold")) {
    CK(cudaFree(0));
    printf("probe holder ready\n");
    fflush(stdout);
    sleep((unsigned)atoi(argv[2]));
    return 0;
  }
  /* the process's end first, in children, before this process has a context of its own */
  report("exit_teardown_return", exit_cost(0), "ms");
  report("exit_teardown__exit", exit_cost(1), "ms");
  report("exit_teardown_freed_first", exit_cost(2), "ms");

  double t0 = bench_now();
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  report("cuInit_device_count", (bench_now() - t0) * 1e3, "ms");
  if (n < 1) return 1;
  t0 = bench_now();
  CK(cudaFree(0));
  report("primary_context", (bench_now() - t0) * 1e3, "ms");

  const size_t sizes[] = {(size_t)4 << 20, (size_t)32 << 20, (size_t)128 << 20};
  for (int i = 0; i < 3; i++) {
    char name[64];
    void *p = NULL;
    t0 = bench_now();
    CK(cudaHostAlloc(&p, sizes[i], cudaHostAllocPortable));
    snprintf(name, sizeof name, "hostalloc_%zuMiB", sizes[i] >> 20);
    report(name, (bench_now() - t0) * 1e3, "ms");
    t0 = bench_now();
    CK(cudaFreeHost(p));
    snprintf(name, sizeof name, "freehost_%zuMiB", sizes[i] >> 20);
    report(name, (bench_now() - t0) * 1e3, "ms");
  }
  {
    size_t b = (size_t)128 << 20;
    char *p = (char *)aligned_alloc(4096, b);
    memset(p, 1, b);
    t0 = bench_now();
    CK(cudaHostRegister(p, b, cudaHostRegisterPortable));
    report("hostregister_malloc_128MiB", (bench_now() - t0) * 1e3, "ms");
    t0 = bench_now();
    CK(cudaHostUnregister(p));
    report("hostunregister_128MiB", (bench_now() - t0) * 1e3, "ms");
    free(p);
  }
  /* copies: 1 GiB to the device from page-locked (128 MiB x 8) and pageable memory */
  {
    size_t b = (size_t)128 << 20;
    void *d = NULL, *h = NULL;
    CK(cudaMalloc(&d, b));
    CK(cudaHostAlloc(&h, b, cudaHostAllocPortable));
    memset(h, 3, b);
    CK(cudaMemcpy(d, h, b, cudaMemcpyHostToDevice));
    t0 = bench_now();
    for (int i = 0; i < 8; i++) CK(cudaMemcpy(d, h, b, cudaMemcpyHostToDevice));
    report("h2d_pinned", 8.0 * b / (bench_now() - t0) / 1e9, "GB/s");
    t0 = bench_now();
    for (int i = 0; i < 8; i++) CK(cudaMemcpy(h, d, b, cudaMemcpyDeviceToHost));
    report("d2h_pinned", 8.0 * b / (bench_now() - t0) / 1e9, "GB/s");
    char *pg = (char *)malloc(b);
    memset(pg, 3, b);
    CK(cudaMemcpy(d, pg, b, cudaMemcpyHostToDevice));
    t0 = bench_now();
    for (int i = 0; i < 8; i++) CK(cudaMemcpy(d, pg, b, cudaMemcpyHostToDevice));
    report("h2d_pageable", 8.0 * b / (bench_now() - t0) / 1e9, "GB/s");
    free(pg);
    CK(cudaFreeHost(h));
    CK(cudaFree(d));
  }
  /* a file in RAM mapped and pinned in place (no read copy): possible on tmpfs? how fast? */
  if (argc > 1) {
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size >= (1 << 30)) {
      size_t b = (size_t)1 << 30;
      t0 = bench_now();
      void *m = mmap(NULL, b, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
      report("mmap_populate_1GiB", (bench_now() - t0) * 1e3, "ms");
      if (m != MAP_FAILED) {
        t0 = bench_now();
        cudaError_t e = cudaHostRegister(m, b, cudaHostRegisterPortable | cudaHostRegisterReadOnly);
        report("hostregister_file_map_1GiB", (bench_now() - t0) * 1e3, "ms");
        if (e != cudaSuccess) {
          printf("probe hostregister_file_map: %s\n", cudaGetErrorString(e));
          cudaGetLastError();
        } else {
          void *d = NULL;
          CK(cudaMalloc(&d, b));
          t0 = bench_now();
          CK(cudaMemcpy(d, m, b, cudaMemcpyHostToDevice));
          report("h2d_from_pinned_file_map", b / (bench_now() - t0) / 1e9, "GB/s");
          CK(cudaFree(d));
          t0 = bench_now();
          CK(cudaHostUnregister(m));
          report("hostunregister_file_map_1GiB", (bench_now() - t0) * 1e3, "ms");
        }
        munmap(m, b);
      }
      /* the same mapping pinned in 64 MiB pieces, as the input map does (one call a piece) */
      m = mmap(NULL, b, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
      if (m != MAP_FAILED) {
        const size_t piece = (size_t)64 << 20;
        double most = 0;
        t0 = bench_now();
        for (size_t off = 0; off < b; off += piece) {
          double t1 = bench_now();
          cudaError_t e = cudaHostRegister((char *)m + off, piece,
                                           cudaHostRegisterPortable | cudaHostRegisterReadOnly);
          if (e != cudaSuccess) {
            printf("probe hostregister_pieces: %s\n", cudaGetErrorString(e));
            cudaGetLastError();
            break;
          }
          if (bench_now() - t1 > most) most = bench_now() - t1;
        }
        report("hostregister_file_map_64MiB_pieces", (bench_now() - t0) * 1e3, "ms");
        report("hostregister_file_map_largest_piece", most * 1e3, "ms");
        for (size_t off = 0; off < b; off += piece) cudaHostUnregister((char *)m + off);
        cudaGetLastError();
        munmap(m, b);
      }
      close(fd);
    }
  }
  cufftHandle plan;
  t0 = bench_now();
  cufftResult r = cufftPlan1d(&plan, 1024, CUFFT_C2C, 64);
  report("first_cufft_plan", (bench_now() - t0) * 1e3, "ms");
  if (r == CUFFT_SUCCESS) cufftDestroy(plan);
  t0 = bench_now();
  cudaDeviceReset();
  report("device_reset", (bench_now() - t0) * 1e3, "ms");
  return 0;
}
