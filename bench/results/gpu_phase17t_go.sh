#!/usr/bin/env bash
# cuda17t's device script: go.sh STEP...  (binaries: new = branch cuda17t, base = main 97a8a2c's build)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd); cd "$ROOT"
C=$ROOT/.gpu/cuda17t
[ -d /tmp/c17/new ] || { mkdir -p /tmp/c17; python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" $C/bins.tar.xz /tmp/c17; }
export PRECIS_LIBS=$ROOT/.gpu/lib
libdirs=$PRECIS_LIBS
for d in $(python3 -c "
import glob, os, site
for sp in site.getsitepackages():
    for d in glob.glob(os.path.join(sp, 'nvidia/*/lib')): print(d)"); do libdirs="$libdirs:$d"; done
export LD_LIBRARY_PATH="$libdirs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W=/tmp/precis-gpu-work
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
rc=0
export_models() {
  [ -f $W/minilm.onnx ] || PYTHONUNBUFFERED=1 python3 bench/gpu/bench.py --precis /tmp/c17/new/precis --out /tmp/abx \
      --models bert,minilm --fp8 --no-speed --no-compile > $OUT/export.log 2>&1
  grep -iE "cos|fp8|error" $OUT/export.log | tail -n 16
}
pb() { # pb BIN MODEL BATCH LABEL ENV...
  local bin=$1 m=$2 b=$3 lab=$4; shift 4
  local sh="input_ids:${b}x128,attention_mask:${b}x128,token_type_ids:${b}x128"
  local ms=$(env "$@" /tmp/c17/$bin/precis bench $W/$m.onnx --device cuda --precision fp8 --shapes "$sh" \
    --warmup 50 --iterations 300 --json --calib-data $W/calib-$m --calib-cache $W/$m.calib --timing-cache $W/$m.b$b.$bin.tc 2>/dev/null \
    | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["device_ms_p50"], "graph", j.get("cuda_graph"))')
  echo "$bin $m b$b fp8 $lab: $ms  (t=${SECONDS}s)" | tee -a $OUT/ab.txt
}
sh64="input_ids:64x128,attention_mask:64x128,token_type_ids:64x128"
for step in "$@"; do
echo "== $step at ${SECONDS}s"
case "$step" in
export) export_models ;;
ab)
  for r in 1 2; do
    pb base minilm 64 default X=1; pb new minilm 64 default X=1; pb new minilm 64 MASK_IDS=0 PRECIS_CUDA_MASK_IDS=0
  done
  pb base bert 64 default X=1; pb new bert 64 default X=1
  ;;
exportm)
  [ -f $W/minilm.onnx ] || PYTHONUNBUFFERED=1 python3 bench/gpu/bench.py --precis /tmp/c17/new/precis --out $OUT/acc \
      --models minilm --fp8 --no-speed --no-compile > $OUT/export.log 2>&1
  grep -E "^\| minilm" $OUT/acc/gpu_bench.md | head -n 12
  ;;
ab3)
  for r in 1 2; do
    pb base minilm 64 default X=1; pb new minilm 64 default X=1; pb new minilm 64 GATHER_I32=0 PRECIS_CUDA_GATHER_I32=0
  done
  pb new minilm 64 LN_STAGE=0 PRECIS_CUDA_LN_STAGE=0; pb new minilm 64 MASK_IDS=0 PRECIS_CUDA_MASK_IDS=0
  pb base minilm 64 default X=1; pb new minilm 64 default X=1
  ;;
ab2)
  for r in 1 2; do
    pb base minilm 64 default X=1; pb new minilm 64 default X=1; pb new minilm 64 LN_STAGE=0 PRECIS_CUDA_LN_STAGE=0
    pb new minilm 64 GATHER_PACK=0 PRECIS_CUDA_GATHER_PACK=0
  done
  pb new minilm 64 all3off PRECIS_CUDA_LN_STAGE=0 PRECIS_CUDA_GATHER_PACK=0 PRECIS_CUDA_MASK_IDS=0
  pb base bert 64 default X=1; pb new bert 64 default X=1; pb new bert 64 LN_STAGE=0 PRECIS_CUDA_LN_STAGE=0
  ;;
knobs)
  for e in PRECIS_CUDA_FLASH_NW=4 PRECIS_CUDA_FLASH_MINB=4 PRECIS_CUDA_FLASH_MINB=2 PRECIS_CUDA_LN_LPR=32 PRECIS_CUDA_LN_MINB=6 PRECIS_CUDA_LN_FORM=1; do
    [ $SECONDS -gt ${KSTOP:-400} ] && { echo "knobs stopped at ${SECONDS}s"; break; }
    pb new minilm 64 "$e" $e
  done
  pb new minilm 64 default X=1
  ;;
profile)
  PRECIS_CUDA_GRAPHS=0 timeout 60 /tmp/c17/new/precis bench $W/minilm.onnx --device cuda --precision fp8 --shapes "$sh64" --warmup 20 --iterations 50 \
    --profile --calib-data $W/calib-minilm --calib-cache $W/minilm.calib --timing-cache $W/minilm.b64.new.tc > $OUT/profile_new_minilm.txt 2>&1
  sed -n 1,20p $OUT/profile_new_minilm.txt | cut -c1-110
  ;;
ncusteps)
  for bin in ${NCUBINS:-base}; do
  timeout 150 python3 bench/gpu/ncu_steps.py --precis /tmp/c17/$bin/precis $W/minilm.onnx --shapes "$sh64" --precision fp8 --ncu "$NCU" \
    --json $OUT/ncu_${bin}_minilm.json -- --calib-data $W/calib-minilm --calib-cache $W/minilm.calib --timing-cache $W/minilm.b64.$bin.tc > $OUT/ncu_${bin}_minilm.txt 2>&1
  tail -n 30 $OUT/ncu_${bin}_minilm.txt
  done
  ;;
nculn)
  PRECIS_CUDA_GRAPHS=0 timeout 90 "$NCU" -k regex:"k_layernorm|k_flash|k_gather|k_sum3" -s 20 -c 6 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats /tmp/c17/new/precis bench $W/minilm.onnx \
    --device cuda --precision fp8 --shapes "$sh64" --warmup 1 --iterations 3 \
    --calib-data $W/calib-minilm --calib-cache $W/minilm.calib --timing-cache $W/minilm.b64.new.tc > $OUT/ncu_sections_minilm.txt 2>&1
  grep -E "^  k_|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Compute \(SM\)|Warp Cycles Per Issued|Issued Ipc|Block Size|Grid Size|Waves" $OUT/ncu_sections_minilm.txt | head -n 100
  ;;
tests)
  [ -x /tmp/c17/new/test_cuda_ops ] && { timeout ${TTIME:-150} /tmp/c17/new/test_cuda_ops > $OUT/test_cuda_ops.log 2>&1 || rc=1; tail -n 2 $OUT/test_cuda_ops.log; grep -B2 "CHECK failed" $OUT/test_cuda_ops.log | head -20; }
  ;;
bench)
  mkdir -p /tmp/c17/bg; cp /tmp/c17/new/precis /tmp/c17/bg/precis
  PRECIS_BUILD=/tmp/c17/bg OUT=$OUT/bench bench/gpu/run.sh bench -- --models bert,minilm --fp8 --batches bert=1,64 minilm=1,64 > $OUT/bench.log 2>&1 || rc=1
  grep -E "^\|" $OUT/bench/gpu_bench.md | head -n 40; tail -n 5 $OUT/bench.log
  ;;
esac
done
echo "== done at ${SECONDS}s"
exit $rc
