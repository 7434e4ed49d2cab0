/* Shared by the I/O sources (not installed): byte order of stored samples and the parts of a
 * SigMF metadata file the reader needs beyond prx_iq_info. */
#ifndef PRX_IO_INTERNAL_H
#define PRX_IO_INTERNAL_H

#include "polyrx/io.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

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

/* Positional reads of a regular-file input (raw, SigMF data file, SigMF archive member), for
 * several reader threads: prx_iq_reader_positional says whether prx_iq_read_at can be used now
 * (a regular file, and prx_iq_read has left no partial sample, end or error behind);
 * prx_iq_read_at reads up to max samples from the stream's sample `first` on (first counts from
 * the data's start), n < max only at the end of the data; a trailing partial sample gives the
 * complete samples with PRX_ERR_TRUNCATED. It neither moves the reader nor counts in
 * prx_iq_reader_samples; concurrent calls are safe. */
int prx_iq_reader_positional(const prx_iq_reader *r);
prx_status prx_iq_read_at(prx_iq_reader *r, void *buf, uint64_t first, size_t max, size_t *n);
/* The file behind a positional reader, for a mapping of it (src/pipeline/pipe_map.c): its
 * descriptor and the data's place, from byte *base on, *limit bytes (UINT64_MAX: to the file's
 * end). 0 when the reader is not positional now, or hands out its samples changed (I and Q
 * exchanged). */
int prx_iq_reader_file(const prx_iq_reader *r, int *fd, uint64_t *base, uint64_t *limit);

/* Little-endian integers in stored bytes (WAV headers, stored samples), whatever the host. */
static inline uint16_t prx_le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t prx_le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t prx_le64(const unsigned char *p) {
  return prx_le32(p) | (uint64_t)prx_le32(p + 4) << 32;
}

/* A stored component's type, where polyrx has no prx_format for it (src/io/stored.c): integers
 * of 8 (signed, or unsigned as rtl-sdr's), 16, 24 or 32 bits, floats of 32 or 64, little-endian
 * unless big_endian. */
typedef struct {
  int bits;
  int is_float, is_unsigned;
  int big_endian;
  int value_bits; /* integers of fewer bits than their container (24 in 32: SDRangel), 0 else */
} prx_stored;
/* n stored values to float (integers to [-1, 1) of their value bits, unsigned 8-bit
 * (v - 127.5) / 127.5). */
void prx_stored_to_float(const prx_stored *t, const void *in, size_t n, float *out);

/* A run of `count` data chunks of `bytes` bytes each, `period` bytes apart in the file, the
 * first one's samples at byte `offset`: the stream's bytes from `start` on (a KiwiSDR file's data
 * chunks, each after its time stamp). offset UINT64_MAX: `bytes` zeros, for samples lost in a
 * gap between two stamps. */
typedef struct {
  uint64_t offset, start, bytes, period, count;
} prx_wav_run;

/* A WAV file's header (src/io/wav_header.c). */
typedef struct {
  prx_wav_info wav;
  prx_wav_run *runs; /* where the samples of several data chunks lie (malloc'd), NULL for one
                        data chunk (its samples contiguous from wav.data_offset) */
  size_t n_runs;
  prx_format format;        /* of the samples handed out */
  int convert;              /* 1: converted as read (stored: PCM 24/32, float 64, or real) */
  prx_stored stored;        /* a component as stored */
  size_t file_sample_bytes; /* bytes of one sample in the file (both channels)
                             */
  double sample_rate, center_freq;
  char start_time[40];
} prx_wav_header;

/* The header prx_wav_writer writes (PRX_WAV_HEADER_BYTES, the samples after it) for `data` bytes
 * of samples: RIFF, or RF64 with its ds64 chunk past 4 GiB (src/io/wav_writer.c). */
#define PRX_WAV_HEADER_BYTES 152
void prx_wav_header_make(unsigned char *h, prx_format format, double rate, double centre,
                         uint64_t data);

/* 1 when the n bytes at head begin a WAV file ("RIFF" or "RF64", a size, "WAVE"). */
int prx_wav_sniff(const unsigned char *head, size_t n);
/* Reads the header of the WAV file open as fd (a regular file of file_size bytes). h->wav's
 * strings point into h. */
prx_status prx_wav_read_header(int fd, const char *path, uint64_t file_size, prx_wav_header *h);
void prx_wav_header_free(prx_wav_header *h); /* accepts NULL */
/* Reads exactly n bytes at off of the WAV file fd; PRX_ERR_FORMAT naming `what` when the file
 * ends first. */
prx_status prx_wav_read_exact(int fd, const char *path, uint64_t off, void *buf, size_t n,
                              const char *what);
/* A KiwiSDR file's chunks from its first "kiwi" chunk at byte off to the file's end (src/io/
 * wav_kiwi.c): h's runs, data extent, stamps, rate and start (h's fmt chunk already read). */
