#!/usr/bin/env bash
# cuda14t's device script (carried in .gpu/cuda14t with bg.tar.xz: the stripped GPU build).
#   go.sh tests   test_cuda_ops
#   go.sh ab      BERT b64 fp8 / fp16: flash MINB default vs PRECIS_CUDA_FLASH_MINB=2 (old)
#   go.sh b1      BERT / MiniLM b1 fp16: graph vs no graph, interleaved processes
#   go.sh ncu     the flash kernel's ncu sections at BERT b64 fp8; per-kernel BERT b1 fp16
#   go.sh bench   bench/gpu/bench.py (torch in the same run), the contract's command
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
[ -d /tmp/bg ] || python3 -c "import tarfile; tarfile.open('.gpu/cuda14t/bg.tar.xz').extractall('/tmp/bg')"
B=/tmp/bg/build-gpu-bins
P=$B/precis
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
      --models bert,minilm --fp8 --no-speed --no-compile > $OUT/ab_export.log 2>&1
}
pb() { # pb MODEL BATCH PRECISION LABEL ENV...: one precis bench process, its GPU p50
  local m=$1 b=$2 pr=$3 lab=$4; shift 4
  local sh="input_ids:${b}x128,attention_mask:${b}x128,token_type_ids:${b}x128"
  local ca=""; [ "$pr" = fp8 ] && ca="--calib-data $W/calib-$m --calib-cache $W/$m.calib"
  local ms=$(env "$@" "$P" bench $W/$m.onnx --device cuda --precision $pr --shapes "$sh" \
    --warmup 50 --iterations 300 --json $ca --timing-cache $W/$m.$pr.b$b.tc 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["device_ms_p50"], "graph", j.get("cuda_graph"))')
  echo "$m b$b $pr $lab: $ms" | tee -a $OUT/ab.txt
}
for step in "$@"; do
echo "== $step at ${SECONDS}s"
case "$step" in
tests)
  $B/tests/cuda/test_cuda_ops > $OUT/test_cuda_ops.log 2>&1 || rc=1
  tail -n 2 $OUT/test_cuda_ops.log; grep -i fail $OUT/test_cuda_ops.log | head -5
  ;;
ab)
  export_models
  pb bert 64 fp8 "minb=default" X=1
  pb bert 64 fp8 "minb=2(old)" PRECIS_CUDA_FLASH_MINB=2
  pb bert 64 fp16 "minb=default" X=1
  pb bert 64 fp16 "minb=2(old)" PRECIS_CUDA_FLASH_MINB=2
  ;;
b1)
  export_models
  for r in 1 2; do
    pb bert 1 fp16 "graph" X=1
    pb bert 1 fp16 "nograph" PRECIS_CUDA_GRAPHS=0
  done
  pb bert 1 fp16 "graph minb=2(old)" PRECIS_CUDA_FLASH_MINB=2
  pb minilm 1 fp16 "graph" X=1
  pb minilm 1 fp16 "nograph" PRECIS_CUDA_GRAPHS=0
  ;;
ncu)
  if [ $SECONDS -gt 430 ]; then echo "ncu skipped at ${SECONDS}s"; continue; fi
  m=bert; sh="input_ids:64x128,attention_mask:64x128,token_type_ids:64x128"
  ex="--calib-data $W/calib-$m --calib-cache $W/$m.calib --timing-cache $W/$m.fp8.b64.tc"
  for mb in 0; do
  PRECIS_CUDA_FLASH_MINB=$mb PRECIS_CUDA_GRAPHS=0 timeout 60 "$NCU" -k regex:k_flash -s 40 -c 1 --section SpeedOfLight \
    --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    "$P" bench $W/$m.onnx --device cuda --precision fp8 --shapes "$sh" --warmup 1 --iterations 3 $ex \
    > $OUT/ncu_flash_bert_b64_minb$mb.txt 2>&1
  echo "-- minb $mb"; grep -E "Duration|Registers Per|Local Memory|Achieved Occupancy|Theoretical Occupancy|DRAM Throughput|Compute \(SM\)" $OUT/ncu_flash_bert_b64_minb$mb.txt | head -n 12
  done
  sh1="input_ids:1x128,attention_mask:1x128,token_type_ids:1x128"
  timeout 70 python3 bench/gpu/ncu_steps.py --precis "$P" --ncu "$NCU" $W/bert.onnx --shapes "$sh1" \
    --precision fp16 -- --timing-cache $W/bert.fp16.b1.tc > $OUT/ncu_bert_b1_fp16.txt 2>&1 || rc=1
  head -n 1 $OUT/ncu_bert_b1_fp16.txt; sed -n '/^by kernel/,$p' $OUT/ncu_bert_b1_fp16.txt | head -n 14
  ;;
bench)
  OUT=$OUT/bench bench/gpu/run.sh bench -- --models bert,minilm --fp8 --batches bert=1,64 minilm=1,64 || rc=1
  ;;
esac
done
echo "== end at ${SECONDS}s"
exit $rc
