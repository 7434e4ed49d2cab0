/* SigMF metadata carried from an input recording into recordings derived from it at another
 * rate (the channelizer's channels): each capture segment starts at the first output sample
 * whose instant lies in it, with the frequency moved by the channel's offset and the datetime
 * moved to that output sample's instant; annotations get their sample ranges mapped the same
 * way and go to the channels whose band they touch. Output sample j is the input's instant
 * jD + offset (input samples), as cli_alignment states. What is carried comes from a SigMF
 * input, or a WAV file's start in UTC, and from a window's (--start) first sample on. */
#include "cli.h"

#include "core/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t cli_align_sample(const cli_alignment *a, uint64_t s) {
  /* the first j with j D + offset >= s */
  double j = ceil(((double)s - a->offset) / (double)a->decimation - 1e-9);
  return j > 0 ? (uint64_t)j : 0;
}

/* rec inside the window of count samples from w0 on, into own. */
static prx_status windowed(const prx_sigmf_recording *rec, uint64_t w0, uint64_t count, double rate,
                           cli_carry_own *own, const prx_sigmf_recording **out) {
  size_t c0 = 0, c1 = rec->n_captures; /* the captures from the one the window starts in */
  while (c0 + 1 < c1 && rec->captures[c0 + 1].sample_start <= w0) c0++;
  while (c1 > c0 + 1 && rec->captures[c1 - 1].sample_start - w0 >= count) c1--; /* after it */
  size_t nc = c1 - c0, na = rec->n_annotations;
  own->captures = malloc(nc * sizeof *own->captures);
  own->annotations = malloc((na ? na : 1) * sizeof *own->annotations);
  if (!own->captures || !own->annotations)
    return prx_fail(PRX_ERR_NOMEM, "out of memory carrying the input's metadata");
  for (size_t i = 0; i < nc; i++) {
    prx_sigmf_capture c = rec->captures[c0 + i];
    c.sample_start = c.sample_start > w0 ? c.sample_start - w0 : 0;
    own->captures[i] = c;
  }
  const prx_sigmf_capture *first = &rec->captures[c0];
  if (first->datetime && first->sample_start < w0) {
    prx_status st = prx_sigmf_datetime_shift(
        first->datetime, (double)(w0 - first->sample_start) / rate, own->datetime);
    if (st) return prx_fail(st, "the input's capture %zu: %s", c0, prx_last_error());
    own->captures[0].datetime = own->datetime;
  }
  size_t ka = 0; /* annotations that reach into the window (an open-ended one always) */
  for (size_t i = 0; i < na; i++) {
    prx_sigmf_annotation a = rec->annotations[i];
    uint64_t end = a.sample_start + a.sample_count;
    if ((a.sample_count && end <= w0) || (a.sample_start >= w0 && a.sample_start - w0 >= count))
      continue;
    if (a.sample_start < w0) {
      if (a.sample_count) a.sample_count = end - w0;
      a.sample_start = 0;
    } else {
      a.sample_start -= w0;
    }
    own->annotations[ka++] = a;
  }
  own->rec = *rec;
  own->rec.n_captures = nc;
  own->rec.captures = own->captures;
  own->rec.n_annotations = ka;
  own->rec.annotations = own->annotations;
  *out = &own->rec;
  return PRX_OK;
}

prx_status cli_carry_source(const prx_iq_reader *r, double center, double rate, cli_carry_own *own,
                            const prx_sigmf_recording **out) {
  memset(own, 0, sizeof *own);
  *out = NULL;
  const prx_sigmf_recording *rec = prx_iq_reader_sigmf(r);
  if (!rec) {
    const char *start = prx_iq_reader_start_utc(r);
    if (!start) return PRX_OK;
    own->capture = (prx_sigmf_capture){0, 1, center, start};
    own->rec.n_captures = 1;
    own->rec.captures = &own->capture;
    rec = &own->rec;
  }
  uint64_t w0 = prx_iq_reader_window_start(r), count = prx_iq_reader_window_count(r);
  if (!w0 && count == UINT64_MAX) {
    *out = rec;
    return PRX_OK;
  }
  prx_sigmf_recording whole = *rec; /* own->rec is rewritten below */
  return windowed(&whole, w0, count, rate, own, out);
}

void cli_carry_own_free(cli_carry_own *own) {
  free(own->captures);
  free(own->annotations);
  own->captures = NULL;
  own->annotations = NULL;
}

