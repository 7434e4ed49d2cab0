/* polyrx channelize's set-up: the input opened (and mapped), the channel list, the channelizer
 * made, and what follows from it: the writers, the block, the alignment, the power sums' groups,
 * the slots' stride and the writers' buffers. */

#include "chan_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POWER_GROUP DEFAULT_BLOCK /* input samples per power sum on the CPU (chan_setup_chan) */
#define FRAMES_DEFAULT 1          /* the CPU channelizer writes frames (chan_setup_chan) */
#define GPU_WRITERS 12            /* the CUDA backend's writers from 16 cores (chan_setup_chan) */
#define MIN_BLOCK ((size_t)4096)  /* the smallest block of a short input */
#define CHUNK_WORK ((double)(1 << 26)) /* multiply-adds per execute: a stop is seen within one */

/* Opens the input (-i: a raw file, standard input or SigMF) and checks that what a SigMF input
 * holds can be carried to the channels. */
int chan_setup_input(run_state *r) {
  const options *o = &r->o;
  cli_input_opts in = {o->input, o->format,  o->rate,  o->center,  "6.5536M",
                       o->quiet, o->swap_iq, o->start, o->duration};
  int rc = cli_open_input(CMD, &in, &r->reader, &r->in);
  /* every capture segment, datetime and annotation of a SigMF input is carried, or the run is
   * refused here: never a mislabelled channel */
  prx_status st = rc < 0 ? cli_carry_source(r->reader, r->in.center_freq, r->in.sample_rate,
                                            &r->carry_own, &r->carry)
                         : PRX_OK;
  if (st) rc = cli_status_error(CMD, "input", st);
  if (rc < 0) rc = cli_carry_check(CMD, r->carry, o->center != NULL);
  /* read while the CUDA runtime starts, pinned as the stream starts; closed in chan_setup_chan if
   * the channelizer is not on CUDA */
  if (rc < 0) r->map = cli_input_map_open(r->reader, o->backend);
  return rc;
}

/* Removes repeated channels from the list (keeping the first), so that no two outputs write
 * one file; returns how many were dropped. */
static size_t dedupe(unsigned *list, size_t *n, unsigned K) {
  unsigned char *seen = calloc(K, 1);
  if (!seen) return 0;
  size_t m = 0;
  for (size_t i = 0; i < *n; i++)
    if (!seen[list[i]]) {
      seen[list[i]] = 1;
      list[m++] = list[i];
    }
  free(seen);
  size_t dropped = *n - m;
  *n = m;
  return dropped;
}

/* The alignment of the channel recordings: output j is the input's instant jD + offset. */
cli_alignment chan_alignment(const run_state *r) {
  cli_alignment a = {prx_chan_decimation(r->chan), r->offset, r->in.sample_rate};
  return a;
}

/* The default block. On the CPU, with 4 writers or more (8 cores or more: the stages each on
 * cores of their own), the largest of 2^16 samples down to a whole FFT batch whose OUT_DEPTH
 * output slots, shared among the channelizer's workers, fit half a core's L2
 * (prx_pipe_chan_cpu_block; K = 1024 with all channels: 2^14 with one worker, 2^15 with two, 2^16
 * with all cores or with 64 channels): larger blocks are slower there (bench/RESULTS.md,
 * "channelize on 16 cores", sixth to ninth sessions). With fewer writers, 2^18: the stages
 * share the cores, and each block's hand-overs cost context switches (the 2-core VM, one worker:
 * 2^16 / 2^17 / 2^18 took 255-272 / 204-259 / 212-231 ms; 2^20 took 1.3x the time of 2^18).
 * With the CUDA backend, GPU_BLOCK samples, as far as OUT_DEPTH slots of outputs fit in
 * GPU_BUDGET: on the H200 host, 2^28 ci16 samples into 64 channels took 528 / 594 / 694 / 1136
 * ms with blocks of 2^20 / 2^22 / 2^24 / 2^26 (larger page-locked buffers cost more to make
 * than their transfers save at this length). */
