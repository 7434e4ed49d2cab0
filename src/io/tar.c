/* The tar container of SigMF archives (.sigmf): ustar headers written, and the member list read
 * (ustar, GNU long names, pax path/size records) so that a member's bytes can be streamed from
 * inside the archive. */
#include "io_internal.h"

#include "../core/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PRX_TAR_MAX_MEMBERS 100000

/* An unsigned number in an octal field of width w (w-1 digits and a NUL). */
static void put_octal(unsigned char *f, size_t w, uint64_t v) {
  for (size_t i = w - 1; i-- > 0; v >>= 3) f[i] = (unsigned char)('0' + (v & 7));
  f[w - 1] = '\0';
}

static unsigned checksum(const unsigned char *h) {
  unsigned sum = 0;
  for (size_t i = 0; i < PRX_TAR_BLOCK; i++) sum += (i >= 148 && i < 156) ? ' ' : h[i];
  return sum;
}

int prx_tar_header(unsigned char hdr[PRX_TAR_BLOCK], const char *name, uint64_t size, char type,
                   unsigned mode, int64_t mtime) {
  memset(hdr, 0, PRX_TAR_BLOCK);
  size_t n = strlen(name);
  if (n <= 100) {
    memcpy(hdr, name, n);
  } else {
    /* split at a '/' so that the prefix fits 155 bytes and the rest 100 */
    const char *cut = NULL;
    for (const char *p = name; (p = strchr(p, '/')); p++)
      if ((size_t)(p - name) <= 155 && n - (size_t)(p - name) - 1 <= 100 && p != name) {
        cut = p;
        break;
      }
    if (!cut) return -1;
    memcpy(hdr + 345, name, (size_t)(cut - name));
    memcpy(hdr, cut + 1, n - (size_t)(cut - name) - 1);
  }
  put_octal(hdr + 100, 8, mode & 07777);
  put_octal(hdr + 108, 8, 0);
  put_octal(hdr + 116, 8, 0);
  if (size < ((uint64_t)1 << 33)) {
    put_octal(hdr + 124, 12, size);
  } else { /* base-256 (GNU, read by GNU tar, bsdtar and Python's tarfile) */
    hdr[124] = 0x80;
    for (int i = 0; i < 8; i++) hdr[135 - i] = (unsigned char)(size >> (8 * i));
  }
  put_octal(hdr + 136, 12, mtime > 0 ? (uint64_t)mtime : 0);
  hdr[156] = (unsigned char)type;
  memcpy(hdr + 257, "ustar", 6);
  memcpy(hdr + 263, "00", 2);
  put_octal(hdr + 148, 7, checksum(hdr));
  hdr[155] = ' ';
  return 0;
}

/* A number field: octal text (spaces and NULs around it) or base-256; -1 when neither. */
static int get_number(const unsigned char *f, size_t w, uint64_t *v) {
  *v = 0;
  if (f[0] & 0x80) {
    if (f[0] != 0x80) return -1; /* negative or too large */
    for (size_t i = 1; i < w; i++) {
      if (*v >> 56) return -1;
      *v = (*v << 8) | f[i];
    }
    return 0;
  }
  size_t i = 0;
  while (i < w && f[i] == ' ') i++;
  int digits = 0;
  for (; i < w && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
    if (*v >> 60) return -1;
    *v = (*v << 3) | (uint64_t)(f[i] - '0');
  }
  for (; i < w; i++)
    if (f[i] != ' ' && f[i] != '\0') return -1;
  return digits ? 0 : -1;
}

static prx_status read_at(int fd, const char *name, void *buf, size_t n, uint64_t off) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return prx_fail(PRX_ERR_IO, "cannot read '%s': %s", name, strerror(errno));
    if (r == 0)
      return prx_fail(PRX_ERR_FORMAT, "SigMF archive '%s' ends inside a tar header", name);
    done += (size_t)r;
  }
  return PRX_OK;
}

/* The path and size records of a pax extended header ("LEN key=value\n" records). */
static prx_status parse_pax(const char *rec, size_t n, const char *name, char *path, uint64_t *size,
                            int *has_size) {
  size_t at = 0;
  while (at < n) {
    char *end;
    unsigned long len = strtoul(rec + at, &end, 10);
    if (end == rec + at || *end != ' ' || len == 0 || len > n - at || rec[at + len - 1] != '\n')
      return prx_fail(PRX_ERR_FORMAT, "SigMF archive '%s': malformed pax header record", name);
    const char *kv = end + 1, *stop = rec + at + len - 1;
    const char *eq = memchr(kv, '=', (size_t)(stop - kv));
    if (!eq) return prx_fail(PRX_ERR_FORMAT, "SigMF archive '%s': pax record without '='", name);
    size_t vlen = (size_t)(stop - eq - 1);
    if ((size_t)(eq - kv) == 4 && !memcmp(kv, "path", 4)) {
      if (vlen >= 512)
        return prx_fail(PRX_ERR_FORMAT, "SigMF archive '%s': member name too long", name);
      memcpy(path, eq + 1, vlen);
      path[vlen] = '\0';
    } else if ((size_t)(eq - kv) == 4 && !memcmp(kv, "size", 4)) {
      char num[32];
      if (vlen == 0 || vlen >= sizeof num)
        return prx_fail(PRX_ERR_FORMAT, "SigMF archive '%s': bad pax size", name);
      memcpy(num, eq + 1, vlen);
      num[vlen] = '\0';
      if (strspn(num, "0123456789") != vlen)
        return prx_fail(PRX_ERR_FORMAT, "SigMF archive '%s': bad pax size", name);
      *size = strtoull(num, NULL, 10);
      *has_size = 1;
    }
    at += len;
  }
  return PRX_OK;
}

