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
  int is_wav;         /* 1 when they came from a WAV (RIFF or RF64) file's header */
} prx_iq_info;

/* Opens path for reading: "-" is standard input; a path ending in .sigmf-meta or .sigmf-data
 * (or a base name with both files beside it) is read as SigMF, taking format, rate and frequency
 * from the metadata (the caller's format must then be the recording's, or PRX_CF32 default is
 * replaced); a path ending in .sigmf is a SigMF archive (a tar file holding one recording: its
 * data member is streamed from inside the archive, nothing is extracted); a regular file that
 * begins as a WAV file does ("RIFF"/"RF64" ... "WAVE", whatever its name) is read as one
 * (prx_wav_info: two channels, I then Q; the format, rate and centre frequency from its
 * header, as for SigMF); anything else is raw interleaved samples of the given format.
 * Standard input is raw: a WAV header arriving there is an error at the first read. */
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
/* on = 1: every sample is handed out with I and Q exchanged (prx_iq_read, and the positional
 * reads): a recording whose two channels are the wrong way round, its spectrum mirrored about
 * the centre (the SDR programs' "swap I/Q"); a mirrored WAV recording (prx_wav_info.inverted),
 * handed out mirrored back, is mirrored again. Set before the first read. */
void prx_iq_reader_swap_iq(prx_iq_reader *r, int on);
/* The file the samples come from (the .sigmf-data of a recording), or "standard input". */
const char *prx_iq_reader_name(const prx_iq_reader *r);
/* Samples read so far (complete samples handed to the caller; from the window's start). */
uint64_t prx_iq_reader_samples(const prx_iq_reader *r);

/* The stream's length where it is known at open (a regular file, a SigMF archive's member, a
 * WAV file's data chunk): *samples whole samples after any header, *extra_bytes after the last
 * whole one (a cut file); returns 1. Returns 0 (and zeros) for a pipe or standard input. With a
 * window, the window's samples (extra_bytes 0 where it ends before the stream). */
int prx_iq_reader_extent(const prx_iq_reader *r, uint64_t *samples, uint64_t *extra_bytes);

/* Reads only the stream's samples first .. first + count - 1 (count UINT64_MAX: to its end), as
 * a time range of a long recording: set before the first read. The reader's counts and positions
 * (prx_iq_read, prx_iq_reader_samples, prx_iq_reader_extent, positional reads) then start at
 * `first`. A regular file (raw, SigMF, WAV, real samples too) is read from there at once; a pipe's
 * first samples are read and dropped at the first read (PRX_ERR_INVALID there if it ends before
 * `first`). PRX_ERR_INVALID: count 0, a start at or past a file's end, or reads already made. */
prx_status prx_iq_reader_window(prx_iq_reader *r, uint64_t first, uint64_t count);
/* The window's first sample in the stream (0 without a window) and its count (UINT64_MAX:
 * to the stream's end). */
uint64_t prx_iq_reader_window_start(const prx_iq_reader *r);
uint64_t prx_iq_reader_window_count(const prx_iq_reader *r);

/* ---- WAV files ----
 * The SDR programs' I/Q recordings (SDR#, HDSDR, SDRuno, SDR Console, Perseus, GNU Radio's WAV
 * sink): two channels, I then Q, little-endian PCM of 8, 16, 24 or 32 bits or IEEE float of 32
 * or 64 (WAVE_FORMAT_EXTENSIBLE too); RF64 (EBU Tech 3306) for files past 4 GiB. PCM 16 is read
 * as ci16, float 32 as cf32, PCM 8 (unsigned) as cu8 (its zero taken at 127.5 as for rtl-sdr,
 * whose bytes such files usually hold); PCM 24, PCM 32 and float 64 are converted to cf32 as
 * they are read (full scale 1), so prx_iq_info.format is cf32 for them. */
typedef enum {
  PRX_WAV_EXTENT_DECLARED = 0, /* the data chunk's size, as the header gives it */
  PRX_WAV_EXTENT_TO_END,       /* a size never filled in (0 or 0xFFFFFFFF): to the file's end */
  PRX_WAV_EXTENT_WRAPPED,      /* a RIFF file past 4 GiB whose 32-bit size wrapped around: the
                                  size plus the multiple of 4 GiB that reaches the file's end or
                                  the next chunk */
  PRX_WAV_EXTENT_CUT           /* the header claims more than the file holds: to its end */
} prx_wav_extent;

