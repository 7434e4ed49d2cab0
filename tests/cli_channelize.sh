#!/usr/bin/env bash
# polyrx channelize end to end: files and names, output counts (ceil(N/D), aligned with the
# input), SigMF metadata, tones landing in their channels at unit gain, a tone burst's edges
# where the input's are, a carrier through channelize + demod giving exactly the symbols sent,
# the guarantees of docs/FORMATS.md ("What polyrx guarantees"), SigMF input, recordings complete
# or absent (SIGKILL mid-write, a file-size limit), aliased outputs, non-finite input, resource
# caps, stop signals, and every bad input giving a clear error and exit != 0.
set -u
POLYRX=${1:?usage: cli_channelize.sh path/to/polyrx}
[ -x "$POLYRX" ] || { echo "no polyrx binary at $POLYRX"; exit 1; }
POLYRX=$(cd "$(dirname "$POLYRX")" && pwd)/$(basename "$POLYRX")
. "$(dirname "$0")/support/fifo_sigterm.sh"
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
# 16 recordings and the collection tying them
[ "$(ls out1 | wc -l)" = 33 ] || fail "expected 33 files in out1, got $(ls out1 | wc -l)"
[ "$(ls out1 | head -2 | tr '\n' ' ')" = "ch0000.sigmf-data ch0000.sigmf-meta " ] ||
  fail "file names: $(ls out1 | head -2)"

