#!/usr/bin/env bash
# The CUDA backend on a GPU machine in one go: build (or use a carried build),
# the CUDA tests against ref, and precis vs PyTorch side by side.
#
#   bench/gpu/run.sh [tests] [ops] [bench] [zoo] [metrics] [ncu] [spread] [-- BENCH.PY OPTIONS]  (default: tests
#   bench; ops: test_cuda_ops and cli.fp8 only)
#
# Environment:
#   PRECIS_BUILD  a build folder holding precis, tests/cuda/test_cuda_ops (test_cuda_int8,
#                 test_cuda_u8 and test_cuda_cnn run too when there),
#                 tests/cuda/bench_imma and tests/cli/cuda_plan_stub (default: build-gpu; built here with
#                 cmake + ninja when missing)
#   PRECIS_LIBS   extra shared libraries (a folder) the carried binaries need
#   ZOO_INT8      set (e.g. 1): the zoo phase also times int8 (random calibration)
#   ZOO_ARGS      more zoo.py options (e.g. "--no-speed --profile det=1:int8")
#   PRECIS_ZOO    the zoo's ONNX files (zoo phase; bench.py --models effnet reads
#                 efficientnet_lite0.onnx there)
#   PRECIS_WHEELS a folder holding the efficientnet-lite-pytorch wheel (pure Python,
#                 imported from the .whl: bench.py --models effnet)
#   PRECIS_METRICS folders made by `bench/gpu/zoo_metrics.py prep` (metrics phase,
#                 ':'-separated): each model's FP16/INT8 outputs on its eval samples
#                 into OUT/<model>.npz for `zoo_metrics.py score` (and check_models
#                 vs ref on random inputs for the CNNs among them)
#   NCU_SPECS     ncu phase: "MODEL=BATCH:PRECISION ..." (bert/minilm of bench.py, exported
#                 into /tmp/precis-gpu-work when missing; effnet: the zoo's ONNX): per-kernel times of one steady-state
#                 run under Nsight Compute (bench/gpu/ncu_steps.py) into OUT/ncu_*.txt/json
#   SPREAD_SPECS  spread phase: "MODEL=BATCH:PRECISION ..." (default "bert=1:fp16 minilm=1:fp16"),
#                 SPREAD_RUNS processes each (default 5), with and without a shared timing
#                 cache: is a latency's spread the timed choices or the machine
#   OUT           where results go (default: out/gpu); gpu_bench.json there is
#                 what bench/results/gpu_*.json are copies of
# cuDNN and cuBLASLt come from the CUDA toolkit or PyTorch's environment
# (nvidia-cudnn-cu13 / nvidia-cublas under python3's site-packages).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${PRECIS_BUILD:-$ROOT/build-gpu}
OUT=${OUT:-$ROOT/out/gpu}
mkdir -p "$OUT"
phases=()
bench_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; bench_args=("$@"); break ;;
    *) phases+=("$1"); shift ;;
  esac
