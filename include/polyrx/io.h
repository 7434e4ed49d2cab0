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
/* Reads up to max samples into buf (in the stream's format), waiting until max samples are
 * there or the stream ends. A signal caught without SA_RESTART that interrupts the wait returns
 * the complete samples already read, or, when there are none, PRX_ERR_IO ("interrupted") after
 * which the stream can be read on. *n = 0 at the end of the stream and only there.
 * PRX_ERR_TRUNCATED when the stream ends inside a sample (the bytes of the partial sample are
 * reported in the message, never silently dropped); PRX_ERR_IO on a read error. */
prx_status prx_iq_read(prx_iq_reader *r, void *buf, size_t max, size_t *n);
void prx_iq_close(prx_iq_reader *r); /* accepts NULL */
/* The file the samples come from (the .sigmf-data of a recording), or "standard input". */
const char *prx_iq_reader_name(const prx_iq_reader *r);
/* Samples read so far (complete samples handed to the caller). */
uint64_t prx_iq_reader_samples(const prx_iq_reader *r);

/* ---- SigMF metadata ---- */
/* SigMF datatype name of a format: "cf32_le", "ci16_le", "ci8", "cu8"; NULL for cf16 or an
 * unknown format. */
const char *prx_sigmf_datatype_name(prx_format f);
/* Parses a core:datatype string: cf32_le, ci16_le, ci8 and cu8 are read; other valid SigMF
 * types (big-endian, real-valued, 32-bit integer, f64) give PRX_ERR_UNSUPPORTED and anything
 * else PRX_ERR_FORMAT, each with a message naming the type. */
prx_status prx_sigmf_parse_datatype(const char *name, prx_format *out);
/* Parses the text of a .sigmf-meta file (len bytes, need not be NUL-terminated) into info:
 * global core:datatype (required), core:sample_rate (0 when absent), captures[0].core:frequency
 * (0 when absent or captures is empty); is_sigmf = 1. Malformed JSON, a missing "global" object
 * or datatype, a missing "captures" array or wrongly typed fields give PRX_ERR_FORMAT with a
 * message; recordings polyrx cannot read (several channels, metadata only) PRX_ERR_UNSUPPORTED. */
prx_status prx_sigmf_parse_meta(const char *text, size_t len, prx_iq_info *info);

/* ---- writing SigMF ---- */
/* A streaming SigMF writer. A recording is complete or absent: samples go to a temporary file
 * beside BASE.sigmf-data as they come (bounded memory); close renames it to BASE.sigmf-data
 * and then writes BASE.sigmf-meta (through a temporary file and a rename), the metadata last.
 * After any error, and after discard, neither file exists. A process killed mid-write leaves
 * at most files named BASE.sigmf-data.tmp-* / BASE.sigmf-meta.tmp-*, never a .sigmf-meta. */
typedef struct prx_sigmf_writer prx_sigmf_writer;

typedef struct {
  prx_format format;       /* of the samples given to prx_sigmf_write: cf32 (default), ci16,
                              ci8 or cu8; stored little-endian (core:datatype cf32_le, ...) */
  double sample_rate;      /* core:sample_rate in Hz, > 0 (required) */
  double center_freq;      /* captures[0].core:frequency in Hz (default 0) */
  const char *description; /* core:description (NULL: none) */
  const char *author;      /* core:author (NULL: none) */
  const char *hw;          /* core:hw (NULL: none) */
  const char *datetime;    /* captures[0].core:datetime, ISO-8601 UTC (NULL: none) */
} prx_sigmf_meta;

prx_sigmf_meta prx_sigmf_meta_default(void);

/* Starts a recording at base (a path without the extension): removes BASE.sigmf-meta and
 * BASE.sigmf-data of an earlier run (the metadata first; PRX_ERR_IO when one cannot be
 * removed, e.g. a directory of that name) and creates the temporary data file. The caller
 * makes sure base is none of its inputs. core:version "1.0.0" and core:recorder "polyrx" are
 * written at close. */
prx_status prx_sigmf_writer_open(const char *base, const prx_sigmf_meta *meta,
                                 prx_sigmf_writer **out);
/* Declares an extension namespace in global core:extensions (SigMF 1.0: name, version,
 * optional); its fields may then be set. */
prx_status prx_sigmf_writer_add_extension(prx_sigmf_writer *w, const char *name,
                                          const char *version, int optional);
/* Sets a global field "namespace:name" (replacing an earlier value). The namespace must be
 * "core" or one declared by prx_sigmf_writer_add_extension; the fields the writer owns
 * (core:datatype, core:sample_rate, core:version, core:extensions) cannot be set. */
prx_status prx_sigmf_writer_set_number(prx_sigmf_writer *w, const char *key, double value);
prx_status prx_sigmf_writer_set_string(prx_sigmf_writer *w, const char *key, const char *value);
/* An annotation of the recording (SigMF annotations[]): a sample range, optionally with
 * frequency edges, a label, a comment and the name of what made it. */
typedef struct {
  uint64_t sample_start;                   /* core:sample_start */
  uint64_t sample_count;                   /* core:sample_count (0: omitted) */
  int has_freq;                            /* 1: the two edges below are written */
  double freq_lower_edge, freq_upper_edge; /* Hz, finite, lower <= upper */
  const char *label, *comment, *generator; /* core:label, core:comment, core:generator
                                              (NULL: omitted) */
} prx_sigmf_annotation;
/* Adds an annotation (copied). The metadata lists the annotations sorted by sample_start, as
 * SigMF requires (equal starts in the order added). */
prx_status prx_sigmf_writer_add_annotation(prx_sigmf_writer *w, const prx_sigmf_annotation *a);
/* Appends n samples (in meta.format). A failed write (disk full, ...) gives PRX_ERR_IO naming
 * the file; later writes then fail too. */
prx_status prx_sigmf_write(prx_sigmf_writer *w, const void *samples, size_t n);
/* Samples written so far. */
uint64_t prx_sigmf_writer_samples(const prx_sigmf_writer *w);
/* Finishes the data file (every buffered byte written and checked), renames it into place,
 * writes the metadata and frees w (also on error). Returns the first error of the writer's
 * whole life, so that a full disk is never silent; after an error the recording is removed
 * (neither file remains), so no metadata ever claims samples the data lacks. Accepts NULL. */
prx_status prx_sigmf_writer_close(prx_sigmf_writer *w);
/* Abandons a recording: closes w without writing metadata and removes its temporary data
 * file (the earlier run's files were removed at open). Accepts NULL. */
void prx_sigmf_writer_discard(prx_sigmf_writer *w);

#ifdef __cplusplus
}
#endif
#endif
