#!/usr/bin/env bash
# WAV I/Q files as the SDR programs write them (written here by python3's standard library from
# a `polyrx gen` recording): `demod` gives the same bits from a 16-bit WAV as from the raw ci16
# file of the same samples, and from a float WAV as from the raw cf32; a 24-bit WAV with an auxi
# chunk demodulates without error and gives its centre to `channelize`'s metadata; `rx` with
# several positional readers reads the 16-bit WAV's data chunk exactly; a size never filled in
# is read to the end and said; `info` describes what it read; standard input holding a WAV file,
# a three-channel WAV and -F against the header are refused with one line and exit 1 (one channel:
# real samples, tests/cli_real.sh); KiwiSDR files (a GPS time stamp before each data chunk) read
# as one stream, with the start, rate and lost packets from the stamps.
set -u
P=${1:?usage: cli_wav.sh PATH_TO_POLYRX}
. "$(dirname "$0")/support/cli_test.sh"

FS=96000
"$P" gen -q -o "$T/x.cf32" -s $FS -d 2 --carrier f=0,rs=2400,diff --esn0 15 \
  --bits "$T/tx" || bad "gen (cf32) failed"
"$P" gen -q -o "$T/x.ci16" -F ci16 -s $FS -d 2 --carrier f=0,rs=2400,diff --esn0 15 ||
  bad "gen (ci16) failed"

# WAV files of the same samples: PCM 16 (gen's ci16 values), PCM 24 with an auxi chunk (centre
# 7.1 MHz, start 2026-12-04 09:30:15.250) and PCM 32 (the ci16 values times 256 and 65536: the
# same numbers once scaled), float 32 and float 64 (gen's cf32 values), PCM 16 whose data size
# was never filled in, and a three-channel file
export PYTHONPATH="$(dirname "$0")/support" # wav_file.py
python3 - "$T" <<'EOF' || bad "writing the WAV files failed"
import array, struct, sys
from wav_file import write_wav
t = sys.argv[1]
x = array.array("f")
with open(t + "/x.cf32", "rb") as f:
    x.frombytes(f.read())
h = array.array("h")
with open(t + "/x.ci16", "rb") as f:
    h.frombytes(f.read())

def wav(name, tag, bits, data, chunks=b"", size=None, channels=2):
    write_wav(t + "/" + name, tag, bits, data, channels=channels, chunks=chunks, size=size)

p16 = h.tobytes()
wav("c16.wav", 1, 16, p16)
wav("c32.wav", 1, 32, array.array("i", [v * 65536 for v in h]).tobytes())
wav("f32.wav", 3, 32, x.tobytes())
wav("f64.wav", 3, 64, array.array("d", x).tobytes())
b24 = b"".join(struct.pack("<i", v * 256)[:3] for v in h)
auxi = struct.pack("<8H", 2026, 12, 5, 4, 9, 30, 15, 250) * 2 + struct.pack("<I", 7100000)
auxi += bytes(64 - len(auxi))
wav("c24.wav", 1, 24, b24, b"auxi" + struct.pack("<I", len(auxi)) + auxi)
wav("SDRSharp_20261204_093015Z_7100000Hz_IQ.wav", 1, 16, p16, size=0xFFFFFFFF)
wav("three.wav", 1, 16, p16, channels=3)
EOF
cmp -s <(tail -c +45 "$T/c16.wav") "$T/x.ci16" || bad "the 16-bit WAV's data is not gen's ci16"

demod() { # INPUT OUT [options]
  local in=$1 out=$2
  shift 2
  "$P" demod -q -i "$in" -r 2400 --cfo-span 4096 -o "$out" "$@"
}
demod "$T/x.ci16" "$T/ref16.bits" -F ci16 -s $FS || bad "demod raw ci16 failed"
demod "$T/x.cf32" "$T/ref32.bits" -s $FS || bad "demod raw cf32 failed"
demod "$T/c16.wav" "$T/w16.bits" || bad "demod 16-bit WAV failed"
demod "$T/f32.wav" "$T/w32.bits" || bad "demod float WAV failed"
demod "$T/c24.wav" "$T/w24.bits" || bad "demod 24-bit WAV failed"
demod "$T/c32.wav" "$T/wi32.bits" || bad "demod 32-bit WAV failed"
demod "$T/f64.wav" "$T/w64.bits" || bad "demod float 64 WAV failed"
for b in w16 w24 wi32; do
  cmp -s "$T/ref16.bits" "$T/$b.bits" || bad "$b WAV: bits differ from the raw ci16 file's"
