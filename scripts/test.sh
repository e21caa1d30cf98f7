#!/usr/bin/env bash
# `make test` (and CI): setup + build, fetch models and prepare real inputs, the
# whole ctest suite, the same suite built with ASan+UBSan (less the slow label
# `model`, i.e. models.ppocr), then the fuzzers for 60 s if tests/fuzz/run.sh
# exists. Runs every step that can run, then prints a summary; exits non-zero if
# anything failed.
set -euo pipefail
unset MAKEFLAGS MFLAGS MAKELEVEL  # when called from make: let cmake's make run on its own
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
JOBS=$(nproc)
mkdir -p out
steps=() failed=0 n_pass=0 n_fail=0

note() { # note STEP STATUS
  steps+=("$(printf '%-34s %s' "$1" "$2")")
  case $2 in ok*|skipped*) ;; *) failed=1 ;; esac
}
run_ctest() { # run_ctest NAME BUILD_DIR [ctest args...]
  local name=$1 dir=$2 log=out/ctest-$1.log
  shift 2
  echo "== ctest $name"
  set +e
  ctest --test-dir "$dir" --output-on-failure -j"$JOBS" "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  set -e
  local counts p=0 f=0
  counts=$(grep -Eo '[0-9]+ tests failed out of [0-9]+' "$log" | tail -n1 || true)
  if [ -n "$counts" ]; then
    f=$(echo "$counts" | awk '{print $1}')
    p=$(( $(echo "$counts" | awk '{print $6}') - f ))
  fi
  n_pass=$((n_pass + p)) n_fail=$((n_fail + f))
  if [ "$rc" -eq 0 ] && [ -n "$counts" ]; then note "ctest $name" "ok ($p passed)"
  elif [ -z "$counts" ]; then note "ctest $name" "FAILED (no tests ran, exit $rc)"
  else note "ctest $name" "FAILED ($f of $((p + f)) failed, log $log)"
  fi
}

summary() {
  echo
  echo "== make test summary"
  printf '  %s\n' "${steps[@]}"
  echo "tests: $n_pass passed, $n_fail failed"
  exit "$failed"
}

echo "== setup"
if scripts/setup.sh; then
  note "setup and build (build/)" "ok"
else
  note "setup and build (build/)" "FAILED (nothing else can run)"
  summary
fi

echo "== models and data"
if scripts/fetch_models.sh && "$PY" tests/models/prep_data.py; then
  note "fetch models, prepare inputs" "ok"
else
  note "fetch models, prepare inputs" "FAILED (the model test will fail)"
fi

run_ctest release build

echo "== ASan+UBSan build (build-asan)"
asan_log=out/build-asan.log
if cmake -S . -B build-asan -DPRECIS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >"$asan_log" 2>&1 \
   && cmake --build build-asan -j"$JOBS" >>"$asan_log" 2>&1; then
  note "ASan+UBSan build" "ok"
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    run_ctest asan build-asan -LE '^model$'
else
  tail -n 40 "$asan_log"
  note "ASan+UBSan build" "FAILED (log $asan_log)"
fi

echo "== ThreadSanitizer: concurrent execution contexts on one engine (build-tsan)"
tsan_log=out/build-tsan.log
if cmake -S . -B build-tsan -DPRECIS_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$tsan_log" 2>&1 \
   && cmake --build build-tsan -j"$JOBS" --target test_engine >>"$tsan_log" 2>&1; then
  if (cd tests && TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/unit/tsan.supp" \
        ../build-tsan/tests/test_engine --concurrent) >>"$tsan_log" 2>&1; then
    note "TSan concurrent contexts" "ok"; n_pass=$((n_pass + 1))
  else
    tail -n 40 "$tsan_log"; note "TSan concurrent contexts" "FAILED (log $tsan_log)"; n_fail=$((n_fail + 1))
  fi
else
  tail -n 40 "$tsan_log"; note "TSan build" "FAILED (log $tsan_log)"
fi

if [ -x tests/fuzz/run.sh ] || [ -f tests/fuzz/run.sh ]; then
  echo "== fuzz (tests/fuzz/run.sh 60)"
  if bash tests/fuzz/run.sh 60; then note "fuzz 60 s" "ok"; else note "fuzz 60 s" "FAILED"; fi
else
  note "fuzz" "skipped (no tests/fuzz/run.sh yet)"
fi

summary
