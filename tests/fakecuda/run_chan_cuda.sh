#!/usr/bin/env bash
# test_chan_cuda under AddressSanitizer + UBSan on a machine without a GPU: the CUDA
# channelizer's host side (src/chan/chan_cuda.cu, built by nvcc with its host code instrumented),
# the library (the ASan build of `make test-asan`) and tests/test_chan_cuda.c, unchanged, against
# a fake CUDA runtime (fake_cudart.c: malloc'd device and pinned memory, stream work run as late
# as CUDA allows) and host versions of the kernels (fake_chan_kernels.cu), loaded as the CUDA
# module (fake_module.cu). It finds out-of-bounds and stale host accesses of the host pipeline and
# of the test (copies, staging buffers, the test's own buffers); the device code itself is
# compute-sanitizer's (scripts/gpu_check.sh sanitize). Needs nvcc and FFTW.
#
#   tests/fakecuda/run_chan_cuda.sh [ASAN_BUILD]     (default build-asan; PRX_TEST_SMALL=1 works)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=$(cd "${1:-$ROOT/build-asan}" && pwd)
[ -f "$B/libpolyrx.a" ] && [ -f "$B/libpolyrx_testsupport.a" ] ||
  { echo "run_chan_cuda.sh: no ASan build in $B (make test-asan makes one)" >&2; exit 2; }
command -v nvcc > /dev/null || { echo "run_chan_cuda.sh: nvcc not found" >&2; exit 2; }
CUDA_INC=$(dirname "$(command -v nvcc)")/../include
W=$B/fakecuda
mkdir -p "$W"
F=$ROOT/tests/fakecuda
SAN="-fsanitize=address,undefined -fno-omit-frame-pointer"
NV=(nvcc -c -O1 -g -std=c++17 -I"$ROOT/include" -I"$ROOT/src" -DPRX_HAVE_CUDA=1
    -Xcompiler "-fPIC,-Wall,-Wextra,-fsanitize=address,-fno-omit-frame-pointer")
CC=(gcc -std=c11 -O1 -g -Wall -Wextra -D_GNU_SOURCE -DPRX_HAVE_CUDA=1 $SAN -I"$ROOT/include"
    -I"$ROOT/src" -I"$ROOT/tests/support" -I"$CUDA_INC")
"${NV[@]}" "$ROOT/src/chan/chan_cuda.cu" -o "$W/chan_cuda.o"
"${NV[@]}" "$F/fake_chan_kernels.cu" -o "$W/fake_chan_kernels.o"
"${NV[@]}" "$F/fake_module.cu" -o "$W/fake_module.o"
"${CC[@]}" -fPIC -c "$F/fake_cudart.c" -o "$W/fake_cudart.o"
gcc -shared -o "$W/libfakecuda.so" "$W/fake_cudart.o" "$W/fake_chan_kernels.o" -lfftw3f -lstdc++ -lm
gcc -shared -o "$W/fake_module.so" "$W/fake_module.o" "$W/chan_cuda.o" -L"$W" -lfakecuda \
  -Wl,-rpath,"$W" -lstdc++
# the library's module loader, with the CUDA backend on (the ASan build has it off)
"${CC[@]}" -c "$ROOT/src/core/cuda_module.c" -o "$W/cuda_module.o"
"${CC[@]}" -c "$ROOT/tests/test_chan_cuda.c" -o "$W/test_chan_cuda.o"
gcc $SAN -o "$W/test_chan_cuda" "$W/test_chan_cuda.o" "$W/cuda_module.o" \
  "$B/libpolyrx_testsupport.a" "$B/libpolyrx.a" -L"$W" -lfakecuda -Wl,-rpath,"$W" -lfftw3f -lm \
  -lpthread -ldl
# the fake runtime keeps its streams and events to the end: no leak report
POLYRX_CUDA_MODULE=$W/fake_module.so ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$W/test_chan_cuda"
