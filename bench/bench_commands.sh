#!/usr/bin/env bash
# The commands against the library and the machine, in one run (JSON lines on stdout; a table on
# stderr):
#   - the machine's file read rate (cat to /dev/null and read(2), file in /dev/shm);
#   - its write rate for 64 and 1024 files written round robin vs one interleaved file, on tmpfs
#     (/dev/shm) and on the disk (DISK_DIR, default /tmp), with 64 KiB and 1 MiB writes;
#   - `polyrx demod` (4 samples/symbol, Es/N0 12 dB, 4M symbols, cf32 file in RAM) and
#     `polyrx channelize` (K = 1024, D = 512, 16 taps, all channels and channels 0-63 written to
#     tmpfs and to DISK_DIR, 16M cf32 samples in RAM) with --backend cpu, --threads 1 and all
#     threads (a CUDA build on a GPU machine would otherwise take the GPU), against
#     prx_qpsk / prx_chan on the same file's samples in memory (bench_commands demod|chan, in the
#     command's blocks, best of REPS processes), and the command's fraction of it;
#   - start-up: `polyrx demod` on 2000 symbols with the FFTW wisdom present and disabled
#     (POLYRX_FFTW_WISDOM=off: every run measures its plan, as before the wisdom file).
#
# usage: bench/bench_commands.sh [BUILD_DIR (default build)]
#   [cpu|gpu|rx|sweep|chanab|chansame|chanuse|chanrounds|chanrounds_summary|chanrows|chanrows_summary|chanstream|chanvar|chanvar_summary|demodrounds|demodrounds_summary|demodthreads|demodthreads_summary|demodvar|demodvar_summary|cpusib|gpustart|serve|serveab|serverx]
#   gpu: `polyrx channelize --backend cuda` on a 2^28-sample ci16 file in RAM, K = 1024, 64 and
#   1024 channels written, --out-format cf32, cf16 and ci16, each beside the floors measured in
#   the same run (PCIe rates from bench_chan_cuda's ceiling line: $PCIE_FROM, a log of it, or a
#   `bench_chan_cuda --quick` run; read rate of the input; write rate of the same bytes into the
#   same number of files), with the start-up breakdown of each (POLYRX_TIMING), and a 4 MiB
#   input with --backend cuda and cpu (the start-up alone).
#   rx: `polyrx rx --backend cuda` on a 2^28-sample ci16 file in RAM (1 s of 64 QPSK carriers at
#   2400 Bd, 6.5536 Msps, made by `polyrx gen` and tiled), K = 1024, the 64 carriers received,
#   against min(PCIe, the `cat` rate of the file) of the same run (issue 12's command row), with
#   its POLYRX_TIMING line (RX_LOG2, RX_BACKEND: another size or backend, for a quick try;
#   RX_CARRIERS=1024: a carrier listed at every channel centre, all 1024 channels demodulated;
#   RX_EXTRA: more rx options, e.g. "--block 256 --cfo-span 1024").
# Environment: DISK_DIR (none: no disk rows), REPS (default 3; each figure is the best), SCALE
# (default 1: sizes above; 0.25 for a quick run), CPU_PARTS (default "startup demod chan": the
# cpu mode's parts to run); for gpu and rx, VARIANTS="NAME=ENV ..." adds runs of the 64-channel
# cf32 and the rx cases with those environment settings (e.g. "readers1=POLYRX_READERS=1");
# GPU_SEL="0-63" runs the 64-channel rows of gpu only (default "0-63 all").
#   chanrounds: this build's `channelize` against BEFORE's and the library in ROUNDS alternating
#   rounds (all 1024 channels, --threads 1 and 0; ROUNDS64 of 0-63; PIN=vCPUs: PIN_ROUNDS more of
#   --threads 1 with every process pinned), one JSON line per run; chanrounds_summary reads them
#   on stdin and prints best, median and the fractions of the library (see chanrounds below).
#   chanrows: the library's rows written into memory and into mapped tmpfs files against its own
#   buffer (see chanrows below); chanrows_summary as chanrounds_summary.
#   chanstream: the channelizer's streaming stores, the command's and the library's, against
#   BEFORE's command and the library without them (see chanstream below); chanrounds_summary.
#   chanvar: this build's `channelize` with VARIANTS' settings against BEFORE's and the library in
#   alternating rounds, with POLYRX_TIMING runs (see chanvar below); chanvar_summary reads its
#   lines. cpusib: whether the vCPUs pair as hyper-threads of one host core (see cpusib below).
#   demodrounds: `polyrx demod` of this build against BEFORE's and the library in alternating
#   rounds (see demodrounds below); demodrounds_summary as chanrounds_summary (chanvar_summary
#   adds the round-by-round ratio to BEFORE; demodrounds_summary adds the same from the date-timed
#   walls and the round-by-round library / command). demodthreads: this build's `demod` with
#   several worker counts against the library with all cores (see demodthreads below);
#   demodthreads_summary reads them. demodvar: this build's `demod` with settings
#   against its own with main's hand-overs, POLYRX_TIMING's figures per run (see demodvar below);
#   demodvar_summary reads them.
#   chanab: `polyrx channelize` of this build against another binary, BEFORE=path/to/polyrx
#   (e.g. main's), on the cpu mode's 16M-sample cf32 file in /dev/shm, K = 1024, all channels
#   and 0-63, --backend cpu, --threads 1 and 0, to tmpfs: the two binaries in alternating runs
#   (REPS each, best of), the library (bench_commands chan, in the command's blocks) in a process
#   of its own before each pair (best of REPS), and whether both wrote the same bytes (diff -r
#   of the output directories, the collection's SHA-512s included); AENV="VAR=VALUE ...": environment
#   settings of this build's runs (a switch against the other binary).
#   gpustart: the GPU commands' start, this build against BEFORE's (a build folder), alternating
#   runs (REPS each, best of), cold and (HOLDER set: bench/cuda_startup_probe.cu built, run with
#   --hold beside the second set) with another process holding a CUDA context: `channelize
#   --backend cuda` as in gpu (64 channels; cf32, cf16, ci16; and the 4 MiB start-up case) and
#   `rx` as in rx, each against the `cat` rate of the same file, every pair's outputs compared
#   byte for byte (channel recordings; rx bits and the report's carrier figures), with this
#   build's POLYRX_TIMING lines; VARIANTS="NAME=ENV ..." adds rx runs of this build with an
#   environment setting against this build without it. GS_LOG2 (default 28) and GS_BACKEND
#   (default cuda) change the input's size and the backend, for a quick try elsewhere.
#   serve: the GPU commands run by `polyrx serve` (a resident process started in this run on a
#   socket of its own) against the same commands in their own process (POLYRX_SERVE=off, cold):
#   `channelize --backend cuda` as in gpu (64 and all 1024 channels, cf32, cf16, ci16) and `rx`
#   as in rx, REPS of each alternating (best of), the first served run of each case apart, beside
#   min(PCIe, cat, write) of the same run (write: the best of one and of 8 writers at once into
#   the same number of tmpfs files), the outputs of the two compared, with a
#   served run's POLYRX_TIMING line (GS_LOG2, GS_BACKEND as in gpustart; RX_CARRIERS=1024 as in
#   rx; SERVE_RX_ONLY=1: the rx case alone).
#   serveab: served `channelize --backend cuda` of this build against BEFORE's (a build folder
#   with its polyrx), each build's `polyrx serve` started in this run on a socket of its own, on
#   serve's 2^28-sample ci16 file, all 1024 channels (SERVEAB_SEL="all 0-63" adds 64) as cf32,
#   cf16 and ci16: BEFORE, this build and this build with VARIANTS="NAME=ENV ..." (POLYRX_*
#   settings, carried to the server), REPS rounds alternating (best of each), beside the `cat`
#   rate and the tmpfs write rate of the same bytes into the same number of files in 1 MiB
#   writes by 8, 12 and 16 processes (each figure and the best), whether BEFORE and this build
#   wrote the same samples and how far apart the metadata's power is, and a served run's
#   POLYRX_TIMING stream, first writer's split and writer count.
#   serverx: served `rx` of this build against BEFORE's (a build folder with its polyrx), each
#   build's `polyrx serve` started in this run on a socket of its own, and both cold
#   (POLYRX_SERVE=off), on rx's capture tiled to 2^GS_LOG2 (default 28) ci16 samples in RAM with
#   64 carriers and with a carrier at every channel centre (SERVERX_CARRIERS, default "64 1024"),
#   bits and report written to tmpfs: the first served run of each build apart (it makes the
#   receiver a later run of the same configuration may take), then REPS rounds alternating
#   before/after, cold/served (best of each), beside min(PCIe, cat) of the same run; whether the
#   two builds wrote the same bits and report figures; a served run's POLYRX_TIMING lines of each
#   build (GS_BACKEND as in gpustart).
#   chansame: this build's `channelize` against BEFORE's, byte for byte, over configurations:
#   --out-format cf32/cf16/ci16, raw cf32 and ci16 input, SigMF input, standard input, blocks
#   of 4096 to 2^20, -t 0/1/2, the serial pipeline, K = 1024 and 4096, -o - and -o NAME.sigmf,
#   odd leads, D = 500 and input lengths around the blocks (exit status, the output files and
#   standard error compared; one line each).
#   chanuse: where `polyrx channelize --backend cpu` spends its time on the cpu mode's file
#   (K = 1024, all channels and 0-63, --threads 1 and 0, to tmpfs, REPS runs each): its POLYRX_TIMING lines
#   (the phases, then each thread's CPU time, faults and context switches, the writers' split),
#   each run followed by the library on the same work (its own process, the command's block);
#   the machine's tmpfs write rate for the command's 256 MiB into 1024 files with 4 KiB writes
#   (what one block of one channel is) and 64 KiB, by 1 thread and by 2, 4 and 8 at once (each
#   its share of the files, as the command's writers), and the cost of a system call; the
#   library, all channels, in each block of LIB_BLOCKS (default 2^14 to 2^18) with one worker
#   and its outputs in 1 or 3 buffers in turn (BENCH_CHAN_SLOTS) and with all cores, REPS
#   alternating rounds; the library with one worker in the command's block and 3 buffers, alone,
#   with a thread reading each block's outputs (BENCH_CHAN_READER) and with 10 spinning threads
#   beside it (BENCH_CHAN_BUSY); VARIANTS (see below) with --threads 1 and 0.
set -u
BUILD=${1:-build}
MODE=${2:-cpu}
P=$BUILD/polyrx
B=$BUILD/bench_commands
REPS=${REPS:-3}
SCALE=${SCALE:-1}
DISK_DIR=${DISK_DIR:-/tmp}
[ -x "$P" ] && [ -x "$B" ] || { echo "bench_commands.sh: build $P and $B first" >&2; exit 1; }
W=$(mktemp -d /dev/shm/prx_bench.XXXXXX)
D=
[ "$DISK_DIR" = none ] || D=$(mktemp -d "$DISK_DIR/prx_bench.XXXXXX")
trap 'rm -rf "$W" ${D:+"$D"}' EXIT

