#!/usr/bin/env bash
# The demodulator's CPU speed on this machine and what sets it, in one go (for a machine that is
# lent for minutes: the GPU host), then the commands' CPU figures (bench/bench_commands.sh cpu):
#   info      the CPU (model, caches, flags, NUMA), load, THP, perf availability, compiler
#   build     a CPU-only Release (-DPOLYRX_CUDA=OFF, run-time kernel dispatch) of bench_qpsk,
#             bench_commands and polyrx; with NATIVE=1 also bench_qpsk with -march=native
#   clock     the core clock under one-core and all-core load (bench_qpsk clock)
#   probe     bench_qpsk probe runs: sps 2..8 on one thread, bits and bits + LLRs, the first
#             measurement of a process against later ones, input size against the caches, the
#             input's and the demodulator's buffers moved against each other (4K aliasing),
#             flush-to-zero (denormals), call sizes, POLYRX_CPU=generic, a pinned run, the
#             native build; hardware counters where perf_event_open is allowed
#   cores     sps 4 and liquid-dsp pinned to each core in turn (taskset), with each core's steal
#             time: whether the cores run at different speeds
#   aslr      sps 4 six times pinned to one core with address randomisation (the stack's low
#             bits differ per process), six times without (setarch -R): whether the speed
#             follows the addresses
#   sweep     sps 4 (bits; bits + LLRs) with the demodulator's buffers moved on the heap by 0 to
#             3840 bytes and the input at four offsets in its page (4K aliasing: the speed should
#             not depend on them), sps 2 and 8 at a few of them
#   bench     the standard benchmark (bench_qpsk 5) with a thread-scaling series
#   hash      bench_qpsk hash (every output over 96 configurations: bit identity across trees)
#   commands  bench/bench_commands.sh BUILD cpu (REPS, default 2)
# usage: bench/cpu_probe.sh [STEP...] (default: all, in the order above); on the GPU host, after
# `source .devdeps/prelude.sh`: `bench/cpu_probe.sh info build clock cores aslr bench` (about
# 50 s) says whether its two speeds belong to the cores or to the process's addresses
# Environment: OUT (JSON logs, default ./cpu-probe-out), BUILD (default build-cpu), NATIVE,
# REPS. Key lines go to standard output; each JSON line to $OUT/*.jsonl.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/cpu-probe-out}
BUILD=${BUILD:-build-cpu}
mkdir -p "$OUT"
steps=${*:-info build clock probe cores aslr sweep bench hash commands}
has() { [[ " $steps " == *" $1 "* ]]; }
t0=$(date +%s)
stamp() { echo "== $1 ($(($(date +%s) - t0)) s)"; }

if [ -d /tmp/devdeps/usr ]; then # the carried packages (.devdeps/prelude.sh): .pc files say /usr
  export PKG_CONFIG_PATH=/tmp/devdeps/usr/lib/x86_64-linux-gnu/pkgconfig:/tmp/devdeps/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export PKG_CONFIG_SYSROOT_DIR=/tmp/devdeps
fi

if has info; then
  stamp info
  lscpu | grep -E '^(Model name|Model|CPU\(s\)|Thread|Core|Socket|BogoMIPS|L1d|L2|L3|NUMA)|MHz'
  echo "flags: $(grep -m1 -o -w -E 'avx2|fma|avx512f|avx512_fp16|amx_tile' /proc/cpuinfo | tr '\n' ' ')"
  echo "load: $(cut -d' ' -f1-3 /proc/loadavg); busiest: $(ps -eo pcpu,comm --sort=-pcpu | sed -n 2,4p | tr -s ' ' | tr '\n' ';')"
  echo "thp: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null);" \
    "governor: $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo none)"
  echo "perf: $(command -v perf || echo absent); perf_event_paranoid" \
    "$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null); numactl: $(command -v numactl ||
      echo absent); taskset: $(command -v taskset || echo absent)"
  echo "$(gcc --version | head -1); $(ldd --version | head -1)"
fi

if has build; then
  stamp build
  gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  n=$(nproc)
  (cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DPOLYRX_CUDA=OFF \
    -DPOLYRX_NATIVE=OFF >"$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD" -j"$n" --target bench_qpsk bench_commands polyrx >>"$OUT/build.log" 2>&1) &
  b1=$!
  if [ -n "${NATIVE:-}" ]; then
    (cmake -S . -B "$BUILD-native" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DPOLYRX_CUDA=OFF \
      -DPOLYRX_NATIVE=ON >"$OUT/build-native.log" 2>&1 &&
      cmake --build "$BUILD-native" -j"$n" --target bench_qpsk >>"$OUT/build-native.log" 2>&1) &
    b2=$!
    wait $b2 || { tail -20 "$OUT/build-native.log"; echo "native build FAILED"; }
  fi
  wait $b1 || { tail -30 "$OUT/build.log"; echo "build FAILED"; exit 1; }
  grep -m1 'liquid-dsp' "$OUT/build.log"
