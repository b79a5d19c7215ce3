#!/usr/bin/env bash
# clang-format (no changes allowed) over src/, tests/, bench/ and fuzz/, and clang-tidy
# (.clang-tidy; warnings are errors) over src/*.cc with the release flags (the `tidy` preset).
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
  # The release flags, one compile command per source (the unity build's batches are not what
  # clang-tidy should read): the `tidy` preset only configures.
  cmake --preset tidy >/dev/null
  mapfile -t srcs < <(git ls-files 'src/*.cc')
  python3 scripts/clang_tidy_cached.py build/tidy "${srcs[@]}" --jobs "$(nproc)"
fi
