/* FFTW planning with saved wisdom (fft_plan.h has the contract). Every FFTW planner call and the
 * wisdom import/export run under prx_fftw_lock: FFTW's planner and its wisdom are process-wide
 * state that is not thread-safe. The file is read and written by plain system calls outside
 * FFTW, so a concurrent writer is met only through rename's atomicity. */
#include "fft_plan.h"

#include "../core/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WISDOM_MAX ((size_t)16 << 20) /* a larger file is not ours */

/* Guarded by the planner lock. */
static int wisdom_loaded;
static prx_fft_stats stats;

static int wisdom_disabled(void) {
  const char *e = getenv("POLYRX_FFTW_WISDOM");
  return e && (!strcmp(e, "off") || !strcmp(e, "0"));
}

/* The cache directory ($XDG_CACHE_HOME/polyrx or $HOME/.cache/polyrx) into buf; 0 when there is
 * none. */
static int cache_dir(char *buf, size_t cap) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (xdg && xdg[0] == '/') /* the XDG spec: a relative path is invalid and ignored */
    n = snprintf(buf, cap, "%s/polyrx", xdg);
  else if (home && home[0] == '/')
    n = snprintf(buf, cap, "%s/.cache/polyrx", home);
  else
    return 0;
  return n > 0 && (size_t)n < cap;
}

/* Reads the whole file into a NUL-terminated malloc'd string; NULL on any failure. */
static char *read_file(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  char *text = NULL;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size < WISDOM_MAX &&
      (text = malloc((size_t)st.st_size + 1))) {
    size_t n = 0;
    while (n < (size_t)st.st_size) {
      ssize_t r = read(fd, text + n, (size_t)st.st_size - n);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      n += (size_t)r;
    }
    text[n] = '\0';
    if (n != (size_t)st.st_size) {
      free(text);
      text = NULL;
    }
  }
  close(fd);
  return text;
}

/* Imports the wisdom file once per process (lock held). */
static void load_wisdom(void) {
  if (wisdom_loaded) return;
  wisdom_loaded = 1;
  char dir[4096], path[4200];
  if (wisdom_disabled() || !cache_dir(dir, sizeof dir)) return;
  snprintf(path, sizeof path, "%s/fftw-wisdom", dir);
  stats.wisdom_tried = 1;
  char *text = read_file(path);
  /* FFTW parses into a scratch table and keeps nothing from a file it rejects */
  if (text && fftwf_import_wisdom_from_string(text)) stats.wisdom_read = 1;
  free(text);
}

/* mkdir -p for the cache directory; 0 on success. */
static int make_dirs(const char *path) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) return -1;
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == '\0') {
      char keep = *s;
      *s = '\0';
      if (mkdir(p, 0755) != 0 && errno != EEXIST) return -1;
      *s = keep;
      if (!keep) break;
    }
  }
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

/* Writes the process's wisdom to a temporary file and renames it over the wisdom file (lock
 * held). Every failure leaves the old file as it was. */
