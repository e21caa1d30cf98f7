#!/bin/sh
# precis sensitivity on the zoo: EfficientNet-Lite0 and PP-OCRv4 rec, reports under
# bench/results/sensitivity/<model>/ (sensitivity.{json,md,svg} and time.txt: the wall
# time). Data from ~/.cache/precis (bench/zoo fetches it). usage: run_zoo.sh [BUILD_DIR] [MODEL]
set -eu
B=${1:-build}
ONLY=${2:-}
C=$HOME/.cache/precis
R=bench/results/sensitivity
TMP=${TMPDIR:-/tmp}/precis-sens-zoo
mkdir -p "$TMP"
run() { # name, then the arguments of precis sensitivity
    name=$1; shift
    [ -n "$ONLY" ] && [ "$ONLY" != "$name" ] && return 0
    mkdir -p "$R/$name"
    rm -f "$TMP/$name.cache" # the wall time includes calibrating
    start=$(date +%s)
    "$B/precis" sensitivity "$@" --threads 2 --calib-cache "$TMP/$name.cache" --report "$R/$name" \
        | tee "$R/$name/top10.txt"
    echo "wall $(( $(date +%s) - start )) s on $(nproc) cores (shared), $(date -u +%F)" > "$R/$name/time.txt"
}
# eval: the 8 photos as .npy (1x3x224x224 each; the folder also holds labels, so a list file)
ls "$C"/data/efficientnet/*.npy > "$TMP/efficientnet_eval.txt"
run efficientnet_lite0 "$C/models/efficientnet/efficientnet_lite0.onnx" \
    --calib-data "$C/calib/efficientnet_lite0" --eval-data "$TMP/efficientnet_eval.txt"
# eval: one batch of 8 rendered text lines (8x3x48x374); calibration lines are 48x640
run ppocr_v4_rec "$C/models/ch_PP-OCRv4_rec_infer.onnx" \
    --calib-data "$C/calib/ppocr_v4_rec" --eval-data "$C/data/rec_lines.npy" --metric kl
