/* The detached end of a GPU command (cli/exit_detach.c), without a GPU:
 *   - the decision: detached only in a process that ends with its command and made a context,
 *     with every device in the default compute mode, unless POLYRX_CUDA_EXIT=keep; =detach in any
 *     mode; never in exclusive-process or prohibited mode by default, nor with the mode unknown;
 *   - the end itself: a command's process with a pipe as standard output and another pipe open
 *     (an output the caller reads) and a FIFO standing for the driver's files (the prefix kept)
 *     ends detached with a child that lingers 1.5 s (the driver's release): the caller sees the
 *     output flushed, the end of file of both pipes and the exit status at once, while the FIFO
 *     stays open until the child's end, 1.5 s later. A child that kept standard output (or the
 *     other pipe) would hold the caller's end of file back by those 1.5 s. Both ways of making
 *     the child: sharing the command's address space (clone) and forked. */
#include "testutil.h"

#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LINGER_MS 1500

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_decision(void) {
  static const char *const envs[] = {NULL, "", "keep", "detach", "other"};
  static const int modes[] = {0, 1, 2, 3, -1}; /* default, exclusive-thread, prohibited, ... */
  for (size_t e = 0; e < sizeof envs / sizeof envs[0]; e++)
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++)
      for (int ends = 0; ends < 2; ends++)
        for (int ctx = 0; ctx < 2; ctx++) {
          const char *env = envs[e];
          int want = ends && ctx && !(env && !strcmp(env, "keep")) &&
                     ((env && !strcmp(env, "detach")) || modes[m] == 0);
          int got = cli_exit_detach_decide(env, ends, ctx, modes[m]);
          CHECK(got == want, "POLYRX_CUDA_EXIT=%s, mode %d, process ends %d, context %d: %d",
                env ? env : "(unset)", modes[m], ends, ctx, got);
        }
  /* the cases the default must never detach */
  CHECK(!cli_exit_detach_decide(NULL, 1, 1, 3) && !cli_exit_detach_decide(NULL, 1, 1, 2) &&
            !cli_exit_detach_decide(NULL, 1, 1, -1) && !cli_exit_detach_decide("keep", 1, 1, 0),
        "exclusive, prohibited, unknown or keep detached");
}

/* Reads fd to its end of file (blocking); returns the bytes read into buf (at most cap - 1). */
static size_t read_all(int fd, char *buf, size_t cap) {
  size_t n = 0;
  for (;;) {
    ssize_t k = read(fd, buf + n, cap - 1 - n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    n += (size_t)k;
    if (n == cap - 1) n = 0; /* keep the tail only */
  }
  buf[n] = 0;
  return n;
}

static void test_end(void) {
  char dir[] = "/tmp/test_exit_detach.XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(0, "mkdtemp");
    return;
  }
  char fifo[64];
  snprintf(fifo, sizeof fifo, "%s/driver", dir);
  CHECK(mkfifo(fifo, 0600) == 0, "mkfifo %s", fifo);
  /* the command's process is this one's child; its detached child, orphaned, becomes ours */
  CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0, "PR_SET_CHILD_SUBREAPER");
  int drv = open(fifo, O_RDONLY | O_NONBLOCK), out[2], other[2];
  CHECK(drv >= 0 && pipe(out) == 0 && pipe(other) == 0, "pipes");
  double t0 = now();
  pid_t cmd = fork();
  if (cmd == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    close(other[0]);
    close(drv);
    int keep = open(fifo, O_WRONLY); /* the driver's file: the child keeps it */
    if (keep < 0) _exit(98);
    printf("the output\n"); /* buffered: the end flushes it */
    cli_exit_detach_now(7, fifo, LINGER_MS);
    _exit(99); /* it returned */
  }
  close(out[1]);
  close(other[1]);
  char buf[256];
  read_all(out[0], buf, sizeof buf);
  double t_out = now() - t0;
  char rest[16];
  read_all(other[0], rest, sizeof rest);
  double t_other = now() - t0;
  int status = 0;
  waitpid(cmd, &status, 0);
  double t_exit = now() - t0;
  CHECK(!strcmp(buf, "the output\n") && WIFEXITED(status) && WEXITSTATUS(status) == 7,
        "the command's output '%s', exit status %d", buf,
        WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  CHECK(t_out < 0.5 && t_other < 0.5 && t_exit < 0.5,
        "the caller waited for the child: end of file of standard output at %.3f s, of the "
        "other pipe at %.3f, the exit at %.3f (the child lingers %.1f s)",
        t_out, t_other, t_exit, LINGER_MS / 1e3);
  /* the driver's stand-in stays open until the child's end */
  struct pollfd p = {drv, POLLIN, 0};
  int r = poll(&p, 1, 4000);
  double t_drv = now() - t0;
  CHECK(r == 1 && (p.revents & POLLHUP) && t_drv > LINGER_MS / 1e3 * 0.8,
        "the kept descriptor closed at %.3f s (poll %d, events %x): not held to the child's end",
        t_drv, r, p.revents);
  while (waitpid(-1, NULL, 0) > 0) { /* the child, reaped here */
  }
  close(out[0]);
  close(other[0]);
  close(drv);
  unlink(fifo);
  rmdir(dir);
}

int main(void) {
  test_decision();
  test_end(); /* the child sharing the command's address space (clone) */
  cli_exit_detach_by_fork = 1;
  test_end(); /* the child forked (valgrind's path) */
  return test_finish("test_exit_detach");
}
