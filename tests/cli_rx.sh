#!/usr/bin/env bash
# polyrx rx: carriers made by polyrx gen come back with exactly the symbols sent (a raw file,
# standard input and SigMF give the same bits, with one writer thread or several, a full disk one
# error line); --truth counts the errors that an independent
# count of the files gives; the report has its fields; the locked fraction counts no block of a
# carrier whose clock is beyond the supported range; packed bits and LLRs are consistent; bad
# carrier specifications (outside the band, too wide, missing rs, a key of gen only) give one
# clear line and exit code 2; --detect finds the carriers above 10 dB (and receives them with
# the bits sent) and nothing in pure noise.
set -u
P=${1:?usage: cli_rx.sh PATH_TO_POLYRX}
. "$(dirname "$0")/support/cli_test.sh"

FS=409600 # K = 64: spacing 6400 Hz, 12800 Hz per channel
N=1228800 # 3 s, a multiple of D = 32
C0="f=32000,rs=2400,diff,timing=0.3"                        # on a channel centre
C1="f=-49600,rs=2400,diff,ppm=-300,power=-3"                # a quarter between centres
C2="f=99200,rs=2400,pilots=64:8,power=-6,phase=1,timing=0.7" # half way between centres
C3="f=-160k,rs=2400,diff,power=-22"                         # weak: Es/N0 8 dB
"$P" gen -q -o "$T/x.cf32" -s $FS -n $N --carrier "$C0" --carrier "$C1" --carrier "$C2" \
  --carrier "$C3" --esn0 30 --bits "$T/tx" || bad "gen failed"
RX=(-K 64 --carrier f=32000,rs=2400 --carrier f=-49600,rs=2400,diff
  --carrier f=99200,rs=2400,pilots=64:8 --carrier f=-160k,rs=2400)
"$P" rx -q -i "$T/x.cf32" -s $FS "${RX[@]}" -o "$T/a" --truth "$T/tx" --report "$T/a.json" \
  --llr >"$T/a.txt" || bad "rx (file) failed"

