/* CPU channelizer backend: input history, block streaming, polyphase filter, batched FFTW,
 * channel selection, worker threads.
 *
 * Arithmetic (see the definition in polyrx/chan.h and chan_cpu_kernel.h). With the prototype
 * zero-padded to L = P K taps, m = pK + r:
 *
 *   y_k[j] = exp(-i 2 pi k jD / K) * sum_r v_r(j) exp(+i 2 pi k r / K),
 *   v_r(j) = sum_p h[pK + r] x[jD - r - pK],
 *
 * a length-K DFT of the commutator sums followed by a factor that is 1 for D = K and (-1)^(kj)
 * for D = K/2. The kernel lays the sums out so that FFTW's forward transform computes the DFT.
 *
 * Streaming: buf holds cf32 samples x[tbuf ..], at least the L - 1 samples before the next
 * output's sample jD (zeros before the stream starts) plus room for `block` new samples. Input
 * is converted to cf32 while it is copied in (the only pass over the caller's samples). Every
 * output whose sample jD has arrived is computed at once; when the buffer is full the samples
 * no output needs any more are dropped by moving the rest to the front.
 *
 * Threads: the outputs ready in one fill are cut into batches of `nb` consecutive outputs (one
 * fftwf_plan_many_dft call each) counted from the first ready output, and a remainder done one
 * by one. How outputs fall into batches never depends on the thread count, and each output is
 * computed by the same code whichever worker runs it, so the output is bit-identical for any
 * thread count. */
#include "chan_cpu_kernel.h"
#include "chan_internal.h"

#include "../core/internal.h"
#include "../dsp/convert.h"

#include <fftw3.h>
#include <string.h>

/* Internal pseudo-format for the flush tail: zeros after conversion (cu8 cannot express 0). */
#define SRC_ZEROS ((prx_format)-1)

typedef struct {
  prx_cf32 *fin, *fout; /* nb rows of K: FFT input and output */
} cpu_scratch;

typedef struct {
  size_t K, D, P, L; /* channels, decimation, phases, padded prototype length */
  float *hr2;        /* reversed padded prototype, taps duplicated for re/im: 2L floats */
  prx_cf32 *buf;     /* history + block */
  size_t cap, nbuf;  /* capacity and fill of buf, in samples */
  int64_t tbuf;      /* stream time of buf[0] */
  uint64_t t_end;    /* samples given since reset */
  uint64_t j_next;   /* next output to compute */
  size_t nb;         /* outputs per FFT batch */
  fftwf_plan plan_batch, plan_one;
  prx_pool *pool;
  size_t n_scr;
  cpu_scratch *scr; /* one per worker task */
  const unsigned *sel;
  size_t n_sel;
} cpu_impl;

/* One parallel computation: outputs ja..jb-1 of the current fill, written at out[j - j_out0]. */
typedef struct {
  cpu_impl *m;
  uint64_t ja, jb, j_out0;
  prx_cf32 *out;
  size_t stride;
  size_t n_tasks;
} cpu_run;

static void impl_reset(cpu_impl *m) {
  /* x[n] = 0 for n < 0: the history before the stream is L - 1 zeros */
  memset(m->buf, 0, (m->L - 1) * sizeof *m->buf);
  m->nbuf = m->L - 1;
  m->tbuf = -(int64_t)(m->L - 1);
  m->t_end = 0;
  m->j_next = 0;
}

static void cpu_destroy(prx_chan *c) {
  cpu_impl *m = c->impl;
  if (!m) return;
  prx_fftw_lock();
  if (m->plan_batch) fftwf_destroy_plan(m->plan_batch);
  if (m->plan_one) fftwf_destroy_plan(m->plan_one);
  prx_fftw_unlock();
  if (m->scr)
    for (size_t i = 0; i < m->n_scr; i++) {
      fftwf_free(m->scr[i].fin);
      fftwf_free(m->scr[i].fout);
    }
  prx_free(m->scr);
  prx_pool_destroy(m->pool);
  prx_free(m->hr2);
  prx_free(m->buf);
  prx_free(m);
  c->impl = NULL;
}

/* Outputs per FFT batch: about 16k samples of rows, so that a batch's rows stay in L2. */
static size_t batch_outputs(size_t K) {
  size_t nb = 16384 / K;
  return nb < 1 ? 1 : nb > 64 ? 64 : nb;
}

