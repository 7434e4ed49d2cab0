#!/usr/bin/env bash
# The CPU benchmarks (`make bench`): channelizer, QPSK demodulator and generator, each against
# liquid-dsp in the same run. Each prints JSON lines, then its table; the output also goes to
# BUILD/bench-cpu.jsonl. The GPU benchmark needs a GPU machine: scripts/gpu_check.sh.
#
#   bench/run_cpu.sh [BUILD]     BUILD: the build folder (default build)
set -euo pipefail
build=${1:-build}
benches=(bench_chan_cpu bench_qpsk bench_sim)
for b in "${benches[@]}"; do
  if [ ! -x "$build/$b" ]; then
    echo "run_cpu.sh: $build/$b is missing (build first: make build)" >&2
    exit 1
  fi
done
log="$build/bench-cpu.jsonl"
: >"$log"
for b in "${benches[@]}"; do
  echo "== $b"
  "$build/$b" | tee -a "$log"
done
