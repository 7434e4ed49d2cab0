#!/usr/bin/env bash
# Runs each fuzz target of tests/fuzz under real libFuzzer (clang, ASan + UBSan, coverage) for
# SECONDS seconds, one after the other. See tests/fuzz/README.md.
#
#   usage: scripts/fuzz.sh [SECONDS] [TARGET...]      (default: 60 s each, every target)
#   env:   BUILD (default build-fuzz), CC (default clang, else clang-14), JOBS (libFuzzer
#          workers per target, default 1), FUZZ_ARGS (extra libFuzzer flags)
#
# Inputs that find new coverage go to BUILD/fuzz-corpus/TARGET (the seeds in
# tests/fuzz/corpus/TARGET are read, never written). A crash, sanitizer report, timeout (10 s) or
# out-of-memory (2 GiB) is saved as tests/fuzz/crashes/TARGET-<kind>-<sha1>; rerun it with
#   BUILD/fuzz_TARGET tests/fuzz/crashes/FILE     (or any build's fuzz_TARGET_regress FILE).
# Exit status: 0 when every target ran clean, 1 otherwise (the others still run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
[[ $# -gt 0 ]] && shift
build=${BUILD:-$root/build-fuzz}
jobs=${JOBS:-1}
cc=${CC:-}
if [[ -z $cc ]]; then
  if command -v clang >/dev/null; then cc=clang; else cc=clang-14; fi
fi

if [[ $# -gt 0 ]]; then
  targets=("$@")
else
  targets=()
  for f in "$root"/tests/fuzz/fuzz_*.c; do
    t=$(basename "$f" .c)
    targets+=("${t#fuzz_}")
  done
fi

echo "== configuring $build with $cc (POLYRX_FUZZ=ON, ASan + UBSan)"
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPOLYRX_CUDA=OFF -DPOLYRX_FUZZ=ON -DPOLYRX_SANITIZE=address,undefined >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}"

mkdir -p "$root/tests/fuzz/crashes"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
failed=()
for t in "${targets[@]}"; do
  work="$build/fuzz-corpus/$t"
  mkdir -p "$work"
  dict=() par=()
  [[ $jobs -gt 1 ]] && par=(-jobs="$jobs" -workers="$jobs")
  [[ -f $root/tests/fuzz/$t.dict ]] && dict=(-dict="$root/tests/fuzz/$t.dict")
  echo "== fuzz_$t for $secs s"
  # shellcheck disable=SC2086
  if "$build/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -print_final_stats=1 "${par[@]}" \
    -artifact_prefix="$root/tests/fuzz/crashes/$t-" "${dict[@]}" ${FUZZ_ARGS:-} \
    "$work" "$root/tests/fuzz/corpus/$t" 2>"$build/fuzz_$t.log"; then
    grep -E "^stat::(number_of_executed_units|new_units_added|peak_rss_mb)|^#[0-9]+.*DONE" \
      "$build/fuzz_$t.log" | tr '\n' ' '
    echo
    echo "   clean; $(find "$work" -type f | wc -l) corpus files in $work"
  else
    echo "   FAILED: see $build/fuzz_$t.log and tests/fuzz/crashes/$t-*"
    grep -E "ERROR|runtime error|fuzz invariant failed|SUMMARY|Test unit written" \
      "$build/fuzz_$t.log" | head -8 | sed 's/^/   /'
    failed+=("$t")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "== failures in: ${failed[*]}"
  exit 1
fi
echo "== every target ran $secs s clean"
