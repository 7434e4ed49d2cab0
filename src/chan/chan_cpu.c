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
 * for D = K/2. The kernel lays the sums out so that FFTW's forward transform computes the DFT,
 * and stores odd rows rotated by K/2 for D = K/2, which is the (-1)^k. Then the selected
 * channels are transposed into channel-major output (the rows layout), or copied frame by frame
 * (the frames layout; with every channel in order the transform writes the frames itself, with
 * a plan that differs from the batch plan in its output distance only; that it gives the same
 * bits is test_chan_cpu_frames's check (FFTW 3.3.10; on the GPU host `channelize` wrote main's
 * bytes with it)); when only 1-4
 * channels are selected a direct DFT of those channels replaces FFT + transpose (cheaper then; see
 * PERFORMANCE.md).
 *
 * Streaming: the input history is kept as cf32 in segments of D samples, each followed by a
 * 64-byte pad (so that the kernel's ~3P concurrent segment streams fall in different cache
 * sets). Segment g (counted from the last reset) holds stream times gD - L + 1 .. (g+1)D - L,
 * so the window of output j (times jD - L + 1 .. jD) is exactly segments j .. j + S - 1, S = L/D,
 * and output j is ready when segment j + S - 1 is complete (its last sample is jD). Before the
 * stream starts the segments hold zeros (x[n] = 0 for n < 0). Input is converted to cf32 while
 * it is copied in (the only pass over the caller's samples). After each fill every ready
 * output is computed; when the buffer is full the segments no output needs any more are
 * dropped by moving the rest to the front. Memory: S + block/D segments, whatever n_in is.
 *
 * Threads: the outputs ready in one fill are cut into batches of `nb` consecutive outputs (one
 * fftwf_plan_many_dft call each) counted from the first ready output; within a call, outputs
 * wait for a whole batch, and the fewer than nb left at the end of the call are filtered
 * together and transformed one by one. Batches are spread over the workers of the object's
 * pool in contiguous ranges, each worker with its own scratch. How outputs fall into batches
 * never depends on the thread count, and each output is computed by the same code whichever
 * worker runs it, so the output is bit-identical for any thread count. FFTW plans are made
 * with FFTW_ESTIMATE so that they are the same in every process (FFTW_MEASURE could pick
 * differently rounding algorithms from run to run). */
#include "chan_cpu_kernel.h"
#include "chan_internal.h"

#include "../core/internal.h"
#include "../dsp/convert.h"
#include "../dsp/fft_plan.h"

#include <fftw3.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  prx_cf32 *fin, *fout; /* nb rows of `pitch` samples: FFT input and output */
} cpu_scratch;

typedef struct {
  size_t K, D, P, L, S; /* channels, decimation, phases, padded prototype length, L / D */
  prx_chan_kernel kern; /* filter kernel parameters (taps point at hseg) */
  float *hseg;          /* S tap segments, see chan_cpu_kernel.h */
  size_t sp;            /* segment pitch in samples: D + pad */
  prx_cf32 *buf;        /* input segments g0 .. g0 + nseg - 1 */
  size_t nseg;          /* capacity in segments */
  uint64_t g0;          /* stream segment index of buf's first segment */
  uint64_t wseg;        /* segment being written (stream index) */
  size_t woff;          /* samples already in it */
  uint64_t j_next;      /* next output to compute */
  size_t nb;            /* outputs per FFT batch */
  size_t pitch;         /* samples from one FFT row to the next (>= K + 1, see the kernel) */
  fftwf_plan plan_batch, plan_one;
  /* the frames layout with every channel in order: the batch transformed straight into frames
   * of K samples (out-of-place, output distance K), no copy; NULL otherwise */
  fftwf_plan plan_frames;
  prx_pool *pool;
  size_t n_scr;
  cpu_scratch *scr; /* one per worker task */
  const unsigned *sel;
  size_t n_sel;
  float *dft; /* direct-DFT tables of the selected channels (few channels), or NULL: FFT */
  int stream; /* the scatter's streaming stores (prx_chan_config.stream_out) */
  int frames; /* the frames layout (prx_chan_config.layout): output j at out[j * stride] */
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
  /* segments 0 .. S-1 hold times -L+1 .. 0: all zeros but the last sample of segment S-1,
   * which is the first input sample, time 0 */
  memset(m->buf, 0, m->S * m->sp * sizeof *m->buf);
  m->g0 = 0;
  m->wseg = m->S - 1;
  m->woff = m->D - 1;
  m->j_next = 0;
}