static prx_status cpu_create(prx_chan *c) {
  cpu_impl *m = prx_alloc(1, sizeof *m);
  if (!m) return prx_fail(PRX_ERR_NOMEM, "cannot allocate the CPU channelizer");
  c->impl = m;
  m->K = c->K;
  m->D = c->D;
  m->P = (c->M + c->K - 1) / c->K;
  m->L = m->P * m->K;
  m->sel = c->select;
  m->n_sel = c->n_sel;
  m->nb = batch_outputs(m->K);
  /* at least D per block, so that moving the L - 1 kept samples is amortised over an output */
  size_t block = c->cfg.block_samples < m->D ? m->D : c->cfg.block_samples;
  if (!c->cfg.block_samples) {
    block = 4 * m->L;
    if (block < 4 * m->nb * m->D) block = 4 * m->nb * m->D;
  }
  m->cap = m->L - 1 + block;
  m->hr2 = prx_alloc(2 * m->L, sizeof *m->hr2);
  m->buf = prx_alloc(m->cap, sizeof *m->buf);
  prx_status st = prx_pool_create(c->cfg.threads, &m->pool);
  if (st) {
    cpu_destroy(c);
    return st;
  }
  m->n_scr = (size_t)prx_pool_threads(m->pool);
  m->scr = prx_alloc(m->n_scr, sizeof *m->scr);
  if (!m->hr2 || !m->buf || !m->scr) {
    cpu_destroy(c);
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate the channelizer buffers (%zu samples)", m->cap);
  }
  for (size_t i = 0; i < m->n_scr; i++) {
    m->scr[i].fin = (prx_cf32 *)fftwf_alloc_complex(m->nb * m->K);
    m->scr[i].fout = (prx_cf32 *)fftwf_alloc_complex(m->nb * m->K);
    if (!m->scr[i].fin || !m->scr[i].fout) {
      cpu_destroy(c);
      return prx_fail(PRX_ERR_NOMEM, "cannot allocate FFT buffers of %zu x %zu samples", m->nb,
                      m->K);
    }
    memset(m->scr[i].fin, 0, m->nb * m->K * sizeof(prx_cf32));
  }
  for (size_t i = 0; i < m->L; i++) {
    size_t src = m->L - 1 - i;
    float h = src < c->M ? c->taps[src] : 0.0f;
    m->hr2[2 * i] = m->hr2[2 * i + 1] = h;
  }
  int n = (int)m->K;
  fftwf_complex *fin = (fftwf_complex *)m->scr[0].fin, *fout = (fftwf_complex *)m->scr[0].fout;
  prx_fftw_lock();
  m->plan_batch = fftwf_plan_many_dft(1, &n, (int)m->nb, fin, NULL, 1, n, fout, NULL, 1, n,
                                      FFTW_FORWARD, FFTW_ESTIMATE);
  m->plan_one = fftwf_plan_dft_1d(n, fin, fout, FFTW_FORWARD, FFTW_ESTIMATE);
  prx_fftw_unlock();
  if (!m->plan_batch || !m->plan_one) {
    cpu_destroy(c);
    return prx_fail(PRX_ERR_INTERNAL, "FFTW could not plan a transform of %zu points", m->K);
  }
  impl_reset(m);
  return PRX_OK;
}

static void cpu_reset(prx_chan *c) { impl_reset(c->impl); }

/* Copies n input samples of format f into buf[nbuf..], converting to cf32. */
static void copy_in(cpu_impl *m, prx_format f, const void *in, size_t n) {
  prx_cf32 *d = m->buf + m->nbuf;
  switch (f) {
  case PRX_CF32: memcpy(d, in, n * sizeof *d); break;
  case PRX_CI16:
    for (size_t i = 0; i < n; i++) d[i] = prx_sample_ci16(in, i);
    break;
  case PRX_CI8:
    for (size_t i = 0; i < n; i++) d[i] = prx_sample_ci8(in, i);
    break;
  case PRX_CU8:
    for (size_t i = 0; i < n; i++) d[i] = prx_sample_cu8(in, i);
    break;
  default: memset(d, 0, n * sizeof *d); break;
  }
  m->nbuf += n;
  m->t_end += n;
}

/* Drops the samples that no future output needs (everything before the window of j_next). */
static void compact(cpu_impl *m) {
  int64_t keep_from = (int64_t)(m->j_next * m->D) - (int64_t)(m->L - 1) - m->tbuf;
  if (keep_from <= 0) return;
  size_t k = (size_t)keep_from;
  memmove(m->buf, m->buf + k, (m->nbuf - k) * sizeof *m->buf);
  m->nbuf -= k;
  m->tbuf += (int64_t)k;
}

