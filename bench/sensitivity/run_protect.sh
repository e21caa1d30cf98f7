#!/bin/sh
# precis build --protect auto on the zoo (issue 7's done-when): EfficientNet-Lite0 (top-1
# agreement >= 99%), PP-OCRv4 rec (CER within 0.5% absolute of FP32), MiniLM (embedding
# cosine >= 0.995 and neighbour agreement >= 99%), YOLOv8n 320 (box agreement with fp32).
# Reports under bench/results/protect/<model>/ (protect.{json,md,svg}, protect.rules.json,
# sensitivity.*, log.txt: the summary, time.txt: the wall time). Eval sets from
# bench/zoo/zoo.py via prep_protect.py, calibration data from ~/.cache/precis/calib.
# usage: run_protect.sh [BUILD_DIR] [MODEL]
set -eu
B=${1:-build}
ONLY=${2:-}
C=$HOME/.cache/precis
R=bench/results/protect
M=bench/sensitivity/metrics
TMP=${TMPDIR:-/tmp}/precis-protect-zoo
mkdir -p "$TMP"
python3 bench/sensitivity/prep_protect.py "$TMP" > /dev/null
run() { # name, model, then the arguments of precis build
    name=$1; model=$2; shift 2
    [ -n "$ONLY" ] && [ "$ONLY" != "$name" ] && return 0
    mkdir -p "$R/$name"
    rm -f "$TMP/$name.cache" # the wall time includes calibrating
    start=$(date +%s)
    rc=0
    "$B/precis" build "$model" --precision int8 --calib-data "$C/calib/$name" \
        --eval-data "$TMP/$name/eval" --threads 2 --calib-cache "$TMP/$name.cache" \
        --protect auto --protect-report "$R/$name" -o "$TMP/$name.plan" "$@" \
        > "$R/$name/log.txt" 2>&1 || rc=$?
    cat "$R/$name/log.txt"
    echo "wall $(( $(date +%s) - start )) s on $(nproc) cores (shared), exit $rc, $(date -u +%F)" \
        > "$R/$name/time.txt"
    cat "$R/$name/time.txt"
}
run efficientnet_lite0 "$C/models/efficientnet/efficientnet_lite0.onnx" --min-top1 99%
run ppocr_v4_rec "$C/models/ch_PP-OCRv4_rec_infer.onnx" \
    --metric-cmd "python3 $M/rec_cer.py {dir} $TMP/ppocr_v4_rec/truth.json" --metric-goal min \
    --max-drop 0.5%
run minilm_l6_v2 "$C/models/minilm/all-MiniLM-L6-v2.onnx" \
    --metric-output sentence_embedding --min-cosine 0.995 \
    --metric-cmd "python3 $M/minilm_neighbours.py {dir} {ref}" --min-metric 0.99
run yolov8n "$C/models/detector/320n.onnx" \
    --metric-cmd "python3 $M/det_boxes.py {dir} {ref}" --min-metric 0.99
