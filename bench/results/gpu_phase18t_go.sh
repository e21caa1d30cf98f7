#!/usr/bin/env bash
# cuda18t's device script: go.sh STEP...  (binaries: new = branch cuda18t, base = main's CUDA code,
# the lead's session-15 build e355334 from .gpu/fin2)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd); cd "$ROOT"
C=$ROOT/.gpu/cuda18t
B=/tmp/c18
[ -d $B/new ] || { mkdir -p $B; python3 -c "import tarfile,sys; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" $C/bins.tar.xz $B; }
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
sh64="input_ids:64x128,attention_mask:64x128,token_type_ids:64x128"
pb() { # pb BIN MODEL BATCH LABEL ENV...
  local bin=$1 m=$2 b=$3 lab=$4; shift 4
  local sh="input_ids:${b}x128,attention_mask:${b}x128,token_type_ids:${b}x128"
  local ms=$(env "$@" $B/$bin/precis bench $W/$m.onnx --device cuda --precision fp8 --shapes "$sh" \
    --warmup 50 --iterations 300 --json --calib-data $W/calib-$m --calib-cache $W/$m.calib --timing-cache $W/$m.b$b.$bin.tc 2>/dev/null \
    | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["device_ms_p50"], "graph", j.get("cuda_graph"))')
  echo "$bin $m b$b fp8 $lab: $ms  (t=${SECONDS}s)" | tee -a $OUT/ab.txt
}
for step in "$@"; do
echo "== $step at ${SECONDS}s"
case "$step" in
tests)
  timeout ${TTIME:-200} $B/new/test_cuda_ops > $OUT/test_cuda_ops.log 2>&1 || rc=1
  tail -n 1 $OUT/test_cuda_ops.log; grep -B2 -A2 "CHECK failed" $OUT/test_cuda_ops.log | head -20
  grep -E "embed|tail sync" $OUT/test_cuda_ops.log | head -4
  $B/new/test_embed_ln 2>&1 | tail -n 3
  ;;
export) # exports bert / minilm + calibration data; bench.py's accuracy rows (ref vs cuda) with the new binary
  [ -f $W/minilm.onnx ] || PYTHONUNBUFFERED=1 timeout 240 python3 bench/gpu/bench.py --precis $B/new/precis --out $OUT/acc \
      --models bert,minilm --fp8 --no-speed --no-compile > $OUT/export.log 2>&1
  grep -E "cuda (fp8|fp16|bf16|fp32) .*vs ref" $OUT/export.log | head -n 20
  ;;
verify) # the fused step in the plan; Y / Yq bytes vs the unfused path (same binary, PRECIS_CUDA_EMBED_LN=0)
  PRECIS_CUDA_GRAPHS=0 timeout 60 $B/new/precis bench $W/minilm.onnx --device cuda --precision fp8 --shapes "$sh64" --warmup 20 --iterations 50 \
    --profile --calib-data $W/calib-minilm --calib-cache $W/minilm.calib --timing-cache $W/minilm.b64.new.tc > $OUT/profile_new_minilm.txt 2>&1
  sed -n 1,16p $OUT/profile_new_minilm.txt | cut -c1-110
  python3 - <<'PY'
