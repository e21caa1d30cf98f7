#!/bin/sh
# Build the libFuzzer targets in build-fuzz (clang, ASan+UBSan) and run each
# for SECONDS seconds (default 60) starting from the committed seed corpus.
#     tests/fuzz/run.sh 60
# New inputs go to build-fuzz/corpus/<target>/ (the committed corpus is not
# touched); crashes to build-fuzz/artifacts/<target>/. Reproduce a crash
# with build-fuzz/tests/fuzz/fuzz_<target> FILE (or replay_<target> FILE in
# any build). Exit status: non-zero if a fuzzer found a problem.
set -eu
SECONDS_PER_TARGET=${1:-60}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${PRECIS_FUZZ_BUILD:-$ROOT/build-fuzz}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

CC=${CC:-clang} cmake -S "$ROOT" -B "$BUILD" -DCMAKE_C_COMPILER="${CC:-clang}" \
    -DPRECIS_FUZZ=ON -DPRECIS_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPRECIS_WITH_CUDA=OFF -DPRECIS_WITH_DNNL=OFF >/dev/null
cmake --build "$BUILD" -j"$JOBS" --target fuzz_onnx fuzz_npy

status=0
for t in onnx npy; do
    corpus="$BUILD/corpus/$t"
    artifacts="$BUILD/artifacts/$t"
    mkdir -p "$corpus" "$artifacts"
    echo "== fuzz_$t for ${SECONDS_PER_TARGET}s"
    if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
         UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
         "$BUILD/tests/fuzz/fuzz_$t" -max_total_time="$SECONDS_PER_TARGET" \
            -timeout=10 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
            -artifact_prefix="$artifacts/" "$corpus" "$ROOT/tests/fuzz/corpus/$t"; then
        echo "fuzz_$t FAILED: see $artifacts/" >&2
        status=1
    fi
done
exit $status
