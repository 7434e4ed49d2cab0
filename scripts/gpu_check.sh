#!/usr/bin/env bash
# The GPU channelizer's and demodulator bank's check on a machine with an NVIDIA GPU, in one go:
# configure and build (no -march=native; the CUDA module's kernel count and size), run the GPU
# tests, the benchmarks and the CuPy peer, the GPU tests again (reduced set) under
# compute-sanitizer memcheck and racecheck, then the whole test suite (where AUTO picks the GPU).
# Logs go to $OUT (default ./gpu-out); a short summary table is printed last.
#
#   scripts/gpu_check.sh [STEP...]    steps, run in this order: build test bench sanitize ctest
#                                     profile span alias (default: all but profile, span, alias)
#
# Environment: OUT (log folder), BUILD (build folder, default build-gpu), BENCH_ARGS (e.g.
# --quick), CUDA_ARCH (default: CMakeLists.txt's, sm_80 + sm_90 + PTX), NO_CUPY (set: skip the
# CuPy peer), PARTS (default "chan demod rx": the channelizer's, the demodulator bank's and the
# receiver's tests, benchmarks and sanitizer runs; give some of them to run only those), DEMOD_BENCH_ARGS
# (bench_qpsk_bank's --case filters), DEMOD_MEMCHECK_S (the bank test's memcheck time limit,
# default 300), NO_BANK_RACECHECK (set: skip racecheck on the bank test; the stage kernels' test
# always runs under it), NO_CHAN_SANITIZE (set: skip the channelizer's memcheck and racecheck).
# On the lent GPU machine, run it after `source .devdeps/prelude.sh` (the carried library
# packages); where pkg-config is missing it unpacks the one carried in .gpudeps/.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
BUILD=${BUILD:-build-gpu}
mkdir -p "$OUT"
steps=${*:-build test bench sanitize ctest}
PARTS=${PARTS:-chan demod rx}
part() { [[ " $PARTS " == *" $1 "* ]]; }
summary=()
note() { summary+=("$*"); echo "== $*"; }
has() { [[ " $steps " == *" $1 "* ]]; }
t0=$(date +%s)
elapsed() { echo $(($(date +%s) - t0))s; }

