#!/usr/bin/env bash
# Real samples (a direct-sampling receiver's): a QPSK carrier at +34 kHz in a 96 kHz complex
# recording from `polyrx gen`, its real part written by python3's standard library as raw rf32,
# raw ri16, a one-channel 16-bit WAV file and a SigMF ri16_le recording. `rx -F rf32 -s 96k`
# (and the others) reads them as complex at 48 kHz centred on 24 kHz: the carrier at +10 kHz off
# that centre, every bit right; the reports give 34 kHz; `info` and `channelize` say the same
# rates and centres; standard input works; a WAV or SigMF file given -F ri16 is refused.
set -u
P=${1:?usage: cli_real.sh PATH_TO_POLYRX}
. "$(dirname "$0")/support/cli_test.sh"

"$P" gen -q -o "$T/c.cf32" -s 96k -d 4 --carrier f=34k,rs=2400,diff --esn0 20 --bits "$T/tx" ||
  bad "gen failed"
PYTHONPATH="$(dirname "$0")/support" python3 - "$T" <<'PY' || bad "writing the real files failed"
import array, json, sys
from wav_file import write_wav
t = sys.argv[1]
x = array.array("f")
with open(t + "/c.cf32", "rb") as f:
    x.frombytes(f.read())
r = x[0::2]  # the real part: the carrier at +34 kHz and its mirror at -34 kHz
with open(t + "/r.rf32", "wb") as f:
    r.tofile(f)
q = array.array("h", [max(-32768, min(32767, round(v * 8192))) for v in r])
with open(t + "/r.ri16", "wb") as f:
    q.tofile(f)
data = q.tobytes()
write_wav(t + "/r.wav", 1, 16, data, channels=1)
with open(t + "/s.sigmf-data", "wb") as f:
    f.write(data)
json.dump({"global": {"core:datatype": "ri16_le", "core:sample_rate": 96000,
                      "core:version": "1.0.0"},
           "captures": [{"core:sample_start": 0, "core:frequency": 1000000}],
           "annotations": []}, open(t + "/s.sigmf-meta", "w"))
PY

rx() { # NAME INPUT [options]
  local name=$1 in=$2
  shift 2
  "$P" rx -q -i "$in" "$@" -K 8 --carrier f=10k,rs=2400 -o "$T/$name" --truth "$T/tx" \
    --report "$T/$name.json" >/dev/null 2>"$T/$name.err" || bad "rx $name failed: $(cat "$T/$name.err")"
}
rx f32 "$T/r.rf32" -F rf32 -s 96k
rx i16 "$T/r.ri16" -F ri16 -s 96k
rx wav "$T/r.wav"
rx sig "$T/s.sigmf-meta"
cat "$T/r.ri16" | rx pipe - -F ri16 -s 96k
"$P" rx -i "$T/r.rf32" -F rf32 -s 96k -K 8 --carrier f=10k,rs=2400 -o "$T/loud" >/dev/null \
  2>"$T/loud.err" || bad "rx (not quiet) failed"
grep -q "note: real samples at 96000 Hz read as complex ones at 48000 Hz centred on 24000 Hz" \
  "$T/loud.err" || bad "no note on the real input: $(cat "$T/loud.err")"
python3 - "$T" <<'PY' || bad "rx on real samples: the reports"
import json, sys
t = sys.argv[1]
for name, centre in (("f32", 0), ("i16", 0), ("wav", 0), ("sig", 1e6), ("pipe", 0)):
    r = json.load(open("%s/%s.json" % (t, name)))
    c = r["carriers"][0]
    assert r["input"]["sample_rate"] == 48000, (name, r["input"])
    assert r["input"]["center_frequency"] == centre + 24000, (name, r["input"])
    assert c["frequency_hz"] == centre + 34000, (name, c["frequency_hz"])
    assert c["bit_errors"] == 0 and c["bits_compared"] > 18000, (name, c["bit_errors"], c["bits_compared"])
    assert r["totals"]["samples"] == 192000, (name, r["totals"]["samples"])
    assert r["input"]["real"] is True, (name, r["input"])
PY
# the same stream through every input kind: the same bits
for n in i16 wav sig pipe; do
  [ "$n" = i16 ] && continue
  cmp -s "$T/i16/c0.bits" "$T/$n/c0.bits" || bad "$n: bits differ from the raw ri16 file's"
done

# several positional readers (the converter computing each block alone) and small reads: the
# same bits, and the same channel recordings
POLYRX_READERS=3 "$P" rx -q -i "$T/r.ri16" -F ri16 -s 96k -K 8 --carrier f=10k,rs=2400 \
  --read-block 5000 -o "$T/multi" >/dev/null || bad "rx with 3 readers failed"
cmp -s "$T/i16/c0.bits" "$T/multi/c0.bits" || bad "3 readers: bits differ from one reader's"
"$P" channelize -q -i "$T/r.ri16" -F ri16 -s 96k -K 8 -o "$T/ch1" || bad "channelize failed"
POLYRX_READERS=3 "$P" channelize -q -i "$T/r.ri16" -F ri16 -s 96k -K 8 --block 3001 \
  -o "$T/ch3" || bad "channelize with 3 readers failed"
for f in "$T"/ch1/*.sigmf-data; do
  cmp -s "$f" "$T/ch3/$(basename "$f")" || bad "3 readers: $(basename "$f") differs"
done

# info and channelize
out=$("$P" info --json -F ri16 -s 96k "$T/r.ri16") || bad "info -F ri16 failed"
python3 -c "import json,sys; d=json.loads(sys.argv[1]); sys.exit(not (d['real'] and d['sample_rate'] == 48000 and d['center_freq'] == 24000 and d['samples'] == 192000))" "$out" ||
  bad "info -F ri16: $out"
"$P" channelize -q -i "$T/r.wav" -K 8 -c 0 -o "$T/ch" || bad "channelize the real WAV failed"
python3 -c "
import json, sys
g = json.load(open(sys.argv[1] + '/ch/ch0000.sigmf-meta'))['global']
assert g['polyrx:input_sample_rate'] == 48000 and g['polyrx:input_center_frequency'] == 24000, g
assert g['polyrx:input_samples'] == 192000, g" "$T" || bad "channelize: the real WAV's rates"

# refused: a header-described file given a real format
"$P" rx -q -i "$T/r.wav" -F ri16 -s 96k -K 8 --carrier f=10k,rs=2400 -o "$T/bad" >/dev/null \
  2>"$T/err"
[ $? = 1 ] && grep -q "r.wav is a WAV recording" "$T/err" || bad "-F ri16 on a WAV file: $(cat "$T/err")"
exit $((fail > 0))
