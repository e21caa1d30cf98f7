#!/usr/bin/env bash
# lead session 15, call E: builds that now run once at their --shapes (precis.cuda_tcache):
# the zoo (check vs ref, fp16 / int8) and the transformers' fp8 / fp16 builds with the new binary
cd "$(dirname "$0")/../.."
ROOT=$PWD
python3 -c "import tarfile; tarfile.open('.gpu/fin2/bg2.tar.xz').extractall('.gpu/fin2')"
export PRECIS_LIBS=$ROOT/.gpu/lib PRECIS_BUILD=$ROOT/.gpu/fin2/build-gpu
PRECIS_ZOO=$ROOT/.gpu/zoo ZOO_INT8=1 OUT=$OUT/z bash bench/gpu/run.sh zoo > $OUT/z.log 2>&1; echo "zoo rc $?"
grep -E "passed|failed|FAIL|rror" $OUT/z.log | tail -n 12
OUT=$OUT/t bash bench/gpu/run.sh bench -- --models bert,minilm --fp8 --batches bert=1,64 minilm=1,64 > $OUT/t.log 2>&1; echo "bench rc $?"
grep -E "graphs=1|reduce-overhead|cos|rror" $OUT/t.log | head -n 40