done
for b in w32 w64; do
  cmp -s "$T/ref32.bits" "$T/$b.bits" || bad "$b WAV: bits differ from the raw cf32 file's"
done
for b in w16 w32 w24; do
  out=$("$P" ber "$T/tx0.bits" "$T/$b.bits" 2>&1) || bad "ber $b failed: $out"
  case $out in *" 0 errors"*) ;; *) bad "$b: bit errors at 15 dB: $out" ;; esac
done

# a size never filled in: read to the end, with a note; the centre from the file's name
name="SDRSharp_20261204_093015Z_7100000Hz_IQ.wav"
demod "$T/$name" "$T/wp.bits" 2>"$T/err" || bad "demod (size 0xFFFFFFFF) failed"
cmp -s "$T/ref16.bits" "$T/wp.bits" || bad "size 0xFFFFFFFF: bits differ from the raw file's"
"$P" demod -i "$T/$name" -r 2400 -o "$T/wp2.bits" 2>"$T/err" >/dev/null
grep -q "its data size was never filled in (4294967295): the 768000 bytes" "$T/err" ||
  bad "size 0xFFFFFFFF: no note: $(cat "$T/err")"
grep -q "taken from its name" "$T/err" || bad "centre from the name: no note: $(cat "$T/err")"

# rx: several positional readers over the data chunk, against the raw file
for in in "c16.wav" "x.ci16"; do
  opt=()
  [ "$in" = x.ci16 ] && opt=(-F ci16 -s $FS)
  POLYRX_READERS=3 "$P" rx -q -i "$T/$in" "${opt[@]}" -K 8 --carrier f=0,rs=2400 \
    --read-block 20000 -o "$T/rx_$in" >/dev/null || bad "rx $in failed"
done
cmp -s "$T/rx_c16.wav/c0.bits" "$T/rx_x.ci16/c0.bits" || bad "rx: WAV bits differ from raw"

# channelize: the auxi chunk's centre in the channels' metadata
"$P" channelize -q -i "$T/c24.wav" -K 8 -c 0 -o "$T/ch" || bad "channelize the 24-bit WAV failed"
python3 - "$T/ch" <<'EOF' || bad "channelize: the centre of the auxi chunk is not in the metadata"
import glob, json, sys
m = json.load(open(glob.glob(sys.argv[1] + "/*.sigmf-meta")[0]))
g = m["global"]
assert g["polyrx:input_center_frequency"] == 7100000, g
assert g["polyrx:input_sample_rate"] == 96000, g
assert g["polyrx:input_samples"] == 192000, g
EOF

