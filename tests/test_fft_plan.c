/* FFTW plans from saved wisdom (src/dsp/fft_plan.c): with the wisdom file absent, present,
 * corrupt, cut short, unwritable, disabled or without a cache directory, a measured 4096-point
 * plan computes the DFT (float64 reference) and the demodulator gives the same bits; only where
 * the plans come from changes. The file is created on first use, replaced whole when corrupt,
 * never left half-written, and runs started together all succeed and leave one valid file.
 * Every condition runs in a child process: the file is read once per process. The plans the
 * process shares (prx_fft_run) compute the DFT, are made once per size, give the same bits from
 * 8 threads at once, and leave arrays of another alignment and larger sizes to plans of their
 * own. */
#include "test_qpsk_sig.h"
#include "testutil.h"

#include "core/internal.h" /* prx_alloc */
#include "dsp/fft_plan.h"

#include <pthread.h>

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NFFT 4096

typedef struct {
  int ok;
  double fft_err;
  prx_fft_stats stats;
  size_t nbits;
  uint64_t bits_hash;
  long bit_errors;
} child_result;

/* The FFT's input and its float64 DFT, made once by the parent before any fork. */
static prx_cf32 g_in[NFFT];
static test_cf64 g_ref[NFFT];

static void make_reference(void) {
  test_rng rng;
  test_rng_seed(&rng, 777);
  test_fill_cf32(&rng, g_in, NFFT, 1.0);
  for (size_t k = 0; k < NFFT; k++) {
    double re = 0, im = 0;
    for (size_t j = 0; j < NFFT; j++) {
      double ph = -2 * M_PI * (double)((k * j) % NFFT) / NFFT;
      re += g_in[j].re * cos(ph) - g_in[j].im * sin(ph);
      im += g_in[j].re * sin(ph) + g_in[j].im * cos(ph);
    }
    g_ref[k].re = re;
    g_ref[k].im = im;
  }
}

/* The work of one run: a measured FFT against the float64 DFT, an estimated small one, and the
 * demodulator (whose 16384-point plan is measured too) on a fixed signal. */
static child_result child_work(void) {
  child_result r;
  memset(&r, 0, sizeof r);
  prx_cf32 *in = fftwf_malloc(NFFT * sizeof *in), *out = fftwf_malloc(NFFT * sizeof *out);
  fftwf_plan p = prx_fft_plan_1d(NFFT, in, out, FFTW_FORWARD, PRX_FFT_MEASURE);
  fftwf_plan small = prx_fft_plan_1d(1024, in, out, FFTW_FORWARD, PRX_FFT_MEASURE);
  if (!p || !small) return r;
  memcpy(in, g_in, NFFT * sizeof *in); /* after planning: measuring overwrites the arrays */
  fftwf_execute(p);
  r.fft_err = test_rel_l2_vs_cf64(out, g_ref, NFFT);
  prx_fft_destroy(p);
  prx_fft_destroy(small);
  fftwf_free(in);
  fftwf_free(out);

  tcase c;
  memset(&c, 0, sizeof c);
  c.sps = 4;
  test_rng rng;
  test_rng_seed(&rng, 4343);
  tcase_random(&c, &rng, 0.05, 20);
  c.differential = 1;
  size_t n = tcase_length(&c, 4 * 12000), nref;
  uint8_t *refbits;
  prx_cf32 *x = tcase_make(&c, n, &refbits, &nref);
  if (!x) return r;
  prx_qpsk_config qc = tcase_demod_config(&c, 1);
  prx_qpsk *q;
  if (prx_qpsk_create(&qc, &q) != PRX_OK) return r;
  uint8_t *bits = tcase_demod(q, x, n, NULL, 0, &r.nbits, NULL);
  if (bits) {
    r.bits_hash = test_fnv1a(TEST_FNV_BASIS, bits, r.nbits);
    r.bit_errors = tcase_errors(&c, bits, r.nbits, refbits, nref);
    r.ok = 1;
  }
  prx_fft_get_stats(&r.stats);
  free(bits);
  free(refbits);
  free(x);
  prx_qpsk_destroy(q);
  return r;
}

/* Forks a child with the given environment (NULL values unset), returns its result. */
static pid_t start_child(const char *xdg, const char *home, const char *disable, int *fd) {
  int p[2];
  if (pipe(p) != 0) return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    xdg ? setenv("XDG_CACHE_HOME", xdg, 1) : unsetenv("XDG_CACHE_HOME");
    home ? setenv("HOME", home, 1) : unsetenv("HOME");
    disable ? setenv("POLYRX_FFTW_WISDOM", disable, 1) : unsetenv("POLYRX_FFTW_WISDOM");
    child_result r = child_work();
    ssize_t w = write(p[1], &r, sizeof r);
    _exit(w == (ssize_t)sizeof r ? 0 : 1);
  }
  close(p[1]);
  *fd = p[0];
  return pid;
}

