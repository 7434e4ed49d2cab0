/* A fake CUDA runtime on the host, for AddressSanitizer runs of the CUDA channelizer's host side
 * and of test_chan_cuda without a GPU (run_chan_cuda.sh). Device and pinned memory are malloc'd,
 * so that ASan sees every byte a copy or an emulated kernel touches; cudaPointerGetAttributes
 * answers from the table of those blocks (anything else is pageable). Stream work is queued and
 * run as late as CUDA allows: at event and stream synchronisations, cudaFree/cudaFreeHost and the
 * synchronous calls; a copy to or from pageable memory runs at once after its stream's work, as
 * CUDA does. So a missing wait shows up as a stale read or a use after free, an undersized buffer
 * as an overflow. One device, one thread; only the calls the channelizer and its test make. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct op {
  void (*fn)(void *);
  void *arg;
  struct op *next;
} op;
struct CUstream_st {
  op *head, *tail;
  unsigned long pushed, done;
  int blocking;
};
struct CUevent_st {
  struct CUstream_st *s;
  unsigned long seq;
};

#define MAXS 4096
static struct CUstream_st *streams[MAXS];
static int nstreams;

typedef struct {
  char *p;
  size_t n;
  int type;
} alloc_t;
static alloc_t *allocs;
static size_t nalloc, capalloc;

static int find(const void *p) {
  for (size_t i = 0; i < nalloc; i++)
    if ((const char *)p >= allocs[i].p &&
        (const char *)p < allocs[i].p + (allocs[i].n ? allocs[i].n : 1))
      return (int)i;
  return -1;
}
static void *reg(size_t n, int type) {
  void *p = malloc(n ? n : 1);
  memset(p, 0xA5, n);
  if (nalloc == capalloc) {
    capalloc = capalloc ? 2 * capalloc : 256;
    allocs = realloc(allocs, capalloc * sizeof *allocs);
  }
  allocs[nalloc++] = (alloc_t){p, n, type};
  return p;
}
static void unreg(void *p) {
  for (size_t i = 0; i < nalloc; i++)
    if (allocs[i].p == p) {
      allocs[i] = allocs[--nalloc];
      free(p);
      return;
    }
  if (p) {
    fprintf(stderr, "FAKECUDA: free of unknown %p\n", p);
    abort();
  }
}

static void run_until(struct CUstream_st *s, unsigned long seq) {
  while (s && s->done < seq && s->head) {
    op *o = s->head;
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    s->done++;
    o->fn(o->arg);
    free(o->arg);
    free(o);
  }
}
static void flush_all(void) {
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < nstreams; i++) run_until(streams[i], streams[i]->pushed);
}

/* queues fn(arg) on stream s (arg malloc'd, freed after the call); the legacy default stream
 * runs it at once, after every stream's work */
void fake_enqueue(cudaStream_t s, void (*fn)(void *), void *arg) {
  if (!s) {
    flush_all();
    fn(arg);
    free(arg);
    return;
  }
  op *o = calloc(1, sizeof *o);
  o->fn = fn;
  o->arg = arg;
  if (s->tail)
    s->tail->next = o;
  else
    s->head = o;
  s->tail = o;
  s->pushed++;
}

/* ---- copies ---- */
typedef struct {
  void *dst;
  const void *src;
  size_t n;
} cp_t;
static void do_cp(void *a) {
  cp_t *c = a;
  memcpy(c->dst, c->src, c->n);
}
typedef struct {
  void *dst;
  size_t dp;
  const void *src;
  size_t sp, w, h;
} cp2_t;
static void do_cp2(void *a) {
  cp2_t *c = a;
  for (size_t r = 0; r < c->h; r++)
    memcpy((char *)c->dst + r * c->dp, (const char *)c->src + r * c->sp, c->w);
}
typedef struct {
  void *dst;
  int v;
  size_t n;
} ms_t;
static void do_ms(void *a) {
  ms_t *c = a;
  memset(c->dst, c->v, c->n);
}
typedef struct {
  struct CUstream_st *s;
  unsigned long seq;
} wait_t;
static void do_wait(void *a) {
  wait_t *w = a;
  run_until(w->s, w->seq);
}

static int pageable(const void *p) { return find(p) < 0; }

/* An async copy (fn on its malloc'd record c, freed after the call): where either side is pageable
 * it is synchronous for the host, after the stream's work (as CUDA does), else it is queued on the
 * stream */