done
[ ${#phases[@]} -eq 0 ] && phases=(tests bench)

# libraries: the carried ones, then cuDNN / cuBLASLt wherever they are
libdirs=${PRECIS_LIBS:-}
for d in $(python3 - <<'EOF'
import glob, os, site
dirs = []
for sp in site.getsitepackages() + [site.getusersitepackages()]:
    for pat in ("nvidia/cudnn/lib", "nvidia/cublas/lib", "nvidia/cu13/lib", "nvidia/*/lib"):
        for d in glob.glob(os.path.join(sp, pat)):
            if glob.glob(os.path.join(d, "libcudnn.so.9")) or glob.glob(os.path.join(d, "libcublasLt.so.*")):
                dirs.append(d)
print("\n".join(dict.fromkeys(dirs)))
EOF
); do libdirs="$libdirs:$d"; done
export LD_LIBRARY_PATH="${libdirs#:}:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"

if [ ! -x "$BUILD/precis" ]; then
  echo "== building in $BUILD"
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPRECIS_WITH_DNNL=OFF \
    && cmake --build "$BUILD" -j"$(nproc)" --target precis_cli test_cuda_ops test_cuda_int8 test_cuda_u8 test_cuda_cnn cuda_plan_stub bench_imma || exit 1
fi
PRECIS=$BUILD/precis
echo "== machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
missing=$(ldd "$PRECIS" | grep "not found")
[ -n "$missing" ] && { echo "missing libraries:"; echo "$missing"; exit 1; }
ldd "$PRECIS" | grep -E "cudnn|cublas" | sed 's/^/  /'

rc=0
for ph in "${phases[@]}"; do
  case "$ph" in
  tests)
    echo "== cuda.ops: every CUDA impl vs ref"
    timeout 300 "$BUILD/tests/cuda/test_cuda_ops" 2>&1 | tee "$OUT/test_cuda_ops.log" | tail -n 200
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
    if [ -x "$BUILD/tests/cuda/test_cuda_int8" ]; then
      echo "== cuda.int8: the INT8 / FP8 impls vs ref"
      timeout 300 "$BUILD/tests/cuda/test_cuda_int8" 2>&1 | tee "$OUT/test_cuda_int8.log" | tail -n 80
      [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
    fi
    if [ -x "$BUILD/tests/cuda/test_cuda_cnn" ]; then
      echo "== cuda.cnn: the CNN conv kernels vs ref"
      timeout 300 "$BUILD/tests/cuda/test_cuda_cnn" 2>&1 | tee "$OUT/test_cuda_cnn.log" | tail -n 60
      [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
    fi
    if [ -x "$BUILD/tests/cuda/test_cuda_u8" ]; then
      echo "== cuda.u8: the int8 kernels on uint8 activations vs ref"
      timeout 300 "$BUILD/tests/cuda/test_cuda_u8" 2>&1 | tee "$OUT/test_cuda_u8.log" | tail -n 80
      [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
    fi
    echo "== cuda.models: build --device cuda vs ref"
    python3 "$ROOT/tests/cuda/check_models.py" "$PRECIS" --out /tmp/precis-gpu-models \
      --json "$OUT/check_models.json" 2>&1 | tee "$OUT/check_models.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
    echo "== cli.precision.cuda: the precision rules' numeric checks on the GPU"
    (cd "$ROOT/tests/cli" && python3 test_precision.py "$PRECIS" --device cuda) 2>&1 \
      | tee "$OUT/test_precision_cuda.log" | tail -n 40
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
    echo "== cli.cuda"
    (cd "$ROOT/tests/cli" && python3 test_cuda_cli.py "$PRECIS" "$BUILD/tests/cli/cuda_plan_stub") \
      || rc=1
    echo "== cli.fp8"
    (cd "$ROOT/tests/cli" && python3 test_fp8.py "$PRECIS") || rc=1
    ;;
  ops)  # the kernel checks and the fp8 CLI checks only (a quick first look)
    echo "== cuda.ops: every CUDA impl vs ref"
    timeout 300 "$BUILD/tests/cuda/test_cuda_ops" > "$OUT/test_cuda_ops.log" 2>&1 || rc=1
    tail -n 1 "$OUT/test_cuda_ops.log"
    grep -B1 "CHECK failed" "$OUT/test_cuda_ops.log" | head -n 20
    if [ -x "$BUILD/tests/cuda/test_cuda_int8" ]; then
      timeout 300 "$BUILD/tests/cuda/test_cuda_int8" > "$OUT/test_cuda_int8.log" 2>&1 || rc=1
      tail -n 1 "$OUT/test_cuda_int8.log"
      grep -B1 "CHECK failed" "$OUT/test_cuda_int8.log" | head -n 20
    fi
    if [ -x "$BUILD/tests/cuda/test_cuda_cnn" ]; then
      timeout 300 "$BUILD/tests/cuda/test_cuda_cnn" > "$OUT/test_cuda_cnn.log" 2>&1 || rc=1
      tail -n 1 "$OUT/test_cuda_cnn.log"
      grep -B1 "CHECK failed" "$OUT/test_cuda_cnn.log" | head -n 20
    fi
    if [ -x "$BUILD/tests/cuda/test_cuda_u8" ]; then
      timeout 300 "$BUILD/tests/cuda/test_cuda_u8" > "$OUT/test_cuda_u8.log" 2>&1 || rc=1
      tail -n 1 "$OUT/test_cuda_u8.log"
      grep -B1 "CHECK failed" "$OUT/test_cuda_u8.log" | head -n 20
    fi
    echo "== cli.fp8"
    (cd "$ROOT/tests/cli" && python3 test_fp8.py "$PRECIS") || rc=1
    ;;
  bench)
    echo "== precis vs PyTorch"
    PYTHONUNBUFFERED=1 python3 "$ROOT/bench/gpu/bench.py" --precis "$PRECIS" --out "$OUT" \
      "${bench_args[@]}" || rc=1
    ;;
  zoo)
    echo "== the zoo (models from \$PRECIS_ZOO, default \$PRECIS_CACHE/models)"
    ZOO=${PRECIS_ZOO:-${PRECIS_CACHE:-$HOME/.cache/precis}/models}
    PYTHONUNBUFFERED=1 python3 "$ROOT/bench/gpu/zoo.py" --precis "$PRECIS" --models "$ZOO" \
      --out "$OUT" ${ZOO_INT8:+--int8} ${ZOO_ARGS:-} || rc=1
    ;;
  metrics)
    echo "== the zoo's task metrics (folders from zoo_metrics.py prep)"
    IFS=: read -r -a mdirs <<< "${PRECIS_METRICS:-}"
    for d in "${mdirs[@]}"; do
      PYTHONUNBUFFERED=1 python3 "$ROOT/bench/gpu/zoo_metrics.py" run "$d" "$OUT" --precis "$PRECIS" \
        || rc=1
      specs=$(python3 "$ROOT/bench/gpu/zoo_metrics.py" specs "$d")
      [ -n "$specs" ] && { python3 "$ROOT/tests/cuda/check_models.py" "$PRECIS" $specs \
        --out /tmp/precis-gpu-zm --json "$OUT/check_$(basename "$d").json" || rc=1; }
    done
    ;;
  ncu)
    echo "== per-kernel times (Nsight Compute)"
    NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
    W=/tmp/precis-gpu-work
    for spec in ${NCU_SPECS:-bert=1:fp16}; do
      m=${spec%%=*}; rest=${spec#*=}; b=${rest%%:*}; p=${rest#*:}
      extra=()
      if [ "$m" = effnet ]; then  # the zoo's ONNX; int8: random calibration; a timing
        # cache filled by a run outside ncu, so the profiled build times nothing
        onnx=${PRECIS_ZOO:-${PRECIS_CACHE:-$HOME/.cache/precis}/models}/efficientnet_lite0.onnx
        sh="input:${b}x3x224x224"
        mkdir -p "$W/calib-effnet"
        python3 -c "import numpy as np, sys
for i in range(32): np.save(f'{sys.argv[1]}/s{i}.npy', np.random.RandomState(i).randn(1, 3, 224, 224).astype('float32'))" "$W/calib-effnet"
        extra=(--timing-cache "$W/effnet_b${b}_${p}.tc")
        [ "$p" = int8 ] && extra+=(--calib-data "$W/calib-effnet" --calib-cache "$W/effnet.calib")
        "$PRECIS" bench "$onnx" --device cuda --precision "$p" --shapes "$sh" --warmup 1 \
          --iterations 3 "${extra[@]}" > /dev/null || rc=1
      else
        onnx=$W/$m.onnx
        if [ ! -f "$onnx" ]; then
          PYTHONUNBUFFERED=1 python3 "$ROOT/bench/gpu/bench.py" --precis "$PRECIS" --out /tmp/ncu-export \
            --models "$m" --no-speed --no-correctness --no-compile > /dev/null || rc=1
        fi
        sh="input_ids:${b}x128,attention_mask:${b}x128,token_type_ids:${b}x128"
      fi
      python3 "$ROOT/bench/gpu/ncu_steps.py" --precis "$PRECIS" --ncu "$NCU" "$onnx" \
        --shapes "$sh" --precision "$p" --json "$OUT/ncu_${m}_b${b}_${p}.json" \
        ${extra[@]:+-- "${extra[@]}"} > "$OUT/ncu_${m}_b${b}_${p}.txt" || rc=1
      head -n 1 "$OUT/ncu_${m}_b${b}_${p}.txt"; sed -n '/^by kernel/,$p' "$OUT/ncu_${m}_b${b}_${p}.txt" | head -n 14
    done
    ;;
  spread)
    echo "== process-to-process spread of the GPU latency (bench/gpu/spread.py)"
    # the GPU's clocks and power every 20 ms beside the processes' start / end times
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate,clocks_throttle_reasons.active \
      --format=csv,noheader -lms 20 > "$OUT/spread_clocks.csv" 2>/dev/null &
    smi=$!
    PYTHONUNBUFFERED=1 python3 "$ROOT/bench/gpu/spread.py" --precis "$PRECIS" --out "$OUT" \
      --runs "${SPREAD_RUNS:-5}" ${SPREAD_SPECS:-bert=1:fp16 minilm=1:fp16} || rc=1
    kill $smi 2>/dev/null
    ;;
  *) echo "unknown phase '$ph' (tests, ops, bench, zoo, metrics, ncu, spread)"; exit 2 ;;
  esac
done
exit $rc
