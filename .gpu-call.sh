#!/usr/bin/env bash
# The device call of this branch: main's CPU commands against the library (cpu mode), then main
# (before), this branch (after: prefetch_out) and this branch without it (pf0) against the
# library in alternating rounds (chanvar), then the library alone with and without prefetch_out,
# in one buffer and in 6 slots with a reader thread, alternating. Full logs under $OUT.
set -u
O=${OUT:-/tmp/hone_out}
mkdir -p "$O"
B=$PWD/bins
S=$SECONDS
{ echo "host: $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), load $(cut -d' ' -f1-3 /proc/loadavg)"; uname -r; ldd "$B/new/polyrx"; md5sum "$B"/*/*; } >"$O/info.txt" 2>&1
DISK_DIR=none REPS=3 bash bench/bench_commands.sh "$B/main" cpu >"$O/cpu_main.jsonl" 2>"$O/cpu_main.err"
echo "cpu done at $((SECONDS - S)) s, load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$O/info.txt"
BEFORE=$B/main/polyrx ROUNDS=${R:-10} ROUNDS64=${R64:-2} VARIANTS="pf0=POLYRX_CHAN_PREFETCH=0" ONLY_T1="pf0" \
  TIMING_RUNS=2 TIMING_FIRST=1 TIMING_LOG=$O/timing.log \
  bash bench/bench_commands.sh "$B/new" chanvar >"$O/chanvar.jsonl" 2>"$O/chanvar.err"
bash bench/bench_commands.sh "$B/new" chanvar_summary <"$O/chanvar.jsonl" >"$O/chanvar_summary.txt" 2>&1
echo "chanvar done at $((SECONDS - S)) s" >>"$O/info.txt"
x=$(mktemp /dev/shm/hone_lib.XXXXXX)
"$B/new/polyrx" gen -q -o "$x" -s 100M -n "${LIBN:-16777216}" --carrier f=1M,rs=100k --esn0 20
names=(slot slot_pf rd6 rd6_pf)
envs=("X=0" "BENCH_CHAN_PREFETCH=1" "BENCH_CHAN_SLOTS=6 BENCH_CHAN_READER=1"
  "BENCH_CHAN_SLOTS=6 BENCH_CHAN_READER=1 BENCH_CHAN_PREFETCH=1")
for r in $(seq "${LR:-8}"); do
  for k in 0 1 2 3; do
    i=$(((k + r) % 4))
    # shellcheck disable=SC2086
    echo "{\"round\":$r,\"what\":\"${names[$i]}\",\"line\":$(env ${envs[$i]} "$B/new/bench_commands" chan "$x" cf32 1024 1 1 0)}"
  done
done >"$O/lib.jsonl" 2>&1
rm -f "$x"
echo "all done at $((SECONDS - S)) s, load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$O/info.txt"
tail -5 "$O/cpu_main.err"; grep -h 'same bytes' "$O/chanvar.err"; cat "$O/chanvar_summary.txt"; tail -12 "$O/chanvar.err"
