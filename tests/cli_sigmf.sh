#!/usr/bin/env bash
# SigMF archives and the command conventions: gen -o x.sigmf writes a tar archive that tar(1),
# Python's tarfile and (where installed) the official sigmf package read, with every capture and
# annotation; polyrx info reads it in place; --version on every subcommand; usage errors exit 2,
# runtime errors 1; the progress line appears only on a terminal (script(1) gives one), and not
# with -q.
set -u
P=${1:?usage: cli_sigmf.sh PATH_TO_POLYRX}
# python3 present, scratch directory $T, bad() and the failure count $fail
source "$(dirname "${BASH_SOURCE[0]}")/support/cli_test.sh"

# ---- gen -o NAME.sigmf: one tar file, the recording inside NAME/ ----
"$P" gen -q -o "$T/g.sigmf" -F ci16 -s 1M -n 5001 -f 433.92M --carrier f=100k,rs=50k \
  --carrier f=-200k,rs=20k,power=-3 --gap 1m:0.5m || bad "gen -o g.sigmf failed"
list=$(tar tf "$T/g.sigmf" 2>&1)
[ "$list" = "g/
g/g.sigmf-data
g/g.sigmf-meta" ] || bad "tar lists: $list"
python3 - "$T/g.sigmf" <<'PY' || bad "tarfile check of g.sigmf"
import json, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    m = {x.name: x for x in t.getmembers()}
    assert m["g"].isdir(), "no directory member"
    data = t.extractfile("g/g.sigmf-data").read()
    meta = json.load(t.extractfile("g/g.sigmf-meta"))
assert len(data) == 5001 * 4, len(data)
assert meta["global"]["core:datatype"] == "ci16_le"
assert meta["captures"][0]["core:frequency"] == 433.92e6
assert len(meta["annotations"]) == 3, meta["annotations"]
PY
# the same samples as a plain pair written by the same command
"$P" gen -q -o "$T/p.sigmf-data" -F ci16 -s 1M -n 5001 -f 433.92M --carrier f=100k,rs=50k \
  --carrier f=-200k,rs=20k,power=-3 --gap 1m:0.5m || bad "gen -o p.sigmf-data failed"
tar -C "$T" -xf "$T/g.sigmf" && cmp -s "$T/g/g.sigmf-data" "$T/p.sigmf-data" ||
  bad "the archive's samples differ from the pair's"

# ---- the official sigmf package, where installed ----
if python3 -c "import sigmf" 2>/dev/null; then
  python3 - "$T/g.sigmf" <<'PY' || bad "the sigmf package rejects g.sigmf"
import sys, sigmf
h = sigmf.fromfile(sys.argv[1])
h.validate()
assert h.read_samples().shape == (5001,)
assert len(h.get_annotations()) == 3
PY
else
  echo "note: the sigmf Python package is not installed: its check is skipped" >&2
fi

# ---- info reads the archive in place: every capture and annotation ----
out=$("$P" info --json "$T/g.sigmf") || bad "info g.sigmf failed"
got=$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(d['archive'], d['samples'], d['format'], d['center_freq'], len(d['annotation_list']), d['annotation_list'][2]['label'] if len(d['annotation_list']) > 2 else None)" "$out")
[ "$got" = "True 5001 ci16 433920000 3 gap (zeros)" ] || bad "info --json on the archive: $got"
# a hand-made archive (tarfile, pax format) with two captures
python3 - "$T" <<'PY'
import io, json, sys, tarfile
d = sys.argv[1]
meta = {"global": {"core:datatype": "cu8", "core:sample_rate": 1000, "core:version": "1.0.0"},
        "captures": [{"core:sample_start": 0, "core:frequency": 100e6, "core:datetime": "2026-12-01T10:00:00Z"},
                     {"core:sample_start": 600, "core:frequency": 101e6, "core:datetime": "2026-12-01T10:00:00.6Z"}],
        "annotations": [{"core:sample_start": 650, "core:sample_count": 100, "core:label": "burst",
                         "core:freq_lower_edge": 100.9e6, "core:freq_upper_edge": 101.1e6}]}
with tarfile.open(d + "/h.sigmf", "w", format=tarfile.PAX_FORMAT) as t:
    for name, data in (("h/h.sigmf-meta", json.dumps(meta).encode()), ("h/h.sigmf-data", bytes(2000))):
        i = tarfile.TarInfo(name); i.size = len(data); t.addfile(i, io.BytesIO(data))
PY
out=$("$P" info "$T/h.sigmf") || bad "info h.sigmf failed"
for want in "(SigMF archive)" "length       1000 samples, 1 s" "captures     2" \
  "sample 600 (0.6 s), 101000000 Hz, 2026-12-01T10:00:00.6Z" \
  'sample 650 +100, 100900000 to 101100000 Hz, "burst"'; do
  grep -qF -- "$want" <<<"$out" || bad "info h.sigmf lacks '$want': $out"
done

# ---- --version on every subcommand ----
want="polyrx $("$P" --version | cut -d' ' -f2)"
for c in channelize gen demod ber info spectrum; do
  got=$("$P" $c --version 2>&1)
  [ $? = 0 ] && [ "$got" = "$want" ] || bad "polyrx $c --version: '$got'"
done

# ---- usage errors exit 2, runtime errors 1 ----
expect() { # STATUS ARGS...
  local want=$1
  shift
  "$P" "$@" >/dev/null 2>"$T/err.txt" </dev/null
  local rc=$?
  [ $rc = "$want" ] || bad "polyrx $*: exit $rc, expected $want: $(cat "$T/err.txt")"
  [ "$(wc -l <"$T/err.txt")" -ge 1 ] || bad "polyrx $*: no message"
}
expect 2 gen --bogus
expect 2 gen -o "$T/x.cf32" -s 1M -n 10
expect 2 gen -o "$T/x.cf32" -s nope -n 10 --carrier rs=1k
expect 2 info
expect 2 info -F cf99 "$T/g.sigmf"
expect 2 info "$T/g.sigmf" extra
expect 1 info "$T/nothere.sigmf"
expect 2 ber onlyone
expect 2 spectrum -i "$T/g.sigmf" -o "$T/x.jpg"
expect 2 spectrum --fft 3 -i "$T/g.sigmf" -o "$T/x.png"
expect 1 spectrum -i "$T/nothere.cf32" -s 1M -o "$T/x.png"
expect 2 nosuchcommand
printf 'not a tar file at all' >"$T/junk.sigmf"
expect 1 info "$T/junk.sigmf"

# ---- the progress line: on a terminal only, not with -q ----
# gen writes into a pipe whose reader starts after 1.5 s: the run outlasts the first second
G="gen -o - -s 1M -n 4M --carrier rs=100k"
if command -v script >/dev/null; then
  script -qec "'$P' $G | { sleep 1.5; cat >/dev/null; }" /dev/null >"$T/tty.txt" 2>&1 ||
    bad "gen on a terminal failed"
  grep -qa "samples/s, ETA" "$T/tty.txt" || bad "no progress line on a terminal: $(head -c 300 "$T/tty.txt")"
  script -qec "'$P' $G -q | { sleep 1.5; cat >/dev/null; }" /dev/null >"$T/tty.txt" 2>&1 ||
    bad "gen -q on a terminal failed"
  [ ! -s "$T/tty.txt" ] || bad "gen -q printed on a terminal: $(head -c 300 "$T/tty.txt")"
else
  echo "note: script(1) is not installed: the terminal progress check is skipped" >&2
fi
"$P" $G 2>"$T/err.txt" | { sleep 1.5; cat >/dev/null; } || bad "gen failed"
! grep -q $'\r' "$T/err.txt" || bad "a progress line on a non-terminal: $(cat "$T/err.txt")"

if [ $fail -ne 0 ]; then
  echo "cli_sigmf: $fail failure(s)" >&2
  exit 1
fi
echo "cli_sigmf: all checks passed"
