#!/usr/bin/env bash
# `polyrx channelize --backend cuda` in its own process: one build against another, held and cold,
# beside the floors of the same run, in one device call (issue 13's own-process case):
#   - the probe (bench/cuda_startup_probe.cu, built by nvcc: the CUDA runtime's pieces alone)
#     and `bench_commands cudastart` (polyrx's own: module, context, page-locked block, object)
#     cold, then the latter held;
#   - the floors: PCIe host-to-device (the probe's pinned copy; 4 bytes a ci16 sample), the `cat`
#     rate of the 2^28-sample ci16 input in /dev/shm (best of 3), and for all 1024 channels the
#     tmpfs write rate of their bytes into 1024 files in 1 MiB writes by 1 and by 12 processes;
#   - per set (cold: nothing else on the GPU; held: the probe holding a context meanwhile) and
#     case (64 channels as cf32, cf16, ci16; all 1024 as cf16), REPS rounds in which BEFORE, AFTER
#     and AFTER with each of VARIANTS ("NAME=VAR=VALUE ...", run on the cases in VCASES) run one
#     after the other, PAUSE seconds after each run (a process's end may leave the driver busy,
#     which would make the next run "held"); best and median wall time of each, its fraction of
#     min(PCIe, cat, write) (PIECES=0: no probe, the PCIe rates from H2D and D2H, GB/s, of an
#     earlier call); whether each build's and variant's outputs are BEFORE's bytes (the
#     data files); one POLYRX_TIMING line of each (with the input map's line), with its wall time (the rest of the wall time is the process's exec and end);
#   - the host's transparent huge pages mode and the GPU's compute mode (the detached end is the
#     default only in the default compute mode).
# Variant of the sixteenth session: keep=POLYRX_CUDA_EXIT=keep (the end as before the detached
# default). The read-ahead's variants (POLYRX_AHEAD...) are on branch s16/gstart2, not in main.
# JSON lines on stdout, a table on stderr.
# usage: bench/gpu_start_ab.sh BEFORE_DIR AFTER_DIR PROBE   (DIR: polyrx, libpolyrx_cuda.so and
#        bench_commands side by side)
set -u
BD=$1
AD=$2
PROBE=$3
REPS=${REPS:-3}
PAUSE=${PAUSE:-0.3}
CASES=${CASES:-"64:cf32 64:cf16 64:ci16 1024:cf16"}
VCASES=${VCASES:-"64:cf32 1024:cf16"}
SETS=${SETS:-"cold held"}
W=$(mktemp -d /dev/shm/gstart.XXXXXX)
trap 'rm -rf "$W"' EXIT
n=$((1 << ${GS_LOG2:-28}))
BE=${GS_BACKEND:-cuda}
x=$W/g.ci16
ns() { date +%s%N; }
"$AD/polyrx" gen -q -o "$x" -F ci16 -s 1G -n "$n" --carrier f=1M,rs=1M --esn0 20 || exit 1
# what the detached end (the default compute mode) and a huge-page ring would depend on
thp=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
cm=$(nvidia-smi --query-gpu=compute_mode --format=csv,noheader 2>/dev/null | head -1)
echo "{\"bench\":\"gstart_host\",\"thp\":\"${thp:-?}\",\"compute_mode\":\"${cm:-?}\"}"

# ---- the pieces, cold (nothing on the GPU yet); PIECES=0: none, H2D and D2H (GB/s) given ----
if [ "${PIECES:-1}" != 0 ]; then
  "$PROBE" "$x" | sed 's/^/cold /' | tee "$W/probe.txt"
  sleep 1
  "$AD/bench_commands" cudastart | sed 's/^/cold /'
  sleep 1
  H2D=$(awk '$2 == "probe" && $3 == "h2d_pinned" { print $4 }' "$W/probe.txt")
  D2H=$(awk '$2 == "probe" && $3 == "d2h_pinned" { print $4 }' "$W/probe.txt")
fi
echo "{\"bench\":\"gstart_pcie\",\"h2d_GBps\":${H2D:-0},\"d2h_GBps\":${D2H:-0}}"
best=0
for _ in 1 2 3; do
  s=$(ns)
  cat "$x" >/dev/null
  t=$(($(ns) - s))
  { [ "$best" = 0 ] || [ "$t" -lt "$best" ]; } && best=$t
done
cat_gsps=$(awk -v n="$n" -v t="$best" 'BEGIN { printf "%.3f", n / (t / 1e9) / 1e9 }')
echo "{\"bench\":\"gstart_cat\",\"gsps\":$cat_gsps}"
# tmpfs write of all 1024 channels' cf16 bytes (2^19 outputs x 4 bytes x 1024 = 2 GiB)
mib=2048
WR=0
for k in 1 12; do
  rm -rf "$W/w"
  mkdir -p "$W/w"
  s=$(ns)
  for i in $(seq "$k"); do
    mkdir -p "$W/w/$i"
    "$AD/bench_commands" write "$W/w/$i" $((1024 / k)) $((mib / k)) 1048576 >/dev/null &
  done
  wait
  t=$(($(ns) - s))
  r=$(awk -v b=$(((mib / k) * k)) -v t="$t" 'BEGIN { printf "%.3f", b * 1048576 / t }')
  echo "{\"bench\":\"gstart_write\",\"processes\":$k,\"gb_per_s\":$r}"
  awk -v a="$r" -v b="$WR" 'BEGIN { exit !(a > b) }' && WR=$r
