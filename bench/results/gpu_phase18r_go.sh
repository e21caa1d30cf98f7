#!/bin/bash
# cuda18r device script: go.sh [test] [bench] [verbose] [ab] (as .gpu/cuda18r/go.sh, carried
# with bg.tar.xz: stripped precis + tests/cuda/test_cuda_int8 under build-gpu-bins/, and
# analyze.py = gpu_phase15r_analyze.py). A/B: PRECIS_CUDA_Q1X1WS=0 (before) vs default.
# (gpu_phase17r_go.sh with the env var renamed; a failing test turns the new tile off
# for the later phases, so they still give the before numbers.)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$ROOT/.gpu/cuda18r
cd /tmp && python3 -c "import tarfile; tarfile.open('$D/bg.tar.xz').extractall('/tmp')" || exit 1
B=/tmp/build-gpu-bins
export PRECIS_BUILD=$B PRECIS_LIBS=$ROOT/.gpu/lib
libdirs=$PRECIS_LIBS
for d in $(python3 -c "
import glob, os, site
for sp in site.getsitepackages():
    for d in glob.glob(os.path.join(sp, 'nvidia/*/lib')): print(d)"); do libdirs="$libdirs:$d"; done
export LD_LIBRARY_PATH="$libdirs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
rc=0
for ph in "$@"; do
  case "$ph" in
  test)
    for t in test_cuda_int8; do
      [ -x $B/tests/cuda/$t ] || continue
      echo "== $t"; SECONDS=0
      timeout 200 $B/tests/cuda/$t > $OUT/$t.log 2>&1; r=$?
      echo "rc=$r ${SECONDS}s"; tail -n 2 $OUT/$t.log; grep -B2 -A3 "FAIL\|CHECK failed" $OUT/$t.log | head -60
      echo "q1x1k lines: $(grep -c "q1x1 t16" $OUT/$t.log)"
      [ $r -eq 0 ] || { rc=1; export PRECIS_CUDA_Q1X1WS=0; echo "WS OFF from here"; }
    done
    ;;
  bench)  # torch side by side, Q1X1K on (default)
    SECONDS=0
    PYTHONUNBUFFERED=1 OUT=$OUT/bench bash $ROOT/bench/gpu/run.sh bench -- --models resnet50 --int8 \
      --no-correctness --batches resnet50=1,256 2>&1 | tail -n 30
    echo "bench ${SECONDS}s"
    ;;
  verbose)  # each QConv's route + timed candidates, and the per-step profile, at VB (256)
    W=/tmp/precis-gpu-work
    C="--calib-data $W/calib-resnet50 --calib-cache $W/resnet50.calib"
    for v in ${VWS:-1 0}; do
      [ "${PRECIS_CUDA_Q1X1WS:-1}" = 0 ] && [ $v = 1 ] && continue
      PRECIS_CUDA_Q1X1WS=$v PRECIS_VERBOSE=1 timeout ${VTO:-150} $B/precis bench $W/resnet50.onnx --device cuda \
        --precision int8 --shapes input:${VB:-256}x3x224x224 $C --warmup 3 --iterations 10 --profile \
        --json > $OUT/prof$v.json 2> $OUT/verbose$v.log
      echo "== Q1X1WS=$v: $(grep -c 'timed ms' $OUT/verbose$v.log) timed, routes:"
      grep -o "m=[0-9]*: [a-zA-Z0-9 ]*[,(]" $OUT/verbose$v.log | sed 's/m=[0-9]*: //' | sort | uniq -c
      python3 $D/analyze.py $OUT/prof$v.json ${VB:-256} > $OUT/groups$v.txt 2>&1; tail -n 6 $OUT/groups$v.txt
    done
    grep "1x1 K" $OUT/verbose${PRECIS_CUDA_Q1X1WS:-1}.log | sed 's/.*node .\/m\///; s/\/Conv.//; s/timed ms: lt/lt/; s/ 128x128 [0-9.]* 128x64.*wgmma 128x64 [0-9.]*//' | cut -c1-400
    ;;
  ab)     # precis only: PRECIS_CUDA_Q1X1WS=0 (before) vs default (after), interleaved
    [ "${PRECIS_CUDA_Q1X1WS:-1}" = 0 ] && { echo "ab skipped (tests failed)"; continue; }
    for r in $(seq ${AB_ROUNDS:-2}); do
      for v in 0 1; do
        echo "== Q1X1WS=$v round $r"
        PRECIS_CUDA_Q1X1WS=$v PYTHONUNBUFFERED=1 OUT=$OUT/ab$v$r bash $ROOT/bench/gpu/run.sh bench -- \
          --models resnet50 --int8 --no-correctness --batches resnet50=${VB:-256} --only int8 \
          2>&1 | grep -i "int8\|error" | tail -n 4
      done
    done
    ;;
  esac
done
cd $OUT && tar -cJf /tmp/cuda18r_out.tar.xz . && rm -rf $OUT/* && mv /tmp/cuda18r_out.tar.xz $OUT/
exit $rc
