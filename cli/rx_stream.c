/* polyrx rx's stream: the host pipeline reads the blocks, the receiver works on them on the compute
 * stage, and its callbacks hand each carrier's new bits and LLRs to the writer threads (or write
 * them), compare them with the truth and append the --iq channels: the per-block path. */

#include "rx_run.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RX_MANY_CARRIERS 256 /* from here the demodulator banks bound the GPU receiver */

/* ---- the outputs on writer threads ----
 *
 * The receiver's callback runs on the compute thread: it copies each carrier's new bits (and
 * LLRs) into the batch of the current compute call, which the pipeline hands to its writer
 * threads as that call's output slot (the slot holds the batch's address); each writer appends
 * its carriers' records to their files in order, so every file gets the bytes it got from
 * rx_on_output itself, and the compute thread does not wait for the writes. The last writer done
 * with a batch returns it for reuse (at most out_depth + 1 are in use: the pipeline's slots
 * bound them); its buffers keep their size. */
typedef struct {
  uint32_t carrier, llr; /* llr: the record is LLRs (to the carrier's .llr) */
  size_t off, len;       /* bytes in the batch's buffer */
} bits_rec;

typedef struct bits_batch {
  uint8_t *buf;
  size_t len, cap;
  bits_rec *rec;
  size_t n_rec, rec_cap;
  atomic_int left;              /* writers still to write it */
  struct bits_batch *next_idle; /* in run_state.idle */
  struct bits_batch *next_made; /* in run_state.all */
} bits_batch;

/* A batch to fill: an idle one, else a new one (NULL: out of memory). */
static bits_batch *batch_take(run_state *r) {
  pthread_mutex_lock(&r->batch_lock);
  bits_batch *b = r->idle;
  if (b) r->idle = b->next_idle;
  pthread_mutex_unlock(&r->batch_lock);
  if (!b && (b = calloc(1, sizeof *b))) {
    b->next_made = r->all;
    r->all = b;
  }
  if (b) b->len = b->n_rec = 0;
  return b;
}

static void batch_give(run_state *r, bits_batch *b) {
  pthread_mutex_lock(&r->batch_lock);
  b->next_idle = r->idle;
  r->idle = b;
  pthread_mutex_unlock(&r->batch_lock);
}

void rx_batches_free(run_state *r) {
  for (bits_batch *b = r->all, *next; b; b = next) {
    next = b->next_made;
    free(b->buf);
    free(b->rec);
    free(b);
  }
  r->all = r->idle = r->cur = NULL;
}

/* Appends one record to the current batch: 0, or -1 out of memory. */
static int batch_add(bits_batch *b, size_t c, int llr, const void *p, size_t len) {
  if (b->len + len > b->cap) {
    size_t cap = 2 * (b->len + len) + 65536;
    uint8_t *q = realloc(b->buf, cap);
    if (!q) return -1;
    b->buf = q;
    b->cap = cap;
  }
  if (b->n_rec == b->rec_cap) {
    size_t cap = 2 * b->rec_cap + 1024;
    bits_rec *q = realloc(b->rec, cap * sizeof *q);
    if (!q) return -1;
    b->rec = q;
    b->rec_cap = cap;
  }
  memcpy(b->buf + b->len, p, len);
  b->rec[b->n_rec++] = (bits_rec){(uint32_t)c, (uint32_t)llr, b->len, len};
  b->len += len;
  return 0;
}

/* the receiver's callback: appends a carrier's new bits and LLRs (to the batch of the writers, or
 * to the files), compares with the truth */
void rx_on_output(void *user, size_t c, const uint8_t *bits, size_t n_bytes, const float *llrs,
                  size_t n_symbols) {
  run_state *r = *(run_state **)user;
  carrier_out *k = &r->out[c];
  if (r->fatal) return;
  if (r->cur) {
    if (batch_add(r->cur, c, 0, bits, n_bytes) ||
        (llrs && batch_add(r->cur, c, 1, llrs, 2 * n_symbols * sizeof *llrs))) {
      cli_error(CMD, "out of memory for the bits on their way to the files");
      r->fatal = 1;
      return;
    }
  } else if (fwrite(bits, 1, n_bytes, k->bits) != n_bytes ||
             (llrs && fwrite(llrs, sizeof *llrs, 2 * n_symbols, k->llr) != 2 * n_symbols)) {
    cli_error(CMD, "cannot write %s: %s", llrs ? k->llr_name : k->bits_name, strerror(errno));
    r->fatal = 1;
    return;
  }
  /* the data bits of this call: unpacked, n_bytes; packed, the bits of its whole bytes, less
   * the zero padding of the flush's last byte */
  uint64_t in_file = k->file_bits + (r->o.packed ? 8 * (uint64_t)n_bytes : n_bytes);
  uint64_t real = 2 * (k->n_symbols + n_symbols);
  size_t have = (size_t)((in_file < real ? in_file : real) - k->n_bits);
  if (k->truth && have) {
    if (have > k->tcap) {
      uint8_t *p = realloc(k->tbuf, have);
      if (!p) {
        cli_error(CMD, "out of memory");
        r->fatal = 1;
        return;
      }
      k->tbuf = p;
      k->tcap = have;
    }
    size_t got = fread(k->tbuf, 1, have, k->truth);
    /* the first symbol of a differential chain carries no information */
    uint64_t skip = r->car[c].ambiguity == PRX_QPSK_DIFFERENTIAL ? 2 : 0;
    for (size_t i = 0; i < got; i++) { /* the call's bits start at file bit n_bits */
      unsigned b = r->o.packed ? (bits[i / 8] >> (7 - i % 8)) & 1 : bits[i];
      if (k->compared + i >= skip) k->errors += b != (k->tbuf[i] != 0);
    }
    k->compared += got;
    k->truth_short += have - got;
  }
  k->n_bits += have;
  k->file_bits = in_file;
  k->n_symbols += n_symbols;
}

