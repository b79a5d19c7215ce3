#!/usr/bin/env bash
# clang-format (no changes allowed) and clang-tidy (.clang-tidy; warnings are errors) over src/.
# clang-tidy reads the compile commands of the release preset.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 'bench/*.cc' 'bench/*.h' 'fuzz/*.cc')
clang-format --dry-run -Werror "${files[@]}"
echo "clang-format: ${#files[@]} files clean"
[ -f build/release/compile_commands.json ] || cmake --preset release >/dev/null
mapfile -t srcs < <(git ls-files 'src/*.cc')
printf '%s\n' "${srcs[@]}" | xargs -P 2 -n 4 clang-tidy -p build/release --quiet 2>/dev/null
echo "clang-tidy: ${#srcs[@]} files clean"
