/* The CUDA module: libpolyrx_cuda.so, the one shared object that holds every CUDA backend and
 * links the CUDA runtime and cuFFT. libpolyrx itself never links them: it loads the module at
 * run time (cuda_module.c, once per process), so that a build made with CUDA starts on a
 * machine without the CUDA runtime, a driver or a GPU and runs on the CPU there.
 *
 * The module exports one symbol, prx_cuda_module_v1, a prx_cuda_module table: the ABI number,
 * the library version it was built with, an init function and one entry per CUDA backend (a
 * pointer to that backend's own table of operations, declared in the backend's internal
 * header). The library lends the module its services through prx_cuda_host (the module never
 * resolves a symbol of libpolyrx, which works the same when libpolyrx is a static archive
 * inside an executable).
 *
 * A new CUDA backend registers by (1) declaring its table type in its internal header, (2)
 * adding a pointer member for it at the end of prx_cuda_module, (3) pointing that member at
 * its table in cuda_module.cu, (4) bumping PRX_CUDA_MODULE_ABI; the C side reads
 * prx_cuda_module_get()->member. A library service the module needs is a member appended to
 * prx_cuda_host, filled in cuda_module.c and wrapped under its usual name in cuda_module.cu.
 * Shared by C and CUDA C++. Not installed. */
#ifndef PRX_CUDA_MODULE_H
#define PRX_CUDA_MODULE_H

#include "polyrx/core.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* the layout of prx_cuda_module and prx_cuda_host (and of the backend tables they point to) */
#define PRX_CUDA_MODULE_ABI 19
#define PRX_CUDA_MODULE_SYMBOL "prx_cuda_module_v1"
#define PRX_CUDA_MODULE_FILE "libpolyrx_cuda.so"

/* What the library lends the module. */
typedef struct prx_cuda_host {
  /* records message as the calling thread's prx_last_error() and returns status */
  prx_status (*fail)(prx_status status, const char *message);
  size_t (*format_size)(prx_format f); /* prx_format_size */
} prx_cuda_host;

struct prx_chan_cuda;        /* src/chan/chan_cuda.h */
struct prx_qpsk_bank_cuda;   /* src/qpsk/qpsk_bank_internal.h */
struct prx_qpsk_stages_cuda; /* src/qpsk/qpsk_stages_cuda.h */
struct prx_qpsk_serial_cuda; /* src/qpsk/qpsk_serial.h */

typedef struct prx_cuda_module {
  int abi;             /* PRX_CUDA_MODULE_ABI of the module's build */
  const char *version; /* the polyrx version of the module's build ("0.1.0") */
  /* Binds the module to the library's services (called once, before any other entry) and
   * counts the CUDA devices: > 0 the number, 0 none usable (why then says why: no driver,
   * no device, a driver older than the runtime). */
  int (*init)(const prx_cuda_host *host, char *why, size_t why_size);
  const struct prx_chan_cuda *chan;               /* the channelizer (chan_cuda.cu) */
  const struct prx_qpsk_bank_cuda *qpsk_bank;     /* the demodulator bank (qpsk_bank_cuda.cu) */
  const struct prx_qpsk_stages_cuda *qpsk_stages; /* its stage kernels (qpsk_stages_cuda.cu) */
  /* Page-locked host memory (cudaHostAlloc, portable; cudaFreeHost), for buffers the GPU copies
   * by DMA (the host pipeline's, src/pipeline/pipe_alloc.c): NULL when it cannot be had. */
  void *(*host_alloc)(size_t bytes);
  void (*host_free)(void *p);
  /* Ordering between streams (the streams of prx_qpsk_bank_cuda's stream_create): an event on
   * device `device` (no timing), its end (accepts NULL), recorded at the current end of a
   * stream's work, and a stream's later work made to wait for the work before the event's last
   * record (the host does not wait). */
  prx_status (*event_create)(int device, void **event);
  void (*event_destroy)(void *event);
  prx_status (*event_record)(void *event, void *stream);
  prx_status (*stream_wait)(void *stream, void *event);
  /* the demodulator bank's serial passes on the GPU (qpsk_serial_cuda.cu; ABI 7, the phase pass
   * ABI 9) */
  const struct prx_qpsk_serial_cuda *qpsk_serial;
  /* A range of host memory pinned in place for DMA (cudaHostRegister, portable and read-only:
   * the pages of a file mapped read-only, src/pipeline/pipe_map.c; ABI 10): PRX_OK, else an error
   * with the runtime's reason and the range left as it was. host_unregister unpins a range that
   * host_register pinned (p its start). Both wait for the device's context where it is still
   * being made. */
  prx_status (*host_register)(void *p, size_t bytes);
  void (*host_unregister)(void *p);
  /* The devices' compute mode (cudaDevAttrComputeMode: 0 default, 2 prohibited, 3
   * exclusive-process): 0 where every device is in the default mode, else the first other mode
   * found; -1 where it cannot be read. ABI 16 (the commands' detached end: cli/exit_detach.c). */
  int (*compute_mode)(void);
} prx_cuda_module;

/* The module, loaded and initialised on the first call (thread-safe), or NULL where it cannot
 * be used (then prx_cuda_module_why() says why). Search order: $POLYRX_CUDA_MODULE when set
 * (that file only; set to a path that does not exist, it turns the CUDA backend off), else
 * libpolyrx_cuda.so in the directory of libpolyrx itself (of the executable, where libpolyrx is
 * linked statically), then in ../<libdir> from there, then in the install libdir. */
const prx_cuda_module *prx_cuda_module_get(void);
/* Why prx_cuda_module_get() returns NULL ("" when it does not). */
const char *prx_cuda_module_why(void);
/* The backend a request resolves to, for every object with a CUDA backend: CPU stays on the
 * CPU; CUDA needs the module (PRX_ERR_NODEVICE, with prx_cuda_module_why(), where it cannot
 * run); AUTO takes the module where it loads. *module: the module when the choice is CUDA,
 * else NULL. */
prx_status prx_cuda_module_pick(prx_backend requested, const prx_cuda_module **module);

#ifdef __cplusplus
}
#endif
#endif
