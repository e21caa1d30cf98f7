#!/usr/bin/env bash
# `make demo`: installs and builds (scripts/setup.sh), fetches the PP-OCR models and
# the scanned page, prepares the inputs, then runs each model with precis and with
# ONNX Runtime and prints how they agree, as numbers and as recognised text.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
scripts/setup.sh
scripts/fetch_models.sh
"$PY" tests/models/prep_data.py
exec "$PY" tests/models/demo.py --precis build/precis --out out/demo