typedef struct {
  int rf64;                /* 1: an RF64 file (sizes from its ds64 chunk) */
  int channels;            /* 2: I and Q; 1: real samples (see "real samples" below) */
  int bits;                /* bits of one component in the file: 8, 16, 24, 32 or 64 */
  int is_float;            /* 1: IEEE float components */
  uint64_t data_offset;    /* byte of the first sample in the file */
  uint64_t declared_bytes; /* the data chunk's size as written in the header */
  uint64_t data_bytes;     /* the bytes read as samples (see extent) */
  prx_wav_extent extent;   /* how data_bytes was found */
  const char *center_from; /* where prx_iq_info.center_freq came from: "auxi chunk", "rcvr
                              chunk", "file name", or NULL (none: 0) */
  const char *start_time;  /* the recording's start from an auxi chunk ("YYYY-MM-DDTHH:MM:SS.mmm",
                              the recorder's clock, zone not given) or a rcvr chunk (UTC, with
                              "Z"), a KiwiSDR file's GPS time stamps (UTC, "Z", to the
                              nanosecond) or a kiwirecorder file name (UTC, "Z"); NULL when none */
  double header_rate;      /* the fmt chunk's sample rate */
  const char *rate_from;   /* where prx_iq_info.sample_rate came from: "fmt chunk" or "GPS time
                              stamps" (a KiwiSDR file: its fmt chunk holds the rate rounded to
                              whole Hz) */
  uint64_t data_chunks;    /* data chunks read as one stream: 1, or a KiwiSDR file's many */
  int inverted;            /* 1: the spectrum is mirrored (a lower sideband's audio: a kiwirecorder
                              _lsb or _lsn file); the reader hands its samples out mirrored back
                              (I and Q exchanged), prx_iq_info.center_freq where the mirrored
                              stream's centre lies */
  /* A KiwiSDR file (kiwirecorder --kiwi-wav) has a "kiwi" chunk before each data chunk: the GPS
   * time of the data chunk's first sample, as seconds of the GPS week. */
  uint64_t gps_stamps;    /* kiwi chunks */
  uint64_t gps_valid;     /* those with a GPS time (the receiver had a fix within 253 s) */
  double gps_rate;        /* samples per second over the intervals between successive valid
                             stamps without a gap (0: none) */
  double gps_span;        /* seconds those intervals cover */
  uint64_t gps_gaps;      /* successive valid stamps whose time apart disagrees with the samples
                             between them (at the fmt chunk's rate) by more than a quarter: samples
                             lost between them (dropped network packets) */
  uint64_t gps_first_gap; /* the stream's first sample after the first gap (0: no gap) */
  uint64_t gps_filled;    /* zero samples the reader puts in the gaps, as many as the stamps' time
                             says were lost (a gap of a minute or more is left as it is): the stream
                             keeps its time; data_bytes does not count them */
} prx_wav_info;

/* ---- raw recordings that say what they hold ----
 * SDRangel's .sdriq files (by the name's extension: a 32-byte header of rate, centre, start time
 * and sample size, checked by its CRC32; 16-bit samples read as ci16, 24-bit ones (int32 holding
 * 24-bit values) converted to cf32 as read, full scale 2^23) and gqrx's I/Q recordings, whose
 * name gives the start in UTC, the centre and the rate (gqrx_YYYYMMDD_HHMMSS_FREQ_RATE_fc.raw:
 * cf32, taken when no other format is asked for). */
typedef struct {
  const char *recorder;   /* "SDRangel .sdriq" or "gqrx file name" */
  int bits;               /* .sdriq: 16 or 24 bits a component; 0 else */
  const char *start_time; /* the start in UTC ("...Z"); NULL when unknown */
} prx_iq_origin;
/* What r's raw file says of itself, NULL for other inputs. Lives as long as r. */
const prx_iq_origin *prx_iq_reader_origin(const prx_iq_reader *r);
/* The input's start in UTC where it gives one outside SigMF metadata (a WAV file's rcvr chunk
 * or KiwiSDR stamps, an .sdriq header, a gqrx name), else NULL. */
