#!/bin/sh
# cmake --install into a temporary prefix, then build a consumer with pkg-config
# against the shared and the static library and run both.
# usage: test_install.sh BUILD_DIR
set -eu
build=$1
here=$(cd "$(dirname "$0")" && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/precis/precis.h bin/precis; do
    [ -e "$prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
pc=$(find "$prefix" -name precis.pc | head -n1)
[ -n "$pc" ] || { echo "FAIL: precis.pc not installed"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
cc="${CC:-cc} ${PRECIS_CONSUMER_CFLAGS:-}"  # sanitizer builds: the consumer needs the same runtime
# shellcheck disable=SC2046
$cc -std=c11 -Wall -Werror -o "$prefix/consumer_shared" "$here/consumer.c" $(pkg-config --cflags --libs precis)
LD_LIBRARY_PATH=$(dirname "$(find "$prefix" -name 'libprecis.so' | head -n1)") "$prefix/consumer_shared"
# shellcheck disable=SC2046
libdir=$(pkg-config --variable=libdir precis)
$cc -std=c11 -Wall -Werror -o "$prefix/consumer_static" "$here/consumer.c" $(pkg-config --cflags precis) \
    "$libdir/libprecis.a" $(pkg-config --static --libs precis | sed 's/-lprecis//')
# the static consumer must not need libprecis.so at run time
env -u LD_LIBRARY_PATH "$prefix/consumer_static"
"$prefix/bin/precis" --version
echo "2 passed, 0 failed"