prx_status prx_wav_walk_kiwi(prx_wav_header *h, int fd, const char *path, uint64_t off,
                             uint64_t file_size);
/* The centre frequency a file's name gives (one token such as "7100kHz"): 1 and *hz, else 0. */
int prx_wav_name_frequency(const char *path, double *hz);
/* kiwirecorder's name of an I/Q recording (20261204T112233Z_7100000_iq.wav: 2) or of the
 * upper sideband's audio (..._usb.wav, ..._usn.wav: 1, the frequency that of its 0 Hz), with the
 * UTC time the file began and the frequency in Hz; else 0. */
int prx_wav_name_kiwi(const char *path, time_t *start, double *hz);

/* A UTC time, sec seconds since 1970 and frac units of 10^-digits s (digits 0..12; 0: no
 * fraction), as "YYYY-MM-DDTHH:MM:SS[.fff]Z" into out (n bytes; 34 hold any): the one formatter
 * of the readers' start times and of prx_sigmf_datetime_shift (src/io/sigmf_datetime.c). 0, or
 * -1 for a year outside 0..9999. */
int prx_utc_text(int64_t sec, int64_t frac, int digits, char *out, size_t n);

/* A raw recording's rate, centre and start from its recorder (src/io/recorder_raw.c). */
#define PRX_SDRIQ_HEADER_BYTES 32
typedef struct {
  const char *recorder; /* "SDRangel .sdriq", "gqrx file name" */
  int bits;             /* .sdriq: 16 or 24 */
  double sample_rate, center_freq;
  char start_utc[40]; /* "" when unknown */
} prx_recorder_raw;
/* An SDRangel .sdriq header for samples of `bits` (16 or 24), the start in milliseconds since
 * 1970 (0: unknown), with its CRC32. */
void prx_sdriq_header_make(unsigned char h[PRX_SDRIQ_HEADER_BYTES], uint32_t rate, uint64_t centre,
                           uint64_t start_ms, uint32_t bits);
/* An SDRangel .sdriq header (rate, centre, start, 16 or 24 bits, its CRC32 checked). */
prx_status prx_sdriq_read_header(int fd, const char *path, prx_recorder_raw *h);
/* gqrx's name of an I/Q recording (gqrx_20261204_112233_7100000_2400000_fc.raw): 1 and *h. */
int prx_gqrx_name(const char *path, prx_recorder_raw *h);

/* What the reader takes from a .sigmf-meta beyond prx_iq_info. */
typedef struct {
  prx_iq_info info;
  uint64_t header_bytes;    /* captures[0].core:header_bytes: bytes to skip before sample 0 */
  char *dataset;            /* global core:dataset (a non-conforming data file name), malloc'd or
                               NULL: then the data file is BASE.sigmf-data */
  prx_sigmf_recording *rec; /* captures, annotations, global text fields (malloc'd) */
  /* a datatype the reader converts as it reads (info.format is then cf32, and info describes
   * the complex stream): conv_channels 2 for I/Q of type conv (cf64_le, ci32_le), 1 for real
   * samples (ri8, ru8, ri16_le, ri32_le, rf32_le, rf64_le); 0 for a prx_format */
  prx_stored conv;
  int conv_channels;
  const char *conv_name; /* its datatype (static text) */
} prx_sigmf_read_meta;

/* Parses a .sigmf-meta text into m (see prx_sigmf_parse_meta); on failure nothing stays
 * allocated. prx_sigmf_read_meta_clear frees what a success allocated. */
prx_status prx_sigmf_parse_meta_full(const char *text, size_t len, prx_sigmf_read_meta *m);
void prx_sigmf_read_meta_clear(prx_sigmf_read_meta *m);

/* Creates a new file "PATH.tmp-PID-N" (O_EXCL: never one of another writer or process) opened
 * with mode ("wb", "w+b"); *tmp receives its malloc'd name. */
prx_status prx_io_create_temp(const char *path, const char *mode, FILE **f, char **tmp);
/* Writes text to path through a temporary file and a rename: path holds the whole text or is
 * left as it was. */
prx_status prx_io_write_file_atomic(const char *path, const char *text, size_t len);
/* Writes text as a new file at path: an unnamed file (O_TMPFILE) linked there once whole, one
 * directory operation; where the file system has no unnamed files or path exists (a link does
 * not replace), prx_io_write_file_atomic. A process killed mid-write leaves nothing. */
prx_status prx_io_write_file_new(const char *path, const char *text, size_t len);

/* prx_sigmf_writer_open in a directory the caller made in this run: no earlier run's files to
 * remove first (two directory operations fewer per recording; a file that is there after all is
 * replaced at close as by prx_sigmf_writer_open). */
prx_status prx_sigmf_writer_open_new(const char *base, const prx_sigmf_meta *meta,
                                     prx_sigmf_writer **out);

