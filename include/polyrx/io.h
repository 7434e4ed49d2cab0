/* polyrx I/O: raw interleaved IQ files and pipes, and SigMF recordings, read and written in
 * bounded memory (block by block). */
#ifndef POLYRX_IO_H
#define POLYRX_IO_H

#include "polyrx/core.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- reading ---- */
typedef struct prx_iq_reader prx_iq_reader;

typedef struct {
  prx_format format;  /* sample format of the stream */
  double sample_rate; /* Hz; 0 when unknown (raw file without -s) */
  double center_freq; /* Hz; 0 when unknown */
  int is_sigmf;       /* 1 when the rate/frequency/format came from a .sigmf-meta */
} prx_iq_info;

/* Opens path for reading: "-" is standard input; a path ending in .sigmf-meta or .sigmf-data
 * (or a base name with both files beside it) is read as SigMF, taking format, rate and frequency
 * from the metadata (the caller's format must then be the recording's, or PRX_CF32 default is
 * replaced); anything else is raw interleaved samples of the given format. */
prx_status prx_iq_open(const char *path, prx_format format, prx_iq_reader **out);
const prx_iq_info *prx_iq_reader_info(const prx_iq_reader *r);
/* Reads up to max samples into buf (in the stream's format). *n = 0 at the end of the stream.
 * PRX_ERR_TRUNCATED when the stream ends inside a sample (the bytes of the partial sample are
 * reported in the message, never silently dropped); PRX_ERR_IO on a read error. */
prx_status prx_iq_read(prx_iq_reader *r, void *buf, size_t max, size_t *n);
void prx_iq_close(prx_iq_reader *r); /* accepts NULL */

#ifdef __cplusplus
}
#endif
#endif