ns() { date +%s%N; }
# best wall time in seconds of REPS runs of "$@" (output discarded)
best_of() {
  local best=0 s e t
  for _ in $(seq "$REPS"); do
    s=$(ns)
    "$@" >/dev/null 2>&1 || { echo "bench_commands.sh: failed: $*" >&2; return 1; }
    e=$(ns)
    t=$((e - s))
    if [ "$best" = 0 ] || [ "$t" -lt "$best" ]; then best=$t; fi
  done
  awk -v t="$best" 'BEGIN { printf "%.6f", t / 1e9 }'
}
jnum() { sed -n "s/.*\"$2\":\([-0-9.e]*\).*/\1/p" <<<"$1"; }
# the library's figure: bench_commands "$@" (its REPS argument 1) run as REPS processes, the JSON
# line of the fastest: on a host where a process runs at one of two speeds (the GPU host's KVM
# guest: ~1.55x apart), one process's best of REPS can be all slow; separate processes, as the
# commands' runs are, are not
lib_best() {
  local best="" line
  for _ in $(seq "$REPS"); do
    line=$("$B" "$@") || return 1
    if [ -z "$best" ] || awk -v a="$(jnum "$line" seconds)" -v b="$(jnum "$best" seconds)" \
      'BEGIN { exit !(a < b) }'; then best=$line; fi
  done
  echo "$best"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
rate() { awk -v n="$1" -v t="$2" 'BEGIN { printf "%.3f", n / t / 1e6 }'; }
json() { echo "$1"; }

scaled() { awk -v n="$1" -v s="$SCALE" 'BEGIN { printf "%d", n * s }'; }

floors() { # $1: input file
  local f=$1 bytes t
  bytes=$(stat -c %s "$f")
  t=$(best_of cat "$f")
  json "{\"bench\":\"commands_read_cat\",\"bytes\":$bytes,\"seconds\":$t,\"gb_per_s\":$(awk -v b="$bytes" -v t="$t" 'BEGIN{printf "%.3f", b/t/1e9}')}"
  "$B" read "$f"
}

write_rates() { # $1: MiB in total
  local mib=$1 dir files chunk
  for dir in "$W" $D; do
    for files in 1 64 1024; do
      for chunk in 65536 1048576; do
        "$B" write "$dir" "$files" "$mib" "$chunk"
      done
    done
  done
}

cpu() {
  local parts=" ${CPU_PARTS:-startup demod chan} "
  echo "bench_commands.sh: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" >&2
  [[ $parts == *" startup "* ]] && cpu_startup
  [[ $parts == *" demod "* ]] && cpu_demod
  [[ $parts == *" chan "* ]] && cpu_chan
}

cpu_startup() {
  local t
  # ---- start-up: 2000 symbols ----
  "$P" gen -q -o "$W/s.cf32" -s 9600 -n 8000 --carrier f=100,rs=2400,diff,seed=3
  "$P" demod -q -i "$W/s.cf32" -s 9600 -r 2400 -o "$W/s.bits" --threads 1 # wisdom made here
  t=$(REPS=5 best_of "$P" demod -q -i "$W/s.cf32" -s 9600 -r 2400 -o "$W/s.bits" --threads 1)
  local t_off
  t_off=$(REPS=3 best_of env POLYRX_FFTW_WISDOM=off "$P" demod -q -i "$W/s.cf32" -s 9600 -r 2400 \
    -o "$W/s.bits" --threads 1)
  json "{\"bench\":\"commands_startup\",\"command\":\"demod\",\"symbols\":2000,\"ms_wisdom\":$(awk -v t="$t" 'BEGIN{printf "%.1f", t*1e3}'),\"ms_no_wisdom\":$(awk -v t="$t_off" 'BEGIN{printf "%.1f", t*1e3}'),\"target_ms\":20}"
  "$B" startup
}

# The demod modes' input: 4M symbols (SCALE) of one carrier at 4 samples a symbol, Es/N0 12 dB,
# cf32, made at $W/d.cf32 (the path echoed), the host described on stderr when $1 is "host".
demod_input() {
  [ "${1:-}" = host ] &&
    echo "bench_commands.sh: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  "$P" gen -q -o "$W/d.cf32" -s 4M -n $(($(scaled 4194304) * 4)) \
    --carrier f=2k,rs=1M,diff,phase=1,timing=0.37,ppm=20 --esn0 12 || return 1
  echo "$W/d.cf32"
}

cpu_demod() {
  local nsym x t lib cmd
  # ---- demod: 4 samples/symbol ----
  nsym=$(scaled 4194304)
  x=$(demod_input) || return 1
  floors "$x"
  for th in 1 0; do
    lib=$(lib_best demod "$x" 4e6 1e6 "$th" 1)
    json "$lib"
    t=$(best_of "$P" demod -q --backend cpu --threads "$th" -i "$x" -s 4M -r 1M -o "$W/d.bits")
    cmd=$(rate "$nsym" "$t")
    json "{\"bench\":\"commands_demod\",\"threads\":$th,\"symbols\":$nsym,\"seconds\":$t,\"msym_per_s\":$cmd,\"lib_msym_per_s\":$(jnum "$lib" msym_per_s),\"fraction_of_lib\":$(ratio "$cmd" "$(jnum "$lib" msym_per_s)")}"
  done
  rm -f "$x" "$W/d.bits"
}

cpu_chan() {
  local nsamp x t lib cmd
  # ---- channelize: K = 1024, all channels to tmpfs ----
  nsamp=$(scaled 16777216)
  x=$W/c.cf32
  "$P" gen -q -o "$x" -s 100M -n "$nsamp" --carrier f=1M,rs=100k --esn0 20
  floors "$x"
  write_rates $(( $(stat -c %s "$x") * 2 >> 20 )) # what channelize writes: 2x the input (D = K/2)
  for th in 1 0; do
    for sel in all 0-63; do
      local copt=() nsel=0 out
      [ "$sel" = all ] || copt=(-c "$sel") nsel=64
      lib=$(lib_best chan "$x" cf32 1024 "$th" 1 "$nsel") # in the command's blocks
      json "$lib"
      # the recordings on tmpfs, then on the disk (DISK_DIR)
      for out in "$W" $D; do
        t=$(best_of "$P" channelize -q --backend cpu --threads "$th" -i "$x" -s 100M -K 1024 "${copt[@]}" \
          -o "$out/ch")
        rm -rf "$out/ch"
        cmd=$(rate "$nsamp" "$t")
        json "{\"bench\":\"commands_channelize\",\"threads\":$th,\"K\":1024,\"channels\":\"$sel\",\"out_dir\":\"$out\",\"samples\":$nsamp,\"seconds\":$t,\"msps\":$cmd,\"lib_msps\":$(jnum "$lib" msps),\"fraction_of_lib\":$(ratio "$cmd" "$(jnum "$lib" msps)")}"
      done
    done
  done
}

# the GPU's host-to-device and device-to-host rates (GB/s) from bench_chan_cuda's ceiling line:
# $PCIE_FROM (a bench_chan_cuda JSON log of the same session, e.g. scripts/gpu_check.sh's
# bench.jsonl), else a run of `bench_chan_cuda --quick` now
pcie_rates() {
  local line src=${PCIE_FROM:-}
  if [ -n "$src" ] && [ -f "$src" ]; then
    line=$(grep -m1 '"kind":"ceiling"' "$src")
  else
    line=$(timeout 300 "$BUILD/bench_chan_cuda" --quick 2>/dev/null | grep -m1 '"kind":"ceiling"')
  fi
  [ -n "$line" ] || { echo "0 0"; return; }
  echo "$(jnum "$line" h2d_GBps) $(jnum "$line" d2h_GBps)"
}

# `polyrx channelize --backend cuda` on a 2^28-sample ci16 file in RAM, K = 1024, D = 512, 64 and
# 1024 channels written to tmpfs as cf32, cf16 and ci16, each against
# min(PCIe bound, read rate, write rate) of the same run: PCIe = min(H2D / 4 bytes per input
# sample, D2H / output bytes per input sample); read = the `cat` rate of the input file; write =
# the rate of writing the command's output bytes into as many files (fsync'd). Then the start-up
# breakdown (POLYRX_TIMING) of each configuration's run, and a short input (2^20 samples, 4 MiB)
# with --backend cuda and cpu: the start-up alone.
gpu() {
  local n=$((1 << 28)) x=$W/g.ci16 t cmd sel fmt nch osz h2d d2h rd
  echo "bench_commands.sh: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" >&2
  read -r h2d d2h <<<"$(pcie_rates)"
  json "{\"bench\":\"commands_pcie\",\"h2d_GBps\":$h2d,\"d2h_GBps\":$d2h}"
  "$P" gen -q -o "$x" -F ci16 -s 1G -n "$n" --carrier f=1M,rs=1M --esn0 20 || exit 1
  local bytes
  bytes=$(stat -c %s "$x")
  t=$(best_of cat "$x")
  rd=$(awk -v b="$bytes" -v t="$t" 'BEGIN { printf "%.3f", b / t / 1e9 }')
  json "{\"bench\":\"commands_read_cat\",\"bytes\":$bytes,\"seconds\":$t,\"gb_per_s\":$rd}"
  "$B" read "$x"
  printf '%-9s %-5s %8s %8s %8s %8s %8s %8s %6s\n' channels out wall_ms Gsps pcie read write \
    floor frac >&2
  for sel in ${GPU_SEL:-0-63 all}; do
    nch=$([ "$sel" = all ] && echo 1024 || echo 64)
    for fmt in cf32 cf16 ci16; do
      osz=8
      [ "$fmt" = cf32 ] || osz=4
      # the bytes the command writes: n / 512 outputs per channel
      local mib=$(((n / 512) * nch * osz >> 20)) wl wr
      wl=$("$B" write "$W" "$nch" "$mib" 1048576)
      rm -f "$W"/w*.bin
      json "$wl"
      wr=$(jnum "$wl" gb_per_s)
      local copt=()
      [ "$sel" = all ] || copt=(-c "$sel")
      t=$(best_of "$P" channelize -q --backend cuda -F ci16 -i "$x" -s 1G -K 1024 "${copt[@]}" \
        --out-format "$fmt" -o "$W/ch")
      # one more run for the start-up breakdown (its wall time is not the figure)
      local tl
      tl=$(POLYRX_TIMING=1 "$P" channelize -q --backend cuda -F ci16 -i "$x" -s 1G -K 1024 \
        "${copt[@]}" --out-format "$fmt" -o "$W/ch" 2>&1 | grep -m1 'timing (ms)' |
        sed 's/.*timing (ms): //; s/"//g')
      rm -rf "$W/ch"
      cmd=$(awk -v n="$n" -v t="$t" 'BEGIN { printf "%.3f", n / t / 1e9 }')
      # floors in Gsamples/s of input: 4 bytes per ci16 sample in, nch * osz / 512 out
      local fl
      fl=$(awk -v h="$h2d" -v d="$d2h" -v r="$rd" -v w="$wr" -v c="$nch" -v o="$osz" 'BEGIN {
        ob = c * o / 512; p = h / 4; if (d / ob < p) p = d / ob; rr = r / 4; ww = w / ob;
        if (h <= 0 || d <= 0) p = 1e9; # not measured: no bound
        f = p; if (rr < f) f = rr; if (ww < f) f = ww;
        printf "%.3f %.3f %.3f %.3f", p, rr, ww, f }')
      local pb rb wb fb
      read -r pb rb wb fb <<<"$fl"
      json "{\"bench\":\"commands_channelize_gpu\",\"K\":1024,\"channels\":$nch,\"in_format\":\"ci16\",\"out_format\":\"$fmt\",\"samples\":$n,\"seconds\":$t,\"gsps\":$cmd,\"out_mib\":$mib,\"pcie_gsps\":$pb,\"read_gsps\":$rb,\"write_gsps\":$wb,\"floor_gsps\":$fb,\"fraction_of_floor\":$(ratio "$cmd" "$fb"),\"timing_ms\":\"$tl\"}"
      printf '%-9s %-5s %8.1f %8.3f %8.3f %8.3f %8.3f %8.3f %6.2f\n' "$nch" "$fmt" \
        "$(awk -v t="$t" 'BEGIN { print t * 1e3 }')" "$cmd" "$pb" "$rb" "$wb" "$fb" \
        "$(ratio "$cmd" "$fb")" >&2
    done
  done
  # the variants (VARIANTS): 64 channels, cf32, each environment setting
  local v name env
  for v in ${VARIANTS:-}; do
    name=${v%%=*}
    env=${v#*=}
    # shellcheck disable=SC2086
    t=$(best_of env $env "$P" channelize -q --backend cuda -F ci16 -i "$x" -s 1G -K 1024 -c 0-63 \
      -o "$W/ch")
    rm -rf "$W/ch"
    cmd=$(awk -v n="$n" -v t="$t" 'BEGIN { printf "%.3f", n / t / 1e9 }')
    json "{\"bench\":\"commands_channelize_gpu_variant\",\"variant\":\"$name\",\"channels\":64,\"out_format\":\"cf32\",\"seconds\":$t,\"gsps\":$cmd}"
    printf '%-9s %-5s %8.1f %8.3f  (%s)\n' 64 cf32 "$(awk -v t="$t" 'BEGIN { print t * 1e3 }')" \
      "$cmd" "$name" >&2
  done
  # start-up: 2^20 samples (4 MiB), 64 channels, cuda against cpu
  head -c $((4 << 20)) "$x" >"$W/s.ci16"
  local be
  for be in cuda cpu; do
    t=$(best_of "$P" channelize -q --backend "$be" -F ci16 -i "$W/s.ci16" -s 1G -K 1024 -c 0-63 \
      -o "$W/ch")
    local tl
    tl=$(POLYRX_TIMING=1 "$P" channelize -q --backend "$be" -F ci16 -i "$W/s.ci16" -s 1G -K 1024 \
      -c 0-63 -o "$W/ch" 2>&1 | grep -m1 'timing (ms)' | sed 's/.*timing (ms): //; s/"//g')
    rm -rf "$W/ch"
    json "{\"bench\":\"commands_startup_gpu\",\"backend\":\"$be\",\"samples\":$((1 << 20)),\"channels\":64,\"ms\":$(awk -v t="$t" 'BEGIN{printf "%.1f", t*1e3}'),\"timing_ms\":\"$tl\"}"
  done
}

# The rx modes' input: 64 carriers at 2400 Bd, 6.5536 Msps (RX_FS), on, 1/4, 3/8 and 1/2 of a
# spacing off the channel centres (their --carrier options in RX_ARGS), one second of them tiled
# to $2 ci16 samples in file $1
RX_FS=6553600
RX_ARGS=()
rx_capture() {
  local x=$1 n=$2 one=$W/rx1.ci16 i f
  RX_ARGS=()
  for i in $(seq 0 63); do
    f=$(awk -v i="$i" 'BEGIN { split("0 0.25 0.375 0.5", fr, " ");
      printf "%.3f", (16 * i - 504 + fr[i % 4 + 1]) * 6400 }')
    RX_ARGS+=(--carrier "f=$f,rs=2400,diff")
  done
  "$P" gen -q -o "$one" -F ci16 -s $RX_FS -n $RX_FS "${RX_ARGS[@]}" --esn0 20 || exit 1
  if [ "${RX_CARRIERS:-64}" = 1024 ]; then # a carrier listed at every channel centre
    RX_ARGS=()
    for i in $(seq -512 511); do RX_ARGS+=(--carrier "f=$((i * 6400)),rs=2400,diff"); done
  fi
  for i in $(seq 41); do cat "$one"; done | head -c $((4 * n)) >"$x"
  rm -f "$one"
}

# `polyrx rx --backend cuda` on the 64-carrier capture tiled to 2^28 ci16 samples in RAM
rx() {
  local n=$((1 << ${RX_LOG2:-28})) fs=$RX_FS x=$W/rx.ci16 h2d d2h t tl rd
  read -r h2d d2h <<<"$(pcie_rates)"
  rx_capture "$x" "$n"
  local args=("${RX_ARGS[@]}")
  # shellcheck disable=SC2206
  args+=(${RX_EXTRA:-}) # more rx options, e.g. "--block 256 --cfo-span 1024"
  t=$(best_of cat "$x")
  rd=$(awk -v n="$n" -v t="$t" 'BEGIN { printf "%.3f", n / t / 1e9 }')
  local v name env
  for v in "base=" ${VARIANTS:-}; do
    name=${v%%=*}
    env=${v#*=}
    # shellcheck disable=SC2086
    t=$(best_of env $env "$P" rx -q --backend "${RX_BACKEND:-cuda}" -F ci16 -i "$x" -s $fs -K 1024 "${args[@]}" \
      -o "$W/rxo")
    # shellcheck disable=SC2086
    tl=$(env $env POLYRX_TIMING=1 "$P" rx -q --backend "${RX_BACKEND:-cuda}" -F ci16 -i "$x" -s $fs -K 1024 \
      "${args[@]}" -o "$W/rxo" 2>&1 | grep -m1 'timing (ms)' | sed 's/.*timing (ms): //; s/"//g')
    rm -rf "$W/rxo"
    awk -v n="$n" -v t="$t" -v h="$h2d" -v r="$rd" -v name="$name" -v tl="$tl" -v c="${RX_CARRIERS:-64}" 'BEGIN {
      g = n / t / 1e9; p = h / 4; f = p < r ? p : r; if (h <= 0) f = r;
      printf "{\"bench\":\"commands_rx_gpu\",\"variant\":\"%s\",\"carriers\":%d,\"K\":1024,\"samples\":%d,\"seconds\":%.4f,\"gsps\":%.3f,\"pcie_gsps\":%.3f,\"cat_gsps\":%.3f,\"of_bound\":%.3f,\"timing_ms\":\"%s\"}\n", name, c, n, t, g, p, r, g / f, tl
      printf "rx %d carriers %-10s %8.1f ms %7.3f Gsps  pcie %6.3f cat %6.3f  of bound %5.2f\n", c, name, t * 1e3, g, p, r, g / f > "/dev/stderr" }'
  done
  rm -f "$x"
}

# `channelize --backend cuda` (64 channels, cf32) on gpu's 2^28-sample file over the pipeline's
# reader count (READERS, default "2 4 8") and block (BLOCKS, default 2^20, 2^21, 2^22); for rx,
# VARIANTS of POLYRX_READERS
sweep() {
  local n=$((1 << 28)) x=$W/g.ci16 t nr b
  "$P" gen -q -o "$x" -F ci16 -s 1G -n "$n" --carrier f=1M,rs=1M --esn0 20 2>/dev/null || exit 1
  cat "$x" >/dev/null
  for nr in ${READERS:-2 4 8}; do
    for b in ${BLOCKS:-1048576 2097152 4194304}; do
      t=$(best_of env POLYRX_READERS="$nr" "$P" channelize -q --backend cuda -F ci16 -i "$x" \
        -s 1G -K 1024 -c 0-63 --block "$b" -o "$W/ch")
      rm -rf "$W/ch"
      awk -v n="$n" -v t="$t" -v r="$nr" -v b="$b" 'BEGIN {
        printf "{\"bench\":\"commands_sweep_channelize\",\"readers\":%d,\"block\":%d,\"seconds\":%.4f,\"gsps\":%.3f}\n", r, b, t, n / t / 1e9
        printf "channelize 64 cf32 readers %d block %8d: %7.1f ms %6.3f Gsps\n", r, b, t * 1e3, n / t / 1e9 > "/dev/stderr" }'
    done
  done
  rm -f "$x"
}

# this build's `channelize` against $BEFORE's, alternating runs, the library in the same run
chanab() {
  local nsamp x th sel lib tb ta tl line s e t same
  local before=${BEFORE:?chanab: set BEFORE=path/to/the/other/polyrx}
  echo "bench_commands.sh: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  nsamp=$(scaled 16777216)
  x=$W/c.cf32
  "$P" gen -q -o "$x" -s 100M -n "$nsamp" --carrier f=1M,rs=100k --esn0 20
  printf '%-8s %-5s %6s %9s %9s %9s %7s %7s %5s\n' threads sel block lib_ms before after b/lib a/lib \
    same >&2
  for th in 1 0; do
    for sel in all 0-63; do
      local copt=() nsel=0
      [ "$sel" = all ] || copt=(-c "$sel") nsel=64
      tb=0 ta=0 lib="" tl=""
      for _ in $(seq "$REPS"); do
        # the library (in the command's blocks) in its own process, between the commands' runs
        line=$("$B" chan "$x" cf32 1024 "$th" 1 "$nsel") || return 1
        if [ -z "$lib" ] || awk -v a="$(jnum "$line" seconds)" -v b="$tl" 'BEGIN { exit !(a < b) }'
        then
          lib=$line tl=$(jnum "$line" seconds)
        fi
        for which in before after; do
          # shellcheck disable=SC2206
          local bin=(env ${AENV:-} "$P")
          [ "$which" = before ] && bin=("$before")
          rm -rf "$W/ch"
          s=$(ns)
          "${bin[@]}" channelize -q --backend cpu --threads "$th" -i "$x" -s 100M -K 1024 "${copt[@]}" \
            -o "$W/ch" ||
            { echo "bench_commands.sh: $which failed" >&2; return 1; }
          e=$(ns)
          t=$((e - s))
          if [ "$which" = before ]; then
            { [ "$tb" = 0 ] || [ "$t" -lt "$tb" ]; } && tb=$t
            rm -rf "$W/ch_before"
            mv "$W/ch" "$W/ch_before"
          else
            { [ "$ta" = 0 ] || [ "$t" -lt "$ta" ]; } && ta=$t
          fi
        done
      done
      same=no
      diff -r -q "$W/ch_before" "$W/ch" >/dev/null && same=yes
      rm -rf "$W/ch" "$W/ch_before"
      awk -v th="$th" -v sel="$sel" -v n="$nsamp" -v lib="$tl" -v blk="$(jnum "$lib" block)" \
        -v tb="$tb" -v ta="$ta" -v same="$same" -v load="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
        b = tb / 1e9; a = ta / 1e9
        printf "{\"bench\":\"commands_channelize_ab\",\"threads\":%d,\"K\":1024,\"channels\":\"%s\",\"samples\":%d,\"lib_block\":%d,\"lib_seconds\":%.4f,\"before_seconds\":%.4f,\"after_seconds\":%.4f,\"before_of_lib\":%.3f,\"after_of_lib\":%.3f,\"same_bytes\":\"%s\",\"load\":%s}\n", th, sel, n, blk, lib, b, a, lib / b, lib / a, same, load
        printf "%-8d %-5s %6d %9.1f %9.1f %9.1f %7.3f %7.3f %5s\n", th, sel, blk, lib * 1e3, b * 1e3, a * 1e3, lib / b, lib / a, same > "/dev/stderr" }'
    done
  done
  rm -f "$x"
}