/* Filters, transforms and stores n outputs starting at j with the given plan (rows: n <= nb). */
static void do_outputs(const cpu_run *r, cpu_scratch *s, uint64_t j, size_t n, fftwf_plan plan) {
  const cpu_impl *m = r->m;
  const size_t K = m->K;
  size_t w = (size_t)((int64_t)(j * m->D) - (int64_t)(m->L - 1) - m->tbuf);
  prx_chan_filter_rows(m->hr2, K, m->P, (const float *)(m->buf + w), m->D, n, s->fin);
  fftwf_execute_dft(plan, (fftwf_complex *)s->fin, (fftwf_complex *)s->fout);
  size_t o = (size_t)(j - r->j_out0);
  int alternate = m->D != K; /* D = K/2: (-1)^(k j) */
  for (size_t q = 0; q < m->n_sel; q++) {
    unsigned k = m->sel[q];
    prx_cf32 *dst = r->out + q * r->stride + o;
    const prx_cf32 *src = s->fout + k;
    if (alternate && (k & 1)) {
      for (size_t i = 0; i < n; i++) {
        float sg = ((j + i) & 1) ? -1.0f : 1.0f;
        dst[i].re = sg * src[i * K].re;
        dst[i].im = sg * src[i * K].im;
      }
    } else {
      for (size_t i = 0; i < n; i++) dst[i] = src[i * K];
    }
  }
}

/* Task t of a run: a contiguous range of the batches; the last task also does the remainder. */
static void run_task(void *ctx, size_t t) {
  const cpu_run *r = ctx;
  const cpu_impl *m = r->m;
  cpu_scratch *s = &m->scr[t];
  uint64_t n = r->jb - r->ja;
  size_t nbat = (size_t)(n / m->nb);
  size_t b0 = nbat * t / r->n_tasks, b1 = nbat * (t + 1) / r->n_tasks;
  for (size_t b = b0; b < b1; b++) do_outputs(r, s, r->ja + b * m->nb, m->nb, m->plan_batch);
  if (t == r->n_tasks - 1)
    for (uint64_t j = r->ja + (uint64_t)nbat * m->nb; j < r->jb; j++)
      do_outputs(r, s, j, 1, m->plan_one);
}

/* Computes every output whose sample jD has arrived. */
static void compute_ready(cpu_impl *m, prx_cf32 *out, size_t stride, uint64_t j_out0) {
  uint64_t jb = (m->t_end + m->D - 1) / m->D; /* outputs j with jD < t_end */
  if (jb <= m->j_next) return;
  cpu_run r = {m, m->j_next, jb, j_out0, out, stride, 1};
  size_t nbat = (size_t)((jb - m->j_next) / m->nb);
  r.n_tasks = nbat < m->n_scr ? (nbat ? nbat : 1) : m->n_scr;
  prx_pool_run(m->pool, run_task, &r, r.n_tasks);
  m->j_next = jb;
}

static prx_status feed(prx_chan *c, prx_format f, const void *in, size_t n_in, void *out,
                       size_t out_stride, size_t n_out) {
  cpu_impl *m = c->impl;
  uint64_t j_out0 = m->j_next;
  size_t fsz = f == SRC_ZEROS ? 0 : prx_format_size(f);
  const unsigned char *p = in;
  while (n_in > 0) {
    if (m->nbuf == m->cap) compact(m);
    size_t take = m->cap - m->nbuf;
    if (take > n_in) take = n_in;
    copy_in(m, f, p, take);
    if (p) p += take * fsz;
    n_in -= take;
    compute_ready(m, out, out_stride, j_out0);
  }
  if (m->j_next - j_out0 != n_out)
    return prx_fail(PRX_ERR_INTERNAL, "CPU channelizer produced %llu outputs, expected %zu",
                    (unsigned long long)(m->j_next - j_out0), n_out);
  return PRX_OK;
}

static prx_status cpu_execute(prx_chan *c, const void *in, size_t n_in, void *out,
                              size_t out_stride, size_t n_out) {
  return feed(c, c->cfg.in_format, in, n_in, out, out_stride, n_out);
}

static prx_status cpu_execute_zeros(prx_chan *c, size_t n_zeros, void *out, size_t out_stride,
                                    size_t n_out) {
  return feed(c, SRC_ZEROS, NULL, n_zeros, out, out_stride, n_out);
}

const prx_chan_ops prx_chan_cpu_ops = {cpu_create,  cpu_destroy, cpu_reset,
                                       cpu_execute, NULL,        cpu_execute_zeros};
