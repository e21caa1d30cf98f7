#!/bin/bash
# cuda20s device script (from gpu_phase19w_go.sh): go.sh [test] [verbose] [ncu] [ab] [bench] (as
# .gpu/cuda20s/go.sh, carried with bg.tar.xz: stripped precis + tests/cuda/test_cuda_int8 under
# build-gpu-bins/, and analyze.py = gpu_phase15r_analyze.py). "Off" (v=0) = PRECIS_CUDA_Q1X1ST=0
# (main before this phase), "on" (v=1) = the defaults (the small-K streaming tile in the timed
# choice, key " st"); verbose / ab / bench also take f1 / f2 / f3 (on, PRECIS_CUDA_Q1X1ST_F
# forced: BM 64 / 128 on 2 consumer warpgroups, BM 128 on 4). BV: bench's values (default 1).
# Every precis run under a timeout (a hang must not eat the call).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$ROOT/.gpu/cuda20s
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
offv() { # the A/B's "off" environment (v=0), the defaults (v=1), BM forced (b64 / b128)
  case "$1" in
  0) echo "PRECIS_CUDA_Q1X1ST=0" ;;
  f1|f2|f3) echo "PRECIS_CUDA_Q1X1ST_F=${1#f}" ;;
  *) echo "PRECIS_CUDA_Q1X1ST=1" ;;
  esac
}
W=/tmp/precis-gpu-work
C="--calib-data $W/calib-resnet50 --calib-cache $W/resnet50.calib"
for ph in "$@"; do
  case "$ph" in
  test)
    for t in test_cuda_int8; do
      [ -x $B/tests/cuda/$t ] || continue
      echo "== $t"; SECONDS=0
      timeout ${TT:-200} $B/tests/cuda/$t > $OUT/$t.log 2>&1; r=$?
      echo "rc=$r ${SECONDS}s"; tail -n 2 $OUT/$t.log; grep -B2 -A3 "FAIL\|CHECK failed" $OUT/$t.log | head -60
      grep -c "t17" $OUT/$t.log
      [ $r -eq 0 ] || rc=1
    done
    [ $rc -eq 0 ] || break  # no timings of a failing build
    ;;
  prep)   # the ONNX export + calibration (run.sh bench once, int8 b1 only)
    SECONDS=0
    PYTHONUNBUFFERED=1 OUT=$OUT/prep timeout ${PTO:-200} bash $ROOT/bench/gpu/run.sh bench -- --models resnet50 \
      --int8 --no-correctness --batches resnet50=1 --only int8 2>&1 | grep -i "int8\|error" | tail -n 3
    echo "prep ${SECONDS}s"; rm -rf $OUT/prep
    ;;
  bench)  # torch side by side, defaults (or BV's settings)
    for v in ${BV:-1}; do
      SECONDS=0; echo "== bench $v"
      env $(offv $v) PYTHONUNBUFFERED=1 OUT=$OUT/bench$v timeout ${BTO:-300} bash $ROOT/bench/gpu/run.sh bench -- --models resnet50 --int8 \
        --no-correctness --batches resnet50=1,256 2>&1 | grep "resnet50 | 256\|resnet50 | 1 .*int8\|resnet50 | 1 .*reduce"
      echo "bench ${SECONDS}s"
    done
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
    for v in ${VV:-1 0}; do
      env $(offv $v) PRECIS_VERBOSE=1 timeout ${VTO:-150} $B/precis bench $W/resnet50.onnx --device cuda \
        --precision int8 --shapes input:${VB:-256}x3x224x224 $C --warmup 3 --iterations 10 --profile \
        --json > $OUT/prof$v.json 2> $OUT/verbose$v.log
      echo "== on=$v: $(grep -c 'timed ms' $OUT/verbose$v.log) timed, routes:"
      grep -o "m=[0-9]*: [a-zA-Z0-9 ]*[,(]" $OUT/verbose$v.log | sed 's/m=[0-9]*: //' | sort | uniq -c
      python3 $D/analyze.py $OUT/prof$v.json ${VB:-256} > $OUT/groups$v.txt 2>&1; tail -n 6 $OUT/groups$v.txt
    done
    for v in ${VV:-1 0}; do  # the 1x1s with K <= 256: chosen route, ws and st times
      echo "== $v"
      grep "timed ms" $OUT/verbose$v.log | grep "1x1 K \(16\|32\|48\|64\|128\|256\) " | sed 's/.*node .\/m\///' | \
        sed -E 's/^([^ ]*) m=([0-9]*): ([^(]*)\((1x1 K [0-9]+ N [0-9]+).*ws 128x128 ([0-9.-]+)( q1x1 st 128x256 ([0-9.-]+))?.*/\1 m=\2 \4: \3| ws \5 st \7/'
      grep "timed ms" $OUT/verbose$v.log | grep "1x1 K \(16\|32\|48\|64\|128\|256\) " | sed 's/.*node .\/m\///' | \
        grep -o "^[^ ]* m=[0-9]*\|lt [0-9.]*" | paste - - | head -20
    done
    ;;
  ncu)  # Nsight Compute on layer1.0.conv3's ws and st launches (the timing's, residual EPI 2)
    NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
    [ -n "$NCU" ] || { echo "no ncu"; continue; }
    SECONDS=0
    env $(offv ${NV:-1}) PRECIS_CUDA_GRAPHS=0 timeout ${NTO:-150} $NCU --clock-control none --kernel-name-base mangled \
      -k "regex:${NK:-k_q1x1_(st|ws)ILb0ELi2E}" -c ${NCU_C:-8} --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats \
      --section SchedulerStats $B/precis bench $W/resnet50.onnx --device cuda \
      --precision int8 --shapes input:${VB:-256}x3x224x224 $C --warmup 1 --iterations 1 \
      > $OUT/ncu.txt 2>&1
    echo "== ncu rc=$? ${SECONDS}s"
    grep -E "k_q1x1|Grid Size|Duration|Registers Per|DRAM Throughput|Memory Throughput|L2 Hit|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Dynamic Shared|Stall|stall" $OUT/ncu.txt | cut -c1-160 | head -n 90
    ;;
  esac
done
cd $OUT && tar -cJf /tmp/cuda20s_out.tar.xz . && rm -rf $OUT/* && mv /tmp/cuda20s_out.tar.xz $OUT/
exit $rc
