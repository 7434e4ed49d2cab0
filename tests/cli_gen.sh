#!/usr/bin/env bash
# polyrx gen: good invocations (sample counts and byte sizes per format, SigMF metadata that
# parses with the right fields, bits files, pipe output equal to file output, thread and block
# invariance, integer encodings bit for bit, automatic integer scaling, DC offset and gaps, clock
# offsets) and bad ones (clear message, non-zero exit). The checkers are python3 (standard
# library): without it the test fails (scripts/setup.sh installs it).
set -u
P=${1:?usage: cli_gen.sh PATH_TO_POLYRX}
# python3 present, scratch directory $T, bad() and the failure count $fail
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_test.sh"
size() { stat -c %s "$1"; }

json_get() { # FILE EXPRESSION(python syntax on d)
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

C1="f=100k,rs=2400,power=0,phase=0.3,timing=0.25,ppm=50,diff,pilots=64:8,seed=7"
C2="f=-1.2M,rs=9.6k,rolloff=0.2,span=16,power=-6"

# ---- sizes per format ----
for fmt in cf32:8 ci16:4 ci8:2 cu8:2; do
  f=${fmt%%:*} b=${fmt##*:}
  "$P" gen -q -o "$T/x.$f" -F "$f" -s 6.5536M -n 10000 --carrier "$C1" --carrier "$C2" \
    --esn0 10 || bad "gen -F $f failed"
  [ "$(size "$T/x.$f")" = $((10000 * b)) ] || bad "-F $f: $(size "$T/x.$f") bytes, expected $((10000 * b))"
done
# -d rounds to whole samples: 0.01 s at 48 kHz is 480 samples
"$P" gen -q -o "$T/d.cf32" -s 48k -d 10m --carrier rs=2400 || bad "gen -d failed"
[ "$(size "$T/d.cf32")" = 3840 ] || bad "-d 10m at 48k: $(size "$T/d.cf32") bytes, expected 3840"

# ---- standard output equals the file; threads and the order of options do not matter ----
"$P" gen -q -o - -s 6.5536M -n 150000 --carrier "$C1" --carrier "$C2" --esn0 3 --threads 1 \
  >"$T/pipe.cf32" || bad "gen -o - failed"
"$P" gen -q --threads 2 --esn0 3 --carrier "$C1" --carrier "$C2" -n 150000 -s 6.5536M \
  -o "$T/file.cf32" || bad "gen to a file failed"
cmp -s "$T/pipe.cf32" "$T/file.cf32" || bad "standard output and file (2 threads) differ"
# the first samples of a longer run are the shorter run (streaming, no end effects)
"$P" gen -q -o "$T/long.cf32" -s 6.5536M -n 200000 --carrier "$C1" --carrier "$C2" --esn0 3
cmp -s -n $((150000 * 8)) "$T/long.cf32" "$T/file.cf32" || bad "a longer run does not extend the shorter one"
# a different noise seed changes the samples
"$P" gen -q -o "$T/seed.cf32" -s 6.5536M -n 1000 --carrier "$C1" --esn0 3 --noise-seed 2
"$P" gen -q -o "$T/seed1.cf32" -s 6.5536M -n 1000 --carrier "$C1" --esn0 3
cmp -s "$T/seed.cf32" "$T/seed1.cf32" && bad "--noise-seed has no effect"

# ---- SigMF ----
"$P" gen -q -o "$T/rec.sigmf-data" -F ci16 -s 6.5536M -f 433.92M -n 20000 --carrier "$C1" \
  --carrier "$C2" --ebn0 7 || bad "gen SigMF failed"
[ -f "$T/rec.sigmf-meta" ] || bad "no .sigmf-meta beside the .sigmf-data"
[ "$(size "$T/rec.sigmf-data")" = 80000 ] || bad "SigMF data: $(size "$T/rec.sigmf-data") bytes"
out=$(json_get "$T/rec.sigmf-meta" \
  "d['global']['core:datatype'], d['global']['core:sample_rate'], d['global']['core:version'], d['captures'][0]['core:frequency'], len(d['annotations']), d['annotations'][1]['core:freq_lower_edge']")
[ "$out" = "ci16_le 6553600 1.0.0 433920000 2 432714240" ] || bad "SigMF metadata fields: '$out'"
out=$(json_get "$T/rec.sigmf-meta" "d['global']['core:recorder'].split()[:2], d['global']['core:num_channels']")
[ "$out" = "['polyrx', 'gen'] 1" ] || bad "SigMF core:recorder / core:num_channels: '$out'"
# a run that fails after the recording was opened leaves no data file
"$P" gen -q -o "$T/fail.sigmf-data" -s 48k -n 100 --carrier rs=2400 --bits "$T/no/such/dir/b" \
  2>/dev/null && bad "gen with an unwritable --bits succeeded"
[ -e "$T/fail.sigmf-data" ] && bad "a failed SigMF run left its data file"
# the carrier specs reach the generator field by field (the annotation prints the parsed values)
grep -q '"f=100000 rs=2400 rolloff=0.35 span=12 power=0 dB phase=0.3 timing=0.25 ppm=50 seed=7 diff pilots=64:8"' \
  "$T/rec.sigmf-meta" || bad "carrier 0's parsed parameters are wrong: $(grep comment "$T/rec.sigmf-meta")"
grep -q '"f=-1200000 rs=9600 rolloff=0.2 span=16 power=-6 dB phase=0 timing=0 ppm=0 seed=2"' \
  "$T/rec.sigmf-meta" || bad "carrier 1's parsed parameters are wrong: $(grep comment "$T/rec.sigmf-meta")"
# gaps are annotated with their samples (the last one cut at the end), the DC described
"$P" gen -q -o "$T/gap.sigmf-data" -s 48k -n 10000 --carrier rs=2400 --gap 0.1:1 \
  --gap 10m:1m:noise --dc 3,phase=1 || bad "gen SigMF with gaps failed"
out=$(json_get "$T/gap.sigmf-meta" "[(a['core:sample_start'], a['core:sample_count'], a['core:label']) for a in d['annotations'][1:]], 'DC offset 3 dB relative to carrier 0, phase 1 rad' in d['global']['core:description']")
[ "$out" = "[(480, 48, 'gap (transmitter off)'), (4800, 5200, 'gap (zeros)')] True" ] ||
  bad "SigMF gap annotations or DC description: $out"
# naming the .sigmf-meta writes both files too
for fmt in cf32:cf32_le:800 ci8:ci8:200 cu8:cu8:200; do
  IFS=: read -r f want bytes <<<"$fmt"
  "$P" gen -q -o "$T/r$f.sigmf-meta" -F "$f" -s 1M -n 100 --carrier rs=100k || bad "SigMF -F $f"
  [ "$(size "$T/r$f.sigmf-data")" = "$bytes" ] || bad "SigMF -F $f: wrong data size"
  got=$(json_get "$T/r$f.sigmf-meta" "d['global']['core:datatype']")
  [ "$got" = "$want" ] || bad "-F $f: SigMF datatype '$got', expected '$want'"
done

# ---- integer encodings, bit for bit (docs/FORMATS.md): component x of the float32 stream (the
# cf32 file at scale 1) becomes q = round_half_even(g x + o) in float64, g = S F, clipped, with
# (F, o) = (32768, 0) for ci16, (128, 0) for ci8, (127.5, 127.5) for cu8. No tolerance: a
# half-LSB offset or a truncation instead of rounding fails. ----
G0=(-s 1M -n 4000 --carrier rs=100k,f=50k --carrier rs=200k,f=-200k,power=-3 --esn0 15)
"$P" gen -q -o "$T/e.cf32" -F cf32 "${G0[@]}" || bad "integer encodings: gen cf32 failed"
check_enc() { # FORMAT SCALE
  "$P" gen -q -o "$T/e.$1" -F "$1" "${G0[@]}" --scale "$2" 2>/dev/null || {
    bad "integer encodings: gen -F $1 --scale $2 failed"
    return
  }
  python3 - "$T/e.cf32" "$T/e.$1" "$1" "$2" <<'PY' || bad "-F $1 --scale $2: samples differ from the rounding rule"
import array, sys
code, full, off, lo, hi = {"ci16": ("h", 32768.0, 0.0, -32768, 32767),
                           "ci8": ("b", 128.0, 0.0, -128, 127),
                           "cu8": ("B", 127.5, 127.5, 0, 255)}[sys.argv[3]]
x = array.array("f", open(sys.argv[1], "rb").read())
q = array.array(code, open(sys.argv[2], "rb").read())
g = float(sys.argv[4]) * full
assert len(x) == len(q) == 8000, (len(x), len(q))
bad = [(i, xi, qi) for i, (xi, qi) in enumerate(zip(x, q))
       if min(max(round(g * xi + off), lo), hi) != qi]  # round(): ties to even
ties = sum(1 for xi in x if (g * xi + off) % 1 == 0.5)
print(f"  -F {sys.argv[3]}: {len(bad)} of {len(x)} components off the rule ({ties} ties)", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}
check_enc ci16 0.3
check_enc ci8 0.3
check_enc cu8 0.3
check_enc cu8 1.5 # clipping at both ends
check_enc ci8 0.01 # a few LSBs: most components near the rounding boundaries of 0 and +-1

# ---- bits: one byte per bit; count = 2 x data symbols started ----
# 48000 samples at 48 kHz of 2400 Bd with timing 0: symbols n <= 47999/20 + 6, i.e. 2406;
# with pilots 64:8 (frames start at 0, 64, ..., 2368: 38 frames of 8 pilots) 2406 - 304 = 2102 data
"$P" gen -q -o "$T/b.cf32" -s 48k -n 48000 --carrier rs=2400,pilots=64:8 \
  --carrier rs=4800,diff --bits "$T/bits" || bad "gen --bits failed"
[ "$(size "$T/bits0.bits")" = 4204 ] || bad "bits0: $(size "$T/bits0.bits") bytes, expected 4204"
# 4800 Bd at 48 kHz: symbols n <= 47999/10 + 6 = 4805, so 4806 symbols
[ "$(size "$T/bits1.bits")" = 9612 ] || bad "bits1: $(size "$T/bits1.bits") bytes, expected 9612"
[ -z "$(tr -d '\000\001' <"$T/bits0.bits" | head -c 1)" ] || bad "bits file holds bytes other than 0 and 1"

# ---- integer scaling: automatic RMS at -12 dBFS, no clipping; --scale too high clips ----
"$P" gen -o "$T/s.ci8" -F ci8 -s 1M -n 200000 --carrier rs=100k --carrier f=300k,rs=50k \
  --esn0 20 2>"$T/err" || bad "ci8 auto scale failed"
grep -q ", 0 clipped" "$T/err" || bad "automatic scaling clipped: $(cat "$T/err")"
rms=$(python3 -c "import sys,array,math; a=array.array('b',open(sys.argv[1],'rb').read()); print(round(20*math.log10(math.sqrt(sum(x*x for x in a)/(len(a)/2))/128),1))" "$T/s.ci8")
python3 -c "import sys; sys.exit(0 if abs($rms + 12) < 0.5 else 1)" || bad "ci8 RMS $rms dBFS, expected -12"
"$P" gen -o "$T/c.ci16" -F ci16 -s 1M -n 10000 --carrier rs=100k --scale 2 2>"$T/err" ||
  bad "--scale 2 failed"
grep -q "warning: .* samples clipped" "$T/err" || bad "clipping not reported: $(cat "$T/err")"

# ---- DC offset and gaps: against the same stream without them (docs/FORMATS.md): outside the
# gaps x + dc, in a noise gap the noise alone (noisy - clean) + dc, in a zero gap exactly 0;
# dc = sqrt(10^(6/10)) exp(0.5 i) for --dc 6,phase=0.5 with carrier 0 at 0 dB. The bits run on
# through the gaps. ----
GD=(-s 48k -n 24000 --carrier rs=4800,f=3k,ppm=-2000 --carrier rs=2400,f=-9k,power=-3,ppm=2000 --threads 2)
"$P" gen -q -o "$T/g.cf32" "${GD[@]}" --esn0 10 --dc 6,phase=0.5 --gap 0.1:0.05 \
  --gap 300m:20m:noise --gap 0.4:1:zeros --bits "$T/gb" || bad "gen --dc --gap failed"
"$P" gen -q -o "$T/g0.cf32" "${GD[@]}" --esn0 10 --bits "$T/g0b" || bad "gen without gaps failed"
"$P" gen -q -o "$T/gc.cf32" "${GD[@]}" || bad "gen without noise failed"
python3 - "$T/g.cf32" "$T/g0.cf32" "$T/gc.cf32" <<'PY' || bad "DC offset and gaps do not follow the model"
import array, cmath, math, sys
a, b, c = (array.array("f", open(f, "rb").read()) for f in sys.argv[1:4])
dc = math.sqrt(10 ** 0.6) * cmath.exp(0.5j)
zero, noise = range(4800, 7200), range(14400, 15360)  # 0.1 s + 50 ms; 0.3 s + 20 ms at 48 kHz
worst, nonzero = 0.0, 0
for k in range(len(a) // 2):
    x = complex(a[2 * k], a[2 * k + 1])
    if k in zero or k >= 19200:  # the third gap runs past the end
        nonzero += x != 0
        continue
    want = complex(b[2 * k], b[2 * k + 1]) + dc
    if k in noise:
        want -= complex(c[2 * k], c[2 * k + 1])
    worst = max(worst, abs(x - want))
print(f"  DC and gaps: largest difference {worst:.2e}, {nonzero} zero-gap samples not 0", file=sys.stderr)
sys.exit(0 if worst < 1e-5 and nonzero == 0 else 1)
PY
for c in 0 1; do
  cmp -s "$T/gb$c.bits" "$T/g0b$c.bits" || bad "carrier $c: gaps changed the bits"
done
# clock offsets to +-2000 ppm (the library allows 10000) at any of the accepted spellings
"$P" gen -q -o "$T/ppm.cf32" -s 48k -n 1000 --carrier rs=2400,ppm=2000 --carrier rs=2400,ppm=-2k \
  --carrier rs=2400,ppm=-10000 || bad "clock offsets of +-2000 and -10000 ppm refused"
# the summary names the DC and the gaps
"$P" gen -o "$T/g.cf32" -s 48k -n 1000 --carrier rs=2400 --dc -3 --gap 1m:1m --gap 5m:1m:noise \
  2>"$T/err" || bad "gen --dc --gap (summary) failed"
grep -q "DC -3.0 dB, 2 gaps" "$T/err" || bad "summary does not name the DC and gaps: $(cat "$T/err")"

# ---- bad invocations: non-zero exit and a message naming the problem ----
expect_fail() { # WORDS-IN-MESSAGE -- ARGS...
  local want=$1
  shift
  if "$P" gen "$@" >"$T/out" 2>"$T/err"; then
    bad "accepted: gen $*"
  elif ! grep -qi -- "$want" "$T/err"; then
    bad "gen $*: message '$(cat "$T/err")' does not mention '$want'"
  fi
}
G=(-o "$T/bad.cf32")
expect_fail "sample rate" "${G[@]}" -n 100 --carrier rs=2400
rc=0; "$P" gen "${G[@]}" -n 100 --carrier rs=2400 2>/dev/null || rc=$?
[ $rc = 2 ] || bad "no -s: exit $rc, expected 2 (a usage error)"
expect_fail "samples per symbol" "${G[@]}" -s 4k -n 100 --carrier rs=2400
expect_fail "unknown key 'bogus'" "${G[@]}" -s 48k -n 100 --carrier rs=2400,bogus=1
expect_fail "symbol rate is missing" "${G[@]}" -s 48k -n 100 --carrier f=1k
expect_fail "bad value 'x' for f" "${G[@]}" -s 48k -n 100 --carrier rs=2400,f=x
expect_fail "PERIOD:LENGTH" "${G[@]}" -s 48k -n 100 --carrier rs=2400,pilots=64
expect_fail "pilot length" "${G[@]}" -s 48k -n 100 --carrier rs=2400,pilots=8:8
expect_fail "given twice" "${G[@]}" -s 48k -n 100 --carrier rs=2400,rs=1200
expect_fail "roll-off" "${G[@]}" -s 48k -n 100 --carrier rs=2400,rolloff=0
expect_fail "span" "${G[@]}" -s 48k -n 100 --carrier rs=2400,span=1
expect_fail "timing offset" "${G[@]}" -s 48k -n 100 --carrier rs=2400,timing=1
expect_fail "frequency" "${G[@]}" -s 48k -n 100 --carrier rs=2400,f=30k
expect_fail "carrier 1" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --carrier rs=2400,ppm=1e5
expect_fail "empty" "${G[@]}" -s 48k -n 100 --carrier ""
expect_fail "no carrier" "${G[@]}" -s 48k -n 100
expect_fail "-n SAMPLES or -d SECONDS" "${G[@]}" -s 48k --carrier rs=2400
expect_fail "not both" "${G[@]}" -s 48k -n 100 -d 1 --carrier rs=2400
expect_fail "-n: bad sample count" "${G[@]}" -s 48k -n 1.5 --carrier rs=2400
expect_fail "-n: bad sample count" "${G[@]}" -s 48k -n -3 --carrier rs=2400
expect_fail "format 'cf16'" "${G[@]}" -F cf16 -s 48k -n 100 --carrier rs=2400
expect_fail "format 'int9'" "${G[@]}" -F int9 -s 48k -n 100 --carrier rs=2400
expect_fail "not both" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --esn0 3 --ebn0 3
expect_fail "--esn0: bad value" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --esn0 loud
expect_fail "--scale: bad value" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --scale -1
expect_fail "--threads: bad value" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --threads x
expect_fail "unknown option" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --frobnicate
expect_fail "needs a value" "${G[@]}" -s 48k -n 100 --carrier
expect_fail "no output" -s 48k -n 100 --carrier rs=2400
expect_fail "cannot create" -o "$T/no/such/dir/x.cf32" -s 48k -n 100 --carrier rs=2400
# archives (-o x.sigmf) are written: tests/cli_sigmf.sh
expect_fail "unexpected argument" "${G[@]}" -s 48k -n 100 --carrier rs=2400 stray
expect_fail "--dc 'loud': bad power" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --dc loud
expect_fail "--dc '300': bad power" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --dc 300
expect_fail "DB,phase=RAD" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --dc 3,phi=1
expect_fail "DB,phase=RAD" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --dc 3,phase=nan
expect_fail "START:LENGTH" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --gap 1m
expect_fail "START:LENGTH" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --gap -1m:1m
expect_fail "START:LENGTH" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --gap 1m:0
expect_fail "unknown kind 'off'" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --gap 0:1m:off
expect_fail "shorter than one sample" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --gap 0:1u
expect_fail "after the end of the signal" "${G[@]}" -s 48k -n 100 --carrier rs=2400 --gap 1:1m
expect_fail "--gap '0.5m:1m' overlaps --gap '0:1m'" "${G[@]}" -s 48k -n 100 --carrier rs=2400 \
  --gap 0.5m:1m --gap 0:1m
expect_fail "clock offset" "${G[@]}" -s 48k -n 100 --carrier rs=2400,ppm=10001
# outputs that would overwrite each other (or a file through a link) are refused before writing
expect_fail "same file" -o "$T/alias0.bits" -s 48k -n 100 --carrier rs=2400 --bits "$T/alias"
: >"$T/target.bits"
ln -sf "$T/target.bits" "$T/link0.bits"
expect_fail "same file" -o "$T/target.bits" -s 48k -n 100 --carrier rs=2400 --bits "$T/link"
[ -s "$T/target.bits" ] && bad "a refused invocation wrote into its output"
[ -e "$T/bad.cf32" ] && bad "a failed invocation left an output file"

"$P" gen --help | grep -q -- "--carrier SPEC" || bad "--help does not describe --carrier"

if [ "$fail" -ne 0 ]; then
  echo "cli_gen: $fail check(s) failed" >&2
  exit 1
fi
echo "cli_gen: all checks passed"
