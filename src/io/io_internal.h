/* Shared by the I/O sources (not installed): byte order of stored samples and the parts of a
 * SigMF metadata file the reader needs beyond prx_iq_info. */
#ifndef PRX_IO_INTERNAL_H
#define PRX_IO_INTERNAL_H

#include "polyrx/io.h"

#include <stddef.h>
#include <stdint.h>

/* Stored samples are little-endian (SigMF *_le, and raw files by the usual SDR convention);
 * on a big-endian host every multi-byte component is swapped on the way in and out. */
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) &&                                    \
    __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define PRX_HOST_BIG_ENDIAN 1
#else
#define PRX_HOST_BIG_ENDIAN 0
#endif

/* Swaps the byte order of n samples of format f in place (a no-op for the 8-bit formats). */
void prx_io_swap_samples(prx_format f, void *buf, size_t n);

/* What the reader takes from a .sigmf-meta beyond prx_iq_info. */
typedef struct {
  prx_iq_info info;
  uint64_t header_bytes; /* captures[0].core:header_bytes: bytes to skip before sample 0 */
  char *dataset;         /* global core:dataset (a non-conforming data file name), malloc'd or
                            NULL: then the data file is BASE.sigmf-data */
} prx_sigmf_read_meta;

/* Parses a .sigmf-meta text into m (see prx_sigmf_parse_meta); free m->dataset afterwards. */
prx_status prx_sigmf_parse_meta_full(const char *text, size_t len, prx_sigmf_read_meta *m);

#endif
