#!/usr/bin/env bash
# polyrx channelize on the CUDA backend: the device packs the rows into the output format and
# forms the power sums (the writers copy bytes only); against the same build with the writers
# packing and summing (POLYRX_GPU_POST=0, as on the CPU): the same bytes in every format
# (cf32, cf16, ci16; recordings and -o -), the same warnings (saturated ci16 values, outputs that
# overflow float32), and the metadata's power within 1e-9 dB (only the order of the additions
# differs). Several blocks and writers, a channel subset. Skips (77) without a usable GPU.
set -u
POLYRX=${1:?usage: cli_channelize_cuda.sh path/to/polyrx}
[ -x "$POLYRX" ] || { echo "no polyrx binary at $POLYRX"; exit 1; }
POLYRX=$(cd "$(dirname "$POLYRX")" && pwd)/$(basename "$POLYRX")
# python3 present, scratch directory $T, bad() and the failure count $fail
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_test.sh"
cd "$T" || exit 1

# ci16 tones and noise; cf32 with a tone beyond full scale (its channel's ci16 outputs saturate);
# cf32 with bursts near 3.4e38 (some outputs overflow float32 in the filter); 300000 samples each
python3 - <<'EOF'
import math, random, struct
random.seed(7)
N = 300000
with open("in.ci16", "wb") as f:
    for n in range(N):
        re = 0.45 * math.cos(0.7 * n) + 0.45 * math.cos(-2.1 * n + 0.3) + random.gauss(0, 0.02)
        im = 0.45 * math.sin(0.7 * n) + 0.45 * math.sin(-2.1 * n + 0.3) + random.gauss(0, 0.02)
        f.write(struct.pack("<hh", max(-32768, min(32767, round(re * 32767))),
                            max(-32768, min(32767, round(im * 32767)))))
with open("loud.cf32", "wb") as f:  # a tone of amplitude 1.5: its channel's ci16 saturates
    for n in range(N):
        f.write(struct.pack("<ff", 1.5 * math.cos(0.4 * n), 1.5 * math.sin(0.4 * n)))
with open("huge.cf32", "wb") as f:
    for n in range(N):
        burst = 150000 <= n < 150040 or 270000 <= n < 270003
        v = (3.4e38, 3.4e38) if burst else (1.2 * math.cos(0.3 * n), 1.2 * math.sin(0.9 * n))
        f.write(struct.pack("<ff", *v))
EOF
if ! "$POLYRX" channelize -i in.ci16 -F ci16 -s 1M -K 64 -P 8 -c 0 --backend cuda -o probe -q \
  2>probe.txt; then
  echo "cli_channelize_cuda: skipped: no usable CUDA backend: $(head -1 probe.txt)"
  exit 77
fi

# run NAME ARGS...: the device's post pass (NAME) and the writers' (NAME_w), compared
run() {
  local name=$1
  shift
  POLYRX_WRITERS=3 "$POLYRX" channelize --backend cuda --block 65536 -q "$@" -o "$name" 2>"$name.err" ||
    bad "$name: the run failed: $(cat "$name.err")"
  POLYRX_GPU_POST=0 POLYRX_WRITERS=3 "$POLYRX" channelize --backend cuda --block 65536 -q "$@" \
    -o "${name}_w" 2>"${name}_w.err" || bad "${name}_w: the run failed: $(cat "${name}_w.err")"
  for d in "$name"/*.sigmf-data; do
    cmp -s "$d" "${name}_w/$(basename "$d")" || bad "$name: $(basename "$d") differs"
  done
  [ "$(ls "$name" | wc -l)" = "$(ls "${name}_w" | wc -l)" ] || bad "$name: other files"
  cmp -s "$name.err" "${name}_w.err" || bad "$name: the messages differ: $(cat "$name.err") // $(cat "${name}_w.err")"
  python3 - "$name" <<'EOF' || bad "$name: metadata"
import json, os, sys
a = sys.argv[1]
for f in sorted(os.listdir(a)):
    if not f.endswith(".sigmf-meta"):
        continue
    x, y = json.load(open(f"{a}/{f}")), json.load(open(f"{a}_w/{f}"))
    px, py = x["global"].pop("polyrx:power_dbfs"), y["global"].pop("polyrx:power_dbfs")
    assert abs(px - py) <= 1e-9, (f, px, py)
    x["global"].pop("core:sha512", None), y["global"].pop("core:sha512", None)
    assert x == y, f
EOF
}
for f in cf32 cf16 ci16; do
  run "ci16_$f" -i in.ci16 -F ci16 -s 1M -K 64 -P 8 --out-format "$f"
  run "huge_$f" -i huge.cf32 -s 1M -K 16 -P 7 --out-format "$f"
  run "sub_$f" -i in.ci16 -F ci16 -s 1M -K 128 -c 3,100-110,7 --out-format "$f"
done
run loud_ci16 -i loud.cf32 -s 1M -K 64 -P 8 --out-format ci16
grep -q "saturated" loud_ci16.err || bad "ci16 output: no saturated values reported: $(cat loud_ci16.err)"
grep -q "overflowed float32" huge_cf32.err || bad "overflow: not reported: $(cat huge_cf32.err)"
# -o -: two channels interleaved
for f in cf32 ci16; do
  "$POLYRX" channelize --backend cuda -i in.ci16 -F ci16 -s 1M -K 64 -c 12,3 --out-format "$f" \
    -o - -q >"std_$f" || bad "-o - $f failed"
  POLYRX_GPU_POST=0 "$POLYRX" channelize --backend cuda -i in.ci16 -F ci16 -s 1M -K 64 -c 12,3 \
    --out-format "$f" -o - -q >"std_${f}_w" || bad "-o - $f (writers) failed"
  cmp -s "std_$f" "std_${f}_w" || bad "-o - $f: the bytes differ"
done

[ "$fail" = 0 ] && echo "cli_channelize_cuda: all passed" || echo "cli_channelize_cuda: $fail failure(s)"
[ "$fail" = 0 ]
