#!/usr/bin/env bash
# The test command of the README: set-up, a warnings-as-errors build with the whole test suite,
# then the same suite under AddressSanitizer + UBSan. Usage: tools/test.sh [--no-sanitize]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh

jobs=$(nproc)
run_suite() {
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DZOC_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
  # Tests labelled `slow` (the rest of the large corpora; CI runs a sample) run only when asked:
  # `ctest -C slow -L slow` in a build folder.
  (cd "$dir" && ctest --output-on-failure -j "$jobs" -LE slow)
}

echo "== release build (-Werror) and tests"
# -O2 without debug information (the project's default build type adds -g): a third less compile
# time; the sanitizer build below keeps -g for its reports' line numbers.
run_suite build -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG"
if [ "${1:-}" != "--no-sanitize" ]; then
  echo "== ASan + UBSan build and tests"
  # use_tls=0 and the third-party suppressions: tests/lsan.supp says why. -Og, not -O1: the
  # instrumented code builds in about half the time, and the tests run about as fast.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS=use_tls=0:suppressions=$PWD/tests/lsan.supp \
    run_suite build-asan -DZOC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-Og \
    "-DZOC_TEST_DATA=$PWD/build/testdata"  # the release build's reference data, not exported again
fi