done
rm -rf "$W/w"

# the environment settings of a label (VARIANTS: "NAME=VAR=VALUE[,VAR=VALUE...] ...")
label_env() {
  local v
  for v in ${VARIANTS:-}; do [ "${v%%=*}" = "$1" ] && echo "${v#*=}" | tr ',' ' '; done
}

run_case() { # set, case (CH:FMT), label, bin dir, env...
  local set=$1 cs=$2 label=$3 dir=$4
  shift 4
  local ch=${cs%%:*} fmt=${cs#*:} copt=()
  [ "$ch" = 64 ] && copt=(-c 0-63)
  rm -rf "$W/o_$label"
  local s e
  s=$(ns)
  env "$@" "$dir/polyrx" channelize -q --backend "$BE" -F ci16 -i "$x" -s 1G -K 1024 "${copt[@]}" \
    --out-format "$fmt" -o "$W/o_$label" >/dev/null 2>"$W/err_$label" ||
    echo "gpu_start_ab: $label failed: $(tail -1 "$W/err_$label")" >&2
  e=$(ns)
  echo $(((e - s) / 1000)) >>"$W/t_${set}_${cs/:/_}_$label"
  sleep "$PAUSE"
}

one_set() {
  local set=$1 cs label v name
  for cs in $CASES; do
    local labels="before after"
    for _ in $(seq "$REPS"); do
      run_case "$set" "$cs" before "$BD"
      run_case "$set" "$cs" after "$AD"
      for v in ${VARIANTS:-}; do
        [[ " $VCASES " == *" $cs "* ]] || continue
        name=${v%%=*}
        # shellcheck disable=SC2046
        run_case "$set" "$cs" "$name" "$AD" $(label_env "$name")
      done
    done
    for v in ${VARIANTS:-}; do [[ " $VCASES " == *" $cs "* ]] && labels="$labels ${v%%=*}"; done
    local fl ch=${cs%%:*}
    # the floor in Gsps of input: PCIe (4 bytes in; ch * osz / 512 out at d2h), cat, write (1024)
    fl=$(awk -v h="$H2D" -v d="$D2H" -v c="$cat_gsps" -v w="$WR" -v ch="$ch" -v f="${cs#*:}" 'BEGIN {
      o = (f == "cf32" ? 8 : 4) * ch / 512; p = h / 4; if (d / o < p) p = d / o; fl = p < c ? p : c
      if (ch == 1024 && w / o < fl) fl = w / o; printf "%.3f", fl }')
    for label in $labels; do
      local same=yes
      [ "$label" = before ] || diff -r -q -x '*.sigmf-meta' -x '*.sigmf-collection' "$W/o_before" \
        "$W/o_$label" >/dev/null || same=no
      local tl wall s2
      s2=$(ns)
      local dir=$AD
      [ "$label" = before ] && dir=$BD
      local copt=()
      [ "$ch" = 64 ] && copt=(-c 0-63)
      # shellcheck disable=SC2046
      tl=$(env $(label_env "$label") POLYRX_TIMING=1 "$dir/polyrx" channelize -q --backend "$BE" -F ci16 -i "$x" \
        -s 1G -K 1024 "${copt[@]}" --out-format "${cs#*:}" -o "$W/o_t" 2>&1 >/dev/null |
        grep -E 'timing \(ms\)|in place' | sed 's/"//g' | tr '\n' ' ')
      wall=$((($(ns) - s2) / 1000))
      rm -rf "$W/o_t"
      sleep "$PAUSE"
      sort -n "$W/t_${set}_${cs/:/_}_$label" | awk -v set="$set" -v cs="$cs" -v label="$label" \
        -v n="$n" -v fl="$fl" -v same="$same" -v tl="$tl" -v wall="$wall" '
        { t[NR] = $1 } END { b = t[1] / 1e6; m = t[int((NR + 1) / 2)] / 1e6
          printf "{\"bench\":\"gstart_ab\",\"set\":\"%s\",\"case\":\"%s\",\"build\":\"%s\",\"runs\":%d,\"best_ms\":%.1f,\"median_ms\":%.1f,\"floor_gsps\":%s,\"best_of_floor\":%.3f,\"median_of_floor\":%.3f,\"same_bytes\":\"%s\",\"timing_wall_ms\":%.1f,\"timing\":\"%s\"}\n", set, cs, label, NR, b * 1e3, m * 1e3, fl, n / b / 1e9 / fl, n / m / 1e9 / fl, same, wall / 1e3, tl
          printf "%-5s %-10s %-10s best %7.1f ms (%.3f of floor)  median %7.1f (%.3f)  same %s\n", set, cs, label, b * 1e3, n / b / 1e9 / fl, m * 1e3, n / m / 1e9 / fl, same > "/dev/stderr" }'
    done
    rm -rf "$W"/o_*
  done
}

for set in $SETS; do
  if [ "$set" = held ]; then
    "$PROBE" --hold 900 >"$W/holder.log" 2>&1 &
    hp=$!
    for _ in $(seq 100); do grep -q ready "$W/holder.log" && break; sleep 0.1; done
    "$AD/bench_commands" cudastart | sed 's/^/held /'
  fi
  one_set "$set"
  if [ "$set" = held ]; then
    kill "$hp"
    wait "$hp" 2>/dev/null
  fi
done
