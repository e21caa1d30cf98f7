#!/bin/bash
# cuda20m device script (from gpu_phase19w_go.sh): go.sh [test] [bench] [ab] [prof] [check]
# (as .gpu/cuda20m/go.sh, carried with bg.tar.xz: stripped precis + tests/cuda/test_cuda_int8,
# test_cuda_cnn under build-gpu-bins/, and analyze.py = gpu_phase15r_analyze.py). "Off" (v=0) =
# PRECIS_CUDA_STEM_POOL=0 (main: the stem conv, then the MaxPool step), "on" (v=1) = the
# defaults (the MaxPool fused into the stem kernel). Every precis run under a timeout.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$ROOT/.gpu/cuda20m
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
W=/tmp/precis-gpu-work
C="--calib-data $W/calib-resnet50 --calib-cache $W/resnet50.calib"
for ph in "$@"; do
  case "$ph" in
  test)
    for t in test_cuda_int8 test_cuda_cnn; do
      [ -x $B/tests/cuda/$t ] || continue
      echo "== $t"; SECONDS=0
      timeout ${TT:-200} $B/tests/cuda/$t > $OUT/$t.log 2>&1; r=$?
      echo "rc=$r ${SECONDS}s"; tail -n 2 $OUT/$t.log; grep -B2 -A3 "FAIL\|CHECK failed\|failed:" $OUT/$t.log | head -40
      grep -A3 "MaxPool fused" $OUT/$t.log | head -4
      [ $r -eq 0 ] || rc=1
    done
    [ $rc -eq 0 ] || break  # no timings of a failing build
    ;;
  bench)  # torch side by side, defaults (also exports resnet50.onnx + calibration into $W)
    SECONDS=0
    PYTHONUNBUFFERED=1 OUT=$OUT/bench timeout ${BTO:-300} bash $ROOT/bench/gpu/run.sh bench -- --models resnet50 --int8 \
      --no-correctness --batches resnet50=${BB:-1,256} 2>&1 | tail -n 30
    echo "bench ${SECONDS}s"
    ;;
  ab)     # precis only: off (before) vs on (after), interleaved
    for r in $(seq ${AB_ROUNDS:-2}); do
      for v in ${AB_VALS:-0 1}; do
        echo "== on=$v round $r"
        env PRECIS_CUDA_STEM_POOL=$v PYTHONUNBUFFERED=1 OUT=$OUT/ab$v$r timeout ${ATO:-150} bash $ROOT/bench/gpu/run.sh bench -- \
          --models resnet50 --int8 --no-correctness --batches resnet50=${VB:-256} --only int8 \
          2>&1 | grep -i "int8\|error" | tail -n 4
      done
    done
    ;;
  prof)  # per-step profile at VB (256), off and on; the steps before layer1
    for v in ${VV:-0 1}; do
      env PRECIS_CUDA_STEM_POOL=$v PRECIS_VERBOSE=1 timeout ${VTO:-150} $B/precis bench $W/resnet50.onnx --device cuda \
        --precision int8 --shapes input:${VB:-256}x3x224x224 $C --warmup 3 --iterations 10 --profile \
        --json > $OUT/prof$v.json 2> $OUT/verbose$v.log
      echo "== on=$v rc=$?: $(grep -c 'timed ms' $OUT/verbose$v.log) timed"
      grep "conv1/Conv\|MaxPool fused" $OUT/verbose$v.log | cut -c1-300 | head -3
      python3 $D/analyze.py $OUT/prof$v.json ${VB:-256} > $OUT/groups$v.txt 2>&1; tail -n 8 $OUT/groups$v.txt
      python3 -c "import json; p = json.load(open('$OUT/prof$v.json')); [print(s['name'], s['ms']) for s in p['profile'][:6]]"
    done
    ;;
  check)  # model level: the fused plan's output == the unfused one's, bytes (b8, random input)
    python3 -c "import numpy as np; np.save('/tmp/cx.npy', np.random.RandomState(5).randn(${CB:-8}, 3, 224, 224).astype('float32'))"
    for v in 0 1; do
      PRECIS_CUDA_STEM_POOL=$v timeout 150 $B/precis build $W/resnet50.onnx -o /tmp/r$v.plan --device cuda \
        --precision int8 --shapes input:${CB:-8}x3x224x224 $C > /tmp/b$v.log 2>&1 || { echo "build $v failed"; tail -3 /tmp/b$v.log; }
      PRECIS_CUDA_STEM_POOL=$v timeout 100 $B/precis run /tmp/r$v.plan --input input=/tmp/cx.npy -o /tmp/o$v -q \
        ${RUNX:-} 2>&1 | tail -3
    done
    python3 - <<'PY'
