#include "testutil.h"
#include <dirent.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int test_failures = 0;

void test_stdin_feed_start(test_stdin_feed *f, const void *p, size_t n, uint64_t seed,
                           size_t max_piece) {
  int fds[2];
  if (pipe(fds)) {
    perror("pipe");
    exit(1);
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    test_rng rng;
    test_rng_seed(&rng, seed);
    for (size_t off = 0; off < n;) {
      size_t piece = 1 + test_rng_u64(&rng) % max_piece;
      if (piece > n - off) piece = n - off;
      if (write(fds[1], (const char *)p + off, piece) != (ssize_t)piece) _exit(1);
      off += piece;
    }
    _exit(0);
  }
  close(fds[1]);
  f->pid = pid;
  f->saved = dup(0);
  dup2(fds[0], 0);
  close(fds[0]);
}

void test_stdin_feed_stop(test_stdin_feed *f) {
  dup2(f->saved, 0);
  close(f->saved);
  if (f->pid > 0) {
    kill((pid_t)f->pid, SIGTERM); /* a child that exited is a zombie until reaped: harmless */
    waitpid((pid_t)f->pid, NULL, 0);
  }
  f->pid = -1;
}

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void test_rng_seed(test_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t test_rng_u64(test_rng *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double test_rng_uniform(test_rng *r) { return (test_rng_u64(r) >> 11) * 0x1.0p-53; }

double test_rng_gauss(test_rng *r) {
  double u1 = test_rng_uniform(r), u2 = test_rng_uniform(r);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t test_fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

void test_fill_cf32(test_rng *r, prx_cf32 *x, size_t n, double sigma) {
  for (size_t i = 0; i < n; i++) {
    x[i].re = (float)(sigma * test_rng_gauss(r));
    x[i].im = (float)(sigma * test_rng_gauss(r));
  }
}

double test_rel_l2_cf32(const prx_cf32 *a, const prx_cf32 *b, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    double dr = (double)a[i].re - b[i].re, di = (double)a[i].im - b[i].im;
    num += dr * dr + di * di;
    den += (double)b[i].re * b[i].re + (double)b[i].im * b[i].im;
  }
  if (den == 0) return num == 0 ? 0 : INFINITY;
  double e = sqrt(num / den);
  return isnan(e) ? INFINITY : e;
}

double test_rel_l2_vs_cf64(const prx_cf32 *a, const test_cf64 *ref, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; i++) {
    double dr = a[i].re - ref[i].re, di = a[i].im - ref[i].im;
    num += dr * dr + di * di;
    den += ref[i].re * ref[i].re + ref[i].im * ref[i].im;
  }
  if (den == 0) return num == 0 ? 0 : INFINITY;
  double e = sqrt(num / den);
  return isnan(e) ? INFINITY : e;
}

int test_finish(const char *name) {
  if (test_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, test_failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}

int test_tmpdir(char *dir, size_t n, const char *name) {
  const char *tmp = getenv("TMPDIR");
  if (snprintf(dir, n, "%s/polyrx-test-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name) >= (int)n ||
      !mkdtemp(dir)) {
    fprintf(stderr, "cannot make a temporary directory for %s: %s\n", name, strerror(errno));
    return -1;
  }
  return 0;
}

char *test_path(const char *dir, const char *name) {
  static char buf[4][600];
  static int i;
  char *p = buf[i++ % 4];
  snprintf(p, sizeof buf[0], "%s/%s", dir, name);
  return p;
}

void test_tmpdir_remove(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
}

char *test_slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *t = n >= 0 ? malloc((size_t)n + 1) : NULL;
  size_t got = t ? fread(t, 1, (size_t)n, f) : 0;
  fclose(f);
  if (!t) return NULL;
  t[got] = 0;
  if (len) *len = got;
  return t;
}

int test_open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  if (!d) return -1;
  while (readdir(d)) n++;
  closedir(d);
  return n;
}

int test_files_named(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (!strncmp(e->d_name, prefix, strlen(prefix))) n++;
  if (d) closedir(d);
  return n;
}