import numpy as np, os
d = "/tmp/c18/in"; os.makedirs(d, exist_ok=True)
r = np.random.default_rng(7)
ids = r.integers(0, 30522, (64, 128)).astype(np.int64); ids[:, 0] = 101
m = np.ones((64, 128), np.int64)
for b in range(64): m[b, 64 + b:] = 0
tt = (r.random((64, 128)) < 0.3).astype(np.int64)
np.save(f"{d}/input_ids.npy", ids); np.save(f"{d}/attention_mask.npy", m); np.save(f"{d}/token_type_ids.npy", tt)
PY
  for prec in fp8 fp16; do for e in 1 0; do
    for mm in minilm bert; do
    PRECIS_CUDA_EMBED_LN=$e timeout 90 $B/new/precis build $W/$mm.onnx -o $B/$mm.$prec.$e.plan --device cuda --precision $prec --shapes "$sh64" \
      --calib-data $W/calib-$mm --calib-cache $W/$mm.calib > $B/build.$mm.$prec.$e.log 2>&1 || { echo "build $mm $prec $e failed"; tail -3 $B/build.$mm.$prec.$e.log; }
    timeout 60 $B/new/precis run $B/$mm.$prec.$e.plan --input input_ids=$B/in/input_ids.npy --input attention_mask=$B/in/attention_mask.npy \
      --input token_type_ids=$B/in/token_type_ids.npy --output-dir $B/o.$mm.$prec.$e --quiet > /dev/null 2>&1 || echo "run $mm $prec $e failed"
    done
  done; done
  python3 - <<'PY'
import numpy as np, glob, os
for mm in ("minilm", "bert"):
  for prec in ("fp8", "fp16"):
    a, b = f"/tmp/c18/o.{mm}.{prec}.1", f"/tmp/c18/o.{mm}.{prec}.0"
    for f in sorted(glob.glob(a + "/*.npy")):
        x, y = np.load(f), np.load(os.path.join(b, os.path.basename(f)))
        print(mm, prec, os.path.basename(f), "fused vs unfused: bytes equal" if x.tobytes() == y.tobytes()
              else "DIFFER max %g" % np.abs(x.astype(np.float64) - y).max())
PY
  grep -E "EmbedLayer|embed" $OUT/profile_new_minilm.txt | head -3
  PRECIS_CUDA_GRAPHS=0 PRECIS_CUDA_EMBED_LN=0 timeout 60 $B/new/precis bench $W/minilm.onnx --device cuda --precision fp8 --shapes "$sh64" --warmup 20 --iterations 50 \
    --profile --calib-data $W/calib-minilm --calib-cache $W/minilm.calib --timing-cache $W/minilm.b64.new.tc > $OUT/profile_new_off_minilm.txt 2>&1
  sed -n 8,12p $OUT/profile_new_off_minilm.txt | cut -c1-110
  ;;
ab)
  for r in 1 2 3; do
    pb base minilm 64 default X=1; pb new minilm 64 default X=1; pb new minilm 64 EMBED_LN=0 PRECIS_CUDA_EMBED_LN=0
  done
  pb base bert 64 default X=1; pb new bert 64 default X=1; pb new bert 64 EMBED_LN=0 PRECIS_CUDA_EMBED_LN=0
  ;;
bench)
  mkdir -p $B/bg; cp $B/new/precis $B/bg/precis
  PRECIS_BUILD=$B/bg OUT=$OUT/bench timeout 330 bench/gpu/run.sh bench -- --models bert,minilm --fp8 --batches bert=1,64 minilm=1,64 > $OUT/bench.log 2>&1 || rc=1
  grep -E "^\|" $OUT/bench/gpu_bench.md | head -n 40; grep -E "graphs=1|reduce-overhead" $OUT/bench.log | head -20; tail -n 3 $OUT/bench.log
  ;;
ncu)
  [ $SECONDS -gt ${NSTOP:-420} ] && { echo "ncu skipped at ${SECONDS}s"; continue; }
  timeout 120 python3 bench/gpu/ncu_steps.py --precis $B/new/precis $W/minilm.onnx --shapes "$sh64" --precision fp8 --ncu "$NCU" \
    --json $OUT/ncu_new_minilm.json -- --calib-data $W/calib-minilm --calib-cache $W/minilm.calib --timing-cache $W/minilm.b64.new.tc > $OUT/ncu_new_minilm.txt 2>&1
  head -n 12 $OUT/ncu_new_minilm.txt; grep -A14 "by kernel" $OUT/ncu_new_minilm.txt
  ;;
esac
done
echo "== done at ${SECONDS}s"
exit $rc
