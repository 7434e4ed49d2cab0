/* polyrx serve's wire protocol and socket place, shared by the server (cmd_serve.c) and the
 * client (serve_client.c).
 *
 * A client connects to the server's Unix stream socket and sends one request: a fixed header
 * (serve_req_head) carrying, as SCM_RIGHTS, its working directory and its fds 0, 1 and 2 (for a
 * run), then head.bytes of strings, each NUL-terminated: argc arguments, then envc "NAME=VALUE"
 * settings. During a run the client may send SERVE_MSG_STOP (one byte: a stop signal came); the
 * server answers with one serve_reply. Both ends check that the peer runs under their own uid
 * (SO_PEERCRED). */
#ifndef PRX_SERVE_PROTO_H
#define PRX_SERVE_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SERVE_MAGIC 0x50525853u /* "PRXS" */
#define SERVE_VERSION 2u
#define SERVE_MAX_BYTES (1u << 20) /* the strings of one request at most */
#define SERVE_MAX_ARGS 65536u
#define SERVE_MSG_STOP 'X'

enum { SERVE_REQ_RUN = 1, SERVE_REQ_STATUS = 2, SERVE_REQ_STOP = 3 };
enum {
  SERVE_REPLY_EXIT = 1,   /* value: the command's exit status */
  SERVE_REPLY_SIGNAL = 2, /* value: the signal that would have ended the process (SIGPIPE) */
  SERVE_REPLY_TEXT = 3,   /* value: the length of the text that follows (--status) */
  SERVE_REPLY_DECLINE = 4 /* the run cannot be given the client's limits or process-wide
                           settings: run it in process */
};

typedef struct {
  uint32_t magic, version, kind;
  uint32_t umask;      /* the client's umask */
  uint32_t flags;      /* SERVE_FLAG_* */
  uint32_t argc, envc; /* the strings that follow */
  uint32_t bytes;      /* their total size */
  /* the client's RLIMIT_NOFILE and RLIMIT_FSIZE (soft, hard): the run gets them */
  uint64_t nofile_cur, nofile_max, fsize_cur, fsize_max;
} serve_req_head;
#define SERVE_FLAG_SIGPIPE_IGNORED 1u /* the client ignores SIGPIPE: writes see EPIPE */

typedef struct {
  uint32_t kind; /* SERVE_REPLY_* */
  int32_t value;
} serve_reply;

/* The socket's path: POLYRX_SERVE_SOCKET where set, else $XDG_RUNTIME_DIR/polyrx/serve.sock,
 * else /tmp/polyrx-UID/serve.sock. 0 on success, -1 when it does not fit. */
int serve_socket_path(char *buf, size_t cap);
/* The directory that holds the socket made (mode 0700) where missing, then checked: a directory
 * of this uid that no one else may write into. 0 on success, else -1 with why filled. */
int serve_socket_dir(const char *path, char *why, size_t why_cap);
/* Whether an existing socket may be trusted: a socket file (not a link) of this uid that no one
 * else may use (mode 0700 or tighter), in a directory (not a link) of this uid that no one else
 * may write into. 0 yes, -1 no (why says why). */
int serve_socket_check(const char *path, char *why, size_t why_cap);
/* Whether a "NAME=VALUE" setting goes with a run: POLYRX_*, HOME, XDG_* and
 * CUDA_VISIBLE_DEVICES (the settings the commands and the library read). */
int serve_env_carried(const char *kv);
/* Whether a run with the client's settings (envc "NAME=VALUE") is the run it would be in its own
 * process: the settings the library reads once per process (POLYRX_CPU, POLYRX_CUDA_MODULE,
 * CUDA_VISIBLE_DEVICES) must equal this process's. 1 yes, 0 no. */
int serve_env_same_process(char *const *envs, size_t envc);
/* The uid of a connected socket's peer (SO_PEERCRED), -1 where unknown. */
int serve_peer_uid(int fd, uid_t *uid, pid_t *pid);

/* Whole reads and writes over the socket (EINTR retried): 0, or -1 at an error or the end. */
int serve_write_all(int fd, const void *buf, size_t n);
int serve_read_all(int fd, void *buf, size_t n);
/* The header with up to 4 fds (SCM_RIGHTS); nfds: how many to send. */
int serve_send_head(int fd, const serve_req_head *h, const int *fds, int nfds);
/* Receives the header and its fds (close-on-exec; *nfds set, the rest -1). */
int serve_recv_head(int fd, serve_req_head *h, int fds[4], int *nfds);

#endif
