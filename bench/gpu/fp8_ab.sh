#!/usr/bin/env bash
# fp8 A/B on the GPU machine after bench.py has exported the models (phase 4/5 helper):
# BERT / MiniLM fp8 at b1 and b64 with cuBLASLt's fp8 fast accumulation off (default) and
# on (PRECIS_CUDA_FP8_FAST_ACCUM=1), fp16 with and without the packed Q/K/V GEMM
# (PRECIS_CUDA_QKV=0), and a per-step profile of BERT b64 fp8 with fast accumulation.
#   bench/gpu/fp8_ab.sh PRECIS WORK   (WORK: bench.py's --work, holding bert.onnx, calib-bert/)
P=$1; W=${2:-/tmp/precis-gpu-work}
shapes() { echo "input_ids:$2x128,attention_mask:$2x128,token_type_ids:$2x128"; }
one() { # model batch precision env...
  m=$1 b=$2 p=$3; shift 3
  c=(); [ "$p" != fp16 ] && c=(--calib-data "$W/calib-$m" --calib-cache "$W/$m.calib")
  r=$(env "$@" timeout 120 "$P" bench "$W/$m.onnx" --device cuda --precision "$p" \
      --shapes "$(shapes "$m" "$b")" --warmup 10 --iterations 100 --json "${c[@]}" 2>/dev/null |
      python3 -c "import json,sys; j=json.load(sys.stdin); print(j['device_ms_p50'])")
  echo "$m b$b $p $* : gpu ${r:-FAILED} ms"
}
for m in bert minilm; do for b in 1 64; do
  one $m $b fp8 PRECIS_CUDA_FP8_FAST_ACCUM=0
  one $m $b fp8 PRECIS_CUDA_FP8_FAST_ACCUM=1
  one $m $b fp16 PRECIS_CUDA_QKV=1
  one $m $b fp16 PRECIS_CUDA_QKV=0
done; done
PRECIS_CUDA_FP8_FAST_ACCUM=1 timeout 120 "$P" bench "$W/bert.onnx" --device cuda --precision fp8 \
  --shapes "$(shapes bert 64)" --warmup 3 --iterations 10 --profile --calib-data "$W/calib-bert" \
  --calib-cache "$W/bert.calib" 2>&1 | grep -E "QMatMul|Quantize|Dequantize|FusedMatMul|Attention|Layer" | head -20
