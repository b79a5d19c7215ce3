#!/usr/bin/env bash
# clang-format (no changes allowed) over src/, tests/, bench/ and fuzz/, and clang-tidy
# (.clang-tidy; warnings are errors) over src/*.cc with the release flags (the `tidy` preset's
# unity batches).
#   --format   clang-format only
#   --tidy     clang-tidy only
# (neither: both). clang-tidy keeps a cache of the files that passed
# (scripts/clang_tidy_cached.py; DEEPINFER_TIDY_CACHE=DIR, default ~/.cache/deepinfer/clang-tidy):
# a warm cache analyses only the files whose source, headers, flags or configuration changed.
set -euo pipefail
cd "$(dirname "$0")/.."
FORMAT=1
TIDY=1
case "${1:-}" in
  --format) TIDY=0 ;;
  --tidy) FORMAT=0 ;;
  "") ;;
  *) echo "usage: $0 [--format|--tidy]" >&2; exit 2 ;;
esac

if [ "$FORMAT" = 1 ]; then
  mapfile -t files < <(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 'bench/*.cc' \
                                    'bench/*.h' 'fuzz/*.cc')
  clang-format --dry-run -Werror "${files[@]}"
  echo "clang-format: ${#files[@]} files clean"
fi
if [ "$TIDY" = 1 ]; then
  # The release flags over the unity batches of the `tidy` preset (16 sources a translation unit,
  # the ISA-specific files alone; it only configures): each batch parses the heavy headers once,
  # which makes a cold run ~4x faster than one translation unit per source (docs/build.md).
  # Findings still name the source file and line; every src/*.cc must be in some batch.
  cmake --preset tidy >/dev/null
  mapfile -t srcs < <(git ls-files 'src/*.cc')
  python3 scripts/clang_tidy_cached.py build/tidy --all --cover "${srcs[@]}" --jobs "$(nproc)"
fi
