#!/usr/bin/env bash
# lead session 17, final call A: CUDA tests + zoo check on merged main's binaries, then a
# MiniLM / BERT b64 round with torch alongside (round 2 of the transformer rows)
cd "$(dirname "$0")/../.."
python3 -c "import tarfile; tarfile.open('.gpu/fin17/bg.tar.xz').extractall('.gpu/fin17')"
export PRECIS_LIBS=$PWD/.gpu/lib PRECIS_BUILD=$PWD/.gpu/fin17/build-gpu
PRECIS_ZOO=$PWD/.gpu/zooA ZOO_INT8=1 OUT=$OUT/t bash bench/gpu/run.sh tests zoo > $OUT/runA.log 2>&1
echo "tests rc $?"; grep -E "passed|failed|FAIL|Error" $OUT/runA.log | tail -n 30
OUT=$OUT/m2 bash bench/gpu/run.sh bench -- --models minilm,bert --fp8 --no-correctness --batches minilm=64 bert=64 > $OUT/m2.log 2>&1; echo "round 2 rc $?"
grep -E "b64 (fp8|fp16) graphs=1|reduce-overhead" $OUT/m2.log
