#!/usr/bin/env bash
# lead session 14: MiniLM / BERT b64 on final main (phase 16t merged), torch in the same call, 2 rounds
cd "$(dirname "$0")/../.."
python3 -c "import tarfile; tarfile.open('.gpu/m/bm.tar.xz').extractall('.gpu/m')"
export PRECIS_LIBS=$PWD/.gpu/lib PRECIS_BUILD=$PWD/.gpu/m/bm
for r in 1 2; do
OUT=$OUT/m$r bash bench/gpu/run.sh bench -- --models minilm,bert --fp8 --no-correctness --batches minilm=64 bert=64 > $OUT/m$r.log 2>&1; echo "round $r rc $?"
grep -E "b64 (fp8|fp16) graphs=1|reduce-overhead" $OUT/m$r.log
done
