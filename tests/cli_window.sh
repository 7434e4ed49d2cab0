#!/usr/bin/env bash
# --start and --duration: a time range of a recording, in every command that reads one. demod
# on a range gives the whole recording's bits of that range (from a file, and from a pipe whose
# first samples are dropped); convert gives the range's samples bit for bit (raw samples and real
# ones through the half-band converter, computed where the range starts); channelize's channels
# of a range are the whole run's channels there (past the filter's start) with the SigMF input's
# datetime moved to the range's start and its annotations moved with it; rx reads the range and
# spectrum draws it on the recording's time axis; times in seconds, H:M:S and samples, a start
# as a date and time by the recording's clock; a start past the end or before the recording, a
# pipe that ends first and malformed times are refused with one line.
set -u
P=${1:?usage: cli_window.sh PATH_TO_POLYRX}
. "$(dirname "$0")/support/cli_test.sh"

FS=48000 # 20 samples a symbol at 2400 Bd
"$P" gen -q -o "$T/x.cf32" -s $FS -d 4 --carrier f=0,rs=2400,diff --esn0 20 ||
  bad "gen failed"
demod() { # INPUT OUT [options]
  local in=$1 out=$2
  shift 2
  "$P" demod -q -i "$in" -s $FS -r 2400 --cfo-span 4096 -o "$out" "$@"
}
demod "$T/x.cf32" "$T/all.bits" || bad "demod of the whole file failed"

# 1.5 s from 0.5 s on: symbols 1200 .. 4799, bits 2400 .. 9599 (the first symbol's two bits are
# decoded against the reference phase: left out)
for spec in "--start 0.5 --duration 1.5" "--start 0:00.5 --duration 1500m" \
  "--start 24kS --duration 72000S"; do
  # shellcheck disable=SC2086
  demod "$T/x.cf32" "$T/w.bits" $spec || bad "demod $spec failed"
  python3 - "$T" <<'EOF' || bad "demod $spec: not the whole file's bits of the range"
import sys
t = sys.argv[1]
a, w = open(t + "/all.bits", "rb").read(), open(t + "/w.bits", "rb").read()
assert len(w) == 7200, len(w)
assert w[2:] == a[2402:9600], sum(x != y for x, y in zip(w[2:], a[2402:9600]))
EOF
done
out=$("$P" ber "$T/all.bits" "$T/w.bits" 2>&1)
python3 -c "import re,sys; m=re.search(r'aligned at shift -2400 bits.*: ([0-9]+) errors', sys.argv[1], re.S); sys.exit(not (m and int(m.group(1)) <= 2))" "$out" ||
  bad "ber does not find the range's bits in the whole file's: $out"
cat "$T/x.cf32" | demod - "$T/p.bits" --start 0.5 --duration 1.5 || bad "demod of a pipe failed"
cmp -s "$T/p.bits" "$T/w.bits" || bad "demod: a pipe's range differs from the file's"

# convert: the range's samples bit for bit; real samples: the whole stream's complex samples
"$P" convert -q -i "$T/x.cf32" -s $FS -o "$T/c.cf32" --start 1000S --duration 5000S ||
  bad "convert of a range failed"
cmp -s "$T/c.cf32" <(tail -c +8001 "$T/x.cf32" | head -c 40000) ||
  bad "convert: the range is not the input's samples 1000 .. 5999"
"$P" convert -q -i "$T/x.cf32" -s $FS -o "$T/r16.raw" --out-format ci16 --scale 0.25 ||
  bad "convert to ci16 failed"
"$P" convert -q -i "$T/r16.raw" -F ri16 -s 96000 -o "$T/rall.cf32" || bad "convert real failed"
"$P" convert -q -i "$T/r16.raw" -F ri16 -s 96000 -o "$T/rw.cf32" --start 0.3 --duration 0.2 ||
  bad "convert of a real range failed"
cmp -s "$T/rw.cf32" <(tail -c +$((14400 * 8 + 1)) "$T/rall.cf32" | head -c $((9600 * 8))) ||
  bad "convert: a real range is not the whole stream's complex samples 14400 .. 23999"

