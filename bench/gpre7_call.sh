#!/usr/bin/env bash
# s15/gpre7's device call (run from the carried copy's root after `source .devdeps/prelude.sh`):
# builds the session's base (base.tgz: main 27064fe) and this tree, the staging candidates as
# module variants (-D switches of qpsk_stages_cuda.cu), tests them, A/B of bench_qpsk_stages
# alternating, ncu of pre_om, sanitizers, the bank's bits. Logs under $OUT.
set -u
T=$(pwd); OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; O=/tmp/o; mkdir -p $O
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
say() { echo "== [$(el)s] $*" | tee -a "$OUT/summary.txt"; }
left() { [ $(el) -lt "$1" ]; }
if [ -d /tmp/devdeps/usr ]; then
  export PKG_CONFIG_PATH=/tmp/devdeps/usr/lib/x86_64-linux-gnu/pkgconfig:/tmp/devdeps/usr/share/pkgconfig
  export PKG_CONFIG_SYSROOT_DIR=/tmp/devdeps
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >"$O/gpu.txt" 2>&1
CF=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DPOLYRX_NATIVE=OFF -DPOLYRX_CUDA=ON)
N=/tmp/bn; B=/tmp/bb
rm -rf /tmp/src-base && mkdir -p /tmp/src-base && tar xzf "$T/base.tgz" -C /tmp/src-base
( cmake -S "$T" -B $N "${CF[@]}" >"$O/build.log" 2>&1 &&
  cmake --build $N -j11 --target polyrx_cuda bench_qpsk_stages test_qpsk_stages_cuda bench_qpsk_bank >>"$O/build.log" 2>&1
  echo "new rc=$?" >/tmp/bn.rc ) &
( cmake -S /tmp/src-base -B $B "${CF[@]}" >/tmp/build_base.log 2>&1 &&
  cmake --build $B -j5 --target polyrx_cuda >>/tmp/build_base.log 2>&1; echo "base rc=$?" >/tmp/bb.rc ) &
wait
say "build: $(cat /tmp/bn.rc) $(cat /tmp/bb.rc)"; tail -3 /tmp/build_base.log >>"$O/build.log"
# the variants: qpsk_stages_cuda.cu with a switch, linked with the other objects of this tree's module
D=$N/CMakeFiles/polyrx_cuda.dir
variant() { # name flags...
  local v=$1; shift; mkdir -p /tmp/var/$v
  (cd $N && nvcc -DPRX_HAVE_CUDA=1 --options-file $D/includes_CUDA.rsp -O3 -DNDEBUG \
    --generate-code=arch=compute_90,code=[compute_90,sm_90] -Xcompiler=-fPIC "$@" \
    -c "$T/src/qpsk/qpsk_stages_cuda.cu" -o /tmp/var/$v/s.o &&
   sed "s#CMakeFiles/polyrx_cuda.dir/src/qpsk/qpsk_stages_cuda.cu.o#/tmp/var/$v/s.o#" $D/objects1 >/tmp/var/$v/objs &&
   g++ -fPIC -Wl,--version-script=$T/cmake/polyrx_cuda.map -Wl,--no-undefined -shared -o /tmp/var/$v/libpolyrx_cuda.so \
     @/tmp/var/$v/objs @$D/linkLibs.rsp -L/usr/local/cuda/targets/x86_64-linux/lib/stubs -L/usr/local/cuda/targets/x86_64-linux/lib) \
    >/tmp/var/$v.log 2>&1; echo "$v rc=$?" >>"$OUT/summary.txt"
}
variant A -DPRE_UNIT_STAGING=1 & variant Bc -DPRE_UNIT_STAGING=2 & variant C -DPRE_OM_UNIT=0 & wait
declare -A MOD=([base]=$B/libpolyrx_cuda.so [new]=$N/libpolyrx_cuda.so [A]=/tmp/var/A/libpolyrx_cuda.so
  [Bc]=/tmp/var/Bc/libpolyrx_cuda.so [C]=/tmp/var/C/libpolyrx_cuda.so)
say "variants built"
# tests: every module under test_qpsk_stages_cuda (the grid bit for bit, the sums, the edges)
for v in A Bc C; do
  POLYRX_CUDA_MODULE=${MOD[$v]} timeout 60 $N/test_qpsk_stages_cuda >"$O/t_$v.log" 2>&1 &
