#!/usr/bin/env bash
# cuda15t's device script. go.sh BIN STEP...  (BIN: base = main's binary, new = this branch's)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd); cd "$ROOT"
C=$ROOT/.gpu/cuda15t; BIN=$1; shift
[ -d /tmp/$BIN ] || { mkdir -p /tmp/$BIN; python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" $C/$BIN.tar.xz /tmp/$BIN; }
B=$(ls -d /tmp/$BIN/build-gpu* | head -1); P=$B/precis
export PRECIS_LIBS=$ROOT/.gpu/lib PRECIS_BUILD=$B
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
  [ -f $W/bert.onnx ] || PYTHONUNBUFFERED=1 python3 bench/gpu/bench.py --precis "$P" --out /tmp/abx \
      --models bert,minilm --fp8 --no-speed --no-compile > $OUT/export.log 2>&1
}
sh64="input_ids:64x128,attention_mask:64x128,token_type_ids:64x128"
pb() { # pb MODEL BATCH PRECISION LABEL ENV...
  local m=$1 b=$2 pr=$3 lab=$4; shift 4
  local sh="input_ids:${b}x128,attention_mask:${b}x128,token_type_ids:${b}x128"
  local ca=""; [ "$pr" = fp8 ] && ca="--calib-data $W/calib-$m --calib-cache $W/$m.calib"
  local ms=$(env "$@" "$P" bench $W/$m.onnx --device cuda --precision $pr --shapes "$sh" \
    --warmup 50 --iterations 300 --json $ca --timing-cache $W/$m.$pr.b$b.$BIN.tc 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["device_ms_p50"], "graph", j.get("cuda_graph"))')
  echo "$BIN $m b$b $pr $lab: $ms" | tee -a $OUT/ab.txt
}
for step in "$@"; do
echo "== $step at ${SECONDS}s"
case "$step" in
graph)
  export_models
  for m in bert minilm; do python3 $C/graph.py $W/$m.onnx > $OUT/graph_$m.txt 2>&1; done
  head -c 6000 $OUT/graph_bert.txt
  ;;
profile)
  export_models
  for m in bert minilm; do
    PRECIS_CUDA_GRAPHS=0 "$P" bench $W/$m.onnx --device cuda --precision fp8 --shapes "$sh64" --warmup 20 --iterations 50 \
      --profile --profile-out /tmp/prof_$m.json --calib-data $W/calib-$m --calib-cache $W/$m.calib --timing-cache $W/$m.fp8.b64.$BIN.tc > $OUT/profile_${BIN}_$m.txt 2>&1
  done
  head -n 60 $OUT/profile_${BIN}_bert.txt
  ;;
ncu)
  for m in ${NCU_MODELS:-bert minilm}; do
  [ $SECONDS -gt ${NCUSTOP:-9999} ] && { echo "ncu skipped at ${SECONDS}s"; break; }
  export_models
  timeout 150 python3 bench/gpu/ncu_steps.py --precis "$P" --ncu "$NCU" $W/$m.onnx --shapes "$sh64" \
    --precision fp8 -- --calib-data $W/calib-$m --calib-cache $W/$m.calib --timing-cache $W/$m.fp8.b64.$BIN.tc > $OUT/ncu_${BIN}_${m}.txt 2>&1
  head -n 1 $OUT/ncu_${BIN}_$m.txt; sed -n '/^by kernel/,$p' $OUT/ncu_${BIN}_$m.txt | head -n 20
  done
  ;;
nculn)
  m=bert; ex="--calib-data $W/calib-$m --calib-cache $W/$m.calib --timing-cache $W/$m.fp8.b64.$BIN.tc"
  PRECIS_CUDA_GRAPHS=0 timeout 90 "$NCU" -k regex:k_layernorm -s 30 -c 1 --section SpeedOfLight \
    --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats \
    "$P" bench $W/$m.onnx --device cuda --precision fp8 --shapes "$sh64" --warmup 1 --iterations 3 $ex > $OUT/ncu_ln_${BIN}.txt 2>&1
  grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|DRAM Throughput|Memory Throughput|Compute \(SM\)|Warp Cycles Per Issued|Issued Ipc|Stall" $OUT/ncu_ln_${BIN}.txt | head -n 24
  ;;
ab)
  export_models
  ABS=("X=1" "PRECIS_CUDA_FLASH_MINB=2" "PRECIS_CUDA_FLASH_MINB=4" "PRECIS_CUDA_MASK_ROW=0" "PRECIS_CUDA_LN_FASTQ=0" "PRECIS_CUDA_MASK_ROW=0 PRECIS_CUDA_LN_FASTQ=0 PRECIS_CUDA_CAST8=0 PRECIS_CUDA_FLASH_MINB=2")
  for r in ${ROUNDS:-1 2}; do
    for e in "${ABS[@]}"; do
      [ $SECONDS -gt ${ABSTOP:-470} ] && { echo "ab stopped at ${SECONDS}s"; break 2; }
      pb bert 64 fp8 "$e" $e; pb minilm 64 fp8 "$e" $e; done
  done
  ;;
ab1)
  export_models
  pb bert 64 fp8 default X=1; pb minilm 64 fp8 default X=1
  ;;
tests)
  timeout 300 $B/tests/cuda/test_cuda_ops > $OUT/test_cuda_ops.log 2>&1 || rc=1
  tail -n 2 $OUT/test_cuda_ops.log; grep -B2 "CHECK failed" $OUT/test_cuda_ops.log | head -20
  (cd tests/cli && timeout 200 python3 test_fp8.py "$P") > $OUT/test_fp8.log 2>&1 || rc=1
  tail -n 3 $OUT/test_fp8.log
  ;;
bench)
  OUT=$OUT/bench bench/gpu/run.sh bench -- --models bert,minilm --fp8 --batches bert=1,64 minilm=1,64 || rc=1
  ;;
esac
done
echo "== done at ${SECONDS}s"
exit $rc