# KiwiSDR files (kiwirecorder --kiwi-wav): a GPS time stamp before every data chunk of 512
# samples; the second file lost its 100th packet. The stamps give the start (the name's date
# and second, the stamps' nanoseconds), the rate, and the lost samples, read as zeros.
kiwi="20261204T093015Z_7100000_iq.wav"
python3 - "$T" "$kiwi" <<'EOF' || bad "writing the KiwiSDR files failed"
import math, struct, sys
from wav_file import chunk, fmt_chunk, riff
t, name = sys.argv[1], sys.argv[2]
d = open(t + "/x.ci16", "rb").read()
def kiwi(path, drop):
    parts = [fmt_chunk(1, 2, 96000, 16)]
    tow = 5 * 86400 + 9 * 3600 + 30 * 60 + 15 + 18  # GPS = UTC + 18 s
    for c, first in enumerate(range(0, len(d) // 4, 512)):
        s = 0.125 + first / 96000
        if c != drop:
            parts += [chunk(b"kiwi", struct.pack("<BBII", 3, 0, tow + math.floor(s),
                                                 round((s - math.floor(s)) * 1e9))),
                      chunk(b"data", d[first * 4:(first + 512) * 4])]
    riff(path, b"".join(parts))
kiwi(t + "/" + name, -1)
kiwi(t + "/lost_" + name, 100)
EOF
demod "$T/$kiwi" "$T/kw.bits" -s $FS || bad "demod the KiwiSDR file failed"
cmp -s "$T/ref16.bits" "$T/kw.bits" || bad "KiwiSDR file: bits differ from the raw file's"
out=$("$P" info --json "$T/$kiwi") || bad "info --json $kiwi failed"
got=$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); w=d['wav_header']; k=w['kiwisdr']; print(d['samples'], d['center_freq'], round(d['sample_rate'], 3), w['rate_from'], w['start_time'], w['data_chunks'], k['gps_stamps'], k['gps_valid'], k['gaps'])" "$out")
[ "$got" = "192000 7100000 96000.0 GPS time stamps 2026-12-04T09:30:15.125000000Z 375 375 375 0" ] ||
  bad "info --json $kiwi: $got"
"$P" demod -q -i "$T/lost_$kiwi" -s $FS -r 2400 --cfo-span 4096 -o "$T/kl.bits" \
  --report "$T/kl.json" 2>"$T/err" || bad "demod the KiwiSDR file with a lost packet failed"
python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['totals']; sys.exit(not ('input_gaps' in [w['code'] for w in t['warnings']] and t['status'] == 'warning'))" "$T/kl.json" ||
  bad "KiwiSDR lost packet: the report does not warn: $(cat "$T/kl.json" | tail -c 600)"
grep -q "warning: .*1 gap where samples were lost (dropped packets; the first before sample 51200): 512 zero samples" "$T/err" ||
  bad "KiwiSDR lost packet: no warning under -q: $(cat "$T/err")"
out=$("$P" info --json "$T/lost_$kiwi") &&
  python3 -c "import json,sys; k=json.loads(sys.argv[1])['wav_header']['kiwisdr']; sys.exit(not (k['gaps'] == 1 and k['first_gap_sample'] == 51200 and k['zero_samples'] == 512))" "$out" ||
  bad "info --json on the lost packet: $out"
[ "$(wc -c <"$T/kl.bits")" = "$(wc -c <"$T/ref16.bits")" ] ||
  bad "KiwiSDR lost packet: $(wc -c <"$T/kl.bits") bits, the whole file has $(wc -c <"$T/ref16.bits")"
out=$("$P" ber "$T/tx0.bits" "$T/kl.bits" 2>&1)
python3 -c "import re,sys; m=re.search(r'aligned at shift \+0 bits.*BER ([0-9.e+-]+)', sys.argv[1], re.S); sys.exit(not (m and float(m.group(1)) < 0.01))" "$out" ||
  bad "KiwiSDR lost packet: the bits after the gap lost their place: $out"
POLYRX_READERS=3 "$P" rx -q -i "$T/$kiwi" -s $FS -K 8 --carrier f=0,rs=2400 --read-block 20000 \
  --iq -o "$T/rx_kiwi" >/dev/null || bad "rx on the KiwiSDR file failed"
cmp -s "$T/rx_kiwi/c0.bits" "$T/rx_x.ci16/c0.bits" || bad "rx: KiwiSDR bits differ from raw"

# the UTC start carried: channels' core:datetime at their sample 0 (the input's sample 0.5),
# rx's channel and a conversion's at sample 0; an auxi chunk's time of no zone is not carried
"$P" channelize -q -i "$T/$kiwi" -s $FS -K 8 -c 0 -o "$T/chk" || bad "channelize $kiwi failed"
"$P" convert -q -i "$T/$kiwi" -o "$T/kconv.sigmf-data" || bad "convert $kiwi failed"
python3 - "$T" <<'EOF' || bad "the KiwiSDR file's start is not in the outputs' metadata"
import glob, json, sys
t = sys.argv[1]
ch = json.load(open(glob.glob(t + "/chk/*.sigmf-meta")[0]))["captures"][0]["core:datetime"]
assert ch.startswith("2026-12-04T09:30:15.1250052083") and ch.endswith("Z"), ch
cv = json.load(open(t + "/kconv.sigmf-meta"))["captures"][0]["core:datetime"]
assert cv == "2026-12-04T09:30:15.125000000Z", cv
rx = json.load(open(t + "/rx_kiwi/c0.sigmf-meta"))["captures"][0]["core:datetime"]
assert rx == "2026-12-04T09:30:15.125Z", rx
assert "core:datetime" not in json.load(open(glob.glob(t + "/ch/*.sigmf-meta")[0]))["captures"][0]
EOF

# info
out=$("$P" info --json "$T/c24.wav") || bad "info --json c24.wav failed"
got=$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); w=d['wav_header']; print(d['wav'], d['format'], d['sample_rate'], d['center_freq'], d['samples'], w['stored'], w['center_from'], w['start_time'], w['extent'], w['rf64'])" "$out")
[ "$got" = "True cf32 96000 7100000 192000 PCM 24-bit auxi chunk 2026-12-04T09:30:15.250 declared False" ] ||
  bad "info --json c24.wav: $got"
