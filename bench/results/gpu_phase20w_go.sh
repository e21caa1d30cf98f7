#!/bin/bash
# cuda20w device script (from gpu_phase19w_go.sh): go.sh [test] [bench] [ab] [verbose] [ncu]
# (as .gpu/cuda20w/go.sh, carried with bg.tar.xz: stripped precis + tests/cuda/test_cuda_int8
# under build-gpu-bins/, and analyze.py = gpu_phase15r_analyze.py). "Off" (v=0) =
# PRECIS_CUDA_IGEMM_TI=0 (main before this phase: no TMA im2col tile among the candidates),
# "on" (v=1) = the defaults (key " ti"); v=2: PRECIS_CUDA_IGEMM_TI=128 (the 128 x 128 form
# also at Nout >= 256, key " ti128"). Every precis run under a timeout (a hang must not
# eat the call).
# Phases: test bench ab verbose ncu (VV: the verbose runs' values, default "1 0").
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$ROOT/.gpu/cuda20w
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
offv() { # the A/B's "off" environment (v=0) or the defaults (v=1)
  if [ "$1" = 0 ]; then echo "PRECIS_CUDA_IGEMM_TI=0"; elif [ "$1" = 2 ]; then echo "PRECIS_CUDA_IGEMM_TI=128"
  else echo "PRECIS_CUDA_IGEMM_TI=1"; fi
}
for ph in "$@"; do
  case "$ph" in
  test)
    for t in test_cuda_int8; do
      [ -x $B/tests/cuda/$t ] || continue
      echo "== $t"; SECONDS=0
      timeout ${TT:-200} $B/tests/cuda/$t > $OUT/$t.log 2>&1; r=$?
      echo "rc=$r ${SECONDS}s"; tail -n 2 $OUT/$t.log; grep -B2 -A3 "FAIL\|CHECK failed" $OUT/$t.log | head -60
      echo "t18 cases: $(grep -c "t18" $OUT/$t.log)"; grep "t18" $OUT/$t.log | head -n ${TL:-6}
      [ $r -eq 0 ] || rc=1
    done
    [ $rc -eq 0 ] || break  # no timings of a failing build
    ;;
  bench)  # torch side by side, defaults
    SECONDS=0
    PYTHONUNBUFFERED=1 OUT=$OUT/bench timeout ${BTO:-300} bash $ROOT/bench/gpu/run.sh bench -- --models resnet50 --int8 \
      --no-correctness --batches resnet50=1,256 2>&1 | tail -n 30
    echo "bench ${SECONDS}s"
    ;;
  ab)     # precis only: off (before) vs on (after), interleaved
    for r in $(seq ${AB_ROUNDS:-2}); do
      for v in ${AB_VALS:-0 1}; do
        echo "== on=$v round $r"
        env $(offv $v) PYTHONUNBUFFERED=1 OUT=$OUT/ab$v$r timeout ${ATO:-150} bash $ROOT/bench/gpu/run.sh bench -- \
          --models resnet50 --int8 --no-correctness --batches resnet50=${VB:-256} --only int8 \
          2>&1 | grep -i "int8\|error" | tail -n 4
      done
    done
    ;;
  verbose)  # each QConv's route + timed candidates, and the per-step profile, at VB (256)
    W=/tmp/precis-gpu-work
    C="--calib-data $W/calib-resnet50 --calib-cache $W/resnet50.calib"
    for v in ${VV:-1 0}; do
      env $(offv $v) PRECIS_VERBOSE=1 timeout ${VTO:-150} $B/precis bench $W/resnet50.onnx --device cuda \
        --precision int8 --shapes input:${VB:-256}x3x224x224 $C --warmup 3 --iterations 10 --profile \
        --json > $OUT/prof$v.json 2> $OUT/verbose$v.log
      echo "== on=$v: $(grep -c 'timed ms' $OUT/verbose$v.log) timed, routes:"
      grep -o "m=[0-9]*: [a-zA-Z0-9 ]*[,(]" $OUT/verbose$v.log | sed 's/m=[0-9]*: //' | sort | uniq -c
      python3 $D/analyze.py $OUT/prof$v.json ${VB:-256} > $OUT/groups$v.txt 2>&1; tail -n 6 $OUT/groups$v.txt
      python3 -c "import json; p = json.load(open('$OUT/prof$v.json')); [print(s['name'], s['ms']) for s in p['profile'][:3]]"
    done
    for v in ${VV:-1 0}; do grep "conv1/Conv" $OUT/verbose$v.log | sed 's/.*node .\/m\///' | cut -c1-420; done
    grep "timed ms" $OUT/verbose1.log | grep -v "1x1 K" | sed 's/.*node .\/m\///' | cut -c1-420 | head -${VL:-24}
    for v in ${VV:-1 0}; do  # the 3x3s: route taken, the ti candidate's time
      echo "== on=$v 3x3 routes"
      grep "conv2/Conv' m=.*timed ms" $OUT/verbose$v.log | sed 's/.*node .\/m\///' | \
        sed -E "s/^([^']*)' m=[0-9]*: ([^,]*),.*(wgmma ti 128x128 [-0-9.]*).*/\1: \2 | \3/"
    done
    ;;
  ncu)  # Nsight Compute of the ti tile (default routes; the timed choice's first launches of
        # k_igemm_ti: NCU_SKIPS, default 0 = layer1.0.conv2 (128 x 64 tiles), 16 = layer3.1.conv2
        # (64 x 256): 4 launches a 3x3 shape in the timing, in graph order)
    NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
    [ -n "$NCU" ] || { echo "no ncu"; continue; }
    W=/tmp/precis-gpu-work
    C="--calib-data $W/calib-resnet50 --calib-cache $W/resnet50.calib"
    for sk in ${NCU_SKIPS:-0 16}; do
      SECONDS=0
      PRECIS_CUDA_GRAPHS=0 timeout ${NTO:-100} $NCU -k regex:k_igemm_ti \
        --launch-skip $sk -c 1 --section SpeedOfLight --section Occupancy \
        --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        --section SchedulerStats $B/precis bench $W/resnet50.onnx --device cuda \
        --precision int8 --shapes input:${VB:-256}x3x224x224 $C --warmup 1 --iterations 1 \
        > $OUT/ncu_ti$sk.txt 2>&1
      echo "== ncu skip $sk rc=$? ${SECONDS}s"
      grep -E "k_igemm|Grid Size|Duration|Achieved Occupancy|Compute \(SM\) Thr|Memory Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|DRAM Throughput|Issue Slots Busy|Issued Warp Per|No Eligible|Warp Cycles Per Issued|highest-utilized|stalled|Executed Ipc" $OUT/ncu_ti$sk.txt | cut -c1-220 | head -n 40
    done
    ;;
  esac
done
cd $OUT && tar -cJf /tmp/cuda20w_out.tar.xz . && rm -rf $OUT/* && mv /tmp/cuda20w_out.tar.xz $OUT/
exit $rc