# this build's `channelize` against $BEFORE's and the library in many alternating rounds (the
# host's two speeds: a configuration's single runs spread 1.5-1.9x, so few rounds cannot separate
# 10 %): each round runs the library (bench_commands chan, its own process, the command's block),
# then the two binaries (their order swapped every round), all 1024 channels, --threads 1 and 0
# (ROUNDS, default 10), 0-63 (ROUNDS64, default 3); then, with PIN set (a taskset CPU list, e.g.
# 2-13), PIN_ROUNDS rounds of --threads 1, all 1024, with every process of the round (library
# and commands) pinned to those vCPUs. One JSON line per run on stdout; best and median of each
# and the fractions on stderr, with whether the two binaries wrote the same bytes.
# The CPU channelize rounds' input (chanrounds, chanrows, chanstream): 16M cf32 samples (SCALE)
# of one carrier in $1, after a line on the machine
chan_rounds_input() {
  echo "bench_commands.sh: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  "$P" gen -q -o "$1" -s 100M -n "$(scaled 16777216)" --carrier f=1M,rs=100k --esn0 20
}

# Runs "$1 ROUND THREADS SEL" in ROUNDS rounds (default $2) of all channels and ROUNDS64 (default
# 3) of channels 0-63, each with --threads 1 and 0 (CHAN_THREADS: those given, e.g. "1")
chan_rounds_run() {
  local fn=$1 r th sel n
  for sel in all 0-63; do
    n=${ROUNDS:-$2}
    [ "$sel" = all ] || n=${ROUNDS64:-3}
    for r in $(seq "$n"); do
      for th in ${CHAN_THREADS:-1 0}; do "$fn" "$r" "$th" "$sel" || return 1; done
    done
  done
}

# After a round's two commands (outputs in $W/ch_before and $W/ch_after): in round 1, whether they
# wrote the same bytes (stderr, with label $2); then the outputs removed
rounds_same() {
  if [ "$1" = 1 ]; then
    local same=no
    diff -r -q "$W/ch_before" "$W/ch_after" >/dev/null && same=yes
    echo "same bytes, $2: $same" >&2
  fi
  rm -rf "$W/ch_before" "$W/ch_after"
}

# One round's JSON line: set round threads channels what seconds [extra "key":value pairs]
round_line() {
  echo "{\"bench\":\"commands_chanrounds\",\"set\":\"$1\",\"round\":$2,\"threads\":$3,\"channels\":\"$4\",\"what\":\"$5\",\"seconds\":$6${7:+,$7}}"
}

# One timed `channelize` of the rounds' input $x: OUT THREADS SEL COMMAND... (the binary and any
# wrapper before it: env, taskset): OUT made afresh; its wall seconds on stdout
chan_cmd_seconds() {
  local out=$1 th=$2 sel=$3 copt=() s e
  shift 3
  [ "$sel" = all ] || copt=(-c "$sel")
  rm -rf "$out"
  s=$(ns)
  "$@" channelize -q --backend cpu --threads "$th" -i "$x" -s 100M -K 1024 "${copt[@]}" -o "$out" ||
    return 1
  e=$(ns)
  awk -v t=$((e - s)) 'BEGIN { printf "%.4f", t / 1e9 }'
}

chanrounds() {
  local before=${BEFORE:?chanrounds: set BEFORE=path/to/the/other/polyrx}
  local x=$W/c.cf32
  chan_rounds_input "$x"
  one() { # set round threads sel pin: the library, then the two binaries, one JSON line each
    local set=$1 r=$2 th=$3 sel=$4 pin=$5 nsel=0 pre=() line t which order
    [ "$sel" = all ] || nsel=64
    [ -n "$pin" ] && pre=(taskset -c "$pin")
    line=$("${pre[@]}" "$B" chan "$x" cf32 1024 "$th" 1 "$nsel") || return 1
    round_line "$set" "$r" "$th" "$sel" lib "$(jnum "$line" seconds)"
    order="before after"
    [ $((r % 2)) = 0 ] && order="after before"
    for which in $order; do
      local bin=("$P")
      [ "$which" = before ] && bin=("$before")
      t=$(chan_cmd_seconds "$W/ch_$which" "$th" "$sel" "${pre[@]}" "${bin[@]}") ||
        { echo "bench_commands.sh: $which failed" >&2; return 1; }
      round_line "$set" "$r" "$th" "$sel" "$which" "$t"
    done
    rounds_same "$r" "$set threads $th channels $sel"
  }
  plain_one() { one plain "$1" "$2" "$3" ""; }
  chan_rounds_run plain_one 10 || return 1
  local r
  if [ -n "${PIN:-}" ]; then
    for r in $(seq "${PIN_ROUNDS:-6}"); do one "pin$PIN" "$r" 1 all "$PIN" || return 1; done
  fi
  rm -f "$x"
}

# the library's rows into memory and into mapped files against its own output buffer, in ROUNDS
# alternating rounds (default 8; ROUNDS64, default 3, of channels 0-63), --threads 1 and 0, each
# run a process of its own (bench_commands chan, the command's block, one rep): its outputs in
# one buffer reused every block (slot: the library's figure), every channel's whole output in
# anonymous memory at a stride of whole pages (mem: BENCH_CHAN_ROWS=mem), and in one file per
# channel in tmpfs, made at its final size and mapped shared (mapped: BENCH_CHAN_ROWS=DIR), the
# three in an order turned every round. The run's JSON line, then a chanrounds line (slot as lib,
# mem as before, mapped as after); chanrows_summary reads them (stdin) as chanrounds_summary does.
chanrows() {
  local x=$W/c.cf32 what order line
  chan_rounds_input "$x"
  rows_one() { # round threads sel
    local r=$1 th=$2 sel=$3 nsel=0 env name
    [ "$sel" = all ] || nsel=64
    order="slot mem mapped"
    [ $((r % 3)) = 1 ] && order="mem mapped slot"
    [ $((r % 3)) = 2 ] && order="mapped slot mem"
    for what in $order; do
      env="" name=lib
      [ "$what" = mem ] && env=mem name=before
      [ "$what" = mapped ] && env=$W/rows name=after
      rm -rf "$W/rows" && mkdir -p "$W/rows"
      line=$(BENCH_CHAN_ROWS=$env "$B" chan "$x" cf32 1024 "$th" 1 "$nsel") || return 1
      echo "$line"
      round_line rows "$r" "$th" "$sel" "$name" "$(jnum "$line" seconds)"
    done
    rm -rf "$W/rows"
  }
  chan_rounds_run rows_one 8 || return 1
  rm -f "$x"
}

# the channelizer's streaming stores (prx_chan_config.stream_out) in ROUNDS alternating rounds
# (default 10; ROUNDS64, default 3, of channels 0-63), --threads 1 and 0, each run a process of
# its own, the order turned every round: the library in its own buffer (slot: the library's
# figure), BEFORE's `channelize` (e.g. main's), this build's with POLYRX_CHAN_STREAM=1 (its slots'
# rows streamed), and the library's rows in every channel's whole output in memory
# (BENCH_CHAN_ROWS=mem) without and with streaming stores (all 1024 channels only). One
# chanrounds line per run (set "cmd": lib, before, after; set "mem": lib = mem without streaming,
# before = mem without, after = mem with; chanrounds_summary reads them), with whether the two
# commands wrote the same bytes in the first round of each configuration.
chanstream() {
  local before=${BEFORE:?chanstream: set BEFORE=path/to/the/other/polyrx}
  local x=$W/c.cf32
  chan_rounds_input "$x"
  lib() { # rows stream threads nsel: the library's seconds
    local line
    line=$(BENCH_CHAN_ROWS=$1 BENCH_CHAN_STREAM=$2 "$B" chan "$x" cf32 1024 "$3" 1 "$4") || return 1
    jnum "$line" seconds
  }
  one() { # round threads sel
    local r=$1 th=$2 sel=$3 nsel=0 what order t
    [ "$sel" = all ] || nsel=64
    order="lib before after mem0 mem1"
    [ $((r % 3)) = 1 ] && order="after mem1 lib mem0 before"
    [ $((r % 3)) = 2 ] && order="mem0 before mem1 after lib"
    for what in $order; do
      case $what in
      lib) t=$(lib "" 0 "$th" "$nsel") || return 1; round_line cmd "$r" "$th" "$sel" lib "$t" ;;
      mem0 | mem1)
        [ "$sel" = all ] || continue
        t=$(lib mem "${what#mem}" "$th" "$nsel") || return 1
        [ "$what" = mem0 ] && round_line mem "$r" "$th" "$sel" lib "$t" && round_line mem "$r" "$th" "$sel" before "$t"
        [ "$what" = mem1 ] && round_line mem "$r" "$th" "$sel" after "$t" ;;
      before | after)
        local bin=(env POLYRX_CHAN_STREAM=1 "$P")
        [ "$what" = before ] && bin=("$before")
        t=$(chan_cmd_seconds "$W/ch_$what" "$th" "$sel" "${bin[@]}") ||
          { echo "bench_commands.sh: $what failed" >&2; return 1; }
        round_line cmd "$r" "$th" "$sel" "$what" "$t" ;;
      esac
    done
    rounds_same "$r" "threads $th channels $sel"
  }
  chan_rounds_run one 10 || return 1
  rm -f "$x"
}