/* --iq: appends a carrier's channel samples to its recording */
void rx_on_channel(void *user, size_t c, const prx_cf32 *y, size_t n) {
  run_state *r = *(run_state **)user;
  carrier_out *k = &r->out[c];
  if (r->fatal) return;
  prx_status st = prx_sigmf_write(k->iq, y, n);
  if (st) {
    cli_status_error(CMD, k->iq_base, st);
    r->fatal = 1;
  }
}

static prx_status rx_compute(void *ctx, const void *in, size_t n, uint64_t pos, void *out,
                             size_t *out_n) {
  run_state *r = ctx;
  (void)pos;
  *out_n = 0;
  if (r->n_writers && !r->cur && !(r->cur = batch_take(r))) {
    cli_error(CMD, "out of memory for the bits on their way to the files");
    r->fatal = 1;
    return PRX_ERR_NOMEM;
  }
  if (in) cli_mod_check_add(&r->modc, r->in.format, in, n);
  prx_status st;
  if (r->multi) {
    st = in ? prx_rx_multi_execute(r->multi, in, n) : prx_rx_multi_flush(r->multi);
    r->rx = (prx_rx *)prx_rx_multi_latest(r->multi);
  } else {
    st = in ? prx_rx_execute(r->rx, in, n) : prx_rx_flush(r->rx);
  }
  if (st) {
    cli_status_error(CMD, "receiver", st);
    r->fatal = 1;
    return st;
  }
  if (r->fatal) return PRX_ERR_IO;
  /* the check's samples in: its thread starts (the receiver's FFTW plans were made with it, so
   * FFTW's planner, one at a time, holds nothing of the stream up) */
  cli_mod_check_start(&r->modc);
  if (r->cur && r->cur->n_rec) { /* the call's output to the writers */
    atomic_store(&r->cur->left, r->n_writers);
    memcpy(out, &r->cur, sizeof r->cur);
    *out_n = 1;
    r->cur = NULL;
  }
  r->n_in += n;
  cli_progress_update(&r->progress, r->n_in);
  return PRX_OK;
}

/* Writer `writer`'s carriers' records of one batch, in order, to their files. */
static prx_status rx_write(void *ctx, int writer, const void *out, size_t n, uint64_t block) {
  run_state *r = ctx;
  (void)block;
  if (!n) return PRX_OK;
  bits_batch *b;
  memcpy(&b, out, sizeof b);
  prx_status st = PRX_OK;
  for (size_t i = 0; i < b->n_rec && !st; i++) {
    const bits_rec *e = &b->rec[i];
    if (e->carrier % (unsigned)r->n_writers != (unsigned)writer) continue;
    carrier_out *k = &r->out[e->carrier];
    if (fwrite(b->buf + e->off, 1, e->len, e->llr ? k->llr : k->bits) != e->len) {
      if (!atomic_exchange(&r->write_failed, 1))
        cli_error(CMD, "cannot write %s: %s", e->llr ? k->llr_name : k->bits_name, strerror(errno));
      st = PRX_ERR_IO;
    }
  }
  if (atomic_fetch_sub(&b->left, 1) == 1) batch_give(r, b);
  return st;
}

/* The listed carriers' modulation checked at their places (those --detect found are checked by
 * its findings, rx_detect_carriers; its own are received in theirs): every core at the idle
 * priority beside the stream. */
