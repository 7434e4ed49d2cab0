#!/usr/bin/env bash
# polyrx demod: signals from polyrx gen come back bit for bit (raw file, SigMF, standard input,
# differential and pilots, packed bits), with exactly one symbol per symbol centred in the input;
# LLRs and the JSON report are well formed; any thread count gives the same files; a carrier
# off the centre and one in an audio recording demodulate with --carrier-freq; bad input
# (sample rate below 2x the symbol rate, empty or truncated file, unknown format, bad options)
# gives a clear message and a non-zero exit.
set -u
P=${1:?usage: cli_demod.sh PATH_TO_POLYRX}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() {
  echo "FAIL: $*" >&2
  fail=$((fail + 1))
}
size() { stat -c %s "$1"; }
# the checkers are python3: without it the test fails (scripts/setup.sh installs it)
command -v python3 >/dev/null || {
  echo "FAIL: python3 is needed by this test's checkers (scripts/setup.sh installs it)" >&2
  exit 1
}
have_py=1

# symbols centred in N samples: symbol n at (n + timing) fs / (rs (1 + ppm 1e-6))
expect_bits() { # N FS RS TIMING PPM PERIOD LEN
  python3 - "$@" <<'EOF'
import math, sys
n, fs, rs, tau, ppm, P, L = map(float, sys.argv[1:])
st = fs / (rs * (1 + ppm * 1e-6))
s = math.ceil((n - tau * st) / st)
if P > 0:
    s -= int(s // P) * L + min(s % P, L)
print(int(2 * s))
EOF
}

# ---- differential, 5.333 samples/symbol, CFO, clock offset, no noise: bit exact ----
C="f=150,rs=2400,timing=0.4,ppm=50,phase=1,diff,seed=3"
"$P" gen -q -o "$T/d.cf32" -s 12.8k -n 200000 --carrier "$C" --bits "$T/d" || bad "gen failed"
"$P" demod -q -i "$T/d.cf32" -s 12.8k -r 2400 -o "$T/d.bits" --llr "$T/d.llr" \
  --report "$T/d.json" || bad "demod (differential) failed"
nb=$(size "$T/d.bits")
if [ $have_py = 1 ]; then
  want=$(expect_bits 200000 12800 2400 0.4 50 0 0)
  [ "$nb" = "$want" ] || bad "differential: $nb bits, expected $want (one per symbol centred in the input)"
fi
# the first symbol's bits depend on the unknown absolute phase; all others must match
cmp -s -i 2 -n $((nb - 2)) "$T/d.bits" "$T/d0.bits" || bad "differential: bits differ from the generator's"
[ "$(size "$T/d.llr")" = $((nb * 4)) ] || bad "LLR file: $(size "$T/d.llr") bytes for $nb bits"
if [ $have_py = 1 ]; then
  python3 - "$T/d.llr" "$T/d.bits" <<'EOF' || bad "LLR signs do not match the bits"
import struct, sys
l = open(sys.argv[1], 'rb').read(); b = open(sys.argv[2], 'rb').read()
v = struct.unpack('<%df' % (len(l) // 4), l)
bad = sum(1 for x, y in zip(v[2:], b[2:]) if (x < 0) != (y == 1))
sys.exit(1 if bad else 0)
EOF
  python3 - "$T/d.json" "$nb" <<'EOF' || bad "report: wrong content"
import json, sys
d = json.load(open(sys.argv[1])); nb = int(sys.argv[2])
c, t, bl = d['config'], d['totals'], d['blocks']
assert d['command'] == 'demod' and c['ambiguity'] == 'differential', d
assert abs(c['samples_per_symbol'] - 12800 / 2400) < 1e-9 and c['symbol_rate'] == 2400
assert t['bits'] == nb and t['symbols'] * 2 == nb and t['samples'] == 200000 and t['status'] == 'ok'
assert t['blocks'] == len(bl) and sum(b['symbols'] for b in bl) == t['symbols']
for i, b in enumerate(bl):
    assert b['index'] == i
    assert b['first_symbol'] == (0 if i == 0 else bl[i-1]['first_symbol'] + bl[i-1]['symbols'])
    assert abs(b['cfo_hz'] - 150) < 0.05, b
for k in ('time_s', 'phase_rad', 'timing_symbols', 'esn0_db', 'noise_var', 'amplitude'):
    assert k in bl[0], k
assert abs(t['clock_offset_ppm'] - 50) < 5, t
assert abs(t['cfo_drift_hz_per_s']) < 0.02, t  # a steady carrier: no drift (5 CFO spans)
EOF
fi

# ---- pilots, ci16 SigMF (rate from the metadata), 4 samples/symbol, noise-free ----
C="f=-3k,rs=25k,timing=0.7,ppm=-50,phase=2,pilots=256:16,seed=9"
"$P" gen -q -o "$T/p.sigmf-data" -F ci16 -s 100k -n 400000 --carrier "$C" --bits "$T/p" ||
  bad "gen SigMF failed"
"$P" demod -q -i "$T/p.sigmf-meta" -r 25k --pilots 256:16 -o "$T/p.bits" --report "$T/p.json" ||
  bad "demod (pilots, SigMF) failed"
nb=$(size "$T/p.bits")
if [ $have_py = 1 ]; then
  want=$(expect_bits 400000 100000 25000 0.7 -50 256 16)
  [ "$nb" = "$want" ] || bad "pilots: $nb bits, expected $want"
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); t=d['totals']; assert d['input']['sigmf'] and d['input']['sample_rate']==100000 and d['config']['pilot_period']==256 and t['frame_offset']==0, d" "$T/p.json" ||
    bad "pilots report"
fi
cmp -s -n "$nb" "$T/p.bits" "$T/p0.bits" || bad "pilots: bits differ from the generator's"
# packed: 8 bits per byte, first bit in the MSB, zero padded
"$P" demod -q -i "$T/p.sigmf-meta" -r 25k --pilots 256:16 --bits packed -o "$T/p.packed" ||
  bad "demod --bits packed failed"
[ "$(size "$T/p.packed")" = $(((nb + 7) / 8)) ] || bad "packed: $(size "$T/p.packed") bytes for $nb bits"
if [ $have_py = 1 ]; then
  python3 - "$T/p.bits" "$T/p.packed" <<'EOF' || bad "packed bits are not the unpacked ones"
import sys
u = open(sys.argv[1], 'rb').read(); p = open(sys.argv[2], 'rb').read()
u = u + bytes((8 - len(u) % 8) % 8)
q = bytes(sum(u[i + k] << (7 - k) for k in range(8)) for i in range(0, len(u), 8))
sys.exit(0 if q == p else 1)
EOF
fi
# -F must agree with the recording
out=$("$P" demod -q -i "$T/p.sigmf-meta" -F cf32 -r 25k -o "$T/x.bits" 2>&1) &&
  bad "-F cf32 on a ci16 recording accepted"
echo "$out" | grep -q "ci16" || bad "-F mismatch message: $out"

# ---- pi/4-DQPSK (TETRA's phase steps) from gen: bit exact with --pi4, lost without it ----
C="f=700,rs=18k,timing=0.2,ppm=-40,phase=0.5,diff,pi4,seed=6"
"$P" gen -q -o "$T/q.sigmf-data" -s 72k -n 300000 --carrier "$C" --bits "$T/q" || bad "gen pi4 failed"
grep -q '"pi/4-QPSK carrier 0"' "$T/q.sigmf-meta" || bad "gen pi4: the annotation does not say pi/4"
"$P" demod -q -i "$T/q" -r 18k --pi4 -o "$T/q.bits" --report "$T/q.json" || bad "demod --pi4 failed"
nb=$(size "$T/q.bits")
[ "$nb" = "$(expect_bits 300000 72000 18000 0.2 -40 0 0)" ] || bad "pi4: $nb bits"
cmp -s -i 2 -n $((nb - 2)) "$T/q.bits" "$T/q0.bits" || bad "pi4: bits differ from the generator's"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['config']['modulation']=='pi4-qpsk' and d['totals']['status']=='ok', d['config']" "$T/q.json" ||
  bad "pi4 report"
# read the other way round, each says so (the detector's verdict on the first samples): a
# warning on standard error and in the report
"$P" demod -q -i "$T/q" -r 18k -o "$T/q1.bits" --report "$T/q1.json" 2>"$T/q1.err"
cmp -s -i 2 -n $((nb - 2)) "$T/q1.bits" "$T/q0.bits" && bad "pi4 signal read as QPSK gave its bits"
grep -q "looks like pi/4-QPSK.*--pi4" "$T/q1.err" || bad "pi4 read as QPSK: no warning ($(cat "$T/q1.err"))"
python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['totals']; assert t['status']=='warning' and 'pi4_qpsk' in [w['code'] for w in t['warnings']], t['warnings']" "$T/q1.json" ||
  bad "pi4 read as QPSK: the report's warning"
"$P" demod -q -i "$T/d.cf32" -s 12.8k -r 2400 --pi4 -o "$T/q2.bits" --report "$T/q2.json" 2>"$T/q2.err"
grep -q "looks like QPSK, not pi/4-QPSK" "$T/q2.err" || bad "QPSK read with --pi4: no warning ($(cat "$T/q2.err"))"
python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['totals']; assert 'plain_qpsk' in [w['code'] for w in t['warnings']], t['warnings']" "$T/q2.json" ||
  bad "QPSK read with --pi4: the report's warning"
out=$("$P" demod -q -i "$T/q" -r 18k --pi4 --pilots 64:8 -o "$T/x.bits" 2>&1)
[ $? = 2 ] && echo "$out" | grep -q "pi4 with --pilots is not supported" ||
  bad "--pi4 --pilots: '$out'"

# ---- standard input, noise, threads: the same files whatever the thread count ----
C="f=20k,rs=250k,timing=0.3,ppm=30,diff,seed=5"
"$P" gen -q -o "$T/n.cu8" -F cu8 -s 1M -n 600000 --carrier "$C" --esn0 8 || bad "gen cu8 failed"
"$P" demod -q -i - -F cu8 -s 1M -r 250k -o "$T/n1.bits" --llr "$T/n1.llr" --threads 1 \
  --block 256 --cfo-span 4096 --report "$T/n1.json" <"$T/n.cu8" || bad "demod from standard input failed"
"$P" demod -q -i "$T/n.cu8" -F cu8 -s 1M -r 250k -o - --llr "$T/n2.llr" --threads 2 \
  --block 256 --cfo-span 4096 --report "$T/n2.json" >"$T/n2.bits" || bad "demod -o - failed"
cmp -s "$T/n1.bits" "$T/n2.bits" || bad "bits differ between 1 and 2 threads (or pipe and file)"
cmp -s "$T/n1.llr" "$T/n2.llr" || bad "LLRs differ between 1 and 2 threads"
# POLYRX_TIMING: one line of phases and compute's figures on standard error, the same bits
POLYRX_TIMING=1 "$P" demod -q -i "$T/n.cu8" -F cu8 -s 1M -r 250k -o "$T/nt.bits" --threads 1 \
  --block 256 --cfo-span 4096 2>"$T/nt.err" || bad "demod with POLYRX_TIMING failed"
cmp -s "$T/n1.bits" "$T/nt.bits" || bad "POLYRX_TIMING changed the bits"
grep -q "^polyrx demod: timing (ms): input .* stream .*, total .*; compute's first samples at .*, compute in execute .* blocks; unix time at the start [0-9.]*, at this line [0-9.]*$" \
  "$T/nt.err" || bad "POLYRX_TIMING line: $(cat "$T/nt.err")"
if [ $have_py = 1 ]; then
  python3 -c "
import json,sys
a,b=(json.load(open(f)) for f in sys.argv[1:3])
assert a['blocks']==b['blocks'] and a['totals']['symbols']==b['totals']['symbols']" "$T/n1.json" "$T/n2.json" ||
    bad "reports differ between 1 and 2 threads"
fi

# ---- the host pipeline: reading, demodulating and writing at once give the serial path's
# bytes (bits, LLRs, report blocks) for every input kind and read block size ----
POLYRX_PIPELINE=serial "$P" demod -q -i "$T/n.cu8" -F cu8 -s 1M -r 250k -o "$T/ps.bits" \
  --llr "$T/ps.llr" --threads 1 || bad "serial pipeline run failed"
cp "$T/n.cu8" "$T/ns.sigmf-data"
printf '{"global": {"core:datatype": "cu8", "core:sample_rate": 1000000, "core:version": "1.0.0"}, "captures": [{"core:sample_start": 0}], "annotations": []}' >"$T/ns.sigmf-meta"
for kind in file stdin sigmf; do
  for rb in 1 777 65536 1000000; do
    [ $rb = 1 ] && [ $kind != file ] && continue # 600000 one-sample blocks: once is enough
    case $kind in
    file) "$P" demod -q -i "$T/n.cu8" -F cu8 -s 1M -r 250k --read-block $rb -o "$T/pp.bits" --llr "$T/pp.llr" ;;
    stdin) "$P" demod -q -i - -F cu8 -s 1M -r 250k --read-block $rb -o "$T/pp.bits" --llr "$T/pp.llr" <"$T/n.cu8" ;;
    sigmf) "$P" demod -q -i "$T/ns.sigmf-meta" -r 250k --read-block $rb -o "$T/pp.bits" --llr "$T/pp.llr" ;;
    esac || bad "pipeline $kind --read-block $rb failed"
    cmp -s "$T/ps.bits" "$T/pp.bits" || bad "pipeline $kind --read-block $rb: bits differ from the serial path"
    cmp -s "$T/ps.llr" "$T/pp.llr" || bad "pipeline $kind --read-block $rb: LLRs differ from the serial path"
  done
