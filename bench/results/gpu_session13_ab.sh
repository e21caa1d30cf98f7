#!/usr/bin/env bash
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd); cd "$ROOT"
[ -d .gpu/fin/build-gpu ] || python3 -c "import tarfile; tarfile.open('.gpu/fin/bg.tar.xz').extractall('.gpu/fin')"
B=$ROOT/.gpu/fin/build-gpu; P=$B/precis
libdirs=$ROOT/.gpu/lib
for d in $(python3 -c "
import glob, os, site
for sp in site.getsitepackages():
    for d in glob.glob(os.path.join(sp, 'nvidia/*/lib')): print(d)"); do libdirs="$libdirs:$d"; done
export LD_LIBRARY_PATH="$libdirs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
W=/tmp/precis-gpu-work
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
PYTHONUNBUFFERED=1 python3 bench/gpu/bench.py --precis "$P" --out /tmp/abx --models bert,minilm --fp8 --no-speed --no-compile > $OUT/export.log 2>&1
pb() { local m=$1 b=$2 pr=$3 lab=$4; shift 4
  local sh="input_ids:${b}x128,attention_mask:${b}x128,token_type_ids:${b}x128"
  local ca=""; [ "$pr" = fp8 ] && ca="--calib-data $W/calib-$m --calib-cache $W/$m.calib"
  local ms=$(env "$@" "$P" bench $W/$m.onnx --device cuda --precision $pr --shapes "$sh" \
    --warmup 50 --iterations 300 --json $ca --timing-cache $W/$m.$pr.b$b.tc 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["device_ms_p50"], "graph", j.get("cuda_graph"))')
  echo "$m b$b $pr $lab: $ms" | tee -a $OUT/ab.txt; }
for r in 1 2; do
  pb bert 64 fp8 default X=1
  pb bert 64 fp8 nw4 PRECIS_CUDA_FLASH_NW=4
  pb bert 64 fp8 minb1 PRECIS_CUDA_FLASH_MINB=1
  pb minilm 64 fp8 default X=1
  pb minilm 64 fp8 nw4 PRECIS_CUDA_FLASH_NW=4
done
sh="input_ids:64x128,attention_mask:64x128,token_type_ids:64x128"
timeout 150 python3 bench/gpu/ncu_steps.py --precis "$P" --ncu "$NCU" $W/bert.onnx --shapes "$sh" \
  --precision fp8 -- --calib-data $W/calib-bert --calib-cache $W/bert.calib --timing-cache $W/bert.fp8.b64.tc > $OUT/ncu_bert_b64_fp8.txt 2>&1
head -n 1 $OUT/ncu_bert_b64_fp8.txt; sed -n '/^by kernel/,$p' $OUT/ncu_bert_b64_fp8.txt | head -n 24
