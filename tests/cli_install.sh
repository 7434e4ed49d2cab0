#!/usr/bin/env bash
# The installed library works as a library: `cmake --install` into a temporary prefix, then the
# README's user program built and run through pkg-config (shared, and static with Libs.private)
# and through find_package(polyrx) (polyrx::polyrx); the shared library has a versioned SONAME
# and exports exactly the functions the public headers declare; the installed command starts.
set -u
P=${1:?usage: cli_install.sh PATH_TO_POLYRX (in its build directory)}
B=$(cd "$(dirname "$P")" && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
bad() {
  echo "FAIL: $*" >&2
  fail=$((fail + 1))
}
for tool in cmake cc pkg-config readelf nm; do
  command -v $tool >/dev/null || {
    echo "FAIL: $tool is needed by this test (scripts/setup.sh installs it)" >&2
    exit 1
  }
done

cmake --install "$B" --prefix "$T/p" >"$T/install.log" 2>&1 || {
  cat "$T/install.log" >&2
  echo "FAIL: cmake --install failed" >&2
  exit 1
}
pc=$(ls "$T"/p/lib*/pkgconfig/polyrx.pc "$T"/p/lib/*/pkgconfig/polyrx.pc 2>/dev/null | head -1)
[ -n "$pc" ] || {
  echo "FAIL: no polyrx.pc installed" >&2
  exit 1
}
libdir=$(dirname "$(dirname "$pc")")
export PKG_CONFIG_PATH=$(dirname "$pc")
# the installed polyrx.pc names its real prefix: a sysroot set for other packages (the GPU
# machine's carried libraries) must not be put in front of it
unset PKG_CONFIG_SYSROOT_DIR
# a sanitizer build's library needs its runtime in the programs linked against it
san=$(sed -n 's/^POLYRX_SANITIZE:STRING=//p' "$B/CMakeCache.txt" 2>/dev/null)
SAN=${san:+-fsanitize=$san}

# ---- the shared library: versioned SONAME, only the public API exported ----
version=$(pkg-config --modversion polyrx)
soname=$(readelf -d "$libdir/libpolyrx.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
case $version in
0.*) want=libpolyrx.so.$(echo "$version" | cut -d. -f1,2) ;;
*) want=libpolyrx.so.${version%%.*} ;;
esac
[ "$soname" = "$want" ] || bad "SONAME '$soname', expected '$want' (version $version)"
[ -e "$libdir/$soname" ] || bad "no $soname beside libpolyrx.so"
# exported functions = the functions the installed headers declare (read through the
# preprocessor: comments out)
nm -D --defined-only "$libdir/libpolyrx.so" | awk 'NF == 3 && $2 != "A" { sub(/@.*/, "", $3); print $3 }' |
  sort -u >"$T/exported"
echo '#include <polyrx.h>' | cc -E -P -I"$T/p/include" - | grep -oE '\bprx_[a-z0-9_]+ *\(' |
  sed 's/ *($//' | sort -u >"$T/declared"
[ -s "$T/declared" ] || bad "no function found in the installed headers"
extra=$(comm -23 "$T/exported" "$T/declared" | head -5 | tr '\n' ' ')
missing=$(comm -13 "$T/exported" "$T/declared" | head -5 | tr '\n' ' ')
[ -z "$extra" ] || bad "the shared library exports functions the headers do not declare: $extra"
[ -z "$missing" ] || bad "declared functions missing from the shared library: $missing"

# ---- the README's program ----
cat >"$T/prog.c" <<'C'
#include <polyrx.h>
#include <stdio.h>

int main(void) {
  prx_chan_config cfg = prx_chan_config_default();
  cfg.channels = 64;
  prx_chan *ch = NULL;
  prx_status st = prx_chan_create(&cfg, &ch);
  printf("polyrx %s: %s\n", prx_version(), st == PRX_OK ? "channelizer ready" : prx_last_error());
  prx_chan_destroy(ch);
  return st != PRX_OK;
}
C
expect="polyrx $version: channelizer ready"

# pkg-config, shared
cc $SAN -o "$T/prog_pc" "$T/prog.c" $(pkg-config --cflags --libs polyrx) -Wl,-rpath,"$libdir" \
  2>"$T/err" || bad "pkg-config build failed: $(cat "$T/err")"
[ "$("$T/prog_pc" 2>&1)" = "$expect" ] || bad "pkg-config program: '$("$T/prog_pc" 2>&1)'"
ldd "$T/prog_pc" | grep -q "$libdir/$soname" || bad "the program does not load $libdir/$soname"

# pkg-config --static: libpolyrx.a and Libs.private are enough to link
libs=$(pkg-config --static --libs polyrx)
cc $SAN -o "$T/prog_static" "$T/prog.c" $(pkg-config --cflags polyrx) ${libs/-lpolyrx/-l:libpolyrx.a} \
  2>"$T/err" || bad "static build with Libs.private failed: $(cat "$T/err")"
[ "$("$T/prog_static" 2>&1)" = "$expect" ] || bad "static program: '$("$T/prog_static" 2>&1)'"
ldd "$T/prog_static" | grep -q libpolyrx && bad "the static program loads libpolyrx"

# find_package(polyrx) -> polyrx::polyrx
mkdir -p "$T/user"
cp "$T/prog.c" "$T/user/"
cat >"$T/user/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(user C)
find_package(polyrx 0.1 REQUIRED)
add_executable(prog prog.c)
target_link_libraries(prog PRIVATE polyrx::polyrx)
CM
if cmake -S "$T/user" -B "$T/user/build" -DCMAKE_PREFIX_PATH="$T/p" -DCMAKE_C_FLAGS="$SAN" \
  >"$T/err" 2>&1 &&
  cmake --build "$T/user/build" >>"$T/err" 2>&1; then
  [ "$("$T/user/build/prog" 2>&1)" = "$expect" ] ||
    bad "find_package program: '$("$T/user/build/prog" 2>&1)'"
else
  bad "find_package(polyrx) build failed: $(tail -20 "$T/err")"
fi

# the installed command
[ "$("$T/p/bin/polyrx" --version)" = "polyrx $version" ] || bad "installed polyrx --version"

if [ "$fail" -ne 0 ]; then
  echo "cli_install: $fail check(s) failed" >&2
  exit 1
fi
echo "cli_install: all checks passed (SONAME $soname, pkg-config shared and static, find_package)"
