/* polyrx serve: a resident process that runs channelize, demod and rx for its clients (the
 * same polyrx, through serve_client.c), so that a run does not pay a fresh process's CUDA start
 * (the driver's init, the primary context, the module, the page-locked buffers) and end.
 *
 * It listens on a Unix socket (serve_proto.h) and runs one request at a time on its main thread,
 * as main would run the command, inside the client's working directory, with the client's fds
 * 0/1/2, umask and POLYRX_*, HOME and XDG_* environment; everything is restored afterwards. A
 * watcher thread reads the connection during a run: a stop message (the client's SIGINT or
 * SIGTERM) or the client's end stops the command as a stop signal would. The receiver of an `rx`
 * run that ended well is kept for the next `rx` of the same configuration (rx_receiver.c,
 * rx_keep). */
#include "cli.h"
#include "serve_proto.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define CMD "serve"
#define PINNED_CACHE_BYTES ((size_t)2 << 30) /* freed page-locked buffers kept across runs */

extern char **environ;

static void usage(FILE *f) {
  fprintf(
      f, "usage: polyrx serve [--socket PATH] [-q] [--daemon]  run the server (in the foreground;\n"
         "                                                   --daemon: in the background)\n"
         "       polyrx serve [--socket PATH] --status  describe the running server\n"
         "       polyrx serve [--socket PATH] --stop    end the running server\n"
         "\n"
         "A resident process that keeps the CUDA context and module loaded (when a GPU is\n"
         "present; it serves on CPU-only machines too) and runs `polyrx channelize`, `demod`\n"
         "and `rx` for the same user's clients: those commands look for the server's socket\n"
         "and, when it answers, hand it their arguments, working directory, standard input,\n"
         "output and error, umask and POLYRX_*, HOME and XDG_* environment, and wait for the\n"
         "exit status. One run at a time; others wait. Ctrl-C on a client stops its run as it\n"
         "would stop the command. The receiver of an `rx` run is kept for the next `rx` of the\n"
         "same configuration (dropped by another configuration or command).\n"
         "\n"
         "  --socket PATH   the socket (default: $POLYRX_SERVE_SOCKET, else\n"
         "                  $XDG_RUNTIME_DIR/polyrx/serve.sock, else /tmp/polyrx-UID/serve.sock;\n"
         "                  its directory made 0700 and checked to be this user's)\n"
         "  --status        pid, uptime, requests served, CUDA, page-locked buffers kept\n"
         "  --stop          end the server (after the run in progress)\n"
         "  --daemon        detach once the socket listens: the command returns (0, or 1 with\n"
         "                  the error when the socket cannot be made) and the server runs in a\n"
         "                  session of its own, its standard streams on /dev/null\n"
         "  -q, --quiet     no notes on standard error\n"
         "  -h, --help      this help\n"
         "\n"
         "Clients: POLYRX_SERVE=off runs every command in its own process; POLYRX_SERVE=require\n"
         "makes a command fail (exit 1) where no server answers. Exit status: 0 ended by --stop,\n"
         "SIGINT or SIGTERM; 1 error; 2 usage error.\n");
}

/* ---- the server's state ---- */
static double t_start;
static unsigned long long served;
static int cuda_warm;
static int saved_std[3] = {-1, -1, -1}; /* the server's own 0/1/2 */

static volatile sig_atomic_t sigpipe_seen;
/* A closed pipe on the client's side (its reader went away): the command in its own process
 * would end by SIGPIPE. Here the run stops, writes nothing more to the client's fds, and the
 * client ends by the same signal. */
static void on_sigpipe(int sig) {
  (void)sig;
  int e = errno;
  sigpipe_seen = 1;
  cli_stop_request();
  int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  errno = e;
}

/* ---- the watcher of a run's connection ---- */
typedef struct {
  int conn, done; /* the connection; the read end of the pipe that ends the watch */
  volatile sig_atomic_t client_stop;
} watch_state;

/* Stops the command: the flag, and SIGINT to the process, which interrupts the reader's blocking
 * read (the threads that must not see it block it, as under a stop signal). */
static void stop_run(watch_state *w) {
  w->client_stop = 1;
  cli_stop_request();
  kill(getpid(), SIGINT);
}

static void *watch(void *arg) {
  watch_state *w = arg;
  int conn_open = 1;
  for (;;) {
    struct pollfd p[2] = {{w->done, POLLIN, 0}, {conn_open ? w->conn : -1, POLLIN, 0}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[0].revents) break;
    if (!p[1].revents) continue;
    char m;
    ssize_t r = recv(w->conn, &m, 1, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == 1 && m == SERVE_MSG_STOP) {
      stop_run(w);
    } else if (r <= 0) { /* the client ended: nobody waits for the outputs on its fds */
      conn_open = 0;
      stop_run(w);
    }
  }
  return NULL;
}