done
# the hand-overs' settings (the writer woken for every slot or every 3, the reader and writer
# polling, deeper rings) change nothing but speed
for env in POLYRX_WAKE_BATCH=1 POLYRX_WAKE_BATCH=16 POLYRX_PIPE_POLL=20 POLYRX_PIPE_POLL=0+POLYRX_WAKE_BATCH=3 \
  POLYRX_IN_DEPTH=7+POLYRX_OUT_DEPTH=2; do
  env ${env//+/ } "$P" demod -q -i - -F cu8 -s 1M -r 250k --read-block 777 -o "$T/pw.bits" \
    --llr "$T/pw.llr" <"$T/n.cu8" || bad "pipeline $env failed"
  cmp -s "$T/ps.bits" "$T/pw.bits" && cmp -s "$T/ps.llr" "$T/pw.llr" ||
    bad "pipeline $env: bits or LLRs differ from the serial path"
done
# the first block read beside the demodulator's making, or by the pipeline's reader: the same
# bytes (a file: the one input it is read ahead for)
for rb in 777 1000000; do
  for fb in 1 0; do
    export POLYRX_FFT_WARM=$fb # the FFT planner made ready beside the making, or not
    POLYRX_FIRST_BLOCK=$fb "$P" demod -q -i "$T/n.cu8" -F cu8 -s 1M -r 250k --read-block $rb \
      -o "$T/pf$fb.bits" --llr "$T/pf$fb.llr" || bad "first block $fb --read-block $rb failed"
    cmp -s "$T/ps.bits" "$T/pf$fb.bits" && cmp -s "$T/ps.llr" "$T/pf$fb.llr" ||
      bad "first block $fb --read-block $rb: bits or LLRs differ from the serial path"
    unset POLYRX_FFT_WARM
  done
done
# an existing output longer than the run's is emptied before the first bits (on the writer's
# thread), and emptied too where the run writes nothing
head -c 3000000 /dev/zero | tr '\0' '\7' >"$T/old.bits"
cp "$T/old.bits" "$T/old.llr"
"$P" demod -q -i "$T/n.cu8" -F cu8 -s 1M -r 250k -o "$T/old.bits" --llr "$T/old.llr" ||
  bad "run over existing outputs failed"
cmp -s "$T/ps.bits" "$T/old.bits" && cmp -s "$T/ps.llr" "$T/old.llr" ||
  bad "existing outputs: not the run's bytes alone"
cp "$T/ps.llr" "$T/old.bits"
: >"$T/empty.cu8"
"$P" demod -q -i "$T/empty.cu8" -F cu8 -s 1M -r 250k -o "$T/old.bits" 2>/dev/null &&
  bad "an empty input succeeded"
[ ! -s "$T/old.bits" ] || bad "an empty input left the old output's bytes"
# a read error (the input cut inside a sample): the symbols of the whole samples are written
head -c 300001 "$T/n.cu8" >"$T/cut.cu8"
head -c 300000 "$T/n.cu8" >"$T/whole.cu8"
"$P" demod -q -i "$T/cut.cu8" -F cu8 -s 1M -r 250k -o "$T/cut.bits" 2>"$T/err.txt" &&
  bad "a cut input succeeded"
"$P" demod -q -i "$T/whole.cu8" -F cu8 -s 1M -r 250k -o "$T/whole.bits" || bad "whole-sample input failed"
cmp -s "$T/cut.bits" "$T/whole.bits" || bad "cut input: the bits of its whole samples differ"
# a full disk (a file-size limit): a clear error, exit != 0, no crash
# (the report through a pipe: the limit is the demodulator's process's, not cat's)
(ulimit -f 8 && "$P" demod -q -i "$T/n.cu8" -F cu8 -s 1M -r 250k -o "$T/full.bits" \
  --report - 2>"$T/err.txt") | cat >"$T/full.json"
rc=${PIPESTATUS[0]}
[ $rc -ne 0 ] && [ $rc -lt 128 ] || bad "file-size limit: exit status $rc"
grep -qi "cannot write\|too large\|no space" "$T/err.txt" || bad "file-size limit: message: $(cat "$T/err.txt")"
# the report says so, and what the file holds: the first bits of the whole run's
"$P" demod -q -i "$T/n.cu8" -F cu8 -s 1M -r 250k -o "$T/unlimited.bits" || bad "demod n.cu8 failed"
python3 - "$T" <<'EOF' || bad "file-size limit: the report does not describe the file"
import json, sys
t = sys.argv[1]
tot = json.load(open(t + "/full.json"))["totals"]
held = open(t + "/full.bits", "rb").read()
whole = open(t + "/unlimited.bits", "rb").read()
assert tot["status"] == "error" and "full.bits: File too large" in tot["error"], tot
assert tot["bits_file_bytes"] == len(held) <= 8192 < len(whole), (tot["bits_file_bytes"], len(held))
assert held == whole[:len(held)]
EOF
# a full device under the bits, then under the LLRs: one line naming the file and the cause,
# exit status 1 (the closes add no second line)
for o in "-o /dev/full" "-o $T/f.bits --llr /dev/full"; do
  # shellcheck disable=SC2086
  "$P" demod -q -i "$T/n.cu8" -F cu8 -s 1M -r 250k $o 2>"$T/err.txt"
  rc=$?
  [ $rc = 1 ] && [ "$(wc -l <"$T/err.txt")" = 1 ] &&
    grep -q "cannot write /dev/full: No space left on device" "$T/err.txt" ||
    bad "a full device ($o): status $rc, said $(cat "$T/err.txt")"
done
# a stop signal while the producer is quiet ends the run at once, the symbols read written
mkfifo "$T/fifo"
"$P" demod -q -i "$T/fifo" -F cu8 -s 1M -r 250k -o "$T/sig.bits" 2>"$T/err.txt" &
PID=$!
exec 3>"$T/fifo"
cat "$T/whole.cu8" >&3
sleep 0.5
t0=$(date +%s%N)
kill -TERM $PID # (a background job of a script ignores SIGINT)
wait $PID
rc=$?
t1=$(date +%s%N)
exec 3>&-
[ $rc = 130 ] || bad "stop signal: exit status $rc: $(cat "$T/err.txt")"
[ $(((t1 - t0) / 1000000)) -lt 1000 ] || bad "stop signal: the stop took $(((t1 - t0) / 1000000)) ms"
cmp -s "$T/sig.bits" "$T/whole.bits" || bad "stop signal: the bits of the samples read differ ($(size "$T/sig.bits") vs $(size "$T/whole.bits") bytes)"

# ---- bad input ----
expect_fail() { # WORDS... -- ARGS...: non-zero exit and the message contains WORDS
  local words=() a
  while [ "$1" != "--" ]; do words+=("$1"); shift; done
  shift
  out=$("$P" demod "$@" 2>&1 </dev/null)
  rc=$?
  [ $rc -ne 0 ] || bad "accepted: demod $*"
  for a in "${words[@]}"; do
    echo "$out" | grep -qi -- "$a" || bad "demod $*: message '$out' lacks '$a'"
  done
  echo "$out" | grep -q "^polyrx demod: error: " || bad "demod $*: not a polyrx error: '$out'"
}
expect_fail "below twice" "symbol rate" -- -i "$T/d.cf32" -s 12.8k -r 9.6k -o "$T/x"
: >"$T/empty.cf32"
expect_fail "empty" -- -i "$T/empty.cf32" -s 12.8k -r 2400 -o "$T/x"
head -c 100003 "$T/d.cf32" >"$T/cut.cf32"
expect_fail "inside a sample" -- -i "$T/cut.cf32" -s 12.8k -r 2400 -o "$T/cut.bits"
# the complete samples of a cut file are still demodulated
[ -s "$T/cut.bits" ] || bad "truncated input: nothing written for the complete samples"
expect_fail "unknown sample format" "cf33" -- -i "$T/d.cf32" -F cf33 -s 12.8k -r 2400 -o "$T/x"
expect_fail "no such file" -- -i "$T/missing.cf32" -s 12.8k -r 2400 -o "$T/x"
expect_fail "no sample rate" -- -i "$T/d.cf32" -r 2400 -o "$T/x"
[ $rc = 2 ] || bad "no -s for raw input: exit $rc, expected 2 (a usage error)"
expect_fail "symbol rate" -- -i "$T/d.cf32" -s 12.8k -o "$T/x"
expect_fail "symbol-rate" "0" -- -i "$T/d.cf32" -s 12.8k -r 0 -o "$T/x"
expect_fail "no output" -- -i "$T/d.cf32" -s 12.8k -r 2400
expect_fail "--pilots" "256" -- -i "$T/d.cf32" -s 12.8k -r 2400 --pilots 256 -o "$T/x"
expect_fail "pilot_period" -- -i "$T/d.cf32" -s 12.8k -r 2400 --pilots 16:16 -o "$T/x"
expect_fail "conflicts" -- -i "$T/d.cf32" -s 12.8k -r 2400 --diff --pilots 256:16 -o "$T/x"
expect_fail "max-cfo" "Rs/8" -- -i "$T/d.cf32" -s 12.8k -r 2400 --max-cfo 400 -o "$T/x"
expect_fail "--block" -- -i "$T/d.cf32" -s 12.8k -r 2400 --block 100 -o "$T/x"
expect_fail "--bits" -- -i "$T/d.cf32" -s 12.8k -r 2400 --bits hex -o "$T/x"
expect_fail "--backend" "gpu" -- -i "$T/d.cf32" -s 12.8k -r 2400 --backend gpu -o "$T/x"
"$P" demod -q -i "$T/d.cf32" -s 12.8k -r 2400 --backend cpu -o "$T/bc.bits" || bad "--backend cpu failed"
cmp -s "$T/bc.bits" "$T/d.bits" || bad "--backend cpu: bits differ from the default run"
if "$P" demod -q -i "$T/d.cf32" -s 12.8k -r 2400 --backend cuda -o "$T/bg.bits" 2>"$T/bg.err"; then
  cmp -s "$T/bg.bits" "$T/d.bits" || bad "--backend cuda: bits differ from the CPU's"
else
  grep -q "no usable CUDA device" "$T/bg.err" || bad "--backend cuda failed without saying why: $(cat "$T/bg.err")"
fi
expect_fail "unknown option" -- -i "$T/d.cf32" -s 12.8k -r 2400 --frobnicate -o "$T/x"
expect_fail "is the input" -- -i "$T/d.cf32" -s 12.8k -r 2400 -o "$T/d.cf32"
[ "$(size "$T/d.cf32")" = 1600000 ] || bad "the input was overwritten"
"$P" demod >/dev/null 2>&1 && bad "no arguments accepted"
"$P" demod --help | grep -q "symbol-rate" || bad "--help does not list --symbol-rate"

# ---- what the demodulator says about doubtful input: warnings on standard error and in the
# report (status "warning"), the bits written all the same ----
report_has() { # JSON STATUS CODE...: the report's status, and warning codes it lists (none for ok)
  python3 - "$@" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))['totals']
