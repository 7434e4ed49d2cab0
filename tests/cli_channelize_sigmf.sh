#!/usr/bin/env bash
# polyrx channelize with SigMF inputs that retune, carry datetimes and annotations: every capture
# segment reaches each channel recording at the output sample the alignment gives (output j is
# the input's instant jD + 1/2), with the channel's frequency in that segment; datetimes moved to
# that instant; annotations mapped to output samples and given to the channels whose band they
# touch; a .sigmf-collection ties the recordings (hashes checked here with hashlib and by the
# sigmf package where installed); a .sigmf archive input gives the same channels as the pair;
# inputs that cannot be carried are refused, never mislabelled. The expected values are worked
# out here in Python from the documented alignment, not taken from polyrx.
set -u
P=${1:?usage: cli_channelize_sigmf.sh PATH_TO_POLYRX}
command -v python3 >/dev/null || {
  echo "FAIL: python3 is needed by this test's checkers (scripts/setup.sh installs it)" >&2
  exit 1
}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
bad() {
  echo "FAIL: $*" >&2
  fail=$((fail + 1))
}

# 12000 samples at 8 kHz: 100 MHz, retuned to 101 MHz at sample 6001; a time-only annotation
# and one at 101.001 MHz (channels 0 and 1 of K = 8 after the retune touch it)
python3 - <<'PY'
import io, json, struct, tarfile
n = 12000
data = b"".join(struct.pack("<ff", 0.25, -0.25) for _ in range(n))
open("in.sigmf-data", "wb").write(data)
meta = {"global": {"core:datatype": "cf32_le", "core:sample_rate": 8000, "core:version": "1.0.0"},
        "captures": [{"core:sample_start": 0, "core:frequency": 100e6,
                      "core:datetime": "2026-12-01T10:00:00Z"},
                     {"core:sample_start": 6001, "core:frequency": 101e6,
                      "core:datetime": "2026-12-01T10:00:00.750125Z"}],
        "annotations": [{"core:sample_start": 100, "core:sample_count": 400, "core:label": "all"},
                        {"core:sample_start": 7000, "core:sample_count": 800,
                         "core:freq_lower_edge": 101.0009e6, "core:freq_upper_edge": 101.0011e6,
                         "core:label": "tone"}]}
text = json.dumps(meta).encode()
open("in.sigmf-meta", "wb").write(text)
with tarfile.open("in.sigmf", "w") as t:
    for name, b in (("in/in.sigmf-meta", text), ("in/in.sigmf-data", data)):
        i = tarfile.TarInfo(name); i.size = len(b); t.addfile(i, io.BytesIO(b))
PY

"$P" channelize -q -i in.sigmf-meta -K 8 -o ch || bad "channelize of the retuning input failed"
python3 - <<'PY' || bad "channel metadata"
import datetime, decimal, hashlib, json, math
K, D, fs, off = 8, 4, 8000.0, 0.5
def j_of(s):  # the first output j whose instant j D + 1/2 is at or after input sample s
    return max(0, math.ceil((s - off) / D))
def parse(t):  # seconds since 1970 as a Decimal, the fraction kept whole
    head, _, frac = t.rstrip("Z").partition(".")
    whole = datetime.datetime.fromisoformat(head + "+00:00").timestamp()
    return decimal.Decimal(int(whole)) + decimal.Decimal("0." + (frac or "0"))
def shifted(t, s, j):
    return parse(t) + decimal.Decimal(j * D + off - s) / decimal.Decimal(fs)
