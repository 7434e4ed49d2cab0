#!/usr/bin/env bash
# The GPU commands of two source trees in one run on a machine with an NVIDIA GPU (before and
# after a change, measured against the same floors): builds both (CUDA, sm_90 unless CUDA_ARCH),
# probes the CUDA start-up and end on this host (bench/cuda_startup_probe.cu, and
# `bench_commands cudastart` of the second tree), checks that both trees write the same bytes
# (`channelize --backend cuda` recordings, `rx` bits), runs the second tree's reader tests with
# the GPU present, then `bench_commands.sh BUILD gpu` and `BUILD rx` for each tree (the second
# with VARIANTS). Logs go to $OUT (default ./ab-out), and everything that matters (probe, JSON
# lines, test results, the summary) is appended to $REPORT (default $OUT/report.txt) step by
# step, so that a run cut short keeps what it measured; a summary is printed last.
#
#   bench/bench_commands_ab.sh SRC_BEFORE SRC_AFTER
#
# On the lent GPU machine, after `source .devdeps/prelude.sh` (the carried library packages).
# Environment: OUT, CUDA_ARCH (default 90), REPS (default 2), VARIANTS (default: one reader),
# BUILD_AFTER (the second tree's build folder, default SRC_AFTER/build-ab), GPU_SEL (see
# bench_commands.sh), STEPS (default "build probe same rx gpu tests"; the order is fixed:
# build, probe, same, rx, gpu, tests).
set -uo pipefail
A=$(cd "${1:?usage: bench_commands_ab.sh SRC_BEFORE SRC_AFTER}" && pwd)
B=$(cd "${2:?usage: bench_commands_ab.sh SRC_BEFORE SRC_AFTER}" && pwd)
OUT=${OUT:-$PWD/ab-out}
mkdir -p "$OUT"
REPORT=${REPORT:-$OUT/report.txt}
keep() { # appends files to the report
  local f
  for f; do
    [ -f "$f" ] && { echo "---- $(basename "$f")"; cat "$f"; }
  done >>"$REPORT"
}
export REPS=${REPS:-2}
VARIANTS=${VARIANTS-"readers1=POLYRX_READERS=1"}
STEPS=${STEPS:-"build probe same rx gpu tests"}
has() { [[ " $STEPS " == *" $1 "* ]]; }
t0=$(date +%s)
el() { echo "$(($(date +%s) - t0))s"; }
summary=()
note() {
  summary+=("$*")
  echo "== $*"
  echo "== $*" >>"$REPORT"
}
if [ -d /tmp/devdeps/usr ]; then
  export PKG_CONFIG_PATH=/tmp/devdeps/usr/lib/x86_64-linux-gnu/pkgconfig:/tmp/devdeps/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export PKG_CONFIG_SYSROOT_DIR=/tmp/devdeps
fi
BA=$A/build-ab
BB=${BUILD_AFTER:-$B/build-ab}
W=$(mktemp -d /dev/shm/prx_ab.XXXXXX)
trap 'rm -rf "$W"' EXIT

build() { # SRC BUILD LOG TARGETS...
  local src=$1 bld=$2 log=$3 gen=()
  shift 3
  command -v ninja >/dev/null && gen=(-G Ninja)
  rm -f "$bld/CMakeCache.txt"
  cmake -S "$src" -B "$bld" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" -DPOLYRX_NATIVE=OFF -DPOLYRX_CUDA=ON \
    >"$log" 2>&1 && cmake --build "$bld" -j8 --target "$@" >>"$log" 2>&1
}
if has build; then
  build "$A" "$BA" "$OUT/build_a.log" polyrx polyrx_cuda bench_commands &
  pa=$!
  build "$B" "$BB" "$OUT/build_b.log" polyrx polyrx_cuda bench_commands test_pipeline_readers &
  pb=$!
  wait $pa && ra=ok || ra=FAILED
  wait $pb && rb=ok || rb=FAILED
  note "build: before $ra, after $rb ($(el))"
  [ $ra = ok ] && [ $rb = ok ] || {
    tail -20 "$OUT/build_a.log" "$OUT/build_b.log"
    printf '%s\n' "${summary[@]}"
    exit 1
  }
fi

# the input of the checks and the probe: 2^28 ci16 samples (1 GiB) in RAM
x=$W/g.ci16
"$BB/polyrx" gen -q -o "$x" -F ci16 -s 1G -n $((1 << ${AB_LOG2:-28})) --carrier f=1M,rs=1M --esn0 20 2>/dev/null

