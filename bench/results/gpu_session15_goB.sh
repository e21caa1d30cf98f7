#!/usr/bin/env bash
# lead session 15, final call B: precis vs torch side by side on merged main's binaries
cd "$(dirname "$0")/../.."
[ -d .gpu/fin/build-gpu ] || python3 -c "import tarfile; tarfile.open('.gpu/fin/bg.tar.xz').extractall('.gpu/fin')"
export PRECIS_LIBS=$PWD/.gpu/lib PRECIS_BUILD=$PWD/.gpu/fin/build-gpu PRECIS_ZOO=$PWD/.gpu/zoo PRECIS_WHEELS=$PWD/.gpu/whl
OUT=$OUT/r bash bench/gpu/run.sh bench -- --models resnet50 --int8 --no-correctness --batches resnet50=1,256 > $OUT/r.log 2>&1; echo "resnet rc $?"
OUT=$OUT/e bash bench/gpu/run.sh bench -- --models effnet --int8 --batches effnet=1,32 > $OUT/e.log 2>&1; echo "effnet rc $?"
OUT=$OUT/t bash bench/gpu/run.sh bench -- --models bert,minilm --fp8 --batches bert=1,64 minilm=1,64 > $OUT/t.log 2>&1; echo "bert rc $?"
for d in r e t; do cat $OUT/$d/gpu_bench.md 2>/dev/null | grep -E "^\|" | head -n 20; done