"$P" info "$T/c16.wav" >"$T/txt" || bad "info c16.wav failed"
for want in "(WAV)" "ci16 (stored as WAV PCM 16-bit, 4 bytes per sample)" "rate         96 kHz" \
  "length       192000 samples, 2 s" "centre       unknown"; do
  grep -qF "$want" "$T/txt" || bad "info text lacks '$want': $(cat "$T/txt")"
done

# polyrx gen writes WAV files: the samples of the raw file it writes, the centre in the auxi
# chunk; demod gives the raw file's bits
for F in cf32 ci16 cu8; do
  "$P" gen -q -o "$T/g_$F.wav" -F "$F" -s $FS -f 7.1M -d 2 --carrier f=0,rs=2400,diff --esn0 15 ||
    bad "gen -o g_$F.wav failed"
  "$P" gen -q -o "$T/g_$F.raw" -F "$F" -s $FS -d 2 --carrier f=0,rs=2400,diff --esn0 15 ||
    bad "gen -o g_$F.raw failed"
  cmp -s <(tail -c +153 "$T/g_$F.wav") "$T/g_$F.raw" || bad "gen $F: the WAV's samples differ"
  demod "$T/g_$F.wav" "$T/gw_$F.bits" || bad "demod g_$F.wav failed"
  demod "$T/g_$F.raw" "$T/gr_$F.bits" -F "$F" -s $FS || bad "demod g_$F.raw failed"
  cmp -s "$T/gw_$F.bits" "$T/gr_$F.bits" || bad "gen $F: the WAV's bits differ from the raw file's"
  out=$("$P" info --json "$T/g_$F.wav") &&
    python3 -c "import json,sys; d=json.loads(sys.argv[1]); sys.exit(not (d['center_freq'] == 7.1e6 and d['wav_header']['center_from'] == 'auxi chunk' and d['samples'] == 192000))" "$out" ||
    bad "gen $F: info on its WAV file: $out"
done
"$P" gen -q -o "$T/g8.wav" -F ci8 -s $FS -d 1 --carrier rs=2400 2>"$T/err"
[ $? = 1 ] && grep -q "unsigned" "$T/err" && [ ! -e "$T/g8.wav" ] || bad "gen -F ci8 -o .wav: $(cat "$T/err")"

# refused: one line, exit 1
refuse() { # WHAT EXPECTED-WORDS command...
  local what=$1 words=$2
  shift 2
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ $rc -eq 1 ] || bad "$what: exit $rc (1 expected)"
  grep -q "$words" "$T/err" || bad "$what: no '$words' in: $(cat "$T/err")"
  [ "$(wc -l <"$T/err")" -eq 1 ] || bad "$what: not one line: $(cat "$T/err")"
}
refuse "a WAV file on standard input" "standard input holds a WAV file" \
  sh -c "cat '$T/c16.wav' | '$P' demod -q -i - -F ci16 -s $FS -r 2400 -o '$T/s.bits'"
refuse "a three-channel WAV" "three.wav' has 3 channels" \
  "$P" demod -q -i "$T/three.wav" -r 2400 -o "$T/m.bits"
refuse "-F against the header" "holds float 32-bit samples" \
  "$P" demod -q -i "$T/f32.wav" -F ci16 -r 2400 -o "$T/m.bits"

exit $((fail > 0))
