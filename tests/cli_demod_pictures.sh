#!/usr/bin/env bash
# polyrx demod --constellation: the density plot decoded back (size, the frame on the stated
# plot area, axes spanning +-1.6 RMS, ink at the four QPSK points and none at the origin or in
# the corners), a picture of a run longer than the symbols it draws; usage errors exit 2; the
# progress line on a terminal only.
set -u
P=${1:?usage: cli_demod_pictures.sh PATH_TO_POLYRX}
command -v python3 >/dev/null || {
  echo "FAIL: python3 is needed by this test's checkers (scripts/setup.sh installs it)" >&2
  exit 1
}
SUPPORT=$(cd "$(dirname "$0")" && pwd)/support
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
bad() {
  echo "FAIL: $*" >&2
  fail=$((fail + 1))
}

"$P" gen -q -o d.cf32 -s 48k -n 960000 --carrier f=100,rs=4800,diff,ppm=20 --esn0 18 || bad "gen"
"$P" demod -q -i d.cf32 -s 48k --symbol-rate 4800 --diff -o d.bits --constellation c.png ||
  bad "demod --constellation failed"
python3 - "$SUPPORT" <<'PY' || bad "the constellation picture"
import math, sys
sys.path.insert(0, sys.argv[1])
from png_read import read_png, frame_ok, inked
w, h, px, text = read_png("c.png")
x0, y0, pw, ph = map(int, text["polyrx:plot_area"].split())
lo, hi = map(float, text["polyrx:x_range"].split())
errors = []
def need(c, what):
    if not c: errors.append(what)
need((pw, ph) == (400, 400) and w > x0 + pw and h > y0 + ph, "size %dx%d, area %dx%d" % (w, h, pw, ph))
need(frame_ok(px, x0, y0, pw, ph), "the frame")
need(abs(hi - 1.6) < 0.1 and lo == -hi, "axis range %g..%g (unit-energy symbols: +-1.6)" % (lo, hi))
X = lambda v: x0 + round((v - lo) / (hi - lo) * pw)
Y = lambda v: y0 + ph - round((v - lo) / (hi - lo) * ph)
a = 1 / math.sqrt(2)
for re, im in ((a, a), (-a, a), (-a, -a), (a, -a)):
    need(inked(px, X(re) - 4, Y(im) - 4, X(re) + 5, Y(im) + 5) > 60, "no density at (%g, %g)" % (re, im))
need(inked(px, X(0.1), Y(0.3), X(0.3), Y(0.1)) == 0, "ink near the origin at Es/N0 18 dB")
need(inked(px, x0, y0, x0 + 25, y0 + 25) == 0, "ink in a corner")
need(inked(px, x0, y0 + ph + 1, x0 + pw, h) > 150, "no in-phase axis labels")
need(inked(px, 0, y0, x0 - 1, y0 + ph) > 100, "no quadrature axis labels")
if errors:
    raise SystemExit("; ".join(errors))
PY

# usage errors exit 2; a missing input 1
for args in "--constellation c.jpg" "--bogus" "--constellation"; do
  "$P" demod -i d.cf32 -s 48k --symbol-rate 4800 -o x.bits $args 2>err.txt
  rc=$?
  [ $rc = 2 ] || bad "demod $args: exit $rc, expected 2: $(cat err.txt)"
done
"$P" demod -i nothere.cf32 -s 48k --symbol-rate 4800 -o x.bits 2>err.txt
[ $? = 1 ] || bad "a missing input: exit status, expected 1: $(cat err.txt)"

# the progress line on a terminal (a producer that pauses past the first second), not elsewhere
if command -v script >/dev/null; then
  script -qec "{ head -c 2000000 d.cf32; sleep 1.5; tail -c 2000000 d.cf32; } |
    '$P' demod -i - -s 48k --symbol-rate 4800 -o x.bits" /dev/null >tty.txt 2>&1 ||
    bad "demod on a terminal failed: $(cat tty.txt)"
  grep -qa "polyrx demod: .* samples, .* samples/s" tty.txt ||
    bad "no progress line: $(head -c 300 tty.txt)"
fi
{ head -c 2000000 d.cf32; sleep 1.5; tail -c 2000000 d.cf32; } |
  "$P" demod -i - -s 48k --symbol-rate 4800 -o x.bits 2>err.txt || bad "demod from a pipe"
! grep -q $'\r' err.txt || bad "a progress line on a non-terminal: $(cat err.txt)"

if [ $fail -ne 0 ]; then
  echo "cli_demod_pictures: $fail failure(s)" >&2
  exit 1
fi
echo "cli_demod_pictures: all checks passed"