# awk: sorts a[1..m] in place (insertion) and returns its median (the summaries below)
AWK_SORTMED='function sortmed(a, m,   i, j, t) {
  for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
'

# best and median of chanrounds' JSON lines (stdin) per set, threads, channels and binary, and
# the binaries' fractions of the library (best / best, median / median); chanrows' lines too
# (lib: the library's own buffer, before: rows in memory, after: mapped rows)
chanrounds_summary() {
  awk -F'"' "$AWK_SORTMED"'/commands_chanrounds/ {
      for (i = 1; i < NF; i++) {
        if ($i == "set") set = $(i + 2); if ($i == "channels") sel = $(i + 2); if ($i == "what") w = $(i + 2)
        if ($i == "threads") { th = $(i + 1); gsub(/[:,]/, "", th) }
        if ($i == "seconds") { v = $(i + 1); gsub(/[:,}]/, "", v) }
      }
      k = set " t" th " " sel; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
      n[k, w]++; x[k, w, n[k, w]] = v * 1e3
    }
    function med(k, w,   m, i, a, r) {
      m = n[k, w]; for (i = 1; i <= m; i++) a[i] = x[k, w, i]
      r = sortmed(a, m); best = a[1]; return r
    }
    END {
      printf "%-22s %3s %17s %17s %17s %13s %13s\n", "set", "n", "lib best/median", "before b/m", "after b/m", "before/lib", "after/lib"
      for (q = 1; q <= nk; q++) {
        k = keys[q]
        ml = med(k, "lib"); bl = best; mb = med(k, "before"); bb = best; ma = med(k, "after"); ba = best
        printf "%-22s %3d %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %6.3f %6.3f %6.3f %6.3f\n", k, n[k, "lib"], bl, ml, bb, mb, ba, ma, bl / bb, ml / mb, bl / ba, ml / ma
      }
    }'
}

# `polyrx demod --backend cpu` of this build against BEFORE's and the library in ROUNDS
# alternating rounds (default 8), --threads 1 and 0, on the cpu mode's demod input (4M symbols at
# 4 samples/symbol, cf32 in /dev/shm, bits to tmpfs): each round the library's loop in its own
# process (bench_commands demod, in the command's blocks of 2^18), then the two commands in an
# order turned every round; one chanrounds line each (channels "sps4"), so chanrounds_summary
# reads them; whether the two wrote the same bits in round 1 (stderr); then with TIMING_RUNS
# (default 1) POLYRX_TIMING runs of this build for each of TIMING_THREADS' worker counts (default
# 1), each after a library run with as many (stderr),
# with the run's wall time split into the process's start (up to the command's own start), the
# command and the process's end (after its timing line).
# A command's wall time is read from bash's EPOCHREALTIME, no process of its own: the rounds'
# seconds; seconds_date is the same run timed as before (date +%s%N before and after: the first
# date's end and the second's exec counted in, 1.2-1.4 ms a run on the development VM). The
# library's figure is its loop, timed inside its process. demodrounds_summary adds, per binary,
# the median over the rounds of library / command in the same round.
demodrounds() {
  local before=${BEFORE:?demodrounds: set BEFORE=path/to/the/other/polyrx}
  local x r th which order line t s e sd ed tl
  x=$(demod_input host) || return 1
  for r in $(seq "${ROUNDS:-8}"); do
    for th in 1 0; do
      line=$("$B" demod "$x" 4e6 1e6 "$th" 1) || return 1
      round_line demod "$r" "$th" sps4 lib "$(jnum "$line" seconds)"
      order="before after"
      [ $((r % 2)) = 0 ] && order="after before"
      for which in $order; do
        local bin=$P
        [ "$which" = before ] && bin=$before
        sd=$(ns)
        s=${EPOCHREALTIME/./}
        "$bin" demod -q --backend cpu --threads "$th" -i "$x" -s 4M -r 1M -o "$W/d_$which.bits" ||
          { echo "bench_commands.sh: $which failed" >&2; return 1; }
        e=${EPOCHREALTIME/./}
        ed=$(ns)
        round_line demod "$r" "$th" sps4 "$which" "$(awk -v t=$((e - s)) 'BEGIN { printf "%.4f", t / 1e6 }')" \
          "\"seconds_date\":$(awk -v t=$((ed - sd)) 'BEGIN { printf "%.4f", t / 1e9 }')"
      done
      if [ "$r" = 1 ]; then
        local same=no
        cmp -s "$W/d_before.bits" "$W/d_after.bits" && same=yes
        echo "same bits, threads $th: $same" >&2
      fi
      rm -f "$W"/d_*.bits
    done
  done
  for t in $(seq "${TIMING_RUNS:-1}"); do for th in ${TIMING_THREADS:-1}; do
    line=$("$B" demod "$x" 4e6 1e6 "$th" 1) || return 1
    s=$EPOCHREALTIME
    POLYRX_TIMING=1 "$P" demod -q --backend cpu --threads "$th" -i "$x" -s 4M -r 1M -o "$W/d_t.bits" 2>"$W/d_t.err"
    e=$EPOCHREALTIME
    tl=$(grep 'timing (ms)' "$W/d_t.err")
    echo "--threads $th: library $(jnum "$line" seconds) s; $tl" >&2
    sed -nE 's/.*unix time at the start ([0-9.]+), at this line ([0-9.]+).*/\1 \2/p' <<<"$tl" |
      awk -v s="$s" -v e="$e" '{ printf "  wall %.2f ms: the process up to the command %.2f, the command %.2f, the end after its line %.2f\n", (e - s) * 1e3, ($1 - s) * 1e3, ($2 - $1) * 1e3, (e - $2) * 1e3 }' >&2
  done; done
  rm -f "$x" "$W/d_t.bits" "$W/d_t.err"
}

# demodrounds' lines (stdin): chanrounds_summary's table, the same from seconds_date (the runs
# timed with date, as before), then per threads and binary the median over the rounds of
# library / command in the same round and the rounds at 0.90 or more
demodrounds_summary() {
  local in
  in=$(cat)
  chanrounds_summary <<<"$in"
  echo "timed with date +%s%N (seconds_date):"
  sed -E 's/"seconds":[0-9.]+,"seconds_date":/"seconds":/' <<<"$in" | chanrounds_summary
  awk -F'"' "$AWK_SORTMED"'/commands_chanrounds/ && /"set":"demod"/ {
      for (i = 1; i < NF; i++) {
        if ($i == "what") w = $(i + 2)
        if ($i == "threads") { th = $(i + 1); gsub(/[:,]/, "", th) }
        if ($i == "round") { r = $(i + 1); gsub(/[:,]/, "", r) }
        if ($i == "seconds") { v = $(i + 1); gsub(/[:,}]/, "", v) }
        if ($i == "seconds_date") { vd = $(i + 1); gsub(/[:,}]/, "", vd) }
      }
      at[th, w, r] = v; atd[th, w, r] = (w == "lib") ? v : vd; ths[th] = 1; rs[r] = 1
    }
    END {
      printf "%-8s %-7s %6s %13s %13s\n", "threads", "what", "rounds", "lib/cmd med", "date: med"
      for (th in ths) for (q = 1; q <= 2; q++) {
        w = q == 1 ? "before" : "after"; n = 0; ok = 0; delete a; delete b
        for (r in rs) if (((th, w, r) in at) && ((th, "lib", r) in at)) {
          a[++n] = at[th, "lib", r] / at[th, w, r]; b[n] = atd[th, "lib", r] / atd[th, w, r]; if (a[n] >= 0.9) ok++ }
        if (n) printf "%-8s %-7s %6d %13.3f %13.3f   %d of %d rounds at 0.90 or more\n", th, w, n, sortmed(a, n), sortmed(b, n), ok, n
      }
    }' <<<"$in"
}

# this build's `polyrx demod --backend cpu` with each worker count of DT_THREADS (default "0 15 14
# 12 8"; an entry COUNT:VAR=VALUE runs that count with that environment setting, e.g.
# 0:POLYRX_PIPE_POLL=0) against the library with all cores (bench_commands demod THREADS 0, in the command's
# blocks), in ROUNDS rounds (default 8), the counts in an order turned every round, each run with
# POLYRX_TIMING: a chanrounds line per run (set demodthreads; what "lib" or "tN") and a
# commands_demodthreads line with the timing line's compute in execute, its sleeps for input and
# its involuntary switches. The question it answers: whether `demod -t 0`, which runs the pool's
# workers beside the pipeline's reader and writer (one more busy thread than cores while the
# reader copies), loses to the library's loop, which has no reader, by oversubscription (fewer
# workers faster) or by waiting for input (sleeps). demodthreads_summary reads the lines.
demodthreads() {
  local x r k n i th line tl s e
  local -a ths ev
  read -r -a ths <<<"${DT_THREADS:-0 15 14 12 8}"
  x=$(demod_input host) || return 1
  n=${#ths[@]}
  for r in $(seq "${ROUNDS:-8}"); do
    line=$("$B" demod "$x" 4e6 1e6 0 1) || return 1
    round_line demodthreads "$r" 0 sps4 lib "$(jnum "$line" seconds)"
    for ((k = 0; k < n; k++)); do
      i=$(((k + r) % n))
      # an entry is a worker count, or COUNT:VAR=VALUE for a run with that setting too
      th=${ths[$i]%%:*}
      ev=()
      [[ ${ths[$i]} == *:* ]] && ev=("${ths[$i]#*:}")
      s=${EPOCHREALTIME/./}
      env POLYRX_TIMING=1 "${ev[@]}" "$P" demod -q --backend cpu --threads "$th" -i "$x" -s 4M -r 1M -o "$W/dt.bits" 2>"$W/dt.err" ||
        { echo "bench_commands.sh: --threads ${ths[$i]} failed" >&2; return 1; }
      e=${EPOCHREALTIME/./}
      rm -f "$W/dt.bits"
      th=t${ths[$i]}
      th=${th//[:=]/_}
      round_line demodthreads "$r" 0 sps4 "$th" "$(awk -v t=$((e - s)) 'BEGIN { printf "%.4f", t / 1e6 }')"
      tl=$(grep 'timing (ms)' "$W/dt.err")
      sed -E 's/.*total ([0-9.]+);.*compute in execute ([0-9.]+) .*preempted ([0-9]+) times.*sleeps for input [0-9]+ \(([0-9.]+) ms\).*/\1 \2 \3 \4/' <<<"$tl" |
        awk -v w="$th" -v r="$r" '{ printf "{\"bench\":\"commands_demodthreads\",\"round\":%d,\"what\":\"%s\",\"total_ms\":%s,\"exec_ms\":%s,\"preempted\":%s,\"input_wait_ms\":%s}\n", r, w, $1, $2, $3, $4 }'
    done
  done
  rm -f "$x" "$W/dt.err"
}

# demodthreads' lines (stdin): per setting the wall time's best and median and its fraction of
# the library's (best / best, median / median), then the timing line's figures' medians
demodthreads_summary() {
  awk -F'"' "$AWK_SORTMED"'/commands_chanrounds/ && /"set":"demodthreads"/ {
      for (i = 1; i < NF; i++) {
        if ($i == "what") w = $(i + 2)
        if ($i == "seconds") { v = $(i + 1); gsub(/[:,}]/, "", v) }
      }
      if (!(w in seen)) { seen[w] = 1; ws[++nw] = w }
      x[w, ++n[w]] = v * 1e3
    }
    /commands_demodthreads/ {
      for (i = 1; i < NF; i++) {
        if ($i == "what") w = $(i + 2)
        for (f = 1; f <= 4; f++) if ($i == fld[f]) { v = $(i + 1); gsub(/[:,}]/, "", v); y[w, f, ++m[w, f]] = v + 0 }
      }
    }
    BEGIN { fld[1] = "total_ms"; fld[2] = "exec_ms"; fld[3] = "preempted"; fld[4] = "input_wait_ms" }
    END {
      k = n["lib"]; for (i = 1; i <= k; i++) a[i] = x["lib", i]; ml = sortmed(a, k); bl = a[1]
      printf "%-6s %3s %8s %8s %7s %7s %9s %9s %9s %9s\n", "what", "n", "best", "median", "lib/b", "lib/m", "total m", "exec m", "preempt m", "in wait m"
      for (u = 1; u <= nw; u++) {
        w = ws[u]; k = n[w]; delete a; for (i = 1; i <= k; i++) a[i] = x[w, i]; md = sortmed(a, k); b = a[1]
        printf "%-6s %3d %8.1f %8.1f %7.3f %7.3f", w, k, b, md, bl / b, ml / md
        for (f = 1; f <= 4; f++) { q = m[w, f]; delete a; for (i = 1; i <= q; i++) a[i] = y[w, f, i]; printf " %9.1f", q ? sortmed(a, q) : 0 }
        printf "\n"
      }
    }'
}

