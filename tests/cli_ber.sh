#!/usr/bin/env bash
# polyrx ber: alignment by shift (near 0, and a part deep inside the other stream), exact error
# counts, and bad input.
set -u
polyrx=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }

# reference: 20000 seeded random bits; received: delayed by 10 bits, 37 known bits flipped,
# and 100 bits missing at the end
python3 - "$dir" <<'PY'
import random, sys
d = sys.argv[1]
r = random.Random(7)
ref = bytes(r.getrandbits(1) for _ in range(20000))
rx = bytearray([1, 0] * 5) + bytearray(ref[:-100])
flips = r.sample(range(10, len(rx)), 37)
for i in flips:
    rx[i] ^= 1
open(d + "/ref.bits", "wb").write(ref)
open(d + "/rx.bits", "wb").write(bytes(rx))
open(d + "/bad.bits", "wb").write(b"\x00\x01\x02")
PY
out=$("$polyrx" ber "$dir/ref.bits" "$dir/rx.bits")
check "exit 0 on a good pair" "[ $? -eq 0 ]"
check "shift found: $out" "grep -q 'aligned at shift +10 bits' <<<\"\$out\""
check "errors counted: $out" "grep -q 'compared 19900 bits: 37 errors' <<<\"\$out\""

# '-' reads standard input, as the reference or as the received bits; not both
out=$("$polyrx" ber "$dir/ref.bits" - <"$dir/rx.bits")
check "rx on standard input: $out" "grep -q 'compared 19900 bits: 37 errors' <<<\"\$out\""
out=$(cat "$dir/ref.bits" | "$polyrx" ber - "$dir/rx.bits")
check "ref from a pipe: $out" "grep -q 'aligned at shift +10 bits' <<<\"\$out\""
err=$("$polyrx" ber - - </dev/null 2>&1)
check "both on standard input is a usage error (exit 2)" "[ $? -eq 2 ] && grep -q 'only one' <<<\"\$err\""
err=$("$polyrx" ber "$dir/ref.bits" 2>&1)
check "one argument: usage error, exit 2" "[ $? -eq 2 ]"
err=$("$polyrx" ber "$dir/ref.bits" "$dir/nothere.bits" 2>&1)
check "a missing file: runtime error, exit 1" "[ $? -eq 1 ] && grep -q 'No such file' <<<\"\$err\""

# a part far inside the reference (the bits of a range of a recording): found beyond
# --max-shift by its 64-bit runs, in either order; unrelated bits still warn
python3 - "$dir" <<'PY'
import random, sys
d = sys.argv[1]
r = random.Random(11)
ref = bytes(r.getrandbits(1) for _ in range(300000))
part = bytearray(ref[123457:133457])
for i in r.sample(range(len(part)), 100):
    part[i] ^= 1
open(d + "/long.bits", "wb").write(ref)
open(d + "/part.bits", "wb").write(bytes(part))
open(d + "/other.bits", "wb").write(bytes(r.getrandbits(1) for _ in range(10000)))
PY
out=$("$polyrx" ber "$dir/long.bits" "$dir/part.bits")
check "a part deep inside: $out" "grep -q 'aligned at shift -123457 bits' <<<"\$out" && grep -q 'compared 10000 bits: 100 errors' <<<"\$out""
out=$("$polyrx" ber "$dir/part.bits" "$dir/long.bits")
check "the reference inside the received bits: $out" "grep -q 'aligned at shift +123457 bits' <<<"\$out""
err=$("$polyrx" ber "$dir/long.bits" "$dir/other.bits" 2>&1 >/dev/null)
check "unrelated bits: a warning" "grep -q 'may be unrelated' <<<"\$err""

"$polyrx" ber "$dir/ref.bits" "$dir/rx.bits" --max-ber 1e-3 >/dev/null
check "--max-ber exceeded gives status 3" "[ $? -eq 3 ]"
"$polyrx" ber "$dir/ref.bits" "$dir/rx.bits" --max-ber 0.01 >/dev/null
check "--max-ber met gives status 0" "[ $? -eq 0 ]"

err=$("$polyrx" ber "$dir/ref.bits" "$dir/bad.bits" 2>&1 >/dev/null)
check "non-bit byte rejected" "[ $? -ne 0 ] && grep -q 'not an unpacked bit file' <<<\"\$err\""
err=$("$polyrx" ber "$dir/ref.bits" "$dir/missing.bits" 2>&1 >/dev/null)
check "missing file rejected" "[ $? -ne 0 ] && grep -q 'cannot open' <<<\"\$err\""
err=$("$polyrx" ber "$dir/ref.bits" 2>&1 >/dev/null)
check "one argument rejected" "[ $? -ne 0 ] && grep -q 'expected two bit files' <<<\"\$err\""
err=$("$polyrx" ber "$dir/ref.bits" "$dir/rx.bits" --max-shift -3 2>&1 >/dev/null)
check "bad --max-shift rejected" "[ $? -ne 0 ] && grep -q 'max-shift' <<<\"\$err\""
: >"$dir/empty.bits"
err=$("$polyrx" ber "$dir/ref.bits" "$dir/empty.bits" 2>&1 >/dev/null)
check "empty file rejected" "[ $? -ne 0 ] && grep -q 'do not overlap' <<<\"\$err\""

[ $fail -eq 0 ] && echo "cli_ber: all checks passed"
exit $fail