const char *prx_iq_reader_start_utc(const prx_iq_reader *r);

/* The WAV header r read, NULL when r does not read a WAV file. Lives as long as r. */
const prx_wav_info *prx_iq_reader_wav(const prx_iq_reader *r);
/* How w stores a component: "PCM 8-bit", "PCM 16-bit", "PCM 24-bit", "PCM 32-bit",
 * "float 32-bit" or "float 64-bit", after "real " for a one-channel file. */
const char *prx_wav_stored_name(const prx_wav_info *w);

/* ---- writing WAV ----
 * A WAV I/Q file the SDR programs open: two channels (I, Q) of cf32 (IEEE float 32), ci16 (PCM
 * 16) or cu8 (PCM 8, unsigned: cu8's bytes), an auxi chunk with the centre frequency (where it is
 * a whole number of Hz in 0 .. 2^32 - 1) and the rate. The samples stream into a temporary file
 * beside path; close fills the sizes in and renames it into place: the file is complete or
 * absent (after any error, or discard, nothing is left). Past 4 GiB of samples it is an RF64
 * file (EBU Tech 3306), which prx_iq_open reads as well. */
typedef struct prx_wav_writer prx_wav_writer;
/* sample_rate: a whole number of Hz in 1 .. 2^32 - 1 (PRX_ERR_INVALID else). */
prx_status prx_wav_writer_open(const char *path, prx_format format, double sample_rate,
                               double center_freq, prx_wav_writer **out);
/* Appends n samples (of the writer's format); a failed write (a full disk) gives PRX_ERR_IO
 * naming the file, and every later call fails too. */
prx_status prx_wav_write(prx_wav_writer *w, const void *samples, size_t n);
uint64_t prx_wav_writer_samples(const prx_wav_writer *w);
/* Fills the sizes in, renames the file into place and frees w (also on error: then the file is
 * removed). Returns the first error of the writer's life. Accepts NULL. */
prx_status prx_wav_writer_close(prx_wav_writer *w);
/* Abandons the file (nothing is left) and frees w. Accepts NULL. */
void prx_wav_writer_discard(prx_wav_writer *w);

/* ---- real samples ----
 * A direct-sampling receiver (an HF SDR sampling the antenna at 64.8 Msps, a sound card's IF)
 * records real samples. The reader turns them into complex ones as it reads: the band 0 .. fs/2
 * moved down by fs/4 and decimated by 2 through a half-band filter of 127 taps (a Kaiser design
 * for 100 dB: over the central 80 % of the complex band flat to 0.001 dB, its aliases and the
 * real stream's mirror image at least 100 dB down; 90 %: 83 dB), so a real stream of N samples at
 * fs, whose DC is at frequency f0, reads as ceil(N / 2) complex samples at fs / 2 centred on f0 +
 * fs / 4; complex sample m is the real stream's instant 2m, and a real tone of amplitude A becomes
 * a complex tone of amplitude A. */
typedef enum { PRX_REAL_RI8 = 1, PRX_REAL_RU8, PRX_REAL_RI16, PRX_REAL_RF32 } prx_real_format;
/* "ri8", "ru8" (rtl-sdr's offset binary), "ri16", "rf32" (case-insensitive); PRX_ERR_INVALID
 * with a message for another name. */
prx_status prx_real_format_parse(const char *name, prx_real_format *out);
/* Opens raw real samples of format f (a file, or "-" for standard input; little-endian), read
 * as complex: prx_iq_info.format is cf32, its rate and centre 0 (the caller knows fs and f0:
 * the stream is at fs / 2 around f0 + fs / 4). A one-channel WAV file and a SigMF recording of a
 * real datatype (ri8, ru8, ri16_le, ri32_le, rf32_le, rf64_le) are read the same way by
 * prx_iq_open, with rate and centre from their headers (made the complex stream's; a SigMF
 * recording's annotations moved to complex samples; a real SigMF recording of several captures
 * is PRX_ERR_UNSUPPORTED). prx_iq_open also reads SigMF cf64_le and ci32_le, and the big-endian
 * cf32_be, cf64_be, ci32_be, ci16_be (and real rf32_be, rf64_be, ri32_be, ri16_be), converted
 * to cf32 as it reads. */