# symbols centred before the window's end (N - sps/16): symbol n at (n + timing) sps
expect_bits() { # N FS RS TIMING PPM PERIOD LEN
  python3 - "$@" <<'EOF'
import math, sys
n, fs, rs, tau, ppm, P, L = map(float, sys.argv[1:])
sps = fs / (rs * (1 + ppm * 1e-6))
s = math.ceil((n - fs / rs / 16) / sps - tau)
if P > 0:
    s -= int(s // P) * L + min(s % P, L)
print(int(2 * s))
EOF
}
size() { stat -c %s "$1"; }
# pycheck WHAT <<'EOF' ... EOF: runs the python checker on standard input with json, os, sys, T
# (the scratch directory) and check(cond, what) defined; a failed check, or a crash, is one
# `bad "WHAT: ..."`
pycheck() {
  { printf '%s\n' "import json, os, sys" "T = sys.argv[1]" "def check(cond, what):" \
    "    if not cond:" "        sys.exit(what)"; cat; } | python3 - "$T" 2>"$T/py.err" ||
    bad "$1: $(cat "$T/py.err")"
}
want=("$(expect_bits $N $FS 2400 0.3 0 0 0)" "$(expect_bits $N $FS 2400 0 -300 0 0)"
  "$(expect_bits $N $FS 2400 0.7 0 64 8)" "$(expect_bits $N $FS 2400 0 0 0 0)")
for c in 0 1 2; do
  nb=$(size "$T/a/c$c.bits")
  [ "$nb" = "${want[$c]}" ] || bad "carrier $c: $nb bits, expected ${want[$c]} (the symbols sent)"
  skip=2
  [ $c = 2 ] && skip=0 # pilots: every bit counts; differential: the first symbol carries none
  cmp -s -i $skip -n $((nb - skip)) "$T/a/c$c.bits" "$T/tx$c.bits" ||
    bad "carrier $c: bits differ from the generator's"
  [ "$(size "$T/a/c$c.llr")" = $((nb * 4)) ] || bad "carrier $c: LLR file size"
done
[ "$(size "$T/a/c3.bits")" = "${want[3]}" ] || bad "carrier 3: $(size "$T/a/c3.bits") bits"

# the report's fields; --truth errors equal an independent count of the files
pycheck report <<'EOF'
r = json.load(open(T + "/a.json"))
check(r["command"] == "rx" and r["status"] == "ok", "command/status")
check(r["input"]["samples"] == 1228800 and r["input"]["sample_rate"] == 409600, "input")
check(r["receiver"]["channels"] == 64 and r["receiver"]["taps"] == 64 * 14 + 1, "receiver")
cs = r["carriers"]
check(len(cs) == 4, "4 carriers")
want_ch = [5, 56, 16, 39]  # nearest centres: 5, -7.75 -> -8 (56), 15.5 -> 16, -25 -> 39
want_snr = [30, 27, 24, 8]
for i, c in enumerate(cs):
    for k in ("frequency_hz", "channel", "cfo_hz", "esn0_db", "clock_offset_ppm",
              "locked_fraction", "symbols", "bits", "ber", "bit_errors", "ber_theory"):
        check(k in c, "carrier %d: no %s" % (i, k))
    check(c["channel"] == want_ch[i], "carrier %d: channel %s" % (i, c["channel"]))
    check(abs(c["esn0_db"] - want_snr[i]) < 1, "carrier %d: Es/N0 %s" % (i, c["esn0_db"]))
    check(c["locked_fraction"] == 1 and c["warnings"] == [], "carrier %d: lock" % i)
    got = open("%s/a/c%d.bits" % (T, i), "rb").read()
    tx = open("%s/tx%d.bits" % (T, i), "rb").read()
    skip = 0 if i == 2 else 2
    e = sum(a != b for a, b in zip(got[skip:], tx[skip:len(got)]))
    check(c["bit_errors"] == e and c["bits"] == len(got), "carrier %d: %s errors, counted %d" % (i, c["bit_errors"], e))
    check(abs(c["ber"] - e / (len(got) - skip)) < 1e-12, "carrier %d: ber" % i)
check(cs[3]["bit_errors"] > 0 and cs[3]["ber"] < 3 * cs[3]["ber_theory"] + 1e-3, "weak carrier BER %s" % cs[3]["ber"])
check(abs(cs[1]["clock_offset_ppm"] + 300) < 10, "carrier 1 clock")
t = r["totals"]
for k in ("samples", "elapsed_s", "input_rate_sps", "realtime_factor"):
    check(k in t, "totals: no " + k)
check(all(k in t["time_s"] for k in ("channelizer", "demodulators", "other")), "time split")
EOF
grep -q "BER" "$T/a.txt" && [ "$(grep -c '^ *[0-9] ' "$T/a.txt")" = 4 ] ||
  bad "the summary table: $(cat "$T/a.txt")"

# the locked fraction counts the blocks with a signal followed at its symbol rate: a clock of
# 3000 ppm is followed (all locked); one of 8000 ppm, beyond the supported 5000, or a carrier
# sent at 2460 Bd for 2400 (+2.5 %) has a signal in every block but none locked
"$P" gen -q -o "$T/w.cf32" -s $FS -n $N --carrier f=32000,rs=2400,diff,ppm=3000 \
  --carrier f=-49600,rs=2400,diff,ppm=8000 --carrier f=99200,rs=2460,diff --esn0 20 ||
  bad "gen (clocks) failed"
"$P" rx -q -i "$T/w.cf32" -s $FS -K 64 --carrier f=32000,rs=2400 --carrier f=-49600,rs=2400 \
  --carrier f=99200,rs=2400 -o "$T/w" --report "$T/w.json" >"$T/w.txt" 2>/dev/null ||
  bad "rx (clocks) failed"
python3 - "$T/w.json" <<'EOF' || bad "locked fraction: $(head -c 3000 "$T/w.json")"
import json, sys
cs = json.load(open(sys.argv[1]))["carriers"]
ok = cs[0]["locked_fraction"] == 1 and cs[0]["blocks_locked"] == cs[0]["blocks"] > 0
for c in cs[1:]:
    ok &= c["blocks"] > 0 and c["blocks_no_signal"] < 0.1 * c["blocks"]  # a signal is seen
    ok &= c["blocks_clock_range"] > 0.9 * c["blocks"] and c["locked_fraction"] < 0.1
    ok &= "clock_range" in [w["code"] for w in c["warnings"]]
for c in cs:
    ok &= c["blocks_locked"] <= c["blocks"] - max(c["blocks_no_signal"], c["blocks_clock_range"])
    ok &= abs(c["locked_fraction"] - c["blocks_locked"] / c["blocks"]) < 1e-12
sys.exit(not ok)
EOF
[ "$(awk '$1 == 1 || $1 == 2 {print $8}' "$T/w.txt")" = "$(printf '0.0%%\n0.0%%')" ] ||
  bad "the table's locked column: $(cat "$T/w.txt")"

# carriers told 0.3 Rs and -0.2 Rs off their true frequency (beyond the +-Rs/8 acquisition
# range: their 4th-power lines alias into it) warn cfo_alias, on standard error too; the one told
# right does not (the backend AUTO picks: the GPU where there is one)
"$P" gen -q -o "$T/al.cf32" -s $FS -n $N --carrier f=32000,rs=2400 --carrier f=-48880,rs=2400 \
  --carrier f=98720,rs=2400 --esn0 20 || bad "gen (aliased) failed"
"$P" rx -q -i "$T/al.cf32" -s $FS -K 64 --carrier f=32000,rs=2400 --carrier f=-49600,rs=2400 \
  --carrier f=99200,rs=2400 -o "$T/al" --report "$T/al.json" >/dev/null 2>"$T/al.err" ||
  bad "rx (aliased) failed"
pycheck "aliased carriers" <<'EOF'
r = json.load(open(T + "/al.json"))
codes = [[w["code"] for w in c["warnings"]] for c in r["carriers"]]
check(codes[0] == [] and all("cfo_alias" in w for w in codes[1:]), "warnings %s" % codes)
check(r["status"] == "warning", "status %s" % r["status"])
check(open(T + "/al.err").read().count("alias of the CFO estimate") == 2, "standard error")
EOF

# standard input, one thread, small reads: the same bits
cat "$T/x.cf32" | "$P" rx -q -i - -F cf32 -s $FS "${RX[@]}" -o "$T/b" --threads 1 \
  --read-block 10000 >/dev/null || bad "rx (stdin) failed"
for c in 0 1 2 3; do
  cmp -s "$T/a/c$c.bits" "$T/b/c$c.bits" || bad "carrier $c: stdin gives other bits than the file"
done
# the bits and LLRs written by three writer threads (each its carriers), and in the serial
# pipeline: the same files
cat "$T/x.cf32" | POLYRX_WRITERS=3 POLYRX_OPENERS=3 "$P" rx -q -i - -F cf32 -s $FS "${RX[@]}" -o "$T/b3" --llr \
  >/dev/null || bad "rx (stdin, 3 writers) failed"
POLYRX_PIPELINE=serial POLYRX_WRITERS=2 "$P" rx -q -i "$T/x.cf32" -s $FS "${RX[@]}" -o "$T/b4" \
  --llr >/dev/null || bad "rx (serial pipeline) failed"
for c in 0 1 2 3; do
  for d in b3 b4; do
    cmp -s "$T/a/c$c.bits" "$T/$d/c$c.bits" && cmp -s "$T/a/c$c.llr" "$T/$d/c$c.llr" ||
      bad "carrier $c: the writers ($d) give other bits or LLRs"
  done
done
# a full disk under one carrier's file (its writes, or its close's): one line that names it, exit
# status 1; a file that cannot be made: one line, exit status 1
mkdir "$T/full" && ln -s /dev/full "$T/full/c2.bits"
POLYRX_OPENERS=2 "$P" rx -q -i "$T/x.cf32" -s $FS "${RX[@]}" -o "$T/full" \
  --report "$T/full.json" >/dev/null 2>"$T/full.err"
rc=$?
[ $rc = 1 ] && [ "$(wc -l <"$T/full.err")" = 1 ] &&
  grep -q "cannot write $T/full/c2.bits: No space left on device" "$T/full.err" ||
  bad "a full disk: status $rc, said $(cat "$T/full.err")"
# the report says so, and what each file holds: the first bits of the carrier's stream
pycheck "full disk report" <<'EOF'
r = json.load(open(T + "/full.json"))
check(r["status"] == "error" and "c2.bits: No space left on device" in r.get("error", ""),
      "status %s error %s" % (r["status"], r.get("error")))
for c in r["carriers"]:
    f = c["file"]
    if c["index"] == 2:
        check("file_bytes" not in c, "c2 on /dev/full given a size")
        continue
    held = open(f, "rb").read()
    full = open(T + "/a/c%d.bits" % c["index"], "rb").read()
    check(c["file_bytes"] == len(held) and held == full[:len(held)],
          "carrier %d: file_bytes %s, file %d bytes, a prefix of the full run's: %s"
          % (c["index"], c.get("file_bytes"), len(held), held == full[:len(held)]))
EOF
# a file-size limit: every carrier's file cut at 8 KiB, the report's sizes those of the files
# (the report through a pipe: the limit is the receiver's process's, not cat's)
(ulimit -f 8 && "$P" rx -q -i "$T/x.cf32" -s $FS "${RX[@]}" -o "$T/lim" --report - \
  2>"$T/lim.err") | cat >"$T/lim.json"
rc=${PIPESTATUS[0]}
[ $rc = 1 ] && grep -q "cannot write $T/lim/c.\.bits: File too large" "$T/lim.err" ||
  bad "a file-size limit: status $rc, said $(cat "$T/lim.err")"
pycheck "file-size limit report" <<'EOF'
r = json.load(open(T + "/lim.json"))
check(r["status"] == "error" and "File too large" in r.get("error", ""), "status/error")
cut = 0
for c in r["carriers"]:
    held = open(c["file"], "rb").read()
    full = open(T + "/a/c%d.bits" % c["index"], "rb").read()
    cut += len(held) < len(full)
    check(c["file_bytes"] == len(held) <= 8192 and held == full[:len(held)],
          "carrier %d: file_bytes %s, file %d bytes" % (c["index"], c["file_bytes"], len(held)))
check(cut > 0, "no file was cut")
EOF
mkdir -p "$T/made/c1.bits" "$T/made/c3.bits"
POLYRX_OPENERS=4 "$P" rx -q -i "$T/x.cf32" -s $FS "${RX[@]}" -o "$T/made" >/dev/null 2>"$T/made.err"
rc=$?
[ $rc = 1 ] && [ "$(wc -l <"$T/made.err")" = 1 ] &&
  grep -q "cannot create $T/made/c1.bits: Is a directory" "$T/made.err" ||
  bad "a file that cannot be made: status $rc, said $(cat "$T/made.err")"

# a recording with I and Q the wrong way round (its spectrum mirrored): --swap-iq gives the bits
# of the original; without it no carrier is where it was listed, and the report says so
python3 - "$T" <<'EOF' || bad "making the swapped recording failed"
import array, sys
x = array.array("f")
with open(sys.argv[1] + "/x.cf32", "rb") as f:
    x.frombytes(f.read())
x[0::2], x[1::2] = x[1::2], x[0::2]
with open(sys.argv[1] + "/swapped.cf32", "wb") as f:
    x.tofile(f)
EOF
"$P" rx -q -i "$T/swapped.cf32" -s $FS "${RX[@]}" -o "$T/sw" --swap-iq --report "$T/sw.json" \
  >/dev/null || bad "rx --swap-iq failed"
for c in 0 1 2 3; do
  cmp -s "$T/sw/c$c.bits" "$T/a/c$c.bits" || bad "--swap-iq: carrier $c's bits differ"
done
"$P" rx -q -i "$T/swapped.cf32" -s $FS "${RX[@]}" -o "$T/nosw" --report "$T/nosw.json" \
  >/dev/null 2>"$T/nosw.err" || bad "rx on the swapped recording failed"
pycheck swap-iq <<'EOF'
sw = json.load(open(T + "/sw.json"))
no = json.load(open(T + "/nosw.json"))
check(sw["input"]["swap_iq"] is True and no["input"]["swap_iq"] is False, "input.swap_iq")
check(no["status"] == "warning" and all(c["locked_fraction"] < 0.5 for c in no["carriers"]),
      "mirrored carriers locked: %s" % [c["locked_fraction"] for c in no["carriers"]])
EOF

# a SigMF recording (ci16, rate and centre from the metadata); packed bits
"$P" gen -q -o "$T/s.sigmf-data" -F ci16 -f 7.1M -s $FS -n $N --carrier "$C0" --carrier "$C1" \
  --carrier "$C2" --carrier "$C3" --esn0 30 || bad "gen SigMF failed"
"$P" rx -q -i "$T/s.sigmf-data" "${RX[@]}" -o "$T/s" --bits packed --report "$T/s.json" \
  >/dev/null || bad "rx (SigMF) failed"
pycheck SigMF/packed <<'EOF'
r = json.load(open(T + "/s.json"))
check(r["input"]["center_frequency"] == 7.1e6 and r["carriers"][0]["frequency_hz"] == 7.132e6, "centre")
for i in range(3):
    un = open("%s/a/c%d.bits" % (T, i), "rb").read()
    pk = open("%s/s/c%d.bits" % (T, i), "rb").read()
    check(len(pk) == (len(un) + 7) // 8, "carrier %d: %d packed bytes for %d bits" % (i, len(pk), len(un)))
    bits = [(pk[j // 8] >> (7 - j % 8)) & 1 for j in range(len(un))]
    skip = 0 if i == 2 else 2
    check(bits[skip:] == list(un[skip:]), "carrier %d: packed bits" % i)
EOF

# --iq: the channel of each carrier as SigMF (rate 2 fs/K, the channel's centre, ceil(N/D)
# samples); the one on a channel centre (no mixer) demodulated by demod gives rx's bits
"$P" rx -q -i "$T/x.cf32" -s $FS -f 1M "${RX[@]}" -o "$T/q" --iq >/dev/null || bad "rx --iq failed"
pycheck --iq <<'EOF'
for c, k in enumerate([5, -8, 16, -25]):
    m = json.load(open("%s/q/c%d.sigmf-meta" % (T, c)))
    check(m["global"]["core:sample_rate"] == 12800 and m["global"]["core:datatype"] == "cf32_le", "carrier %d: global" % c)
    check(m["captures"][0]["core:frequency"] == 1e6 + k * 6400, "carrier %d: frequency %s" % (c, m["captures"][0]))
    check(os.path.getsize("%s/q/c%d.sigmf-data" % (T, c)) == 1228800 // 32 * 8, "carrier %d: size" % c)
EOF
"$P" demod -q -i "$T/q/c0.sigmf-data" -r 2400 -o "$T/q/d0.bits" || bad "demod of --iq failed"
cmp -s "$T/q/d0.bits" "$T/a/c0.bits" || bad "--iq: demod of carrier 0's channel differs from rx"
# a SigMF input's start (capture 0 at sample 0) is the channels' (channel sample j: input jD)
"$P" convert -q -i "$T/x.cf32" -s $FS -f 1M -o "$T/xs.sigmf-data" || bad "convert to SigMF failed"
python3 - "$T/xs.sigmf-meta" <<'EOF' || bad "cannot date the SigMF copy"
import json, sys
m = json.load(open(sys.argv[1]))
m["captures"][0]["core:datetime"] = "2026-12-04T10:00:00.5Z"
json.dump(m, open(sys.argv[1], "w"))
EOF
"$P" rx -q -i "$T/xs" "${RX[@]}" -o "$T/qs" --iq --report "$T/qs.json" >/dev/null ||
  bad "rx --iq on SigMF failed"
pycheck "--iq datetime" <<'EOF'
for c in range(4):
    m = json.load(open("%s/qs/c%d.sigmf-meta" % (T, c)))
    check(m["captures"][0].get("core:datetime") == "2026-12-04T10:00:00.5Z", "carrier %d: %s" % (c, m["captures"][0]))
    check("core:datetime" not in json.load(open("%s/q/c%d.sigmf-meta" % (T, c)))["captures"][0], "raw input: a datetime")
check(json.load(open(T + "/qs.json"))["input"]["datetime"] == "2026-12-04T10:00:00.5Z", "report's input.datetime")
EOF

# --detect: the carriers above 10 dB Es/N0 found (centre within 0.05 rs, rate within 0.1 %) and
# received with the bits sent (differential ones); in pure noise nothing found, exit 0
"$P" rx -q -i "$T/x.cf32" -s $FS -K 64 --detect -o "$T/d" --report "$T/d.json" >/dev/null ||
  bad "rx --detect failed"
pycheck --detect <<'EOF'
r = json.load(open(T + "/d.json"))
sent = [(32000, 0), (-49600, 1), (99200, 2)]  # above 10 dB: offset, generator's carrier
det = r["detected"]
for f, g in sent:
    m = [d for d in det if abs(d["offset_hz"] - f) < 0.05 * 2400]
    check(len(m) == 1, "carrier at %d Hz found %d times: %s" % (f, len(m), det))
    d = m[0]
    check(abs(d["symbol_rate"] / 2400 - 1) < 1e-3, "carrier at %d Hz: rate %s" % (f, d["symbol_rate"]))
    check(d["carrier"] is not None, "carrier at %d Hz not received: %s" % (f, d["note"]))
    if g == 2:
        continue  # pilots: received as differential, its bits are not the sent ones
    got = open("%s/d/c%d.bits" % (T, d["carrier"]), "rb").read()
    tx = open("%s/tx%d.bits" % (T, g), "rb").read()
    listed = len(open("%s/a/c%d.bits" % (T, g), "rb").read())
    check(abs(len(got) - listed) <= 2, "carrier at %d Hz: %d bits, %d listed" % (f, len(got), listed))
    check(got[2:] == tx[2:len(got)], "carrier at %d Hz: bits differ from the sent ones" % f)
EOF
"$P" gen -q -o "$T/n.cf32" -s $FS -n $N --carrier rs=2400,power=-200 --esn0 -170 ||
  bad "gen (noise) failed"
"$P" rx -q -i "$T/n.cf32" -s $FS -K 64 --detect -o "$T/n" --report "$T/n.json" >/dev/null \
  2>"$T/err" || bad "rx --detect (noise) failed: $(cat "$T/err")"
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(r["detected"] != [] or r["carriers"] != [])' \
  "$T/n.json" || bad "--detect in pure noise found: $(head -c 2000 "$T/n.json")"
# --detect-min-esn0: the 8 dB carrier (C3, -160 kHz) reported under a limit of 5 dB and not under
# 12, nothing below the limit, the limit in the report
for lim in 5 12; do
  "$P" rx -q -i "$T/x.cf32" -s $FS -K 64 --detect --detect-min-esn0 $lim -o "$T/d$lim" \
    --report "$T/d$lim.json" >/dev/null 2>"$T/err" ||
    bad "rx --detect --detect-min-esn0 $lim failed: $(cat "$T/err")"
done
pycheck --detect-min-esn0 <<'EOF'
for lim, want in ((5, 1), (12, 0)):
    r = json.load(open("%s/d%d.json" % (T, lim)))
    det = r["detected"]
    check(r["detect_min_esn0_db"] == lim, "limit %d: report says %s" % (lim, r["detect_min_esn0_db"]))
    weak = [d for d in det if abs(d["offset_hz"] + 160000) < 0.05 * 2400]
    check(len(weak) == want, "limit %d: the 8 dB carrier found %d times: %s" % (lim, len(weak), det))
    check(all(d["esn0_db"] >= lim for d in det), "limit %d: weaker ones reported: %s" % (lim, det))
    check(len([d for d in det if d["esn0_db"] >= 12]) == 3, "limit %d: the strong ones: %s" % (lim, det))
EOF

# many carriers against the open-file limit: a soft limit below what 48 carriers' bits and LLRs
# need is raised to it (the same bits as without the limit); a hard limit below it is one clear
# line and exit 1, before any output
head -c $((8 * 204800)) "$T/x.cf32" >"$T/short.cf32"
MANY=()
for i in $(seq -24 23); do MANY+=(--carrier "f=$((i * 6400)),rs=2400,diff"); done
"$P" rx -q -i "$T/short.cf32" -s $FS -K 64 "${MANY[@]}" --llr -o "$T/many0" --report "$T/many0.json" \
  >/dev/null 2>"$T/many0.err" || bad "rx of 48 carriers failed"
# most of them noise: one line for a warning that more than 8 carriers share, with their count
python3 - "$T/many0.json" "$T/many0.err" <<'EOF' || bad "rx of 48 carriers: warnings on standard error"
import json, re, sys
cs = json.load(open(sys.argv[1]))["carriers"]
err = open(sys.argv[2]).read()
quiet = [c["index"] for c in cs if any(w["code"] == "no_signal" for w in c["warnings"])]
assert len(quiet) > 8, quiet
m = re.search(r"warning: (\d+) carriers \(([^)]*)\): most of the input had no", err)
assert m and int(m.group(1)) == len(quiet), (len(quiet), err)
listed = []
for part in m.group(2).split(", "):
    a, _, b = part.partition("-")
    listed += range(int(a), int(b or a) + 1)
assert listed == quiet, (listed, quiet)
assert not re.search(r"warning: carrier \d+ .*most of the input had no", err), err
EOF
(ulimit -Sn 40 && "$P" rx -q -i "$T/short.cf32" -s $FS -K 64 "${MANY[@]}" --llr -o "$T/many1" \
  >/dev/null 2>"$T/err") || bad "rx of 48 carriers under a soft limit of 40: $(tail -1 "$T/err")"
diff -rq "$T/many0" "$T/many1" >/dev/null || bad "rx of 48 carriers: other bits under a soft limit"
(ulimit -n 40 && "$P" rx -q -i "$T/short.cf32" -s $FS -K 64 "${MANY[@]}" -o "$T/many2" \
  >/dev/null 2>"$T/err")
rc=$?
[ $rc = 1 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "needs .* open files, but the limit is 40" "$T/err" &&
  [ -z "$(ls -A "$T/many2" 2>/dev/null)" ] ||
  bad "rx of 48 carriers under a hard limit of 40: exit $rc, $(cat "$T/err"), $(ls "$T/many2" 2>/dev/null | wc -l) files"

# --cfo-span: the demodulators' span, in the report rounded to whole blocks; on steady carriers
# the same bits as the default span
"$P" rx -q -i "$T/short.cf32" -s $FS "${RX[@]}" -o "$T/sp0" >/dev/null 2>&1 || bad "rx (span 8192) failed"
"$P" rx -q -i "$T/short.cf32" -s $FS "${RX[@]}" --cfo-span 5000 -o "$T/sp1" --report "$T/sp1.json" \
  >/dev/null 2>"$T/err" && [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["receiver"]["cfo_span_symbols"])' "$T/sp1.json" 2>/dev/null)" = 5120 ] ||
  bad "rx --cfo-span 5000: report's span not 5120 ($(tail -1 "$T/err"))"
cmp -s "$T/sp0/c0.bits" "$T/sp1/c0.bits" && cmp -s "$T/sp0/c1.bits" "$T/sp1/c1.bits" ||
  bad "rx --cfo-span 5000: other bits on steady carriers at 30 dB"
# the shortest span, 1024 symbols in blocks of 256 (a drifting carrier followed 8 times closer):
# the same bits on steady carriers at 30 dB; without --block 256 the span holds 2 blocks of 512,
# a usage error that says what to give
"$P" rx -q -i "$T/short.cf32" -s $FS "${RX[@]}" --block 256 --cfo-span 1024 -o "$T/sp2" \
  --report "$T/sp2.json" >/dev/null 2>"$T/err" && [ "$(python3 -c 'import json,sys; r = json.load(open(sys.argv[1]))["receiver"]; print(r["block_symbols"], r["cfo_span_symbols"])' "$T/sp2.json" 2>/dev/null)" = "256 1024" ] ||
  bad "rx --block 256 --cfo-span 1024: failed, or the report's span not 1024 ($(tail -1 "$T/err"))"
cmp -s "$T/sp0/c0.bits" "$T/sp2/c0.bits" && cmp -s "$T/sp0/c1.bits" "$T/sp2/c1.bits" ||
  bad "rx --block 256 --cfo-span 1024: other bits on steady carriers at 30 dB"

# bad carrier specifications: one line, exit 2
expect_usage() { # WORDS -- ARGS...
  local want=$1
  shift
  "$P" rx -q -i "$T/x.cf32" -s $FS -K 64 -o "$T/e" "$@" >/dev/null 2>"$T/err"
  local rc=$?
  [ $rc = 2 ] || bad "rx $*: exit $rc, expected 2 ($(cat "$T/err"))"
  [ "$(wc -l <"$T/err")" = 1 ] || bad "rx $*: not one line: $(cat "$T/err")"
  grep -qi -- "$want" "$T/err" || bad "rx $*: '$(cat "$T/err")' does not say '$want'"
}
expect_usage "outside the band" --carrier f=210k,rs=2400
expect_usage "too wide" --carrier f=0,rs=3000
expect_usage "0.6 of the channel spacing" --carrier f=0,rs=2400,rolloff=0.7
expect_usage "symbol rate is missing" --carrier f=1k
expect_usage "not for rx" --carrier f=1k,rs=2400,power=3
expect_usage "no carrier"
expect_usage "-K" --carrier rs=2400 -K 63
expect_usage "without --detect" --carrier f=0,rs=2400 --detect-min-esn0 5
expect_usage "Es/N0 in dB" --detect --detect-min-esn0 loud
expect_usage "CFO span" --carrier f=0,rs=2400 --cfo-span 100
expect_usage "fewer than 4 blocks of 512 symbols.*shorter --block" --carrier f=0,rs=2400 --cfo-span 1024
expect_usage "block size" --carrier f=0,rs=2400 --block 2048
# no sample rate for raw input: a usage error too
"$P" rx -q -i "$T/x.cf32" -K 64 --carrier f=0,rs=2400 -o "$T/e" >/dev/null 2>"$T/err"
rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$T/err")" = 1 ] && grep -q "no sample rate" "$T/err" ||
  bad "rx without -s: exit $rc, expected 2 and one line ($(cat "$T/err"))"

# freq= (absolute: the centre taken off) receives what f= (from the centre) does
"$P" rx -q -i "$T/x.cf32" -s $FS -f 14.2M -K 64 --carrier freq=14.232M,rs=2400 \
  --carrier freq=14.1504M,rs=2400,diff -o "$T/abs" >/dev/null || bad "rx with freq= failed"
for c in 0 1; do
  cmp -s "$T/abs/c$c.bits" "$T/a/c$c.bits" || bad "freq=: carrier $c's bits differ from f='s"
done
"$P" rx -q -i "$T/x.cf32" -s $FS -K 64 --carrier freq=1k,f=1k,rs=2400 -o "$T/e" 2>"$T/err"
[ $? = 2 ] && grep -q "not both" "$T/err" || bad "f= and freq= together: $(cat "$T/err")"


# pi/4-DQPSK beside QPSK: the pi4 carrier's bits exact with the key, its report's modulation; the
# key with pilots is a usage error
"$P" gen -q -o "$T/p4.cf32" -s $FS -n $N --carrier f=32000,rs=2400,diff,pi4,timing=0.3 \
  --carrier f=-49600,rs=2400,diff,power=-3,timing=0.6 --esn0 30 --bits "$T/p4tx" || bad "gen pi4 failed"
"$P" rx -q -i "$T/p4.cf32" -s $FS -K 64 --carrier f=32000,rs=2400,pi4 --carrier f=-49600,rs=2400 \
  -o "$T/p4" --report "$T/p4.json" >/dev/null || bad "rx with a pi4 carrier failed"
for c in 0 1; do
  nb=$(size "$T/p4/c$c.bits")
  cmp -s -i 2 -n $((nb - 2)) "$T/p4/c$c.bits" "$T/p4tx$c.bits" || bad "pi4 scene: carrier $c's bits"
done
pycheck "pi4 report" <<'EOF2'
cs = json.load(open(T + "/p4.json"))["carriers"]
check([c["modulation"] for c in cs] == ["pi4-qpsk", "qpsk"], "modulations")
EOF2
expect_usage "pi/4-QPSK with pilots" --carrier f=0,rs=2400,pi4,pilots=64:8
# --detect tells the pi/4 carrier from the QPSK one and receives each in its mode
"$P" rx -q -i "$T/p4.cf32" -s $FS -K 64 --detect -o "$T/p4d" --report "$T/p4d.json" >/dev/null ||
  bad "rx --detect on the pi4 scene failed"
pycheck "pi4 detect" <<'EOF2'
r = json.load(open(T + "/p4d.json"))
d = sorted(r["detected"], key=lambda d: d["offset_hz"])
check([(round(x["offset_hz"]), x["modulation"]) for x in d] == [(-49600, "qpsk"), (32000, "pi4-qpsk")], d)
for x in d:
    c = r["carriers"][x["carrier"]]
    check(c["modulation"] == x["modulation"] and (",pi4" in c["spec"]) == (x["modulation"] == "pi4-qpsk"), c)
    b = open(T + "/p4d/c%d.bits" % x["carrier"], "rb").read()
    t = open(T + "/p4tx%d.bits" % (1 if x["offset_hz"] < 0 else 0), "rb").read()
    n = min(len(b), len(t))
    check(n > 14000 and b[2:n] == t[2:n], "detected carrier at %g: bits" % x["offset_hz"])
EOF2
# listed in the wrong modulation beside --detect: each such carrier warned (standard error, its
# report's warnings, the status)
"$P" rx -q -i "$T/p4.cf32" -s $FS -K 64 --detect --carrier f=32000,rs=2400 \
  --carrier f=-49600,rs=2400,pi4 -o "$T/p4w" --report "$T/p4w.json" >/dev/null 2>"$T/p4w.err" ||
  bad "rx --detect with carriers listed in the wrong modulation failed"
[ "$(grep -c 'listed as .* but looks like' "$T/p4w.err")" = 2 ] ||
  bad "wrong modulation listed: standard error says $(cat "$T/p4w.err")"
pycheck "pi4 listed wrong" <<'EOF2'
r = json.load(open(T + "/p4w.json"))
codes = [[w["code"] for w in c["warnings"]] for c in r["carriers"]]
check(r["status"] == "warning" and "pi4_qpsk" in codes[0] and "plain_qpsk" in codes[1], codes)
EOF2
# ... and without --detect (the check at the listed places): the same codes, a line each on
# standard error naming the carrier and the fix, the table's mark; listed rightly: no warning
"$P" rx -i "$T/p4.cf32" -s $FS -K 64 --carrier f=32000,rs=2400 --carrier f=-49600,rs=2400,pi4 \
  -o "$T/p4x" --report "$T/p4x.json" >"$T/p4x.out" 2>"$T/p4x.err" ||
  bad "rx with carriers listed in the wrong modulation failed"
grep -q "carrier 0 (f=32000,rs=2400): the carrier looks like pi/4-QPSK.*add pi4 to its --carrier" \
  "$T/p4x.err" && grep -q "carrier 1 (.*): the carrier looks like QPSK.*drop pi4" "$T/p4x.err" ||
  bad "wrong modulation listed, no --detect: standard error says $(cat "$T/p4x.err")"
[ "$(grep -c '  !$' "$T/p4x.out")" = 2 ] || bad "wrong modulation listed: table $(cat "$T/p4x.out")"
pycheck "pi4 listed wrong, no --detect" <<'EOF2'
r = json.load(open(T + "/p4x.json"))
codes = [[w["code"] for w in c["warnings"]] for c in r["carriers"]]
check(r["status"] == "warning" and "pi4_qpsk" in codes[0] and "plain_qpsk" in codes[1], codes)
check(not [w for c in json.load(open(T + "/p4.json"))["carriers"] for w in c["warnings"]
           if w["code"] in ("pi4_qpsk", "plain_qpsk")], "listed rightly: a modulation warning")
check(json.load(open(T + "/p4.json"))["status"] == "ok", "listed rightly: warned")
EOF2
# with --detect, a listed carrier the detector does not report (below its floor here) is checked
# at its place all the same
"$P" gen -q -o "$T/p4l.cf32" -s $FS -n $N --carrier f=32000,rs=2400,diff,pi4 --esn0 9 ||
  bad "gen (weak pi4) failed"
"$P" rx -i "$T/p4l.cf32" -s $FS -K 64 --detect --detect-min-esn0 12 --carrier f=32000,rs=2400 \
  -o "$T/p4l" --report "$T/p4l.json" >/dev/null 2>"$T/p4l.err" || bad "rx --detect (weak pi4) failed"
grep -q "carrier 0 (f=32000,rs=2400): the carrier looks like pi/4-QPSK" "$T/p4l.err" ||
  bad "weak pi4 beside --detect: standard error says $(cat "$T/p4l.err")"
pycheck "pi4 listed, not found by --detect" <<'EOF2'
r = json.load(open(T + "/p4l.json"))
check(r["detected"] == [] and r["status"] == "warning", r["detected"])
check("pi4_qpsk" in [w["code"] for w in r["carriers"][0]["warnings"]], r["carriers"][0]["warnings"])
EOF2

# 16QAM (2 s + s': two QPSK carriers of one timing, 4 : 1 in power) listed as QPSK beside a QPSK
# carrier, 10 dB: the check's c42 warns it power_levels (its demodulator's own test of the blocks
# needs ~15 dB), not the QPSK one; --detect's findings the same
"$P" gen -q -o "$T/qam.cf32" -s $FS -n $N --carrier f=16000,rs=2400,timing=0,diff,seed=3 \
  --carrier f=16000,rs=2400,timing=0,power=-6.0206,diff,seed=9 \
  --carrier f=-24000,rs=2400,power=0.9691,diff,seed=5 --esn0 9.03 || bad "gen (16QAM) failed"
for d in "" --detect; do
  "$P" rx -i "$T/qam.cf32" -s $FS -K 64 --carrier f=16000,rs=2400 --carrier f=-24000,rs=2400 $d \
    -o "$T/qam" --report "$T/qam.json" >"$T/qam.out" 2>"$T/qam.err" || bad "rx (16QAM $d) failed"
  grep -q "carrier 0 (f=16000,rs=2400): the symbols' power lies on several levels" "$T/qam.err" &&
    ! grep -q "carrier 1 " "$T/qam.err" || bad "16QAM $d: standard error says $(cat "$T/qam.err")"
  [ "$(grep -c '  !$' "$T/qam.out")" = 1 ] || bad "16QAM $d: table $(cat "$T/qam.out")"
  pycheck "16QAM listed as QPSK $d" <<'EOF2'
r = json.load(open(T + "/qam.json"))
codes = [[w["code"] for w in c["warnings"]] for c in r["carriers"]]
check(r["status"] == "warning" and codes == [["power_levels"], []], codes)
EOF2
done

# K = 4096 (the check's channels need 8192 samples each: 2^24 kept, from standard input): a pi/4
# carrier listed as QPSK is warned (before: "not checked" with K above 2048)
"$P" gen -q -o - -s 409600 -n 16900000 --carrier f=10000,rs=40,diff,pi4 --esn0 15 |
  "$P" rx -q -i - -s 409600 -K 4096 --carrier f=10000,rs=40 -o "$T/k4" 2>"$T/k4.err" ||
  bad "rx K = 4096 from standard input failed: $(cat "$T/k4.err")"
grep -q "carrier 0 (f=10000,rs=40): the carrier looks like pi/4-QPSK" "$T/k4.err" &&
  ! grep -q "not checked" "$T/k4.err" || bad "K = 4096: standard error says $(cat "$T/k4.err")"

exit $((fail > 0))