codes = [w['code'] for w in t['warnings']]
assert t['status'] == sys.argv[2], t
assert all(c in codes for c in sys.argv[3:]) and (codes or t['status'] == 'ok'), codes
assert t['status'] != 'ok' or not codes, codes
EOF
}
# a clock beyond the supported +-5000 ppm
"$P" gen -q -o "$T/c.cf32" -s 100k -n 400000 --carrier "f=1k,rs=25k,ppm=8000,diff,seed=4" \
  --esn0 20 || bad "gen (8000 ppm) failed"
out=$("$P" demod -q -i "$T/c.cf32" -s 100k -r 25k -o "$T/c.bits" --report "$T/c.json" 2>&1) ||
  bad "demod (8000 ppm) failed: $out"
echo "$out" | grep -q "warning: .*5000 ppm" || bad "8000 ppm: no clock warning: '$out'"
report_has "$T/c.json" warning clock_range || bad "8000 ppm: report"
# a carrier beyond the CFO acquisition range (0.2 Rs off centre: its 4th-power line aliases onto
# -0.05 Rs, its blocks show a signal, its bits are wrong): the warning cfo_alias; the same carrier
# inside the range with an equal neighbour 1.4 Rs away: no cfo_alias
"$P" gen -q -o "$T/cfoal.cf32" -s 100k -n 200000 --carrier "f=5k,rs=25k,diff" --esn0 20 ||
  bad "gen (alias) failed"