static child_result finish_child(pid_t pid, int fd) {
  child_result r;
  memset(&r, 0, sizeof r);
  ssize_t got = 0;
  while (got < (ssize_t)sizeof r) {
    ssize_t m = read(fd, (char *)&r + got, sizeof r - (size_t)got);
    if (m <= 0) break;
    got += m;
  }
  close(fd);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != (ssize_t)sizeof r || !WIFEXITED(status) || WEXITSTATUS(status)) r.ok = 0;
  return r;
}

static child_result run_child(const char *xdg, const char *home, const char *disable) {
  int fd = -1;
  pid_t pid = start_child(xdg, home, disable, &fd);
  return finish_child(pid, fd);
}

static child_result baseline;

/* The checks every run passes whatever the wisdom file: the DFT and the same bits. */
static void check_same(const char *what, const child_result *r) {
  CHECK(r->ok, "%s: the run failed", what);
  CHECK(r->fft_err < 2e-6, "%s: FFT rel L2 error %.3g against the float64 DFT", what, r->fft_err);
  CHECK(r->bit_errors == 0, "%s: %ld bit errors (-1: count differs)", what, r->bit_errors);
  CHECK(r->nbits == baseline.nbits && r->bits_hash == baseline.bits_hash,
        "%s: the demodulator's bits differ from the run without wisdom", what);
  CHECK(r->stats.estimated >= 1, "%s: the 1024-point plan was not planned by estimate", what);
}

static int file_is_wisdom(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char head[32] = {0};
  size_t n = fread(head, 1, sizeof head - 1, f);
  fclose(f);
  int ok = n > 10 && !strncmp(head, "(fftw-3", 7) && fftwf_import_wisdom_from_filename(path);
  fftwf_forget_wisdom(); /* the children forked later start without it */
  return ok;
}

static void write_text(const char *path, const char *text, size_t n) {
  FILE *f = fopen(path, "w");
  if (!f) return;
  fwrite(text, 1, n, f);
  fclose(f);
}

/* Leftover temporary files (.fftw-wisdom.XXXXXX) in dir. */
static int leftovers(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (!strncmp(e->d_name, ".fftw-wisdom.", 13)) n++;
  closedir(d);
  return n;
}

/* prx_fft_run: the DFT forward (in place and not) against the float64 reference, and back to n
 * times the input; one plan per size, not per call; the same bits from 8 threads at once as
 * from one; an array aligned otherwise and a size above the shared ones planned apart, with the
 * bits of a plan of their own. */
enum { SHARED_THREADS = 8, SHARED_ROUNDS = 50 };
static const int shared_sizes[] = {NFFT, 1000, 1536, 2187, 6000};
typedef struct {
  prx_cf32 *out[5];
  int mismatches;
} shared_worker;

static prx_cf32 *shared_once(int n, int sign) {
  prx_cf32 *a = prx_alloc((size_t)n, sizeof *a), *b = prx_alloc((size_t)n, sizeof *b);
  if (!a || !b) {
    prx_free(a);
    prx_free(b);
    return NULL;
  }
  for (int i = 0; i < n; i++) a[i] = g_in[i % NFFT];
  CHECK_OK(prx_fft_run(n, a, b, sign));
  prx_free(a);
  return b;
}

static void *shared_thread(void *arg) {
  shared_worker *w = arg;
  for (int r = 0; r < SHARED_ROUNDS; r++)
    for (int s = 0; s < 5; s++) {
      int n = shared_sizes[s];
      prx_cf32 *y = shared_once(n, FFTW_FORWARD);
      if (!y || memcmp(y, w->out[s], (size_t)n * sizeof *y)) w->mismatches++;
      prx_free(y);
    }
  return NULL;
}

