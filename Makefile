# precis: entry points. The build itself is CMake (./build); these wrap the scripts.
#   make          configure and build ./build
#   make setup    install what precis needs (Debian + PyPI test oracles), then build
#   make fetch    fetch and convert the zoo (PP-OCR, MiniLM, EfficientNet, detectors) into $PRECIS_CACHE
#   make data     fetch, then prepare the model inputs (.npy)
#   make demo     precis vs ONNX Runtime on PP-OCR, with the recognised text
#   make test     everything CI runs: setup, models, ctest, ASan+UBSan ctest, fuzz
#   make zoo      set up, fetch and convert the zoo, evaluate precis vs ORT FP32 and ORT INT8 (bench/results/zoo_*)
PYTHON ?= python3
export PYTHON

.PHONY: all build setup fetch data demo test clean zoo
all: build

build:
	cmake -S . -B build
	cmake --build build -j"$$(nproc)"

setup:
	scripts/setup.sh

fetch:
	scripts/fetch_models.sh

data: fetch
	$(PYTHON) tests/models/prep_data.py

demo:
	scripts/demo.sh

test:
	scripts/test.sh

zoo: setup
	scripts/fetch_models.sh && $(PYTHON) tests/models/prep_data.py && $(PYTHON) bench/zoo/eval.py && $(PYTHON) bench/zoo/ort_int8.py

clean:
	rm -rf build build-asan out
