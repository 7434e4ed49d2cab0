#!/usr/bin/env bash
# make demo: the seed papers' receiver end to end, on a signal polyrx makes itself.
# 1. A 6.5536 Msps shortwave-like capture (ci16 SigMF, 10 s, centred at 7.1 MHz): 48 QPSK
#    carriers at 2400 Bd spread over the band, on channel centres, a quarter, three eighths and
#    half way between centres, Es/N0 from 6 to 30 dB, CFOs up to 0.1 Rs, clock offsets up to
#    +-300 ppm, differential or with pilot words; the sent bits kept.
# 2. `polyrx rx`: 1024 channels of 6.4 kHz, the channel nearest each carrier, a mixer to 0 Hz,
#    the open-loop demodulator; its table (estimates, BER against the sent bits) and throughput.
# 3. Each carrier's BER next to the theory at the Es/N0 it was sent with.
set -euo pipefail
polyrx=${1:-build/polyrx}
out=demo-out
rm -rf "$out"
mkdir -p "$out"

FS=6553600
SP=6400 # channel spacing fs / 1024
# the carriers: one line each, "f cfo esn0 ppm timing mode"; drawn from a Park-Miller generator
# written out here (seed 7, every product exact in a double), not awk's rand(), whose sequence
# differs between awk implementations (mawk, gawk): the scenario is the same on every machine
awk -v sp=$SP 'function uniform() { seed = (seed * 16807) % 2147483647; return seed / 2147483647 }
BEGIN {
  seed = 7
  pos[0] = 0; pos[1] = 0.25; pos[2] = 0.375; pos[3] = 0.5
  for (i = 0; i < 48; i++) {
    k = -480 + 20 * i + int(uniform() * 8)
    f = (k + pos[i % 4]) * sp
    esn0 = i == 0 ? 30 : 6 + (i * 7) % 25
    cfo = int((uniform() - 0.5) * 480)
    ppm = int((uniform() - 0.5) * 600)
    mode = i % 6 == 5 ? "pilots=64:8" : "diff"
    printf "%d %d %d %d %.2f %s\n", f, cfo, esn0, ppm, uniform() * 0.9, mode
  }
}' >"$out/carriers.txt"
gen=()
rx=()
while read -r f cfo esn0 ppm timing mode; do
  gen+=(--carrier "f=$((f + cfo)),rs=2400,power=$((esn0 - 30)),ppm=$ppm,timing=$timing,$mode")
  rx+=(--carrier "f=$f,rs=2400,$mode")
done <"$out/carriers.txt"

echo "== 1. generate: 10 s at 6.5536 Msps, 48 QPSK carriers at 2400 Bd, Es/N0 6..30 dB"
"$polyrx" gen -q -o "$out/capture.sigmf-data" -F ci16 -s 6.5536M -f 7.1M -d 10 "${gen[@]}" \
  --esn0 30 --bits "$out/tx"

echo
echo "== 2. receive: polyrx rx -K 1024 with the 48 carriers' offsets (the CFOs are found)"
"$polyrx" rx -q -i "$out/capture.sigmf-data" -K 1024 "${rx[@]}" -o "$out/rx" --truth "$out/tx" \
  --report "$out/rx.json" >"$out/rx.txt"
echo "its table (estimates per carrier, BER against the sent bits): $out/rx.txt; its throughput:"
tail -n 1 "$out/rx.txt"

echo
echo "== 3. BER against the sent bits, and the theory at the Es/N0 sent (DE-QPSK: 2p(1-p))"
python3 - "$out" <<'EOF'
import json, math, sys
out = sys.argv[1]
sent = [l.split() for l in open(out + "/carriers.txt")]
r = json.load(open(out + "/rx.json"))
sp = 6400.0
print("%3s %11s %-9s %6s %6s %7s %9s %10s %10s" % ("#", "offset Hz", "position", "Es/N0", "est",
      "CFO Hz", "bits", "BER", "theory"))
strong = strong_ok = 0
events = 0.0  # error events the theory expects among the strong carriers
for c, s in zip(r["carriers"], sent):
    esn0 = float(s[2])
    p = 0.5 * math.erfc(math.sqrt(10 ** (esn0 / 10) / 2))
    theory = p if c["ambiguity"] == "pilots" else 2 * p * (1 - p)
    frac = abs(c["offset_hz"] / sp - round(c["offset_hz"] / sp))
    where = {0: "centre", 0.25: "quarter", 0.375: "3/8", 0.5: "half"}.get(round(frac * 8) / 8, "?")
    if esn0 > 12:
        strong += 1
        strong_ok += c["bit_errors"] == 0
        # a differential symbol error costs two decisions, so its bit errors come in pairs
        events += c["bits"] * theory / (1 if c["ambiguity"] == "pilots" else 2)
    print("%3d %+11.0f %-9s %6.1f %6.1f %+7.1f %9d %10.3g %10.3g" % (c["index"], c["offset_hz"],
          where, esn0, c["esn0_db"], c["cfo_hz"], c["bits"], c["ber"], theory))
t = r["totals"]
print("\n%d of %d carriers above 12 dB Es/N0 without a bit error (the theory expects %.2f error"
      " events among them: at 13 dB one in a few runs)" % (strong_ok, strong, events))
print("throughput: %.1f Msamples/s, %.1f x real time (%s, channelizer %.2f s, demodulators %.2f s)"
      % (t["input_rate_sps"] / 1e6, t["realtime_factor"], r["receiver"]["backend"],
         t["time_s"]["channelizer"], t["time_s"]["demodulators"]))
EOF
echo
echo "outputs in $out/: capture.sigmf-*, rx/c*.bits, rx.txt and rx.json (the receiver's table and"
echo "report), tx*.bits (the sent bits), carriers.txt (f, CFO, Es/N0, ppm, timing, mode per carrier)"
