#!/usr/bin/env bash
# s15/gpre7's device call (run from the carried copy's root after `source .devdeps/prelude.sh`).
# Everything is built on the VM (Release, sm_90, POLYRX_NATIVE off) and carried in gpre7.tgz: one
# set of binaries (bench_qpsk_stages, bench_qpsk_bank, test_qpsk_stages_cuda) and the CUDA modules
# base (this tree with its switches off: sm_90 SASS identical to main 27064fe's), A, Bc (the
# staging candidates), selected by POLYRX_CUDA_MODULE. Tests, A/B rounds, ncu, sanitizers, bits.
set -u
T=$(pwd); OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; O=/tmp/o; mkdir -p $O
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
say() { echo "== [$(el)s] $*" | tee -a "$OUT/summary.txt"; }
left() { [ $(el) -lt "$1" ]; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >"$OUT/summary.txt" 2>&1
mkdir -p /tmp/g && tar xzf "$T/gpre7.tgz" -C /tmp/g; N=/tmp/g
declare -A MOD=([base]=$N/base.so [A]=$N/A.so [Bc]=$N/Bc.so [B5]=$N/B5.so)
for v in A Bc B5; do
  POLYRX_CUDA_MODULE=${MOD[$v]} timeout 40 $N/test_qpsk_stages_cuda >"$O/t_$v.log" 2>&1 &
done; wait
for v in A Bc B5; do echo "test $v: $(tail -1 $O/t_$v.log)" >>"$OUT/summary.txt"; done
say "tests done"
bench() { # module tag cases...
  local v=$1 tag=$2; shift 2
  POLYRX_CUDA_MODULE=${MOD[$v]} timeout 30 $N/bench_qpsk_stages "$@" >"$O/st_${v}_$tag.jsonl" 2>&1
  python3 - "$v" "$tag" "$O/st_${v}_$tag.jsonl" >>"$OUT/summary.txt" <<'PY'
import json,sys
for l in open(sys.argv[3]):
    if not l.startswith('{"bench":"qpsk_stages","sps"'): continue
    j=json.loads(l); u=lambda k: j[k+'_s']*1e6
    print(f"{sys.argv[1]:5} {sys.argv[2]:3} sps {j['sps']:.3f} {j['format']} pre_om {u('pre_om'):6.1f} pre {u('pre'):6.1f} om_sums {u('om_sums'):5.1f} mf {u('mf'):6.1f} all_folded {u('all_folded'):6.1f} pre_hash {j['pre_hash']} mf_hash {j['mf_hash']} om_hash {j['om_hash']}")
PY
}
for r in 1 2 3; do
  for v in base Bc A B5; do
    case $v in base|Bc) c=(--case 4:1024:cf32 --case 5.333:1024:cf32) ;; A) c=(--case 4:1024:cf32) ;; B5) c=(--case 5.333:1024:cf32) ;; esac
    [ $r = 1 ] && { [ $v = base ] || [ $v = A ]; } && c+=(--case 4:1024:cf16)
    bench $v r$r "${c[@]}"
  done
done
say "bench done"
BEST=$(python3 - "$OUT/summary.txt" <<'PY'
import sys,statistics,re
d={}
for l in open(sys.argv[1]):
    m=re.match(r'(\S+)\s+r\d sps 4.000 cf32 pre_om\s+([\d.]+)',l)
    if m: d.setdefault(m.group(1),[]).append(float(m.group(2)))
c={k:statistics.median(v) for k,v in d.items() if k in('A','Bc')}
print(min(c,key=c.get) if c else 'Bc')
PY
)
say "best: $BEST"
ncu_run() { # module tag sps sections...
  local v=$1 tag=$2 sp=$3; shift 3
  POLYRX_CUDA_MODULE=${MOD[$v]} timeout 40 ncu "$@" --import-source yes -k regex:qpsk_pre_kernel --launch-skip 1 --launch-count 1 \
    -f -o /tmp/ncu_$tag $N/bench_qpsk_stages --profile --case $sp:1024:cf32 >$O/ncu_$tag.log 2>&1
  say "ncu $tag rc=$?"
  ncu --import /tmp/ncu_$tag.ncu-rep --page details >"$O/ncu_${tag}_details.txt" 2>&1
  ncu --import /tmp/ncu_$tag.ncu-rep --page source --csv --print-source sass >"$O/ncu_${tag}_src.csv" 2>&1
}
S=(--section SpeedOfLight --section SchedulerStats --section WarpStateStats --section SourceCounters --section ComputeWorkloadAnalysis)
ncu_run base base4 4 "${S[@]}"
( POLYRX_CUDA_MODULE=${MOD[$BEST]} timeout 30 compute-sanitizer --error-exitcode 9 --tool memcheck --leak-check full $N/test_qpsk_stages_cuda >"$O/memcheck.log" 2>&1; echo "memcheck $BEST rc=$? $(grep -m1 'ERROR SUMMARY' $O/memcheck.log)" >>"$OUT/summary.txt" ) &
( POLYRX_CUDA_MODULE=${MOD[$BEST]} timeout 30 compute-sanitizer --error-exitcode 9 --tool racecheck $N/test_qpsk_stages_cuda >"$O/racecheck.log" 2>&1; echo "racecheck $BEST rc=$? $(grep -m1 'RACECHECK SUMMARY' $O/racecheck.log)" >>"$OUT/summary.txt" ) &
wait; say "sanitizers done"
left 80 && { POLYRX_CUDA_MODULE=${MOD[$BEST]} timeout 25 $N/bench_qpsk_bank --default-only --case 4:1024:cf32 --case 5.333:1024:cf32 --case 4:4096:cf32 >"$O/bank_$BEST.jsonl" 2>&1; say "bank $BEST rc=$?"; grep -o '"sps":[^,]*,"channels":[^,]*\|"format":"[^"]*"\|"bits_hash":"[^"]*"\|"device_kept_gsym_s":[^,]*' "$O/bank_$BEST.jsonl" | paste -sd' ' >>"$OUT/summary.txt"; }
left 90 && ncu_run $BEST best4 4 "${S[@]}"
left 95 && ncu_run base base3 5.333 --section WarpStateStats --section SourceCounters --section SpeedOfLight
cd /tmp && tar czf "$OUT/logs.tgz" o 2>/dev/null
say "done"
cat "$OUT/summary.txt"
