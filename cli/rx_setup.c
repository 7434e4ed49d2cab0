/* polyrx rx's set-up: the input opened (and mapped where the device-resident receiver reads it in
 * place), the CUDA runtime started on a thread, the receiver's configuration, its carriers and the
 * receiver made. */

#include "rx_run.h"

#include <stdlib.h>

/* CUDA: samples per read (pinned buffers, 4 in flight) and per receiver block, so that each
 * read holds 4 blocks whose copies and channelizer overlap the previous block's demodulation */
#define READ_BLOCK_CUDA ((size_t)1 << 23)
#define RX_BLOCK_CUDA ((size_t)1 << 21)

int rx_setup(run_state *r) {
  options *o = &r->o;
  cli_input_opts in = {o->input, o->format,  o->rate,  o->center,  "6.5536M",
                       o->quiet, o->swap_iq, o->start, o->duration};
  int rc = cli_open_input(CMD, &in, &r->reader, &r->in);
  prx_status carried = rc < 0 ? cli_carry_source(r->reader, r->in.center_freq, r->in.sample_rate,
                                                 &r->carry_own, &r->carry)
                              : PRX_OK;
  if (carried) rc = cli_status_error(CMD, "input", carried);
  /* read while the CUDA runtime starts, pinned as the stream starts (closed below where the
   * receiver is not the device-resident one) */
  if (rc < 0) r->map = cli_input_map_open(r->reader, o->backend);
  /* the CUDA runtime's start on a thread, after the input's map is made (its mapping and threads:
   * the driver's start holds the process's mapping lock, which they wait for: 45-60 ms on the
   * H200 host); the stop signals are held: the runtime's threads keep the mask */
  if (rc < 0) r->warming = cli_warm_cuda_start(&r->warm, o->backend);
  cli_timing_phase(&r->tm, "input");
  if (rc >= 0) return rc;
  size_t max = o->n_car + (o->detect ? 256 : 0);
  r->car = calloc(max, sizeof *r->car);
  r->out = calloc(max, sizeof *r->out);
  r->spec = calloc(max, sizeof *r->spec);
  r->spec_made = calloc(max, sizeof *r->spec_made);
  if (!r->car || !r->out || !r->spec || !r->spec_made) return cli_error(CMD, "out of memory");
  prx_rx_config *c = &r->rc;
  *c = prx_rx_config_default();
  c->sample_rate = r->in.sample_rate;
  c->center_freq = r->in.center_freq;
  c->channels = (unsigned)o->K;
  c->taps_per_channel = (unsigned)o->taps;
  c->in_format = r->in.format;
  c->carriers = r->car;
  c->packed = o->packed;
  c->llrs = o->llr;
  c->on_channel = o->iq ? rx_on_channel : NULL;
  c->on_output = rx_on_output;
  r->self = r;
  c->user = &r->self;
  c->threads = (int)o->threads;
  c->backend = o->backend;
  c->block_samples = o->read_block;
  c->cfo_span_symbols = (unsigned)o->cfo_span; /* (0: the demodulator's default) */
  c->block_symbols = (unsigned)o->block;       /* (0: the demodulator's default) */
  int cuda = o->backend != PRX_BACKEND_CPU && prx_cuda_available(); /* waits for the module */
  cli_timing_phase(&r->tm, "module");
  if (cuda) {
    /* the device-resident receiver: large pinned reads, each of several receiver blocks */
    if (!o->read_block_set) o->read_block = READ_BLOCK_CUDA;
    c->block_samples = o->read_block >= 4 * RX_BLOCK_CUDA ? o->read_block / 4 : o->read_block;
  }
  if ((rc = rx_listed_carriers(r)) >= 0) return rc;
  if (o->backend == PRX_BACKEND_CUDA && !prx_cuda_available())
    return cli_error(CMD, "--backend cuda: no usable CUDA device (use --backend cpu or auto)");
  if (o->detect && (rc = rx_detect_carriers(r)) >= 0) return rc;
  c->n_carriers = r->n_car;
  if (!r->n_car) return -1; /* --detect found nothing: the report says so */
  prx_status st;
  cli_timing_phase(&r->tm, "carriers");
  /* made while the warm thread makes the device's context: the banks' CPU part needs none */
  if (o->n_devices || o->workers) {
    prx_rx_multi_config mc = prx_rx_multi_config_default();
    mc.rx = *c;
    mc.devices = o->n_devices ? o->devices : NULL;
    mc.n_devices = o->n_devices;
    mc.cpu_workers = (unsigned)o->workers;
    cli_rx_keep_drop(); /* a receiver of another configuration: the kept one's memory freed first */
    st = prx_rx_multi_create(&mc, &r->multi);
    if (!st) r->rx = (prx_rx *)prx_rx_multi_latest(r->multi);
  } else {
    st = rx_make_receiver(r);
  }
  cli_timing_phase(&r->tm, "receiver");
  if (st) return cli_status_error(CMD, "receiver", st);
  if (r->multi || prx_rx_backend(r->rx) != PRX_BACKEND_CUDA) {
    prx_pipe_map_close(r->map);
    r->map = NULL;
  }
  return -1;
}
