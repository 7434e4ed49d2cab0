# Sourced by the command tests (tests/cli_*.sh) that check outputs with python3: fails the test
# at once when python3 is missing (scripts/setup.sh installs it), makes the scratch directory $T
# (removed on exit) and the failure counter: `bad MESSAGE` reports one failed check, and the
# script ends with `exit $((fail > 0))` or its own summary.
command -v python3 >/dev/null || {
  echo "FAIL: python3 is needed by this test's checkers (scripts/setup.sh installs it)" >&2
  exit 1
}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() {
  echo "FAIL: $*" >&2
  fail=$((fail + 1))
}