static cudaError_t copy_async(cudaStream_t s, int host_sync, void (*fn)(void *), void *c) {
  if (!host_sync) {
    fake_enqueue(s, fn, c);
    return cudaSuccess;
  }
  if (s)
    run_until(s, s->pushed);
  else
    flush_all();
  fn(c);
  free(c);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind k,
                            cudaStream_t s) {
  (void)k;
  cp_t *c = malloc(sizeof *c);
  *c = (cp_t){dst, src, n};
  return copy_async(s, pageable(dst) || pageable(src), do_cp, c);
}
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
                              enum cudaMemcpyKind k, cudaStream_t s) {
  (void)k;
  cp2_t *c = malloc(sizeof *c);
  *c = (cp2_t){dst, dp, src, sp, w, h};
  return copy_async(s, pageable(dst) || pageable(src), do_cp2, c);
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind k) {
  (void)k;
  flush_all();
  memcpy(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *dst, int v, size_t n, cudaStream_t s) {
  ms_t *c = malloc(sizeof *c);
  *c = (ms_t){dst, v, n};
  fake_enqueue(s, do_ms, c);
  return cudaSuccess;
}
cudaError_t cudaMemset(void *dst, int v, size_t n) {
  flush_all();
  memset(dst, v, n);
  return cudaSuccess;
}

/* ---- memory ---- */
cudaError_t cudaMalloc(void **p, size_t n) {
  *p = reg(n, cudaMemoryTypeDevice);
  return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
  flush_all();
  if (p) unreg(p);
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags) {
  (void)flags;
  *p = reg(n, cudaMemoryTypeHost);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t n) { return cudaHostAlloc(p, n, 0); }
cudaError_t cudaFreeHost(void *p) {
  flush_all();
  if (p) unreg(p);
  return cudaSuccess;
}
cudaError_t cudaHostRegister(void *p, size_t n, unsigned f) {
  (void)p, (void)n, (void)f;
  return cudaErrorNotSupported;
}
cudaError_t cudaHostUnregister(void *p) {
  (void)p;
  return cudaSuccess;
}
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p) {
  memset(a, 0, sizeof *a);
  int i = find(p);
  a->type = i < 0 ? cudaMemoryTypeUnregistered : (enum cudaMemoryType)allocs[i].type;
  return cudaSuccess;
}

/* ---- device ---- */
cudaError_t cudaGetDeviceCount(int *n) {
  *n = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidDevice; }
cudaError_t cudaGetDevice(int *d) {
  *d = 0;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d) {
  (void)d;
  memset(p, 0, sizeof *p);
  strcpy(p->name, "fake H200");
  p->major = 9;
  p->sharedMemPerBlockOptin = 227 * 1024;
  p->multiProcessorCount = 132;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int d) {
  (void)d;
  *v = a == cudaDevAttrMultiProcessorCount ? 132 : 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void) {
  flush_all();
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) {
  (void)e;
  return "fake error";
}

/* ---- streams and events ---- */
static cudaError_t mkstream(cudaStream_t *s, int blocking) {
  struct CUstream_st *x = calloc(1, sizeof *x);
  x->blocking = blocking;
  if (nstreams == MAXS) abort();
  streams[nstreams++] = x;
  *s = x;
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) { return mkstream(s, 1); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned f) { return mkstream(s, !(f & 1)); }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  run_until(s, s->pushed); /* the work still completes; the stream object is kept (waits name it) */
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (s)
    run_until(s, s->pushed);
  else
    flush_all();
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned f) {
  (void)f;
  if (!e->s) return cudaSuccess;
  wait_t *w = malloc(sizeof *w);
  *w = (wait_t){e->s, e->seq};
  fake_enqueue(s, do_wait, w);
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned f) {
  (void)f;
  *e = calloc(1, sizeof **e);
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (!s) {
    flush_all();
    e->s = NULL;
    return cudaSuccess;
  }
  e->s = s;
  e->seq = s->pushed;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (e->s) run_until(e->s, e->seq);
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  free(e);
  return cudaSuccess;
}

/* ---- the registration calls of nvcc's host code (no device code runs here) ---- */
static void *fatdummy[4];
void **__cudaRegisterFatBinary(void *f) {
  (void)f;
  return fatdummy;
}
void __cudaRegisterFatBinaryEnd(void **h) { (void)h; }
void __cudaUnregisterFatBinary(void **h) { (void)h; }