static void save_wisdom(void) {
  char dir[4096], path[4200], tmp[4200];
  if (wisdom_disabled() || !cache_dir(dir, sizeof dir)) return;
  snprintf(path, sizeof path, "%s/fftw-wisdom", dir);
  snprintf(tmp, sizeof tmp, "%s/.fftw-wisdom.XXXXXX", dir);
  int ok = 0;
  if (make_dirs(dir) == 0) {
    int fd = mkstemp(tmp);
    if (fd >= 0) {
      char *text = fftwf_export_wisdom_to_string();
      size_t len = text ? strlen(text) : 0, n = 0;
      while (text && n < len) {
        ssize_t w = write(fd, text + n, len - n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        n += (size_t)w;
      }
      fftwf_free(text);
      fchmod(fd, 0644);
      ok = text && n == len && close(fd) == 0 && rename(tmp, path) == 0;
      if (!ok) unlink(tmp);
    }
  }
  if (ok)
    stats.saved++;
  else
    stats.save_failed++;
}

fftwf_plan prx_fft_plan_1d(int n, prx_cf32 *in, prx_cf32 *out, int sign, prx_fft_effort effort) {
  fftwf_complex *fi = (fftwf_complex *)in, *fo = (fftwf_complex *)out;
  fftwf_plan p = NULL;
  prx_fftw_lock();
  if (effort == PRX_FFT_MEASURE && n >= PRX_FFT_MEASURE_MIN_POINTS) {
    load_wisdom();
    p = fftwf_plan_dft_1d(n, fi, fo, sign, FFTW_MEASURE | FFTW_WISDOM_ONLY);
    if (p) {
      stats.from_wisdom++;
    } else {
      p = fftwf_plan_dft_1d(n, fi, fo, sign, FFTW_MEASURE);
      if (p) {
        stats.measured++;
        save_wisdom();
      }
    }
  } else {
    p = fftwf_plan_dft_1d(n, fi, fo, sign, FFTW_ESTIMATE);
    if (p) stats.estimated++;
  }
  prx_fftw_unlock();
  return p;
}

void prx_fft_destroy(fftwf_plan plan) {
  if (!plan) return;
  prx_fftw_lock();
  fftwf_destroy_plan(plan);
  prx_fftw_unlock();
}

/* The shared plans (prx_fft_run), added under the planner lock; n_shared is read without it
 * (acquire), and a slot below it is complete and never changes. */
typedef struct {
  int n, sign, in_place;
  fftwf_plan plan;
} shared_plan;
static shared_plan shared[PRX_FFT_SHARED_PLANS];
static _Atomic size_t n_shared;

static fftwf_plan find_shared(size_t count, int n, int sign, int in_place) {
  for (size_t i = 0; i < count; i++)
    if (shared[i].n == n && shared[i].sign == sign && shared[i].in_place == in_place)
      return shared[i].plan;
  return NULL;
}

/* The shared plan for (n, sign, in place), made on arrays of its own where there is none yet;
 * NULL when FFTW cannot plan, the size is not shared or the table is full. */
static fftwf_plan shared_plan_for(int n, int sign, int in_place) {
  if (n > PRX_FFT_SHARED_MAX_POINTS) return NULL;
  fftwf_plan p =
      find_shared(atomic_load_explicit(&n_shared, memory_order_acquire), n, sign, in_place);
  if (p) return p;
  prx_fftw_lock();
  size_t count = atomic_load_explicit(&n_shared, memory_order_relaxed);
  p = find_shared(count, n, sign, in_place); /* (another thread's, made meanwhile) */
  if (!p && count < PRX_FFT_SHARED_PLANS) {
    prx_cf32 *a = prx_alloc((size_t)n, sizeof *a),
             *b = in_place ? a : prx_alloc((size_t)n, sizeof *b);
    if (a && b)
      p = fftwf_plan_dft_1d(n, (fftwf_complex *)a, (fftwf_complex *)b, sign, FFTW_ESTIMATE);
    if (p) {
      stats.estimated++;
      shared[count] = (shared_plan){n, sign, in_place, p};
      atomic_store_explicit(&n_shared, count + 1, memory_order_release);
    }
    if (b != a) prx_free(b);
    prx_free(a);
  }
  prx_fftw_unlock();
  return p;
}

prx_status prx_fft_run(int n, prx_cf32 *in, prx_cf32 *out, int sign) {
  const int in_place = in == out;
  /* (the shared plans' arrays are prx_alloc'd: others plan their own) */
  const int aligned = fftwf_alignment_of((float *)in) == 0 && fftwf_alignment_of((float *)out) == 0;
  fftwf_plan p = aligned ? shared_plan_for(n, sign, in_place) : NULL;
  if (p) {
    fftwf_execute_dft(p, (fftwf_complex *)in, (fftwf_complex *)out);
    return PRX_OK;
  }
  p = prx_fft_plan_1d(n, in, out, sign, PRX_FFT_ESTIMATE);
  if (!p) return prx_fail(PRX_ERR_INTERNAL, "FFTW cannot plan %d points", n);
  fftwf_execute(p);
  prx_fft_destroy(p);
  return PRX_OK;
}

typedef struct {
  prx_cf32 *in, *out;
  fftwf_plan plan;
} fft_warm;

void *prx_fft_warm(int n, prx_fft_effort effort) {
  fft_warm *w = n > 0 ? calloc(1, sizeof *w) : NULL;
  if (!w) return NULL;
  /* prx_alloc's alignment, as the objects' buffers they plan with */
  w->in = prx_alloc((size_t)n, sizeof *w->in);
  w->out = prx_alloc((size_t)n, sizeof *w->out);
  if (w->in && w->out) w->plan = prx_fft_plan_1d(n, w->in, w->out, FFTW_FORWARD, effort);
  return w;
}

void prx_fft_warm_end(void *warm) {
  fft_warm *w = warm;
  if (!w) return;
  prx_fft_destroy(w->plan);
  prx_free(w->in);
  prx_free(w->out);
  free(w);
}

void prx_fft_get_stats(prx_fft_stats *out) {
  prx_fftw_lock();
  *out = stats;
  prx_fftw_unlock();
}