/* ---- the client's environment for a run ---- */
/* The carried settings now in the environment (strdup'd "NAME=VALUE", NULL-terminated). */
static char **take_carried(void) {
  size_t n = 0;
  for (char **e = environ; e && *e; e++) n += serve_env_carried(*e);
  char **out = calloc(n + 1, sizeof *out);
  if (!out) return NULL;
  size_t i = 0;
  for (char **e = environ; e && *e && i < n; e++) {
    if (!serve_env_carried(*e)) continue;
    if (!(out[i] = strdup(*e))) break;
    i++;
  }
  return out;
}

/* Unsets every carried setting, then sets those of list ("NAME=VALUE"). */
static void put_carried(char **list, size_t n) {
  char **now = take_carried();
  for (size_t i = 0; now && now[i]; i++) {
    char *eq = strchr(now[i], '=');
    if (eq) *eq = 0;
    unsetenv(now[i]);
    free(now[i]);
  }
  free(now);
  for (size_t i = 0; i < n; i++) {
    char *eq = strchr(list[i], '=');
    if (!eq || eq == list[i] || !serve_env_carried(list[i])) continue;
    *eq = 0;
    setenv(list[i], eq + 1, 1);
    *eq = '=';
  }
}

static void free_list(char **list) {
  for (size_t i = 0; list && list[i]; i++) free(list[i]);
  free(list);
}

static void send_reply(int conn, uint32_t kind, int32_t value) {
  serve_reply r = {kind, value};
  serve_write_all(conn, &r, sizeof r);
}

/* All stdio streams emptied: what is written reaches its fd before the fds change, what stdin
 * had read ahead from one client is not handed to the next. */
static void stdio_settle(void) {
  fflush(NULL);
  __fpurge(stdin);
  clearerr(stdin);
  clearerr(stdout);
  clearerr(stderr);
}

/* The descriptors this process holds beyond a fresh process's 0, 1 and 2: the socket, the
 * client's, the CUDA driver's (a few dozen on a GPU host). */
static uint64_t extra_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 0;
  uint64_t n = 0;
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n > 4 ? n - 4 : 0; /* 0, 1, 2 and the directory's own */
}

/* The client's soft limits of RLIMIT_NOFILE and RLIMIT_FSIZE for the run (old: the server's, to
 * put back), the open-file limit raised by the descriptors the server holds beyond a fresh
 * process's (up to the hard limit), so that the command has the room it has in its own process:
 * 0, or -1 where the client's hard limits differ from the server's (a process lowers a hard limit
 * for good and cannot raise one): the run is declined. */
static int apply_limits(const serve_req_head *h, struct rlimit old[2]) {
  const int res[2] = {RLIMIT_NOFILE, RLIMIT_FSIZE};
  const uint64_t max[2] = {h->nofile_max, h->fsize_max};
  uint64_t cur[2] = {h->nofile_cur, h->fsize_cur};
  for (int i = 0; i < 2; i++)
    if (getrlimit(res[i], &old[i]) != 0 || (uint64_t)old[i].rlim_max != max[i] || cur[i] > max[i])
      return -1;
  if (cur[0] != (uint64_t)RLIM_INFINITY) {
    uint64_t extra = extra_fds();
    cur[0] = max[0] - cur[0] > extra ? cur[0] + extra : max[0];
  }
  for (int i = 0; i < 2; i++) {
    struct rlimit r = {(rlim_t)cur[i], old[i].rlim_max};
    if (setrlimit(res[i], &r) != 0) {
      for (int j = 0; j < i; j++) setrlimit(res[j], &old[j]);
      return -1;
    }
  }
  return 0;
}

static void restore_limits(const struct rlimit old[2]) {
  setrlimit(RLIMIT_NOFILE, &old[0]);
  setrlimit(RLIMIT_FSIZE, &old[1]);
}

/* One run: fds = {cwd, 0, 1, 2} of the client; strings: argc arguments, then envc settings.
 * Returns the command's exit status; *server_stop is set where a stop signal that no client sent
 * came to the server itself during the run: the server ends after it. */