import os, numpy as np
fs = sorted(os.listdir('/tmp/o0'))
for f in fs:
    a, b = np.load('/tmp/o0/' + f), np.load('/tmp/o1/' + f)
    print(f, a.shape, a.dtype, 'IDENTICAL' if a.shape == b.shape and a.tobytes() == b.tobytes() else
          f'DIFFER max abs {np.max(np.abs(a.astype(np.float64) - b)):.3g}', 'argmax', a.reshape(a.shape[0], -1).argmax(1)[:8])
PY
    ;;
  ab3)    # precis only, interleaved: each of AB_ENVS (';'-separated env sets) in turn
    IFS=';' read -ra ENVS <<< "${AB_ENVS:-PRECIS_CUDA_STEM_POOL=0;PRECIS_CUDA_STEM_POOL=1;PRECIS_CUDA_STEM=2}"
    for r in $(seq ${AB_ROUNDS:-2}); do
      i=0
      for ev in "${ENVS[@]}"; do
        echo "== $ev round $r"
        env $ev PYTHONUNBUFFERED=1 OUT=$OUT/ab$i$r timeout ${ATO:-150} bash $ROOT/bench/gpu/run.sh bench -- \
          --models resnet50 --int8 --no-correctness --batches resnet50=${VB:-256} --only int8 \
          2>&1 | grep -i "int8 graphs\|error" | tail -n 4
        i=$((i+1))
      done
    done
    ;;
  prof2)  # per-step profile of one env set (PE)
    env ${PE:-PRECIS_CUDA_STEM=2} PRECIS_VERBOSE=1 timeout ${VTO:-150} $B/precis bench $W/resnet50.onnx --device cuda \
      --precision int8 --shapes input:${VB:-256}x3x224x224 $C --warmup 3 --iterations 10 --profile \
      --json > $OUT/prof2.json 2> $OUT/verbose2.log
    echo "== ${PE:-PRECIS_CUDA_STEM=2} rc=$?"; grep "conv1/Conv" $OUT/verbose2.log | cut -c1-200 | head -2
    python3 $D/analyze.py $OUT/prof2.json ${VB:-256} > $OUT/groups2.txt 2>&1; tail -n 5 $OUT/groups2.txt
    python3 -c "import json; p = json.load(open('$OUT/prof2.json')); [print(s['name'], s['ms']) for s in p['profile'][:4]]"
    ;;
  check2)  # model level, one plan (built unfused: every conv's timed route in it) run unfused
           # and fused: the same routes elsewhere, so the outputs must be the same bytes
    python3 -c "import numpy as np; np.save('/tmp/cx.npy', np.random.RandomState(5).randn(${CB:-8}, 3, 224, 224).astype('float32'))"
    PRECIS_CUDA_STEM_POOL=0 timeout 150 $B/precis build $W/resnet50.onnx -o /tmp/r.plan --device cuda \
      --precision int8 --shapes input:${CB:-8}x3x224x224 $C > /tmp/b.log 2>&1 || { echo "build failed"; tail -3 /tmp/b.log; }
    i=0
    for ev in PRECIS_CUDA_STEM_POOL=0 PRECIS_CUDA_STEM_POOL=1 PRECIS_CUDA_STEM=2; do
      env $ev PRECIS_VERBOSE=1 timeout 100 $B/precis run /tmp/r.plan --input input=/tmp/cx.npy -o /tmp/o$i -q 2>&1 | grep "conv1/Conv\|rror" | cut -c1-160
      i=$((i+1))
    done
    python3 - <<'PY'
import os, numpy as np
for f in sorted(os.listdir('/tmp/o0')):
    a = np.load('/tmp/o0/' + f)
    for i in (1, 2):
        b = np.load(f'/tmp/o{i}/' + f)
        print(f, i, a.shape, a.dtype, 'IDENTICAL' if a.shape == b.shape and a.tobytes() == b.tobytes() else
              f'DIFFER max abs {np.max(np.abs(a.astype(np.float64) - b)):.3g}')
PY
    ;;
  esac
done
cd $OUT && tar -cJf /tmp/cuda20m_out.tar.xz . && rm -rf $OUT/* && mv /tmp/cuda20m_out.tar.xz $OUT/
exit $rc
