#!/usr/bin/env bash
# Runs every libFuzzer target built by the `fuzz` preset for SECONDS each, starting from its seed
# corpus in fuzz/corpus/<name>/ (copied, so the checked-in corpus is never modified). Targets run
# side by side, one per CPU (each gets its full SECONDS); every target runs even when one fails,
# and a crashing input is kept under build/fuzz-artifacts/<name>/ (add it to the corpus once
# fixed). Exit status: non-zero if any target failed.
#   usage: scripts/fuzz.sh [SECONDS] (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-30}"
JOBS="${DEEPINFER_FUZZ_JOBS:-$(nproc)}"
shopt -s nullglob
targets=(build/fuzz/fuzz/*_fuzz)
if ((${#targets[@]} == 0)); then echo "no fuzz targets built" >&2; exit 1; fi
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

run_one() {  # run_one TARGET: the fuzzer's exit status, its output in $logs/NAME.log
  local t=$1 name work artifacts rc=0
  name=$(basename "$t" _fuzz)
  work=$(mktemp -d)
  artifacts="build/fuzz-artifacts/$name/"
  mkdir -p "$artifacts"
  [ -d "fuzz/corpus/$name" ] && cp -r "fuzz/corpus/$name/." "$work/"
  local dict=()
  [ -f "fuzz/$name.dict" ] && dict=(-dict="fuzz/$name.dict")
  "$t" -max_total_time="$SECONDS_EACH" -print_final_stats=1 -artifact_prefix="$artifacts" \
      "${dict[@]}" "$work" >"$logs/$name.log" 2>&1 || rc=$?
  rm -rf "$work"
  echo "$rc" >"$logs/$name.rc"
}

echo "fuzzing ${#targets[@]} targets for ${SECONDS_EACH}s each, $JOBS at a time"
running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if ((running >= JOBS)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=0
for t in "${targets[@]}"; do
  name=$(basename "$t" _fuzz)
  rc=$(cat "$logs/$name.rc")
  if [ "$rc" = 0 ]; then
    echo "-- $name: ok"
    grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added)' \
      "$logs/$name.log" || true
  else
    echo "-- $name: FAILED (exit $rc); input kept in build/fuzz-artifacts/$name/"
    tail -n 60 "$logs/$name.log"
    failed=1
  fi
done
exit "$failed"
