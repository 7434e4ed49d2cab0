#!/usr/bin/env bash
# Several reader threads (POLYRX_READERS, positional reads of a regular file; the CUDA backends'
# default) give the same outputs as the one sequential reader, byte for byte: `polyrx channelize`
# on a raw ci16 file, a SigMF recording, a SigMF archive and a cf32 file with non-finite samples
# (their count in the metadata), in small blocks; `polyrx rx` bits and LLRs; a file that ends
# inside a sample fails the same way with the same complete samples written; standard input
# keeps the one reader and the same output.
set -u
P=${1:?usage: cli_readers.sh PATH_TO_POLYRX}
. "$(dirname "$0")/support/cli_test.sh"

FS=409600
N=600000 # not a multiple of the blocks below: a short last block
"$P" gen -q -o "$T/x.ci16" -F ci16 -s $FS -n $N --carrier f=32000,rs=2400,diff \
  --carrier f=-49600,rs=2400,diff,power=-3 --esn0 25 || bad "gen (raw) failed"
"$P" gen -q -o "$T/r.sigmf-meta" -F ci16 -s $FS -n $N --carrier f=32000,rs=2400,diff \
  --esn0 25 || bad "gen (SigMF) failed"
"$P" gen -q -o "$T/a.sigmf" -F ci16 -s $FS -n $N --carrier f=32000,rs=2400,diff \
  --esn0 25 || bad "gen (archive) failed"

# the channel recordings' data files and their sample counts must match between two runs
same_channels() { # DIR_A DIR_B WHAT
  local f n=0
  for f in "$1"/ch*.sigmf-data; do
    n=$((n + 1))
    cmp -s "$f" "$2/$(basename "$f")" || bad "$3: $(basename "$f") differs between 1 and 4 readers"
  done
  [ "$n" -gt 0 ] || bad "$3: no recordings written"
  python3 - "$1" "$2" <<'EOF' || bad "$3: metadata counts differ"
import glob, json, os, sys
a, b = sys.argv[1:]
for m in sorted(glob.glob(a + "/ch*.sigmf-meta")):
    ga = json.load(open(m))["global"]
    gb = json.load(open(os.path.join(b, os.path.basename(m))))["global"]
    for k in ("polyrx:input_samples", "polyrx:nonfinite_input_samples", "polyrx:power_dbfs"):
        if ga.get(k) != gb.get(k):
            sys.exit(1)
EOF
}

chan() { # READERS INPUT OUTDIR [options]
  local n=$1 in=$2 out=$3
  shift 3
  POLYRX_READERS=$n "$P" channelize -q -i "$in" -K 64 -c 0-7 --block 10000 -o "$out" "$@"
}
k=0
for in in x.ci16 r.sigmf-meta a.sigmf; do
  k=$((k + 1))
  opt=()
  [ "$in" = x.ci16 ] && opt=(-F ci16 -s $FS)
  chan 1 "$T/$in" "$T/c1_$k" "${opt[@]}" || bad "channelize $in, 1 reader failed"
  chan 4 "$T/$in" "$T/c4_$k" "${opt[@]}" || bad "channelize $in, 4 readers failed"
  same_channels "$T/c1_$k" "$T/c4_$k" "channelize $in"
done

# cf32 with non-finite samples: they are zeroed and counted block by block by the readers
"$P" gen -q -o "$T/f.cf32" -s $FS -n 200000 --carrier f=32000,rs=2400 --esn0 25 || bad "gen cf32"
python3 - "$T/f.cf32" <<'EOF'
import struct, sys
with open(sys.argv[1], "r+b") as f:
    for i, v in ((5, float("nan")), (12345, float("inf")), (77777, float("-inf")), (150001, float("nan"))):
        f.seek(8 * i)
        f.write(struct.pack("<f", v))
EOF
chan 1 "$T/f.cf32" "$T/f1" -s $FS || bad "channelize cf32, 1 reader failed"
chan 4 "$T/f.cf32" "$T/f4" -s $FS || bad "channelize cf32, 4 readers failed"
same_channels "$T/f1" "$T/f4" "channelize cf32 with NaN/inf"
python3 - "$T/f4" <<'EOF' || bad "cf32: the non-finite samples were not counted (4 expected)"
import glob, json, sys
g = json.load(open(sorted(glob.glob(sys.argv[1] + "/ch*.sigmf-meta"))[0]))["global"]
sys.exit(0 if g.get("polyrx:nonfinite_input_samples") == 4 else 1)
EOF

# standard input: the one reader, the same channels
POLYRX_READERS=4 "$P" channelize -q -i - -F ci16 -s $FS -K 64 -c 0-7 --block 10000 \
  -o "$T/s4" <"$T/x.ci16" || bad "channelize from standard input failed"
same_channels "$T/c1_1" "$T/s4" "channelize from standard input"

# a file that ends inside a sample: the same error, the same complete samples written
head -c $((4 * 123457 + 2)) "$T/x.ci16" >"$T/cut.ci16"
rc1=0 rc4=0
chan 1 "$T/cut.ci16" "$T/t1" -F ci16 -s $FS 2>"$T/t1.err" || rc1=$?
chan 4 "$T/cut.ci16" "$T/t4" -F ci16 -s $FS 2>"$T/t4.err" || rc4=$?
[ "$rc1" != 0 ] && [ "$rc1" = "$rc4" ] || bad "partial sample: exit codes $rc1 and $rc4"
grep -q "ends inside a sample" "$T/t4.err" || bad "partial sample: $(cat "$T/t4.err")"
cmp -s "$T/t1.err" "$T/t4.err" || bad "partial sample: messages differ: $(cat "$T/t1.err" "$T/t4.err")"
same_channels "$T/t1" "$T/t4" "partial sample"

# rx: the same bits and LLRs with 4 readers
RX=(-F ci16 -s $FS -K 64 --carrier f=32000,rs=2400,diff --carrier f=-49600,rs=2400,diff --llr
  --read-block 50000)
POLYRX_READERS=1 "$P" rx -q -i "$T/x.ci16" "${RX[@]}" -o "$T/rx1" >/dev/null || bad "rx, 1 reader"
POLYRX_READERS=4 "$P" rx -q -i "$T/x.ci16" "${RX[@]}" -o "$T/rx4" >/dev/null || bad "rx, 4 readers"
for f in c0.bits c1.bits c0.llr c1.llr; do
  [ -s "$T/rx1/$f" ] || bad "rx: $f is empty"
  cmp -s "$T/rx1/$f" "$T/rx4/$f" || bad "rx: $f differs between 1 and 4 readers"
done

exit $((fail > 0))
