#!/bin/sh
# precis build --protect auto on the zoo (issue 7's done-when): EfficientNet-Lite0 (top-1
# agreement >= 99%), PP-OCRv4 rec (CER within 0.5% absolute of FP32), MiniLM (embedding
# cosine >= 0.995 and neighbour agreement >= 99%), YOLOv8n 320 (box agreement with fp32).
# Reports under bench/results/protect/<model>/ (protect.{json,md,svg}, protect.rules.json,
# sensitivity.*, log.txt: the summary, time.txt: the wall time). Eval sets from
# bench/zoo/zoo.py via prep_protect.py, calibration data from ~/.cache/precis/calib.
# Then two stricter budgets that all-int8 misses, to see the search work where the issue's
# budgets are met without protection: EfficientNet-Lite0 logits cosine >= 0.99 and PP-OCRv4
# rec per-time-step top-1 agreement >= 99% (reports <model>_cosine, <model>_top1).
# usage: run_protect.sh [BUILD_DIR] [NAME]   (LATENCY_RUNS=N: runs per latency median, default 21)
set -eu
B=${1:-build}
ONLY=${2:-}
C=$HOME/.cache/precis
R=bench/results/protect
M=bench/sensitivity/metrics
TMP=${TMPDIR:-/tmp}/precis-protect-zoo
mkdir -p "$TMP"
python3 bench/sensitivity/prep_protect.py "$TMP" > /dev/null
run() { # report name, zoo model name, model file, then the arguments of precis build
    name=$1; data=$2; model=$3; shift 3
    [ -n "$ONLY" ] && [ "$ONLY" != "$name" ] && return 0
    mkdir -p "$R/$name"
    rm -f "$TMP/$data.cache" # the wall time includes calibrating
    start=$(date +%s)
    rc=0
    "$B/precis" build "$model" --precision int8 --calib-data "$C/calib/$data" \
        --eval-data "$TMP/$data/eval" --threads 2 --calib-cache "$TMP/$data.cache" \
        --protect auto --protect-report "$R/$name" -o "$TMP/$name.plan" \
        --latency-runs "${LATENCY_RUNS:-21}" "$@" \
        > "$R/$name/log.txt" 2>&1 || rc=$?
    cat "$R/$name/log.txt"
    echo "wall $(( $(date +%s) - start )) s on $(nproc) cores (shared), exit $rc, $(date -u +%F)" \
        > "$R/$name/time.txt"
    cat "$R/$name/time.txt"
}
EFF=$C/models/efficientnet/efficientnet_lite0.onnx
REC=$C/models/ch_PP-OCRv4_rec_infer.onnx
run efficientnet_lite0 efficientnet_lite0 "$EFF" --min-top1 99%
run ppocr_v4_rec ppocr_v4_rec "$REC" --metric-cmd \
    "python3 $M/rec_cer.py {dir} $TMP/ppocr_v4_rec/truth.json" --metric-goal min \
    --metric-name CER --max-drop 0.5%
run minilm_l6_v2 minilm_l6_v2 "$C/models/minilm/all-MiniLM-L6-v2.onnx" \
    --metric-output sentence_embedding --min-cosine 0.995 \
    --metric-cmd "python3 $M/minilm_neighbours.py {dir} {ref}" --metric-name nn_agreement \
    --min-metric 0.99
run yolov8n yolov8n "$C/models/detector/320n.onnx" \
    --metric-cmd "python3 $M/det_boxes.py {dir} {ref}" --metric-name box_agreement \
    --min-metric 0.99
run efficientnet_lite0_cosine efficientnet_lite0 "$EFF" --min-cosine 0.99
run ppocr_v4_rec_top1 ppocr_v4_rec "$REC" --min-top1 99%
