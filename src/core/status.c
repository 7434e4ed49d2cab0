/* Status codes and the thread-local detail message. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[512];

const char *prx_strerror(prx_status status) {
  switch (status) {
  case PRX_OK: return "success";
  case PRX_ERR_INVALID: return "invalid argument";
  case PRX_ERR_NOMEM: return "out of memory";
  case PRX_ERR_IO: return "input/output error";
  case PRX_ERR_FORMAT: return "malformed input";
  case PRX_ERR_TRUNCATED: return "truncated input";
  case PRX_ERR_UNSUPPORTED: return "not supported";
  case PRX_ERR_NODEVICE: return "no usable GPU";
  case PRX_ERR_DEVICE: return "GPU error";
  case PRX_ERR_CAPACITY: return "output buffer too small";
  case PRX_ERR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

const char *prx_last_error(void) { return last_error; }

prx_status prx_fail(prx_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return status;
}

const char *prx_version(void) { return "0.1.0"; }