static void cpu_destroy(prx_chan *c) {
  cpu_impl *m = c->impl;
  if (!m) return;
  prx_fftw_lock();
  if (m->plan_batch) fftwf_destroy_plan(m->plan_batch);
  if (m->plan_one) fftwf_destroy_plan(m->plan_one);
  if (m->plan_frames) fftwf_destroy_plan(m->plan_frames);
  prx_fftw_unlock();
  if (m->scr)
    for (size_t i = 0; i < m->n_scr; i++) {
      fftwf_free(m->scr[i].fin);
      fftwf_free(m->scr[i].fout);
    }
  prx_free(m->scr);
  prx_pool_destroy(m->pool);
  prx_free(m->hseg);
  prx_free(m->buf);
  prx_free(m->dft);
  prx_free(m);
  c->impl = NULL;
}

/* Up to how many selected channels a direct DFT of the rows (K complex multiply-adds per
 * channel and output, 4 rows sharing each table load) is used instead of FFT + selection.
 * Measured on Zen 3 (docs/PERFORMANCE.md): at K = 1024 and 4096 the direct DFT is 1.2-2.8x
 * faster end to end for 1-4 channels, about even at 8, slower beyond; below K = 64 FFTW's
 * small transforms cost next to nothing, so the FFT stays. */
static size_t direct_dft_max(size_t K) { return K >= 64 ? 4 : 0; }

/* One K-point transform as the channelizer runs it (cpu_create's plan_one; prx_chan_cpu_warm plans
 * the same problem through prx_fft_plan_1d); under prx_fftw_lock. */
static fftwf_plan plan_transform(int K, fftwf_complex *in, fftwf_complex *out) {
  return fftwf_plan_dft_1d(K, in, out, FFTW_FORWARD, FFTW_ESTIMATE);
}