if has probe; then
  nvcc -O2 -arch=sm_"${CUDA_ARCH:-90}" -o "$W/probe" "$B/bench/cuda_startup_probe.cu" -lcufft \
    >"$OUT/probe.log" 2>&1 && "$W/probe" "$x" >>"$OUT/probe.log" 2>&1
  note "probe: rc=$? ($(el))"
  cat "$OUT/probe.log"
  for i in 1 2 3; do "$BB/bench_commands" cudastart >>"$OUT/cudastart.jsonl" 2>&1; done
  cat "$OUT/cudastart.jsonl"
  keep "$OUT/probe.log" "$OUT/cudastart.jsonl"
fi
# the PCIe rates for bench_commands.sh (its ceiling line's format)
h2d=$(awk '/probe h2d_pinned/ { print $3 }' "$OUT/probe.log" 2>/dev/null)
d2h=$(awk '/probe d2h_pinned/ { print $3 }' "$OUT/probe.log" 2>/dev/null)
echo "{\"kind\":\"ceiling\",\"h2d_GBps\":${h2d:-0},\"d2h_GBps\":${d2h:-0}}" >"$OUT/ceiling.jsonl"
export PCIE_FROM=$OUT/ceiling.jsonl

if has same; then
  # the same bytes from both trees: 64 channels of the 1 GiB input, and rx on 1 s of 64 carriers
  ok=1
  for t in a b; do
    bld=$BA
    [ $t = b ] && bld=$BB
    "$bld/polyrx" channelize -q --backend cuda -F ci16 -i "$x" -s 1G -K 1024 -c 0-63 \
      -o "$W/ch_$t" || ok=0
  done
  for f in "$W"/ch_a/*.sigmf-data; do
    cmp -s "$f" "$W/ch_b/$(basename "$f")" || { ok=0; echo "differs: $(basename "$f")"; }
  done
  rm -rf "$W/ch_a" "$W/ch_b"
  args=()
  for i in $(seq 0 63); do
    args+=(--carrier "f=$(awk -v i="$i" 'BEGIN { split("0 0.25 0.375 0.5", fr, " ");
      printf "%.3f", (16 * i - 504 + fr[i % 4 + 1]) * 6400 }'),rs=2400,diff")
  done
  "$BB/polyrx" gen -q -o "$W/rx.ci16" -F ci16 -s 6553600 -n 6553600 "${args[@]}" --esn0 20
  for t in a b; do
    bld=$BA
    [ $t = b ] && bld=$BB
    "$bld/polyrx" rx -q --backend cuda -F ci16 -i "$W/rx.ci16" -s 6553600 -K 1024 "${args[@]}" \
      -o "$W/rx_$t" >/dev/null || ok=0
  done
  for f in "$W"/rx_a/*.bits; do
    cmp -s "$f" "$W/rx_b/$(basename "$f")" || { ok=0; echo "differs: rx $(basename "$f")"; }
  done
  rm -rf "$W/rx_a" "$W/rx_b" "$W/rx.ci16"
  note "same bytes before and after (channelize 64 channels of 2^28, rx 64 carriers): $([ $ok = 1 ] && echo yes || echo NO) ($(el))"
fi
rm -f "$x"

# the command rows, before and after in turn: rx first (the shorter), then channelize
for mode in rx gpu; do
  has $mode || continue
  for t in a b; do
    bld=$BA v=""
    [ $t = b ] && bld=$BB v=$VARIANTS
    VARIANTS=$v timeout 300 bash "$B/bench/bench_commands.sh" "$bld" $mode \
      >"$OUT/${mode}_$t.jsonl" 2>"$OUT/${mode}_$t.err"
    note "$mode $t: rc=$? ($(el))"
    keep "$OUT/${mode}_$t.jsonl" "$OUT/${mode}_$t.err"
  done
done

if has tests; then
  "$BB/test_pipeline_readers" >"$OUT/tests.log" 2>&1
  r1=$?
  for s in cli_readers cli_rx cli_channelize; do
    timeout 60 bash "$B/tests/$s.sh" "$BB/polyrx" >>"$OUT/tests.log" 2>&1
    r1="$r1 $s:$?"
  done
  note "tests with the GPU (test_pipeline_readers, then the scripts): $r1 ($(el))"
  grep FAIL "$OUT/tests.log" | head | tee -a "$REPORT"
fi

for t in a b; do
  echo "==== $([ $t = a ] && echo before || echo after)"
  cat "$OUT/gpu_$t.err" "$OUT/rx_$t.err" 2>/dev/null | grep -v '^bench_commands.sh: [0-9]* cores'
  grep -ho '"timing_ms":"[^"]*"' "$OUT/gpu_$t.jsonl" "$OUT/rx_$t.jsonl" 2>/dev/null | head -4
done
printf '%s\n' "${summary[@]}"
