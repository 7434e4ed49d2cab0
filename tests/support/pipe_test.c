#include "pipe_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint32_t mix(uint32_t s, uint32_t x, uint64_t pos) {
  s ^= x + 0x9e3779b9u + (s << 6) + (s >> 2);
  s = s * 2654435761u + (uint32_t)pos * 40503u;
  return s;
}

void pipe_hash_block(uint32_t *state, const uint32_t *x, size_t n, uint64_t pos, uint32_t *y) {
  uint32_t s = *state;
  for (size_t i = 0; i < n; i++) y[i] = s = mix(s, x[i], pos + i);
  *state = s;
}

void pipe_hash_flush(uint32_t *state, uint64_t pos, uint32_t *y) {
  uint32_t s = *state;
  for (int k = 0; k < PIPE_FLUSH_WORDS; k++) y[k] = s = mix(s, 0xf1u + (uint32_t)k, pos + k);
  *state = s;
}

size_t pipe_hash_reference(const uint32_t *x, size_t n, uint32_t *y) {
  uint32_t s = 1;
  pipe_hash_block(&s, x, n, 0, y);
  pipe_hash_flush(&s, n, y + n);
  return n + PIPE_FLUSH_WORDS;
}

void pipe_test_input(uint64_t seed, uint32_t *x, size_t n, uint32_t *ref) {
  test_rng rng;
  test_rng_seed(&rng, seed);
  for (size_t i = 0; i < n; i++) x[i] = (uint32_t)test_rng_u64(&rng);
  pipe_hash_reference(x, n, ref);
}

int pipe_hash_prefix_ok(const uint32_t *x, const uint32_t *y, size_t m, int flushed) {
  uint32_t *want = malloc((m + PIPE_FLUSH_WORDS) * sizeof *want);
  if (!want) return 0;
  size_t nw = pipe_hash_reference(x, m, want);
  if (!flushed) nw = m;
  int ok = memcmp(y, want, nw * sizeof *want) == 0;
  free(want);
  return ok;
}

void pipe_write_file(const char *path, const void *p, size_t bytes) {
  FILE *f = fopen(path, "wb");
  int ok = f && fwrite(p, 1, bytes, f) == bytes;
  if (f) ok = fclose(f) == 0 && ok;
  CHECK(ok, "cannot write %s", path);
}

int pipe_files_make(pipe_files *f, const char *name, const uint32_t *x, size_t n) {
  memset(f, 0, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "/tmp/prx_%s_XXXXXX", name);
  if (!mkdtemp(f->dir)) {
    CHECK(0, "mkdtemp %s", f->dir);
    return 0;
  }
  char base[128];
  snprintf(f->raw, sizeof f->raw, "%s/x.ci16", f->dir);
  snprintf(base, sizeof base, "%s/rec", f->dir);
  snprintf(f->meta, sizeof f->meta, "%s.sigmf-meta", base);
  snprintf(f->data, sizeof f->data, "%s.sigmf-data", base);
  snprintf(f->archive, sizeof f->archive, "%s/arc.sigmf", f->dir);
  pipe_write_file(f->raw, x, 4 * n);
  prx_sigmf_meta m = prx_sigmf_meta_default();
  m.format = PRX_CI16;
  m.sample_rate = 1e6;
  const char *bases[] = {base, f->archive};
  for (int i = 0; i < 2; i++) {
    prx_sigmf_writer *w = NULL;
    CHECK_OK(prx_sigmf_writer_open(bases[i], &m, &w));
    CHECK_OK(prx_sigmf_write(w, x, n));
    CHECK_OK(prx_sigmf_writer_close(w));
  }
  return 1;
}

void pipe_files_remove(const pipe_files *f) {
  unlink(f->raw);
  unlink(f->meta);
  unlink(f->data);
  unlink(f->archive);
  rmdir(f->dir);
}

static prx_status iq_compute(void *ctx, const void *in, size_t n, uint64_t pos, void *out,
                             size_t *out_n) {
  pipe_iq_sink *s = ctx;
  (void)out;
  if (s->pause_us) usleep(s->pause_us);
  if (pos != s->pos) s->bad_pos = 1;
  if (in) {
    pipe_hash_block(&s->state, in, n, pos, s->y + s->n);
    s->n += n;
    s->pos += n;
  }
  *out_n = 0;
  return PRX_OK;
}

prx_status pipe_no_write(void *ctx, int w, const void *out, size_t n, uint64_t block) {
  (void)ctx, (void)w, (void)out, (void)n, (void)block;
  return PRX_OK;
}

prx_pipe_config pipe_iq_config(prx_iq_reader *rd, size_t block, int readers, pipe_iq_sink *s,
                               uint32_t *y) {
  memset(s, 0, sizeof *s);
  s->state = 1;
  s->y = y;
  prx_pipe_config c = prx_pipe_config_default();
  c.block_samples = block;
  c.sample_size = 4;
  c.out_bytes = 8;
  c.in_depth = readers + 3;
  c.read = prx_pipe_iq_read;
  c.read_at = prx_pipe_iq_read_at;
  c.n_readers = readers;
  c.read_ctx = rd;
  c.compute = iq_compute;
  c.write = pipe_no_write;
  c.ctx = s;
  return c;
}

prx_status pipe_iq_run(const prx_pipe_config *c, prx_pipe_result *r, size_t *n) {
  const pipe_iq_sink *s = c->ctx;
  prx_status st = prx_pipe_run(c, r);
  *n = s->bad_pos ? 0 : s->n;
  return st;
}

void *pipe_count_alloc(void *ctx, size_t bytes) {
  pipe_alloc_count *a = ctx;
  if (atomic_fetch_add(&a->allocs, 1) + 1 == atomic_load(&a->fail_at)) return NULL;
  return malloc(bytes);
}

void pipe_count_free(void *ctx, void *p) {
  pipe_alloc_count *a = ctx;
  atomic_fetch_add(&a->frees, 1);
  free(p);
}