errors = []
n_out = math.ceil(12000 / D)
for k in range(K):
    m = json.load(open("ch/ch%04d.sigmf-meta" % k))
    koff = (k if k < K // 2 else k - K) * fs / K
    caps = m["captures"]
    want = [(0, 100e6 + koff, shifted("2026-12-01T10:00:00Z", 0, 0)),
            (j_of(6001), 101e6 + koff, shifted("2026-12-01T10:00:00.750125Z", 6001, j_of(6001)))]
    got = [(c["core:sample_start"], c["core:frequency"], parse(c["core:datetime"])) for c in caps]
    if [(a, round(b, 3)) for a, b, _ in got] != [(a, round(b, 3)) for a, b, _ in want] or \
       any(abs(g[2] - w[2]) > decimal.Decimal("1e-12") for g, w in zip(got, want)):
        errors.append("channel %d captures %s, expected %s" % (k, got, want))
    anns = [(a["core:sample_start"], a.get("core:sample_count"), a.get("core:label")) for a in m["annotations"]]
    want_a = [(j_of(100), j_of(500) - j_of(100), "all")]
    lo, hi = 101e6 + koff - fs / D / 2, 101e6 + koff + fs / D / 2
    if not (101.0011e6 < lo or 101.0009e6 > hi):
        want_a.append((j_of(7000), j_of(7800) - j_of(7000), "tone"))
    if anns != want_a:
        errors.append("channel %d annotations %s, expected %s" % (k, anns, want_a))
    if k in (0, 1) and len(want_a) != 2:
        errors.append("channel %d should carry the tone annotation" % k)
coll = json.load(open("ch/channels.sigmf-collection"))["collection"]
streams = coll["core:streams"]
if [s["name"] for s in streams] != ["ch%04d" % k for k in range(K)]:
    errors.append("collection names %s" % [s["name"] for s in streams])
for s in streams:
    h = hashlib.sha512(open("ch/%s.sigmf-meta" % s["name"], "rb").read()).hexdigest()
    if s["hash"] != h:
        errors.append("collection hash of %s" % s["name"])
if errors:
    raise SystemExit("\n".join(errors))
PY
if python3 -c "import sigmf" 2>/dev/null; then
  python3 -c "
import sigmf
c = sigmf.fromfile('ch/channels.sigmf-collection')
c.verify_stream_hashes()
for name in c.get_stream_names():
    sigmf.fromfile('ch/' + name).validate()
" || bad "the sigmf package rejects the channel recordings or their collection"
else
  echo "note: the sigmf Python package is not installed: its check is skipped" >&2
fi

# ---- an archive input: the same channels as the pair ----
"$P" channelize -q -i in.sigmf -K 8 -o cha || bad "channelize of in.sigmf failed"
for k in 0000 0003 0007; do
  cmp -s ch/ch$k.sigmf-data cha/ch$k.sigmf-data || bad "archive input: channel $k differs"
done

# ---- inputs that cannot be carried are refused (exit 1, one message), nothing written ----
refuse() { # WHAT PYTHON-EDIT EXTRA-ARGS...
  local what=$1 edit=$2
  shift 2
  python3 - "$edit" <<'PY'
import json, sys
m = json.load(open("in.sigmf-meta"))
exec(sys.argv[1])
json.dump(m, open("r.sigmf-meta", "w"))
PY
  cp in.sigmf-data r.sigmf-data
  rm -rf rout
  "$P" channelize -q -i r.sigmf-meta -K 8 -o rout "$@" 2>err.txt
  local rc=$?
  [ $rc = 1 ] && [ "$(wc -l <err.txt)" = 1 ] || bad "$what: exit $rc: $(cat err.txt)"
  [ ! -e rout/ch0000.sigmf-meta ] || bad "$what: a recording was written"
}
refuse "a later capture without frequency" 'del m["captures"][1]["core:frequency"]'
refuse "-f with a retune" 'pass' -f 100M
refuse "an unreadable datetime" 'm["captures"][1]["core:datetime"] = "noon"'
grep -q "noon" err.txt || bad "the datetime message does not name it: $(cat err.txt)"

# ---- --report and --occupancy: a carrier at +300 kHz (channel 6 of 32 at 1.6 MHz) ----
SUPPORT=$(cd "$(dirname "$0")" 2>/dev/null && pwd)/support
[ -f "$SUPPORT/png_read.py" ] || SUPPORT=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/support
"$P" gen -q -o g.sigmf -s 1.6M -n 400k -f 100M --carrier f=300k,rs=20k --esn0 30 ||
  bad "gen failed"
"$P" channelize -q -i g.sigmf -K 32 -o occ --report r.json --occupancy occ.png ||
  bad "channelize --report --occupancy failed"
python3 - "$SUPPORT" <<'PY' || bad "report or occupancy picture"
import json, math, sys
sys.path.insert(0, sys.argv[1])
from png_read import read_png, frame_ok, inked, FG
d = json.load(open("r.json"))
errors = []
def need(c, what):
    if not c: errors.append(what)
need(d["input"]["samples"] == 400000 and d["input"]["sample_rate"] == 1.6e6, "input facts")
need(d["channelizer"]["channels"] == 32 and d["channelizer"]["decimation"] == 16, "channelizer")
ch = d["channels"]
need(len(ch) == 32 and all(c["samples"] == 25000 for c in ch), "32 channels of 25000 samples")
need([c["frequency"] for c in ch] == [100e6 + (k if k < 16 else k - 32) * 50e3 for k in range(32)],
     "channel frequencies")
strongest = max(ch, key=lambda c: c["power_dbfs"])
need(strongest["index"] == 6, "strongest channel %d, expected 6" % strongest["index"])
need(d["timing"]["seconds"] > 0 and d["exit_status"] == 0, "timing and status")
w, h, px, text = read_png("occ.png")
x0, y0, pw, ph = map(int, text["polyrx:plot_area"].split())
flo, fhi = map(float, text["polyrx:x_range"].split())
dlo, dhi = map(float, text["polyrx:y_range"].split())
need(w > x0 + pw and h > y0 + ph and pw >= 400 and ph >= 200, "picture size %dx%d" % (w, h))
need(frame_ok(px, x0, y0, pw, ph), "the frame of the axes")
need(abs(flo - (100e6 - 0.8e6 - 25e3)) < 1 and abs(fhi - (100e6 + 0.8e6 - 25e3)) < 1,
     "frequency range %g..%g" % (flo, fhi))
need(dlo < strongest["power_dbfs"] <= dhi, "dB range")
# each bar's top where its power puts it; the carrier's bar the tallest
for c in ch:
    x = x0 + round((c["frequency"] - flo) / (fhi - flo) * pw)
    top = y0 + ph - round((c["power_dbfs"] - dlo) / (dhi - dlo) * ph)
    need(inked(px, x, y0, x + 1, top - 1) == 0, "ink above channel %d's bar" % c["index"])
    need(top >= y0 + ph or px(x, min(top + 1, y0 + ph - 1)) != (0x10, 0x14, 0x18),
         "no bar for channel %d" % c["index"])
need(inked(px, x0, y0 + ph + 1, x0 + pw, h) > 200, "no frequency axis labels")
need(inked(px, 0, y0, x0 - 1, y0 + ph) > 100, "no power axis labels")
if errors:
    raise SystemExit("; ".join(errors))
PY
# the report on standard output; exit statuses of bad options (2) and bad paths (1)
"$P" channelize -q -i g.sigmf -K 32 -o occ2 --report - | python3 -c "import json,sys; json.load(sys.stdin)" ||
  bad "--report - is not JSON on standard output"
for args in "-K 32 -o x --occupancy x.jpg" "-K 32 -o - --report -" "-K 31 -o x" "-K 32 -o x --bogus"; do
  "$P" channelize -q -i g.sigmf $args 2>err.txt
  rc=$?
  [ $rc = 2 ] || bad "channelize $args: exit $rc, expected 2: $(cat err.txt)"
done
[ ! -e ./- ] || bad "-o - created a directory named -"
"$P" channelize -q -i nothere.sigmf -K 32 -o x 2>err.txt
[ $? = 1 ] || bad "a missing input: exit status, expected 1: $(cat err.txt)"
cp g.sigmf g.copy
"$P" channelize -q -i g.sigmf -K 32 -o occ3 --report g.sigmf 2>err.txt
rc=$?
[ $rc = 1 ] && grep -q "is the input" err.txt || bad "--report onto the input: exit $rc: $(cat err.txt)"
cmp -s g.sigmf g.copy || bad "the input was changed"

# ---- -o NAME.sigmf: one archive holding every channel recording and the collection ----
"$P" channelize -q -i in.sigmf-meta -K 8 -o all.sigmf --report all.json || bad "-o all.sigmf failed"
ls -d all.sigmf.tmp-* 2>/dev/null && bad "the temporary directory was left behind"
mkdir -p allx && tar -C allx -xf all.sigmf || bad "tar cannot extract all.sigmf"
[ "$(tar tf all.sigmf | head -3 | tr '\n' ' ')" = "channels.sigmf-collection ch0000.sigmf-meta ch0000.sigmf-data " ] ||
  bad "archive members: $(tar tf all.sigmf | head -3)"
for k in 0000 0005; do
  cmp -s allx/ch$k.sigmf-data ch/ch$k.sigmf-data || bad "archive channel $k differs from -o DIR's"
  cmp -s allx/ch$k.sigmf-meta ch/ch$k.sigmf-meta || bad "archive metadata $k differs from -o DIR's"
done
python3 -c "
import json, sys
d = json.load(open('all.json'))
assert d['archive'] == 'all.sigmf' and d['channels'][3]['recording'] == 'ch0003', d
" || bad "the report of an archive run"
if python3 -c "import sigmf" 2>/dev/null; then
  python3 -c "
import sigmf
c = sigmf.fromfile('allx/channels.sigmf-collection')
c.verify_stream_hashes()
assert len(c.get_stream_names()) == 8
" || bad "the sigmf package rejects the archive's collection"
fi

# ---- the progress line on a terminal ----
if command -v script >/dev/null; then
  # a producer that pauses: the line is due after the first second of the run
  script -qec "{ head -c 4000000 /dev/zero; sleep 1.5; head -c 4000000 /dev/zero; } |
    '$P' channelize -i - -F ci16 -s 10M -K 64 -o big" /dev/null >tty.txt 2>&1 ||
    bad "channelize on a terminal failed"
  grep -qa "polyrx channelize: .* samples, .* samples/s" tty.txt ||
    bad "no progress line: $(head -c 300 tty.txt)"
  { head -c 4000000 /dev/zero; sleep 1.5; head -c 4000000 /dev/zero; } |
    "$P" channelize -i - -F ci16 -s 10M -K 64 -o big 2>err.txt || bad "channelize from a pipe"
  ! grep -q $'\r' err.txt || bad "a progress line on a non-terminal: $(cat err.txt)"
fi

if [ $fail -ne 0 ]; then
  echo "cli_channelize_sigmf: $fail failure(s)" >&2
  exit 1
fi
echo "cli_channelize_sigmf: all checks passed"