out=$("$P" demod -i "$T/cfoal.cf32" -s 100k -r 25k -o "$T/cfoal.bits" \
  --report "$T/cfoal.json" 2>&1) ||
  bad "demod (alias) failed: $out"
echo "$out" | grep -q "warning: the input's spectrum lies where an alias" ||
  bad "0.2 Rs: no alias warning: '$out'"
report_has "$T/cfoal.json" warning cfo_alias || bad "0.2 Rs: report"
"$P" gen -q -o "$T/nb.cf32" -s 100k -n 200000 --carrier "f=1k,rs=25k,diff" \
  --carrier "f=36k,rs=25k,seed=7" --esn0 20 || bad "gen (neighbour) failed"
out=$("$P" demod -i "$T/nb.cf32" -s 100k -r 25k -o "$T/nb.bits" --report "$T/nb.json" 2>&1) ||
  bad "demod (neighbour) failed: $out"
report_has "$T/nb.json" ok || bad "an equal neighbour 1.4 Rs away: warned: '$out'"
# 16QAM read as QPSK: two carriers of one timing, the second 6.02 dB below the first, add up to
# 16QAM's grid (2 s + s'); 25 dB: the warning power_levels and the Es/N0 read ~6.7 dB; one QPSK
# carrier alone: ok
"$P" gen -q -o "$T/qam.cf32" -s 48k -n 400000 --carrier "f=300,rs=12k,timing=0,diff,seed=3" \
  --carrier "f=300,rs=12k,timing=0,power=-6.0206,diff,seed=9" --esn0 25 || bad "gen (16QAM) failed"