static int run_request(int conn, const serve_req_head *h, const int fds[4], char **args,
                       char **envs, int *server_stop) {
  int saved_cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (saved_cwd < 0 || fchdir(fds[0]) != 0) {
    dprintf(fds[3], "polyrx %s: error: cannot enter the client's working directory: %s\n", args[1],
            strerror(errno));
    if (saved_cwd >= 0) close(saved_cwd);
    return 1;
  }
  stdio_settle();
  for (int i = 0; i < 3; i++) dup2(fds[i + 1], i);
  mode_t old_umask = umask((mode_t)(h->umask & 0777));
  char **server_env = take_carried();
  put_carried(envs, h->envc);

  cli_stop_reset();
  sigpipe_seen = 0;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = (h->flags & SERVE_FLAG_SIGPIPE_IGNORED) ? SIG_IGN : on_sigpipe;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, NULL);

  watch_state w = {conn, -1, 0};
  int pfd[2] = {-1, -1};
  pthread_t wt;
  int watching = 0;
  if (pipe2(pfd, O_CLOEXEC) == 0) {
    w.done = pfd[0];
    watching = cli_thread_start(&wt, watch, &w) == 0; /* the watcher takes no signal */
  }

  /* the kept receiver's memory (host and device) goes to any other command */
  if (strcmp(args[1], "rx")) cli_rx_keep_drop();
  optind = 0; /* getopt's state, fresh for the command (glibc: a full reset) */
  opterr = 1;
  int rc = cli_dispatch((int)h->argc, args);

  stdio_settle();
  if (watching) {
    (void)!write(pfd[1], "", 1);
    pthread_join(wt, NULL);
  }
  if (pfd[0] >= 0) close(pfd[0]), close(pfd[1]);
  signal(SIGPIPE, SIG_IGN);
  for (int i = 0; i < 3; i++) dup2(saved_std[i], i);
  (void)!fchdir(saved_cwd);
  close(saved_cwd);
  umask(old_umask);
  size_t n_server = 0;
  while (server_env && server_env[n_server]) n_server++;
  put_carried(server_env, n_server);
  free_list(server_env);
  served++;
  *server_stop = cli_interrupted() && !w.client_stop && !sigpipe_seen;
  if (!*server_stop)
    cli_stop_reset(); /* the client's stop ended this run only (its SIGINT delivered by now) */
  return rc;
}

/* The request's strings split: argv (argc + 1 slots, NULL-terminated) and the settings. */
static int split_strings(char *buf, const serve_req_head *h, char ***args, char ***envs) {
  size_t n = (size_t)h->argc + h->envc, k = 0;
  char **list = calloc(n + 2, sizeof *list);
  if (!list) return -1;
  for (size_t off = 0; off < h->bytes && k < n;) {
    char *end = memchr(buf + off, 0, h->bytes - off);
    if (!end) break;
    list[k++] = buf + off;
    off = (size_t)(end - buf) + 1;
  }
  if (k != n || h->argc < 2) {
    free(list);
    return -1;
  }
  /* argv NULL-terminated (getopt): the settings move one slot up */
  memmove(list + h->argc + 1, list + h->argc, h->envc * sizeof *list);
  list[h->argc] = NULL;
  *args = list;
  *envs = list + h->argc + 1;
  return 0;
}

static void status_text(int conn, const char *path) {
  size_t nb, bytes;
  unsigned long long hits;
  prx_pipe_host_cache_stats(&nb, &bytes, &hits);
  char *t = cli_format("polyrx serve: pid %d, socket %s, up %.0f s, %llu requests served, "
                       "cuda %s, page-locked buffers kept %zu (%.0f MiB, %llu reused)\n",
                       (int)getpid(), path, cli_seconds() - t_start, served,
                       cuda_warm ? "warm" : "not available", nb, bytes / 1048576.0, hits);
  if (!t) return;
  send_reply(conn, SERVE_REPLY_TEXT, (int32_t)strlen(t));
  serve_write_all(conn, t, strlen(t));
  free(t);
}

/* One connection: the request read, checked and answered. Returns 1 when the server is to end
 * (--stop, or a stop signal of its own during a run). */
