/* The end of a command that used the GPU, without waiting for the driver's release of the
 * device's context (POLYRX_CUDA_EXIT=detach; off by default).
 *
 * A process that made a CUDA context spends 30-140 ms in its own end on the H200 host (the
 * driver releases the context when the last reference to its device files closes: the same with
 * the runtime's teardown or _exit; bench/RESULTS.md, "The GPU commands on the H200"), after
 * every output is finished. With the switch, the command's process forks a child that holds
 * those references and ends at once itself (_exit, its stdio flushed): the child closes every
 * other descriptor it inherited (standard input, output and error first: a pipe to the caller
 * ends with the command), waits for the command's process to be gone (the end of a pipe whose
 * writing side only that process held) and ends, which releases the context behind the
 * command's back. The child calls nothing but system calls (a fork of a process with threads)
 * and no CUDA function. */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NVIDIA_PREFIX "/dev/nvidia" /* the driver's device files, kept open by the child */

/* The descriptors open now that are not the driver's, from /proc/self/fd (malloc'd, *n of them;
 * NULL on failure or without /proc: then no child is made, the usual end follows). */
static int *other_descriptors(size_t *n) {
  *n = 0;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return NULL;
  size_t cap = 64;
  int *fds = malloc(cap * sizeof *fds);
  struct dirent *e;
  while (fds && (e = readdir(d))) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (*end || end == e->d_name || fd == dirfd(d)) continue;
    char target[sizeof NVIDIA_PREFIX];
    ssize_t len = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
    if (len < 0) continue;
    target[len] = '\0';
    if (!strcmp(target, NVIDIA_PREFIX)) continue;
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

int cli_exit_detach_wanted(void) {
  const char *env = getenv("POLYRX_CUDA_EXIT");
  return env && !strcmp(env, "detach");
}

void cli_exit_detached(int status) {
  if (!cli_exit_detach_wanted() || !cli_process_ends || !cli_warm_cuda_context()) return;
  if (fflush(NULL) != 0) return; /* the usual end reports what it can */
  size_t n;
  int *fds = other_descriptors(&n), gone[2];
  if (!fds || pipe(gone) != 0) {
    free(fds);
    return;
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(gone[0]);
    close(gone[1]);
    free(fds);
    return;
  }
  if (pid == 0) {
    for (int fd = 0; fd < 3; fd++) close(fd);
    for (size_t i = 0; i < n; i++) close(fds[i]);
    close(gone[1]);
    char b;
    while (read(gone[0], &b, 1) < 0 && errno == EINTR) {
    }
    _exit(0);
  }
  _exit(status);
}