int cli_carry_check(const char *cmd, const prx_sigmf_recording *rec, int center_given) {
  if (!rec) return -1;
  for (size_t i = 0; i < rec->n_captures; i++) {
    const prx_sigmf_capture *c = &rec->captures[i];
    if (rec->n_captures > 1 && !c->has_frequency && !center_given)
      return cli_error(cmd,
                       "the input's capture %zu (sample %llu) has no core:frequency: the "
                       "channels' frequencies after it are unknown (give -f if the recording "
                       "never retunes)",
                       i, (unsigned long long)c->sample_start);
    if (center_given && i > 0 && c->has_frequency && rec->captures[0].has_frequency &&
        c->frequency != rec->captures[0].frequency)
      return cli_error(cmd,
                       "-f overrides the centre frequency, but the input retunes (capture %zu "
                       "at sample %llu is at %.10g Hz, capture 0 at %.10g Hz): leave -f out so "
                       "that every segment keeps its own frequency",
                       i, (unsigned long long)c->sample_start, c->frequency,
                       rec->captures[0].frequency);
    char buf[48];
    if (c->datetime && prx_sigmf_datetime_shift(c->datetime, 0, buf) != PRX_OK)
      return cli_error(cmd, "the input's capture %zu: %s", i, prx_last_error());
  }
  return -1;
}

/* The instant of output sample j as a datetime, from capture c (its datetime at its start). */
static prx_status out_datetime(const cli_alignment *a, const prx_sigmf_capture *c, uint64_t j,
                               char out[48]) {
  double shift =
      ((double)j * (double)a->decimation + a->offset - (double)c->sample_start) / a->input_rate;
  return prx_sigmf_datetime_shift(c->datetime, shift, out);
}

prx_status cli_carry_first_capture(const prx_sigmf_recording *rec, const cli_alignment *a,
                                   double center, double freq_offset, prx_sigmf_meta *meta,
                                   char datetime[48]) {
  meta->center_freq = center + freq_offset;
  meta->datetime = NULL;
  if (!rec) return PRX_OK;
  const prx_sigmf_capture *c = &rec->captures[0];
  if (c->datetime) {
    prx_status st = out_datetime(a, c, 0, datetime);
    if (st) return st;
    meta->datetime = datetime;
  }
  return PRX_OK;
}

prx_status cli_carry_captures(prx_sigmf_writer *w, const prx_sigmf_recording *rec,
                              const cli_alignment *a, double freq_offset) {
  for (size_t i = 1; rec && i < rec->n_captures; i++) {
    const prx_sigmf_capture *c = &rec->captures[i];
    uint64_t j = cli_align_sample(a, c->sample_start);
    char dt[48];
    prx_status st = c->datetime ? out_datetime(a, c, j, dt) : PRX_OK;
    if (st) return st;
    /* a capture without a frequency (only with -f, checked) keeps the one before */
    double f = c->has_frequency ? c->frequency : rec->captures[0].frequency;
    if (j == 0) continue; /* inside output sample 0's segment: the first capture stands */
    if ((st = prx_sigmf_writer_add_capture(w, j, f + freq_offset, c->datetime ? dt : NULL)))
      return st;
  }
  return PRX_OK;
}

prx_status cli_carry_annotations(prx_sigmf_writer *w, const prx_sigmf_recording *rec,
                                 const cli_alignment *a, uint64_t out_samples, double center,
                                 double freq_offset, double out_rate) {
  for (size_t i = 0; rec && i < rec->n_annotations; i++) {
    prx_sigmf_annotation an = rec->annotations[i];
    uint64_t j0 = cli_align_sample(a, an.sample_start);
    if (j0 >= out_samples) continue;
    if (an.sample_count) {
      uint64_t j1 = cli_align_sample(a, an.sample_start + an.sample_count);
      if (j1 <= j0) j1 = j0 + 1; /* shorter than an output sample: that sample */
      if (j1 > out_samples) j1 = out_samples;
      an.sample_count = j1 - j0;
    }
    an.sample_start = j0;
    if (an.has_freq) {
      /* the channel's band in the capture segment where the annotation starts */
      double f = center;
      for (size_t k = 0; k < rec->n_captures; k++)
        if (rec->captures[k].sample_start <= rec->annotations[i].sample_start &&
            rec->captures[k].has_frequency)
          f = rec->n_captures > 1 ? rec->captures[k].frequency : center;
      double lo = f + freq_offset - out_rate / 2, hi = f + freq_offset + out_rate / 2;
      if (an.freq_upper_edge < lo || an.freq_lower_edge > hi) continue;
    }
    prx_status st = prx_sigmf_writer_add_annotation(w, &an);
    if (st) return st;
  }
  return PRX_OK;
}
