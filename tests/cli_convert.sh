#!/usr/bin/env bash
# polyrx convert: a raw ci16 recording through a WAV file, a SigMF recording, a SigMF archive and
# back to raw, bit for bit (the samples keep their format); cf32 -> ci16 by the writers' rule
# (rounded, ties to even, clipped and counted: the same bytes as gen's ci16 of the same signal at
# the same scale); real samples written as a complex WAV file give rx the real file's bits; a cut
# input writes its whole samples and fails; refusals (ci8 in a WAV file, the input as output,
# no output) with one line.
set -u
P=${1:?usage: cli_convert.sh PATH_TO_POLYRX}
. "$(dirname "$0")/support/cli_test.sh"

"$P" gen -q -o "$T/x.ci16" -F ci16 -s 96k -d 1 --carrier f=5k,rs=2400 --esn0 20 || bad "gen failed"
c() { "$P" convert -q "$@" || bad "convert $* failed"; }
c -i "$T/x.ci16" -F ci16 -s 96k -f 7.1M -o "$T/a.wav"
c -i "$T/a.wav" -o "$T/b.sigmf-data"
c -i "$T/b.sigmf-meta" -o "$T/c.sigmf"
c -i "$T/c.sigmf" -o "$T/d.ci16"
cmp -s "$T/x.ci16" "$T/d.ci16" || bad "raw -> WAV -> SigMF -> archive -> raw: samples changed"
cmp -s "$T/x.ci16" "$T/b.sigmf-data" || bad "the SigMF recording's data is not the raw file"
python3 - "$T" <<'PY' || bad "the SigMF metadata: rate or centre"
import json, sys
g = json.load(open(sys.argv[1] + "/b.sigmf-meta"))
assert g["global"]["core:datatype"] == "ci16_le" and g["global"]["core:sample_rate"] == 96000, g
assert g["captures"][0]["core:frequency"] == 7.1e6, g
PY
# cf32 -> ci16: gen's ci16 of the same signal at the same scale is the rule's output
"$P" gen -q -o "$T/y.cf32" -s 96k -d 1 --carrier f=5k,rs=2400 --esn0 20 || bad "gen cf32 failed"
"$P" gen -q -o "$T/y.ci16" -F ci16 --scale 0.25 -s 96k -d 1 --carrier f=5k,rs=2400 --esn0 20 ||
  bad "gen ci16 failed"
c -i "$T/y.cf32" -s 96k -o "$T/z.ci16" --out-format ci16 --scale 0.25
cmp -s "$T/y.ci16" "$T/z.ci16" || bad "cf32 -> ci16 is not the writers' rule"
"$P" convert -i "$T/y.cf32" -s 96k -o "$T/big.ci16" --out-format ci16 --scale 1e4 2>"$T/err" ||
  bad "clipping run failed"
grep -q "warning: [0-9]* of 96000 samples clipped" "$T/err" || bad "clipping not said: $(cat "$T/err")"

# real samples -> complex WAV: rx on it gives the real file's bits
"$P" gen -q -o "$T/rc.cf32" -s 96k -d 2 --carrier f=34k,rs=2400,diff --esn0 20 || bad "gen failed"
python3 -c "
import array, sys
x = array.array('f'); x.frombytes(open(sys.argv[1] + '/rc.cf32', 'rb').read())
open(sys.argv[1] + '/r.rf32', 'wb').write(x[0::2].tobytes())" "$T" || bad "real file"
c -i "$T/r.rf32" -F rf32 -s 96k -o "$T/r.wav"
for in in "r.rf32 -F rf32 -s 96k" "r.wav"; do
  # shellcheck disable=SC2086
  "$P" rx -q -i $T/$in -K 8 --carrier f=10k,rs=2400 -o "$T/rx_${in%% *}" >/dev/null ||
    bad "rx $in failed"
done
cmp -s "$T/rx_r.rf32/c0.bits" "$T/rx_r.wav/c0.bits" || bad "the complex WAV of real samples: bits differ"

# a cut input: its whole samples written, exit 1
head -c 40001 "$T/x.ci16" >"$T/cut.ci16"
"$P" convert -q -i "$T/cut.ci16" -F ci16 -s 96k -o "$T/cut.wav" 2>"$T/err"
[ $? = 1 ] && grep -q "ends inside a sample" "$T/err" || bad "a cut input: $(cat "$T/err")"
out=$("$P" info --json "$T/cut.wav") &&
  python3 -c "import json,sys; sys.exit(json.loads(sys.argv[1])['samples'] != 10000)" "$out" ||
  bad "a cut input: not its 10000 whole samples: $out"

# refusals
refuse() { # WORDS command...
  local words=$1
  shift
  "$@" >/dev/null 2>"$T/err"
  local rc=$?
  { [ $rc = 1 ] || [ $rc = 2 ]; } && grep -q "$words" "$T/err" && [ "$(wc -l <"$T/err")" = 1 ] ||
    bad "refusal '$words': exit $rc, said $(cat "$T/err")"
}
refuse "unsigned" "$P" convert -i "$T/x.ci16" -F ci16 -s 96k -o "$T/e.wav" --out-format ci8
[ ! -e "$T/e.wav" ] || bad "a refused WAV left a file"
refuse "is the input" "$P" convert -i "$T/x.ci16" -F ci16 -s 96k -o "$T/x.ci16"
refuse "no output" "$P" convert -i "$T/x.ci16" -F ci16 -s 96k
cmp -s "$T/x.ci16" "$T/d.ci16" || bad "the input was touched"
exit $((fail > 0))