static int handle(int conn, const char *path) {
  uid_t uid;
  if (serve_peer_uid(conn, &uid, NULL) != 0 || uid != getuid()) return 0; /* not this user's */
  struct timeval tv = {10, 0}; /* a request arrives at once or never */
  setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  serve_req_head h;
  int fds[4], nfds, quit = 0;
  char *buf = NULL, **args = NULL, **envs = NULL;
  if (serve_recv_head(conn, &h, fds, &nfds) != 0 || h.magic != SERVE_MAGIC ||
      h.version != SERVE_VERSION || h.bytes > SERVE_MAX_BYTES || h.argc > SERVE_MAX_ARGS ||
      h.envc > SERVE_MAX_ARGS)
    goto done;
  buf = malloc(h.bytes ? h.bytes : 1);
  if (!buf || serve_read_all(conn, buf, h.bytes) != 0) goto done;
  struct timeval none = {0, 0};
  setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
  switch (h.kind) {
  case SERVE_REQ_STATUS: status_text(conn, path); break;
  case SERVE_REQ_STOP:
    send_reply(conn, SERVE_REPLY_EXIT, 0);
    quit = 1;
    break;
  case SERVE_REQ_RUN: {
    if (nfds != 4 || split_strings(buf, &h, &args, &envs) != 0) break;
    struct rlimit limits[2];
    /* settings read once per process that differ from this one's, or limits it cannot give:
     * the client runs the command itself */
    if (!serve_env_same_process(envs, h.envc) || apply_limits(&h, limits) != 0) {
      send_reply(conn, SERVE_REPLY_DECLINE, 0);
      break;
    }
    int rc = run_request(conn, &h, fds, args, envs, &quit);
    restore_limits(limits);
    if (sigpipe_seen && !(h.flags & SERVE_FLAG_SIGPIPE_IGNORED))
      send_reply(conn, SERVE_REPLY_SIGNAL, SIGPIPE);
    else
      send_reply(conn, SERVE_REPLY_EXIT, rc);
    break;
  }
  }
done:
  for (int i = 0; i < nfds; i++) close(fds[i]);
  free(args);
  free(buf);
  return quit;
}

/* ---- the socket ---- */

/* A client connection (--status, --stop): the reply printed. */
static int ask(const char *path, uint32_t kind) {
  char why[512];
  int fd = cli_serve_connect(path, why, sizeof why);
  if (fd < 0) return cli_error(CMD, "no polyrx server answers: %s", why);
  serve_req_head h;
  memset(&h, 0, sizeof h);
  h.magic = SERVE_MAGIC;
  h.version = SERVE_VERSION;
  h.kind = kind;
  serve_reply r;
  int rc = 1;
  if (serve_send_head(fd, &h, NULL, 0) == 0 && serve_read_all(fd, &r, sizeof r) == 0) {
    if (r.kind == SERVE_REPLY_TEXT && r.value > 0 && r.value < 65536) {
      char *t = malloc((size_t)r.value + 1);
      if (t && serve_read_all(fd, t, (size_t)r.value) == 0) {
        fwrite(t, 1, (size_t)r.value, stdout);
        rc = 0;
      }
      free(t);
    } else if (r.kind == SERVE_REPLY_EXIT) {
      /* --stop: the server answers, then ends; its end closes the connection */
      char c;
      while (read(fd, &c, 1) > 0) {
      }
      rc = 0;
    }
  }
  close(fd);
  if (rc) return cli_error(CMD, "the polyrx server (%s) gave no answer", path);
  return 0;
}

/* The listening socket at path: a stale socket (no server answers) replaced, a live one or
 * anything else there refused. */
static int listen_at(const char *path, int quiet, int *out) {
  char why[512];
  if (serve_socket_dir(path, why, sizeof why) != 0)
    return cli_error(CMD, "the socket's directory is not safe: %s", why);
  struct stat sb;
  if (lstat(path, &sb) == 0) {
    if (serve_socket_check(path, why, sizeof why) != 0)
      return cli_error(CMD, "will not replace %s", why);
    int fd = cli_serve_connect(path, why, sizeof why);
    if (fd >= 0) {
      close(fd);
      return cli_error(CMD, "a polyrx server already answers on %s (polyrx serve --stop ends it)",
                       path);
    }
    if (unlink(path) != 0) return cli_error(CMD, "cannot remove %s: %s", path, strerror(errno));
    if (!quiet) fprintf(stderr, "polyrx %s: note: removed the stale socket %s\n", CMD, path);
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return cli_error(CMD, "socket: %s", strerror(errno));
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  memcpy(a.sun_path, path, strnlen(path, sizeof a.sun_path - 1)); /* checked to fit */
  mode_t old = umask(077); /* the socket made 0700: no one else may connect */
  int b = bind(fd, (struct sockaddr *)&a, sizeof a);
  umask(old);
  if (b != 0 || listen(fd, 64) != 0) {
    int e = errno;
    close(fd);
    return cli_error(CMD, "cannot listen on %s: %s", path, strerror(e));
  }
  *out = fd;
  return -1;
}

/* Forks: the parent returns 0 (the exit status of `polyrx serve --daemon`), or 1 where the fork
 * fails; the child (-1) continues in a session of its own with its standard streams on
 * /dev/null. */
static int detach(const char *path, int quiet, int lfd) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(lfd);
    unlink(path);
    return cli_error(CMD, "cannot start the server in the background: %s", strerror(errno));
  }
  if (pid > 0) {
    if (!quiet) fprintf(stderr, "polyrx %s: listening on %s (pid %d)\n", CMD, path, (int)pid);
    return 0;
  }
  setsid();
  int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    for (int i = 0; i < 3; i++) dup2(fd, i);
    close(fd);
  }
  return -1;
}