# channelize a dated SigMF recording's range: the channel's samples are the whole run's between
# the filter's start and end, its datetime and the annotation are moved to the range's start
"$P" convert -q -i "$T/x.cf32" -s $FS -f 7M -o "$T/s.sigmf-data" || bad "convert to SigMF failed"
python3 - "$T/s.sigmf-meta" <<'EOF' || bad "cannot date the SigMF recording"
import json, sys
m = json.load(open(sys.argv[1]))
m["captures"][0]["core:datetime"] = "2026-12-04T10:00:00Z"
m["annotations"] = [{"core:sample_start": 30000, "core:sample_count": 60000, "core:label": "burst"}]
json.dump(m, open(sys.argv[1], "w"))
EOF
"$P" channelize -q -i "$T/s" -K 16 -c 1 -o "$T/ca" || bad "channelize of the whole failed"
"$P" channelize -q -i "$T/s" -K 16 -c 1 -o "$T/cw" --start 0.5 --duration 1 --report "$T/cw.json" ||
  bad "channelize of a range failed"
python3 - "$T" <<'EOF' || bad "channelize: the range's channel is not the whole run's"
import array, json, sys
t = sys.argv[1]
a, w = array.array("f"), array.array("f")
a.frombytes(open(t + "/ca/ch0001.sigmf-data", "rb").read())
w.frombytes(open(t + "/cw/ch0001.sigmf-data", "rb").read())
assert len(w) == 2 * 6000, len(w)  # 48000 samples / D = 8
off = 2 * 3000                     # input sample 24000
# past the filter's start and before its end (256 taps: 32 outputs) the same computation
worst = max(abs(w[i] - a[off + i]) for i in range(2 * 40, len(w) - 2 * 40))
assert worst < 1e-5, worst
m = json.load(open(t + "/cw/ch0001.sigmf-meta"))
dt = m["captures"][0]["core:datetime"]
assert dt.startswith("2026-12-04T10:00:00.5000104166"), dt  # + 0.5 input sample
an = m["annotations"]
assert len(an) == 1 and an[0]["core:sample_start"] == 750 and an[0]["core:label"] == "burst", an
r = json.load(open(t + "/cw.json"))["input"]
assert r["start_sample"] == 24000 and r["samples"] == 48000, r
EOF

# a recording that retunes at 2 s: a range from 1 s keeps both captures, the second at its
# channel sample; a range from 3 s begins in the second, its datetime moved by 1 s, its channel
# frequency the second's; the first 1.5 s have no retune, and the annotation (0.625 s to 1.875 s)
# cut at their end
python3 - "$T/s.sigmf-meta" <<'EOF' || bad "cannot retune the SigMF recording"
import json, sys
m = json.load(open(sys.argv[1]))
m["captures"] = [{"core:sample_start": 0, "core:frequency": 7e6, "core:datetime": "2026-12-04T10:00:00Z"},
                 {"core:sample_start": 96000, "core:frequency": 7.1e6, "core:datetime": "2026-12-04T10:05:00Z"}]
json.dump(m, open(sys.argv[1], "w"))
EOF
"$P" channelize -q -i "$T/s" -K 16 -c 1 -o "$T/c1" --start 1 || bad "channelize from 1 s failed"
"$P" channelize -q -i "$T/s" -K 16 -c 1 -o "$T/c3" --start 3 || bad "channelize from 3 s failed"
"$P" channelize -q -i "$T/s" -K 16 -c 1 -o "$T/c0" --duration 1.5 || bad "channelize 1.5 s failed"
python3 - "$T" <<'EOF' || bad "channelize: the captures of a range are not the recording's"
import json, sys
t = sys.argv[1]
c = json.load(open(t + "/c1/ch0001.sigmf-meta"))["captures"]
assert len(c) == 2 and c[0]["core:frequency"] == 7e6 + 3000 and c[1]["core:frequency"] == 7.1e6 + 3000, c
assert c[0]["core:datetime"].startswith("2026-12-04T10:00:01.0000104"), c
assert c[1]["core:sample_start"] == 6000, c  # input sample 96000 - 48000, D = 8
c = json.load(open(t + "/c3/ch0001.sigmf-meta"))["captures"]
assert len(c) == 1 and c[0]["core:frequency"] == 7.1e6 + 3000, c
assert c[0]["core:datetime"].startswith("2026-12-04T10:05:01.0000104"), c
m = json.load(open(t + "/c0/ch0001.sigmf-meta"))  # ends before the retune, inside the annotation
assert len(m["captures"]) == 1 and m["captures"][0]["core:frequency"] == 7e6 + 3000, m["captures"]
an = m["annotations"]
assert len(an) == 1 and an[0]["core:sample_start"] == 3750 and an[0]["core:sample_count"] == 5250, an
EOF