static prx_status cpu_create(prx_chan *c) {
  cpu_impl *m = prx_alloc(1, sizeof *m);
  if (!m) return prx_fail(PRX_ERR_NOMEM, "cannot allocate the CPU channelizer");
  c->impl = m;
  m->K = c->K;
  m->D = c->D;
  m->P = (c->M + c->K - 1) / c->K;
  m->L = m->P * m->K;
  m->S = m->L / m->D;
  m->sel = c->select;
  m->n_sel = c->n_sel;
  m->stream = c->cfg.stream_out != 0;
  m->frames = c->cfg.layout == PRX_CHAN_FRAMES;
  m->nb = prx_chan_cpu_batch_outputs(m->K);
  /* rows with a pad of at least one sample, 64-byte aligned; the pad also keeps the row stride
   * off powers of two, so walking down a column (the channel scatter) avoids cache-set
   * conflicts */
  m->pitch = (m->K + 1 + 7) & ~(size_t)7;
  m->sp = ((m->D + 3) & ~(size_t)3) + 8; /* 32-byte aligned segments + 64 bytes of pad */
  /* block: at least one segment; default 4 windows (so that moving the kept S segments to the
   * front costs a quarter of a copy per sample) but no more than 4 Mi samples unless a window
   * is longer, and at least 4 batches */
  size_t block = c->cfg.block_samples;
  if (!block) {
    block = 4 * m->L;
    if (block > ((size_t)1 << 22)) block = m->L > ((size_t)1 << 22) ? m->L : (size_t)1 << 22;
    if (block < 4 * m->nb * m->D) block = 4 * m->nb * m->D;
  }
  /* at least 2 batches beyond a window: within a call, outputs wait until a whole batch is
   * ready, so up to nb - 1 ready windows are kept across a compaction */
  m->nseg = m->S + (block + m->D - 1) / m->D;
  if (m->nseg < m->S + 2 * m->nb) m->nseg = m->S + 2 * m->nb;
  m->hseg = prx_alloc(m->S * m->sp * 2, sizeof *m->hseg);
  m->buf = prx_alloc(m->nseg * m->sp, sizeof *m->buf);
  prx_status st = prx_pool_create(c->cfg.threads, &m->pool);
  if (st) {
    cpu_destroy(c);
    return st;
  }
  m->n_scr = (size_t)prx_pool_threads(m->pool);
  m->scr = prx_alloc(m->n_scr, sizeof *m->scr);
  if (!m->hseg || !m->buf || !m->scr) {
    cpu_destroy(c);
    return prx_fail(PRX_ERR_NOMEM, "cannot allocate the channelizer buffers (%zu samples)",
                    m->nseg * m->sp);
  }
  for (size_t i = 0; i < m->n_scr; i++) {
    m->scr[i].fin = (prx_cf32 *)fftwf_alloc_complex(m->nb * m->pitch);
    m->scr[i].fout = (prx_cf32 *)fftwf_alloc_complex(m->nb * m->pitch);
    if (!m->scr[i].fin || !m->scr[i].fout) {
      cpu_destroy(c);
      return prx_fail(PRX_ERR_NOMEM, "cannot allocate FFT buffers of %zu x %zu samples", m->nb,
                      m->K);
    }
    memset(m->scr[i].fin, 0, m->nb * m->pitch * sizeof(prx_cf32));
  }
  /* reversed padded prototype hr[i] = h[L-1-i], segment g = i / D, duplicated re/im */
  for (size_t i = 0; i < m->L; i++) {
    size_t src = m->L - 1 - i;
    float h = src < c->M ? c->taps[src] : 0.0f;
    float *d = m->hseg + 2 * ((i / m->D) * m->sp + i % m->D);
    d[0] = d[1] = h;
  }
  m->kern = (prx_chan_kernel){m->hseg, 2 * m->sp, 2 * m->sp, m->D, m->K / m->D, m->P, m->pitch};
  if (m->n_sel <= direct_dft_max(m->K)) {
    m->dft = prx_alloc(m->n_sel * 4 * m->K, sizeof *m->dft);
    if (!m->dft) {
      cpu_destroy(c);
      return prx_fail(PRX_ERR_NOMEM, "cannot allocate DFT tables for %zu channels", m->n_sel);
    }
    for (size_t s = 0; s < m->n_sel; s++) {
      float *cd = m->dft + s * 4 * m->K, *dd = cd + 2 * m->K;
      for (size_t r = 0; r < m->K; r++) {
        double ph = 2 * M_PI * (double)(((uint64_t)m->sel[s] * r) % m->K) / (double)m->K;
        cd[2 * r] = cd[2 * r + 1] = (float)cos(ph);
        dd[2 * r] = dd[2 * r + 1] = (float)-sin(ph);
      }
    }
  }
  int n = (int)m->K;
  fftwf_complex *fin = (fftwf_complex *)m->scr[0].fin, *fout = (fftwf_complex *)m->scr[0].fout;
  prx_fftw_lock();
  int pitch = (int)m->pitch;
  m->plan_batch = fftwf_plan_many_dft(1, &n, (int)m->nb, fin, NULL, 1, pitch, fout, NULL, 1, pitch,
                                      FFTW_FORWARD, FFTW_ESTIMATE);
  m->plan_one = plan_transform(n, fin, fout);
  int all_in_order = m->n_sel == m->K && !m->dft;
  for (size_t s = 0; all_in_order && s < m->n_sel; s++) all_in_order = m->sel[s] == s;
  int frames_direct = m->frames && all_in_order && m->K % 8 == 0; /* frames on whole lines */
  if (frames_direct) /* planned on fout, whose alignment execute checks the output's against */
    m->plan_frames = fftwf_plan_many_dft(1, &n, (int)m->nb, fin, NULL, 1, pitch, fout, NULL, 1, n,
                                         FFTW_FORWARD, FFTW_ESTIMATE);
  prx_fftw_unlock();
  if (!m->plan_batch || !m->plan_one || (frames_direct && !m->plan_frames)) {
    cpu_destroy(c);
    return prx_fail(PRX_ERR_INTERNAL, "FFTW could not plan a transform of %zu points", m->K);
  }
  impl_reset(m);
  return PRX_OK;
}

void *prx_chan_cpu_warm(size_t K) {
  /* plan_transform's problem: the forward K-point transform, FFTW_ESTIMATE */
  return K && K <= ((size_t)1 << 22) /* prx_chan_create's largest K */
             ? prx_fft_warm((int)K, PRX_FFT_ESTIMATE)
             : NULL;
}

static void cpu_reset(prx_chan *c) { impl_reset(c->impl); }

/* Copies up to n input samples of format f into the buffer, converting to cf32, until the
 * buffer is full; returns how many were taken. in == NULL feeds zeros (the flush tail: zeros
 * after conversion, which cu8 could not express). */
static size_t copy_in(cpu_impl *m, prx_format f, const unsigned char *in, size_t n) {
  size_t done = 0, fsz = prx_format_size(f);
  while (done < n && m->wseg - m->g0 < m->nseg) {
    size_t take = m->D - m->woff;
    if (take > n - done) take = n - done;
    prx_cf32 *d = m->buf + (size_t)(m->wseg - m->g0) * m->sp + m->woff;
    const void *s = in ? in + done * fsz : NULL;
    if (s)
      prx_convert_block(f, s, take, d);
    else
      memset(d, 0, take * sizeof *d);
    done += take;
    m->woff += take;
    if (m->woff == m->D) {
      m->woff = 0;
      m->wseg++;
    }
  }
  return done;
}