fi

B=$BUILD/bench_qpsk
# one line per JSON record: the figures that matter, counters where present; with an argument,
# a short line labelled by it (a %-format over the record)
brief() {
  python3 -c '
import json, sys
for line in sys.stdin:
    line = line.strip()
    if not line.startswith("{"): continue
    d = json.loads(line)
    if d.get("bench") == "qpsk_probe_clock":
        print("  clock, %d threads: %.2f GHz (%.2f-%.2f)" % (d["threads"], d["ghz_mean"], d["ghz_min"], d["ghz_max"])); continue
    if d.get("impl") == "liquid-dsp":
        print("  liquid-dsp sps 4: %.3f Msym/s (cpu %.3f), MER %.1f dB" % (d["msym_per_s"], d["cpu_msym_per_s"], d["mer_db"])); continue
    keys = ("ipc", "ghz", "cycles_per_sym", "instructions_per_sym", "l1d_miss_per_sym", "llc_miss_per_sym", "alias_0107_per_sym", "alias_0403_per_sym", "stall_l3miss_per_sym")
    c = " ".join("%s=%.3g" % (k.replace("_per_sym", ""), d[k]) for k in keys if k in d)
    if "stage_ns" in d: c += " stages " + " ".join("%.1f" % v for v in d["stage_ns"])
    if len(sys.argv) > 1:  # one short line per run (sweeps)
        print("  %s: %.2f Msym/s (cpu) %.1f ns/sym%s" % (sys.argv[1] % d, d["cpu_msym_per_s"], 1e3 / d["cpu_msym_per_s"], (" " + c) if c else "")); continue
    print("  r%d: %.2f Msym/s best, %.2f mean, %.2f cpu, %.1f ns/sym, faults/rep %d %s" % (d["round"], d["msym_per_s"], d["mean_msym_per_s"], d["cpu_msym_per_s"], d["ns_per_sym"], d["faults_per_rep"], c))
' "$@"
}
pr() { # label, then the probe's arguments (a leading VAR=value for the environment)
  local label=$1
  shift
  echo "$label"
  env "$@" | tee -a "$OUT/probe.jsonl" | brief
}

if has clock; then
  stamp clock
  "$B" clock 1 | tee -a "$OUT/probe.jsonl" | brief
  "$B" clock "$(nproc)" | tee -a "$OUT/probe.jsonl" | brief
fi

if has probe; then
  stamp probe
  pr "sps 4, first measurement of the process and two more, liquid-dsp after" \
    "$B" probe 4 20 rounds=3 liquid=1
  pr "sps 8 first in its process, then again" "$B" probe 8 20 rounds=2
  for s in 2 3 5.333333333333333 6; do pr "sps $s" "$B" probe "$s" 20; done
  for s in 2 4 8; do pr "sps $s, bits + LLRs" "$B" probe "$s" 20 llr=1 reps=3; done
  pr "sps 4, flush-to-zero + denormals-are-zero" "$B" probe 4 20 ftz=1
  pr "sps 4, 2^16 symbols (2 MiB input: cache-resident)" "$B" probe 4 16 reps=20
  pr "sps 4, 2^18 symbols (8 MiB)" "$B" probe 4 18 reps=10
  pr "sps 4, 2^22 symbols (128 MiB)" "$B" probe 4 22 reps=3
  pr "sps 4, caches swept (512 MiB) before each rep" "$B" probe 4 20 evict=512
  for o in 0 1024 2048 3072; do pr "sps 4, input at byte $o of a 2 MiB-aligned buffer" \
    "$B" probe 4 20 offset="$o"; done
  for sh in 1040 2064 3088; do pr "sps 4, demodulator's buffers moved by $sh bytes" \
    "$B" probe 4 20 shift="$sh"; done
  for c in 16384 262144 1048576; do pr "sps 4, calls of $c samples" "$B" probe 4 20 chunk="$c"; done
  pr "sps 4, POLYRX_CPU=generic" POLYRX_CPU=generic "$B" probe 4 20
  pr "sps 8, POLYRX_CPU=generic" POLYRX_CPU=generic "$B" probe 8 20
  if command -v taskset >/dev/null; then
    pr "sps 4, pinned to one core" taskset -c "$(($(nproc) - 1))" "$B" probe 4 20 rounds=2
  fi
  if [ -x "$BUILD-native/bench_qpsk" ]; then
    for s in 4 8 2; do pr "sps $s, -march=native build" "$BUILD-native/bench_qpsk" probe "$s" 20; done
  fi
