#!/usr/bin/env bash
# Every test, from a fresh Debian 12 machine:
#   1. install dependencies (apt);
#   2. release preset: build, then the whole CTest suite (unit tests, fixture tests, fuzz-corpus
#      replay);
#   3. asan-ubsan preset: build, then the unit tests under AddressSanitizer + UBSan;
#   4. a bounded libFuzzer run of every fuzz target (clang preset `fuzz`);
#   5. style: clang-format and clang-tidy over src/.
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

./scripts/install-deps.sh

echo "== release: build and test"
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release
[ "$QUICK" = 1 ] && exit 0

echo "== asan-ubsan: build and test"
cmake --preset asan-ubsan >/dev/null
cmake --build --preset asan-ubsan
ctest --preset asan-ubsan

echo "== fuzz: bounded runs"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
./scripts/fuzz.sh "${DEEPINFER_FUZZ_SECONDS:-30}"

echo "== style"
./scripts/check-style.sh