prx_status prx_iq_open_real(const char *path, prx_real_format f, prx_iq_reader **out);
/* 1 when r turns real samples into complex ones. */
int prx_iq_reader_is_real(const prx_iq_reader *r);
/* The samples' type as stored ("ci16", "cf64_le", "ri16", "PCM 24-bit", "real PCM 16-bit", ...:
 * the format's name, a SigMF datatype or a WAV file's type) and, in *bytes where not NULL, the
 * bytes of one stored sample (both components; one real value). */
const char *prx_iq_reader_stored(const prx_iq_reader *r, size_t *bytes);

/* ---- SigMF metadata ---- */
/* One capture segment (SigMF captures[]): the samples from sample_start up to the next
 * segment's start were taken at this centre frequency, the first of them at this time. */
typedef struct {
  uint64_t sample_start; /* core:sample_start (0 when absent) */
  int has_frequency;     /* 1: core:frequency is given */
  double frequency;      /* Hz (0 when absent) */
  const char *datetime;  /* core:datetime, ISO-8601 as written (NULL when absent) */
} prx_sigmf_capture;

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

/* What a SigMF recording's metadata says beyond prx_iq_info. SigMF 1.0 has no global time: the
 * recording's start time is captures[0].datetime. Strings point into the owner (the reader, or
 * the object of prx_sigmf_recording_parse) and live as long as it. */
typedef struct {
  size_t n_captures; /* >= 1: a metadata file without captures reads as one at sample 0 */
  const prx_sigmf_capture *captures; /* sorted by sample_start, strictly increasing */
  size_t n_annotations;
  const prx_sigmf_annotation *annotations;          /* in file order */
  const char *description, *author, *hw, *recorder; /* global core:* (NULL when absent) */
  int is_archive;                                   /* 1 when read from inside a .sigmf archive */
  uint64_t data_bytes; /* archive: bytes of the data member after core:header_bytes (0 else) */
  double channel_passband_hz; /* a polyrx channel recording (`polyrx channelize`): its filter's
                                 -6 dB point, Hz either side of its centre (polyrx:cutoff times
                                 polyrx:channel_spacing, docs/polyrx.sigmf-ext.md); 0 else */
} prx_sigmf_recording;

/* The metadata of the SigMF recording r reads, NULL for raw input and standard input. */
const prx_sigmf_recording *prx_iq_reader_sigmf(const prx_iq_reader *r);

/* Parses the text of a .sigmf-meta file into a recording (as prx_sigmf_parse_meta, plus
 * captures and annotations: captures must be in increasing sample_start order, annotations
 * need core:sample_start; a wrongly typed field is PRX_ERR_FORMAT naming it). *out is freed
 * with prx_sigmf_recording_free. */
prx_status prx_sigmf_recording_parse(const char *text, size_t len, prx_iq_info *info,
                                     prx_sigmf_recording **out);
void prx_sigmf_recording_free(prx_sigmf_recording *rec); /* accepts NULL */

/* SigMF datatype name of a format: "cf32_le", "ci16_le", "ci8", "cu8", "cf16_le" (written
 * only); NULL for an unknown format. */
const char *prx_sigmf_datatype_name(prx_format f);
/* Parses a core:datatype string into the prx_format of the same samples: cf32_le, ci16_le, ci8
 * and cu8; other valid SigMF types (those prx_iq_open converts as it reads among them) give
 * PRX_ERR_UNSUPPORTED and anything else PRX_ERR_FORMAT, each with a message naming the type. */
prx_status prx_sigmf_parse_datatype(const char *name, prx_format *out);
/* Parses the text of a .sigmf-meta file (len bytes, need not be NUL-terminated) into info:
 * global core:datatype (required), core:sample_rate (0 when absent), captures[0].core:frequency
 * (0 when absent or captures is empty); is_sigmf = 1. Malformed JSON, a missing "global" object
 * or datatype, a missing "captures" array or wrongly typed fields give PRX_ERR_FORMAT with a
 * message; recordings polyrx cannot read (several channels, metadata only), and those only the
 * reader reads (converted as it reads: real, cf64_le, ci32_le) PRX_ERR_UNSUPPORTED. */
