/* polyrx serve's socket place, its checks and the message transfers (serve_proto.h). */
#include "serve_proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int serve_socket_path(char *buf, size_t cap) {
  const char *env = getenv("POLYRX_SERVE_SOCKET");
  const char *run = getenv("XDG_RUNTIME_DIR");
  int n;
  if (env && env[0])
    n = snprintf(buf, cap, "%s", env);
  else if (run && run[0] == '/')
    n = snprintf(buf, cap, "%s/polyrx/serve.sock", run);
  else
    n = snprintf(buf, cap, "/tmp/polyrx-%u/serve.sock", (unsigned)getuid());
  /* a Unix socket's path has sizeof sun_path bytes, its NUL included */
  return n < 0 || (size_t)n >= cap || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path) ? -1
                                                                                               : 0;
}

/* The directory part of path into dir ("." for a bare name). */
static void dir_of(const char *path, char *dir, size_t cap) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(dir, cap, ".");
  else if (slash == path)
    snprintf(dir, cap, "/");
  else
    snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

/* Whether path (a link not followed) is a node of the given type (S_IFDIR, S_IFSOCK), of this uid,
 * whose mode has none of the forbidden bits (mode_says: why they are forbidden): 0 yes, else -1
 * with why filled. */
static int check_node(const char *path, mode_t type, const char *type_name, mode_t forbidden,
                      const char *mode_says, char *why, size_t cap) {
  struct stat sb;
  if (lstat(path, &sb) != 0) {
    snprintf(why, cap, "%s: %s", path, strerror(errno));
    return -1;
  }
  if ((sb.st_mode & S_IFMT) != type) {
    snprintf(why, cap, "%s is not a %s", path, type_name);
    return -1;
  }
  if (sb.st_uid != getuid()) {
    snprintf(why, cap, "%s belongs to uid %u, not to this user", path, (unsigned)sb.st_uid);
    return -1;
  }
  if (sb.st_mode & forbidden) {
    snprintf(why, cap, "%s has mode %04o: %s", path, (unsigned)(sb.st_mode & 07777), mode_says);
    return -1;
  }
  return 0;
}

/* A directory of this uid that no one else may write into. */
static int check_dir(const char *dir, char *why, size_t cap) {
  return check_node(dir, S_IFDIR, "directory", 022, "others may write into it", why, cap);
}

int serve_socket_dir(const char *path, char *why, size_t why_cap) {
  char dir[256];
  dir_of(path, dir, sizeof dir);
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    snprintf(why, why_cap, "cannot make %s: %s", dir, strerror(errno));
    return -1;
  }
  return check_dir(dir, why, why_cap);
}

int serve_socket_check(const char *path, char *why, size_t why_cap) {
  char dir[256];
  if (check_node(path, S_IFSOCK, "socket", 077, "not private to this user", why, why_cap) != 0)
    return -1;
  dir_of(path, dir, sizeof dir);
  return check_dir(dir, why, why_cap);
}

int serve_peer_uid(int fd, uid_t *uid, pid_t *pid) {
  struct ucred cr;
  socklen_t len = sizeof cr;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || len != sizeof cr) return -1;
  *uid = cr.uid;
  if (pid) *pid = cr.pid;
  return 0;
}

int serve_write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int serve_read_all(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

int serve_send_head(int fd, const serve_req_head *h, const int *fds, int nfds) {
  union {
    char buf[CMSG_SPACE(4 * sizeof(int))];
    struct cmsghdr align;
  } u;
  memset(&u, 0, sizeof u);
  struct iovec iov = {(void *)h, sizeof *h};
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (nfds > 0) {
    msg.msg_control = u.buf;
    msg.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
  }
  ssize_t w;
  do w = sendmsg(fd, &msg, MSG_NOSIGNAL);
  while (w < 0 && errno == EINTR);
  if (w <= 0) return -1;
  /* the fds went with the first byte; the rest of the header as plain bytes */
  return serve_write_all(fd, (const char *)h + w, sizeof *h - (size_t)w);
}

int serve_recv_head(int fd, serve_req_head *h, int fds[4], int *nfds) {
  union {
    char buf[CMSG_SPACE(4 * sizeof(int))];
    struct cmsghdr align;
  } u;
  for (int i = 0; i < 4; i++) fds[i] = -1;
  *nfds = 0;
  struct iovec iov = {h, sizeof *h};
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = u.buf;
  msg.msg_controllen = sizeof u.buf;
  ssize_t r;
  do r = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  while (r < 0 && errno == EINTR);
  if (r <= 0) return -1;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; i++) {
      int got;
      memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (*nfds < 4)
        fds[(*nfds)++] = got;
      else /* more than 4 (a confused client): the extra ones closed, not leaked */
        close(got);
    }
  }
  if (msg.msg_flags & MSG_CTRUNC) return -1;
  return serve_read_all(fd, (char *)h + r, sizeof *h - (size_t)r);
}

int serve_env_carried(const char *kv) {
  return !strncmp(kv, "POLYRX_", 7) || !strncmp(kv, "HOME=", 5) || !strncmp(kv, "XDG_", 4) ||
         !strncmp(kv, "CUDA_VISIBLE_DEVICES=", 21);
}

int serve_env_same_process(char *const *envs, size_t envc) {
  static const char *const once[] = {"POLYRX_CPU", "POLYRX_CUDA_MODULE", "CUDA_VISIBLE_DEVICES"};
  for (size_t k = 0; k < sizeof once / sizeof once[0]; k++) {
    size_t len = strlen(once[k]);
    const char *theirs = NULL, *ours = getenv(once[k]);
    for (size_t i = 0; i < envc; i++)
      if (!strncmp(envs[i], once[k], len) && envs[i][len] == '=') theirs = envs[i] + len + 1;
    if ((theirs == NULL) != (ours == NULL) || (theirs && strcmp(theirs, ours))) return 0;
  }
  return 1;
}