out=$("$P" demod -i "$T/qam.cf32" -s 48k -r 12k -o "$T/qam.bits" --report "$T/qam.json" 2>&1) ||
  bad "demod (16QAM) failed: $out"
echo "$out" | grep -q "warning: the symbols' power lies on several levels" ||
  bad "16QAM: no power levels warning: '$out'"
report_has "$T/qam.json" warning power_levels || bad "16QAM: report"
python3 -c "
import json,sys
t=json.load(open(sys.argv[1]))['totals']
assert [w['code'] for w in t['warnings']] == ['power_levels'] and abs(t['esn0_db'] - 6.7) < 0.5, t" "$T/qam.json" ||
  bad "16QAM: other warnings, or the Es/N0"
"$P" gen -q -o "$T/q1.cf32" -s 48k -n 400000 --carrier "f=300,rs=12k,timing=0,diff,seed=3" \
  --esn0 25 || bad "gen (QPSK, 25 dB) failed"
"$P" demod -q -i "$T/q1.cf32" -s 48k -r 12k -o "$T/q1.bits" --report "$T/q1.json" ||
  bad "demod (QPSK, 25 dB) failed"
report_has "$T/q1.json" ok || bad "QPSK at 25 dB: warned"
# ... and at 9 dB, where the demodulator's own test of its blocks does not see the levels (it
# needs ~15 dB for 16QAM): the modulation check's c42 does (power_levels); 64QAM (4 s + 2 s' + s'')
# too; QPSK and pi/4-QPSK (read with --pi4) at 8 dB: none
for c in "16QAM:f=300,rs=12k,timing=0,diff,seed=3 f=300,rs=12k,timing=0,power=-6.0206,diff,seed=9" \
  "64QAM:f=300,rs=12k,timing=0,diff,seed=4 f=300,rs=12k,timing=0,power=-6.0206,diff,seed=8 f=300,rs=12k,timing=0,power=-12.0412,diff,seed=5" \
  "QPSK:f=300,rs=12k,rolloff=0.2,diff,seed=6" "pi4:f=300,rs=12k,rolloff=0.5,diff,pi4,seed=7"; do
  name=${c%%:*} args=() x=()
  for k in ${c#*:}; do args+=(--carrier "$k"); done
  [ "$name" = pi4 ] && x=(--pi4)
  e=9
  case $name in QPSK | pi4) e=8 ;; esac
  "$P" gen -q -o "$T/lv.cf32" -s 48k -n 100000 "${args[@]}" --esn0 "$e" --noise-seed 3 ||
    bad "gen ($name) failed"
  out=$("$P" demod -i "$T/lv.cf32" -s 48k -r 12k "${x[@]}" -o "$T/lv.bits" --report "$T/lv.json" 2>&1) ||
    bad "demod ($name) failed: $out"
  case $name in
  *QAM)
    echo "$out" | grep -q "warning: the symbols' power lies on several levels" ||
      bad "$name at $e dB: no power levels warning: '$out'"
    report_has "$T/lv.json" warning power_levels || bad "$name at $e dB: report"
    ;;
  *) report_has "$T/lv.json" ok || bad "$name at $e dB: warned: '$out'" ;;
  esac
