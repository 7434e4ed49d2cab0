#!/usr/bin/env bash
# polyrx runs wherever it is copied: the installed library does not link the CUDA runtime or
# cuFFT (the CUDA backend is the module libpolyrx_cuda.so, loaded at run time); the installed
# command started without a usable module (moved away, POLYRX_CUDA_MODULE pointing nowhere, a
# file that is not a module, a module whose own libraries are missing) starts, channelizes on
# the CPU with --backend auto, and fails with --backend cuda with a message that says why; the
# CPU kernels forced to the baseline instruction set (POLYRX_CPU=generic) give the same
# channels as the ones chosen for this CPU, within float rounding.
set -u
P=${1:?usage: cli_portable.sh PATH_TO_POLYRX (in its build directory)}
B=$(cd "$(dirname "$P")" && pwd)
. "$(dirname "$0")/support/cli_test.sh"
for tool in cmake cc readelf; do
  command -v $tool >/dev/null || {
    echo "FAIL: $tool is needed by this test (scripts/setup.sh installs it)" >&2
    exit 1
  }
done
cmake --install "$B" --prefix "$T/p" >"$T/install.log" 2>&1 || {
  cat "$T/install.log" >&2
  echo "FAIL: cmake --install failed" >&2
  exit 1
}
X="$T/p/bin/polyrx"
lib=$(ls "$T"/p/lib*/libpolyrx.so "$T"/p/lib/*/libpolyrx.so 2>/dev/null | head -1)
[ -n "$lib" ] || {
  echo "FAIL: no libpolyrx.so installed" >&2
  exit 1
}
libdir=$(dirname "$lib")
cuda_built=0
grep -q '^POLYRX_HAVE_CUDA:INTERNAL=ON' "$B/CMakeCache.txt" 2>/dev/null && cuda_built=1
[ -e "$B/libpolyrx_cuda.so" ] && cuda_built=1

# ---- the library and the command link no CUDA library ----
for f in "$lib" "$X"; do
  needed=$(readelf -d "$f" | grep NEEDED)
  echo "$needed" | grep -qiE 'cudart|cufft|libcuda|stdc\+\+' &&
    bad "$(basename "$f") needs CUDA or C++ libraries: $(echo "$needed" | grep -iE 'cud|fft|stdc')"
done
if [ $cuda_built = 1 ]; then
  [ -e "$libdir/libpolyrx_cuda.so" ] || bad "no libpolyrx_cuda.so installed beside libpolyrx.so"
fi

# ---- input: a tone at channel 3 of 16 ----
python3 - "$T/in.cf32" <<'EOF'
import math, struct, sys
N, fs = 4096, 16000.0
with open(sys.argv[1], "wb") as f:
    for n in range(N):
        f.write(struct.pack("<ff", 0.5 * math.cos(2 * math.pi * 3000 / fs * n),
                            0.5 * math.sin(2 * math.pi * 3000 / fs * n)))
EOF
chan() { # chan OUTDIR ARGS...: channelize the input into OUTDIR
  local o=$1
  shift
  "$X" channelize -i "$T/in.cf32" -s 16k -K 16 -P 8 -o "$o" -q "$@"
}

# no_module LABEL ENV...: with the module unusable as ENV makes it, the command starts, auto
# runs on the CPU, and --backend cuda fails naming the module problem (WANT, a regex)
no_module() {
  local label=$1 want=$2
  shift 2
  env "$@" "$X" --version >"$T/v.txt" 2>&1 || bad "$label: polyrx --version fails: $(cat "$T/v.txt")"
  env "$@" "$X" --help 2>&1 | grep -q "CUDA backend: not available" ||
    bad "$label: --help does not say the CUDA backend is not available"
  rm -rf "$T/auto"
  if env "$@" "$X" channelize -i "$T/in.cf32" -s 16k -K 16 -P 8 -o "$T/auto" -q 2>"$T/err.txt"; then
    [ -s "$T/auto/ch0003.sigmf-data" ] || bad "$label: auto wrote no channel 3"
  else
    bad "$label: channelize --backend auto failed: $(cat "$T/err.txt")"
  fi
  if env "$@" "$X" channelize -i "$T/in.cf32" -s 16k -K 16 -P 8 -o "$T/cuda" -q --backend cuda \
    2>"$T/err.txt"; then
    bad "$label: --backend cuda succeeded without a usable CUDA module"
  else
    [ "$(wc -l <"$T/err.txt")" -le 2 ] || bad "$label: more than one error line: $(cat "$T/err.txt")"
    grep -qiE "$want" "$T/err.txt" || bad "$label: --backend cuda message lacks '$want': $(cat "$T/err.txt")"
  fi
}

if [ $cuda_built = 1 ]; then
  no_module "POLYRX_CUDA_MODULE nowhere" "CUDA.*module.*$T/nowhere.*not found" \
    POLYRX_CUDA_MODULE="$T/nowhere/libpolyrx_cuda.so"
  no_module "POLYRX_CUDA_MODULE empty" "CUDA module.*not found" POLYRX_CUDA_MODULE=
  # a file that is not a shared object: the dynamic loader's own message
  echo "not a module" >"$T/garbage.so"
  no_module "a module that is no ELF file" "cannot be loaded.*garbage.so" \
    POLYRX_CUDA_MODULE="$T/garbage.so"
  # a shared object without the module's table
  no_module "a shared object that is not a module" "not a polyrx CUDA module" \
    POLYRX_CUDA_MODULE="$lib"
  # a module whose own dependency is missing (as libcudart.so is on a machine without CUDA):
  # the dynamic loader's message, naming the library
  echo 'int prx_gone(void) { return 1; }' >"$T/gone.c"
  echo 'int prx_gone(void); int prx_uses_gone(void) { return prx_gone(); }' >"$T/mod.c"
  if cc -shared -fPIC -o "$T/libprx_gone.so" "$T/gone.c" &&
    cc -shared -fPIC -o "$T/mod.so" "$T/mod.c" -L"$T" -lprx_gone; then
    rm "$T/libprx_gone.so"
    no_module "a module with a missing library" "libprx_gone.so.*cannot open shared object" \
      POLYRX_CUDA_MODULE="$T/mod.so"
  else
    bad "cannot build the stand-in module"
  fi
  # the installed module moved away: the search (beside the library, the install libdir)
  # finds none
  mv "$libdir/libpolyrx_cuda.so" "$T/moved.so"
  no_module "module moved away" "CUDA module libpolyrx_cuda.so was not found.*looked in" \
    POLYRX_CPU=
  mv "$T/moved.so" "$libdir/libpolyrx_cuda.so"
  # with the module in place and no GPU, cuda names the runtime's reason
  if ! "$X" --help 2>&1 | grep -q "CUDA backend: available"; then
    no_module "no GPU" "no CUDA device is usable: ." POLYRX_CPU=
  fi
else
  no_module "a build without CUDA" "no CUDA backend" POLYRX_CPU=
fi

# ---- a program linked with the installed shared library finds the module beside it ----
san=$(sed -n 's/^POLYRX_SANITIZE:STRING=//p' "$B/CMakeCache.txt" 2>/dev/null)
cat >"$T/prog.c" <<'C'
#include <polyrx.h>
#include <stdio.h>

int main(void) {
  prx_chan_config cfg = prx_chan_config_default();
  cfg.channels = 64;
  cfg.backend = PRX_BACKEND_CUDA;
  prx_chan *ch = NULL;
  prx_status st = prx_chan_create(&cfg, &ch);
  printf("%s\n", st == PRX_OK ? "cuda" : prx_last_error());
  prx_chan_destroy(ch);
  return 0;
}
C
if cc ${san:+-fsanitize=$san} -o "$T/prog" "$T/prog.c" -I"$T/p/include" -L"$libdir" -lpolyrx \
  -Wl,-rpath,"$libdir" 2>"$T/err.txt"; then
  out=$("$T/prog" 2>&1)
  if [ $cuda_built = 1 ]; then
    case $out in
    cuda | *"no CUDA device is usable"*) ;;
    *) bad "a program on the installed libpolyrx.so does not find the module beside it: $out" ;;
    esac
  else
    case $out in
    *"no CUDA backend"*) ;;
    *) bad "a program on libpolyrx.so without CUDA: '$out'" ;;
    esac
  fi
else
  bad "cannot build a program against the installed library: $(cat "$T/err.txt")"
fi

# ---- the baseline CPU kernels (POLYRX_CPU=generic) against the ones chosen for this CPU ----
chan "$T/best" --backend cpu || bad "channelize on the CPU failed"
POLYRX_CPU=generic chan "$T/generic" --backend cpu || bad "channelize with POLYRX_CPU=generic failed"
# (where the CPU has AVX2 and FMA the two differ by rounding: fused against separate
# multiply-adds, which shows that POLYRX_CPU took effect)
avx2=0
grep -qw avx2 /proc/cpuinfo 2>/dev/null && grep -qw fma /proc/cpuinfo && avx2=1
python3 - "$T/best" "$T/generic" $avx2 <<'EOF' || bad "POLYRX_CPU=generic: channels differ beyond rounding, or not at all on an AVX2 CPU"
import glob, os, struct, sys
err = ref = 0.0  # over all channels (most hold only the stop-band leakage)
files = sorted(glob.glob(os.path.join(sys.argv[1], "*.sigmf-data")))
assert len(files) == 16, files
for f in files:
    a = open(f, "rb").read()
    b = open(os.path.join(sys.argv[2], os.path.basename(f)), "rb").read()
    assert len(a) == len(b) and len(a) > 0, f
    x = struct.unpack("<%df" % (len(a) // 4), a)
    y = struct.unpack("<%df" % (len(b) // 4), b)
    err += sum((p - q) ** 2 for p, q in zip(x, y))
    ref += sum(p * p for p in x)
rel = (err / ref) ** 0.5
print("relative L2 difference, generic vs dispatched kernels: %.3g" % rel)
sys.exit(0 if rel < 1e-5 and (rel > 0 or sys.argv[3] == "0") else 1)
EOF

if [ "$fail" -ne 0 ]; then
  echo "cli_portable: $fail check(s) failed" >&2
  exit 1
fi
echo "cli_portable: all checks passed (CUDA module built: $cuda_built)"