int cmd_serve(int argc, char **argv) {
  static const struct option longs[] = {{"socket", required_argument, NULL, 'S'},
                                        {"status", no_argument, NULL, 'T'},
                                        {"stop", no_argument, NULL, 'X'},
                                        {"quiet", no_argument, NULL, 'q'},
                                        {"daemon", no_argument, NULL, 'D'},
                                        {"help", no_argument, NULL, 'h'},
                                        {NULL, 0, NULL, 0}};
  const char *sock = NULL;
  int c, quiet = 0, daemon = 0, kind = SERVE_REQ_RUN;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":qh", longs, NULL)) != -1) {
    switch (c) {
    case 'S': sock = optarg; break;
    case 'T': kind = SERVE_REQ_STATUS; break;
    case 'X': kind = SERVE_REQ_STOP; break;
    case 'q': quiet = 1; break;
    case 'D': daemon = 1; break;
    case 'h': usage(stdout); return 0;
    case ':': return cli_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
    default: return cli_usage_error(CMD, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc) return cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
  char path[256];
  if (sock && (!sock[0] || strlen(sock) >= 108))
    return cli_usage_error(CMD, "--socket: '%s' is not a usable socket path (1 to 107 bytes)",
                           sock);
  if (sock)
    snprintf(path, sizeof path, "%s", sock);
  else if (serve_socket_path(path, sizeof path) != 0)
    return cli_error(CMD, "the socket's path is too long (107 bytes at most)");
  if (kind != SERVE_REQ_RUN) return ask(path, (uint32_t)kind);

  int lfd = -1, rc = listen_at(path, quiet, &lfd);
  if (rc >= 0) return rc;
  struct stat bound;
  stat(path, &bound);
  /* --daemon: detached once the socket listens (clients that come meanwhile wait in its
   * backlog), before anything starts threads or CUDA, which a fork must not split */
  if (daemon && (rc = detach(path, quiet, lfd)) >= 0) return rc;
  if (daemon) quiet = 1;
  t_start = cli_seconds();
  for (int i = 0; i < 3; i++) saved_std[i] = fcntl(i, F_DUPFD_CLOEXEC, 3);
  /* the stop signals: a flag that ends the server between runs and a run in progress, never
   * the process; the CUDA runtime's threads made below keep them blocked */
  cli_stop_signals_persistent();
  cli_catch_stop_signals();
  signal(SIGPIPE, SIG_IGN);
  cli_hold_stop_signals();
  if (prx_cuda_available()) {
    /* the driver, the primary context and the module, once: a page-locked allocation does all */
    prx_pipe_host_free(prx_pipe_host_alloc(64, 1));
    prx_pipe_host_cache(PINNED_CACHE_BYTES);
    cuda_warm = 1;
  }
  cli_release_stop_signals();
  cli_rx_keep_enable(); /* an rx run's receiver kept for the next one of the same configuration */
  if (!quiet)
    fprintf(stderr, "polyrx %s: listening on %s (pid %d, cuda %s, %.0f ms to start)\n", CMD, path,
            (int)getpid(), cuda_warm ? "warm" : "not available", (cli_seconds() - t_start) * 1e3);
  int quit = 0;
  while (!quit && !cli_interrupted()) {
    struct pollfd p = {lfd, POLLIN, 0};
    /* EINTR or a second gone by: a stop signal is checked above (one that comes just before
     * the poll waits for the timeout) */
    if (poll(&p, 1, 1000) <= 0) continue;
    int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (conn < 0) continue;
    quit = handle(conn, path);
    close(conn);
  }
  close(lfd);
  /* the socket removed if it is still this server's (not replaced by another's) */
  struct stat now;
  if (stat(path, &now) == 0 && now.st_ino == bound.st_ino && now.st_dev == bound.st_dev)
    unlink(path);
  cli_rx_keep_drop();
  prx_pipe_host_cache(0);
  for (int i = 0; i < 3; i++) close(saved_std[i]);
  if (!quiet)
    fprintf(stderr, "polyrx %s: stopped after %llu requests\n", CMD, (unsigned long long)served);
  return 0;
}
