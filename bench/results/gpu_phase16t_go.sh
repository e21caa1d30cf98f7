#!/usr/bin/env bash
# cuda16t's device script: go.sh STEP...  (binaries: new = branch cuda16t 41f1ecc, base = main's)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd); cd "$ROOT"
C=$ROOT/.gpu/cuda16t
[ -d /tmp/c16/new ] || { mkdir -p /tmp/c16; python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" $C/bins.tar.xz /tmp/c16; }
export PRECIS_LIBS=$ROOT/.gpu/lib
libdirs=$PRECIS_LIBS
for d in $(python3 -c "
import glob, os, site
for sp in site.getsitepackages():
    for d in glob.glob(os.path.join(sp, 'nvidia/*/lib')): print(d)"); do libdirs="$libdirs:$d"; done
export LD_LIBRARY_PATH="$libdirs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W=/tmp/precis-gpu-work
rc=0
export_models() {
  [ -f $W/minilm.onnx ] || PYTHONUNBUFFERED=1 python3 bench/gpu/bench.py --precis /tmp/c16/new/build-gpu/precis --out /tmp/abx \
      --models bert,minilm --fp8 --no-speed --no-compile > $OUT/export.log 2>&1
  tail -n 12 $OUT/export.log
}
pb() { # pb BIN MODEL BATCH LABEL ENV...
  local bin=$1 m=$2 b=$3 lab=$4; shift 4
  local sh="input_ids:${b}x128,attention_mask:${b}x128,token_type_ids:${b}x128"
  local ms=$(env "$@" /tmp/c16/$bin/build-gpu/precis bench $W/$m.onnx --device cuda --precision fp8 --shapes "$sh" \
    --warmup 50 --iterations 300 --json --calib-data $W/calib-$m --calib-cache $W/$m.calib --timing-cache $W/$m.b$b.$bin.tc 2>/dev/null \
    | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["device_ms_p50"], "graph", j.get("cuda_graph"))')
  echo "$bin $m b$b fp8 $lab: $ms  (t=${SECONDS}s)" | tee -a $OUT/ab.txt
}
for step in "$@"; do
echo "== $step at ${SECONDS}s"
case "$step" in
tests)
  timeout 200 /tmp/c16/new/build-gpu/tests/cuda/test_cuda_ops > $OUT/test_cuda_ops.log 2>&1 || rc=1
  tail -n 2 $OUT/test_cuda_ops.log; grep -B2 "CHECK failed" $OUT/test_cuda_ops.log | head -20; grep -c "sum3" $OUT/test_cuda_ops.log
  ;;
ab)
  export_models
  for r in 1 2; do
    pb base minilm 64 default X=1; pb new minilm 64 default X=1; pb new minilm 64 SUM3=0 PRECIS_CUDA_SUM3=0
  done
  pb base bert 64 default X=1; pb new bert 64 default X=1
  ;;
abx)
  for e in PRECIS_CUDA_FLASH_NW=4 PRECIS_CUDA_SUM3V=0 PRECIS_CUDA_FLASH_SPLIT=1; do
    [ $SECONDS -gt ${ABSTOP:-300} ] && { echo "abx stopped at ${SECONDS}s"; break; }
    pb new minilm 64 "$e" $e
  done
  ;;
nccflash)
  [ $SECONDS -gt ${NCUSTOP:-300} ] && { echo "ncu skipped at ${SECONDS}s"; continue; }
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
  PRECIS_CUDA_GRAPHS=0 timeout 60 "$NCU" -k regex:k_flash -s 12 -c 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats /tmp/c16/new/build-gpu/precis bench $W/minilm.onnx \
    --device cuda --precision fp8 --shapes "input_ids:64x128,attention_mask:64x128,token_type_ids:64x128" --warmup 1 --iterations 3 \
    --calib-data $W/calib-minilm --calib-cache $W/minilm.calib --timing-cache $W/minilm.b64.new.tc > $OUT/ncu_flash_minilm.txt 2>&1
  grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|DRAM Throughput|Memory Throughput|Compute \(SM\)|Warp Cycles Per Issued|Issued Ipc|Stall|Block Size|Grid Size|Waves" $OUT/ncu_flash_minilm.txt | head -n 30
  ;;
profile)
  sh64="input_ids:64x128,attention_mask:64x128,token_type_ids:64x128"
  for bin in base new; do
  PRECIS_CUDA_GRAPHS=0 timeout 60 /tmp/c16/$bin/build-gpu/precis bench $W/minilm.onnx --device cuda --precision fp8 --shapes "$sh64" --warmup 20 --iterations 50 \
    --profile --calib-data $W/calib-minilm --calib-cache $W/minilm.calib --timing-cache $W/minilm.b64.$bin.tc > $OUT/profile_${bin}_minilm.txt 2>&1
  done
  head -n 30 $OUT/profile_new_minilm.txt
  ;;
bench)
  PRECIS_BUILD=/tmp/c16/new/build-gpu OUT=$OUT/bench bench/gpu/run.sh bench -- --models bert,minilm --fp8 --batches bert=1,64 minilm=1,64 > $OUT/bench.log 2>&1 || rc=1
  grep -E "^\|" $OUT/bench/gpu_bench.md | head -n 30; tail -n 5 $OUT/bench.log
  ;;
esac
done
echo "== done at ${SECONDS}s"
exit $rc