/* Drops the segments that no future output needs (those before the window of j_next). */
static void compact(cpu_impl *m) {
  size_t drop = (size_t)(m->j_next - m->g0);
  if (drop == 0) return;
  size_t keep = (size_t)(m->wseg - m->j_next) + (m->woff > 0);
  memmove(m->buf, m->buf + drop * m->sp, keep * m->sp * sizeof *m->buf);
  m->g0 = m->j_next;
}

/* Filters, transforms and stores n consecutive outputs from j: one batched FFT when n = nb,
 * else one transform per row (the remainder at the end of a call). */
static void do_outputs(const cpu_run *r, cpu_scratch *s, uint64_t j, size_t n) {
  const cpu_impl *m = r->m;
  const float *x = (const float *)(m->buf + (size_t)(j - m->g0) * m->sp);
  prx_chan_filter_rows(&m->kern, x, n, (unsigned)(j & 1), s->fin);
  /* where output j goes: its column of the rows, or its frame */
  prx_cf32 *at = r->out + (size_t)(j - r->j_out0) * (m->frames ? r->stride : 1);
  if (m->dft) {
    prx_chan_dft(s->fin, m->pitch, m->K, n, m->dft, m->n_sel, at, m->frames ? 1 : r->stride,
                 m->frames ? r->stride : 1);
    return;
  }
  /* every channel in order into frames of K samples with fout's alignment: the transform writes
   * them itself (FFTW's new-array execute needs the planned strides and alignment) */
  if (m->plan_frames && r->stride == m->K &&
      fftwf_alignment_of((float *)at) == fftwf_alignment_of((float *)s->fout)) {
    if (n == m->nb)
      fftwf_execute_dft(m->plan_frames, (fftwf_complex *)s->fin, (fftwf_complex *)at);
    else
      for (size_t i = 0; i < n; i++)
        fftwf_execute_dft(m->plan_one, (fftwf_complex *)(s->fin + i * m->pitch),
                          (fftwf_complex *)(at + i * m->K));
    return;
  }
  if (n == m->nb)
    fftwf_execute_dft(m->plan_batch, (fftwf_complex *)s->fin, (fftwf_complex *)s->fout);
  else
    for (size_t i = 0; i < n; i++)
      fftwf_execute_dft(m->plan_one, (fftwf_complex *)(s->fin + i * m->pitch),
                        (fftwf_complex *)(s->fout + i * m->pitch));
  if (m->frames)
    prx_chan_frames(s->fout, m->pitch, n, m->sel, m->n_sel, at, r->stride, m->stream);
  else
    prx_chan_scatter(s->fout, m->pitch, n, m->sel, m->n_sel, at, r->stride, m->stream);
}

/* Task t of a run: a contiguous range of the full batches; the last task also does the
 * remainder (fewer than nb outputs, only at the end of a call). */
static void run_task(void *ctx, size_t t) {
  const cpu_run *r = ctx;
  const cpu_impl *m = r->m;
  cpu_scratch *s = &m->scr[t];
  size_t nbat = (size_t)((r->jb - r->ja) / m->nb);
  size_t b0 = nbat * t / r->n_tasks, b1 = nbat * (t + 1) / r->n_tasks;
  for (size_t b = b0; b < b1; b++) do_outputs(r, s, r->ja + b * m->nb, m->nb);
  uint64_t jr = r->ja + (uint64_t)nbat * m->nb;
  for (; t == r->n_tasks - 1 && jr < r->jb; jr += m->nb) {
    size_t n = r->jb - jr < m->nb ? (size_t)(r->jb - jr) : m->nb;
    do_outputs(r, s, jr, n);
  }
}

/* Computes the outputs whose window is complete (segment j + S - 1 is full): all of them at
 * the end of a call (`all`), else only whole batches (the rest waits for the next fill). */
static void compute_ready(cpu_impl *m, prx_cf32 *out, size_t stride, uint64_t j_out0, int all) {
  uint64_t jb = m->wseg + 1 - m->S;
  if (jb <= m->j_next) return;
  if (!all) jb = m->j_next + (jb - m->j_next) / m->nb * m->nb;
  if (jb == m->j_next) return;
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
  size_t fsz = prx_format_size(f);
  const unsigned char *p = in;
  while (n_in > 0) {
    if (m->wseg - m->g0 == m->nseg) compact(m);
    size_t took = copy_in(m, f, p, n_in);
    if (p) p += took * fsz;
    n_in -= took;
    compute_ready(m, out, out_stride, j_out0, n_in == 0);
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
  return feed(c, c->cfg.in_format, NULL, n_zeros, out, out_stride, n_out);
}

const prx_chan_ops prx_chan_cpu_ops = {cpu_create,  cpu_destroy, cpu_reset,
                                       cpu_execute, NULL,        cpu_execute_zeros};