# this build's `polyrx demod --backend cpu --threads 1` with settings, in ROUNDS alternating rounds
# (default 10) on demodrounds' input, each run with POLYRX_TIMING: the library's loop first each
# round (bench_commands demod, "lib"), then "before" (BEFORE_ENV, default main's start and
# hand-overs in this binary: no FFT planner made ready beside the demodulator's making, which
# this build does with 4 cores or more, the first block read by the pipeline's reader, the writer
# woken for every slot of 3, no polling), "after" (this build as it is) and each of
# VARIANTS="NAME=VAR=VALUE[+VAR=VALUE] ...",
# in an order turned every round. Per run a chanrounds line (wall seconds; chanvar_summary gives
# best, median and the round-by-round ratio to "before") and a commands_demodvar line with the
# timing line's figures: start (ms from main's start to compute's first samples: input,
# demodulator, outputs, the first block's wait), exec_cpu (compute's CPU in the demodulator) and
# outside_cpu (compute's CPU in the stream outside it: the hand-overs), which a slow phase of the
# host or preemption moves less than wall times; demodvar_summary gives their best and median.
demodvar() {
  local x r k n i what line tl s e ev
  local -a names=(before after) envs=("${BEFORE_ENV:-POLYRX_FFT_WARM=0+POLYRX_FIRST_BLOCK=0+POLYRX_PIPE_POLL=0+POLYRX_WAKE_BATCH=1+POLYRX_OUT_DEPTH=3}" "")
  for v in ${VARIANTS:-}; do
    names+=("${v%%=*}")
    envs+=("${v#*=}")
  done
  x=$(demod_input host) || return 1
  n=${#names[@]}
  for r in $(seq "${ROUNDS:-10}"); do
    line=$("$B" demod "$x" 4e6 1e6 1 1) || return 1
    round_line demodvar "$r" 1 sps4 lib "$(jnum "$line" seconds)"
    for ((k = 0; k < n; k++)); do
      i=$(((k + r) % n))
      what=${names[$i]}
      ev=()
      [ -n "${envs[$i]}" ] && IFS=+ read -r -a ev <<<"${envs[$i]}"
      s=$(ns)
      tl=$(env "${ev[@]}" POLYRX_TIMING=1 "$P" demod -q --backend cpu --threads 1 -i "$x" -s 4M -r 1M \
        -o "$W/dv.bits" 2>&1 >/dev/null | grep 'timing (ms)') || { echo "bench_commands.sh: $what failed" >&2; return 1; }
      e=$(ns)
      rm -f "$W/dv.bits"
      round_line demodvar "$r" 1 sps4 "$what" "$(awk -v t=$((e - s)) 'BEGIN { printf "%.4f", t / 1e9 }')"
      sed -E 's/.*input ([0-9.]+) demodulator ([0-9.]+) outputs ([0-9.]+) stream .*total ([0-9.]+);.*first samples at ([0-9.]+).*thread.s CPU ([0-9.]+)\), compute.s CPU in the stream ([0-9.]+).*/\1 \2 \3 \4 \5 \6 \7/' <<<"$tl" |
        awk -v w="$what" -v r="$r" '{ printf "{\"bench\":\"commands_demodvar\",\"round\":%d,\"what\":\"%s\",\"total_ms\":%s,\"start_ms\":%.1f,\"exec_cpu_ms\":%s,\"outside_cpu_ms\":%.1f}\n", r, w, $4, $1 + $2 + $3 + $5, $6, $7 - $6 }'
    done
  done
  rm -f "$x"
}

# demodvar's commands_demodvar lines on stdin: per setting, best and median of each figure
demodvar_summary() {
  awk -F'"' "$AWK_SORTMED"'/commands_demodvar/ {
      for (i = 1; i < NF; i++) {
        if ($i == "what") w = $(i + 2)
        for (f = 1; f <= 4; f++) if ($i == fld[f]) { v = $(i + 1); gsub(/[:,}]/, "", v); x[w, f, ++n[w, f]] = v + 0 }
      }
      if (!(w in seen)) { seen[w] = 1; ws[++nw] = w }
    }
    BEGIN { fld[1] = "total_ms"; fld[2] = "start_ms"; fld[3] = "exec_cpu_ms"; fld[4] = "outside_cpu_ms" }
    END {
      printf "%-10s %3s %17s %17s %17s %17s\n", "what", "n", "total b/m", "start b/m", "exec cpu b/m", "outside cpu b/m"
      for (u = 1; u <= nw; u++) {
        w = ws[u]; printf "%-10s %3d", w, n[w, 1]
        for (f = 1; f <= 4; f++) { m = n[w, f]; delete a; for (i = 1; i <= m; i++) a[i] = x[w, f, i]; md = sortmed(a, m); printf " %8.1f %8.1f", a[1], md }
        printf "\n"
      }
    }'
}

# this build's `channelize` with settings against BEFORE's and the library in ROUNDS alternating
# rounds (default 8; ROUNDS64, default 3, of channels 0-63), --threads 1 and 0, each run a process
# of its own, the order turned every round: the library (bench_commands chan, the command's block:
# "lib", with the CPU time of its loop), BEFORE's `channelize` ("before"), this build's ("after")
# and this build's with each of VARIANTS="NAME=VAR=VALUE[+VAR=VALUE] ..." (e.g.
# "depth6=POLYRX_OUT_DEPTH=6"); the names in ONLY_T1 run with --threads 1 and all channels only,
# those in ONLY_ALL with all channels only; LIB_FRAMES=1 adds the library's loop with the frames
# layout ("libf", BENCH_CHAN_LAYOUT=frames) beside its rows ("lib").
# One chanrounds line per run (what: the name); chanvar_summary reads them. Whether each wrote
# BEFORE's bytes, in the first round of each configuration (stderr). Then, with TIMING_RUNS (default
# 1), that many POLYRX_TIMING runs of after and each variant (TIMING_FIRST=1: of before too), all
# channels, --threads 1 (TIMING_THREADS, e.g. "1 0"), each after a library run: their whole lines
# into $TIMING_LOG (default $W/timing.log, removed) and a short line each on stderr (the wall
# time, the phases, compute in execute and its CPU time, compute's sleeps, the writers' time
# after compute's end where the binary prints it).
chanvar() {
  local before=${BEFORE:?chanvar: set BEFORE=path/to/the/other/polyrx}
  local x=$W/c.cf32 v log=${TIMING_LOG:-$W/timing.log}
  chan_rounds_input "$x"
  local -a names=(lib before after) envs=("" "" "")
  # LIB_FRAMES=1: the library's loop with the frames layout too (libf), beside its rows (lib)
  if [ "${LIB_FRAMES:-0}" = 1 ]; then
    names+=(libf)
    envs+=("")
  fi
  for v in ${VARIANTS:-}; do
    names+=("${v%%=*}")
    envs+=("${v#*=}")
  done
  var_run() { # index threads sel outdir [extra environment]: runs one command, its seconds out
    local i=$1 th=$2 sel=$3 out=$4 bin=("$P") ev=()
    shift 4
    [ "${names[$i]}" = before ] && bin=("$before")
    [ -n "${envs[$i]}" ] && IFS=+ read -r -a ev <<<"${envs[$i]}"
    chan_cmd_seconds "$out" "$th" "$sel" env "${ev[@]}" "$@" "${bin[@]}"
  }
  var_one() { # round threads sel
    local r=$1 th=$2 sel=$3 nsel=0 n=${#names[@]} k i what line t same
    local -a order=() cmds=()
    [ "$sel" = all ] || nsel=64
    # the library's loops first, then the commands in an order turned by one every round: each
    # command follows each other one (whose removed output the next run's page allocations may
    # pay for: 5-45 ms on the GPU host) as often as it precedes it
    for ((k = 0; k < n; k++)); do
      case ${names[$k]} in lib | libf) order+=("$k") ;; *) cmds+=("$k") ;; esac
    done
    for ((k = 0; k < ${#cmds[@]}; k++)); do order+=("${cmds[$(((k + r - 1) % ${#cmds[@]}))]}"); done
    for i in "${order[@]}"; do
      what=${names[$i]}
      case " ${ONLY_T1:-} " in *" $what "*) [ "$th" = 1 ] && [ "$sel" = all ] || continue ;; esac
      case " ${ONLY_ALL:-} " in *" $what "*) [ "$sel" = all ] || continue ;; esac
      if [ "$what" = lib ] || [ "$what" = libf ]; then
        local lenv=(BENCH_CHAN_LAYOUT=rows)
        [ "$what" = libf ] && lenv=(BENCH_CHAN_LAYOUT=frames)
        line=$(env "${lenv[@]}" "$B" chan "$x" cf32 1024 "$th" 1 "$nsel") || return 1
        round_line var "$r" "$th" "$sel" "$what" "$(jnum "$line" seconds)" "\"cpu_seconds\":$(jnum "$line" cpu_seconds)"
        continue
      fi
      t=$(var_run "$i" "$th" "$sel" "$W/ch_$what") || { echo "bench_commands.sh: $what failed" >&2; return 1; }
      round_line var "$r" "$th" "$sel" "$what" "$t"
      # each output compared (round 1: before runs first of the commands) and removed at once,
      # so that tmpfs holds at most two runs' outputs (a memory-limited host reclaims under many)
      if [ "$r" = 1 ] && [ "$what" != before ] && [ -d "$W/ch_before" ]; then
        same=no
        diff -r -q "$W/ch_before" "$W/ch_$what" >/dev/null && same=yes
        echo "same bytes as before, threads $th channels $sel, $what: $same" >&2
      fi
      [ "$what" = before ] && [ "$r" = 1 ] || rm -rf "$W/ch_$what"
    done
    rm -rf "$W"/ch_*
  }
  chan_rounds_run var_one 8 || return 1
  local t i line th wall
  : >"$log"
  for t in $(seq "${TIMING_RUNS:-1}"); do
    for th in ${TIMING_THREADS:-1}; do
      for ((i = ${TIMING_FIRST:-2}; i < ${#names[@]}; i++)); do
        [ "${names[$i]}" = libf ] && continue
        line=$("$B" chan "$x" cf32 1024 "$th" 1 0) || return 1
        echo "== ${names[$i]} -t $th (lib $(jnum "$line" seconds) s, cpu $(jnum "$line" cpu_seconds) s)" >>"$log"
        wall=$(var_run "$i" "$th" all "$W/ch_t" POLYRX_TIMING=1 2>>"$log") || return 1
        echo "${names[$i]} -t $th: lib $(jnum "$line" seconds) s cpu $(jnum "$line" cpu_seconds); wall $wall s;" \
          "$(tail -2 "$log" | sed -n 's/.*channelizer \([0-9.]*\) open \([0-9.]*\) stream \([0-9.]*\) close [0-9.]* collection \([0-9.]*\) .*cleanup \([0-9.]*\), total \([0-9.]*\);.*/chan \1 open \2 stream \3 coll \4 cleanup \5 total \6;/p;s/.*compute.s first execute at \([0-9.]*\) of the stream, compute in execute \([0-9.]*\) (its thread.s CPU \([0-9.]*\)), the stream after the last execute \([0-9.]*\), compute.s sleeps for input \([0-9]*\) (\([0-9.]*\) ms) and for a slot \([0-9]*\) (\([0-9.]*\) ms), the writers after compute.s end \([0-9.]*\).*/first exec at \1, exec \2 cpu \3, after the last \4; sleeps in \5 \6 ms, slot \7 \8 ms; writers after \9/p' | tr '\n' ' ')" >&2
      done
    done
  done
  rm -rf "$W/ch_t"
  rm -f "$x"
}

# best and median of chanvar's lines (stdin) per threads, channels and name; the fraction of the
# library (best / best; median / median) and the ratio to before round by round (median, and the
# rounds in which it was faster)
chanvar_summary() {
  awk -F'"' "$AWK_SORTMED"'/commands_chanrounds/ {
      for (i = 1; i < NF; i++) {
        if ($i == "channels") sel = $(i + 2); if ($i == "what") w = $(i + 2)
        if ($i == "threads") { th = $(i + 1); gsub(/[:,]/, "", th) }
        if ($i == "round") { r = $(i + 1); gsub(/[:,]/, "", r) }
        if ($i == "seconds") { v = $(i + 1); gsub(/[:,}]/, "", v) }
      }
      k = "t" th " " sel; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k }
      if (!((k, w) in wn)) { wn[k, w] = 1; ws[k, ++nw[k]] = w }
      n[k, w]++; x[k, w, n[k, w]] = v * 1e3; at[k, w, r] = v * 1e3; rounds[k, r] = 1
    }
    END {
      printf "%-10s %-8s %3s %8s %8s %7s %7s %9s %6s\n", "set", "what", "n", "best", "median", "lib/b", "lib/m", "x before", "faster"
      for (q = 1; q <= nk; q++) {
        k = keys[q]
        m = n[k, "lib"]; for (i = 1; i <= m; i++) a[i] = x[k, "lib", i]; ml = sortmed(a, m); bl = a[1]
        for (u = 1; u <= nw[k]; u++) {
          w = ws[k, u]; m = n[k, w]; delete a
          for (i = 1; i <= m; i++) a[i] = x[k, w, i]; md = sortmed(a, m); b = a[1]
          nr = 0; fast = 0; delete rr
          for (rk in rounds) { split(rk, p, SUBSEP); if (p[1] != k) continue
            if (((k, w, p[2]) in at) && ((k, "before", p[2]) in at)) { rr[++nr] = at[k, w, p[2]] / at[k, "before", p[2]]; if (rr[nr] < 1) fast++ } }
          rm = nr ? sortmed(rr, nr) : 0
          printf "%-10s %-8s %3d %8.1f %8.1f %7.3f %7.3f %9.3f %3d/%-2d\n", k, w, m, b, md, bl / b, ml / md, rm, fast, nr
        }
      }
    }'
}

# Whether the vCPUs pair as hyper-threads of one host core: a thread pinned to each CPU of
# SIB_BASES (default "3 11") times a fixed FMA-bound loop alone and with a thread spinning the same
# loop on each other CPU (best of 3 each); a sibling shows as a ratio well above 1 (two threads of
# one core share its execution ports). Built with $CC (default cc); one line per base on stderr.
cpusib() {
  cat >"$W/sib.c" <<'EOF'
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
typedef float v8 __attribute__((vector_size(32)));
static atomic_int stop;
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static void pin(int c) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(c, &s);
  pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}