if ! command -v pkg-config >/dev/null && compgen -G ".gpudeps/*.deb" >/dev/null; then
  mkdir -p /tmp/gpudeps
  for f in .gpudeps/*.deb; do dpkg -x "$f" /tmp/gpudeps; done
  export PATH=/tmp/gpudeps/usr/bin:$PATH
  export LD_LIBRARY_PATH=/tmp/gpudeps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if [ -d /tmp/devdeps/usr ]; then # the .pc files of the unpacked packages say prefix=/usr
  export PKG_CONFIG_PATH=/tmp/devdeps/usr/lib/x86_64-linux-gnu/pkgconfig:/tmp/devdeps/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export PKG_CONFIG_SYSROOT_DIR=/tmp/devdeps
fi

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm \
  --format=csv >"$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"

if has build; then
  targets=(polyrx_shared)
  part chan && targets+=(test_chan_cuda bench_chan_cuda polyrx bench_commands)
  part demod && targets+=(test_qpsk_stages_cuda bench_qpsk_stages test_qpsk_bank test_qpsk_bank_cuda
    test_qpsk_bank_driver bench_qpsk_bank)
  part rx && targets+=(test_rx_cuda bench_rx polyrx)
  rm -f "$BUILD/CMakeCache.txt" # dependencies are found afresh (unpacked paths may change)
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  if cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    ${CUDA_ARCH:+-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH"} -DPOLYRX_NATIVE=OFF -DPOLYRX_CUDA=ON \
    >"$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD" -j"$(nproc)" --target "${targets[@]}" >>"$OUT/build.log" 2>&1; then
    note "build: ok ($(elapsed))"
    CUOBJDUMP=$(command -v cuobjdump || echo "$(dirname "$(command -v nvcc)")/cuobjdump")
    so=$BUILD/libpolyrx_cuda.so # the CUDA module: every kernel
    "$CUOBJDUMP" -sass "$so" | grep Function >"$OUT/kernels.txt" 2>&1
    note "module: $(stat -Lc %s "$so") bytes, $(grep -c . "$OUT/kernels.txt") kernels," \
      "$(grep -c prx_fused_kernel "$OUT/kernels.txt") of them prx_fused_kernel," \
      "$(grep -cE 'qpsk_[a-z0-9]+_kernel' "$OUT/kernels.txt") demodulator stage kernels"
  else
    tail -40 "$OUT/build.log"
    note "build: FAILED (see build.log)"
    printf '%s\n' "${summary[@]}"
    exit 1
  fi
fi

run_step() { # name timeout command...
  local name=$1 limit=$2 rc
  shift 2
  timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  tail -5 "$OUT/$name.log"
  note "$name: rc=$rc ($(elapsed)) $(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY|all checks passed|check\(s\) failed|skipped' "$OUT/$name.log")"
  return $rc
}

if has test && part chan; then
  run_step test 240 "$BUILD/test_chan_cuda"
  grep FAIL "$OUT/test.log" | head -20
fi
if has test && part demod; then
  # the stage kernels against the CPU stages first (short), then the bank
  run_step test_stages 120 "$BUILD/test_qpsk_stages_cuda"
  grep -E 'FAIL|^sps' "$OUT/test_stages.log" | head -20
  run_step test_driver 60 "$BUILD/test_qpsk_bank_driver"
  grep FAIL "$OUT/test_driver.log" | head -10
  run_step test_demod 240 "$BUILD/test_qpsk_bank_cuda"
  grep FAIL "$OUT/test_demod.log" | head -20
fi

if has test && part rx; then
  run_step test_rx 120 "$BUILD/test_rx_cuda"
  grep FAIL "$OUT/test_rx.log" | head -20
fi

if has bench && part chan; then
  # the SM clock, power and throttle reasons every 20 ms while the benchmark runs (smi.csv)
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.active \
    --format=csv -lms 20 >"$OUT/smi.csv" 2>&1 &
  smi=$!
  # shellcheck disable=SC2086
  timeout 300 "$BUILD/bench_chan_cuda" ${BENCH_ARGS:-} >"$OUT/bench.jsonl" 2>"$OUT/bench.err"
  note "bench: rc=$? ($(elapsed))"
  kill "$smi" 2>/dev/null
  samples=$((1 << 26))
  [[ "${BENCH_ARGS:-}" == *--quick* ]] && samples=$((1 << 24))
  if [ -z "${NO_CUPY:-}" ]; then
    PYTHONUNBUFFERED=1 timeout 180 python3 bench/cupy_channelize.py --samples $samples \
      --summary "$OUT/bench.jsonl" >"$OUT/cupy.log" 2>&1
    note "cupy: rc=$? ($(elapsed))"
  fi
  # `polyrx channelize --backend cuda` against min(PCIe, read, write) (issue 13's table)
  PCIE_FROM="$OUT/bench.jsonl" timeout 600 bench/bench_commands.sh "$BUILD" gpu \
    >"$OUT/commands.jsonl" 2>"$OUT/commands.err"
  note "commands: rc=$? ($(elapsed))"
  cat "$OUT/commands.err"
fi
if has bench && part demod; then
  timeout 180 "$BUILD/bench_qpsk_stages" >"$OUT/bench_stages.jsonl" 2>"$OUT/bench_stages.err"
  note "bench_stages: rc=$? ($(elapsed))"
  # DEMOD_BENCH_ARGS: e.g. "--case 4:1024:cf32" (repeatable) to run only those bank cases
  # shellcheck disable=SC2086
  timeout 300 "$BUILD/bench_qpsk_bank" ${BENCH_ARGS:-} ${DEMOD_BENCH_ARGS:-} \
    >"$OUT/bench_demod.jsonl" 2>"$OUT/bench_demod.err"
  note "bench_demod: rc=$? ($(elapsed))"
fi

if has bench && part rx; then
  # the receiver device-resident (issue 12's figures), then `polyrx rx` on its input in RAM
  # against min(PCIe bound of the same run, the rate at which `cat` reads the file, warm)
  f=/dev/shm/polyrx-rx.ci16
  timeout 150 "$BUILD/bench_rx" --gpu --write "$f" 1 >"$OUT/bench_rx.jsonl" 2>"$OUT/bench_rx.err"
  note "bench_rx: rc=$? ($(elapsed))"
  if [ -s "$f" ]; then
    cat "$f" >/dev/null
    a=$(date +%s.%N); cat "$f" >/dev/null; b=$(date +%s.%N)
    rm -rf /dev/shm/polyrx-rx-out
    # shellcheck disable=SC2046
    POLYRX_TIMING=1 timeout 60 "$BUILD/polyrx" rx -q -i "$f" -F ci16 -s 6553600 -K 1024 $(cat "$f.args") \
      -o /dev/shm/polyrx-rx-out --backend cuda --report "$OUT/rx_report.json" \
      >"$OUT/rx_cmd.log" 2>&1
    rc=$?
    c=$(date +%s.%N)
    pcie=$(grep -o '"ci16_gsps":[0-9.]*' "$OUT/bench_rx.jsonl" | cut -d: -f2)
    awk -v n="$(($(stat -c %s "$f") / 4))" -v a="$a" -v b="$b" -v c="$c" -v p="${pcie:-0}" \
      -v rc="$rc" 'BEGIN { r = n / (c - b) / 1e9; cat = n / (b - a) / 1e9;
        m = (p > 0 && p < cat) ? p : cat;
        printf "{\"bench\":\"rx_cmd\",\"rc\":%d,\"samples\":%d,\"seconds\":%.3f,\"gsps\":%.3f,\"cat_gsps\":%.3f,\"pcie_gsps\":%.3f,\"of_bound\":%.3f}\n",
          rc, n, c - b, r, cat, p, r / m }' | tee -a "$OUT/bench_rx.jsonl"
    note "rx_cmd: rc=$rc ($(elapsed)); $(grep -o 'timing (ms).*' "$OUT/rx_cmd.log")"
    rm -rf /dev/shm/polyrx-rx-out "$f" "$f.args"
  fi
fi

if has sanitize && part chan && [ -z "${NO_CHAN_SANITIZE:-}" ]; then
  export PRX_TEST_SMALL=1
  run_step memcheck 300 compute-sanitizer --tool memcheck --leak-check no --error-exitcode 9 \
    "$BUILD/test_chan_cuda"
  grep -m10 -E '^=+ (Invalid|Program hit|.*error)' "$OUT/memcheck.log"
  run_step racecheck 300 compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$BUILD/test_chan_cuda"
  grep -m10 -E '^=+ .*(hazard|Race)' "$OUT/racecheck.log"
  unset PRX_TEST_SMALL
fi
if has sanitize && part demod; then
  run_step memcheck_stages 120 compute-sanitizer --tool memcheck --leak-check full \
    --error-exitcode 9 "$BUILD/test_qpsk_stages_cuda"
  grep -m10 -E '^=+ (Invalid|Program hit|.*error|.*leak)' "$OUT/memcheck_stages.log"
  run_step racecheck_stages 120 compute-sanitizer --tool racecheck --error-exitcode 9 \
    "$BUILD/test_qpsk_stages_cuda"
  grep -m10 -E '^=+ .*(hazard|Race)' "$OUT/racecheck_stages.log"
  # the bank's reduced set (--quick: one chunked device run with bits, one with LLRs)
  run_step memcheck_demod "${DEMOD_MEMCHECK_S:-300}" compute-sanitizer --tool memcheck \
    --leak-check full --error-exitcode 9 "$BUILD/test_qpsk_bank_cuda" --quick
  grep -m10 -E '^=+ (Invalid|Program hit|.*error|.*leak)' "$OUT/memcheck_demod.log"
  if [ -z "${NO_BANK_RACECHECK:-}" ]; then
    run_step racecheck_demod 300 compute-sanitizer --tool racecheck --error-exitcode 9 \
      "$BUILD/test_qpsk_bank_cuda" --quick
    grep -m10 -E '^=+ .*(hazard|Race)' "$OUT/racecheck_demod.log"
  fi
fi

if has ctest; then
  cmake --build "$BUILD" -j"$(nproc)" >>"$OUT/build.log" 2>&1
  ran=() # the GPU tests the test step ran
  has test && part chan && ran+=(chan)
  has test && part demod && ran+=(qpsk_bank qpsk_stages)
  has test && part rx && ran+=(rx)
  (cd "$BUILD" && timeout 420 ctest -j"$(nproc)" -E "^test_($(IFS='|'; echo "${ran[*]}"))_cuda\$" \
    --output-on-failure) \
    >"$OUT/ctest.log" 2>&1
  note "ctest: rc=$? ($(elapsed)) $(grep -m1 'tests passed' "$OUT/ctest.log")"
  grep -E 'Failed|\*\*\*' "$OUT/ctest.log" | head -20
fi

if has profile; then
  # Nsight Compute on the fused kernel at K = 1024 (bench_chan_cuda --profile: D = K/2 with the
  # default design and the thread-store design, then D = K; two launches each), clocks left
  # alone
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  timeout 240 "$NCU" --clock-control none -k regex:prx_fused_kernel -c 6 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
    "$BUILD/bench_chan_cuda" --profile >"$OUT/ncu.txt" 2>&1
  note "profile: rc=$? ($(elapsed))"
  # the machine code at K = 1024, D = K/2, cf32 (for instruction counts): the design key's
  # last argument is 1 for the TMA output (the default), 0 for thread stores
  CUOBJDUMP=$(command -v cuobjdump || echo "$(dirname "$(command -v nvcc)")/cuobjdump")
  for tile in 1 0; do
    "$CUOBJDUMP" -sass -fun "_Z16prx_fused_kernelILi0ELi2ELi10ELb${tile}EEv11prx_kparams" \
      "$BUILD/bench_chan_cuda" >"$OUT/sass_k1024_tile${tile}.txt" 2>&1
  done
fi

if has span && part demod; then
  # the bank's span kernel by kernel: Nsight Compute's duration of each launch of steady-state
  # calls (bench_qpsk_bank --default-only: the library's default path alone, sps 4, 1024
  # channels, cf32, ~14 launches a call: the window covers two calls after the first two), the
  # mean per kernel name in launch order, and their sum
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  timeout 200 "$NCU" --clock-control none --print-kernel-base function --launch-skip 20 \
    --launch-count 30 --metrics gpu__time_duration.sum --csv "$BUILD/bench_qpsk_bank" \
    --case 4:1024:cf32 --default-only >"$OUT/ncu_span.csv" 2>&1
  note "span: rc=$? ($(elapsed))"
  awk -F'","' '/gpu__time_duration/ { v = $NF; gsub(/[",]/, "", v); u = $(NF - 1);
      k = $5; if (!(k in n)) order[++m] = k; n[k]++; t[k] += v * (u ~ /^u/ ? 1e3 : u ~ /^m/ ? 1e6 : 1) }
    END { for (i = 1; i <= m; i++) { k = order[i]; s += t[k] / n[k];
        printf "span %-28s %4d launches %9.1f us\n", k, n[k], t[k] / n[k] / 1e3 }
      printf "span %-28s %24.1f us\n", "sum of the means", s / 1e3 }' "$OUT/ncu_span.csv" |
    tee "$OUT/span.txt"
fi

if has alias && part rx; then
  # `polyrx rx` on a carrier 0.3 Rs beyond its given frequency (720 Hz at 2400 Bd, outside the
  # +-Rs/8 acquisition range) beside one on it: both backends must warn cfo_alias on carrier 1
  # only; then Nsight Compute's duration of the alias stage (it runs once, in the first call)
  d=/dev/shm/polyrx-alias
  rm -rf "$d" && mkdir -p "$d"
  "$BUILD/polyrx" gen -q -o "$d/in.ci16" -F ci16 -s 6553600 -d 4 --carrier f=640k,rs=2400 \
    --carrier f=-199280,rs=2400 --esn0 20 2>"$OUT/alias_gen.log"
  for be in cpu cuda; do
    POLYRX_TIMING=1 "$BUILD/polyrx" rx -q -i "$d/in.ci16" -F ci16 -s 6553600 -K 1024 \
      --carrier f=640k,rs=2400 --carrier f=-200k,rs=2400 -o "$d/$be" --backend "$be" \
      --report "$OUT/alias_$be.json" >"$OUT/alias_$be.log" 2>&1
    note "alias $be: rc=$? ($(elapsed)) $(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(r["status"], [sorted(w["code"] for w in c["warnings"]) for c in r["carriers"]])' \
      "$OUT/alias_$be.json" 2>&1)"
  done
  rm -rf "$d"
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  timeout 120 "$NCU" --clock-control none --print-kernel-base function -k regex:qpsk_alias -c 3 \
    --metrics gpu__time_duration.sum --csv "$BUILD/bench_qpsk_bank" --case 4:1024:cf32 \
    --default-only >"$OUT/ncu_alias.csv" 2>&1
  note "alias kernel: rc=$? $(grep -m3 gpu__time_duration "$OUT/ncu_alias.csv" |
    awk -F'","' '{ v = $NF; gsub(/[",]/, "", v); printf "%s %s; ", v, $(NF - 1) }')"
fi

echo
echo "================ summary ================"
printf '%s\n' "${summary[@]}"
if has bench && part chan; then
  sed -n '/^== GPU channelizer/,$p' "$OUT/bench.jsonl"
  [ -f "$OUT/cupy.log" ] && grep -v '^{' "$OUT/cupy.log" | tail -6
  tail -3 "$OUT/bench.err"
fi
if has bench && part demod; then
  sed -n '/^== GPU demodulator stages/,$p' "$OUT/bench_stages.jsonl"
  tail -3 "$OUT/bench_stages.err"
  sed -n '/^== GPU demodulator/,$p' "$OUT/bench_demod.jsonl"
  tail -3 "$OUT/bench_demod.err"
fi
if has bench && part rx; then
  sed -n '/^== GPU receiver/,$p' "$OUT/bench_rx.jsonl"
  tail -3 "$OUT/bench_rx.err"
fi
if has profile; then
  grep -E "prx_fused_kernel|^ +(Duration|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Cache Throughput|L2 Cache Throughput|L1/TEX Hit Rate|L2 Hit Rate|DRAM Throughput|Issue Slots Busy|Executed Ipc Active|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Warp Cycles Per Issued Instruction|No Eligible|Block Limit Registers|Block Limit Shared Mem|Shared Memory Configuration Size|Bank Conflicts|Stall Long Scoreboard) " \
    "$OUT/ncu.txt" | sed -E 's/ {2,}/ /g' | head -200
fi
