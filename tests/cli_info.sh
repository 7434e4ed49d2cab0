#!/usr/bin/env bash
# polyrx info: a recording described correctly (SigMF from polyrx gen; a hand-written SigMF
# recording with two captures, datetimes and annotations; raw files with and without -s; standard
# input; a file cut inside a sample), as text and as JSON, and bad invocations refused with one
# clear line. The JSON checks are python3 (standard library): without it the test fails.
set -u
P=${1:?usage: cli_info.sh PATH_TO_POLYRX}
# python3 present, scratch directory $T, bad() and the failure count $fail
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_test.sh"
jq_py() { # JSON-TEXT EXPRESSION(python on d)
  python3 -c "import json,sys; d=json.loads(sys.argv[1]); print($2)" "$1"
}

# ---- a recording from polyrx gen: 20000 ci16 samples at 6.5536 MHz, centre 433.92 MHz ----
"$P" gen -q -o "$T/g.sigmf-data" -F ci16 -s 6.5536M -f 433.92M -n 20000 --carrier rs=100k \
  --carrier rs=50k,f=1M --gap 1m:1m || bad "gen failed"
for name in g.sigmf-meta g.sigmf-data g; do
  out=$("$P" info --json "$T/$name") || bad "info --json $name failed"
  got=$(jq_py "$out" "d['sigmf'], d['format'], d['sample_rate'], d['center_freq'], d['samples'], d['seconds'] == 20000 / 6553600, len(d['captures']), d['annotations'], d['datetime'], d['recorder'].startswith('polyrx gen')")
  [ "$got" = "True ci16 6553600 433920000 20000 True 1 3 None True" ] || bad "info --json $name: $got"
done
"$P" info "$T/g.sigmf-meta" >"$T/txt" || bad "info (text) failed"
for want in "format       ci16" "rate         6.5536 MHz" "centre       433.92 MHz" \
  "length       20000 samples, 0.00305175781 s" "annotations  3" "captures     1"; do
  grep -qF "$want" "$T/txt" || bad "info text lacks '$want': $(cat "$T/txt")"
done

# ---- a hand-written recording: two captures (100 MHz, then 101 MHz), datetimes, annotations ----
head -c 4000 /dev/zero >"$T/h.sigmf-data" # 2000 cu8 samples (2 bytes each): 1 s at 2 kHz
cat >"$T/h.sigmf-meta" <<'JSON'
{"global": {"core:datatype": "cu8", "core:sample_rate": 2000, "core:version": "1.0.0",
            "core:description": "two captures", "core:author": "someone", "core:hw": "an SDR"},
 "captures": [{"core:sample_start": 0, "core:frequency": 100e6,
               "core:datetime": "2026-12-01T10:00:00Z"},
              {"core:sample_start": 1500, "core:frequency": 101e6,
               "core:datetime": "2026-12-01T10:00:00.75Z"}],
 "annotations": [{"core:sample_start": 10, "core:sample_count": 5},
                 {"core:sample_start": 20, "core:sample_count": 5, "core:label": "x"}]}
JSON
out=$("$P" info --json "$T/h.sigmf-meta") || bad "info on the hand-written recording failed"
got=$(jq_py "$out" "d['format'], d['samples'], d['seconds'], d['center_freq'], [(c['sample_start'], c['frequency'], c['datetime']) for c in d['captures']], d['datetime'], d['annotations'], d['description'], d['author'], d['hw']")
[ "$got" = "cu8 2000 1 100000000 [(0, 100000000, '2026-12-01T10:00:00Z'), (1500, 101000000, '2026-12-01T10:00:00.75Z')] 2026-12-01T10:00:00Z 2 two captures someone an SDR" ] ||
  bad "hand-written recording: $got"
"$P" info "$T/h" >"$T/txt" || bad "info (text) on the hand-written recording failed"
for want in "captures     2" "sample 1500 (0.75 s), 101000000 Hz, 2026-12-01T10:00:00.75Z" \
  "datetime     2026-12-01T10:00:00Z" "annotations  2" "author       someone"; do
  grep -qF "$want" "$T/txt" || bad "info text lacks '$want': $(cat "$T/txt")"
done
# -s overrides the recording's rate
out=$("$P" info --json -s 4k "$T/h") && [ "$(jq_py "$out" "d['seconds']")" = "0.5" ] ||
  bad "-s 4k on a 2000-sample recording: not 0.5 s"

# ---- raw files and standard input ----
"$P" gen -q -o "$T/r.ci8" -F ci8 -s 48k -n 4801 --carrier rs=2400 || bad "gen raw failed"
out=$("$P" info --json -F ci8 -s 48k "$T/r.ci8") || bad "info raw failed"
[ "$(jq_py "$out" "d['sigmf'], d['format'], d['samples'], d['seconds'], d['truncated']")" = \
  "False ci8 4801 0.10002083333333334 False" ] || bad "raw ci8: $out"
out=$("$P" info --json -F ci8 "$T/r.ci8") || bad "info raw without -s failed"
[ "$(jq_py "$out" "d['samples'], d['seconds'], d['sample_rate']")" = "4801 None None" ] ||
  bad "raw without -s: $out"
"$P" info -F ci8 "$T/r.ci8" | grep -q "unknown (give -s RATE)" || bad "raw without -s: text"
out=$("$P" info --json -F ci16 -s 48k - <"$T/r.ci8") || bad "info on standard input failed"
[ "$(jq_py "$out" "d['file'], d['samples'], d['truncated']")" = "standard input 2400 True" ] ||
  bad "standard input, 9602 bytes as ci16: $out"
"$P" info -F ci16 "$T/r.ci8" | grep -q "2 bytes after the last whole one" ||
  bad "a file cut inside a sample is not reported"

# ---- bad invocations: non-zero exit and one line naming the problem ----
expect_fail() { # WORDS -- ARGS...
  local want=$1
  shift
  if "$P" info "$@" >"$T/out" 2>"$T/err" </dev/null; then
    bad "accepted: info $*"
  elif ! grep -qi -- "$want" "$T/err"; then
    bad "info $*: message '$(cat "$T/err")' does not mention '$want'"
  elif [ "$(wc -l <"$T/err")" -ne 1 ]; then
    bad "info $*: more than one line: $(cat "$T/err")"
  fi
}
expect_fail "no recording"
expect_fail "no such file" "$T/missing.cf32"
expect_fail "sample format 'int4'" -F int4 "$T/r.ci8"
expect_fail "-s" -s fast "$T/r.ci8"
expect_fail "one recording at a time" "$T/r.ci8" "$T/r.ci8"
expect_fail "unknown option" --frobnicate "$T/r.ci8"
echo '{"global": {' >"$T/broken.sigmf-meta"
: >"$T/broken.sigmf-data"
expect_fail "broken" "$T/broken.sigmf-meta"
"$P" info --help | grep -q "usage: polyrx info" || bad "--help"

if [ "$fail" -ne 0 ]; then
  echo "cli_info: $fail check(s) failed" >&2
  exit 1
fi
echo "cli_info: all checks passed"
