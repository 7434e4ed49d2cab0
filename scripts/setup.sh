#!/usr/bin/env bash
# Installs every Debian package that polyrx's build, tests and benchmarks need: the compilers and
# libraries, and what the tests' checkers run on: python3 (tests/cli_*.sh fail, never skip,
# without it). The checkers use its standard library only, since the first python3 on PATH may be
# another interpreter than Debian's (pyenv) without numpy; numpy is for bench/cfo_timing_free.py.
# Idempotent and quiet when everything is already there; runs apt-get update before installing.
# The CUDA toolkit is optional and not installed here: CMake detects nvcc when present.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libfftw3-dev libcjson-dev libpng-dev libliquid-dev
  python3 python3-numpy)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "setup: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
