/* POLYRX_TIMING for polyrx channelize: the threads' CPU use, and the lines printed at the end (the
 * phases, each thread's CPU, the stream's tail). */

#include "chan_run.h"

#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

/* The CPU time in ms of the calling thread (who = RUSAGE_THREAD) or of the process
 * (RUSAGE_SELF), from the scheduler's clock (cli_thread_cpu_ms). */
double chan_cpu_ms(int who) {
  if (who == RUSAGE_THREAD) return cli_thread_cpu_ms();
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

void chan_take_use(thread_use *u, int who) {
  struct rusage ru;
  if (getrusage(who, &ru) != 0) return;
  u->cpu_ms = chan_cpu_ms(who);
  u->faults = ru.ru_minflt;
  u->waits = ru.ru_nvcsw;
  u->preempted = ru.ru_nivcsw;
  u->taken = 1;
}

/* The stream's tail on the writers' side, from compute's flush on: when the writers began their
 * last slot, ended their data files and their share of the finish (earliest and latest), and
 * when the last finisher ended. */
static void print_tail(const run_state *r) {
  if (!r->ws || r->t_flush <= 0) return;
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1e300, -1e300, -1e300};
  for (int w = 0; w < r->n_writers; w++) {
    const double t[3] = {r->ws[w].t_last, r->ws[w].t_ended, r->ws[w].t_done};
    for (int k = 0; k < 3; k++) {
      double d = t[k] - r->t_flush;
      lo[k] = d < lo[k] ? d : lo[k];
      hi[k] = d > hi[k] ? d : hi[k];
    }
  }
  fprintf(stderr,
          "polyrx %s: the tail (ms after compute's flush began): the writers' last slot begun "
          "%.2f-%.2f, their data files ended %.2f-%.2f, their finish done %.2f-%.2f; the "
          "finishers done %.2f\n",
          CMD, lo[0], hi[0], lo[1], hi[1], lo[2], hi[2],
          r->t_fin_done > 0 ? r->t_fin_done - r->t_flush : 0);
}

void chan_print_timing(const run_state *r) {
  if (!r->tm.on) return;
  cli_timing_print(&r->tm, CMD,
                   "CUDA ready at %.1f; in the stream: block %lu, buffers made %.1f, freed "
                   "%.1f, first block %.1f; %d reader(s)",
                   r->ms_cuda_ready, r->o.block, r->ms_alloc, r->ms_free, r->ms_first,
                   r->n_readers);
  cli_input_map_timing(CMD, &r->map_stats, r->ms_map_close);
  /* where the CPU went: each thread's CPU time, minor faults and context switches; the
   * channelizer's workers are the process's rest */
  thread_use self = {0}, main_now = {0};
  chan_take_use(&self, RUSAGE_SELF);
  chan_take_use(&main_now, RUSAGE_THREAD);
  double rest = self.cpu_ms - main_now.cpu_ms - r->use_reader.cpu_ms;
  long rest_faults = self.faults - main_now.faults - r->use_reader.faults;
  fprintf(stderr, "polyrx %s: cpu (ms, minor faults, waits, preempted):", CMD);
  const struct {
    const char *name;
    const thread_use *u;
  } rows[] = {
      {"main", &main_now}, {"main in the stream", &r->use_main}, {"reader", &r->use_reader}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (rows[i].u->taken)
      fprintf(stderr, " %s %.1f %ld %ld %ld;", rows[i].name, rows[i].u->cpu_ms, rows[i].u->faults,
              rows[i].u->waits, rows[i].u->preempted);
  for (int i = 0; r->op && i < r->n_openers; i++) {
    const thread_use *u = &r->op[i].use;
    if (!u->taken) continue;
    rest -= u->cpu_ms;
    rest_faults -= u->faults;
    fprintf(stderr, " opener%d %.1f %ld %ld %ld;", i, u->cpu_ms, u->faults, u->waits, u->preempted);
  }
  for (int w = 0; r->ws && w < r->n_writers; w++) {
    const writer_state *ws = &r->ws[w];
    rest -= ws->use.cpu_ms;
    rest_faults -= ws->use.faults;
    fprintf(stderr,
            " writer%d %.1f %ld %ld %ld (power sums %.1f, appends %.1f, data ends %.1f, waiting "
            "for the openers %.1f, rows held for them %zu, recordings finished %.1f);",
            w, ws->use.cpu_ms, ws->use.faults, ws->use.waits, ws->use.preempted, ws->ms_energy,
            ws->ms_write, ws->ms_end, ws->ms_wait, ws->rows_held, ws->ms_close);
  }
  fprintf(stderr,
          " the workers and the rest %.1f %ld; process %.1f %ld %ld %ld; compute's first "
          "execute at %.1f of the stream, compute in execute %.1f (its thread's CPU %.1f), "
          "the stream after the last execute %.1f, compute's sleeps for input %llu (%.1f ms) "
          "and for a slot %llu (%.1f ms), the writers after compute's end %.1f, recordings "
          "finished by the main thread %.1f, by %d finishers %zu (%.1f ms)\n",
          rest, rest_faults, self.cpu_ms, self.faults, self.waits, self.preempted, r->ms_first_exec,
          r->ms_exec, r->ms_exec_cpu, r->ms_after_exec,
          (unsigned long long)r->pipe_res.compute_waits_in, r->pipe_res.ms_compute_wait_in,
          (unsigned long long)r->pipe_res.compute_waits_out, r->pipe_res.ms_compute_wait_out,
          r->pipe_res.ms_writers_after, r->ms_close_io, r->n_fin_made, r->n_fin_done, r->ms_fin);
  print_tail(r);
}
