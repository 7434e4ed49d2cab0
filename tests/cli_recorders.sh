#!/usr/bin/env bash
# Raw recordings that say what they hold, as the commands meet them: a raw file's extension
# (.cs16, .cu8, .ci8) names its format; a gqrx recording (its name gives the rate, the centre and
# the UTC start) and SDRangel .sdriq files of 16 and 24 bits (their header does) demodulate
# without -s to the bits of the raw file given -s; the start reaches the channels' metadata and
# --start takes a date and time; info names the recorder; convert writes an .sdriq file byte for
# byte as SDRangel does; a damaged .sdriq header is refused with one line.
set -u
P=${1:?usage: cli_recorders.sh PATH_TO_POLYRX}
. "$(dirname "$0")/support/cli_test.sh"

FS=48000
"$P" gen -q -o "$T/x.ci16" -F ci16 -s $FS -d 2 --carrier f=0,rs=2400,diff --esn0 15 ||
  bad "gen failed"
"$P" convert -q -i "$T/x.ci16" -F ci16 -s $FS -o "$T/x.cf32" --out-format cf32 ||
  bad "convert to cf32 failed"
demod() { # INPUT OUT [options]
  local in=$1 out=$2
  shift 2
  "$P" demod -q -i "$in" -r 2400 --cfo-span 4096 -o "$out" "$@"
}
demod "$T/x.ci16" "$T/ref.bits" -F ci16 -s $FS || bad "demod of the raw file failed"

# a raw file named by its format (capture.ci16, hackrf.cs8, rtl.cu8): read as that, with a note
cp "$T/x.ci16" "$T/x.cs16"
demod "$T/x.cs16" "$T/named.bits" -s $FS || bad "demod of x.cs16 without -F failed"
cmp -s "$T/ref.bits" "$T/named.bits" || bad "x.cs16: not read as ci16"
"$P" demod -i "$T/x.cs16" -s $FS -r 2400 -o "$T/n2.bits" 2>&1 >/dev/null |
  grep -q "x.cs16 read as ci16 samples, by its name" || bad "x.cs16: no note"
"$P" info "$T/x.cs16" -s $FS | grep -q "^format       ci16" || bad "info x.cs16: not ci16"
for F in cu8 ci8; do
  "$P" convert -q -i "$T/x.ci16" -F ci16 -s $FS -o "$T/x.$F" --out-format $F --scale 0.5 ||
    bad "convert to $F failed"
  [ "$(("$P" info --json "$T/x.$F" -s $FS || echo) | python3 -c "import json,sys; print(json.load(sys.stdin)['format'])")" = $F ] ||
    bad "info x.$F: not read as $F"
done

# gqrx: cf32, the name's rate and centre
gq="gqrx_20261204_093015_7100000_48000_fc.raw"
cp "$T/x.cf32" "$T/$gq"
demod "$T/$gq" "$T/gq.bits" || bad "demod of the gqrx recording failed"
cmp -s "$T/ref.bits" "$T/gq.bits" || bad "gqrx: bits differ from the raw file's"
"$P" demod -i "$T/$gq" -r 2400 -o "$T/gq2.bits" 2>"$T/err" >/dev/null
grep -q "rate 48000 Hz and centre 7100000 Hz from its gqrx file name, start 2026-12-04T09:30:15Z" \
  "$T/err" || bad "gqrx: no note: $(cat "$T/err")"
"$P" channelize -q -i "$T/$gq" -K 8 -c 0 -o "$T/gch" --start 2026-12-04T09:30:16Z \
  --report "$T/gch.json" || bad "channelize of the gqrx recording from 09:30:16 failed"
python3 - "$T" <<'EOF' || bad "gqrx: the start is not in the channel's metadata"
import glob, json, sys
t = sys.argv[1]
m = json.load(open(glob.glob(t + "/gch/*.sigmf-meta")[0]))
assert m["captures"][0]["core:datetime"].startswith("2026-12-04T09:30:16.0000104"), m["captures"]
assert m["captures"][0]["core:frequency"] == 7100000, m["captures"]
r = json.load(open(t + "/gch.json"))["input"]
assert r["start_sample"] == 48000 and r["sample_rate"] == 48000, r
EOF

