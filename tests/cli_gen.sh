#!/usr/bin/env bash
# polyrx gen: good invocations (sample counts and byte sizes per format, SigMF metadata that
# parses with the right fields, bits files, pipe output equal to file output, thread and block
# invariance, automatic integer scaling) and bad ones (clear message, non-zero exit).
set -u
P=${1:?usage: cli_gen.sh PATH_TO_POLYRX}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() {
  echo "FAIL: $*" >&2
  fail=$((fail + 1))
}
size() { stat -c %s "$1"; }

# a JSON reader for the metadata checks: python3, else jq, else the checks are skipped
json_get() { # FILE EXPRESSION(python syntax on d)
  if command -v python3 >/dev/null; then
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
  else
    return 2
  fi
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
if out=$(json_get "$T/rec.sigmf-meta" \
  "d['global']['core:datatype'], d['global']['core:sample_rate'], d['global']['core:version'], d['captures'][0]['core:frequency'], len(d['annotations']), d['annotations'][1]['core:freq_lower_edge']"); then
  [ "$out" = "ci16_le 6553600 1.0.0 433920000 2 432714240" ] || bad "SigMF metadata fields: '$out'"
else
  echo "note: python3 not found, SigMF metadata not parsed" >&2
fi
# the carrier specs reach the generator field by field (the annotation prints the parsed values)
grep -q '"f=100000 rs=2400 rolloff=0.35 span=12 power=0 dB phase=0.3 timing=0.25 ppm=50 seed=7 diff pilots=64:8"' \
  "$T/rec.sigmf-meta" || bad "carrier 0's parsed parameters are wrong: $(grep comment "$T/rec.sigmf-meta")"
grep -q '"f=-1200000 rs=9600 rolloff=0.2 span=16 power=-6 dB phase=0 timing=0 ppm=0 seed=2"' \
  "$T/rec.sigmf-meta" || bad "carrier 1's parsed parameters are wrong: $(grep comment "$T/rec.sigmf-meta")"
# naming the .sigmf-meta writes both files too
for fmt in cf32:cf32_le:800 ci8:ci8:200 cu8:cu8:200; do
  IFS=: read -r f want bytes <<<"$fmt"
  "$P" gen -q -o "$T/r$f.sigmf-meta" -F "$f" -s 1M -n 100 --carrier rs=100k || bad "SigMF -F $f"
  [ "$(size "$T/r$f.sigmf-data")" = "$bytes" ] || bad "SigMF -F $f: wrong data size"
  got=$(json_get "$T/r$f.sigmf-meta" "d['global']['core:datatype']") && [ "$got" != "$want" ] &&
    bad "-F $f: SigMF datatype '$got', expected '$want'"
done

# ---- integer encodings of the same samples: ci16 = round(32768 v), ci8 = round(128 v),
# cu8 = round(127.5 v + 127.5), v = scale x = the cf32 samples (--scale applies to cf32 too);
# compared on 4000 components ----
G0=(-s 1M -n 2000 --carrier rs=100k,f=50k --carrier rs=200k,f=-200k,power=-3 --esn0 15 --scale 0.3)
"$P" gen -q -o "$T/e.cf32" -F cf32 "${G0[@]}" && "$P" gen -q -o "$T/e.ci16" -F ci16 "${G0[@]}" &&
  "$P" gen -q -o "$T/e.ci8" -F ci8 "${G0[@]}" && "$P" gen -q -o "$T/e.cu8" -F cu8 "${G0[@]}" ||
  bad "integer encodings: gen failed"
check_enc() { # FILE OD-TYPE FULL OFFSET BYTES
  paste <(od -An -v -tf4 -w4 "$T/e.cf32") <(od -An -v -t"$2" -w"${5:-2}" "$1") |
    awk -v g="$3" -v off="$4" '{ v = g * $1 + off; r = (v >= 0) ? int(v + 0.5) : -int(-v + 0.5);
      if (r - $2 > 1 || $2 - r > 1) bad++ } END { exit bad > 0 }'
}
check_enc "$T/e.ci16" d2 32768 0 2 || bad "ci16 samples are not round(32768 scale x)"
check_enc "$T/e.ci8" d1 128 0 1 || bad "ci8 samples are not round(128 scale x)"
check_enc "$T/e.cu8" u1 127.5 127.5 1 || bad "cu8 samples are not round(127.5 scale x + 127.5)"

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
if command -v python3 >/dev/null; then
  rms=$(python3 -c "import sys,array,math; a=array.array('b',open(sys.argv[1],'rb').read()); print(round(20*math.log10(math.sqrt(sum(x*x for x in a)/(len(a)/2))/128),1))" "$T/s.ci8")
  python3 -c "import sys; sys.exit(0 if abs($rms + 12) < 0.5 else 1)" || bad "ci8 RMS $rms dBFS, expected -12"
fi
"$P" gen -o "$T/c.ci16" -F ci16 -s 1M -n 10000 --carrier rs=100k --scale 2 2>"$T/err" ||
  bad "--scale 2 failed"
grep -q "warning: .* samples clipped" "$T/err" || bad "clipping not reported: $(cat "$T/err")"

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
expect_fail "archives" -o "$T/x.sigmf" -s 48k -n 100 --carrier rs=2400
expect_fail "unexpected argument" "${G[@]}" -s 48k -n 100 --carrier rs=2400 stray
[ -e "$T/bad.cf32" ] && bad "a failed invocation left an output file"

"$P" gen --help | grep -q -- "--carrier SPEC" || bad "--help does not describe --carrier"

if [ "$fail" -ne 0 ]; then
  echo "cli_gen: $fail check(s) failed" >&2
  exit 1
fi
echo "cli_gen: all checks passed"
