/* The stream's first input block read on a thread of its own while the command makes its
 * objects (cli.h, cli_first_block_start): the block's read, with the first touch of its pages,
 * is off the compute stage's path instead of between the pipeline's start and its first
 * compute call (prx_pipe_config.first_block). */
#include "cli.h"

#include "core/internal.h"
#include "io/io_internal.h"

#include <stdlib.h>
#include <string.h>

static void *first_read_main(void *arg) {
  cli_first_block *f = arg;
  f->st = prx_iq_read(f->reader, f->buf, f->max, &f->n);
  if (f->st) snprintf(f->msg, sizeof f->msg, "%s", prx_last_error());
  return NULL;
}

int cli_first_block_start(cli_first_block *f, prx_iq_reader *r, size_t block_samples) {
  memset(f, 0, sizeof *f);
  const char *env = getenv("POLYRX_FIRST_BLOCK");
  /* a regular file only: its read never blocks, so a stop signal held meanwhile is not missed
   * and the thread is always joined at once */
  if ((env && !strcmp(env, "0")) || !prx_iq_reader_positional(r)) return 0;
  size_t ss = prx_format_size(prx_iq_reader_info(r)->format);
  if (!ss || block_samples > SIZE_MAX / ss) return 0;
  f->reader = r;
  f->max = block_samples;
  f->bytes = block_samples * ss;
  if (!(f->buf = prx_pipe_host_alloc(f->bytes, 0))) return 0;
  if (cli_thread_start(&f->thread, first_read_main, f)) {
    prx_pipe_host_free(f->buf);
    f->buf = NULL;
    return 0;
  }
  f->started = 1;
  return 1;
}

static void first_join(cli_first_block *f) {
  if (!f->started || f->joined) return;
  pthread_join(f->thread, NULL);
  f->joined = 1;
}

/* The pipeline's first read where the block could not be handed over (a read error, or
 * nothing read): the samples read and the read's status, as the reader would have met them; the
 * later reads go on. */
static prx_status first_read(void *ctx, void *buf, size_t max, size_t *n) {
  cli_first_block *f = ctx;
  if (f->taken) return prx_iq_read(f->reader, buf, max, n);
  f->taken = 1;
  *n = 0;
  if (f->n > max) /* a pipeline of smaller blocks than the one read: not a sample is dropped */
    return prx_fail(PRX_ERR_INTERNAL, "the first block holds %zu samples, the pipeline's %zu", f->n,
                    max);
  *n = f->n;
  memcpy(buf, f->buf, f->n * (f->bytes / f->max));
  return f->st ? prx_fail(f->st, "%s", f->msg) : PRX_OK;
}

void cli_first_block_use(prx_pipe_config *c, cli_first_block *f) {
  if (!f->started) return;
  first_join(f); /* read while the command made its objects: done by now, as a rule */
  if (!f->st && f->n > 0 && f->n <= c->block_samples && !c->read_at && !c->alloc) {
    c->first_block = f->buf; /* the pipeline's from here on */
    c->first_samples = f->n;
    f->given = 1;
    return;
  }
  c->read = first_read;
  c->read_ctx = f;
}

void cli_first_block_end(cli_first_block *f) {
  first_join(f);
  if (f->buf && !f->given) prx_pipe_host_free(f->buf);
  f->buf = NULL;
}
