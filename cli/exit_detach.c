/* The end of a command that used the GPU, without waiting for the driver's release of the
 * device's context (the default where it is safe: cli_exit_detach_decide).
 *
 * A process that made a CUDA context spends 30-140 ms in its own end on the H200 host (the
 * driver releases the context when the last reference to its device files closes: the same with
 * the runtime's teardown or _exit; bench/RESULTS.md, "The GPU commands on the H200"), after
 * every output is finished. Detached, the command's process makes a child that holds those
 * references and ends at once itself (_exit, its stdio flushed): the child closes every other
 * descriptor it inherited (standard input, output and error first: a pipe to the caller ends
 * with the command) and says so before the command's process ends, waits for that process to be
 * gone (the end of a pipe whose writing side only that process held) and ends, which releases
 * the context behind the command's back. The child calls nothing but system calls (a fork of a
 * process with threads) and no CUDA function.
 *
 * The child shares the command's address space (clone with CLONE_VM, on a stack of its own)
 * instead of copying it (fork): a fork copies the page tables of the whole process, the CUDA
 * runtime's and driver's mappings among them, and the command's end waited for that copy; sharing
 * costs nothing, and the address space, still the child's, is torn down at the child's end, not
 * at the command's. The child writes no memory the command reads (its locals are on its own
 * stack, the descriptors to close were listed before; errno aside, which only a failed call
 * writes and the command reads only after an interrupted read). fork where clone fails.
 *
 * Not detached: a GPU in exclusive-process (or prohibited) compute mode, where the next command
 * would be refused while the child holds the context (~0.1 s), and POLYRX_CUDA_EXIT=keep. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NVIDIA_PREFIX "/dev/nvidia" /* the driver's device files, kept open by the child */

/* The descriptors open now whose target does not start with keep_prefix,
 * from /proc/self/fd (malloc'd, *n of them; NULL on failure or without
 * /proc: then no child is made, the usual end follows). */
static int *other_descriptors(const char *keep_prefix, size_t *n) {
  *n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return NULL;
  size_t cap = 64, keep_len = strlen(keep_prefix);
  int *fds = malloc(cap * sizeof *fds);
  struct dirent *e;
  while (fds && (e = readdir(d))) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (*end || end == e->d_name || fd == dirfd(d)) continue;
    char target[PATH_MAX];
    ssize_t len = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
    if (len < 0) continue;
    target[len] = '\0';
    if (!strncmp(target, keep_prefix, keep_len)) continue;
    if (*n == cap) {
      int *more = realloc(fds, 2 * cap * sizeof *fds);
      if (!more) break;
      fds = more;
      cap *= 2;
    }
    fds[(*n)++] = (int)fd;
  }
  closedir(d);
  return fds;
}

int cli_exit_detach_decide(const char *env, int process_ends, int context, int compute_mode) {
  if (!process_ends || !context) return 0;
  if (env && !strcmp(env, "keep")) return 0;
  if (env && !strcmp(env, "detach")) return 1; /* the user's choice, whatever the mode */
  return compute_mode == 0;
}

int cli_exit_detach_wanted(void) {
  return cli_exit_detach_decide(getenv("POLYRX_CUDA_EXIT"), cli_process_ends,
                                cli_warm_cuda_context(), cli_warm_cuda_compute_mode());
}

void cli_exit_detached(int status) {
  if (cli_exit_detach_wanted()) cli_exit_detach_now(status, NVIDIA_PREFIX, 0);
}

/* What the child is given: every value it uses, so that it reads only this (and its stack). */
typedef struct {
  const int *fds;
  size_t n;
  int gone_read, gone_write, closed_read, closed_write;
  unsigned linger_ms;
} child_args;

/* The child: closes what it inherited but the driver's files, says so, waits for the command's
 * process to be gone (its end of `gone` closed) and lingers where the tests ask; then ends,
 * releasing the driver's files (and, under clone, the shared address space). */
static int child_main(void *arg) {
  /* a copy on the child's own stack: under clone the command's frame (arg) is left alone once
   * the command has gone on */
  const child_args a = *(const child_args *)arg;
  for (int fd = 0; fd < 3; fd++) close(fd);
  for (size_t i = 0; i < a.n; i++) close(a.fds[i]);
  close(a.gone_write);
  close(a.closed_read);
  close(a.closed_write); /* the parent's read of it ends: nothing of the caller's is held here */
  char b;
  while (read(a.gone_read, &b, 1) < 0 && errno == EINTR) {
  }
  if (a.linger_ms) { /* the tests': a driver's release that takes this long */
    struct timespec ts = {(time_t)(a.linger_ms / 1000), (long)(a.linger_ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
  }
  _exit(0);
}

#define CHILD_STACK ((size_t)64 << 10)

/* Valgrind runs no clone but a thread's or a fork's: it ends the process at the call. It is there
 * where its preloaded core is. */
static int under_valgrind(void) {
  const char *p = getenv("LD_PRELOAD");
  return p && strstr(p, "vgpreload");
}

int cli_exit_detach_by_fork;

/* The child made: sharing the address space (clone), else as a copy (fork); -1 where neither. */
static pid_t start_child(child_args *a) {
  void *stack =
      cli_exit_detach_by_fork || under_valgrind()
          ? MAP_FAILED
          : mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (stack != MAP_FAILED) {
    pid_t pid = clone(child_main, (char *)stack + CHILD_STACK, CLONE_VM | SIGCHLD, a);
    if (pid > 0) return pid; /* the stack stays: the child runs on it */
    munmap(stack, CHILD_STACK);
  }
  pid_t pid = fork();
  if (pid == 0) child_main(a);
  return pid;
}

void cli_exit_detach_now(int status, const char *keep_prefix, unsigned linger_ms) {
  if (fflush(NULL) != 0) return; /* the usual end reports what it can */
  size_t n;
  int *fds = other_descriptors(keep_prefix, &n), gone[2], closed[2];
  if (!fds || pipe(gone) != 0) {
    free(fds);
    return;
  }
  if (pipe(closed) != 0) {
    close(gone[0]);
    close(gone[1]);
    free(fds);
    return;
  }
  child_args a = {fds, n, gone[0], gone[1], closed[0], closed[1], linger_ms};
  if (start_child(&a) < 0) {
    close(gone[0]);
    close(gone[1]);
    close(closed[0]);
    close(closed[1]);
    free(fds);
    return;
  }
  close(closed[1]);
  char b;
  while (read(closed[0], &b, 1) < 0 && errno == EINTR) {
  }
  _exit(status);
}
