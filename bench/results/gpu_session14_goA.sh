#!/usr/bin/env bash
# lead session 14, final call A: CUDA tests + zoo check on merged main's binaries
cd "$(dirname "$0")/../.."
python3 -c "import tarfile; tarfile.open('.gpu/fin/bg.tar.xz').extractall('.gpu/fin')"
PRECIS_LIBS=$PWD/.gpu/lib PRECIS_BUILD=$PWD/.gpu/fin/build-gpu PRECIS_ZOO=$PWD/.gpu/zoo ZOO_INT8=1 OUT=$OUT/t bash bench/gpu/run.sh tests zoo > $OUT/runA.log 2>&1
echo "rc $?"; grep -E "passed|failed|FAIL|Error" $OUT/runA.log | tail -n 30