static int mod_check_init(run_state *r) {
  if (!r->o.n_car) return 0;
  if (cli_mod_check_init(&r->modc, r->in.sample_rate, r->o.n_car, 0, "add pi4 to its --carrier",
                         "drop pi4 from its --carrier"))
    return cli_error(CMD, "out of memory");
  for (size_t c = 0; c < r->o.n_car; c++)
    r->modc.car[c] = (cli_mod_carrier){.freq = r->car[c].freq,
                                       .rs = r->car[c].symbol_rate,
                                       .rolloff = r->car[c].rolloff,
                                       .pi4 = r->car[c].modulation == PRX_QPSK_PI4};
  for (size_t i = 0; i < r->n_found; i++) /* (found_as: --detect's match) */
    if (r->found_as[i] >= 0 && (size_t)r->found_as[i] < r->o.n_car)
      r->modc.car[r->found_as[i]].skip = 1;
  cli_mod_check_channels(&r->modc, &r->rc);
  r->modc.borrow = r->map != NULL; /* the input stays mapped until the run's end */
  return 0;
}

/* The check's verdict (waiting for it) into the carriers' warnings (the note where it could not
 * run). */
void rx_mod_check_end(run_state *r) {
  if (!r->modc.n_car || !r->n_in || cli_interrupted()) return;
  if (cli_mod_check_end(&r->modc))
    for (size_t c = 0; c < r->modc.n_car; c++) {
      r->out[c].levels |= r->modc.car[c].levels;
      if (r->modc.car[c].code) {
        r->out[c].mod_code = r->modc.car[c].code;
        r->out[c].mod_text = r->modc.car[c].text;
      }
    }
  if (!r->o.quiet) cli_mod_check_note(&r->modc, CMD);
}

int rx_stream(run_state *r) {
  if (mod_check_init(r)) return 1;
  if (r->pre_n) { /* the samples --detect read come first */
    cli_mod_check_add(&r->modc, r->in.format, r->pre, r->pre_n);
    cli_mod_check_start(&r->modc);
    prx_status st = r->multi ? prx_rx_multi_execute(r->multi, r->pre, r->pre_n)
                             : prx_rx_execute(r->rx, r->pre, r->pre_n);
    if (st) return cli_status_error(CMD, "receiver", st);
    if (r->fatal) return 1;
    r->n_in = r->pre_n;
  }
  prx_pipe_config c;
  cli_pipe_setup(&c, r->reader, &r->in, r->o.read_block);
  c.compute = rx_compute;
  c.write = rx_write;
  c.ctx = r;
  /* each output slot holds a batch's address (the writers' bits); with several receivers (the
   * stitching) the files are written from the compute stage */
  c.out_bytes = sizeof(bits_batch *);
  if (!r->multi) {
    int cores = prx_cpu_count();
    r->n_writers = cores >= 16 ? 4 : cores >= 8 ? 2 : 1;
    /* POLYRX_WRITERS=N (1..64): the tests' way to several writers on a small machine */
    r->n_writers = cli_env_int("POLYRX_WRITERS", 1, 64, r->n_writers);
    if ((size_t)r->n_writers > r->n_car) r->n_writers = (int)r->n_car;
    c.n_writers = r->n_writers;
  }
  c.pinned = prx_rx_backend(r->rx) == PRX_BACKEND_CUDA; /* the input blocks go by DMA */
  /* a file read by several threads while the GPU computes */
  r->n_readers = cli_pipe_readers(&c, r->reader, prx_rx_backend(r->rx) == PRX_BACKEND_CUDA);
  /* several readers read one receiver block each (2^21 samples, not the one reader's 2^23): 7
   * blocks in flight need a quarter of the page-locked memory (0.5 ms per MiB to make), and the
   * receiver meets the same blocks (a read of 2^23 is cut into 4 of them) and gives the same
   * output */
  if (r->n_readers > 1 && !r->map && !r->o.read_block_set && r->rc.block_samples &&
      r->o.read_block % r->rc.block_samples == 0)
    c.block_samples = r->rc.block_samples;
  /* a file in place: the receiver's copies take its blocks where they lie, a whole read (4
   * receiver blocks, overlapped within the call) per block as there are no buffers to make; with
   * many carriers a whole batch of the receiver's (about a CFO span a row) per block, so that
   * each call runs the banks once a span (a read of 2^23 samples is about a third of a span at
   * 6.5536 Msps and K = 1024: a bank call each, at ~0.5 ms of the banks' own cost a call with
   * 1024 channels) */
  if (r->map && !r->o.read_block_set && r->n_car >= RX_MANY_CARRIERS) {
    size_t batch = prx_rx_gpu_batch_blocks(r->rx) * r->rc.block_samples;
    if (batch > c.block_samples) c.block_samples = batch;
  }
  cli_pipe_use_map(&c, r->reader, r->map);
  prx_pipe_result res;
  int rc = cli_pipe_run(CMD, &c, NULL, &res);
  if (rc < 0 && r->n_in == 0)
    return cli_error(CMD, "%s is empty: no samples to receive", prx_iq_reader_name(r->reader));
  return rc;
}
