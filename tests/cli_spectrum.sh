#!/usr/bin/env bash
# polyrx spectrum: the waterfall PNG decoded back (python3, standard library: zlib) and checked:
# size and plot area as the picture's tEXt chunks state them, not blank, the frame and the tick
# labels of both axes drawn, the colour bar running from the top colour to the bottom one; the
# content where the signal puts it (carriers in the columns of their frequencies, a noise gap and
# a zero gap in the rows of their times, the strongest column at the strongest carrier); the
# channel grid; standard input of unknown length in bounded rows; bad invocations refused.
set -u
P=${1:?usage: cli_spectrum.sh PATH_TO_POLYRX}
# python3 present, scratch directory $T, bad() and the failure count $fail
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_test.sh"

# ---- the checker: the PNG decoded by tests/support/png_read.py, then the checks named on its
# command line ----
SUPPORT=$(cd "$(dirname "$0")" 2>/dev/null && pwd)/support
[ -f "$SUPPORT/png_read.py" ] || SUPPORT=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/support
cat >"$T/png_check.py" <<'PY'
import os, sys
sys.path.insert(0, os.environ["PNG_SUPPORT"])
from png_read import read_png

path, checks = sys.argv[1], sys.argv[2:]
w, h, px, text = read_png(path)
x0, y0, pw, ph = map(int, text["polyrx:plot_area"].split())
flo, fhi = map(float, text["polyrx:freq_range_hz"].split())
t1 = float(text["polyrx:time_range_s"].split()[1])
fg, errors = (0xd8, 0xdd, 0xe3), []
def need(cond, what):
    if not cond: errors.append(what)