done; wait
for v in A Bc C; do echo "test $v: $(tail -1 $O/t_$v.log)" >>"$OUT/summary.txt"; done
say "tests done"
# A/B: alternating rounds, sps 4 cf32 (the candidates' kernel), 16/3 for base and new
bench() { # module tag cases...
  local v=$1 tag=$2; shift 2
  POLYRX_CUDA_MODULE=${MOD[$v]} timeout 60 $N/bench_qpsk_stages "$@" >"/tmp/st_${v}_$tag.jsonl" 2>&1
  cat "/tmp/st_${v}_$tag.jsonl" >>"$OUT/stages.jsonl"
  python3 - "$v" "$tag" "/tmp/st_${v}_$tag.jsonl" >>"$OUT/summary.txt" <<'PY'
import json,sys
for l in open(sys.argv[3]):
    if not l.startswith('{"bench":"qpsk_stages","sps"'): continue
    j=json.loads(l); u=lambda k: j[k+'_s']*1e6
    print(f"{sys.argv[1]:5} {sys.argv[2]:3} sps {j['sps']:.3f} {j['format']} pre_om {u('pre_om'):6.1f} pre {u('pre'):6.1f} om_sums {u('om_sums'):5.1f} mf {u('mf'):6.1f} all_folded {u('all_folded'):6.1f} pre_hash {j['pre_hash']} mf_hash {j['mf_hash']} om_hash {j['om_hash']}")
PY
}
bench base r0 --case 4:1024:cf16; bench A r0 --case 4:1024:cf16
for r in 1 2 3; do
  for v in base Bc A C; do
    if [ $r = 3 ] && ! left 85; then break; fi
    c=(--case 4:1024:cf32); [ $r = 1 ] && [ $v = base ] && c+=(--case 5.333:1024:cf32)
    bench $v r$r "${c[@]}"
  done
done
say "bench done"
# the fastest candidate by its median pre_om at sps 4 cf32
BEST=$(python3 - "$OUT/summary.txt" <<'PY'
import sys,statistics,re
d={}
for l in open(sys.argv[1]):
    m=re.match(r'(\S+)\s+r\d sps 4.000 cf32 pre_om\s+([\d.]+)',l)
    if m: d.setdefault(m.group(1),[]).append(float(m.group(2)))
c={k:statistics.median(v) for k,v in d.items() if k in('A','Bc','C')}
print(min(c,key=c.get) if c else 'new')
PY
)
say "best: $BEST"
ncu_run() { # module tag skip sps
  local v=$1 tag=$2 sk=$3 sp=$4; shift 4
  POLYRX_CUDA_MODULE=${MOD[$v]} timeout 60 ncu "$@" --import-source yes -k regex:qpsk_pre_kernel --launch-skip $sk --launch-count 1 \
    -f -o /tmp/ncu_$tag $N/bench_qpsk_stages --profile --case $sp:1024:cf32 >/tmp/ncu_$tag.log 2>&1
  echo "ncu $tag rc=$?" >>"$OUT/summary.txt"
  ncu --import /tmp/ncu_$tag.ncu-rep --page details >"$O/ncu_${tag}_details.txt" 2>&1
  ncu --import /tmp/ncu_$tag.ncu-rep --page source --csv --print-source sass >/tmp/ncu_${tag}_src.csv 2>&1
}
# pre_om is the second qpsk_pre_kernel launch of --profile (all: pre; all_folded: pre_om)
left 100 && ncu_run base base4 1 4 --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --section InstructionStats
left 110 && { POLYRX_CUDA_MODULE=${MOD[$BEST]} timeout 40 compute-sanitizer --error-exitcode 9 --tool memcheck --leak-check full $N/test_qpsk_stages_cuda >"$O/memcheck.log" 2>&1; say "memcheck $BEST rc=$? $(grep -m1 'ERROR SUMMARY' $O/memcheck.log)"; }
left 118 && { POLYRX_CUDA_MODULE=${MOD[$BEST]} timeout 40 compute-sanitizer --error-exitcode 9 --tool racecheck $N/test_qpsk_stages_cuda >"$O/racecheck.log" 2>&1; say "racecheck $BEST rc=$? $(grep -m1 'RACECHECK SUMMARY' $O/racecheck.log)"; }
left 124 && { POLYRX_CUDA_MODULE=${MOD[$BEST]} timeout 40 $N/bench_qpsk_bank --default-only --case 4:1024:cf32 --case 5.333:1024:cf32 --case 4:4096:cf32 >"$O/bank_$BEST.jsonl" 2>&1; say "bank $BEST rc=$?"; grep -o '"sps":[^,]*,"channels":[^,]*\|"format":"[^"]*"\|"bits_hash":"[^"]*"' "$O/bank_$BEST.jsonl" | paste -sd' ' >>"$OUT/summary.txt"; }
[ "$BEST" != new ] && left 128 && ncu_run $BEST best4 1 4 --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy --section InstructionStats
left 132 && ncu_run base base3 1 5.333 --section WarpStateStats --section SourceCounters --section SpeedOfLight --section LaunchStats
cp /tmp/ncu_*_src.csv /tmp/ncu_*.log /tmp/var/*.log $O/ 2>/dev/null; cd /tmp && tar czf "$OUT/logs.tgz" o 2>/dev/null
say "done"
cat "$OUT/summary.txt"
