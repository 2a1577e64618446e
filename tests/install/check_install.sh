#!/bin/sh
# Install the build tree to a temporary prefix, then build and run
# examples/quickstart.c three ways: pkg-config, find_package,
# add_subdirectory (and a runtime consumer with the last two).
#   check_install.sh SOURCE_DIR BUILD_DIR C_COMPILER [CFLAGS]
# CFLAGS (e.g. -fsanitize=address,undefined in a sanitizer build, whose
# installed libraries need the sanitizer runtime) go to every consumer.
set -eu
src=$1 build=$2 cc=$3 cflags=${4:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/tmem-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
quick=$src/examples/quickstart.c
rtcheck=$src/tests/install/runtime_version.c
jobs=-j2

step() { echo "== $*"; }
step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
libdir=$(dirname "$(find "$prefix" -name 'libtypedmem.so' | head -1)")
for f in include/typedmem/typedmem.h include/typedmem/plan_heap.h include/typedmem/plan_io.h \
         include/tmemrt/runtime.h include/tmemrt/error.h bin/tmem; do
  test -e "$prefix/$f" || { echo "FAIL: $f not installed"; exit 1; }
done
# the testing APIs (benches, tests) stay in the source tree
for f in include/typedmem/testing.h include/tmemrt/testing.h; do
  test ! -e "$prefix/$f" || { echo "FAIL: $f installed"; exit 1; }
done
test -e "$libdir/libtypedmem.a" && test -e "$libdir/libtypedmem_runtime.a" || { echo "FAIL: static libraries"; exit 1; }
soname=$(objdump -p "$libdir/libtypedmem.so" | awk '/SONAME/ {print $2}')
case $soname in libtypedmem.so.[0-9]*) echo "SONAME $soname";; *) echo "FAIL: SONAME '$soname'"; exit 1;; esac
test -e "$libdir/$soname" || { echo "FAIL: $soname missing"; exit 1; }
test -e "$libdir/cmake/typedmem/typedmemConfigVersion.cmake" || { echo "FAIL: version file"; exit 1; }
"$prefix/bin/tmem" --version | grep -q '^typedmem ' || { echo "FAIL: installed tmem --version"; exit 1; }

step "pkg-config"
if command -v pkg-config >/dev/null 2>&1; then
  export PKG_CONFIG_PATH="$libdir/pkgconfig"
  # shellcheck disable=SC2046
  "$cc" -std=c11 $cflags -o "$work/qs_pc" "$quick" $(pkg-config --cflags --libs typedmem) -Wl,-rpath,"$libdir"
  "$work/qs_pc" >"$work/qs_pc.out"
  "$cc" -std=c11 $cflags -o "$work/qs_pc_static" "$quick" $(pkg-config --cflags typedmem) \
    "$libdir/libtypedmem.a" $(pkg-config --static --libs-only-l typedmem | sed 's/-ltypedmem//')
  "$work/qs_pc_static" >/dev/null
  "$cc" -std=c11 $cflags -o "$work/rt_pc" "$rtcheck" $(pkg-config --cflags --libs typedmem-runtime) -Wl,-rpath,"$libdir"
  "$work/rt_pc"
  echo "pkg-config: ok"
else
  echo "pkg-config not installed: that way is not checked"
fi

step "find_package"
cmake -S "$src/tests/install/find_package" -B "$work/find" -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$cflags" \
  -DCMAKE_PREFIX_PATH="$prefix" -DQUICKSTART="$quick" -DRUNTIME_CHECK="$rtcheck" >"$work/find.log"
cmake --build "$work/find" $jobs >>"$work/find.log" || { cat "$work/find.log"; exit 1; }
"$work/find/quickstart" >/dev/null && "$work/find/quickstart_static" >/dev/null && "$work/find/runtime_version"
echo "find_package: ok"

step "add_subdirectory"
if [ -n "$cflags" ]; then
  # a sanitizer build: the consumer would recompile the whole library with
  # the sanitizers (minutes); the plain build checks this way
  echo "add_subdirectory: not checked with CFLAGS '$cflags' (the plain build checks it)"
  echo "PASS: installed and consumed two ways (pkg-config, find_package)"
  exit 0
fi
cmake -S "$src/tests/install/subdir" -B "$work/subdir" -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$cflags" \
  -DTYPEDMEM_SOURCE="$src" -DQUICKSTART="$quick" -DRUNTIME_CHECK="$rtcheck" >"$work/subdir.log"
cmake --build "$work/subdir" $jobs >>"$work/subdir.log" || { tail -40 "$work/subdir.log"; exit 1; }
"$work/subdir/quickstart" >/dev/null && "$work/subdir/runtime_version"
echo "add_subdirectory: ok"
echo "PASS: installed and consumed three ways"
