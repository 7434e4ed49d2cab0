#!/usr/bin/env bash
# polyrx channelize end to end: files and names, output counts (flush tail included), SigMF
# metadata, tones landing in their channels at unit gain, stdin = file = any block size, SigMF
# input, open-file limit, disk full, and every bad input giving a clear error and exit != 0.
set -u
POLYRX=${1:?usage: cli_channelize.sh path/to/polyrx}
[ -x "$POLYRX" ] || { echo "no polyrx binary at $POLYRX"; exit 1; }
POLYRX=$(cd "$(dirname "$POLYRX")" && pwd)/$(basename "$POLYRX")
command -v python3 >/dev/null || { echo "FAIL: python3 is needed (scripts/setup.sh installs it)"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# expect_error WORD ARGS...: polyrx channelize must exit non-zero with WORD in its message
expect_error() {
  local word=$1
  shift
  if "$POLYRX" channelize "$@" >out.txt 2>err.txt; then
    fail "channelize $* succeeded; expected an error about '$word'"
  elif ! grep -qi -- "$word" err.txt; then
    fail "channelize $*: message lacks '$word': $(cat err.txt)"
  fi
}

# Input: fs = 16 kHz, K = 16 (spacing 1 kHz); tones at channel 3 (+3 kHz, amplitude 0.5) and
# channel 12 (-4 kHz, amplitude 0.25), as ci16.
N=3000
python3 - <<'EOF'
import math, struct
N, fs = 3000, 16000.0
with open("in.ci16", "wb") as f:
    for n in range(N):
        re = 0.5 * math.cos(2 * math.pi * 3000 / fs * n) + 0.25 * math.cos(2 * math.pi * -4000 / fs * n)
        im = 0.5 * math.sin(2 * math.pi * 3000 / fs * n) + 0.25 * math.sin(2 * math.pi * -4000 / fs * n)
        f.write(struct.pack("<hh", round(re * 32767), round(im * 32767)))
EOF

# ---- a normal run ----
"$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -f 1M -K 16 -P 8 -o out1 2>summary.txt ||
  fail "normal run failed: $(cat summary.txt)"
grep -q "strongest channels" summary.txt || fail "no summary table: $(cat summary.txt)"
grep -q "3000 samples" summary.txt || fail "summary lacks the input count: $(cat summary.txt)"
# the strongest channel of the table is channel 3, the next channel 12
python3 - "$(cat summary.txt)" <<'EOF' || fail "summary table order"
import sys
rows = [l.split() for l in sys.argv[1].splitlines() if l.strip() and l.split()[0].isdigit()]
assert [r[0] for r in rows[:2]] == ["3", "12"], rows
EOF
[ "$(ls out1 | wc -l)" = 32 ] || fail "expected 32 files in out1, got $(ls out1 | wc -l)"
[ "$(ls out1 | head -2 | tr '\n' ' ')" = "ch0000.sigmf-data ch0000.sigmf-meta " ] ||
  fail "file names: $(ls out1 | head -2)"

# counts, metadata and the tones, checked in float64 by python
python3 - out1 16 8 8 3000 16000 1000000 <<'EOF' || fail "out1 contents"
import json, math, struct, sys
d, K, D, P, N, fs, fc = sys.argv[1], *map(int, sys.argv[2:5]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
M = K * P
expect = -(-(N + M - 1) // D)  # ceil((N + M - 1) / D), the flush tail included
ok = True
power = {}
for k in range(K):
    meta = json.load(open(f"{d}/ch{k:04d}.sigmf-meta"))
    g, c = meta["global"], meta["captures"][0]
    off = k / K - (1 if k / K >= 0.5 else 0)
    checks = {
        "datatype": g["core:datatype"] == "cf32_le",
        "rate": g["core:sample_rate"] == fs / D,
        "version": g["core:version"] == "1.0.0",
        "recorder": g["core:recorder"] == "polyrx",
        "extension": any(e["name"] == "polyrx" and e["optional"] is True and e["version"]
                         for e in g["core:extensions"]),
        "index": g["polyrx:channel_index"] == k,
        "K": g["polyrx:channels"] == K and g["polyrx:decimation"] == D,
        "taps": g["polyrx:prototype_taps"] == M and g["polyrx:taps_per_channel"] == P,
        "delay": abs(g["polyrx:group_delay_seconds"] - (M - 1) / 2 / fs) < 1e-15,
        "input": g["polyrx:input_sample_rate"] == fs and g["polyrx:input_format"] == "ci16"
                 and g["polyrx:input_samples"] == N,
        "start": c["core:sample_start"] == 0,
        "freq": abs(c["core:frequency"] - (fc + off * fs)) < 1e-6,
        "annotations": meta["annotations"] == [],
    }
    for name, good in checks.items():
        if not good:
            print(f"channel {k}: metadata check '{name}' failed: {g} {c}")
            ok = False
    raw = open(f"{d}/ch{k:04d}.sigmf-data", "rb").read()
    if len(raw) != 8 * expect:
        print(f"channel {k}: {len(raw) // 8} samples, expected {expect}")
        ok = False
        continue
    y = struct.unpack(f"<{2 * expect}f", raw)
    # steady state: skip the filter's start and tail
    a, b = M // D + 1, N // D - 1
    power[k] = sum(y[2 * j] ** 2 + y[2 * j + 1] ** 2 for j in range(a, b)) / (b - a)
    if abs(g["polyrx:power_dbfs"] - 10 * math.log10(sum(v * v for v in y) / expect)) > 1e-6:
        print(f"channel {k}: polyrx:power_dbfs {g['polyrx:power_dbfs']} is not the mean power")
        ok = False
# unit gain (+-0.1 dB) in the tones' channels; >= 60 dB down in channels not next to them
for k, amp in ((3, 0.5 * 32767 / 32768), (12, 0.25 * 32767 / 32768)):
    db = 10 * math.log10(power[k] / amp ** 2)
    if abs(db) > 0.1:
        print(f"tone in channel {k}: gain {db:.3f} dB")
        ok = False
for k in range(K):
    if k in (2, 3, 4, 11, 12, 13):
        continue
    if power[k] > 1e-6 * 0.25 ** 2:
        print(f"channel {k}: leakage {10 * math.log10(power[k] + 1e-30):.1f} dBFS")
        ok = False
sys.exit(0 if ok else 1)
EOF

# ---- stdin = file = any block size; threads do not change a bit ----
cat in.ci16 | "$POLYRX" channelize -i - -F ci16 -s 16k -f 1M -K 16 -P 8 -o out2 -q ||
  fail "stdin run failed"
"$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -f 1M -K 16 -P 8 --block 7 -t 2 -o out3 -q ||
  fail "--block 7 run failed"
for k in 0000 0003 0012 0015; do
  cmp -s out1/ch$k.sigmf-data out2/ch$k.sigmf-data || fail "stdin output differs (channel $k)"
  cmp -s out1/ch$k.sigmf-data out3/ch$k.sigmf-data || fail "--block 7 output differs (channel $k)"
done

# ---- channel subset (a repeat is written once), odd K critically sampled, wide names ----
"$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 16 -P 8 -c 12,1-3,3 -o sub -q ||
  fail "--channels run failed"
[ "$(ls sub | tr '\n' ' ')" = "ch0001.sigmf-data ch0001.sigmf-meta ch0002.sigmf-data ch0002.sigmf-meta ch0003.sigmf-data ch0003.sigmf-meta ch0012.sigmf-data ch0012.sigmf-meta " ] ||
  fail "subset files: $(ls sub | tr '\n' ' ')"
cmp -s sub/ch0003.sigmf-data out1/ch0003.sigmf-data || fail "a subset channel differs from the full run"
"$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 5 --oversample 1 -P 4 -o odd -q ||
  fail "odd K with --oversample 1 failed"
[ "$(stat -c %s odd/ch0004.sigmf-data)" = $((8 * ((N + 19 + 4) / 5))) ] ||
  fail "odd K: $(stat -c %s odd/ch0004.sigmf-data) bytes, expected $((8 * ((N + 19 + 4) / 5)))"
"$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 10002 -P 1 -c 5 -o wide -q || fail "K = 10002 failed"
[ -f wide/ch00005.sigmf-data ] || fail "K = 10002: expected wide/ch00005.*, got $(ls wide)"

# ---- SigMF input: rate, frequency and format from the metadata ----
"$POLYRX" channelize -i out1/ch0003.sigmf-meta -K 2 -P 8 -o fromsigmf -q || fail "SigMF input failed"
python3 - <<'EOF' || fail "SigMF input: metadata of the outputs"
import json
m0 = json.load(open("fromsigmf/ch0000.sigmf-meta"))
m1 = json.load(open("fromsigmf/ch0001.sigmf-meta"))
assert m0["global"]["core:sample_rate"] == 2000 and m0["global"]["polyrx:input_format"] == "cf32", m0
assert m0["captures"][0]["core:frequency"] == 1003000, m0["captures"]
assert m1["captures"][0]["core:frequency"] == 1003000 - 1000, m1["captures"]
EOF
"$POLYRX" channelize -i out1/ch0003 -K 2 -s 4k -f 5M -o override -q || fail "SigMF base name + overrides"
grep -q '"core:frequency":[[:space:]]*5000000' override/ch0000.sigmf-meta ||
  fail "-f does not override the recording's frequency"

# ---- empty input: empty recordings, success ----
: | "$POLYRX" channelize -i - -s 1M -K 4 -o empty -q || fail "empty input failed"
[ -f empty/ch0003.sigmf-meta ] && [ ! -s empty/ch0003.sigmf-data ] || fail "empty input outputs"

# ---- SIGTERM (or Ctrl-C) while the producer is still open ends the run cleanly ----
mkfifo fifo
"$POLYRX" channelize -i fifo -F ci16 -s 16k -K 4 --block 1000 -o sig -q 2>err.txt &
PID=$!
exec 3>fifo
cat in.ci16 >&3
for _ in $(seq 100); do [ -f sig/ch0003.sigmf-data ] && break; sleep 0.05; done
sleep 0.3
kill -TERM $PID
wait $PID
rc=$?
exec 3>&-
[ $rc = 130 ] || fail "SIGTERM: exit status $rc, expected 130: $(cat err.txt)"
grep -q '"polyrx:input_samples":[[:space:]]*3000' sig/ch0000.sigmf-meta 2>/dev/null ||
  fail "SIGTERM: the samples read were not all written and described"

# ---- the open-file limit: raised when the hard limit allows, a clear error when not ----
(ulimit -Sn 40 && "$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 64 -P 2 -o many -q) ||
  fail "soft limit 40 with K = 64 should have been raised"
[ "$(ls many | wc -l)" = 128 ] || fail "K = 64: $(ls many | wc -l) files"
(ulimit -n 40 && "$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 64 -P 2 -o many2 -q) 2>err.txt &&
  fail "hard limit 40 with K = 64 should fail"
grep -q "open files" err.txt || fail "open-file limit message: $(cat err.txt)"

# ---- a run that fails before streaming leaves no recordings (here: an unwritable channel) ----
mkdir part && mkdir part/ch0002.sigmf-data
expect_error "ch0002" -i in.ci16 -F ci16 -s 16k -K 4 -o part -q
[ "$(ls part)" = "ch0002.sigmf-data" ] || fail "a failed start left files: $(ls part | tr '\n' ' ')"

# ---- a full disk is reported ----
mkdir full && ln -s /dev/full full/ch0001.sigmf-data
expect_error "No space" -i in.ci16 -F ci16 -s 16k -K 4 -o full -q

# ---- bad input: a clear message and exit != 0 ----
head -c $((4 * 100 + 3)) in.ci16 >cut.ci16
expect_error "leftover" -i cut.ci16 -F ci16 -s 16k -K 4 -o cut -q
python3 - cut >/dev/null <<'EOF' || fail "truncated input: complete samples not written"
import os, sys
# 100 complete samples, M = 64, D = 2: ceil(163 / 2) = 82 outputs
assert os.path.getsize("cut/ch0000.sigmf-data") == 8 * 82, os.path.getsize("cut/ch0000.sigmf-data")
EOF
head -c 403 in.ci16 | "$POLYRX" channelize -i - -F ci16 -s 16k -K 4 -o cut2 -q 2>err.txt &&
  fail "truncated stdin accepted"
grep -q "3 leftover byte" err.txt || fail "truncated stdin message: $(cat err.txt)"
expect_error "No such file" -i missing.cf32 -s 1M -K 4 -o x
expect_error "unknown sample format" -i in.ci16 -F ci12 -s 1M -K 4 -o x
expect_error "not a valid sample rate" -i in.ci16 -s 1.5Q -K 4 -o x
expect_error "not a valid sample rate" -i in.ci16 -s 0 -K 4 -o x
expect_error "not a valid centre" -i in.ci16 -s 1M -f 10MHz -K 4 -o x
expect_error "sample rate" -i in.ci16 -K 4 -o x
expect_error "channel count" -i in.ci16 -s 1M -K 0 -o x
expect_error "channel count" -i in.ci16 -s 1M -K 12.5 -o x
expect_error "even" -i in.ci16 -s 1M -K 7 -o x
expect_error "does not exist" -i in.ci16 -s 1M -K 8 -c 2,8 -o x
expect_error "channel list" -i in.ci16 -s 1M -K 8 -c 2,,3 -o x
expect_error "tap count" -i in.ci16 -s 1M -K 8 -P 0 -o x
expect_error "attenuation" -i in.ci16 -s 1M -K 8 --atten -3 -o x
expect_error "threads" -i in.ci16 -s 1M -K 8 -t many -o x
expect_error "backend" -i in.ci16 -s 1M -K 8 --backend gpu -o x
expect_error "block" -i in.ci16 -s 1M -K 8 --block 0 -o x
expect_error "oversample" -i in.ci16 -s 1M -K 8 --oversample 4 -o x
expect_error "unknown option" -i in.ci16 -s 1M -K 8 --frobnicate -o x
expect_error "output directory" -i in.ci16 -s 1M -K 8
expect_error "Not a directory" -i in.ci16 -s 1M -K 8 -o in.ci16/sub
expect_error "no input" -s 1M -K 8 -o x
expect_error "holds" -i out1/ch0003.sigmf-meta -F ci16 -K 2 -o x
cp out1/ch0001.sigmf-data keep.data
expect_error "is the input" -i out1/ch0001 -K 2 -o out1
cmp -s keep.data out1/ch0001.sigmf-data || fail "the input was overwritten"
printf '{"global": {"core:datatype": "cf32_le"}, "captures": [' >bad.sigmf-meta
: >bad.sigmf-data
expect_error "JSON" -i bad.sigmf-meta -s 1M -K 2 -o x
printf '{"global": {"core:datatype": "ci16_be", "core:sample_rate": 1e6}, "captures": []}' >be.sigmf-meta
: >be.sigmf-data
expect_error "big-endian" -i be -K 2 -o x
printf '{"global": {"core:datatype": "cf32_le"}, "captures": []}' >norate.sigmf-meta
: >norate.sigmf-data
expect_error "core:sample_rate" -i norate.sigmf-meta -K 2 -o x

# ---- help ----
"$POLYRX" channelize 2>err.txt && fail "no arguments: exit status 0"
grep -q usage err.txt || fail "no arguments: no usage on stderr"
"$POLYRX" channelize --help >help.txt || fail "--help exit code"
for w in usage examples --oversample --channels "default 16" "default 80"; do
  grep -q -- "$w" help.txt || fail "--help lacks '$w'"
done

if [ $fails -ne 0 ]; then
  echo "cli_channelize: $fails check(s) failed"
  exit 1
fi
echo "cli_channelize: all checks passed"
