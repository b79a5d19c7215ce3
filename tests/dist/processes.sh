# Sourced by the tests and benchmarks that start servers (tests/dist/*_test.sh,
# bench/pd_bench.sh): a scratch folder $work, background processes killed on exit (the folder is
# copied to $KEEP_WORK first when that is set), and the URL a server prints once it listens.
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  if [ -n "${KEEP_WORK:-}" ]; then cp -r "$work" "$KEEP_WORK"; fi
  rm -rf "$work"
}
trap cleanup EXIT

# wait_url LOG: the URL a server printed ("listening on http://..."), waiting up to
# $WAIT_URL_S seconds (default 120).
wait_url() {
  local url
  for _ in $(seq 1 $(( ${WAIT_URL_S:-120} * 10 ))); do
    url="$(grep -oE 'listening on http://[0-9.]+:[0-9]+' "$1" | head -1 | cut -d' ' -f3 || true)"
    [ -n "$url" ] && { echo "$url"; return 0; }
    sleep 0.1
  done
  echo "no server came up:" >&2; cat "$1" "$1.err" >&2; return 1
}

# start NAME ARGS...: runs ARGS in the background, logging to $work/NAME.log(.err); its pid goes
# to pids and to the variable pid_NAME.
start() {
  local name="$1"; shift
  "$@" >"$work/$name.log" 2>"$work/$name.log.err" &
  pids+=($!)
  printf -v "pid_$name" '%s' "$!"
}

# same_answers LABEL EXPECTED ACTUAL: whether two answer files (tests/dist/pd_client.py output)
# have the same bytes; prints LABEL with the verdict (the first differences when they differ).
same_answers() {
  if [ -s "$2" ] && cmp -s "$2" "$3"; then
    echo "$1 = colocated: $(head -c 200 "$3")"
  else
    echo "$1 DIFFERS from colocated"
    diff <(tr ']' '\n' <"$2") <(tr ']' '\n' <"$3") | head -10
    return 1
  fi
}
