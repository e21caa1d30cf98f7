#!/usr/bin/env bash
# lead session 14: k32 linear-store tile (EP 2): test + EfficientNet b32 A/B
set -u
ROOT=$(pwd)
python3 -c "import tarfile; tarfile.open('.gpu/lead/bl.tar.xz').extractall('.gpu/lead')"
P=$ROOT/.gpu/lead/bl/precis
libdirs=$ROOT/.gpu/lib
for d in $(python3 -c "
import glob, os, site
for sp in site.getsitepackages():
    for d in glob.glob(os.path.join(sp, 'nvidia/*/lib')): print(d)"); do libdirs="$libdirs:$d"; done
export LD_LIBRARY_PATH="$libdirs:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
.gpu/lead/bl/tests/cuda/test_cuda_cnn > $OUT/test_cuda_cnn.log 2>&1; echo "test_cuda_cnn rc $?"; tail -n 3 $OUT/test_cuda_cnn.log
grep -i "fail" $OUT/test_cuda_cnn.log | head
M=$ROOT/.gpu/zoo/efficientnet_lite0.onnx
for b in 32 1; do SH="input:${b}x3x224x224"
PRECIS_VERBOSE=1 $P bench $M --device cuda --precision fp16 --shapes $SH --warmup 5 --iterations 20 --timing-cache /tmp/new$b.tc 2>&1 | grep -i "k32\|gpu time" > $OUT/verbose_b$b.txt
PRECIS_CUDA_HCONV_K32L=0 PRECIS_CUDA_STEM_PX=0 $P bench $M --device cuda --precision fp16 --shapes $SH --warmup 5 --iterations 20 --timing-cache /tmp/old$b.tc > /dev/null 2>&1
PRECIS_CUDA_STEM_PX=0 $P bench $M --device cuda --precision fp16 --shapes $SH --warmup 5 --iterations 20 --timing-cache /tmp/k32l$b.tc > /dev/null 2>&1
for r in 1 2 3; do
  for v in old k32l new; do
    e=X=1; [ $v = old ] && e="PRECIS_CUDA_HCONV_K32L=0 PRECIS_CUDA_STEM_PX=0"; [ $v = k32l ] && e=PRECIS_CUDA_STEM_PX=0
    ms=$(env $e $P bench $M --device cuda --precision fp16 --shapes $SH --warmup 50 --iterations 300 --json --timing-cache /tmp/$v$b.tc 2>/dev/null | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["device_ms_p50"], "graph", j.get("cuda_graph"))')
    echo "effnet b$b fp16 $v r$r: $ms" | tee -a $OUT/ab.txt
  done
done; done
grep -c "linear" $OUT/verbose_b32.txt; grep "linear\|k32" $OUT/verbose_b32.txt | cut -c1-220 | head -8
timeout 120 python3 bench/gpu/ncu_steps.py --precis "$P" --ncu "$NCU" $M --shapes "input:32x3x224x224" --precision fp16 -- --timing-cache /tmp/new32.tc > $OUT/ncu_steps_new.txt 2>&1
head -n 12 $OUT/ncu_steps_new.txt; sed -n '/^by kernel/,$p' $OUT/ncu_steps_new.txt | head -n 14