# .sdriq: 16 bits as stored, 24 bits as the same values times 256
python3 - "$T" <<'EOF' || bad "writing the .sdriq files failed"
import array, struct, sys, zlib
t = sys.argv[1]
h = array.array("h")
h.frombytes(open(t + "/x.ci16", "rb").read())
def sdriq(name, bits, data, crc_flip=0):
    head = struct.pack("<IQQII", 48000, 7100000, 1796376615000, bits, 0)  # 09:30:15.000 in ms
    head += struct.pack("<I", zlib.crc32(head) ^ crc_flip)
    open(t + "/" + name, "wb").write(head + data)
sdriq("r16.sdriq", 16, h.tobytes())
sdriq("r24.sdriq", 24, array.array("i", [v * 256 for v in h]).tobytes())
sdriq("bad.sdriq", 16, h.tobytes(), 1)
EOF
for f in r16 r24; do
  demod "$T/$f.sdriq" "$T/$f.bits" || bad "demod of $f.sdriq failed"
  cmp -s "$T/ref.bits" "$T/$f.bits" || bad "$f.sdriq: bits differ from the raw file's"
done
# convert writes .sdriq (ci16, the header's CRC, the start in ms): SDRangel plays it back
"$P" convert -q -i "$T/r24.sdriq" -o "$T/back.sdriq" || bad "convert to .sdriq failed"
demod "$T/back.sdriq" "$T/back.bits" || bad "demod of the written .sdriq failed"
cmp -s "$T/ref.bits" "$T/back.bits" || bad "the written .sdriq: bits differ"
cmp -s <(tail -c +33 "$T/back.sdriq") "$T/x.ci16" || bad "the written .sdriq's samples are not x.ci16"
cmp -s <(head -c 32 "$T/back.sdriq") <(head -c 32 "$T/r16.sdriq") ||
  bad "the written .sdriq's header is not SDRangel's for the same recording"
"$P" gen -q -o "$T/g.sdriq" -s $FS -f 7.1M -d 2 --carrier f=0,rs=2400,diff --esn0 15 ||
  bad "gen -o g.sdriq failed"
cmp -s <(tail -c +33 "$T/g.sdriq") "$T/x.ci16" || bad "gen's .sdriq samples are not its ci16 file's"
"$P" info "$T/g.sdriq" | grep -q "centre       7.1 MHz" || bad "gen's .sdriq: no centre"
"$P" gen -q -o "$T/g8.sdriq" -F cu8 -s $FS -d 1 --carrier rs=2400 2>"$T/err"
[ $? = 2 ] && grep -q "holds ci16" "$T/err" || bad "gen -F cu8 -o .sdriq: $(cat "$T/err")"
out=$("$P" info --json "$T/r24.sdriq") || bad "info --json r24.sdriq failed"
got=$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); g=d['recorder']; print(d['format'], d['sample_rate'], d['center_freq'], d['samples'], g['from'], g['bits'], g['start_time'], d['start_utc'])" "$out")
[ "$got" = "cf32 48000 7100000 96000 SDRangel .sdriq 24 2026-12-04T09:30:15Z 2026-12-04T09:30:15Z" ] ||
  bad "info --json r24.sdriq: $got"
"$P" info "$T/r16.sdriq" | grep -q "(SDRangel .sdriq)" || bad "info r16.sdriq: no recorder"
"$P" demod -q -i "$T/bad.sdriq" -r 2400 -o "$T/bad.bits" 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && grep -q "CRC32 does not match" "$T/err" && [ "$(wc -l <"$T/err")" -eq 1 ] ||
  bad "a damaged .sdriq header: exit $rc, $(cat "$T/err")"

exit $((fail > 0))
