#!/usr/bin/env bash
# session 28, device call 2: KiwiSDR file on the CUDA and CPU channelizer vs the raw file (timing)
set -u
cd "$(dirname "$0")/.."
P=build-gpu/polyrx
S=/dev/shm/k28; mkdir -p $S
$P gen -q -o $S/h.ci16 -F ci16 -s 12001.135 -n 64M --carrier f=100,rs=1200,diff --esn0 15
python3 sess28/mkkiwi.py $S/h.ci16 $S/20261204T112233Z_7100000_iq.wav 12001.135 -1
uptime
for round in 1 2 3 4 5; do
  for in in raw kiwi; do
    if [ $in = raw ]; then a=(-i $S/h.ci16 -F ci16 -s 12001.135 -f 7.1M); else a=(-i $S/20261204T112233Z_7100000_iq.wav); fi
    for be in cuda cpu; do
      rm -rf $S/o
      t0=$(date +%s%N)
      $P channelize -q "${a[@]}" --backend $be -K 64 -c 0-7 -o $S/o || echo FAIL
      t1=$(date +%s%N)
      echo "round $round $in $be $(( (t1 - t0) / 1000000 )) ms $(md5sum < $S/o/ch0003.sigmf-data | cut -c1-12)"
    done
    t0=$(date +%s%N); $P info "${a[@]:0:2}" >/dev/null; t1=$(date +%s%N); echo "round $round $in info $(( (t1 - t0) / 1000000 )) ms"
  done
done
rm -rf $S
