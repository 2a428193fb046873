#!/usr/bin/env bash
# Set up, build and run every test: C tests (ctest) on the CPU and on
# OpenCL (PoCL), end-to-end tests through GDAL (pytest), and the C tests
# again under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build="${GG_BUILD_DIR:-build}"

echo "== C tests (cpu, opencl)"
GG_TEST_DEVICES="${GG_TEST_DEVICES:-cpu,opencl}" ctest --test-dir "$build" --output-on-failure

echo "== end-to-end tests (pytest through GDAL)"
GG_BUILD_DIR="$PWD/$build" /usr/bin/python3 -m pytest -q tests/python

echo "== C tests under ASan + UBSan"
asan="${build}-asan"
mkdir -p "$asan"
cmake -S . -B "$asan" -DCMAKE_BUILD_TYPE=Debug -DGG_SANITIZE=ON -DGG_WITH_CUDA=OFF \
      -DGG_WITH_OPENCL=OFF -DGG_WITH_GDAL=OFF >"$asan/configure.log" 2>&1 ||
  { cat "$asan/configure.log"; exit 1; }
cmake --build "$asan" -j"$(nproc)"
GG_TEST_DEVICES=cpu ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$asan" --output-on-failure
echo "== fuzz targets (libFuzzer, ${GG_FUZZ_SECONDS:-20} s each)"
bash tests/fuzz/run_fuzzers.sh "${GG_FUZZ_SECONDS:-20}"
echo "== all tests passed"
