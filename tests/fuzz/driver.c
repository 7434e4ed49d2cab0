/* Regression driver for a fuzz target, for builds without libFuzzer (gcc, CI, the ASan/UBSan
 * build): runs LLVMFuzzerTestOneInput over every file of the given corpus directories (or single
 * files), then over a fixed number of seeded random mutations of them (bit flips, byte
 * overwrites with "interesting" values, insertions, deletions, truncations, duplications and
 * splices), so that every ctest run feeds the target the same few thousand inputs beyond its
 * corpus. An invariant failure, an abort or a sanitizer report saves the input being run to
 * fuzz-crash-<target>-<index> in the working directory and prints how to run it again.
 *
 *   usage: DRIVER [-n MUTATIONS] [-s SEED] [-t SECONDS] [-d DIR] PATH...
 *
 * -n: mutated inputs to run after the corpus (default 2000); -s: seed of the mutations
 * (default 1); -t: stop early, with a note, once this many seconds have passed (default 60, a
 * guard against a loaded machine; the run is otherwise the same every time); -d: write the
 * mutated inputs to DIR instead of running them (to inspect, or to feed a libFuzzer binary). */
#include "fuzz.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_LEN 8192 /* mutated inputs are cut to this length */

typedef struct {
  uint8_t *data;
  size_t len;
  char *name;
} input;

static input *inputs;
static size_t n_inputs, cap_inputs;

/* the input being run, for the crash handler */
static const uint8_t *cur_data;
static size_t cur_len;
static char crash_path[256];

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "fuzz driver: out of memory\n");
    exit(2);
  }
  return p;
}

/* Writes the current input to crash_path; async-signal-safe (open/write only). */
static void save_current(void) {
  if (!cur_data || !crash_path[0]) return;
  int fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  size_t off = 0;
  while (off < cur_len) {
    ssize_t w = write(fd, cur_data + off, cur_len - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  close(fd);
  static const char msg[] = "fuzz driver: the failing input was saved to ";
  (void)!write(2, msg, sizeof msg - 1);
  (void)!write(2, crash_path, strlen(crash_path));
  (void)!write(2, "\n", 1);
  cur_data = NULL;
}

static void on_signal(int sig) {
  save_current();
  signal(sig, SIG_DFL);
  raise(sig);
}

/* The sanitizers' runtimes call this before they exit on a report. */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static void add_input(const char *path, uint8_t *data, size_t len) {
  if (n_inputs == cap_inputs) {
    cap_inputs = cap_inputs ? 2 * cap_inputs : 64;
    input *n = realloc(inputs, cap_inputs * sizeof *n);
    if (!n) {
      fprintf(stderr, "fuzz driver: out of memory\n");
      exit(2);
    }
    inputs = n;
  }
  inputs[n_inputs].data = data;
  inputs[n_inputs].len = len;
  inputs[n_inputs].name = strdup(path);
  n_inputs++;
}

static int load_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fuzz driver: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 4096, len = 0;
  uint8_t *buf = xmalloc(cap);
  for (;;) {
    if (len == cap) {
      uint8_t *nb = realloc(buf, cap *= 2);
      if (!nb) {
        fprintf(stderr, "fuzz driver: out of memory\n");
        exit(2);
      }
      buf = nb;
    }
    size_t r = fread(buf + len, 1, cap - len, f);
    if (r == 0) break;
    len += r;
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    fprintf(stderr, "fuzz driver: cannot read %s\n", path);
    free(buf);
    return -1;
  }
  add_input(path, buf, len);
  return 0;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir (not recursive), in name order so that runs are reproducible. */
static int load_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "fuzz driver: cannot open directory %s: %s\n", dir, strerror(errno));
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) exit(2);
      names = nn;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    names[n] = xmalloc(len);
    snprintf(names[n], len, "%s/%s", dir, e->d_name);
    n++;
  }
  closedir(d);
  qsort(names, n, sizeof *names, cmp_names);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode) && load_file(names[i])) rc = -1;
    free(names[i]);
  }
  free(names);
  return rc;
}

