/* SHA-512 (FIPS 180-4), for the metadata hashes a SigMF collection lists (core:streams). */
#include "io_internal.h"

#include "../core/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static const uint64_t K[80] = {
    0x428a2f98d728ae22ULL, 0x7137449123ef65cdULL, 0xb5c0fbcfec4d3b2fULL, 0xe9b5dba58189dbbcULL,
    0x3956c25bf348b538ULL, 0x59f111f1b605d019ULL, 0x923f82a4af194f9bULL, 0xab1c5ed5da6d8118ULL,
    0xd807aa98a3030242ULL, 0x12835b0145706fbeULL, 0x243185be4ee4b28cULL, 0x550c7dc3d5ffb4e2ULL,
    0x72be5d74f27b896fULL, 0x80deb1fe3b1696b1ULL, 0x9bdc06a725c71235ULL, 0xc19bf174cf692694ULL,
    0xe49b69c19ef14ad2ULL, 0xefbe4786384f25e3ULL, 0x0fc19dc68b8cd5b5ULL, 0x240ca1cc77ac9c65ULL,
    0x2de92c6f592b0275ULL, 0x4a7484aa6ea6e483ULL, 0x5cb0a9dcbd41fbd4ULL, 0x76f988da831153b5ULL,
    0x983e5152ee66dfabULL, 0xa831c66d2db43210ULL, 0xb00327c898fb213fULL, 0xbf597fc7beef0ee4ULL,
    0xc6e00bf33da88fc2ULL, 0xd5a79147930aa725ULL, 0x06ca6351e003826fULL, 0x142929670a0e6e70ULL,
    0x27b70a8546d22ffcULL, 0x2e1b21385c26c926ULL, 0x4d2c6dfc5ac42aedULL, 0x53380d139d95b3dfULL,
    0x650a73548baf63deULL, 0x766a0abb3c77b2a8ULL, 0x81c2c92e47edaee6ULL, 0x92722c851482353bULL,
    0xa2bfe8a14cf10364ULL, 0xa81a664bbc423001ULL, 0xc24b8b70d0f89791ULL, 0xc76c51a30654be30ULL,
    0xd192e819d6ef5218ULL, 0xd69906245565a910ULL, 0xf40e35855771202aULL, 0x106aa07032bbd1b8ULL,
    0x19a4c116b8d2d0c8ULL, 0x1e376c085141ab53ULL, 0x2748774cdf8eeb99ULL, 0x34b0bcb5e19b48a8ULL,
    0x391c0cb3c5c95a63ULL, 0x4ed8aa4ae3418acbULL, 0x5b9cca4f7763e373ULL, 0x682e6ff3d6b2b8a3ULL,
    0x748f82ee5defb2fcULL, 0x78a5636f43172f60ULL, 0x84c87814a1f0ab72ULL, 0x8cc702081a6439ecULL,
    0x90befffa23631e28ULL, 0xa4506cebde82bde9ULL, 0xbef9a3f7b2c67915ULL, 0xc67178f2e372532bULL,
    0xca273eceea26619cULL, 0xd186b8c721c0c207ULL, 0xeada7dd6cde0eb1eULL, 0xf57d4f7fee6ed178ULL,
    0x06f067aa72176fbaULL, 0x0a637dc5a2c898a6ULL, 0x113f9804bef90daeULL, 0x1b710b35131c471bULL,
    0x28db77f523047d84ULL, 0x32caab7b40c72493ULL, 0x3c9ebe0a15c9bebcULL, 0x431d67c49c100d4cULL,
    0x4cc5d4becb3e42b6ULL, 0x597f299cfc657e2aULL, 0x5fcb6fab3ad6faecULL, 0x6c44198c4a475817ULL};

static uint64_t rotr(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

static void compress(uint64_t h[8], const unsigned char *p) {
  uint64_t w[80];
  for (int i = 0; i < 16; i++) {
    w[i] = 0;
    for (int j = 0; j < 8; j++) w[i] = (w[i] << 8) | p[8 * i + j];
  }
  for (int i = 16; i < 80; i++) {
    uint64_t s0 = rotr(w[i - 15], 1) ^ rotr(w[i - 15], 8) ^ (w[i - 15] >> 7);
    uint64_t s1 = rotr(w[i - 2], 19) ^ rotr(w[i - 2], 61) ^ (w[i - 2] >> 6);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint64_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int i = 0; i < 80; i++) {
    uint64_t t1 =
        k + (rotr(e, 14) ^ rotr(e, 18) ^ rotr(e, 41)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
    uint64_t t2 = (rotr(a, 28) ^ rotr(a, 34) ^ rotr(a, 39)) + ((a & b) ^ (a & c) ^ (b & c));
    k = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += k;
}

void prx_sha512_init(prx_sha512_ctx *c) {
  static const uint64_t iv[8] = {
      0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
      0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};
  memcpy(c->h, iv, sizeof iv);
  c->bytes = 0;
  c->fill = 0;
}

void prx_sha512_update(prx_sha512_ctx *c, const void *data, size_t n) {
  const unsigned char *p = data;
  c->bytes += n;
  while (n > 0) {
    size_t k = 128 - c->fill < n ? 128 - c->fill : n;
    memcpy(c->block + c->fill, p, k);
    c->fill += k;
    p += k;
    n -= k;
    if (c->fill == 128) {
      compress(c->h, c->block);
      c->fill = 0;
    }
  }
}

void prx_sha512_final(prx_sha512_ctx *c, unsigned char digest[64]) {
  uint64_t bits = c->bytes * 8;
  unsigned char pad = 0x80;
  prx_sha512_update(c, &pad, 1);
  pad = 0;
  while (c->fill != 112) prx_sha512_update(c, &pad, 1);
  unsigned char len[16] = {0}; /* a 128-bit length: the high half is 0 below 2^64 bits */
  for (int i = 0; i < 8; i++) len[15 - i] = (unsigned char)(bits >> (8 * i));
  prx_sha512_update(c, len, 16);
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) digest[8 * i + j] = (unsigned char)(c->h[i] >> (56 - 8 * j));
}

static void to_hex(const unsigned char d[64], char hex[129]) {
  static const char digit[] = "0123456789abcdef";
  for (int i = 0; i < 64; i++) {
    hex[2 * i] = digit[d[i] >> 4];
    hex[2 * i + 1] = digit[d[i] & 15];
  }
  hex[128] = '\0';
}

void prx_sha512_hex(const void *data, size_t n, char hex[129]) {
  prx_sha512_ctx c;
  prx_sha512_init(&c);
  prx_sha512_update(&c, data, n);
  unsigned char d[64];
  prx_sha512_final(&c, d);
  to_hex(d, hex);
}

prx_status prx_sha512_file(const char *path, char hex[129]) {
  if (!path || !hex) return prx_fail(PRX_ERR_INVALID, "prx_sha512_file: NULL argument");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return prx_fail(PRX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
  prx_sha512_ctx c;
  prx_sha512_init(&c);
  unsigned char buf[1 << 14];
  for (;;) {
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      close(fd);
      return prx_fail(PRX_ERR_IO, "cannot read '%s': %s", path, strerror(e));
    }
    if (r == 0) break;
    prx_sha512_update(&c, buf, (size_t)r);
  }
  close(fd);
  unsigned char d[64];
  prx_sha512_final(&c, d);
  to_hex(d, hex);
  return PRX_OK;
}