fi

# steal time of each cpu (USER_HZ ticks) from /proc/stat
steal() { awk '/^cpu[0-9]/ { printf "%s ", $9 }' /proc/stat; }

if has cores; then
  stamp cores
  s0=($(steal))
  for c in $(seq 0 $(($(nproc) - 1))); do
    taskset -c "$c" "$B" probe 4 20 reps=2 liquid=1 | tr '\n' ' ' | sed 's/} {/}\n{/' |
      tee -a "$OUT/cores.jsonl" | python3 -c '
import json, sys
d = [json.loads(l) for l in sys.stdin.read().split("\n") if l.strip()]
print("  core %s: polyrx %.2f Msym/s, liquid %.3f: %.2fx" % (sys.argv[1], d[0]["cpu_msym_per_s"], d[1]["cpu_msym_per_s"], d[0]["cpu_msym_per_s"] / d[1]["cpu_msym_per_s"]))' "$c"
    echo >>"$OUT/cores.jsonl"
  done
  s1=($(steal))
  echo "  steal ticks during the step, per cpu: $(for i in "${!s0[@]}"; do printf '%d ' $((s1[i] - s0[i])); done)"
fi

if has aslr; then
  stamp aslr
  c=$(($(nproc) - 1))
  for r in on off; do
    pre=()
    [ $r = off ] && pre=(setarch "$(uname -m)" -R)
    for _ in 1 2 3 4 5 6; do taskset -c "$c" "${pre[@]}" "$B" probe 4 20 reps=3; done |
      tee -a "$OUT/aslr.jsonl" | brief "core $c, randomisation $r"
  done
fi

if has sweep; then
  stamp sweep
  for llr in 0 1; do
    for sh in $(seq 0 256 3840); do
      "$B" probe 4 20 shift="$sh" llr="$llr" reps=$((llr ? 2 : 4))
    done | tee -a "$OUT/sweep.jsonl" | brief "sps 4 llr %(llr)d shift %(shift)4d"
  done
  for o in 0 1024 2048 3072; do "$B" probe 4 20 offset="$o"; done | tee -a "$OUT/sweep.jsonl" |
    brief "sps 4 input offset %(offset)4d"
  for s in 2 8; do
    for sh in 0 1040 2064 3088; do "$B" probe "$s" 20 shift="$sh" reps=4; done |
      tee -a "$OUT/sweep.jsonl" | brief "sps %(sps).0f shift %(shift)4d"
  done
fi

if has bench; then
  stamp "bench_qpsk 5 1,2,4,8,16"
  "$B" 5 1,2,4,8,16 >"$OUT/bench_qpsk.jsonl" 2>>"$OUT/bench_qpsk.jsonl"
  sed -n '/^QPSK/,$p' "$OUT/bench_qpsk.jsonl"
fi

if has hash; then
  stamp hash
  "$B" hash >"$OUT/hash.txt"
  tail -1 "$OUT/hash.txt"
fi

if has commands; then
  stamp commands
  REPS=${REPS:-2} bench/bench_commands.sh "$BUILD" cpu >"$OUT/commands.jsonl" 2>"$OUT/commands.err"
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith("{"): continue
    d = json.loads(line)
    b = d["bench"]
    if b == "commands_startup": print("  startup demod: %.1f ms (no wisdom %.1f)" % (d["ms_wisdom"], d["ms_no_wisdom"]))
    elif b == "commands_lib_startup": print("  prx_qpsk_create %.2f ms" % d["qpsk_create_ms"])
    elif b in ("commands_read_cat", "commands_read"): print("  %s %.2f GB/s" % (b, d["gb_per_s"]))
    elif b == "commands_demod": print("  demod threads %d: %.2f Msym/s, lib %.2f: %.3f" % (d["threads"], d["msym_per_s"], d["lib_msym_per_s"], d["fraction_of_lib"]))
    elif b == "commands_channelize": print("  channelize threads %d ch %s %s: %.1f Msps, lib %.1f: %.3f" % (d["threads"], d["channels"], "tmpfs" if d["out_dir"].startswith("/dev/shm") else "disk", d["msps"], d["lib_msps"], d["fraction_of_lib"]))
    elif b == "commands_write": print("  write %s %d files chunk %d: %.2f GB/s" % ("tmpfs" if d["dir"].startswith("/dev/shm") else "disk", d["files"], d["chunk"], d["gb_per_s"]))
' "$OUT/commands.jsonl"
  tail -3 "$OUT/commands.err"
fi
stamp done
