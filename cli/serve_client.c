/* The client side of polyrx serve: a command that gains from a warm process (channelize, demod,
 * rx) hands its run to the server when one answers on the socket (serve_proto.h), and waits for
 * its exit status; otherwise it runs in this process as before. */
#include "cli.h"
#include "serve_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

static volatile sig_atomic_t stop_fd = -1; /* the connection, for the signal handler */

/* SIGINT/SIGTERM during a served run: the server is told to stop the command (one byte; write
 * is async-signal-safe). The handler resets itself, so a second signal ends the client as it
 * would end the command in process, and the server sees the connection close (a stop too). */
static void on_stop(int sig) {
  (void)sig;
  int e = errno;
  char m = SERVE_MSG_STOP;
  if (stop_fd >= 0) (void)!send(stop_fd, &m, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  errno = e;
}

static struct sigaction stop_old[2]; /* the dispositions before catch_stop */

static void catch_stop(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sa.sa_flags = SA_RESETHAND | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  const int sigs[2] = {SIGINT, SIGTERM};
  for (int i = 0; i < 2; i++) {
    /* ignored (a background job, nohup): it would be ignored by the command too */
    if (sigaction(sigs[i], NULL, &stop_old[i]) == 0 && stop_old[i].sa_handler == SIG_IGN) continue;
    sigaction(sigs[i], &sa, NULL);
  }
}

static void restore_stop(void) {
  sigaction(SIGINT, &stop_old[0], NULL);
  sigaction(SIGTERM, &stop_old[1], NULL);
}

/* The request's strings: argv then the carried environment, each NUL-terminated. */
static char *pack_strings(int argc, char **argv, uint32_t *envc, uint32_t *bytes) {
  size_t n = 0;
  *envc = 0;
  for (int i = 0; i < argc; i++) n += strlen(argv[i]) + 1;
  for (char **e = environ; e && *e; e++)
    if (serve_env_carried(*e)) n += strlen(*e) + 1, (*envc)++;
  if (n > SERVE_MAX_BYTES) return NULL;
  char *buf = malloc(n ? n : 1), *p = buf;
  if (!buf) return NULL;
  for (int i = 0; i < argc; i++) p = stpcpy(p, argv[i]) + 1;
  for (char **e = environ; e && *e; e++)
    if (serve_env_carried(*e)) p = stpcpy(p, *e) + 1;
  *bytes = (uint32_t)n;
  return buf;
}

int cli_serve_connect(const char *path, char *why, size_t cap) {
  if (serve_socket_check(path, why, cap) != 0) return -1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(why, cap, "socket: %s", strerror(errno));
    return -1;
  }
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  memcpy(a.sun_path, path, strnlen(path, sizeof a.sun_path - 1)); /* checked to fit */
  int r;
  do r = connect(fd, (struct sockaddr *)&a, sizeof a);
  while (r < 0 && errno == EINTR);
  if (r != 0) {
    snprintf(why, cap, "%s: %s", path, strerror(errno));
    close(fd);
    return -1;
  }
  uid_t uid;
  if (serve_peer_uid(fd, &uid, NULL) != 0 || uid != getuid()) {
    snprintf(why, cap, "%s: the server does not run as this user", path);
    close(fd);
    return -1;
  }
  return fd;
}

int cli_serve_client(int argc, char **argv) {
  const char *mode = getenv("POLYRX_SERVE");
  int require = mode && !strcmp(mode, "require");
  if (mode && !strcmp(mode, "off")) return -1;
  char path[256], why[512] = "";
  int fd = -1;
  if (serve_socket_path(path, sizeof path) != 0)
    snprintf(why, sizeof why, "the socket's path is too long");
  else
    fd = cli_serve_connect(path, why, sizeof why);
  if (fd < 0) {
    if (!require) return -1; /* no server: the command runs here */
    return cli_error(argv[0], "no polyrx server answers (POLYRX_SERVE=require): %s", why);
  }
  serve_req_head h;
  memset(&h, 0, sizeof h);
  h.magic = SERVE_MAGIC;
  h.version = SERVE_VERSION;
  h.kind = SERVE_REQ_RUN;
  mode_t um = umask(0);
  umask(um);
  h.umask = (uint32_t)um;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) h.nofile_cur = rl.rlim_cur, h.nofile_max = rl.rlim_max;
  if (getrlimit(RLIMIT_FSIZE, &rl) == 0) h.fsize_cur = rl.rlim_cur, h.fsize_max = rl.rlim_max;
  struct sigaction sp;
  if (sigaction(SIGPIPE, NULL, &sp) == 0 && sp.sa_handler == SIG_IGN)
    h.flags |= SERVE_FLAG_SIGPIPE_IGNORED;
  /* the server runs argv as main would: "polyrx" then the command and its arguments */
  h.argc = (uint32_t)argc + 1;
  uint32_t envc = 0, bytes = 0;
  char **full = malloc(((size_t)argc + 1) * sizeof *full);
  char *strings = NULL;
  if (full) {
    full[0] = "polyrx";
    memcpy(full + 1, argv, (size_t)argc * sizeof *full);
    strings = pack_strings(argc + 1, full, &envc, &bytes);
    free(full);
  }
  if (!strings) {
    close(fd);
    if (!require) return -1;
    return cli_error(argv[0], "the request does not fit (%u bytes at most)", SERVE_MAX_BYTES);
  }
  h.envc = envc;
  h.bytes = bytes;
  int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cwd < 0) cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  int fds[4] = {cwd, STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO};
  /* a closed standard fd: /dev/null in its place, as the command would see EBADF otherwise */
  int opened[4] = {-1, -1, -1, -1};
  for (int i = 1; i < 4; i++)
    if (fcntl(fds[i], F_GETFD) < 0) fds[i] = opened[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
  int sent =
      cwd >= 0 && serve_send_head(fd, &h, fds, 4) == 0 && serve_write_all(fd, strings, bytes) == 0;
  for (int i = 1; i < 4; i++)
    if (opened[i] >= 0) close(opened[i]);
  if (cwd >= 0) close(cwd);
  free(strings);
  if (!sent) {
    close(fd);
    return cli_error(argv[0],
                     "the polyrx server (%s) closed the connection before the request "
                     "was sent",
                     path);
  }
  stop_fd = fd;
  catch_stop();
  serve_reply rep;
  int got = serve_read_all(fd, &rep, sizeof rep) == 0;
  stop_fd = -1;
  close(fd);
  if (got && rep.kind == SERVE_REPLY_DECLINE) {
    /* limits the server cannot give the run (a lower hard limit, which a process cannot take
     * back) or settings it read once at its start (POLYRX_CPU, POLYRX_CUDA_MODULE,
     * CUDA_VISIBLE_DEVICES) that differ: the command runs here, where they hold */
    restore_stop();
    if (!require) return -1;
    return cli_error(argv[0], "the polyrx server cannot run this command with this process's "
                              "resource limits (ulimit -n, -f) or its POLYRX_CPU, "
                              "POLYRX_CUDA_MODULE, CUDA_VISIBLE_DEVICES (POLYRX_SERVE=require)");
  }
  if (!got || (rep.kind != SERVE_REPLY_EXIT && rep.kind != SERVE_REPLY_SIGNAL))
    return cli_error(argv[0],
                     "the polyrx server (%s) ended during the request: its outputs may "
                     "be incomplete",
                     path);
  if (rep.kind == SERVE_REPLY_SIGNAL) {
    /* the command met what ends a process (a closed pipe): this process ends the same way */
    signal(rep.value, SIG_DFL);
    raise(rep.value);
    return 128 + rep.value;
  }
  return rep.value;
}