done
# ... and in `channelize` recordings (their noise falls beyond the channel's passband, to the
# stop band; the floor read over the whole channel lay far below the noise under the carrier and
# every QPSK carrier drew power_levels): QPSK 0.4 of a spacing off its channel's centre (its edge
# beyond the channel's passband), none; 16QAM on a channel's centre, power_levels; 8 dB
"$P" gen -q -o "$T/chw.cf32" -s 409600 -n 1000000 --carrier f=158720,rs=2400,diff,seed=4 \
  --carrier f=-51200,rs=2400,timing=0,diff,seed=5 \
  --carrier f=-51200,rs=2400,timing=0,diff,seed=6,power=-6.0206 --esn0 8 || bad "gen (channels) failed"
"$P" channelize -q -i "$T/chw.cf32" -s 409600 -K 32 -c 12,28 -o "$T/chw" || bad "channelize failed"
for c in 12 28; do
  f=-51200
  [ $c = 12 ] && f=158720
  "$P" demod -q -i "$T/chw/ch00$c.sigmf-meta" -r 2400 --carrier-freq $f -o "$T/chw.bits" \
    --report "$T/chw.json" || bad "demod (channel $c) failed"
  if [ $c = 12 ]; then
    python3 -c "import json,sys; w=[x['code'] for x in json.load(open(sys.argv[1]))['totals']['warnings']]
assert 'power_levels' not in w and 'beyond_passband' in w, w" "$T/chw.json" ||
      bad "QPSK past a channelize recording's passband: power_levels, or not beyond_passband"
  else
    report_has "$T/chw.json" warning power_levels || bad "16QAM in a channelize recording: not warned"
  fi
done
# ... the same QPSK carrier from a channel cut at one spacing (--cutoff 1): inside its passband, ok
"$P" channelize -q -i "$T/chw.cf32" -s 409600 -K 32 -c 12 --cutoff 1 -o "$T/chw1" ||
  bad "channelize --cutoff 1 failed"
"$P" demod -q -i "$T/chw1/ch0012.sigmf-meta" -r 2400 --carrier-freq 158720 -o "$T/chw.bits" \
  --report "$T/chw.json" || bad "demod (channel 12, cut-off 1) failed"
report_has "$T/chw.json" ok || bad "QPSK inside a wider channel's passband: warned"
# MSK read as QPSK at its bit rate (a quarter turn every symbol), 20 dB: the warning
# quarter_steps alone, every pair of bits opposite
python3 - "$T/msk.cf32" <<'EOF' || bad "writing the MSK signal failed"
import math, random, struct, sys
random.seed(5)
sps, nsym, sd = 4, 48000, math.sqrt(4 * 10 ** -2.0 / 2)  # Es/N0 20 dB, unit power
ph, out = 0.0, bytearray()
for k in range(nsym):
    step = (math.pi / 2 / sps) * random.choice((-1, 1))
    for _ in range(sps):
        ph += step
        out += struct.pack('<ff', math.cos(ph) + random.gauss(0, sd), math.sin(ph) + random.gauss(0, sd))
open(sys.argv[1], 'wb').write(out)
EOF
out=$("$P" demod -i "$T/msk.cf32" -s 48k -r 12k -o "$T/msk.bits" --report "$T/msk.json" 2>&1) ||
  bad "demod (MSK) failed: $out"
echo "$out" | grep -q "warning: every symbol turns by a quarter turn" ||
  bad "MSK: no quarter steps warning: '$out'"
