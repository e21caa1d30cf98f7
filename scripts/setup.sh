#!/usr/bin/env bash
# Installs what precis needs on Debian 12 (run as root) and builds it in ./build.
# Idempotent: whatever is already present is skipped. One line per step.
#   Debian packages: toolchain, protobuf-c, onnx.proto, ONNX node tests, oneDNN, clang
#                    for fuzzing, DejaVu and Noto CJK fonts (rendered OCR text lines).
#   PyPI packages:   test oracles and data preparation only (onnx, onnxruntime,
#                    numpy, pillow), installed into the python3 on PATH.
set -euo pipefail
unset MAKEFLAGS MFLAGS MAKELEVEL  # when called from make: let cmake's make run on its own
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive
PY=${PYTHON:-python3}

DEB_PKGS=(build-essential cmake pkg-config libprotobuf-c-dev protobuf-c-compiler
          libonnx-dev libonnx-testdata clang libclang-rt-14-dev fonts-dejavu-core
          fonts-noto-cjk libdnnl-dev libpng-dev libjpeg62-turbo-dev)
# import name = pip requirement (pinned: the versions these scripts were checked with)
PY_PKGS=(onnx=onnx==1.23.2 onnxruntime=onnxruntime==1.31.1 numpy=numpy==2.4.6 PIL=pillow==13.0.0)

missing=()
for p in "${DEB_PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: apt: installing ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: apt: all ${#DEB_PKGS[@]} packages present"
fi

missing=()
for m in "${PY_PKGS[@]}"; do
  "$PY" -c "import ${m%%=*}" 2>/dev/null || missing+=("${m#*=}")
done
if ((${#missing[@]})); then
  echo "setup: pip ($("$PY" -c 'import sys;print(sys.executable)')): installing ${missing[*]}"
  "$PY" -m pip install -q --no-input --disable-pip-version-check \
        --root-user-action=ignore "${missing[@]}"
else
  echo "setup: pip: onnx onnxruntime numpy pillow importable"
fi

mkdir -p build
log=build/setup-build.log
if cmake -S . -B build >"$log" 2>&1 && cmake --build build -j"$(nproc)" >>"$log" 2>&1; then
  echo "setup: build: ok ($(ls build/precis 2>/dev/null || echo 'no build/precis yet'); log $log)"
else
  tail -n 40 "$log"
  echo "setup: build: FAILED (full log: $log)"
  exit 1
fi
