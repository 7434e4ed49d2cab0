/* polyrx core: status codes, error text, sample types and formats, backends, version. */
#ifndef POLYRX_CORE_H
#define POLYRX_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PRX_VERSION_MAJOR 0
#define PRX_VERSION_MINOR 1
#define PRX_VERSION_PATCH 0
const char *prx_version(void);

/* Every fallible call returns a prx_status: 0 is success, negative values are errors.
 * prx_last_error() gives the detail of the last error raised on the calling thread. */
typedef enum {
  PRX_OK = 0,
  PRX_ERR_INVALID = -1,     /* an impossible parameter or configuration */
  PRX_ERR_NOMEM = -2,       /* an allocation failed */
  PRX_ERR_IO = -3,          /* a read or write failed */
  PRX_ERR_FORMAT = -4,      /* malformed input (file contents, metadata, numbers) */
  PRX_ERR_TRUNCATED = -5,   /* the input ended inside a sample or record */
  PRX_ERR_UNSUPPORTED = -6, /* valid, but not supported by this build or backend */
  PRX_ERR_NODEVICE = -7,    /* a GPU backend was requested and none is usable */
  PRX_ERR_DEVICE = -8,      /* the GPU runtime or a GPU library reported an error */
  PRX_ERR_CAPACITY = -9,    /* the caller's output buffer is too small */
  PRX_ERR_INTERNAL = -10    /* a bug in polyrx: please report it */
} prx_status;

/* Static text for a status code ("invalid argument", ...). */
const char *prx_strerror(prx_status status);
/* The detailed message of the last error raised on this thread ("" if none). */
const char *prx_last_error(void);

/* Complex float sample; same layout as fftwf_complex and cufftComplex. */
typedef struct {
  float re, im;
} prx_cf32;

/* Interleaved I/Q sample formats. cu8 is rtl-sdr's offset binary (v - 127.5) / 127.5.
 * Integer formats scale to [-1, 1): ci16 / 32768, ci8 / 128. cf16 is IEEE half (output only). */
typedef enum { PRX_CF32 = 0, PRX_CI16, PRX_CI8, PRX_CU8, PRX_CF16 } prx_format;

/* Bytes of one complex sample in format f, 0 for an unknown format. */
size_t prx_format_size(prx_format f);
/* "cf32", "ci16", ... ; NULL for an unknown format. */
const char *prx_format_name(prx_format f);
/* Parses a format name (case-insensitive); PRX_ERR_INVALID with a message if unknown. */
prx_status prx_format_parse(const char *name, prx_format *out);
/* Converts n samples of format f to cf32 (f may not be PRX_CF16). */
prx_status prx_convert_to_cf32(prx_format f, const void *in, size_t n, prx_cf32 *out);

typedef enum { PRX_BACKEND_AUTO = 0, PRX_BACKEND_CPU, PRX_BACKEND_CUDA } prx_backend;
const char *prx_backend_name(prx_backend b);
/* 1 if this build has the CUDA backend and a usable device is present, else 0. */
int prx_cuda_available(void);
/* Number of online CPU cores (>= 1). */
int prx_cpu_count(void);

#ifdef __cplusplus
}
#endif
#endif
