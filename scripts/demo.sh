#!/usr/bin/env bash
# make demo: the seed paper's case end to end on a signal polyrx makes itself.
# A 6.5536 Msps shortwave-like capture (ci16, SigMF) with four 2400-baud QPSK carriers at
# different levels is generated, split into 1024 channels of 6.4 kHz (D = 512, 12.8 kHz per
# channel), and the strongest channels are listed: the carriers must show up in channels
# 100, 237, 700 and 900.
set -euo pipefail
polyrx=${1:-build/polyrx}
out=demo-out
rm -rf "$out"
mkdir -p "$out"

echo "== 1. generate 2 s of a 6.5536 Msps capture centred at 7.1 MHz with 4 QPSK carriers"
"$polyrx" gen -o "$out/capture.sigmf-data" -F ci16 -s 6.5536M -f 7.1M -d 2 \
  --carrier f=640k,rs=2400,diff \
  --carrier f=1.5168M,rs=2400,power=-6,pilots=64:8 \
  --carrier f=-2.0736M,rs=2400,power=-10 \
  --carrier f=-793.6k,rs=2400,power=-20,diff \
  --esn0 20 --bits "$out/tx" --scale 0.04

echo
echo "== 2. channelize: 1024 channels, 2x oversampled (D = 512), 16 taps per channel, 80 dB"
"$polyrx" channelize -i "$out/capture.sigmf-data" -K 1024 -o "$out/channels"