# counts, metadata and the tones, checked in float64 by python
python3 - out1 16 8 8 3000 16000 1000000 <<'EOF' || fail "out1 contents"
import json, math, struct, sys
d, K, D, P, N, fs, fc = sys.argv[1], *map(int, sys.argv[2:5]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
M = K * P
expect = -(-N // D)  # ceil(N / D): the input's span, no filter tail
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
        # round((M - 1) / (2D)) outputs dropped: M/2 input samples, half a sample more than
        # the group delay (M - 1)/2
        "offset": g["polyrx:time_offset_input_samples"] == 0.5,
        "nonfinite": g["polyrx:nonfinite_input_samples"] == 0,
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
    # steady state: skip the filter's transitions at both ends (half the prototype each)
    a, b = M // (2 * D) + 1, N // D - M // (2 * D) - 1
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
[ "$(ls sub | tr '\n' ' ')" = "ch0001.sigmf-data ch0001.sigmf-meta ch0002.sigmf-data ch0002.sigmf-meta ch0003.sigmf-data ch0003.sigmf-meta ch0012.sigmf-data ch0012.sigmf-meta channels.sigmf-collection " ] ||
  fail "subset files: $(ls sub | tr '\n' ' ')"
cmp -s sub/ch0003.sigmf-data out1/ch0003.sigmf-data || fail "a subset channel differs from the full run"
"$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 5 --oversample 1 -P 4 -o odd -q ||
  fail "odd K with --oversample 1 failed"
[ "$(stat -c %s odd/ch0004.sigmf-data)" = $((8 * ((N + 4) / 5))) ] ||
  fail "odd K: $(stat -c %s odd/ch0004.sigmf-data) bytes, expected $((8 * ((N + 4) / 5)))"
# K = 1 (critically sampled): the default cut-off is the Nyquist frequency, so --cutoff is asked
# for by name; with it the one channel is a low-pass of the input
expect_error "default cut-off" -i in.ci16 -F ci16 -s 16k -K 1 --oversample 1 -o k1
"$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 1 --oversample 1 --cutoff 0.45 -P 8 -o k1 -q ||
  fail "-K 1 --oversample 1 --cutoff 0.45 failed"
[ "$(stat -c %s k1/ch0000.sigmf-data 2>/dev/null)" = $((8 * N)) ] || fail "-K 1: $(ls -l k1)"
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

# ---- empty input: recordings of ceil(0 / D) = 0 samples, success, power_dbfs still present ----
: | "$POLYRX" channelize -i - -s 1M -K 4 -o empty -q || fail "empty input failed"
[ -f empty/ch0003.sigmf-meta ] && [ -f empty/ch0003.sigmf-data ] && [ ! -s empty/ch0003.sigmf-data ] ||
  fail "empty input outputs"
grep -q '"polyrx:power_dbfs":[[:space:]]*-999' empty/ch0003.sigmf-meta ||
  fail "empty input: polyrx:power_dbfs is not -999: $(cat empty/ch0003.sigmf-meta)"

# ---- SIGTERM (or Ctrl-C) while the producer is still open ends the run cleanly ----
fifo_sigterm_run in.ci16 sig/ch0003.sigmf-data \
  "$POLYRX" channelize -i fifo -F ci16 -s 16k -K 4 --block 1000 -o sig -q
rc=$?
[ $rc = 130 ] || fail "SIGTERM: exit status $rc, expected 130: $(cat err.txt)"
[ "$(grep -c 'interrupted: stopping after' err.txt)" = 1 ] ||
  fail "SIGTERM: the stop said $(grep -c 'interrupted: stopping after' err.txt) times: $(cat err.txt)"
grep -q '"polyrx:input_samples":[[:space:]]*3000' sig/ch0000.sigmf-meta 2>/dev/null ||
  fail "SIGTERM: the samples read were not all written and described"
[ "$(stat -c %s sig/ch0000.sigmf-data 2>/dev/null)" = $((8 * 1500)) ] ||
  fail "SIGTERM: $(stat -c %s sig/ch0000.sigmf-data 2>/dev/null) bytes, expected 8 x ceil(3000 / 2)"

# ---- the open-file limit: raised when the hard limit allows, a clear error when not ----
(ulimit -Sn 40 && "$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 64 -P 2 -o many -q) ||
  fail "soft limit 40 with K = 64 should have been raised"
[ "$(ls many | wc -l)" = 129 ] || fail "K = 64: $(ls many | wc -l) files"
(ulimit -n 40 && "$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 64 -P 2 -o many2 -q) 2>err.txt &&
  fail "hard limit 40 with K = 64 should fail"
grep -q "open files" err.txt || fail "open-file limit message: $(cat err.txt)"

# ---- a run that fails before streaming leaves no recordings (here: an unwritable channel) ----
mkdir part && mkdir part/ch0002.sigmf-data
expect_error "ch0002" -i in.ci16 -F ci16 -s 16k -K 4 -o part -q
[ "$(ls part)" = "ch0002.sigmf-data" ] || fail "a failed start left files: $(ls part | tr '\n' ' ')"

# ---- a write error (a file-size limit of 8 KiB: each channel needs 12000 bytes) is reported,
# the summary says what was written, and no recording claims what its data lacks ----
(ulimit -f 8 && "$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 4 -o full) 2>err.txt &&
  fail "a file-size limit: exit status 0"
grep -q "File too large" err.txt || fail "file-size limit message: $(cat err.txt)"
grep -q "wrote 0 of 4 channels (4 failed" err.txt || fail "file-size limit summary: $(cat err.txt)"
[ -z "$(ls full)" ] || fail "a file-size limit left files: $(ls full | tr '\n' ' ')"
# the report (through a pipe, beyond the limit) gives the exit status and the error's line
rm -rf full
(ulimit -f 8 && "$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 4 -o full -q --report - \
  2>/dev/null) | python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(not (d['exit_status'] == 1 and 'File too large' in d['error'] and all(c['recording'] is None for c in d['channels'])))" ||
  fail "a file-size limit: the report lacks exit_status 1, the error or the failed recordings"
# a limit between the sizes of the channels' metadata files: some channels fail, the others are
# whole, and the summary counts them (python sets the limit in bytes, then runs polyrx)
head -c 400 in.ci16 >short.ci16
"$POLYRX" channelize -i short.ci16 -F ci16 -s 16k -K 16 -P 8 -o sizes -q || fail "sizes run failed"
python3 - "$POLYRX" <<'EOF' || fail "a file-size limit between metadata sizes"
import os, resource, signal, subprocess, sys
sizes = {k: os.path.getsize(f"sizes/ch{k:04d}.sigmf-meta") for k in range(16)}
limit = sorted(sizes.values())[7]  # the 8th smallest: about half the channels fit
fit = sorted(k for k in range(16) if sizes[k] <= limit)
assert 0 < len(fit) < 16, sizes
def limited():
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
p = subprocess.run([sys.argv[1], "channelize", "-i", "short.ci16", "-F", "ci16", "-s", "16k",
                    "-K", "16", "-P", "8", "-o", "part16"], preexec_fn=limited,
                   capture_output=True, text=True)
assert p.returncode == 1, (p.returncode, p.stderr)
want = f"wrote {len(fit)} of 16 channels ({16 - len(fit)} failed to write and have no recording"
assert want in p.stderr, (want, p.stderr)
left = sorted(os.listdir("part16"))
assert left == sorted(f"ch{k:04d}.sigmf-{e}" for k in fit for e in ("data", "meta")), (fit, left)
for k in fit:
    assert open(f"part16/ch{k:04d}.sigmf-data", "rb").read() == open(f"sizes/ch{k:04d}.sigmf-data", "rb").read()
EOF
# the same with SIGXFSZ at its default (the shell's): the command still reports the error
(ulimit -f 8 && trap - XFSZ && "$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 4 -o full2 -q) \
  2>err.txt
[ $? = 1 ] && grep -q "File too large" err.txt || fail "SIGXFSZ default: $(cat err.txt)"

# ---- alignment: a tone burst's edges are where the input's are ----
# fs = 16 kHz, K = 16, P = 8, D = 8 (M = 128): a tone at channel 3's centre from input sample
# 1000 to 2000 of 3001. Channel sample j is input time 8 j + 0.5: the burst's half-amplitude
# points are at j = (1000 - 0.5) / 8 and (2000 - 0.5) / 8, and nothing is there more than half
# the prototype (64 input samples, 8 outputs) before or after.
python3 - <<'EOF'
import math, struct
with open("burst.cf32", "wb") as f:
    for n in range(3001):
        a = 0.5 if 1000 <= n < 2000 else 0.0
        f.write(struct.pack("<ff", a * math.cos(2 * math.pi * 3 / 16 * n), a * math.sin(2 * math.pi * 3 / 16 * n)))
EOF
"$POLYRX" channelize -i burst.cf32 -s 16k -K 16 -P 8 -c 3 -o burst -q || fail "burst run failed"
python3 - <<'EOF' || fail "tone burst alignment"
import struct
raw = open("burst/ch0003.sigmf-data", "rb").read()
n = len(raw) // 8
assert n == 376, f"{n} samples, expected ceil(3001 / 8) = 376"
y = struct.unpack(f"<{2 * n}f", raw)
mag = [(y[2 * j] ** 2 + y[2 * j + 1] ** 2) ** 0.5 for j in range(n)]
on = [j for j in range(n) if mag[j] >= 0.25]
first, last = on[0], on[-1]
# the half-amplitude crossings, interpolated between outputs
t0 = first - 1 + (0.25 - mag[first - 1]) / (mag[first] - mag[first - 1])
t1 = last + (mag[last] - 0.25) / (mag[last] - mag[last + 1])
assert abs(t0 - 999.5 / 8) < 0.1 and abs(t1 - 1999.5 / 8) < 0.1, (t0, t1, 999.5 / 8, 1999.5 / 8)
quiet = [j for j in range(n) if j < 999.5 / 8 - 9 or j > 1999.5 / 8 + 9]
assert max(mag[j] for j in quiet) < 1e-4 * 0.5, max(mag[j] for j in quiet)
assert abs(sum(mag[140:235]) / 95 - 0.5) < 1e-3
EOF

# ---- a strong carrier through channelize then demod: exactly the symbols sent, no error ----
# fs = 64 kHz, K = 16 (D = 8, 8 kHz per channel): a 1600 Bd carrier at channel 3's centre,
# symbol 0 centred half a symbol in, 128000 samples = 3200 symbol centres inside the input.
"$POLYRX" gen -o cap.cf32 -s 64k -n 128000 --carrier f=12k,rs=1600,diff,seed=7,timing=0.5 \
  --esn0 25 --bits sent -q || fail "gen failed"
"$POLYRX" channelize -i cap.cf32 -s 64k -K 16 -c 3 -o chd -q || fail "channelize of the carrier"
"$POLYRX" demod -i chd/ch0003 -r 1600 -o got.bits -q || fail "demod of channel 3"
python3 - <<'EOF' || fail "channelize + demod: symbols"
sent, got = open("sent0.bits", "rb").read(), open("got.bits", "rb").read()
assert len(got) == 2 * 3200, f"{len(got) // 2} symbols, expected 3200"
# differential: the first symbol's bits are decoded against an arbitrary quarter-turn
errors = sum(a != b for a, b in zip(sent[2:len(got)], got[2:]))
assert errors == 0, f"{errors} bit errors"
EOF

# ---- What polyrx guarantees (docs/FORMATS.md): byte-identical for any thread count and any
# cutting of the input stream by its producer; equal to float rounding for --block and the
# channel selection ----
python3 - <<'EOF'
import random, struct
random.seed(5)
with open("g.cf32", "wb") as f:
    for _ in range(20000):
        f.write(struct.pack("<ff", random.gauss(0, 0.3), random.gauss(0, 0.3)))
EOF
"$POLYRX" channelize -i g.cf32 -s 1M -K 64 -P 8 -t 1 -o g1 -q || fail "guarantees: base run"
"$POLYRX" channelize -i g.cf32 -s 1M -K 64 -P 8 -t 3 -o g2 -q || fail "guarantees: -t 3"
cat >pieces.py <<'EOF'
import random, sys
data = open("g.cf32", "rb").read()
random.seed(6)
i = 0
while i < len(data):  # pieces of 1 to 999 bytes, splitting samples
    k = random.randint(1, 999)
    sys.stdout.buffer.write(data[i:i + k])
    sys.stdout.buffer.flush()
    i += k
EOF
python3 pieces.py | "$POLYRX" channelize -i - -s 1M -K 64 -P 8 -o g3 -q || fail "guarantees: pipe"
"$POLYRX" channelize -i g.cf32 -s 1M -K 64 -P 8 --block 1000 -o g4 -q || fail "guarantees: --block"
"$POLYRX" channelize -i g.cf32 -s 1M -K 64 -P 8 -c 5,40 -o g5 -q || fail "guarantees: -c"
for k in 0005 0040 0063; do
  cmp -s g1/ch$k.sigmf-data g2/ch$k.sigmf-data || fail "threads change channel $k"
  cmp -s g1/ch$k.sigmf-data g3/ch$k.sigmf-data || fail "the producer's cutting changes channel $k"
done
python3 - <<'EOF' || fail "guarantees: --block and -c within rounding"
import struct
def load(p):
    raw = open(p, "rb").read()
    return struct.unpack(f"<{len(raw) // 4}f", raw)
for k, other in (("0005", "g4"), ("0040", "g4"), ("0005", "g5"), ("0040", "g5")):
    a, b = load(f"g1/ch{k}.sigmf-data"), load(f"{other}/ch{k}.sigmf-data")
    assert len(a) == len(b), (k, other, len(a), len(b))
    rms = (sum(v * v for v in a) / len(a)) ** 0.5
    err = max(abs(x - y) for x, y in zip(a, b))
    assert err <= 1e-5 * rms, (k, other, err, rms)  # float32 rounding of sums of ~500 terms
EOF

# ---- non-finite input: replaced by 0, counted, reported; power_dbfs always a number ----
python3 - <<'EOF'
import math, struct
with open("onenan.cf32", "wb") as f:
    for n in range(10000):
        v = float("nan") if n == 5000 else 0.5 * math.cos(0.3 * n)
        f.write(struct.pack("<ff", v, 0.5 * math.sin(0.3 * n)))
EOF
"$POLYRX" channelize -i onenan.cf32 -s 1M -K 16 -o nanout 2>err.txt || fail "one NaN: exit status != 0"
grep -q "note: 1 of 10000 input samples were not finite" err.txt || fail "one NaN: $(cat err.txt)"
grep -v "not finite" err.txt | grep -qiw -e nan -e -inf && fail "NaN or -inf in the summary: $(cat err.txt)"
python3 - <<'EOF' || fail "one NaN: outputs"
import json, math, struct
for k in range(16):
    g = json.load(open(f"nanout/ch{k:04d}.sigmf-meta"))["global"]
    assert math.isfinite(g["polyrx:power_dbfs"]) and g["polyrx:nonfinite_input_samples"] == 1, g
    raw = open(f"nanout/ch{k:04d}.sigmf-data", "rb").read()
    assert all(math.isfinite(v) for v in struct.unpack(f"<{len(raw) // 4}f", raw)), k
EOF
# a full-scale ci16 file read as cf32 (the wrong -F): a warning, even with -q
python3 -c 'import random, sys; random.seed(8); sys.stdout.buffer.write(bytes(random.randrange(256) for _ in range(80000)))' >noise.ci16
"$POLYRX" channelize -i noise.ci16 -F cf32 -s 16k -K 4 -o wrongf -q 2>err.txt
grep -q "warning: .*not finite.*(-F)" err.txt || fail "wrong -F: no warning: $(cat err.txt)"

# ---- resource caps: a configuration set by the options, not the input, refused at once ----
python3 -c 'import sys; sys.stdout.buffer.write(bytes(800000))' >zero.cf32
t0=$(date +%s%N)
expect_error "GiB" -i zero.cf32 -s 1M -K 65536 -P 4096 -c 0 -o huge
t1=$(date +%s%N)
[ $(((t1 - t0) / 1000000)) -lt 1000 ] || fail "the refusal took $(((t1 - t0) / 1000000)) ms"
[ ! -e huge ] || fail "a refused configuration created its output directory"

# ---- one stop signal ends a long filter tail within a second; recordings complete ----
# K = 2048, P = 2048, D = K: 2^22 taps, a tail of 2^21 zeros at 2059 multiply-adds each (seconds
# on the CPU backend)
"$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 2048 -P 2048 --oversample 1 -c 5 --backend cpu -o longtail \
  2>err.txt &
PID=$!
for _ in $(seq 200); do ls .longtail.tmp-*/ch0005.sigmf-data >/dev/null 2>&1 && break; sleep 0.02; done
sleep 0.2
t0=$(date +%s%N)
kill -TERM $PID
wait $PID
rc=$?
t1=$(date +%s%N)
[ $rc = 130 ] || fail "long tail: exit status $rc: $(cat err.txt)"
[ $(((t1 - t0) / 1000000)) -lt 1000 ] || fail "long tail: the stop took $(((t1 - t0) / 1000000)) ms"
grep -q "cut the filter tail short" err.txt || fail "long tail: no note of the cut: $(cat err.txt)"
python3 - <<'EOF' || fail "long tail: recording"
import json, os, re
err = open("err.txt").read()
n = int(re.search(r"to longtail/: (\d+) samples each", err).group(1))
assert os.path.getsize("longtail/ch0005.sigmf-data") == 8 * n
assert json.load(open("longtail/ch0005.sigmf-meta"))["global"]["polyrx:input_samples"] == 3000
EOF

# ---- a stop signal ignored on entry (a background job) stays ignored ----
mkfifo fifo2
(trap '' INT && exec "$POLYRX" channelize -i fifo2 -F ci16 -s 16k -K 4 -o ign -q) 2>err.txt &
PID=$!
exec 4>fifo2
head -c 4000 in.ci16 >&4
sleep 0.2
kill -INT $PID
sleep 0.3
kill -0 $PID 2>/dev/null || fail "an ignored SIGINT stopped the run"
tail -c +4001 in.ci16 >&4
exec 4>&-
wait $PID
rc=$?
[ $rc = 0 ] || fail "ignored SIGINT: exit status $rc: $(cat err.txt)"
grep -q '"polyrx:input_samples":[[:space:]]*3000' ign/ch0000.sigmf-meta || fail "ignored SIGINT: outputs"

# ---- SIGKILL mid-write: an earlier run's pair is never mixed with new data ----
"$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 4 -o kill -q || fail "kill: first run"
mkdir old && cp kill/* old/
mkfifo fifo3
"$POLYRX" channelize -i fifo3 -F ci16 -s 16k -K 4 --block 100 -o kill -q 2>/dev/null &
PID=$!
exec 5>fifo3
head -c 6000 in.ci16 >&5
for _ in $(seq 100); do ls kill/ch0003.sigmf-data.tmp-* >/dev/null 2>&1 && break; sleep 0.05; done
sleep 0.2
{ kill -KILL $PID && wait $PID; } 2>/dev/null
exec 5>&-
for k in 0 1 2 3; do
  f=kill/ch000$k
  if [ -e $f.sigmf-meta ]; then
    { cmp -s $f.sigmf-meta old/ch000$k.sigmf-meta && cmp -s $f.sigmf-data old/ch000$k.sigmf-data; } ||
      fail "SIGKILL: $f.sigmf-meta beside data it does not describe"
  fi
done
ls kill/*.sigmf-meta >/dev/null 2>&1 && fail "SIGKILL: the earlier run's metadata survived a new run's start"
expect_error "No such file" -i kill/ch0001 -K 2 -o x
# the next run into that directory names the killed run's temporary files
"$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 4 -o kill 2>err.txt || fail "kill: third run"
grep -q "temporary file(s) of a run that was killed" err.txt || fail "kill: no note: $(cat err.txt)"

# ---- bad input: a clear message and exit != 0 ----
head -c $((4 * 100 + 3)) in.ci16 >cut.ci16
expect_error "leftover" -i cut.ci16 -F ci16 -s 16k -K 4 -o cut -q
python3 - cut >/dev/null <<'EOF' || fail "truncated input: complete samples not written"
import os, sys
# 100 complete samples, D = 2: ceil(100 / 2) = 50 outputs
assert os.path.getsize("cut/ch0000.sigmf-data") == 8 * 50, os.path.getsize("cut/ch0000.sigmf-data")
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
rc=0; "$POLYRX" channelize -i in.ci16 -K 4 -o x 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "no -s for raw input: exit $rc, expected 2 (a usage error)"
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
[ -f out1/ch0001.sigmf-meta ] && [ -f out1/ch0000.sigmf-meta ] || fail "a refused run removed files"
expect_error "is the input" -i out1/ch0001.sigmf-meta -K 2 -c 1 -o out1
# the same file under another name: a hard link and a symbolic link into the output directory
mkdir hl sl && ln in.ci16 hl/ch0002.sigmf-data && ln -s ../in.ci16 sl/ch0003.sigmf-meta
expect_error "is the input" -i in.ci16 -F ci16 -s 16k -K 4 -o hl
expect_error "is the input" -i in.ci16 -F ci16 -s 16k -K 4 -o sl
# a directory made by the run holds no file of another: only a path given besides it is checked
expect_error "same file" -i in.ci16 -F ci16 -s 16k -K 4 -o fresh1 --report fresh1/ch0001.sigmf-meta
expect_error "same file" -i in.ci16 -F ci16 -s 16k -K 4 -o fresh2/sub --report fresh2/sub/channels.sigmf-collection
cmp -s in.ci16 hl/ch0002.sigmf-data || fail "the input was overwritten through a hard link"
printf '{"global": {"core:datatype": "cf32_le"}, "captures": [' >bad.sigmf-meta
: >bad.sigmf-data
expect_error "JSON" -i bad.sigmf-meta -s 1M -K 2 -o x
printf '{"global": {"core:datatype": "cu16_be", "core:sample_rate": 1e6}, "captures": []}' >be.sigmf-meta
: >be.sigmf-data
expect_error "not read by polyrx" -i be -K 2 -o x
printf '{"global": {"core:datatype": "cf32_le"}, "captures": []}' >norate.sigmf-meta
: >norate.sigmf-data
expect_error "core:sample_rate" -i norate.sigmf-meta -K 2 -o x
rc=0; "$POLYRX" channelize -i norate.sigmf-meta -K 2 -o x 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "no -s for SigMF without core:sample_rate: exit $rc, expected 2 (a usage error)"

# ---- the host pipeline: reading, channelizing and writing at once give the serial path's
# bytes for every input kind (file, standard input, SigMF) and block size ----
python3 - <<'EOF'
import random, struct
random.seed(13)
with open("pin.ci16", "wb") as f:
    f.write(b"".join(struct.pack("<hh", random.randrange(-30000, 30000), random.randrange(-30000, 30000)) for _ in range(20011)))
EOF
POLYRX_PIPELINE=serial "$POLYRX" channelize -i pin.ci16 -F ci16 -s 16k -K 16 -P 8 -o pser -q ||
  fail "serial pipeline run failed"
cp pin.ci16 psig.sigmf-data
printf '{"global": {"core:datatype": "ci16_le", "core:sample_rate": 16000, "core:version": "1.0.0"}, "captures": [{"core:sample_start": 0}], "annotations": []}' >psig.sigmf-meta
for kind in file stdin sigmf; do
  for block in 1 7 1000 4096 100000; do
    d=p_${kind}_$block
    case $kind in
    file) "$POLYRX" channelize -i pin.ci16 -F ci16 -s 16k -K 16 -P 8 --block $block -o $d -q ;;
    stdin) "$POLYRX" channelize -i - -F ci16 -s 16k -K 16 -P 8 --block $block -o $d -q <pin.ci16 ;;
    sigmf) "$POLYRX" channelize -i psig.sigmf-meta -K 16 -P 8 --block $block -o $d -q ;;
    esac || fail "pipeline $kind --block $block failed"
    for k in 0000 0005 0015; do
      cmp -s pser/ch$k.sigmf-data $d/ch$k.sigmf-data ||
        fail "pipeline $kind --block $block: channel $k differs from the serial path"
    done
    rm -rf $d
  done
done
# a channel subset (each writer thread its share of the channels) gives the same bytes
POLYRX_PIPELINE=serial "$POLYRX" channelize -i pin.ci16 -F ci16 -s 16k -K 16 -P 8 -c 2,3,9 -o pser3 -q
"$POLYRX" channelize -i pin.ci16 -F ci16 -s 16k -K 16 -P 8 -c 2,3,9 --block 333 -o ppip3 -q
for k in 0002 0003 0009; do
  cmp -s pser3/ch$k.sigmf-data ppip3/ch$k.sigmf-data || fail "channel subset: $k differs"
  cmp -s pser3/ch$k.sigmf-data pser/ch$k.sigmf-data || fail "channel subset: $k differs from all"
done
# several openers and writers (the default on 16 cores: an opener per writer, each writer
# finishing its own recordings after its last block): the same bytes, the collection included
# (on the CPU backend, where the power sums, and so the metadata, do not depend on the blocks)
POLYRX_PIPELINE=serial "$POLYRX" channelize -i pin.ci16 -F ci16 -s 16k -K 16 -P 8 --backend cpu \
  -o pserc -q || fail "serial path on the CPU failed"
POLYRX_OPENER=thread POLYRX_WRITERS=3 "$POLYRX" channelize -i pin.ci16 -F ci16 -s 16k -K 16 -P 8 \
  --backend cpu -o pthr -q || fail "3 openers and writers: the run failed"
diff -r -q pserc pthr >/dev/null || fail "3 openers and writers: the outputs differ from the serial path's"
# the slots as frames (each writer gathering its range of channels) or as rows: the same bytes,
# the metadata included, every channel and a subset in a changed order, 3 writers and 1, and the
# same data in blocks of 333 (whose power sums round differently in the last digits)
for fw in "1 3" "0 3" "1 1"; do
  read -r fr nw <<<"$fw"
  POLYRX_CHAN_FRAMES=$fr POLYRX_WRITERS=$nw "$POLYRX" channelize -i pin.ci16 -F ci16 -s 16k -K 16 \
    -P 8 --backend cpu -o pfr -q || fail "frames $fr, $nw writers: the run failed"
  diff -r -q pserc pfr >/dev/null || fail "frames $fr, $nw writers: the outputs differ from the serial path's"
  POLYRX_CHAN_FRAMES=$fr POLYRX_WRITERS=$nw "$POLYRX" channelize -i pin.ci16 -F ci16 -s 16k -K 16 \
    -P 8 --backend cpu --block 333 -c 9,2,3,15 -o pfrs -q || fail "frames $fr, $nw writers, a subset: the run failed"
  for k in 0002 0003 0009 0015; do
    cmp -s pfrs/ch$k.sigmf-data pserc/ch$k.sigmf-data ||
      fail "frames $fr, $nw writers, a subset in blocks of 333: channel $k differs"
  done
  rm -rf pfr pfrs
done
# finishers (threads that finish recordings beside the writers once compute has its last block):
# none, and more than the writers, with 3 writers and with 1, give the serial path's bytes (each
# recording finished once, whoever claimed it), and POLYRX_TIMING counts the finishers made
for fw in "0 3" "4 3" "4 1"; do
  read -r nf nw <<<"$fw"
  POLYRX_TIMING=1 POLYRX_FINISHERS=$nf POLYRX_OPENER=thread POLYRX_WRITERS=$nw "$POLYRX" channelize \
    -i pin.ci16 -F ci16 -s 16k -K 16 -P 8 --backend cpu -o pfin -q 2>err.txt ||
    fail "$nf finishers, $nw writers: the run failed: $(tail -1 err.txt)"
  diff -r -q pserc pfin >/dev/null || fail "$nf finishers, $nw writers: the outputs differ"
  grep -q "by $nf finishers" err.txt ||
    fail "$nf finishers, $nw writers: $(grep -o 'by [0-9]* finishers.*' err.txt)"
  rm -rf pfin
done
# the openers make each recording's metadata file at the start where the open-file limit allows
# two files a recording, else at the end: a hard limit of 40 (16 data files and the
# run's own, not 16 more) gives the same bytes
(ulimit -n 40 && POLYRX_OPENER=thread POLYRX_WRITERS=3 "$POLYRX" channelize -i pin.ci16 -F ci16 \
  -s 16k -K 16 -P 8 --backend cpu -o plim -q) 2>err.txt ||
  fail "3 openers under a hard limit of 40 open files: $(cat err.txt)"
diff -r -q pserc plim >/dev/null || fail "3 openers under an open-file limit: the outputs differ"
# openers slower than the stream (POLYRX_OPENER=slow: 2 ms before each recording): the writers
# keep the rows of the recordings not yet created and append them once they are: the bytes of
# the openers inline (every recording made before the stream), small blocks (many rows held) and
# the default, cf32 and ci16 out
for blk in 333 default; do
  bopt=()
  [ $blk = default ] || bopt=(--block $blk)
  for f in cf32 ci16; do
    POLYRX_OPENER=inline POLYRX_WRITERS=3 "$POLYRX" channelize -i pin.ci16 -F ci16 -s 16k -K 16 \
      -P 8 --backend cpu --out-format $f "${bopt[@]}" -o pslow_s -q
    POLYRX_TIMING=1 POLYRX_OPENER=slow POLYRX_WRITERS=3 "$POLYRX" channelize -i pin.ci16 -F ci16 \
      -s 16k -K 16 -P 8 --backend cpu --out-format $f "${bopt[@]}" -o pslow -q 2>err.txt ||
      fail "slow openers ($blk, $f): the run failed: $(tail -1 err.txt)"
    diff -r -q pslow_s pslow >/dev/null || fail "slow openers ($blk, $f): the outputs differ"
    if [ $blk = 333 ]; then
      held=$(grep -o 'rows held for them [0-9]*' err.txt | awk '{ n += $NF } END { print n + 0 }')
      [ "$held" -gt 0 ] || fail "slow openers ($blk, $f): no row was held: $(grep cpu err.txt)"
    fi
    rm -rf pslow pslow_s
  done
done
# a recording that cannot be created (a directory where its metadata goes): exit 1, and no
# recording of the run is left, whichever thread met the error
mkdir -p pbad/ch0007.sigmf-meta
rc=0
POLYRX_OPENER=thread POLYRX_WRITERS=3 "$POLYRX" channelize -i pin.ci16 -F ci16 -s 16k -K 16 -P 8 \
  -o pbad -q 2>err.txt || rc=$?
[ $rc = 1 ] || fail "an output that cannot be created: exit $rc, expected 1"
grep -q "ch0007.sigmf-meta" err.txt || fail "an output that cannot be created: $(cat err.txt)"
[ "$(ls pbad)" = ch0007.sigmf-meta ] || fail "an output that cannot be created left $(ls pbad | head -3)"
# the same with rows held for the recordings not yet created (slow openers, small blocks)
rc=0
POLYRX_OPENER=slow POLYRX_WRITERS=3 "$POLYRX" channelize -i pin.ci16 -F ci16 -s 16k -K 16 -P 8 \
  --block 333 -o pbad -q 2>err.txt || rc=$?
[ $rc = 1 ] || fail "an output that cannot be created, slow openers: exit $rc, expected 1"
[ "$(ls pbad)" = ch0007.sigmf-meta ] ||
  fail "an output that cannot be created, slow openers: left $(ls pbad | head -3)"
# nine channels to one writer (each channel's room in the hold 4 MiB / 9, odd unless rounded) in
# the formats the writer packs into the hold: the same bytes (the sanitizer build checks the
# packers' 2-byte stores there)
for f in ci16 cf16; do
  POLYRX_OPENER=inline POLYRX_WRITERS=1 "$POLYRX" channelize -i pin.ci16 -F ci16 -s 16k -K 16 -P 8 \
    -c 0-8 --backend cpu --out-format $f --block 333 -o pslow_s -q
  POLYRX_TIMING=1 POLYRX_OPENER=slow POLYRX_WRITERS=1 "$POLYRX" channelize -i pin.ci16 -F ci16 \
    -s 16k -K 16 -P 8 -c 0-8 --backend cpu --out-format $f --block 333 -o pslow -q 2>err.txt ||
    fail "slow openers, 9 channels ($f): the run failed: $(tail -1 err.txt)"
  diff -r -q pslow_s pslow >/dev/null || fail "slow openers, 9 channels ($f): the outputs differ"
  held=$(grep -o 'rows held for them [0-9]*' err.txt | awk '{ n += $NF } END { print n + 0 }')
  [ "$held" -gt 0 ] || fail "slow openers, 9 channels ($f): no row was held: $(grep cpu err.txt)"
  rm -rf pslow pslow_s
done
# the flush's slot keeping nothing (no lead: -P 1 --oversample 1; 20000 input samples, 1250
# whole outputs of D = 16) while rows are held: the last slot writes them, the same bytes
head -c 80000 pin.ci16 >plast.ci16
POLYRX_OPENER=inline POLYRX_WRITERS=3 "$POLYRX" channelize -i plast.ci16 -F ci16 -s 16k -K 16 -P 1 \
  --oversample 1 --backend cpu --block 333 -o plast_s -q
POLYRX_TIMING=1 POLYRX_OPENER=slow POLYRX_WRITERS=3 "$POLYRX" channelize -i plast.ci16 -F ci16 \
  -s 16k -K 16 -P 1 --oversample 1 --backend cpu --block 333 -o plast -q 2>err.txt ||
  fail "slow openers, nothing kept at the flush: the run failed: $(tail -1 err.txt)"
diff -r -q plast_s plast >/dev/null || fail "slow openers, nothing kept at the flush: outputs differ"
held=$(grep -o 'rows held for them [0-9]*' err.txt | awk '{ n += $NF } END { print n + 0 }')
[ "$held" -gt 0 ] || fail "slow openers, nothing kept at the flush: no row held: $(grep cpu err.txt)"
rm -rf plast plast_s plast.ci16
# a hold that fills: one writer and one opener for 256 channels (at least 0.5 s of 2 ms pauses),
# 2^19 input samples in blocks of 4096 (32 outputs, 256 bytes, a row; 16 KiB, 64 rows, a
# channel's room): the writer holds rows until a channel's room is full, then waits for its
# recording; the bytes of the openers inline, at most 65 rows a channel held (the first one
# shorter), and a wait
python3 -c 'import random; random.seed(19); open("phold.ci16", "wb").write(random.randbytes(4 << 19))'
POLYRX_OPENER=inline POLYRX_WRITERS=1 "$POLYRX" channelize -i phold.ci16 -F ci16 -s 16k -K 256 \
  --backend cpu --block 4096 -o pfull_s -q
POLYRX_TIMING=1 POLYRX_OPENER=slow POLYRX_WRITERS=1 "$POLYRX" channelize -i phold.ci16 -F ci16 \
  -s 16k -K 256 --backend cpu --block 4096 -o pfull -q 2>err.txt ||
  fail "a full hold: the run failed: $(tail -1 err.txt)"
diff -r -q pfull_s pfull >/dev/null || fail "a full hold: the outputs differ"
held=$(grep -o 'rows held for them [0-9]*' err.txt | awk '{ print $NF }')
[ "${held:-0}" -gt 0 ] && [ "$held" -le $((256 * 65)) ] ||
  fail "a full hold: ${held:-no} rows held, expected 1 to $((256 * 65)): $(grep cpu err.txt)"
waited=$(grep -o 'waiting for the openers [0-9.]*' err.txt | awk '{ print $NF }')
awk -v t="${waited:-0}" 'BEGIN { exit !(t > 0) }' ||
  fail "a full hold: the writer never waited for a recording: $(grep cpu err.txt)"
rm -rf pfull pfull_s phold.ci16
# SIGTERM while rows are held (the input read, the openers at the first of 256 recordings):
# the last slot waits for them, every recording complete with the bytes of an uninterrupted run
POLYRX_OPENER=inline POLYRX_WRITERS=1 "$POLYRX" channelize -i pin.ci16 -F ci16 -s 16k -K 256 \
  --backend cpu --block 1000 -o pterm_s -q
rm -f fifo
POLYRX_TIMING=1 POLYRX_OPENER=slow POLYRX_WRITERS=1 fifo_sigterm_run pin.ci16 pin.ci16 \
  "$POLYRX" channelize -i fifo -F ci16 -s 16k -K 256 --backend cpu --block 1000 -o pterm -q
rc=$?
[ $rc = 130 ] || fail "SIGTERM with rows held: exit status $rc, expected 130: $(tail -1 err.txt)"
held=$(grep -o 'rows held for them [0-9]*' err.txt | awk '{ print $NF }')
[ "${held:-0}" -gt 0 ] || fail "SIGTERM with rows held: no row was held: $(grep cpu err.txt)"
for f in pterm_s/*.sigmf-data; do
  cmp -s "$f" pterm/"${f#pterm_s/}" || fail "SIGTERM with rows held: ${f#pterm_s/} differs"
done
grep -q '"polyrx:input_samples":[[:space:]]*20011' pterm/ch0255.sigmf-meta 2>/dev/null ||
  fail "SIGTERM with rows held: the last recording does not describe the samples read"
rm -rf pterm pterm_s fifo
# a file-size limit (8 KiB, each channel 20 KiB) with rows held: exit 1, the error, no recording
rc=0
(ulimit -f 8 && POLYRX_TIMING=1 POLYRX_OPENER=slow POLYRX_WRITERS=3 "$POLYRX" channelize \
  -i pin.ci16 -F ci16 -s 16k -K 16 -P 8 --backend cpu --block 333 -o pfsz -q) 2>err.txt || rc=$?
[ $rc = 1 ] || fail "a file-size limit, slow openers: exit $rc, expected 1"
grep -q "File too large" err.txt || fail "a file-size limit, slow openers: $(cat err.txt)"
held=$(grep -o 'rows held for them [0-9]*' err.txt | awk '{ n += $NF } END { print n + 0 }')
[ "$held" -gt 0 ] || fail "a file-size limit, slow openers: no row was held: $(grep cpu err.txt)"
[ -z "$(ls pfsz)" ] || fail "a file-size limit, slow openers: left $(ls pfsz | head -3)"
# with 4 writers or more (8 cores, or POLYRX_WRITERS=4 here) the CPU backend's default block is 2^16
# samples, each channel's power still summed over 2^18 input samples (cli/chan_power.h): the
# bytes of --block 262144, metadata included, with an odd lead (-P 7: 7 outputs dropped, groups
# of odd length) and inputs that end inside a block, at a block's end and past 2^18 samples,
# from a file and from standard input
python3 - <<'EOF'
import random, struct
random.seed(17)
x = b"".join(struct.pack("<hh", random.randrange(-30000, 30000), random.randrange(-30000, 30000)) for _ in range(300001))
for n in (5 * 65536, 3 * 65536 + 1, 300001):
    open("pw%d.ci16" % n, "wb").write(x[: 4 * n])
EOF
for n in 327680 196609 300001; do
  POLYRX_WRITERS=4 "$POLYRX" channelize -i pw$n.ci16 -F ci16 -s 16k -K 16 -P 7 --backend cpu \
    -o pwd_$n -q || fail "power groups: $n failed"
  "$POLYRX" channelize -i pw$n.ci16 -F ci16 -s 16k -K 16 -P 7 --block 262144 --backend cpu \
    -o pwb_$n -q
  diff -r -q pwd_$n pwb_$n >/dev/null || fail "power groups: $n samples differ from --block 262144"
  POLYRX_WRITERS=4 "$POLYRX" channelize -i - -F ci16 -s 16k -K 16 -P 7 --backend cpu \
    -o pws_$n -q <pw$n.ci16
  # (the same but for the metadata's polyrx:input)
  [ "$(cat pwd_$n/*.sigmf-data | cksum) $(cat pwd_$n/*.sigmf-meta | grep -v polyrx:input | cksum)" = \
    "$(cat pws_$n/*.sigmf-data | cksum) $(cat pws_$n/*.sigmf-meta | grep -v polyrx:input | cksum)" ] ||
    fail "power groups: $n samples from standard input differ"
done
# outputs that overflow float32 in the filter (finite input near 3.4e38) are zeroed before they
# are written and summed, in whichever block of a power group they fall (2^16-sample blocks, 4
# writers): all finite, the bytes of --block 262144
python3 - <<'EOF'
import math, struct
with open("huge.cf32", "wb") as f:
    for n in range(300000):
        burst = 150000 <= n < 150040 or 270000 <= n < 270003
        v = (3.4e38, 3.4e38) if burst else (0.5 * math.cos(0.3 * n), 0.5 * math.sin(0.3 * n))
        f.write(struct.pack("<ff", *v))
EOF
POLYRX_WRITERS=4 "$POLYRX" channelize -i huge.cf32 -s 1M -K 16 -P 7 --backend cpu -o hugeo -q \
  2>err.txt ||
  fail "overflowing outputs: the run failed"
grep -q "channel samples overflowed float32" err.txt || fail "overflowing outputs: $(cat err.txt)"
"$POLYRX" channelize -i huge.cf32 -s 1M -K 16 -P 7 --block 262144 --backend cpu -o hugeb -q
diff -r -q hugeo hugeb >/dev/null || fail "overflowing outputs: the bytes differ from --block 262144"
python3 - <<'EOF' || fail "overflowing outputs: not zeroed"
import json, math, struct
for k in range(16):
    g = json.load(open(f"hugeo/ch{k:04d}.sigmf-meta"))["global"]
    assert math.isfinite(g["polyrx:power_dbfs"]), g
    raw = open(f"hugeo/ch{k:04d}.sigmf-data", "rb").read()
    assert all(math.isfinite(v) for v in struct.unpack(f"<{len(raw) // 4}f", raw)), k
EOF
# POLYRX_TIMING=1 adds one line of phase timings on standard error and changes no byte
POLYRX_TIMING=1 "$POLYRX" channelize -i pin.ci16 -F ci16 -s 16k -K 16 -P 8 -o ptim -q 2>err.txt ||
  fail "POLYRX_TIMING run failed: $(cat err.txt)"
grep -q "timing (ms): input [0-9.]* channelizer [0-9.]* cuda [0-9.]* open [0-9.]* stream" err.txt ||
  fail "POLYRX_TIMING: no phase line: $(cat err.txt)"
cmp -s pser/ch0005.sigmf-data ptim/ch0005.sigmf-data || fail "POLYRX_TIMING changed the output"

# ---- --out-format cf16 / ci16: the cf32 outputs converted (float64 reference), SigMF datatype ----
for f in cf16 ci16; do
  "$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -f 1M -K 16 -P 8 --out-format $f -o o_$f -q ||
    fail "--out-format $f failed"
done
python3 - <<'EOF' || fail "--out-format contents"
# standard library only (the first python3 on PATH may lack numpy): struct's 'e' packs a float64
# to half rounding to nearest, ties to even (the float32 values convert exactly to float64, so
# this is the float32 -> half rounding); round() is the same ties-to-even rounding as rint
import array, json, struct
def values(path, code):
    a = array.array(code)
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a
def half_bits(v):
    try:
        return struct.unpack("<H", struct.pack("<e", v))[0]
    except OverflowError:  # beyond the largest half: +-inf, as the C conversion gives
        return 0x7C00 | (0x8000 if v < 0 else 0)
for k in range(16):
    x = values(f"out1/ch{k:04d}.sigmf-data", "f")
    h = values(f"o_cf16/ch{k:04d}.sigmf-data", "H")
    assert len(h) == len(x), (k, len(h), len(x))
    bad = [n for n, v in enumerate(x) if h[n] != half_bits(v)]
    assert not bad, f"cf16 channel {k}: {len(bad)} values differ, first at {bad[0]}"
    i = values(f"o_ci16/ch{k:04d}.sigmf-data", "h")
    assert len(i) == len(x), (k, len(i), len(x))
    want = [min(32767, max(-32768, round(v * 32768))) for v in x]
    diff = max(abs(a - b) for a, b in zip(i, want))
    assert diff == 0, f"ci16 channel {k}: max diff {diff}"
    for f, dt in (("cf16", "cf16_le"), ("ci16", "ci16_le")):
        m = json.load(open(f"o_{f}/ch{k:04d}.sigmf-meta"))
        assert m["global"]["core:datatype"] == dt, m["global"]["core:datatype"]
EOF
expect_error "out-format" -i in.ci16 -F ci16 -s 16k -K 16 --out-format cu8 -o x

# ---- -o -: one channel is its plain stream, several are interleaved (selection order) ----
"$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -f 1M -K 16 -P 8 -c 3 -o - -q >one.cf32 ||
  fail "-o - (one channel) failed"
cmp -s one.cf32 out1/ch0003.sigmf-data || fail "-o -: channel 3 differs from its recording"
"$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -f 1M -K 16 -P 8 -c 12,3 -o - -q --out-format ci16 \
  >two.ci16 || fail "-o - (two channels) failed"
python3 - <<'EOF' || fail "-o -: interleaved channels"
import array
def shorts(path):
    a = array.array("h")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a
two = shorts("two.ci16")  # [time][channel in -c order][re, im]
for col, k in enumerate((12, 3)):
    want = shorts(f"o_ci16/ch{k:04d}.sigmf-data")
    assert len(two) == 2 * len(want), (len(two), len(want))
    n = len(want) // 2
    got = array.array("h", (two[4 * t + 2 * col + j] for t in range(n) for j in (0, 1)))
    assert got == want, f"channel {k}"
EOF

# ---- errors through the pipeline: a cut input is written up to its last whole sample ----
head -c $((4 * 2500 + 3)) in.ci16 >cut.ci16
"$POLYRX" channelize -i cut.ci16 -F ci16 -s 16k -K 16 -P 8 -o cut -q 2>err.txt &&
  fail "a truncated input succeeded"
[ "$(stat -c %s cut/ch0003.sigmf-data 2>/dev/null)" = $((8 * ((2500 + 7) / 8))) ] ||
  fail "truncated input: channel 3 holds $(stat -c %s cut/ch0003.sigmf-data 2>/dev/null) bytes, expected the outputs of 2500 samples ($(cat err.txt))"

# ---- a directory the run makes against one holding an earlier run's recordings: the first
# skips the earlier files' removal, the second replaces them; the same bytes, nothing else left
# (POLYRX_OPENER=thread: the openers' threads as on 4 cores or more) ----
head -c 4000 /dev/urandom >noise.ci16
for opener in inline thread; do
  rm -rf made kept
  "$POLYRX" channelize -q -i noise.ci16 -F ci16 -s 16k -K 16 -o kept 2>/dev/null ||
    fail "the earlier run failed"
  cmp -s kept/ch0003.sigmf-data out1/ch0003.sigmf-data && fail "the earlier run is this input's"
  POLYRX_OPENER=$opener "$POLYRX" channelize -q -i in.ci16 -F ci16 -s 16k -K 16 -o made ||
    fail "run into a new directory ($opener)"
  POLYRX_OPENER=$opener "$POLYRX" channelize -q -i in.ci16 -F ci16 -s 16k -K 16 -o kept ||
    fail "run over an earlier run ($opener)"
  diff -r made kept >/dev/null || fail "a new directory and an earlier run's differ ($opener)"
  [ "$(ls made | wc -l)" = 33 ] || fail "files in a new directory ($opener): $(ls made | wc -l)"
  ls made kept | grep -q 'tmp-' && fail "temporary files left ($opener)"
done

# ---- a new DIR is written in a hidden directory beside it and published with one rename: while
# the run writes, DIR is not there; then all of it is, the same bytes as a directory made at once
# (POLYRX_PUBLISH=0), nothing hidden left. A DIR that exists, or that another process makes while
# the run writes (POLYRX_PUBLISH=race), gets the recordings one by one and keeps its other files.
# A run killed mid-write leaves no DIR; a stop signal publishes what is complete ----
rm -rf ref16
POLYRX_PUBLISH=0 "$POLYRX" channelize -q -i in.ci16 -F ci16 -s 16k -K 16 -o ref16 || fail "ref16"
for opener in inline thread; do
  rm -rf deep
  POLYRX_OPENER=$opener "$POLYRX" channelize -q -i in.ci16 -F ci16 -s 16k -K 16 -o deep/er/pub/ ||
    fail "a published run ($opener)"
  diff -r ref16 deep/er/pub >/dev/null || fail "published and made at once differ ($opener)"
  [ "$(ls -A deep/er)" = pub ] || fail "beside the published directory ($opener): $(ls -A deep/er)"
done
POLYRX_OPENER=slow POLYRX_WRITERS=2 "$POLYRX" channelize -q -i in.ci16 -F ci16 -s 16k -K 64 -P 2 \
  -o slowpub 2>err.txt &
PID=$!
seen=0
for _ in $(seq 200); do
  if ls -d .slowpub.tmp-* >/dev/null 2>&1; then
    seen=1
    [ -e slowpub ] && fail "DIR there while its recordings are written"
    break
  fi
  sleep 0.01
done
wait $PID || fail "the slow published run: $(cat err.txt)"
[ $seen = 1 ] || fail "no hidden directory seen while the run wrote"
[ "$(ls slowpub | wc -l)" = 129 ] || fail "slowpub: $(ls slowpub | wc -l) files"
rm -rf race
POLYRX_PUBLISH=race "$POLYRX" channelize -q -i in.ci16 -F ci16 -s 16k -K 16 -o race 2>err.txt ||
  fail "DIR made by another process: $(cat err.txt)"
[ -f race/other ] || fail "the other process's file is gone"
diff -r -x other ref16 race >/dev/null || fail "DIR made by another process: not the recordings"
rm -rf exist && mkdir exist && echo mine >exist/keep.txt
cp ref16/ch0003.sigmf-meta exist/ch0005.sigmf-meta
"$POLYRX" channelize -q -i in.ci16 -F ci16 -s 16k -K 16 -o exist || fail "an existing DIR"
diff -r -x keep.txt ref16 exist >/dev/null || fail "an existing DIR: not the recordings"
[ "$(cat exist/keep.txt)" = mine ] || fail "an existing DIR's other file changed"
mkfifo fifo4
"$POLYRX" channelize -i fifo4 -F ci16 -s 16k -K 4 --block 100 -o killed -q 2>/dev/null &
PID=$!
exec 6>fifo4
head -c 6000 in.ci16 >&6
for _ in $(seq 100); do ls .killed.tmp-*/ch0003.sigmf-data >/dev/null 2>&1 && break; sleep 0.05; done
{ kill -KILL $PID && wait $PID; } 2>/dev/null
exec 6>&-
[ -e killed ] && fail "a run killed mid-write published its directory"
ls -d .killed.tmp-* >/dev/null 2>&1 || fail "the killed run's hidden directory is not where it wrote"
# the next run into that name publishes its own and names what the killed one left
"$POLYRX" channelize -i in.ci16 -F ci16 -s 16k -K 4 -o killed 2>err.txt || fail "after a kill"
grep -q "1 hidden director(ies) beside killed/" err.txt || fail "after a kill: no note: $(cat err.txt)"
rm -rf .killed.tmp-*
left=$(ls -A | grep '^\..*\.tmp-' | tr '\n' ' ')
[ -z "$left" ] || fail "hidden directories left: $left"

# ---- --swap-iq: a recording with I and Q the wrong way round, set right as read, gives the
# original's recordings byte for byte; the metadata says it was done ----
python3 -c "
import array
x = array.array('h', open('in.ci16', 'rb').read())
x[0::2], x[1::2] = x[1::2], x[0::2]
open('swapped.ci16', 'wb').write(x.tobytes())" || fail "making the swapped input failed"
"$POLYRX" channelize -i swapped.ci16 -F ci16 -s 16k -f 1M -K 16 -P 8 -o outsw -q --swap-iq ||
  fail "--swap-iq run failed"
for f in out1/ch*.sigmf-data; do
  cmp -s "$f" "outsw/$(basename "$f")" || fail "--swap-iq: $(basename "$f") differs"
done
python3 -c "
import json
g = json.load(open('outsw/ch0003.sigmf-meta'))['global']
h = json.load(open('out1/ch0003.sigmf-meta'))['global']
assert g['polyrx:input_swap_iq'] == 1 and 'polyrx:input_swap_iq' not in h" ||
  fail "--swap-iq: polyrx:input_swap_iq not 1 (or present without it)"

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