prx_status prx_sigmf_parse_meta(const char *text, size_t len, prx_iq_info *info);

/* ---- writing SigMF ---- */
/* A streaming SigMF writer. A recording is complete or absent: samples go to a temporary file
 * beside BASE.sigmf-data as they come (bounded memory); close renames it to BASE.sigmf-data
 * and then writes BASE.sigmf-meta (an unnamed file linked into place once whole, or a temporary
 * file and a rename), the metadata last.
 * After any error, and after discard, neither file exists. A process killed mid-write leaves
 * at most files named BASE.sigmf-data.tmp-* / BASE.sigmf-meta.tmp-*, never a .sigmf-meta.
 *
 * A base ending in ".sigmf" writes a SigMF archive instead: one tar file BASE holding the
 * directory B/ with B/B.sigmf-data and B/B.sigmf-meta (B: the file name without .sigmf).
 * Samples stream into a temporary file beside it that already is the archive (its data member
 * header completed at close, the metadata member appended after it), renamed to BASE at close:
 * complete or absent as well. */
typedef struct prx_sigmf_writer prx_sigmf_writer;

typedef struct {
  prx_format format;       /* of the samples given to prx_sigmf_write: cf32 (default), cf16,
                              ci16, ci8 or cu8; stored little-endian (core:datatype cf32_le,
                              ...) */
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
/* Adds an annotation (copied). The metadata lists the annotations sorted by sample_start, as
 * SigMF requires (equal starts in the order added). */
prx_status prx_sigmf_writer_add_annotation(prx_sigmf_writer *w, const prx_sigmf_annotation *a);
/* Starts a new capture segment at output sample sample_start: from there on the samples were
 * taken at centre frequency `frequency`, the first of them at datetime (ISO-8601 UTC, NULL:
 * none). Captures[0] (sample 0) comes from meta.center_freq and meta.datetime. sample_start
 * may lie ahead of the samples written so far; it must be after the last capture's start (the
 * same start replaces that capture). A capture that starts at or past the end of the recording
 * at close describes no sample and is left out. */
prx_status prx_sigmf_writer_add_capture(prx_sigmf_writer *w, uint64_t sample_start,
                                        double frequency, const char *datetime);
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

/* A SigMF core:datetime moved by `seconds` (either sign): "YYYY-MM-DDTHH:MM:SS[.frac]" with
 * "Z" or a "+HH:MM"/"-HH:MM" offset in, UTC with "Z" out, the fraction to the picosecond with
 * trailing zeros dropped ("2026-12-01T10:00:00.0000000763Z"). PRX_ERR_FORMAT naming the text
 * when it is not such a time. */
prx_status prx_sigmf_datetime_shift(const char *datetime, double seconds, char out[48]);
/* *seconds = a - b, two such times (exact to the picosecond before the rounding to double);
 * PRX_ERR_FORMAT naming the one that is not such a time. */
prx_status prx_sigmf_datetime_diff(const char *a, const char *b, double *seconds);

/* ---- SigMF collections ---- */
/* Writes a .sigmf-collection file at path (through a temporary file and a rename) tying the
 * recordings named by names[0..n-1] (base names relative to the collection's directory, whose
 * .sigmf-meta files must exist) in collection core:streams, each with the SHA-512 of its
 * metadata file as SigMF requires; core:version "1.0.0", core:description when not NULL. */
prx_status prx_sigmf_collection_write(const char *path, const char *const *names, size_t n,
                                      const char *description);

/* Packs finished files into the SigMF archive `archive` (a name ending in .sigmf): each
 * files[i] (a name relative to dir) becomes a member of that name, in the order given (e.g.
 * the .sigmf-collection first, then each recording's .sigmf-meta and .sigmf-data). Written
 * through a temporary file and a rename: complete or absent; the files are left in place. */
prx_status prx_sigmf_archive_pack(const char *archive, const char *dir, const char *const *files,
                                  size_t n);

/* SHA-512 of a file, as 128 lower-case hex digits and a NUL in hex[129]. */
prx_status prx_sha512_file(const char *path, char hex[129]);

#ifdef __cplusplus
}
#endif
#endif