static size_t choose_block(prx_backend backend, size_t K, size_t D, size_t n_sel, int n_writers,
                           int workers) {
  if (backend != PRX_BACKEND_CUDA)
    return n_writers < 4 ? DEFAULT_BLOCK
                         : prx_pipe_chan_cpu_block(SMALL_BLOCK, K, D, n_sel, OUT_DEPTH, workers);
  size_t fit = GPU_BUDGET / (OUT_DEPTH * 8 * (n_sel ? n_sel : 1)) * D;
  size_t block = fit < GPU_BLOCK ? fit : GPU_BLOCK;
  return block < DEFAULT_BLOCK ? DEFAULT_BLOCK : block > MAX_BLOCK ? MAX_BLOCK : block;
}

/* Makes the channelizer from the options, then sizes the run for it: the writers, the block, the
 * alignment, the power sums' groups, the slots' stride and the writers' buffers. */
int chan_setup_chan(run_state *r) {
  const options *o = &r->o;
  prx_status st;
  unsigned K = (unsigned)o->K;
  if (o->channels) {
    if ((st = prx_chan_parse_list(o->channels, K, &r->select, &r->n_sel)))
      return cli_status_error(CMD, "--channels", st);
    size_t dropped = dedupe(r->select, &r->n_sel, K);
    if (dropped && !o->quiet)
      fprintf(stderr, "polyrx %s: note: %zu channel(s) listed more than once are written once\n",
              CMD, dropped);
  }
  prx_chan_config c = prx_chan_config_default();
  c.channels = K;
  c.decimation = o->oversample == 2 ? K / 2 : K;
  c.taps_per_channel = (unsigned)o->taps_per_channel;
  c.atten_db = o->atten;
  c.cutoff = o->cutoff;
  c.select = r->select;
  c.n_select = r->n_sel;
  c.in_format = r->in.format;
  c.sample_rate = r->in.sample_rate;
  c.center_freq = r->in.center_freq;
  c.threads = (int)o->threads;
  int cores = prx_cpu_count();
  size_t n_sel = r->select ? r->n_sel : K; /* the outputs, before the object says */
  r->n_writers = o->to_stdout ? 1 : cores >= 16 ? 8 : cores >= 8 ? 4 : cores >= 4 ? 2 : 1;
  /* POLYRX_WRITERS=N (1..64): the tests' way to the many-writer paths on a small machine, and
   * a measurement's */
  const char *nw = getenv("POLYRX_WRITERS");
  if (nw && !o->to_stdout) {
    int v = atoi(nw);
    r->n_writers = v < 1 ? 1 : v > 64 ? 64 : v;
  }
  if ((size_t)r->n_writers > n_sel) r->n_writers = n_sel ? (int)n_sel : 1;
  /* all cores (-t 0): the channelizer's workers get those the reader and the writers leave, so
   * that no worker waits for a core a writer holds (the workers meet at the end of every
   * execute): 2-core VM, K = 1024, all channels written: 1 worker 342-445 ms, 2 workers
   * 345-540 (alternating runs); the GPU host's 16 cores: 16 workers no faster than 1 */
  if (!o->threads) c.threads = cores - 1 - r->n_writers > 1 ? cores - 1 - r->n_writers : 1;
  c.backend = o->backend;
  /* The CPU rows go to the slots with streaming stores (the writers read them, compute does
   * not) except where one worker writes many channels: its three slots stay in its own cache and
   * the writers take them from there, while streaming sends every byte to memory from that one
   * core. The GPU host's 16 cores, 16M cf32 samples, K = 1024, medians of alternating rounds
   * against plain stores: all cores, all 1024 channels 0.93x the time (10 rounds), 64 channels
   * 0.94x; one worker, 64 channels 0.79x (3 rounds), all 1024 channels 1.09x (10 rounds)
   * (bench/RESULTS.md, "streaming stores"). POLYRX_CHAN_STREAM=0|1 forces either, for the A/B. */
  const char *cs = getenv("POLYRX_CHAN_STREAM");
  c.stream_out =
      cs && (!strcmp(cs, "0") || !strcmp(cs, "1")) ? cs[0] == '1' : c.threads > 1 || n_sel <= 64;
  /* the device packs and sums where the backend is CUDA (a CPU object refuses both at once,
   * before anything is made, and is made without them); POLYRX_GPU_POST=0: the writers pack and
   * sum, as on the CPU (the tests compare the two) */
  const char *gp = getenv("POLYRX_GPU_POST");
  int post = o->backend != PRX_BACKEND_CPU && !(gp && !strcmp(gp, "0"));
  if (post) {
    c.out_format = o->outf;
    c.power_sums = 1;
  }
  /* The CPU channelizer writes frames (every channel of an output side by side, the FFT's own
   * order: no transpose on compute's core) and each writer gathers its range of channels from
   * them, where recordings are written; to standard output the rows stay. POLYRX_CHAN_FRAMES=0|1
   * forces either, for the A/B (bench/RESULTS.md, "the frame layout"). */
  int frames = cli_env_int("POLYRX_CHAN_FRAMES", 0, 1, FRAMES_DEFAULT) && !o->to_stdout;
  c.layout = frames && !post ? PRX_CHAN_FRAMES : PRX_CHAN_ROWS;
  st = prx_chan_create(&c, &r->chan);
  if (post && st == PRX_ERR_UNSUPPORTED) {
    c.out_format = PRX_CF32;
    c.power_sums = 0;
    c.layout = frames ? PRX_CHAN_FRAMES : PRX_CHAN_ROWS;
    post = 0;
    st = prx_chan_create(&c, &r->chan);
  }
  if (c.layout == PRX_CHAN_FRAMES && st == PRX_ERR_UNSUPPORTED) { /* not the CPU backend */
    c.layout = PRX_CHAN_ROWS;
    st = prx_chan_create(&c, &r->chan);
  }
  if (st) return cli_status_error(CMD, "channelizer", st);
  r->frames = c.layout == PRX_CHAN_FRAMES;
  r->dev_post = post;
  r->stream_out = c.stream_out && prx_chan_backend(r->chan) == PRX_BACKEND_CPU;
  r->row_osz = post ? prx_format_size(o->outf) : sizeof(prx_cf32);
  /* with the CUDA backend compute waits for the GPU and the host's cores are the writers': 12
   * from 16 cores, beside the main thread and the readers. The H200 host writes tmpfs at about
   * 1.1 GB/s per thread; served, all 1024 channels, 12 writers took 0.69-0.76x the time of 8,
   * 16 writers more than 12 (bench/GPU_NOTES.md, "Commands writing many channels") */
  if (prx_chan_backend(r->chan) == PRX_BACKEND_CUDA && !nw && !o->to_stdout && cores >= 16)
    r->n_writers = GPU_WRITERS;
  if (prx_chan_backend(r->chan) != PRX_BACKEND_CUDA) {
    prx_pipe_map_close(r->map);
    r->map = NULL;
  }
  r->n_sel = prx_chan_n_outputs(r->chan);
  size_t D = prx_chan_decimation(r->chan), M;
  prx_chan_taps(r->chan, &M);
  if (!o->block_given)
    r->o.block = choose_block(prx_chan_backend(r->chan), K, D, r->n_sel, r->n_writers, c.threads);
  /* POLYRX_CPU_BLOCK=N (a power of two from 2^12 to 2^18): the CPU's block without --block, whose
   * power sums stay those of POWER_GROUP samples (the same metadata): for measurements */
  if (!o->block_given && prx_chan_backend(r->chan) == PRX_BACKEND_CPU) {
    int b = cli_env_int("POLYRX_CPU_BLOCK", 4096, (int)POWER_GROUP, 0);
    if (b && !(b & (b - 1))) r->o.block = (size_t)b;
  }
  /* an input of known length shorter than a block: buffers of its size (page-locked memory for
   * the GPU costs time to make and free) */
  uint64_t total = cli_input_samples(r->reader);
  if (!o->block_given && total && total < r->o.block)
    r->o.block = total < MIN_BLOCK ? MIN_BLOCK : (size_t)total;
  /* the data files' buffers staggered where the CPU's blocks are small (data_buffer);
   * POLYRX_STAGGER=0|1 leaves them at the C library's size or staggers any block, for the A/B */
  int stagger = cli_env_int("POLYRX_STAGGER", 0, 1, -1);
  if (!o->to_stdout &&
      (stagger == 1 ||
       (stagger < 0 && prx_chan_backend(r->chan) == PRX_BACKEND_CPU && r->o.block < SMALL_BLOCK)))
    r->data_buffer = (r->o.block + D - 1) / D * prx_format_size(o->outf);
  /* the power sums of a block (--block N, the CUDA backend) or of POWER_GROUP input samples
   * (the CPU's default: SMALL_BLOCK blocks are summed as the 2^18-sample blocks are, so that
   * the metadata's power has the same last digits whatever the core count) */
  r->power_group =
      o->block_given || prx_chan_backend(r->chan) == PRX_BACKEND_CUDA ? r->o.block : POWER_GROUP;
  /* the alignment: drop round((M - 1) / (2D)) outputs */
  r->lead = (M - 1 + D) / (2 * D);
  if (r->dev_post) prx_chan_power_window(r->chan, r->lead, UINT64_MAX);
  r->offset = (double)r->lead * D - (M - 1) / 2.0;
  /* execute in pieces of about CHUNK_WORK multiply-adds, so that a stop signal is seen
   * promptly whatever the configuration (the whole block at the usual sizes) */
  double work = (double)M / D + (double)K / D * log2((double)K) + 1;
  double chunk = floor(CHUNK_WORK / work);
  r->chunk = chunk >= (double)o->block ? o->block : chunk < (double)D ? D : (size_t)chunk;
  /* one stride fits the outputs of a whole block, and of the tail (under M / 2 zeros) */
  r->stride = (o->block > M ? o->block : M) / D + 4;
  /* streamed rows on whole 64-byte lines (the slots' rows start on one): a line shared by two
   * rows would be written partly streamed, partly not */
  if (r->stream_out) r->stride = (r->stride + 7) & ~(size_t)7;
  if ((size_t)r->n_writers > r->n_sel) r->n_writers = r->n_sel ? (int)r->n_sel : 1;
  r->energy = calloc(r->n_sel, sizeof *r->energy);
  r->power = aligned_alloc(64, (r->n_sel ? r->n_sel : 1) * sizeof *r->power);
  if (r->power) memset(r->power, 0, (r->n_sel ? r->n_sel : 1) * sizeof *r->power);
  r->w = calloc(r->n_sel, sizeof *r->w);
  r->failed = calloc(r->n_sel, 1);
  r->hash = calloc(r->n_sel ? r->n_sel : 1, sizeof *r->hash);
  r->ws = calloc((size_t)r->n_writers, sizeof *r->ws);
  size_t pack_bytes = (o->to_stdout ? r->n_sel : 1) * r->stride * 8;
  int packs = 1;
  for (int w = 0; r->ws && w < r->n_writers; w++) {
    packs &= (r->ws[w].pack = malloc(pack_bytes)) != 0;
    if (r->frames)
      packs &= (r->ws[w].rows = malloc(part_count(r, (size_t)w, (size_t)r->n_writers) * r->stride *
                                       sizeof(prx_cf32))) != 0;
    if (o->to_stdout && o->outf != PRX_CF32) packs &= (r->ws[w].row = malloc(r->stride * 4)) != 0;
  }
  if (!r->energy || !r->power || !r->w || !r->failed || !r->hash || !r->ws || !packs)
    return cli_error(CMD,
                     "out of memory for a block of %lu samples and %zu channels (try a "
                     "smaller --block)",
                     o->block, r->n_sel);
  return -1;
}