python3 - "$T/msk.json" "$T/msk.bits" <<'EOF' || bad "MSK: report or bits"
import json, sys
t = json.load(open(sys.argv[1]))['totals']
b = open(sys.argv[2], 'rb').read()
assert [w['code'] for w in t['warnings']] == ['quarter_steps'], t
opp = sum(b[i] != b[i + 1] for i in range(2, len(b) - 1, 2))
assert opp > 0.99 * (len(b) // 2 - 1), opp
EOF
# no carrier: noise only (the carrier muted throughout)
"$P" gen -q -o "$T/z.cf32" -s 100k -n 300000 --carrier "f=1k,rs=25k,diff" --esn0 10 \
  --gap 0:3:noise || bad "gen (noise only) failed"
out=$("$P" demod -i "$T/z.cf32" -s 100k -r 25k -o "$T/z.bits" --report "$T/z.json" 2>&1) ||
  bad "demod (noise only) failed: $out"
echo "$out" | grep -q "warning: most of the input had no" || bad "noise only: no warning: '$out'"
echo "$out" | grep -q "without signal" || bad "noise only: summary lacks the count: '$out'"
report_has "$T/z.json" warning no_signal || bad "noise only: report"
python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
n = sum(1 for b in d['blocks'] if not b['signal_present'] and 'no_signal' in b['flags'])
assert n == d['totals']['blocks_no_signal'] >= 0.95 * len(d['blocks']), n" "$T/z.json" ||
  bad "noise only: block flags"
# a gap of zeros in a strong carrier: the blocks inside are flagged, the summary is not a warning
"$P" gen -q -o "$T/g.cf32" -s 100k -n 800000 --carrier "f=1k,rs=25k,timing=0.4,diff,seed=6" --esn0 20 \
  --gap 3:1 --bits "$T/g" || bad "gen (gap) failed"
"$P" demod -q -i "$T/g.cf32" -s 100k -r 25k -o "$T/g.bits" --report "$T/g.json" ||
  bad "demod (gap) failed"
python3 - "$T/g.json" "$T/g.bits" "$T/g0.bits" <<'EOF' || bad "gap: flags or bits"
import json, sys
d = json.load(open(sys.argv[1])); got = open(sys.argv[2], 'rb').read(); ref = open(sys.argv[3], 'rb').read()
rs = 25000
for b in d['blocks']:
    s0, s1 = (b['time_s'] - 256 / rs) * rs, (b['time_s'] + 256 / rs) * rs  # the block's symbols
    inside = s0 > 3 * rs + 20 and s1 < 4 * rs - 20
    outside = s1 < 3 * rs - 20 or s0 > 4 * rs + 20
    assert not inside or not b['signal_present'], b
    assert not outside or b['signal_present'], b
assert d['totals']['status'] == 'ok' and d['totals']['blocks_no_signal'] > 0, d['totals']
# every bit outside the gap (and 20 symbols either side) is the generator's
bad = [i for i in range(2, len(got)) if got[i] != ref[i] and not (3 * rs - 20 <= i // 2 <= 4 * rs + 20)]
assert len(got) <= len(ref) and not bad, bad[:10]
EOF
# a DC offset 10 dB above the carrier, the carrier at 0 Hz: bit exact at 20 dB
"$P" gen -q -o "$T/dc.cf32" -s 100k -n 400000 --carrier "f=0,rs=25k,timing=0.4,diff,seed=8" --esn0 20 \
  --dc 10,phase=0.7 --bits "$T/dc" || bad "gen (DC) failed"
"$P" demod -q -i "$T/dc.cf32" -s 100k -r 25k -o "$T/dc.bits" --report "$T/dc.json" ||
  bad "demod (DC) failed"
nb=$(size "$T/dc.bits")
cmp -s -i 2 -n $((nb - 2)) "$T/dc.bits" "$T/dc0.bits" || bad "DC +10 dB: bits differ from the generator's"
report_has "$T/dc.json" ok || bad "DC: report"
# a cu8 file read as cf32 (a wrong -F) gives NaN and infinite samples: counted, warned
out=$("$P" demod -i "$T/n.cu8" -F cf32 -s 500k -r 125k -o "$T/w.bits" --report "$T/w.json" 2>&1)
echo "$out" | grep -q "NaN or infinite" || bad "wrong -F: no non-finite count or warning: '$out'"
python3 -c "
import json,sys
t=json.load(open(sys.argv[1]))['totals']
assert t['nonfinite_samples'] > 8 and 'nonfinite' in [w['code'] for w in t['warnings']] and t['status'] == 'warning', t" "$T/w.json" ||
  bad "wrong -F: report"
# the acquisition range: below Rs/8 accepted, Rs/8 itself refused (as the help says)
"$P" demod -q -i "$T/p.sigmf-meta" -r 25k --pilots 256:16 --max-cfo 3124 -o "$T/x.bits" ||
  bad "--max-cfo 3124 at 25 kBd refused"
expect_fail "max-cfo" "Rs/8" -- -i "$T/p.sigmf-meta" -r 25k --max-cfo 3125 -o "$T/x"
"$P" demod --help | grep -q "below RS/8" || bad "--help does not state the --max-cfo limit"
# a configuration that needs more memory than the limit is refused at once
t0=$(date +%s)
expect_fail "CFO span" "MB" -- -i "$T/d.cf32" -s 12.8k -r 200 --cfo-span 4194304 -o "$T/x"
[ $(($(date +%s) - t0)) -le 5 ] || bad "--cfo-span 4194304: the refusal took more than 5 s"
# the shortest span holds 4 blocks: 1024 symbols with blocks of 256, not of the default 512
expect_fail "fewer than 4 blocks" "shorter --block" -- -i "$T/d.cf32" -s 12.8k -r 3200 --cfo-span 1024 -o "$T/x"
expect_fail "1024..4194304" -- -i "$T/d.cf32" -s 12.8k -r 3200 --cfo-span 1000 -o "$T/x"
"$P" demod -q -i "$T/d.cf32" -s 12.8k -r 3200 --block 256 --cfo-span 1024 -o "$T/x.bits" ||
  bad "--block 256 --cfo-span 1024 refused"

# outputs that would overwrite each other or the input (by name, a hard link, a link not yet
# pointing at anything) are refused before anything is written
expect_fail "same file" -- -i "$T/d.cf32" -s 12.8k -r 2400 -o "$T/al" --llr "$T/al"
expect_fail "same file" -- -i "$T/d.cf32" -s 12.8k -r 2400 -o "$T/al" --report "$T/al"
expect_fail "is the input" -- -i "$T/d.cf32" -s 12.8k -r 2400 -o "$T/d.cf32"
ln -f "$T/d.cf32" "$T/hard.cf32"
expect_fail "is the input" -- -i "$T/d.cf32" -s 12.8k -r 2400 -o "$T/hard.cf32"
ln -sf "$T/al.bits" "$T/al.link"
expect_fail "same file" -- -i "$T/d.cf32" -s 12.8k -r 2400 -o "$T/al.bits" --llr "$T/al.link"
[ -e "$T/al" ] || [ -e "$T/al.bits" ] && bad "a refused invocation created an output"

# no output depends on memory the demodulator did not write: glibc's MALLOC_PERTURB_ fills every
# allocation with a byte pattern, so a read of an unwritten work buffer (they are not cleared at
# create) changes bits or LLRs between the patterns; noisy inputs, one and several workers,
# differential and pilots, short read blocks (the stream's tails and a short last CFO span)
"$P" gen -q -o "$T/mp.cf32" -s 100k -n 300011 --carrier "f=2k,rs=25k,timing=0.3,ppm=30,diff,seed=12" \
  --esn0 6 || bad "gen (perturbed memory) failed"
for args in "-i $T/mp.cf32 -t 1" "-i $T/mp.cf32 -t 3 --read-block 7777" \
  "-i $T/p.sigmf-data -F ci16 -t 2 --pilots 256:16"; do
  for pat in 0 165 90; do
    # shellcheck disable=SC2086
    MALLOC_PERTURB_=$pat "$P" demod -q $args -s 100k -r 25k -o "$T/mp$pat.bits" \
      --llr "$T/mp$pat.llr" || bad "demod $args with MALLOC_PERTURB_=$pat failed"
  done
  for pat in 165 90; do
    cmp -s "$T/mp0.bits" "$T/mp$pat.bits" && cmp -s "$T/mp0.llr" "$T/mp$pat.llr" ||
      bad "demod $args: the output depends on unwritten memory (MALLOC_PERTURB_=$pat)"
  done
done

# audio_wav CF32 WAV: the real part of a 48 kHz cf32 file as a one-channel 16-bit WAV (an SSB
# receiver's audio)
audio_wav() {
  PYTHONPATH="$(dirname "$0")/support" python3 - "$1" "$2" <<'EOF'
import array, sys
from wav_file import write_wav
x = array.array("f")
x.frombytes(open(sys.argv[1], "rb").read())
data = array.array("h", [max(-32767, min(32767, int(v * 8000))) for v in x[0::2]]).tobytes()
write_wav(sys.argv[2], 1, 16, data, rate=48000, channels=1)
EOF
}
# --carrier-freq: a carrier off the centre mixed to 0 Hz first; the same bits in the -f frame and
# for any --read-block; an audio recording (real samples, one-channel WAV) whose carrier sits at
# 1800 Hz of audio; a frequency outside the band refused
"$P" gen -q -o "$T/off.cf32" -s 48k -d 10 --carrier f=5k,rs=2400,diff --esn0 15 --bits "$T/toff" ||
  bad "gen (off centre) failed"
"$P" demod -q -i "$T/off.cf32" -s 48k -r 2400 -o "$T/off1.bits" --carrier-freq 5k \
  --report "$T/off.json" || bad "demod --carrier-freq 5k failed"
out=$("$P" ber "$T/toff0.bits" "$T/off1.bits")
grep -q "compared 48000 bits: 0 errors" <<<"$out" || bad "--carrier-freq 5k: $out"
python3 -c "import json,sys; sys.exit(json.load(open(sys.argv[1]))['config']['mix_hz'] != 5000)" \
  "$T/off.json" || bad "--carrier-freq: the report's mix_hz"
"$P" demod -q -i "$T/off.cf32" -s 48k -f 7M -r 2400 -o "$T/off2.bits" --carrier-freq 7.005M \
  --read-block 1000 || bad "demod --carrier-freq 7.005M -f 7M failed"
cmp -s "$T/off1.bits" "$T/off2.bits" || bad "--carrier-freq: the -f frame or --read-block changed bits"
"$P" demod -q -i "$T/off.cf32" -s 48k -r 2400 -o "$T/off3.bits" 2>/dev/null
out=$("$P" ber "$T/toff0.bits" "$T/off3.bits" 2>&1)
grep -q "BER [0-4]\.[0-9]*e-01" <<<"$out" || bad "the carrier 5 kHz off demodulated without --carrier-freq: $out"
"$P" gen -q -o "$T/au.cf32" -s 48k -d 10 --carrier f=1800,rs=1200,diff --esn0 20 --bits "$T/tau" ||
  bad "gen (audio) failed"
audio_wav "$T/au.cf32" "$T/audio.wav" || bad "writing the audio WAV failed"
"$P" demod -q -i "$T/audio.wav" -r 1200 -o "$T/au.bits" --carrier-freq 1800 ||
  bad "demod of the audio WAV failed"
out=$("$P" ber "$T/tau0.bits" "$T/au.bits")
grep -q "compared 24000 bits: 0 errors" <<<"$out" || bad "audio WAV at 1800 Hz: $out"
# a kiwirecorder lower sideband's audio (..._lsb.wav: its spectrum mirrored, the name's frequency
# its 0 Hz): a carrier 1800 Hz below the tuned frequency, read mirrored back, gives gen's bits
"$P" gen -q -o "$T/lsb.cf32" -s 48k -d 10 --carrier f=-1800,rs=1200,diff --esn0 20 --bits "$T/tlsb" ||
  bad "gen (LSB audio) failed"
audio_wav "$T/lsb.cf32" "$T/20261204T093015Z_7100000_lsb.wav" ||
  bad "writing the LSB audio WAV failed"
"$P" info "$T/20261204T093015Z_7100000_lsb.wav" | grep -q "^spectrum *mirrored" ||
  bad "info: the LSB audio not said mirrored"
"$P" demod -q -i "$T/20261204T093015Z_7100000_lsb.wav" -r 1200 -o "$T/lsb.bits" \
  --carrier-freq 7098200 || bad "demod of the LSB audio WAV failed"
nb=$(size "$T/lsb.bits")
[ "$nb" -ge 23000 ] && cmp -s -i 2 -n $((nb - 2)) "$T/lsb.bits" "$T/tlsb0.bits" ||
  bad "LSB audio at 7098200 Hz: bits differ from the generator's"
"$P" demod -q -i "$T/off.cf32" -s 48k -r 2400 -o "$T/e.bits" --carrier-freq 30k 2>"$T/err"
[ $? -eq 1 ] && grep -q "outside its band of +-24000 Hz" "$T/err" ||
  bad "--carrier-freq outside the band: $(cat "$T/err")"

[ $fail -eq 0 ] && echo "cli_demod: all checks passed"
exit $((fail > 0))
