# Sourced by scripts/test.sh: run named stages, print each one's wall time, and a summary table.
#   stage NAME CMD ARGS...   runs CMD, prints "== NAME: 6m12s" (or "== NAME: FAILED after ...")
#                            and exits the script with CMD's status when it fails;
#   stages_summary           the table of every stage run so far and their total (an EXIT trap).
STAGE_NAMES=()
STAGE_SECONDS=()
STAGE_RESULTS=()
STAGES_START=$(date +%s)

stage_fmt() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

stage() {
  local name=$1 start rc=0 took
  shift
  echo "== $name: start ($(date -u +%H:%M:%S) UTC)"
  start=$(date +%s)
  "$@" || rc=$?
  took=$(($(date +%s) - start))
  STAGE_NAMES+=("$name")
  STAGE_SECONDS+=("$took")
  if [ "$rc" -eq 0 ]; then
    STAGE_RESULTS+=(ok)
    echo "== $name: $(stage_fmt "$took")"
  else
    STAGE_RESULTS+=("FAILED ($rc)")
    echo "== $name: FAILED ($rc) after $(stage_fmt "$took")"
    exit "$rc"
  fi
}

stages_summary() {
  local rc=$? i sum=0 total
  total=$(($(date +%s) - STAGES_START))
  echo
  echo "== stage times"
  printf '%-24s %10s  %s\n' stage "wall" result
  for i in "${!STAGE_NAMES[@]}"; do
    printf '%-24s %10s  %s\n' "${STAGE_NAMES[$i]}" "$(stage_fmt "${STAGE_SECONDS[$i]}")" \
      "${STAGE_RESULTS[$i]}"
    sum=$((sum + STAGE_SECONDS[i]))
  done
  printf '%-24s %10s\n' "stages" "$(stage_fmt "$sum")"
  printf '%-24s %10s  (exit %d)\n' "total" "$(stage_fmt "$total")" "$rc"
}
