#!/usr/bin/env bash
# Runs every libFuzzer target built by the `fuzz` preset for SECONDS each, starting from its seed
# corpus in fuzz/corpus/<name>/ (copied, so the checked-in corpus is never modified).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-30}"
shopt -s nullglob
targets=(build/fuzz/fuzz/*_fuzz)
if ((${#targets[@]} == 0)); then echo "no fuzz targets built" >&2; exit 1; fi
for t in "${targets[@]}"; do
  name=$(basename "$t" _fuzz)
  work=$(mktemp -d)
  [ -d "fuzz/corpus/$name" ] && cp -r "fuzz/corpus/$name/." "$work/"
  echo "fuzzing $name for ${SECONDS_EACH}s"
  dict=()
  [ -f "fuzz/$name.dict" ] && dict=(-dict="fuzz/$name.dict")
  "$t" -max_total_time="$SECONDS_EACH" -print_final_stats=1 "${dict[@]}" "$work" 2>&1 | tail -n 15
  rm -rf "$work"
done