static void check_shared(void) {
  prx_cf32 *x = prx_alloc(NFFT + 1, sizeof *x), *y = prx_alloc(NFFT + 1, sizeof *y);
  if (!x || !y) return;
  memcpy(x, g_in, sizeof g_in);
  prx_fft_stats before, after;
  prx_fft_get_stats(&before);
  CHECK_OK(prx_fft_run(NFFT, x, y, FFTW_FORWARD));
  double err = 0, ref = 0;
  for (int k = 0; k < NFFT; k++) {
    err = fmax(err, hypot(y[k].re - g_ref[k].re, y[k].im - g_ref[k].im));
    ref = fmax(ref, hypot(g_ref[k].re, g_ref[k].im));
  }
  CHECK(err < 1e-5 * ref, "shared forward: error %.3g of %.3g", err, ref);
  CHECK_OK(prx_fft_run(NFFT, x, x, FFTW_FORWARD)); /* in place: the same bits */
  CHECK(!memcmp(x, y, NFFT * sizeof *x), "shared in place differs from out of place");
  CHECK_OK(prx_fft_run(NFFT, y, x, FFTW_BACKWARD));
  err = 0;
  for (int k = 0; k < NFFT; k++)
    err = fmax(err, hypot(x[k].re / NFFT - g_in[k].re, x[k].im / NFFT - g_in[k].im));
  CHECK(err < 1e-5, "shared backward: error %.3g", err);
  for (int i = 0; i < 10; i++) CHECK_OK(prx_fft_run(NFFT, x, y, FFTW_FORWARD));
  prx_fft_get_stats(&after);
  CHECK(after.estimated - before.estimated == 3, "shared: %u plans made for 3 kinds",
        after.estimated - before.estimated);

  /* an array aligned otherwise: its own plan, the same bits as one made for it */
  memcpy(x + 1, g_in, sizeof g_in);
  CHECK_OK(prx_fft_run(NFFT, x + 1, y, FFTW_FORWARD));
  prx_cf32 *z = prx_alloc(NFFT, sizeof *z);
  fftwf_plan own = z ? prx_fft_plan_1d(NFFT, x + 1, z, FFTW_FORWARD, PRX_FFT_ESTIMATE) : NULL;
  if (own) {
    memcpy(x + 1, g_in, sizeof g_in);
    fftwf_execute(own);
    CHECK(!memcmp(y, z, NFFT * sizeof *y), "misaligned: not the bits of its own plan");
  }
  prx_fft_destroy(own);
  prx_free(z);

  /* 8 threads at once: the bits of one */
  shared_worker w[SHARED_THREADS];
  memset(w, 0, sizeof w);
  prx_cf32 *first[5];
  for (int s = 0; s < 5; s++) first[s] = shared_once(shared_sizes[s], FFTW_FORWARD);
  pthread_t th[SHARED_THREADS];
  for (int t = 0; t < SHARED_THREADS; t++) {
    memcpy(w[t].out, first, sizeof first);
    CHECK(!pthread_create(&th[t], NULL, shared_thread, &w[t]), "thread %d", t);
  }
  int bad = 0;
  for (int t = 0; t < SHARED_THREADS; t++) pthread_join(th[t], NULL), bad += w[t].mismatches;
  CHECK(bad == 0, "shared, 8 threads: %d transforms differ from one thread's", bad);
  for (int s = 0; s < 5; s++) prx_free(first[s]);

  /* above the shared sizes: a plan made for each call, the same bits */
  int big = PRX_FFT_SHARED_MAX_POINTS + 2;
  prx_fft_get_stats(&before);
  prx_cf32 *b = shared_once(big, FFTW_FORWARD), *b2 = shared_once(big, FFTW_FORWARD);
  prx_fft_get_stats(&after);
  CHECK(after.estimated - before.estimated == 2, "%d points: %u plans for 2 calls", big,
        after.estimated - before.estimated);
  CHECK(b && b2 && !memcmp(b, b2, (size_t)big * sizeof *b), "%d points: runs differ", big);
  prx_free(b);
  prx_free(b2);
  prx_free(x);
  prx_free(y);
}

