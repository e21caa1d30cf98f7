#!/usr/bin/env bash
# `make demo`: installs and builds (scripts/setup.sh), fetches the PP-OCR models and
# the scanned page, prepares the inputs, then runs each model with precis and with
# ONNX Runtime and prints how they agree, as numbers and as recognised text; then
# builds PP-OCRv4 rec in INT8 (calibrated on 32 rendered lines) and prints its
# accuracy and speed against FP32 and against ONNX Runtime's own INT8.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
scripts/setup.sh
scripts/fetch_models.sh
"$PY" tests/models/prep_data.py
"$PY" tests/models/demo.py --precis build/precis --out out/demo
echo
echo "== INT8: PP-OCRv4 rec, calibrated on 32 rendered lines (precis percentile 99.99 vs"
echo "   ONNX Runtime quantize_static percentile, the same lines), 71 evaluation lines"
"$PY" bench/zoo/int8.py --models ppocr_v4_rec --batches 1 --calibrators percentile \
    --ort-methods percentile --out out/demo/int8.json |
    grep -Ev '^(Collecting|Finding|Number|Percentile|Calibrat|Quantiz)'
tail -n 3 out/demo/int8.md