__attribute__((target("avx2,fma"))) static float work(long n) {
  v8 a[8], m;
  for (int l = 0; l < 8; l++) m[l] = 1.0000001f;
  for (int i = 0; i < 8; i++) a[i] = m * (float)(i + 1);
  for (long k = 0; k < n; k++)
    for (int i = 0; i < 8; i++) a[i] = a[i] * m + m;
  float s = 0;
  for (int i = 0; i < 8; i++) s += a[i][0];
  return s;
}
static void *spin(void *arg) {
  pin(*(int *)arg);
  volatile float sink = 0;
  while (!atomic_load(&stop)) sink += work(20000);
  return NULL;
}
static double timed(long n) {
  double best = 1e9;
  for (int r = 0; r < 3; r++) {
    double t = now();
    volatile float s = work(n);
    (void)s;
    t = now() - t;
    if (t < best) best = t;
  }
  return best;
}
int main(int argc, char **argv) {
  int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
  for (int a = 1; a < argc; a++) {
    int base = atoi(argv[a]);
    if (base >= ncpu) continue;
    pin(base);
    long n = 1500000;
    double alone = timed(n);
    printf("base %d (alone %.2f ms):", base, alone * 1e3);
    for (int j = 0; j < ncpu; j++) {
      if (j == base) continue;
      pthread_t t;
      atomic_store(&stop, 0);
      pthread_create(&t, NULL, spin, &j);
      struct timespec d = {0, 2000000};
      nanosleep(&d, NULL);
      double with = timed(n);
      atomic_store(&stop, 1);
      pthread_join(t, NULL);
      double again = timed(n);
      printf(" %d:%.2f", j, with / (again < alone ? again : alone));
    }
    printf("\n");
  }
  return 0;
}
EOF
  "${CC:-cc}" -O2 -pthread -o "$W/sib" "$W/sib.c" || return 1
  echo "bench_commands.sh: $(nproc) cores; threads per core $(lscpu | sed -n 's/^Thread(s) per core: *//p'); siblings of cpu0: $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list 2>/dev/null)" >&2
  "$W/sib" ${SIB_BASES:-3 11} >&2
}

# MIB MiB into FILES tmpfs files in CHUNK-byte writes by K processes at once, each its share of
# the files (as the command's writers): the wall time in ns
write_parallel() {
  local files=$1 mib=$2 chunk=$3 k=$4 i s e
  for i in $(seq "$k"); do mkdir -p "$W/wp$i"; done
  s=$(ns)
  for i in $(seq "$k"); do "$B" write "$W/wp$i" $((files / k)) $((mib / k)) "$chunk" >/dev/null & done
  wait
  e=$(ns)
  rm -rf "$W"/wp*
  echo $((e - s))
}

