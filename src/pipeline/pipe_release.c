/* A writer's release of the output lines it has read (pipeline.h, prx_pipe_release). */
#include "pipeline.h"

#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>

#define LINE 64

/* CLDEMOTE is a hint in the reserved-NOP opcode space (0F 1C /0): a processor without it runs it
 * as a NOP, so it needs no check. */
__attribute__((target("cldemote"))) static void demote(const unsigned char *p,
                                                       const unsigned char *end) {
  for (; p < end; p += LINE) _cldemote((void *)p);
}

__attribute__((target("clflushopt"))) static void flush(const unsigned char *p,
                                                        const unsigned char *end) {
  for (; p < end; p += LINE) _mm_clflushopt((void *)p);
}

static int has_clflushopt(void) {
  static int known = -1; /* a benign race: every thread computes the same answer */
  if (known < 0) {
    unsigned a, b, c, d;
    known = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 23 & 1);
  }
  return known;
}

void prx_pipe_release(const void *p, size_t bytes, prx_pipe_release_how how) {
  if (!bytes || how == PRX_PIPE_KEEP) return;
  const unsigned char *a = (const unsigned char *)((uintptr_t)p & ~(uintptr_t)(LINE - 1));
  const unsigned char *end = (const unsigned char *)p + bytes;
  if (how == PRX_PIPE_DEMOTE)
    demote(a, end);
  else if (how == PRX_PIPE_FLUSH && has_clflushopt())
    flush(a, end);
}
#else
void prx_pipe_release(const void *p, size_t bytes, prx_pipe_release_how how) {
  (void)p;
  (void)bytes;
  (void)how;
}
#endif
