#!/usr/bin/env bash
# lead session 16, final call B: precis vs torch side by side on merged main's binaries
cd "$(dirname "$0")/../.."
[ -d .gpu/fin16p/build-gpu ] || python3 -c "import tarfile; tarfile.open('.gpu/fin16p/bg.tar.xz').extractall('.gpu/fin16p')"
export PRECIS_LIBS=$PWD/.gpu/lib PRECIS_BUILD=$PWD/.gpu/fin16p/build-gpu PRECIS_ZOO=$PWD/.gpu/zooB PRECIS_WHEELS=$PWD/.gpu/whl
# the zoo check with effnet first, then rec: check_models draws rec's random input second, as
# in sessions 12-15 (call A carried det / rec only, so rec's input was the first draw)
ZOO_INT8=1 ZOO_ARGS=--no-speed OUT=$OUT/z bash bench/gpu/run.sh zoo > $OUT/z.log 2>&1; echo "zoo rc $?"
grep -E "passed|failed|FAIL|rror" $OUT/z.log | tail -n 12
OUT=$OUT/r bash bench/gpu/run.sh bench -- --models resnet50 --int8 --no-correctness --batches resnet50=1,256 > $OUT/r.log 2>&1; echo "resnet rc $?"
OUT=$OUT/e bash bench/gpu/run.sh bench -- --models effnet --int8 --batches effnet=1,32 > $OUT/e.log 2>&1; echo "effnet rc $?"
# (the transformers: call A round 2 at b64; b1 rows in gpu_phase18t_bench.md)
cp $OUT/z/zoo_check.json $OUT/ 2>/dev/null
for d in r e; do cat $OUT/$d/gpu_bench.md 2>/dev/null | grep -E "^\|" | head -n 20; done