/* SplitMix64: the mutations depend only on the seed. */
static uint64_t rng_state;
static uint64_t rng(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static size_t rng_below(size_t n) { return n ? (size_t)(rng() % n) : 0; }

/* One mutation of buf[0..*len) in place (capacity MAX_LEN). */
static void mutate_once(uint8_t *buf, size_t *len) {
  static const uint8_t interesting[] = {0,   1,   0x7f, 0x80, 0xff, 0xfe, '0',  '1',  '9', '-',
                                        ',', '.', 'e',  'k',  'M',  '"',  '{',  '}',  '[', ']',
                                        ':', ' ', '\n', '\\', 'n',  'I',  0x40, 0x20, 0x10};
  size_t n = *len;
  switch (rng_below(9)) {
  case 0: /* flip a bit */
    if (n) buf[rng_below(n)] ^= (uint8_t)(1u << rng_below(8));
    break;
  case 1: /* a random byte */
    if (n) buf[rng_below(n)] = (uint8_t)rng();
    break;
  case 2: /* an interesting byte */
    if (n) buf[rng_below(n)] = interesting[rng_below(sizeof interesting)];
    break;
  case 3: { /* insert 1..8 random or interesting bytes */
    size_t k = 1 + rng_below(8), at = rng_below(n + 1);
    if (n + k > MAX_LEN) break;
    memmove(buf + at + k, buf + at, n - at);
    for (size_t i = 0; i < k; i++)
      buf[at + i] = rng() & 1 ? (uint8_t)rng() : interesting[rng_below(sizeof interesting)];
    *len = n + k;
    break;
  }
  case 4: { /* delete a range */
    if (!n) break;
    size_t at = rng_below(n), k = 1 + rng_below(n - at < 16 ? n - at : 16);
    memmove(buf + at, buf + at + k, n - at - k);
    *len = n - k;
    break;
  }
  case 5: /* truncate */ *len = rng_below(n + 1); break;
  case 6: { /* duplicate a chunk in place */
    if (!n) break;
    size_t from = rng_below(n), k = 1 + rng_below(n - from), at = rng_below(n + 1);
    if (n + k > MAX_LEN) break;
    uint8_t tmp[MAX_LEN];
    memcpy(tmp, buf + from, k);
    memmove(buf + at + k, buf + at, n - at);
    memcpy(buf + at, tmp, k);
    *len = n + k;
    break;
  }
  case 7: { /* splice: a chunk of another input overwrites or extends the tail */
    const input *o = &inputs[rng_below(n_inputs)];
    if (!o->len) break;
    size_t from = rng_below(o->len), k = 1 + rng_below(o->len - from), at = rng_below(n + 1);
    if (at + k > MAX_LEN) k = MAX_LEN - at;
    memcpy(buf + at, o->data + from, k);
    if (at + k > n) *len = at + k;
    break;
  }
  case 8: { /* a little-endian 16/32-bit boundary value */
    static const uint32_t vals[] = {0,      1,          0x7fff,      0x8000,
                                    0xffff, 0x7fffffff, 0x80000000u, 0xffffffffu};
    size_t w = rng() & 1 ? 2 : 4;
    if (n < w) break;
    uint32_t v = vals[rng_below(sizeof vals / sizeof vals[0])];
    size_t at = rng_below(n - w + 1);
    for (size_t i = 0; i < w; i++) buf[at + i] = (uint8_t)(v >> (8 * i));
    break;
  }
  }
}

/* Runs the target on an exactly sized copy, so that a read past the end is seen by ASan. */
static void run_one(const uint8_t *data, size_t len, const char *target, size_t index) {
  uint8_t *copy = xmalloc(len);
  memcpy(copy, data, len);
  snprintf(crash_path, sizeof crash_path, "fuzz-crash-%s-%zu", target, index);
  cur_data = copy;
  cur_len = len;
  LLVMFuzzerTestOneInput(copy, len);
  cur_data = NULL;
  free(copy);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv) {
  unsigned long mutations = 2000, seed = 1;
  double limit = 60;
  const char *dump = NULL;
  int opt;
  while ((opt = getopt(argc, argv, "n:s:t:d:")) != -1) {
    switch (opt) {
    case 'n': mutations = strtoul(optarg, NULL, 10); break;
    case 's': seed = strtoul(optarg, NULL, 10); break;
    case 't': limit = strtod(optarg, NULL); break;
    case 'd': dump = optarg; break;
    default:
      fprintf(stderr, "usage: %s [-n MUTATIONS] [-s SEED] [-t SECONDS] [-d DIR] PATH...\n",
              argv[0]);
      return 2;
    }
  }
  if (optind >= argc) {
    fprintf(stderr, "usage: %s [-n MUTATIONS] [-s SEED] [-t SECONDS] [-d DIR] PATH...\n", argv[0]);
    return 2;
  }
  for (int i = optind; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "fuzz driver: cannot open %s: %s\n", argv[i], strerror(errno));
      return 2;
    }
    if ((S_ISDIR(st.st_mode) ? load_dir(argv[i]) : load_file(argv[i])) != 0) return 2;
  }
  /* the target's name for crash files: the program name without directory and suffix */
  const char *target = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
  char tname[64];
  snprintf(tname, sizeof tname, "%s", target);
  char *suffix = strstr(tname, "_regress");
  if (suffix) *suffix = '\0';

  signal(SIGABRT, on_signal);
  if (__sanitizer_set_death_callback)
    __sanitizer_set_death_callback(save_current);
  else { /* without a sanitizer, catch the crashes themselves */
    signal(SIGSEGV, on_signal);
    signal(SIGBUS, on_signal);
    signal(SIGFPE, on_signal);
    signal(SIGILL, on_signal);
  }

  double t0 = now();
  size_t ran = 0;
  if (!dump) {
    static const uint8_t empty[1];
    run_one(empty, 0, tname, ran++); /* the empty input, always */
    for (size_t i = 0; i < n_inputs; i++) run_one(inputs[i].data, inputs[i].len, tname, ran++);
  }
  if (n_inputs == 0 && mutations) {
    static uint8_t zero[1];
    add_input("(empty)", zero, 0);
  }
  rng_state = seed;
  uint8_t *buf = xmalloc(MAX_LEN);
  unsigned long done = 0;
  for (; done < mutations; done++) {
    if (!dump && limit > 0 && now() - t0 > limit) {
      fprintf(stderr, "fuzz driver: note: stopped after %lu of %lu mutations (%.0f s limit)\n",
              done, mutations, limit);
      break;
    }
    const input *base = &inputs[rng_below(n_inputs)];
    size_t len = base->len < MAX_LEN ? base->len : MAX_LEN;
    memcpy(buf, base->data, len);
    size_t k = 1 + rng_below(rng() & 1 ? 3 : 8);
    for (size_t i = 0; i < k; i++) mutate_once(buf, &len);
    if (dump) {
      char path[512];
      snprintf(path, sizeof path, "%s/mutation-%06lu", dump, done);
      FILE *f = fopen(path, "wb");
      if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
        fprintf(stderr, "fuzz driver: cannot write %s\n", path);
        return 2;
      }
      continue;
    }
    run_one(buf, len, tname, ran++);
  }
  free(buf);
  if (dump)
    printf("%s: wrote %lu mutations of %zu corpus inputs to %s\n", tname, done, n_inputs, dump);
  else
    printf("%s: %zu inputs (%zu from the corpus, %lu mutations, seed %lu) in %.2f s: no failure\n",
           tname, ran, n_inputs, done, seed, now() - t0);
  return 0;
}