# --start as a date and time: by the recording's own clock (the capture it falls in)
"$P" channelize -q -i "$T/s" -K 16 -c 1 -o "$T/cd" --start 2026-12-04T10:05:00.5Z --report \
  "$T/cd.json" || bad "channelize from a date and time failed"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['input']; sys.exit(not (r['start_sample'] == 120000 and r['center_freq'] == 7.1e6))" "$T/cd.json" ||
  bad "--start 2026-12-04T10:05:00.5Z: not sample 120000 of the second capture: $(cat "$T/cd.json")"

# rx and spectrum read the range
"$P" rx -q -i "$T/x.cf32" -s $FS -K 8 --carrier f=0,rs=2400 --start 1 --duration 2 -o "$T/rx" \
  --report "$T/rx.json" >/dev/null || bad "rx of a range failed"
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['input']; sys.exit(not (r['start_sample'] == 48000 and r['samples'] == 96000))" "$T/rx.json" ||
  bad "rx: the report's range: $(cat "$T/rx.json")"
[ "$(wc -c <"$T/rx/c0.bits")" = 9600 ] || bad "rx: $(wc -c <"$T/rx/c0.bits") bits for 2 s"
"$P" spectrum -q -i "$T/x.cf32" -s $FS -o "$T/s.png" --start 1 --duration 1 --rows 16 ||
  bad "spectrum of a range failed"
PYTHONPATH="$(dirname "$0")/support" python3 - "$T/s.png" <<'EOF' ||
import sys
from png_read import read_png
w, h, px, text = read_png(sys.argv[1])
t0, t1 = map(float, text["polyrx:time_range_s"].split())
assert t0 == 1 and 1.95 < t1 <= 2, (t0, t1)  # whole FFT frames of the range
EOF
  bad "spectrum: the time axis is not the range's (1 s to 2 s)"

# refused: one line, the exit status
refuse() { # WHAT STATUS EXPECTED-WORDS command...
  local what=$1 want=$2 words=$3
  shift 3
  "$@" >"$T/out" 2>"$T/err"
  local rc=$?
  [ $rc -eq "$want" ] || bad "$what: exit $rc ($want expected)"
  grep -q "$words" "$T/err" || bad "$what: no '$words' in: $(cat "$T/err")"
  [ "$(wc -l <"$T/err")" -eq 1 ] || bad "$what: not one line: $(cat "$T/err")"
}
refuse "a start past the end" 1 "past the input.s end: it holds 192000 samples (4 s)" demod "$T/x.cf32" "$T/e.bits" --start 5
refuse "a pipe that ends first" 1 "before the start" \
  sh -c "cat '$T/x.cf32' | '$P' demod -q -i - -s $FS -r 2400 -o '$T/e.bits' --start 1:00"
refuse "a malformed start" 2 "start" demod "$T/x.cf32" "$T/e.bits" --start 1:75
refuse "a duration of nothing" 2 "duration" demod "$T/x.cf32" "$T/e.bits" --duration 0
refuse "a fraction of a sample" 2 "start" demod "$T/x.cf32" "$T/e.bits" --start 1.5S
refuse "a date before the recording" 1 "before the recording began (2026-12-04T10:00:00Z)" \
  "$P" demod -q -i "$T/s" -r 2400 -o "$T/e.bits" --start 2026-12-04T09:59:59Z
refuse "a date for a recording of no date" 2 "needs a recording that says when it began" \
  demod "$T/x.cf32" "$T/e.bits" --start 2026-12-04T10:00:00Z
refuse "a malformed date" 1 "not an ISO-8601 time" \
  "$P" demod -q -i "$T/s" -r 2400 -o "$T/e.bits" --start 2026-12-04T10:00:00

exit $((fail > 0))
