/* Packing finished files into a SigMF archive (a tar file): several recordings and the
 * collection tying them, as the specification allows ("at least one recording; a collection
 * MAY sit in the top-level directory"). The archive is written through a temporary file and a
 * rename, so it is complete or absent like every recording polyrx writes. */
#include "io_internal.h"

#include "../core/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Appends one file as a member named `name`: header, bytes, padding. */
static prx_status add_file(FILE *out, const char *tmp, const char *path, const char *name) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return prx_fail(PRX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  struct stat sb;
  prx_status st = PRX_OK;
  unsigned char hdr[PRX_TAR_BLOCK];
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
    st = prx_fail(PRX_ERR_IO, "'%s' is not a regular file", path);
  else if (prx_tar_header(hdr, name, (uint64_t)sb.st_size, '0', 0644, (int64_t)sb.st_mtime))
    st = prx_fail(PRX_ERR_INVALID, "member name '%s' is too long for a tar header", name);
  else if (fwrite(hdr, 1, sizeof hdr, out) != sizeof hdr)
    st = prx_fail(PRX_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
  uint64_t left = st ? 0 : (uint64_t)sb.st_size;
  static unsigned char buf[1 << 16];
  while (!st && left > 0) {
    ssize_t r = read(fd, buf, left < sizeof buf ? (size_t)left : sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      st = prx_fail(PRX_ERR_IO, "cannot read '%s': %s", path, r ? strerror(errno) : "file shrank");
    else if (fwrite(buf, 1, (size_t)r, out) != (size_t)r)
      st = prx_fail(PRX_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
    else
      left -= (uint64_t)r;
  }
  close(fd);
  size_t pad = (size_t)((PRX_TAR_BLOCK - (uint64_t)sb.st_size % PRX_TAR_BLOCK) % PRX_TAR_BLOCK);
  static const unsigned char zeros[PRX_TAR_BLOCK];
  if (!st && fwrite(zeros, 1, pad, out) != pad)
    st = prx_fail(PRX_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
  return st;
}

prx_status prx_sigmf_archive_pack(const char *archive, const char *dir, const char *const *files,
                                  size_t n) {
  if (!archive || !dir || (n && !files) || n == 0)
    return prx_fail(PRX_ERR_INVALID, "prx_sigmf_archive_pack: nothing to pack");
  size_t alen = strlen(archive);
  if (alen < 6 || strcmp(archive + alen - 6, ".sigmf"))
    return prx_fail(PRX_ERR_INVALID, "SigMF archive '%s' must end in .sigmf", archive);
  FILE *out = NULL;
  char *tmp = NULL;
  prx_status st = prx_io_create_temp(archive, "wb", &out, &tmp);
  if (st) return st;
  size_t dlen = strlen(dir);
  for (size_t i = 0; i < n && !st; i++) {
    char *path = malloc(dlen + strlen(files[i]) + 2);
    if (!path) {
      st = prx_fail(PRX_ERR_NOMEM, "out of memory");
      break;
    }
    sprintf(path, "%s/%s", dir, files[i]);
    st = add_file(out, tmp, path, files[i]);
    free(path);
  }
  static const unsigned char end[2 * PRX_TAR_BLOCK];
  errno = 0;
  if (!st && (fwrite(end, 1, sizeof end, out) != sizeof end || fflush(out) != 0))
    st = prx_fail(PRX_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno ? errno : EIO));
  if (fclose(out) != 0 && !st)
    st = prx_fail(PRX_ERR_IO, "cannot write '%s': %s", tmp, strerror(errno));
  if (!st && rename(tmp, archive) != 0)
    st = prx_fail(PRX_ERR_IO, "cannot rename '%s' to '%s': %s", tmp, archive, strerror(errno));
  if (st) unlink(tmp);
  free(tmp);
  return st;
}