prx_status prx_tar_list(int fd, const char *name, prx_tar_member **members, size_t *n) {
  *members = NULL;
  *n = 0;
  struct stat sb;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
    return prx_fail(PRX_ERR_IO, "SigMF archive '%s' is not a regular file", name);
  uint64_t file_size = (uint64_t)sb.st_size, off = 0;
  size_t cap = 0;
  prx_tar_member *list = NULL;
  char next_name[512] = ""; /* from a GNU 'L' or pax 'x' header, for the next member */
  uint64_t next_size = 0;
  int has_next_size = 0;
  prx_status st = PRX_OK;
  unsigned char h[PRX_TAR_BLOCK];
  for (;;) {
    if (off + PRX_TAR_BLOCK > file_size) {
      st = prx_fail(PRX_ERR_FORMAT,
                    "SigMF archive '%s' is not a complete tar file (no end marker at byte %llu)",
                    name, (unsigned long long)off);
      break;
    }
    if ((st = read_at(fd, name, h, sizeof h, off))) break;
    int zero = 1;
    for (size_t i = 0; i < sizeof h && zero; i++) zero = h[i] == 0;
    if (zero) break; /* the end marker */
    uint64_t sum, size;
    if (get_number(h + 148, 8, &sum) || sum != checksum(h)) {
      st = prx_fail(PRX_ERR_FORMAT, "'%s' is not a tar file (bad header checksum at byte %llu)",
                    name, (unsigned long long)off);
      break;
    }
    if (get_number(h + 124, 12, &size)) {
      st = prx_fail(PRX_ERR_FORMAT, "SigMF archive '%s': bad member size at byte %llu", name,
                    (unsigned long long)off);
      break;
    }
    char type = h[156] ? (char)h[156] : '0';
    /* a pax size record applies to the member after it */
    if (type != 'x' && type != 'g' && type != 'L' && has_next_size) size = next_size;
    uint64_t data = off + PRX_TAR_BLOCK;
    if (size > file_size || data > file_size - size) {
      st = prx_fail(PRX_ERR_FORMAT,
                    "SigMF archive '%s' is cut short: a member of %llu bytes at byte %llu runs "
                    "past its end (%llu bytes)",
                    name, (unsigned long long)size, (unsigned long long)data,
                    (unsigned long long)file_size);
      break;
    }
    if (type == 'L' || type == 'x') {
      if (size > 65536) {
        st = prx_fail(PRX_ERR_FORMAT, "SigMF archive '%s': extended header too large", name);
        break;
      }
      char *rec = malloc(size + 1);
      if (!rec) {
        st = prx_fail(PRX_ERR_NOMEM, "out of memory");
        break;
      }
      st = read_at(fd, name, rec, (size_t)size, data);
      rec[size] = '\0';
      if (!st && type == 'L') {
        size_t len = strnlen(rec, (size_t)size);
        if (len >= sizeof next_name)
          st = prx_fail(PRX_ERR_FORMAT, "SigMF archive '%s': member name too long", name);
        else
          memcpy(next_name, rec, len + 1);
      } else if (!st) {
        st = parse_pax(rec, (size_t)size, name, next_name, &next_size, &has_next_size);
      }
      free(rec);
      if (st) break;
    } else if (type != 'g') {
      if (*n == PRX_TAR_MAX_MEMBERS) {
        st = prx_fail(PRX_ERR_FORMAT, "SigMF archive '%s' has more than %d members", name,
                      PRX_TAR_MAX_MEMBERS);
        break;
      }
      if (*n == cap) {
        size_t nc = cap ? 2 * cap : 8;
        prx_tar_member *nl = realloc(list, nc * sizeof *nl);
        if (!nl) {
          st = prx_fail(PRX_ERR_NOMEM, "out of memory");
          break;
        }
        list = nl;
        cap = nc;
      }
      prx_tar_member *m = &list[(*n)++];
      if (next_name[0]) {
        snprintf(m->name, sizeof m->name, "%s", next_name);
      } else {
        char base[101], prefix[156];
        memcpy(base, h, 100);
        base[100] = '\0';
        memcpy(prefix, h + 345, 155);
        prefix[155] = '\0';
        if (!memcmp(h + 257, "ustar", 5) && prefix[0])
          snprintf(m->name, sizeof m->name, "%s/%s", prefix, base);
        else
          snprintf(m->name, sizeof m->name, "%s", base);
      }
      m->type = type;
      m->offset = data;
      m->size = size;
      next_name[0] = '\0';
      has_next_size = 0;
    }
    off = data + (size + PRX_TAR_BLOCK - 1) / PRX_TAR_BLOCK * PRX_TAR_BLOCK;
  }
  if (st) {
    free(list);
    *n = 0;
    return st;
  }
  *members = list;
  return PRX_OK;
}