lum = lambda p: 0.3 * p[0] + 0.59 * p[1] + 0.11 * p[2]
col_x = lambda f: x0 + int((f - flo) / (fhi - flo) * pw)
row_y = lambda t: y0 + int(t / t1 * ph)
def column_mean(x, ya, yb): return sum(lum(px(x, y)) for y in range(ya, yb)) / (yb - ya)
def row_mean(y): return sum(lum(px(x, y)) for x in range(x0, x0 + pw)) / pw
for c in checks:
    name, *args = c.split(":")
    if name == "size":  # W H PW PH: the picture and its plot area
        W, H, PW, PH = map(int, args)
        need((w, h, pw, ph) == (W, H, PW, PH), f"size {w}x{h} plot {pw}x{ph}, expected {W}x{H} plot {PW}x{PH}")
    elif name == "axes":  # the frame, tick labels under and left of the plot, the colour bar
        need(all(px(x0 - 1, y) == fg for y in range(y0, y0 + ph)), "left frame line")
        need(all(px(x, y0 + ph) == fg for x in range(x0, x0 + pw)), "bottom frame line")
        under = sum(px(x, y) == fg for y in range(y0 + ph + 6, y0 + ph + 16) for x in range(x0, x0 + pw))
        left = sum(px(x, y) == fg for y in range(y0, y0 + ph) for x in range(0, x0 - 6))
        title = sum(px(x, y) == fg for y in range(y0 + ph + 20, h) for x in range(x0, x0 + pw))
        need(under > 100 and left > 30 and title > 40, f"tick labels: {under} under, {left} left, {title} in the axis title")
        bx = x0 + pw + 14 + 7
        need(px(bx, y0) == (253, 231, 37) or lum(px(bx, y0)) > 180, f"colour bar top {px(bx, y0)}")
        need(lum(px(bx, y0 + ph - 1)) < 60, f"colour bar bottom {px(bx, y0 + ph - 1)}")
    elif name == "nonblank":  # many colours in the plot
        colours = {px(x, y) for y in range(y0, y0 + ph, 3) for x in range(x0, x0 + pw, 3)}
        need(len(colours) > 50, f"only {len(colours)} colours in the plot")
    elif name == "bright":  # F_HZ F_REF [MARGIN]: the column at F brighter than the one at F_REF
        f, fref, margin = float(args[0]), float(args[1]), float(args[2]) if len(args) > 2 else 40
        s, n = column_mean(col_x(f), y0, y0 + ph), column_mean(col_x(fref), y0, y0 + ph)
        need(s > n + margin, f"column at {f} Hz: luminance {s:.0f}, reference column {n:.0f}")
    elif name == "strongest":  # F_HZ TOL_HZ: the brightest column is within TOL of F
        best = max(range(x0, x0 + pw), key=lambda x: column_mean(x, y0, y0 + ph))
        fbest = flo + (best - x0 + 0.5) / pw * (fhi - flo)
        need(abs(fbest - float(args[0])) <= float(args[1]), f"strongest column at {fbest:.0f} Hz, expected {args[0]}")
    elif name == "gap":  # T0 T1 KIND F_CARRIER: rows of the gap lose the carrier (zeros: all dark)
        ta, tb, kind, f = float(args[0]), float(args[1]), args[2], float(args[3])
        ya, yb = row_y(ta) + 3, row_y(tb) - 3
        inside, outside = column_mean(col_x(f), ya, yb), column_mean(col_x(f), y0, row_y(ta) - 3)
        need(inside < outside - 40, f"gap {ta}-{tb} s: carrier column {inside:.0f} inside, {outside:.0f} before")
        if kind == "zeros":
            need(all(lum(px(x, (ya + yb) // 2)) < 60 for x in range(x0, x0 + pw)), f"zero gap {ta}-{tb} s not at the bottom colour")
        else:
            need(row_mean((ya + yb) // 2) > 60, f"noise gap {ta}-{tb} s: the noise is missing")
    elif name == "grid":  # K FC FS: dashed white lines at the channel edges
        K, fc, fs = int(args[0]), float(args[1]), float(args[2])
        hits = 0
        for m in range(-K, K):
            x = col_x(fc + (m + 0.5) * fs / K)
            if x0 < x < x0 + pw - 1:
                hits += sum(px(xx, y) == (255, 255, 255) for xx in (x - 1, x, x + 1) for y in range(y0, y0 + ph)) > ph // 4
        need(hits >= K - 1, f"channel edges found: {hits} of {K - 1}")
    elif name == "text":  # KEY=VALUE in the tEXt chunks
        k, v = c.split(":", 1)[1].split("=", 1)
        need(text.get(k) == v, f"tEXt {k} = {text.get(k)!r}, expected {v!r}")
    elif name == "time":  # SECONDS: the time axis ends there
        need(abs(t1 - float(args[0])) < 1e-9 * max(1, t1), f"time axis ends at {t1}, expected {args[0]}")
    else:
        errors.append("unknown check " + name)
for e in errors: print(f"  {path}: {e}", file=sys.stderr)
sys.exit(1 if errors else 0)
PY
check() { PNG_SUPPORT=$SUPPORT python3 "$T/png_check.py" "$@" || bad "$1: checks failed"; }

# ---- a recording with three carriers, a noise gap and a zero gap; channel grid of 16 ----
"$P" gen -q -o "$T/s.sigmf-data" -F ci16 -s 1M -f 100M -d 1 --carrier f=200k,rs=50k \
  --carrier f=-300k,rs=100k,power=-10 --carrier f=50k,rs=10k,power=-6 --esn0 20 \
  --gap 0.3:0.1:noise --gap 0.7:0.05 || bad "gen failed"
"$P" spectrum -q -i "$T/s.sigmf-meta" -o "$T/s.png" -K 16 || bad "spectrum failed"
# 1024 bins -> 1024 columns, 512 rows; margins 72 + 84 across, 42 + 40 down; 10^6 samples are
# 976 frames of 1024: 2 frames a row, 488 rows; the -10 dB carrier (99.7 MHz) is spread over
# twice the band of the 0 dB one: 13 dB above the noise against 20
check "$T/s.png" size:1180:594:1024:512 axes nonblank bright:100.2e6:100.4e6 \
  bright:99.7e6:100.4e6:10 bright:100.05e6:100.4e6 strongest:100.2e6:30e3 \
  gap:0.3:0.4:noise:100.2e6 gap:0.7:0.75:zeros:100.2e6 grid:16:100e6:1e6 \
  "text:polyrx:fft_frames_rows=1024 2 488" time:$(python3 -c "print(976 * 1024 / 1e6)")

# ---- standard input of unknown length: rows merge in pairs, memory stays --rows x --fft ----
"$P" gen -q -o - -F cu8 -s 2M -n 3000000 --carrier f=-500k,rs=100k --esn0 15 |
  "$P" spectrum -q -i - -F cu8 -s 2M -o "$T/stdin.png" --fft 256 --rows 64 || bad "spectrum from a pipe failed"
# 3000000 / 256 = 11718 frames; 64 rows of 1 frame, merged while full: 128 frames a row, 92 rows
# would be needed, so 64-row merges end at 256 frames a row: 46 rows (the last of 198 frames)
check "$T/stdin.png" size:668:146:512:64 axes nonblank bright:-500e3:500e3 \
  strongest:-500e3:30e3 "text:polyrx:fft_frames_rows=256 256 46" time:$(python3 -c "print(11718 * 256 / 2e6)")

# ---- long FFT: bins averaged into 1024 columns; raw cf32 with -s and -f; fixed --range ----
"$P" gen -q -o "$T/r.cf32" -s 48k -n 200000 --carrier f=12k,rs=2400 --esn0 30 || bad "gen raw failed"
"$P" spectrum -q -i "$T/r.cf32" -s 48k -f 1k -o "$T/r.png" --fft 4096 --rows 32 --range -100:0 ||
  bad "spectrum raw failed"
check "$T/r.png" size:1180:114:1024:32 axes bright:13e3:-10e3 strongest:13e3:500 \
  "text:polyrx:db_range=-100 0"

# ---- bad invocations: non-zero exit, one line naming the problem ----
expect_fail() { # WORDS -- ARGS...
  local want=$1
  shift
  if "$P" spectrum "$@" >"$T/out" 2>"$T/err" </dev/null; then
    bad "accepted: spectrum $*"
  elif ! grep -qi -- "$want" "$T/err"; then
    bad "spectrum $*: message '$(cat "$T/err")' does not mention '$want'"
  elif [ "$(wc -l <"$T/err")" -ne 1 ]; then
    bad "spectrum $*: more than one line: $(cat "$T/err")"
  fi
}
S=(-i "$T/s.sigmf-meta")
expect_fail "no output" "${S[@]}"
expect_fail "no input" -o "$T/x.png"
expect_fail "ending in .png" "${S[@]}" -o "$T/x.jpg"
expect_fail "--fft: bad length" "${S[@]}" -o "$T/x.png" --fft 4
expect_fail "--rows: bad count" "${S[@]}" -o "$T/x.png" --rows 5000
expect_fail "-K: bad channel count" "${S[@]}" -o "$T/x.png" -K 0
expect_fail "--range: bad value" "${S[@]}" -o "$T/x.png" --range 0:-10
expect_fail "too large" "${S[@]}" -o "$T/x.png" --fft 65536 --rows 4096
head -c 800 "$T/r.cf32" >"$T/short.cf32" # 100 samples
expect_fail "fewer than one FFT frame" -i "$T/short.cf32" -s 48k -o "$T/x.png" --fft 128
expect_fail "no sample rate" -i "$T/r.cf32" -o "$T/x.png"
rc=0; "$P" spectrum -i "$T/r.cf32" -o "$T/x.png" 2>/dev/null || rc=$?
[ $rc = 2 ] || bad "no -s for raw input: exit $rc, expected 2 (a usage error)"
expect_fail "cannot create" "${S[@]}" -o "$T/no/such/dir/x.png"
expect_fail "unknown option" "${S[@]}" -o "$T/x.png" --colour
[ -e "$T/x.png" ] && bad "a failed invocation left a picture"
"$P" spectrum --help | grep -q "usage: polyrx spectrum" || bad "--help"

if [ "$fail" -ne 0 ]; then
  echo "cli_spectrum: $fail check(s) failed" >&2
  exit 1
fi
echo "cli_spectrum: all checks passed"
