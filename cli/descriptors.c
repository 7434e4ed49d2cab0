/* The descriptors a command's output files need (cli.h): counted, the soft limit raised, the
 * process's descriptor table grown ahead. */
#include "cli.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

size_t cli_open_descriptors(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 16;
  size_t n = 0;
  while (readdir(d)) n++;
  closedir(d);
  return n; /* ".", ".." and the directory's own descriptor: a margin of 3 */
}

int cli_raise_open_files(size_t need, unsigned long long *cur, unsigned long long *max) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0; /* unknown: try anyway */
  if (cur) *cur = (unsigned long long)rl.rlim_cur;
  if (max) *max = rl.rlim_max == RLIM_INFINITY ? 0ull : (unsigned long long)rl.rlim_max;
  if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) return 0;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) return -1;
  struct rlimit up = {.rlim_cur = need, .rlim_max = rl.rlim_max};
  return setrlimit(RLIMIT_NOFILE, &up) == 0 ? 0 : -1;
}

#define RESERVE_MAX 65536 /* descriptors cli_reserve_descriptors makes room for at most */

void cli_reserve_descriptors(size_t need) {
  if (need > RESERVE_MAX || cli_raise_open_files(need, NULL, NULL)) return;
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, (int)need - 1); /* the table grows at once to hold it */
  if (high >= 0) close(high);
  close(fd);
}
