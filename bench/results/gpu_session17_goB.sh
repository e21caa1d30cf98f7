#!/usr/bin/env bash
# lead session 17, final call B: precis vs torch side by side on merged main's binaries; the zoo
# check (effnet, rec); ResNet-50 b256 with this session's three routes off vs on (interleaved);
# ResNet-50's per-step profile grouped (gpu_phase15r_analyze.py)
cd "$(dirname "$0")/../.."
ROOT=$PWD
[ -d .gpu/fin17p/build-gpu ] || python3 -c "import tarfile; tarfile.open('.gpu/fin17p/bg.tar.xz').extractall('.gpu/fin17p')"
export PRECIS_LIBS=$PWD/.gpu/lib PRECIS_BUILD=$PWD/.gpu/fin17p/build-gpu PRECIS_ZOO=$PWD/.gpu/zooB PRECIS_WHEELS=$PWD/.gpu/whl
# the zoo check (effnet, rec): since session 17 each model's random input is seeded by its name
ZOO_INT8=1 ZOO_ARGS=--no-speed OUT=$OUT/z timeout 200 bash bench/gpu/run.sh zoo > $OUT/z.log 2>&1; echo "zoo rc $?"
grep -E "passed|failed|FAIL|rror" $OUT/z.log | tail -n 12
OUT=$OUT/r timeout 240 bash bench/gpu/run.sh bench -- --models resnet50 --int8 --no-correctness --batches resnet50=1,256 > $OUT/r.log 2>&1; echo "resnet rc $?"
OFF="PRECIS_CUDA_Q1X1ST=0 PRECIS_CUDA_IGEMM_TI=0 PRECIS_CUDA_STEM_POOL=0"
for r in 1 2; do for v in off on; do
  e=""; [ $v = off ] && e=$OFF
  env $e OUT=$OUT/ab$v$r timeout 120 bash bench/gpu/run.sh bench -- --models resnet50 --int8 --no-correctness \
    --batches resnet50=256 --only int8 > $OUT/ab$v$r.log 2>&1
  echo "ab $v round $r:"; grep -E "^\| resnet50 \| 256" $OUT/ab$v$r/gpu_bench.md
done; done
W=/tmp/precis-gpu-work
LD_LIBRARY_PATH=$PRECIS_LIBS:$(python3 -c "
import glob, os, site
print(':'.join(d for sp in site.getsitepackages() for d in glob.glob(os.path.join(sp, 'nvidia/*/lib'))))"):/usr/local/cuda/lib64 \
  PRECIS_VERBOSE=1 timeout 150 $PRECIS_BUILD/precis bench $W/resnet50.onnx --device cuda --precision int8 \
  --shapes input:256x3x224x224 --calib-data $W/calib-resnet50 --calib-cache $W/resnet50.calib --warmup 3 \
  --iterations 10 --profile --json > $OUT/prof.json 2> $OUT/verbose.log; echo "profile rc $?"
python3 bench/results/gpu_phase15r_analyze.py $OUT/prof.json 256 > $OUT/groups.txt 2>&1; tail -n 6 $OUT/groups.txt
grep -o "m=[0-9]*: [a-zA-Z0-9 ]*[,(]" $OUT/verbose.log | sed 's/m=[0-9]*: //' | sort | uniq -c
rm -f $OUT/prof.json
OUT=$OUT/e timeout 200 bash bench/gpu/run.sh bench -- --models effnet --int8 --batches effnet=1,32 > $OUT/e.log 2>&1; echo "effnet rc $?"
cp $OUT/z/zoo_check.json $OUT/ 2>/dev/null
for d in r e; do cat $OUT/$d/gpu_bench.md 2>/dev/null | grep -E "^\|" | head -n 20; done