int main(void) {
  char root[] = "/tmp/prx_test_fft_plan_XXXXXX";
  if (!mkdtemp(root)) return 1;
  make_reference();
  char xdg[256], dir[300], file[320], home[256], notdir[256];
  snprintf(xdg, sizeof xdg, "%s/cache", root);
  snprintf(dir, sizeof dir, "%s/polyrx", xdg);
  snprintf(file, sizeof file, "%s/fftw-wisdom", dir);
  snprintf(home, sizeof home, "%s/home", root);
  snprintf(notdir, sizeof notdir, "%s/a-file", root);

  /* disabled: plans measured, nothing read or written */
  baseline = run_child(xdg, home, "off");
  CHECK(baseline.ok && baseline.stats.measured >= 2 && !baseline.stats.wisdom_tried,
        "disabled: measured %u, tried %d", baseline.stats.measured, baseline.stats.wisdom_tried);
  check_same("disabled", &baseline);
  struct stat st;
  CHECK(stat(dir, &st) != 0, "disabled: the cache directory was created");

  /* absent: measured, then the file is created (directories too) */
  child_result r = run_child(xdg, home, NULL);
  check_same("absent", &r);
  CHECK(r.stats.wisdom_tried && !r.stats.wisdom_read && r.stats.measured >= 2 && r.stats.saved,
        "absent: read %d measured %u saved %u", r.stats.wisdom_read, r.stats.measured,
        r.stats.saved);
  CHECK(file_is_wisdom(file), "absent: %s is not a wisdom file after the run", file);

  /* present: every measured plan comes from the file */
  r = run_child(xdg, home, NULL);
  check_same("present", &r);
  CHECK(r.stats.wisdom_read && r.stats.measured == 0 && r.stats.from_wisdom >= 2,
        "present: read %d measured %u from wisdom %u", r.stats.wisdom_read, r.stats.measured,
        r.stats.from_wisdom);

  /* corrupt and cut short: ignored, measured, replaced by a valid file */
  FILE *f = fopen(file, "r");
  char good[65536];
  size_t good_n = f ? fread(good, 1, sizeof good, f) : 0;
  if (f) fclose(f);
  const char garbage[] = "(fftw-3.3.10 fftwf_wisdom #xdeadbeef (not at all wisdom ))) \x01\x02";
  for (int k = 0; k < 3; k++) {
    const char *what = k == 0 ? "corrupt" : k == 1 ? "cut short" : "empty";
    if (k == 0) write_text(file, garbage, sizeof garbage - 1);
    if (k == 1) write_text(file, good, good_n / 2);
    if (k == 2) write_text(file, "", 0);
    r = run_child(xdg, home, NULL);
    check_same(what, &r);
    CHECK(!r.stats.wisdom_read && r.stats.measured >= 2 && r.stats.saved,
          "%s: read %d measured %u saved %u", what, r.stats.wisdom_read, r.stats.measured,
          r.stats.saved);
    CHECK(file_is_wisdom(file), "%s: the file was not replaced by valid wisdom", what);
  }

  /* unreadable (a directory where the file should be) and unwritable (the cache "directory" is
   * a regular file): measured, no error */
  write_text(notdir, "x", 1);
  r = run_child(notdir, home, NULL);
  check_same("unwritable", &r);
  CHECK(r.stats.save_failed && !r.stats.saved, "unwritable: saved %u failed %u", r.stats.saved,
        r.stats.save_failed);
  char root2[300], dir2[320], file2[340];
  snprintf(root2, sizeof root2, "%s/c2", root);
  snprintf(dir2, sizeof dir2, "%s/polyrx", root2);
  snprintf(file2, sizeof file2, "%s/fftw-wisdom", dir2);
  mkdir(root2, 0755);
  mkdir(dir2, 0755);
  mkdir(file2, 0755);
  r = run_child(root2, home, NULL);
  check_same("unreadable", &r);
  CHECK(!r.stats.wisdom_read && r.stats.save_failed, "unreadable: read %d failed %u",
        r.stats.wisdom_read, r.stats.save_failed);
  CHECK(leftovers(dir2) == 0, "unreadable: temporary files left behind");

  /* no cache directory at all (no HOME, no XDG_CACHE_HOME); a relative XDG_CACHE_HOME is
   * ignored for HOME's */
  r = run_child(NULL, NULL, NULL);
  check_same("no home", &r);
  CHECK(!r.stats.wisdom_tried, "no home: a wisdom file was looked for");
  r = run_child("relative/cache", home, NULL);
  check_same("relative XDG", &r);
  char homefile[320];
  snprintf(homefile, sizeof homefile, "%s/.cache/polyrx/fftw-wisdom", home);
  CHECK(file_is_wisdom(homefile), "relative XDG_CACHE_HOME: no wisdom under $HOME/.cache");

  /* runs started together on an absent file: all succeed, one valid file, nothing left over */
  char xdg3[300], dir3[320], file3[340];
  snprintf(xdg3, sizeof xdg3, "%s/c3", root);
  snprintf(dir3, sizeof dir3, "%s/polyrx", xdg3);
  snprintf(file3, sizeof file3, "%s/fftw-wisdom", dir3);
  enum { RUNS = 4 };
  pid_t pid[RUNS];
  int fd[RUNS];
  for (int i = 0; i < RUNS; i++) pid[i] = start_child(xdg3, home, NULL, &fd[i]);
  for (int i = 0; i < RUNS; i++) {
    r = finish_child(pid[i], fd[i]);
    check_same("concurrent", &r);
  }
  CHECK(file_is_wisdom(file3), "concurrent: no valid wisdom file after the runs");
  CHECK(leftovers(dir3) == 0, "concurrent: temporary files left behind");

  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
  check_shared();
  return test_finish("test_fft_plan");
}