# where `channelize` spends its time (POLYRX_TIMING), the tmpfs write rate by several threads
chanuse() {
  local nsamp x th sel n f s e t
  echo "bench_commands.sh: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)" >&2
  # the cost of a system call: 1M one-byte reads and writes of dd
  s=$(ns)
  dd if=/dev/zero of=/dev/null bs=1 count=1000000 2>/dev/null
  e=$(ns)
  echo "{\"bench\":\"commands_syscall\",\"ns_per_call\":$(((e - s) / 2000000))}"
  # 256 MiB into 1024 files, by 1, 2, 4 and 8 processes at once (each its share of the files)
  for chunk in 4096 65536; do
    for n in 1 2 4 8; do
      t=$(write_parallel 1024 256 "$chunk" "$n")
      echo "{\"bench\":\"commands_write_threads\",\"files\":1024,\"mib\":256,\"chunk\":$chunk,\"threads\":$n,\"seconds\":$(awk -v t="$t" 'BEGIN { printf "%.4f", t / 1e9 }'),\"gb_per_s\":$(awk -v t="$t" 'BEGIN { printf "%.3f", 268435456 / t }')}"
    done
  done
  nsamp=$(scaled 16777216)
  x=$W/c.cf32
  "$P" gen -q -o "$x" -s 100M -n "$nsamp" --carrier f=1M,rs=100k --esn0 20
  for th in 1 0; do
    for sel in all 0-63; do
      local copt=() nsel=0
      [ "$sel" = all ] || copt=(-c "$sel") nsel=64
      for _ in $(seq "$REPS"); do
        rm -rf "$W/ch"
        s=$(ns)
        f=$(POLYRX_TIMING=1 "$P" channelize -q --backend cpu --threads "$th" -i "$x" -s 100M \
          -K 1024 "${copt[@]}" -o "$W/ch" 2>&1 | grep -E 'timing \(ms\)|cpu \(ms')
        e=$(ns)
        echo "threads $th channels $sel wall $(((e - s) / 1000000)) ms"
        echo "$f"
        # the library on the same work right after, in its own process and the command's block:
        # the run's "compute in execute" against it (on a host of two speeds, pairs of one round)
        "$B" chan "$x" cf32 1024 "$th" 1 "$nsel" |
          sed 's/.*"block":\([0-9]*\).*"seconds":\([0-9.]*\).*/library, block \1, own process: \2 s/'
      done
    done
  done
  # the library, all channels, in each block of LIB_BLOCKS (default 2^14 to 2^18): with one
  # worker its outputs in 1 buffer (which stays in the core's cache) or in 3 in turn (as the
  # command's slots), and with all cores in 1; alternating processes, REPS rounds: what cycling
  # through more output than a core's cache holds costs compute without any other thread, and
  # the library's best block
  local blk
  for _ in $(seq "$REPS"); do
    for blk in ${LIB_BLOCKS:-16384 32768 65536 131072 262144}; do
      for n in 1 3; do
        BENCH_CHAN_SLOTS=$n "$B" chan "$x" cf32 1024 1 1 0 "$blk" |
          sed 's/.*"block":\([0-9]*\),"slots":\([0-9]*\).*"seconds":\([0-9.]*\).*/library, one thread, block \1, \2 output buffer(s): \3 s/'
      done
      "$B" chan "$x" cf32 1024 0 1 0 "$blk" |
        sed 's/.*"block":\([0-9]*\),"slots":\([0-9]*\).*"seconds":\([0-9.]*\).*/library, all cores, block \1, \2 output buffer(s): \3 s/'
    done
  done
  # the library with one worker in the command's block, its outputs in 3 buffers in turn: alone,
  # with a thread reading each block's outputs after it (as the writers do), with 10 threads
  # spinning beside it (the command's other busy threads), and with both; alternating, REPS rounds
  local side
  for _ in $(seq "$REPS"); do
    for side in "0 0" "1 0" "0 10" "1 10"; do
      BENCH_CHAN_SLOTS=3 BENCH_CHAN_READER=${side% *} BENCH_CHAN_BUSY=${side#* } \
        "$B" chan "$x" cf32 1024 1 1 0 |
        sed 's/.*"block":\([0-9]*\),"slots":\([0-9]*\),"reader":\([0-9]*\),"busy":\([0-9]*\).*"seconds":\([0-9.]*\).*/library, one thread, block \1, \2 buffers, reader \3, busy threads \4: \5 s/'
    done
  done
  # the variants (VARIANTS="NAME=SETTING[,SETTING] ...", a setting an environment variable's
  # VAR=VALUE, an option's --OPTION=VALUE or BIN=PATH, another polyrx binary): all channels, --threads 1 and 0, alternating with
  # the plain runs
  local v name env args a
  for th in 1 0; do
    for _ in $(seq "$REPS"); do
      for v in "plain=" ${VARIANTS:-}; do
        name=${v%%=*}
        env=${v#*=}
        args=()
        local bin=$P
        for a in ${env//,/ }; do
          [[ $a == --* ]] && args+=("$a")
          [[ $a == BIN=* ]] && bin=${a#BIN=}
        done
        env=$(tr ',' '\n' <<<"$env" | grep -v -e '^--' -e '^BIN=' | tr '\n' ' ')
        rm -rf "$W/ch"
        s=$(ns)
        # shellcheck disable=SC2086
        f=$(env $env POLYRX_TIMING=1 "$bin" channelize -q --backend cpu --threads "$th" -i "$x" \
          -s 100M -K 1024 "${args[@]}" -o "$W/ch" 2>&1 | grep -E 'timing \(ms\)|cpu \(ms')
        e=$(ns)
        echo "variant $name threads $th channels all wall $(((e - s) / 1000000)) ms"
        echo "$f"
      done
    done
  done
  rm -rf "$W/ch" "$x"
}

# The GPU commands' start, this build against $BEFORE's (a build folder with its polyrx), cold and
# held (HOLDER: bench/cuda_startup_probe.cu built, run as `HOLDER --hold` beside the second set)
gpustart() {
  local before=${BEFORE:?gpustart: set BEFORE=path/to/the/other/build}/polyrx
  local n=$((1 << ${GS_LOG2:-28})) be=${GS_BACKEND:-cuda} fs=$RX_FS x=$W/g.ci16 xr=$W/rx.ci16 rd
  echo "bench_commands.sh: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" >&2
  "$P" gen -q -o "$x" -F ci16 -s 1G -n "$n" --carrier f=1M,rs=1M --esn0 20 || exit 1
  rx_capture "$xr" "$n" # the rx mode's input
  local args=("${RX_ARGS[@]}")
  rd=$(awk -v n="$n" -v t="$(best_of cat "$x")" 'BEGIN { printf "%.3f", n / t / 1e9 }')
  json "{\"bench\":\"commands_read_cat\",\"bytes\":$((4 * n)),\"gsps\":$rd}"
  # a command of both builds, alternating, REPS each (best of); the outputs of the last pair kept;
  # NS: the input's samples (default n), for the rates
  # PB: the "before" binary (default BEFORE's), AENV: environment settings of the "after" runs
  pair() { # name, then the command's arguments ("@OUT@": the output path)
    local name=$1 tb=0 ta=0 s e t which bin a
    shift
    for _ in $(seq "$REPS"); do
      for which in b a; do
        # shellcheck disable=SC2206
        bin=(env ${AENV:-} "$P")
        [ "$which" = b ] && bin=("${PB:-$before}")
        rm -rf "$W/o_$which" "$W/o_$which.json"
        local cmd=()
        for a in "$@"; do cmd+=("${a//@OUT@/$W/o_$which}"); done
        s=$(ns)
        "${bin[@]}" "${cmd[@]}" >/dev/null 2>"$W/o_$which.err" ||
          { echo "gpustart: $which failed: $(tail -1 "$W/o_$which.err")" >&2; return 1; }
        e=$(ns)
        t=$((e - s))
        if [ "$which" = b ]; then { [ "$tb" = 0 ] || [ "$t" -lt "$tb" ]; } && tb=$t; fi
        if [ "$which" = a ]; then { [ "$ta" = 0 ] || [ "$t" -lt "$ta" ]; } && ta=$t; fi
      done
    done
    local same=yes tl
    diff -r -q -x '*.json' "$W/o_b" "$W/o_a" >/dev/null || same=no
    if [ -f "$W/o_a.json" ]; then # rx: the report's carrier figures too
      python3 -c 'import json,sys
a,b=([{k:v for k,v in c.items() if k!="file"} for c in json.load(open(f))["carriers"]] for f in sys.argv[1:])
sys.exit(a!=b)' \
        "$W/o_b.json" "$W/o_a.json" || same=no
    fi
    local cmd=()
    for a in "$@"; do cmd+=("${a//@OUT@/$W/o_a}"); done
    # shellcheck disable=SC2086
    tl=$(env ${AENV:-} POLYRX_TIMING=1 "$P" "${cmd[@]}" 2>&1 >/dev/null | grep -E 'timing|set-up|in place' |
      sed 's/"//g' | tr '\n' ' ')
    awk -v name="$name" -v set="$SET" -v n="${NS:-$n}" -v tb="$tb" -v ta="$ta" -v rd="$rd" -v same="$same" \
      -v tl="$tl" 'BEGIN { b = tb / 1e9; a = ta / 1e9
      printf "{\"bench\":\"commands_gpu_start\",\"case\":\"%s\",\"set\":\"%s\",\"samples\":%d,\"before_s\":%.4f,\"after_s\":%.4f,\"before_of_cat\":%.3f,\"after_of_cat\":%.3f,\"same\":\"%s\",\"timing\":\"%s\"}\n", name, set, n, b, a, n / b / 1e9 / rd, n / a / 1e9 / rd, same, tl
      printf "%-5s %-22s before %7.1f ms %5.2f  after %7.1f ms %5.2f of cat  same %s\n", set, name, b * 1e3, n / b / 1e9 / rd, a * 1e3, n / a / 1e9 / rd, same > "/dev/stderr" }'
    rm -rf "$W/o_a" "$W/o_b" "$W"/o_*.json "$W"/o_*.err
  }
  one_set() {
    local fmt v
    for fmt in cf32 cf16 ci16; do
      pair "channelize_64_$fmt" channelize -q --backend "$be" -F ci16 -i "$x" -s 1G -K 1024 \
        -c 0-63 --out-format "$fmt" -o @OUT@
    done
    pair rx_64 rx -q --backend "$be" -F ci16 -i "$xr" -s $fs -K 1024 "${args[@]}" -o @OUT@ \
      --report @OUT@.json
    head -c $((4 << 20)) "$x" >"$W/s.ci16"
    NS=$((1 << 20)) pair channelize_64_4MiB channelize -q --backend "$be" -F ci16 -i "$W/s.ci16" -s 1G -K 1024 \
      -c 0-63 -o @OUT@
    for v in ${VARIANTS:-}; do # this build with an environment setting, against no setting
      PB=$P AENV=${v#*=} pair "rx_64_${v%%=*}" rx -q --backend "$be" -F ci16 -i "$xr" -s $fs \
        -K 1024 "${args[@]}" -o @OUT@ --report @OUT@.json
    done
  }
  SET=cold one_set
  if [ -n "${HOLDER:-}" ]; then
    "$HOLDER" --hold 600 >"$W/holder.log" 2>&1 &
    local hp=$!
    for _ in $(seq 100); do grep -q ready "$W/holder.log" && break; sleep 0.1; done
    SET=held one_set
    kill "$hp"
    wait "$hp" 2>/dev/null
  fi
  rm -f "$x" "$xr" "$W/s.ci16"
}

# the machine's write rate (GB/s) of MIB MiB into FILES tmpfs files in 1 MiB writes: the best of
# one writer and of min(8, FILES) writers at once, each its share of the files (as the command's
# writers)
write_rate() {
  local files=$1 mib=$2 best=0 k t r
  for k in 1 8; do
    [ "$k" -gt "$files" ] && continue
    t=$(write_parallel "$files" "$mib" 1048576 "$k")
    r=$(awk -v b=$(((mib / k) * k)) -v t="$t" 'BEGIN { printf "%.3f", b * 1048576 / t }')
    awk -v a="$r" -v b="$best" 'BEGIN { exit !(a > b) }' && best=$r
  done
  echo "$best"
}

# The GPU commands run by a resident `polyrx serve` (started here on a socket of its own) against
# the same commands in their own process, cold (POLYRX_SERVE=off), alternating
serve() {
  local n=$((1 << ${GS_LOG2:-28})) be=${GS_BACKEND:-cuda} fs=$RX_FS x=$W/g.ci16 xr=$W/rx.ci16
  local h2d d2h rd sp i
  echo "bench_commands.sh: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" >&2
  read -r h2d d2h <<<"$(pcie_rates)"
  json "{\"bench\":\"commands_pcie\",\"h2d_GBps\":$h2d,\"d2h_GBps\":$d2h}"
  "$P" gen -q -o "$x" -F ci16 -s 1G -n "$n" --carrier f=1M,rs=1M --esn0 20 || exit 1
  rx_capture "$xr" "$n"
  local args=("${RX_ARGS[@]}")
  rd=$(awk -v n="$n" -v t="$(best_of cat "$x")" 'BEGIN { printf "%.3f", n / t / 1e9 }')
  json "{\"bench\":\"commands_read_cat\",\"bytes\":$((4 * n)),\"gsps\":$rd}"
  mkdir -m 700 "$W/sock"
  export POLYRX_SERVE_SOCKET=$W/sock/serve.sock
  local t0
  t0=$(ns)
  "$P" serve 2>"$W/serve.log" &
  sp=$!
  for i in $(seq 600); do "$P" serve --status >/dev/null 2>&1 && break; sleep 0.05; done
  echo "serve: ready after $((($(ns) - t0) / 1000000)) ms: $(head -1 "$W/serve.log")" >&2
  # one case: NAME CHANNELS OUT_BYTES_PER_SAMPLE (0: no write floor), then the command's
  # arguments ("@OUT@": the output path); the first served run apart, then REPS of cold and
  # served alternating (best of each); the outputs of the last pair compared
  sv() {
    local name=$1 nch=$2 osz=$3 tc=0 ts=0 t1 s e t m wr=0
    shift 3
    run() { # mode (off|require), output name: wall ns
      local cmd=() a
      for a in "${@:3}"; do cmd+=("${a//@OUT@/$W/o_$2}"); done
      rm -rf "$W/o_$2" "$W/o_$2.json"
      s=$(ns)
      POLYRX_SERVE=$1 "$P" "${cmd[@]}" >/dev/null 2>"$W/o_$2.err" ||
        { echo "serve: $name $1 failed: $(tail -1 "$W/o_$2.err")" >&2; return 1; }
      e=$(ns)
      echo $((e - s))
    }
    if [ "$osz" != 0 ]; then
      local mib=$(((n / 512) * nch * osz >> 20))
      wr=$(write_rate "$nch" "$mib")
    fi
    t1=$(run require s "$@") || return 1
    for _ in $(seq "$REPS"); do
      for m in off require; do
        t=$(run "$m" "${m:0:1}" "$@") || return 1
        if [ "$m" = off ]; then { [ "$tc" = 0 ] || [ "$t" -lt "$tc" ]; } && tc=$t; fi
        if [ "$m" = require ]; then { [ "$ts" = 0 ] || [ "$t" -lt "$ts" ]; } && ts=$t; fi
      done
    done
    local same=yes tl cmd=() a
    diff -r -q -x '*.json' "$W/o_o" "$W/o_r" >/dev/null || same=no
    if [ -f "$W/o_r.json" ]; then # rx: the report's carrier figures too
      python3 -c 'import json,sys
a,b=([{k:v for k,v in c.items() if k!="file"} for c in json.load(open(f))["carriers"]] for f in sys.argv[1:])
sys.exit(a!=b)' "$W/o_o.json" "$W/o_r.json" || same=no
    fi
    for a in "$@"; do cmd+=("${a//@OUT@/$W/o_r}"); done
    timing() { # mode (require|off): the run's POLYRX_TIMING lines, on one line
      POLYRX_SERVE=$1 POLYRX_TIMING=1 "$P" "${cmd[@]}" 2>&1 >/dev/null | grep -E 'timing' |
        sed 's/"//g' | tr '\n' ' '
      rm -rf "$W/o_r" "$W/o_r.json"
    }
    local tlc
    tl=$(timing require)
    tlc=$(timing off)
    rm -rf "$W"/o_*
    # floors in Gsamples/s of input: 4 bytes per ci16 sample in, nch * osz / 512 out
    awk -v name="$name" -v n="$n" -v tc="$tc" -v ts="$ts" -v t1="$t1" -v h="$h2d" -v d="$d2h" \
      -v r="$rd" -v w="$wr" -v c="$nch" -v o="$osz" -v same="$same" -v tl="$tl" -v tlc="$tlc" 'BEGIN {
      ob = c * o / 512; p = h / 4; if (ob > 0 && d / ob < p) p = d / ob
      if (h <= 0 || d <= 0) p = 1e9 # not measured: no bound
      f = p < r ? p : r; ww = ob > 0 && w > 0 ? w / ob : 1e9; if (ww < f) f = ww
      c0 = n / tc; s0 = n / ts; wo = ww > 1e8 ? 0 : ww
      printf "{\"bench\":\"commands_serve\",\"case\":\"%s\",\"samples\":%d,\"cold_s\":%.4f,\"served_s\":%.4f,\"first_served_s\":%.4f,\"pcie_gsps\":%.3f,\"cat_gsps\":%.3f,\"write_gsps\":%.3f,\"floor_gsps\":%.3f,\"cold_of_floor\":%.3f,\"served_of_floor\":%.3f,\"same\":\"%s\",\"served_timing\":\"%s\",\"cold_timing\":\"%s\"}\n", name, n, tc / 1e9, ts / 1e9, t1 / 1e9, p, r, wo, f, c0 / f, s0 / f, same, tl, tlc
      printf "%-22s cold %7.1f ms %5.2f  served %7.1f ms %5.2f (first %7.1f)  floor %6.3f Gsps  same %s\n", name, tc / 1e6, c0 / f, ts / 1e6, s0 / f, t1 / 1e6, f, same > "/dev/stderr" }'
  }
  local fmt
  osz() { if [ "$1" = cf32 ]; then echo 8; else echo 4; fi; } # bytes per output sample
  for fmt in cf32 cf16 ci16; do
    [ -n "${SERVE_RX_ONLY:-}" ] && break
    sv "channelize_64_$fmt" 64 "$(osz $fmt)" channelize -q --backend "$be" -F ci16 -i "$x" -s 1G \
      -K 1024 -c 0-63 --out-format "$fmt" -o @OUT@
  done
  for fmt in cf32 cf16 ci16; do
    [ -n "${SERVE_RX_ONLY:-}" ] && break
    sv "channelize_1024_$fmt" 1024 "$(osz $fmt)" channelize -q --backend "$be" -F ci16 -i "$x" \
      -s 1G -K 1024 --out-format "$fmt" -o @OUT@
  done
  # (RX_CARRIERS=1024: a carrier listed at every channel centre, as in rx)
  sv "rx_${RX_CARRIERS:-64}" "${RX_CARRIERS:-64}" 0 rx -q --backend "$be" -F ci16 -i "$xr" -s $fs -K 1024 "${args[@]}" \
    -o @OUT@ --report @OUT@.json
  "$P" serve --status >&2
  "$P" serve --stop
  wait "$sp"
  unset POLYRX_SERVE_SOCKET
  rm -f "$x" "$xr"
}

# served `channelize` of this build against $BEFORE's, variants of this build beside them
# Waits (up to 30 s) until two servers answer: socket and polyrx of the first, then the second's
servers_wait() {
  for _ in $(seq 600); do
    POLYRX_SERVE_SOCKET=$1 "$2" serve --status >/dev/null 2>&1 &&
      POLYRX_SERVE_SOCKET=$3 "$4" serve --status >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  return 1
}

serveab() {
  local n=$((1 << ${GS_LOG2:-28})) x=$W/g.ci16 before=${BEFORE:?serveab: set BEFORE=a build folder}
  local rd sel fmt nch osz mib k t wbest wl v name env best m r be=${GS_BACKEND:-cuda}
  echo "bench_commands.sh: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  "$P" gen -q -o "$x" -F ci16 -s 1G -n "$n" --carrier f=1M,rs=1M --esn0 20 || exit 1
  rd=$(awk -v n="$n" -v t="$(best_of cat "$x")" 'BEGIN { printf "%.3f", n / t / 1e9 }')
  json "{\"bench\":\"commands_read_cat\",\"bytes\":$((4 * n)),\"gsps\":$rd}"
  mkdir -m 700 "$W/sa" "$W/sb"
  POLYRX_SERVE_SOCKET=$W/sa/s.sock "$P" serve 2>"$W/sa.log" &
  local pa=$!
  POLYRX_SERVE_SOCKET=$W/sb/s.sock "$before/polyrx" serve 2>"$W/sb.log" &
  local pb=$!
  servers_wait "$W/sa/s.sock" "$P" "$W/sb/s.sock" "$before/polyrx"
  # one served run: configuration name (before, after or a variant), output name, environment
  one() {
    local exe=$P sock=$W/sa/s.sock s e
    [ "$1" = before ] && exe=$before/polyrx sock=$W/sb/s.sock
    rm -rf "$W/o_$2"
    s=$(ns)
    # shellcheck disable=SC2086
    env $3 POLYRX_SERVE=require POLYRX_SERVE_SOCKET=$sock "$exe" channelize -q --backend "$be" \
      -F ci16 -i "$x" -s 1G -K 1024 "${copt[@]}" --out-format "$fmt" -o "$W/o_$2" \
      2>"$W/o.err" || { echo "serveab: $1 failed: $(tail -1 "$W/o.err")" >&2; return 1; }
    e=$(ns)
    echo $((e - s))
  }
  for sel in ${SERVEAB_SEL:-all}; do
    local copt=()
    nch=1024
    [ "$sel" = all ] || copt=(-c "$sel") nch=64
    for fmt in cf32 cf16 ci16; do
      osz=4
      [ "$fmt" = cf32 ] && osz=8
      mib=$(((n / 512) * nch * osz >> 20))
      wbest=0 wl=""
      for k in 8 12 16; do
        [ "$k" -gt "$nch" ] && continue
        t=$(write_parallel "$nch" "$mib" 1048576 "$k")
        r=$(awk -v b=$(((mib / k) * k)) -v t="$t" -v o="$osz" -v c="$nch" \
          'BEGIN { printf "%.3f", b * 1048576 / t / (c * o / 512) }') # Gsps of input
        wl="$wl w$k=$r"
        awk -v a="$r" -v b="$wbest" 'BEGIN { exit !(a > b) }' && wbest=$r
      done
      declare -A best=()
      local vars=() cfgs
      read -r -a vars <<<"${VARIANTS:-}"
      cfgs=("before=" "after=" "${vars[@]}")
      for _ in $(seq "$REPS"); do
        for v in "${cfgs[@]}"; do
          name=${v%%=*} env=${v#*=}
          m=$name
          [ "$name" = before ] || [ "$name" = after ] || m=var
          t=$(one "$m" "$name" "${env//,/ }") || return 1
          { [ -z "${best[$name]:-}" ] || [ "$t" -lt "${best[$name]}" ]; } && best[$name]=$t
        done
      done
      # the samples byte for byte; the metadata's power may differ in its last digits (the CUDA
      # backend's sums on the device add in another order), and with it the metadata's hashes
      # in the collection: the largest difference, dB
      local same=no dpow
      diff -r -q -x '*.sigmf-meta' -x '*.sigmf-collection' "$W/o_before" "$W/o_after" >/dev/null &&
        same=yes
      dpow=$(python3 -c 'import glob, json, os, sys
m = 0.0
for f in glob.glob(sys.argv[1] + "/*.sigmf-meta"):
    a = json.load(open(f))["global"]["polyrx:power_dbfs"]
    b = json.load(open(os.path.join(sys.argv[2], os.path.basename(f))))["global"]["polyrx:power_dbfs"]
    m = max(m, abs(a - b))
print("%.2g" % m)' "$W/o_before" "$W/o_after" 2>/dev/null || echo "?")
      local tl
      one after t POLYRX_TIMING=1 >/dev/null || return 1
      tl=$(sed -n '/timing (ms)/s/.*stream \([0-9.]*\).*/stream \1 ms;/p
        s/.* writer0 \([0-9.]*\) [0-9]* [0-9]* [0-9]* (power sums \([0-9.]*\), appends \([0-9.]*\),.*/writer0 cpu \1, power sums \2, appends \3;/p' "$W/o.err" | tr '\n' ' ')
      tl="$tl $(grep -o ' writer[0-9]* ' "$W/o.err" | wc -l) writers"
      rm -rf "$W"/o_*
      for v in "${cfgs[@]}"; do
        name=${v%%=*}
        awk -v sel="$sel" -v fmt="$fmt" -v name="$name" -v n="$n" -v t="${best[$name]}" \
          -v r="$rd" -v w="$wbest" -v tb="${best[before]}" 'BEGIN {
          f = r < w ? r : w; g = n / t
          printf "{\"bench\":\"commands_serveab\",\"channels\":\"%s\",\"format\":\"%s\",\"config\":\"%s\",\"seconds\":%.4f,\"floor_gsps\":%.3f,\"of_floor\":%.3f,\"of_before\":%.3f}\n", sel, fmt, name, t / 1e9, f, g / f, tb / t }'
      done
      echo "serveab $sel $fmt: cat $rd Gsps, write$wl (best $wbest), same samples $same, power within $dpow dB; $tl" >&2
      unset best
    done
  done
  POLYRX_SERVE_SOCKET=$W/sa/s.sock "$P" serve --stop
  POLYRX_SERVE_SOCKET=$W/sb/s.sock "$before/polyrx" serve --stop
  wait "$pa" "$pb"
  rm -f "$x"
}

# this build's `channelize` against $BEFORE's, byte for byte
chansame() {
  local before=${BEFORE:?chansame: set BEFORE=path/to/the/other/polyrx} bad=0 n=0
  "$P" gen -q -o "$W/x.cf32" -s 1M -n 3000000 --carrier f=100k,rs=50k --carrier f=-200k,rs=20k \
    --esn0 15
  "$P" gen -q -o "$W/x.ci16" -F ci16 -s 1M -n 3000001 --carrier f=10k,rs=50k --esn0 15
  "$P" channelize -q -i "$W/x.cf32" -s 1M -K 2 --oversample 1 --cutoff 0.45 -c 0 -o "$W/sig"
  local sig=$W/sig/ch0000.sigmf-meta
  same() { # name, then the arguments (an input redirection as "<" FILE at the end)
    local name=$1 rb ra
    shift
    local args=("$@") in=/dev/null
    local last=$((${#args[@]} - 1))
    if [ "$last" -ge 1 ] && [ "${args[last - 1]}" = "<" ]; then
      in=${args[last]}
      args=("${args[@]:0:last-1}")
    fi
    rm -rf "$W/b" "$W/a"
    "$before" channelize -q "${args[@]}" -o "$W/b" <"$in" 2>"$W/b.err"
    rb=$?
    "$P" channelize -q "${args[@]}" -o "$W/a" <"$in" 2>"$W/a.err"
    ra=$?
    n=$((n + 1))
    if [ "$rb" = "$ra" ] && diff -r -q "$W/b" "$W/a" >/dev/null && cmp -s "$W/b.err" "$W/a.err"; then
      echo "same   $name ($(find "$W/a" -type f | wc -l) files)" >&2
    else
      echo "DIFFER $name (exit $rb / $ra)" >&2
      bad=$((bad + 1))
    fi
  }
  same cf32_K64 -i "$W/x.cf32" -s 1M -K 64
  local f b
  for f in cf32 cf16 ci16; do same "out_$f" -i "$W/x.cf32" -s 1M -K 256 --out-format "$f"; done
  same ci16_in -i "$W/x.ci16" -F ci16 -s 1M -K 128 -c 3,7,100-120
  same ci16_in_cf16_critical -i "$W/x.ci16" -F ci16 -s 1M -K 128 --out-format cf16 --oversample 1
  for b in 4096 10000 65536 1048576; do same "block_$b" -i "$W/x.cf32" -s 1M -K 64 --block "$b"; done
  same stdin -i - -s 1M -K 64 -c 0-9 "<" "$W/x.cf32"
  same stdin_ci16 -i - -F ci16 -s 1M -K 32 --out-format ci16 "<" "$W/x.ci16"
  same sigmf -i "$sig" -K 16
  same sigmf_cf16 -i "$sig" -K 16 -c 2,5 --out-format cf16
  for b in 0 1 2; do same "threads_$b" -i "$W/x.cf32" -s 1M -K 64 -t "$b"; done
  POLYRX_PIPELINE=serial same serial -i "$W/x.cf32" -s 1M -K 64
  same K1024 -i "$W/x.cf32" -s 1M -K 1024
  # the power sums' groups across blocks: an odd lead (-P 7: 7 outputs dropped), D = 500, inputs
  # of 5 x 2^16 samples (a full last block, then the end), 3 x 2^16 + 1 and 100000 samples
  same P7_K16 -i "$W/x.cf32" -s 1M -K 16 -P 7
  same K1000 -i "$W/x.cf32" -s 1M -K 1000 -c 0-99,500-520
  head -c $((5 * 65536 * 8)) "$W/x.cf32" >"$W/x5.cf32"
  head -c $(((3 * 65536 + 1) * 8)) "$W/x.cf32" >"$W/x3.cf32"
  head -c $((100000 * 8)) "$W/x.cf32" >"$W/x1.cf32"
  same len5x65536 -i "$W/x5.cf32" -s 1M -K 64
  same len5x65536_P7 -i "$W/x5.cf32" -s 1M -K 16 -P 7
  same len5x65536_stdin -i - -s 1M -K 16 -P 7 "<" "$W/x5.cf32"
  same len3x65536p1_P7 -i "$W/x3.cf32" -s 1M -K 16 -P 7
  same len100000_P7 -i "$W/x1.cf32" -s 1M -K 32 -P 7 --out-format cf16
  # outputs that overflow float32 (finite input at 3.4e38), zeroed before they are summed
  python3 -c 'import math, struct, sys
sys.stdout.buffer.write(b"".join(struct.pack("<ff", *((3.4e38, 3.4e38) if 150000 <= n < 150040 or 270000 <= n < 270003 else (0.5 * math.cos(0.3 * n), 0.5 * math.sin(0.3 * n)))) for n in range(300000)))' >"$W/huge.cf32"
  same overflow_P7 -i "$W/huge.cf32" -s 1M -K 16 -P 7
  same K4096_critical -i "$W/x.cf32" -s 1M -K 4096 --oversample 1 -c 0-99
  "$before" channelize -q -i "$W/x.cf32" -s 1M -K 64 -c 1,5,9 -o - >"$W/so_b"
  "$P" channelize -q -i "$W/x.cf32" -s 1M -K 64 -c 1,5,9 -o - >"$W/so_a"
  n=$((n + 1))
  if cmp -s "$W/so_b" "$W/so_a"; then echo "same   stdout" >&2; else echo "DIFFER stdout" >&2; bad=$((bad + 1)); fi
  "$before" channelize -q -i "$W/x.cf32" -s 1M -K 16 -c 0-3 -o "$W/arb.sigmf"
  "$P" channelize -q -i "$W/x.cf32" -s 1M -K 16 -c 0-3 -o "$W/ara.sigmf"
  mkdir -p "$W/xa" "$W/xb"
  tar -xf "$W/arb.sigmf" -C "$W/xb" && tar -xf "$W/ara.sigmf" -C "$W/xa"
  n=$((n + 1))
  if diff -r -q "$W/xb" "$W/xa" >/dev/null; then echo "same   archive" >&2; else echo "DIFFER archive" >&2; bad=$((bad + 1)); fi
  echo "{\"bench\":\"commands_channelize_same\",\"configurations\":$n,\"differ\":$bad}"
  [ "$bad" = 0 ]
}

# served `rx` of this build against BEFORE's, and both cold, alternating
serverx() {
  local n=$((1 << ${GS_LOG2:-28})) be=${GS_BACKEND:-cuda} fs=$RX_FS xr=$W/rx.ci16
  local before=${BEFORE:?serverx: set BEFORE=a build folder} h2d d2h rd nc i b
  echo "bench_commands.sh: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" >&2
  read -r h2d d2h <<<"$(pcie_rates)"
  json "{\"bench\":\"commands_pcie\",\"h2d_GBps\":$h2d,\"d2h_GBps\":$d2h}"
  RX_CARRIERS=64 rx_capture "$xr" "$n"
  local args64=("${RX_ARGS[@]}") args1024=()
  for i in $(seq -512 511); do args1024+=(--carrier "f=$((i * 6400)),rs=2400,diff"); done
  rd=$(awk -v n="$n" -v t="$(best_of cat "$xr")" 'BEGIN { printf "%.3f", n / t / 1e9 }')
  json "{\"bench\":\"commands_read_cat\",\"bytes\":$((4 * n)),\"gsps\":$rd}"
  declare -A bin=([before]="$before/polyrx" [after]="$P")
  for b in before after; do
    mkdir -m 700 "$W/s_$b"
    POLYRX_SERVE_SOCKET=$W/s_$b/s.sock "${bin[$b]}" serve -q 2>"$W/s_$b.log" &
  done
  servers_wait "$W/s_before/s.sock" "$before/polyrx" "$W/s_after/s.sock" "$P"
  # one run: build, mode (off|require), output name, then the carriers' arguments: wall ns
  one() {
    local s e
    rm -rf "$W/o_$3" "$W/o_$3.json"
    s=$(ns)
    POLYRX_SERVE_SOCKET=$W/s_$1/s.sock POLYRX_SERVE=$2 "${bin[$1]}" rx -q --backend "$be" -F ci16 \
      -i "$xr" -s $fs -K 1024 "${@:4}" -o "$W/o_$3" --report "$W/o_$3.json" >/dev/null \
      2>"$W/o_$3.err" || { echo "serverx: $1 $2 failed: $(tail -1 "$W/o_$3.err")" >&2; return 1; }
    e=$(ns)
    echo $((e - s))
  }
  for nc in ${SERVERX_CARRIERS:-64 1024}; do
    local -n cargs="args$nc"
    declare -A best=() first=()
    for b in before after; do first[$b]=$(one $b require "${b}_s" "${cargs[@]}") || return 1; done
    for _ in $(seq "$REPS"); do
      for b in before after; do
        for m in off require; do
          local t
          t=$(one $b $m "${b}_${m:0:1}" "${cargs[@]}") || return 1
          { [ -z "${best[$b$m]:-}" ] || [ "$t" -lt "${best[$b$m]}" ]; } && best[$b$m]=$t
        done
      done
    done
    local same=yes
    diff -r -q "$W/o_before_o" "$W/o_after_r" >/dev/null || same=no
    python3 -c 'import json,sys
a,b=([{k:v for k,v in c.items() if k!="file"} for c in json.load(open(f))["carriers"]] for f in sys.argv[1:])
sys.exit(a!=b)' "$W/o_before_o.json" "$W/o_after_r.json" || same=no
    local tl_b tl_a
    for b in before after; do
      local tl
      tl=$(POLYRX_SERVE_SOCKET=$W/s_$b/s.sock POLYRX_SERVE=require POLYRX_TIMING=1 "${bin[$b]}" rx -q \
        --backend "$be" -F ci16 -i "$xr" -s $fs -K 1024 "${cargs[@]}" -o "$W/o_t" \
        --report "$W/o_t.json" 2>&1 >/dev/null | grep -E 'timing|set-up|kept' | sed 's/"//g' |
        tr '\n' ' ')
      rm -rf "$W/o_t" "$W/o_t.json"
      if [ $b = before ]; then tl_b=$tl; else tl_a=$tl; fi
    done
    awk -v nc="$nc" -v n="$n" -v h="$h2d" -v r="$rd" -v same="$same" -v tb="$tl_b" -v ta="$tl_a" \
      -v bo="${best[beforeoff]}" -v br="${best[beforerequire]}" -v ao="${best[afteroff]}" \
      -v ar="${best[afterrequire]}" -v bf="${first[before]}" -v af="${first[after]}" 'BEGIN {
      p = h > 0 ? h / 4 : 1e9; f = p < r ? p : r
      printf "{\"bench\":\"commands_serverx\",\"carriers\":%d,\"samples\":%d,\"floor_gsps\":%.3f,\"cat_gsps\":%.3f,\"before_cold_s\":%.4f,\"before_served_s\":%.4f,\"before_first_served_s\":%.4f,\"after_cold_s\":%.4f,\"after_served_s\":%.4f,\"after_first_served_s\":%.4f,\"before_served_of_floor\":%.3f,\"after_served_of_floor\":%.3f,\"after_cold_of_floor\":%.3f,\"same\":\"%s\",\"before_timing\":\"%s\",\"after_timing\":\"%s\"}\n", nc, n, f, r, bo / 1e9, br / 1e9, bf / 1e9, ao / 1e9, ar / 1e9, af / 1e9, n / br / f, n / ar / f, n / ao / f, same, tb, ta
      printf "rx_%-5d before: cold %7.1f served %7.1f (first %7.1f, %.2f of floor)  after: cold %7.1f served %7.1f (first %7.1f, %.2f of floor)  floor %.3f Gsps  same %s\n", nc, bo / 1e6, br / 1e6, bf / 1e6, n / br / f, ao / 1e6, ar / 1e6, af / 1e6, n / ar / f, f, same > "/dev/stderr" }'
    unset -n cargs
  done
  for b in before after; do POLYRX_SERVE_SOCKET=$W/s_$b/s.sock "${bin[$b]}" serve --stop; done
  wait
  rm -f "$xr"
}

case "$MODE" in
cpu) cpu ;;
chansame) chansame ;;
chanab) chanab ;;
chanuse) chanuse ;;
chanrounds) chanrounds ;;
chanrounds_summary | chanrows_summary) chanrounds_summary ;;
demodrounds_summary) demodrounds_summary ;;
chanrows) chanrows ;;
chanstream) chanstream ;;
chanvar) chanvar ;;
chanvar_summary) chanvar_summary ;;
demodrounds) demodrounds ;;
demodvar) demodvar ;;
demodthreads) demodthreads ;;
demodthreads_summary) demodthreads_summary ;;
demodvar_summary) demodvar_summary ;;
cpusib) cpusib ;;
gpu) gpu ;;
rx) rx ;;
gpustart) gpustart ;;
serve) serve ;;
serveab) serveab ;;
serverx) serverx ;;
sweep) sweep ;;
*) echo "usage: bench_commands.sh [BUILD_DIR] [cpu|gpu|rx|sweep|chanab|chansame|chanuse|chanrounds|chanrows|chanstream|chanvar|demodrounds|demodthreads|demodvar|cpusib|gpustart|serve|serveab|serverx]" >&2; exit 2 ;;
esac