/* prx_sigmf_writer_open in a directory the caller made in this run and publishes whole once every
 * recording in it is finished (a hidden directory renamed into place): the data file is created
 * under its own name (BASE.sigmf-data, which must not exist) and close writes the metadata under
 * its own (prx_sigmf_writer_prepare_meta: that file made empty ahead), so that finishing a
 * recording takes no directory operation (no rename, no link); the recording is complete or
 * absent as the directory's reader sees it, because the directory is not visible until the
 * caller publishes it. After any error both files are removed, as with prx_sigmf_writer_open.
 * Not for archives (PRX_ERR_INVALID). */
prx_status prx_sigmf_writer_open_direct(const char *base, const prx_sigmf_meta *meta,
                                        prx_sigmf_writer **out);

/* Makes the unnamed file (O_TMPFILE) that close writes the metadata into and links into place,
 * now, and holds it open until then: a run that finishes many recordings at once then makes
 * none of their inodes at the end, where the file system's and the directory's locks serialize
 * them (1024 recordings on tmpfs: ~8 us each, three operations a recording: the data's rename,
 * the unnamed file's making and its link). Costs one more descriptor per writer until close or
 * discard (the file, never linked, vanishes with it). Where the file system has no unnamed
 * files, or it cannot be made, nothing changes: close makes the metadata's file as without it.
 * An archive writer has no metadata file (nothing made). PRX_OK for any writer. */
prx_status prx_sigmf_writer_prepare_meta(prx_sigmf_writer *w);

/* Gives the data file a buffer of `bytes` bytes (before the first sample; the C library's
 * default is the file system's block, 4 KiB on tmpfs): a caller appending the same row size to
 * many recordings gives them different sizes, so that their buffers fill, and go to the file
 * system, in different blocks rather than all in the same one. Only the buffering changes: the
 * bytes written are the same. PRX_OK (nothing done) in archive mode, after a sample, or where
 * the buffer cannot be made. */
prx_status prx_sigmf_writer_set_buffer(prx_sigmf_writer *w, size_t bytes);

/* Flushes and closes a SigMF writer's data file now (what prx_sigmf_writer_close does first),
 * so that a writer thread that has written a recording's last samples finishes its file there,
 * beside the other writers: glibc keeps its open FILEs in a list that every fclose walks from
 * the newest, so closing 1024 data files oldest first at the end costs O(n^2). An error is kept
 * (and returned, here and by close, which then removes the recording); a later write fails. In
 * archive mode the file stays open (close completes it). */
prx_status prx_sigmf_writer_end_data(prx_sigmf_writer *w);

/* prx_sigmf_writer_close that also gives, when it succeeds, the SHA-512 of the .sigmf-meta it
 * wrote (hex, as prx_sha512_file would read it back; "" in archive mode), for the collection
 * (prx_sigmf_collection_write_hashed) without reading the file again. */
prx_status prx_sigmf_writer_close_hash(prx_sigmf_writer *w, char hex[129]);

/* prx_sigmf_collection_write with the metadata hashes given (hashes[i]: the SHA-512 hex of
 * names[i]'s .sigmf-meta); hashes == NULL reads each file (prx_sha512_file). */
prx_status prx_sigmf_collection_write_hashed(const char *path, const char *const *names,
                                             const char *const *hashes, size_t n,
                                             const char *description);

/* SHA-512 (FIPS 180-4) of a byte stream, fed in pieces. */
typedef struct {
  uint64_t h[8];
  uint64_t bytes;
  unsigned char block[128];
  size_t fill;
} prx_sha512_ctx;
void prx_sha512_init(prx_sha512_ctx *c);
void prx_sha512_update(prx_sha512_ctx *c, const void *data, size_t n);
void prx_sha512_final(prx_sha512_ctx *c, unsigned char digest[64]);
/* The SHA-512 of n bytes in memory as 128 lower-case hex digits and a NUL. */
void prx_sha512_hex(const void *data, size_t n, char hex[129]);

/* ---- tar (ustar) for SigMF archives ---- */
#define PRX_TAR_BLOCK 512
/* Fills a 512-byte ustar header: name (a path, split into prefix/name when longer than 100
 * bytes; -1 when it cannot be), size (octal, base-256 past 8 GiB), type '0' file or '5'
 * directory, mode, mtime, and the checksum. */
int prx_tar_header(unsigned char hdr[PRX_TAR_BLOCK], const char *name, uint64_t size, char type,
                   unsigned mode, int64_t mtime);
/* A member of an archive: its path and where its bytes lie in the file. */
typedef struct {
  char name[512];
  char type; /* '0' file, '5' directory, others as tar has them */
  uint64_t offset, size;
} prx_tar_member;
/* Reads the member list of the tar file open at fd (ustar, GNU long names, pax path/size
 * records), checking each header's checksum and that every member lies inside the file.
 * *members is malloc'd. PRX_ERR_FORMAT with a message naming the archive when it is not one. */
prx_status prx_tar_list(int fd, const char *name, prx_tar_member **members, size_t *n);

#endif
