#!/usr/bin/env bash
# Every test, from a fresh Debian 12 machine:
#   1. install dependencies (apt, npm);
#   2. release preset: build, then the whole CTest suite (unit tests, fixture tests, fuzz-corpus
#      replay, the server against the real npm clients);
#   3. asan-ubsan preset: build, then the unit tests under AddressSanitizer + UBSan;
#   4. a bounded libFuzzer run of every fuzz target (clang preset `fuzz`);
#   5. style: clang-format over the tree, clang-tidy over src/ (scripts/check-style.sh).
# Each stage prints its wall time (`== release build: 6m12s`) and a table of all stages ends the
# run, also when a stage fails (docs/build.md has the measured table).
# `--quick` stops after step 2 (the inner loop while developing).
set -euo pipefail
cd "$(dirname "$0")/.."
QUICK=0
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    *) echo "usage: $0 [--quick]" >&2; exit 2 ;;
  esac
done

# shellcheck source=scripts/stages.sh
source scripts/stages.sh
trap stages_summary EXIT

stage "dependencies" ./scripts/install-deps.sh
stage "release configure" cmake --preset release
stage "release build" cmake --build --preset release
stage "release tests" ctest --preset release
[ "$QUICK" = 1 ] && exit 0

stage "asan-ubsan configure" cmake --preset asan-ubsan
stage "asan-ubsan build" cmake --build --preset asan-ubsan
stage "asan-ubsan tests" ctest --preset asan-ubsan

stage "fuzz configure" cmake --preset fuzz
stage "fuzz build" cmake --build --preset fuzz
stage "fuzz runs" ./scripts/fuzz.sh "${DEEPINFER_FUZZ_SECONDS:-30}"

stage "clang-format" ./scripts/check-style.sh --format
stage "clang-tidy" ./scripts/check-style.sh --tidy
