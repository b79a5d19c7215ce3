#!/usr/bin/env bash
# `mpirun -n 2|4 deepinfer generate --batch` (attention data parallel, MoE expert parallel) prints
# the bytes the single process prints, on the fixture model: greedy and seeded sampling, n > 1,
# logprobs, prompt logprobs, a refused line, prefix-sharing prompts; speculation off and on;
# experts spread over the ranks (the default), on every rank (--expert-parallel off), rebalanced
# by EPLB every few steps with redundant copies, and under preemption. Ranks started with
# different flags refuse to start, naming the rank.
#   usage: mpi_generate_test.sh DEEPINFER_BIN MODEL_DIR
set -euo pipefail
BIN="$1"
MODEL="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/mpirun.sh"
long="$(seq -s, 3 60)"
cat > "$work/batch.jsonl" <<JSONL
{"prompt_ids": [5, 6, 7, 8], "max_tokens": 12, "seed": 9}
{"prompt_ids": [9, 10, 11], "max_tokens": 10, "temperature": 0.8, "seed": 7, "n": 3}
{"prompt_ids": [12, 13, 14, 15, 16], "max_tokens": 8, "logprobs": true, "top_logprobs": 3, "prompt_logprobs": 2, "seed": 1}
{"prompt_ids": [$long], "max_tokens": 6, "seed": 2, "temperature": 1.0, "top_k": 20}
{"prompt_ids": [$long, 61, 62], "max_tokens": 6, "seed": 3, "temperature": 0.5}
{"prompt_ids": [17], "max_tokens": 4, "temperature": -1}
{"prompt_ids": [18, 19, 20, 21], "max_tokens": 9, "seed": 4, "temperature": 1.0, "repetition_penalty": 1.3, "min_tokens": 3}
{"prompt_ids": [22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32], "max_tokens": 30, "seed": 5, "temperature": 0.9}
{"prompt_ids": [33, 34, 35, 36, 37, 38], "max_tokens": 30, "seed": 6}
{"prompt_ids": [$long, 70, 71, 72, 73], "max_tokens": 20, "seed": 8, "temperature": 0.7, "n": 2}
JSONL
lines=10
fail=0
# run NAME SPEC RANKS [FLAGS...]: compares against $work/one-SPEC.txt.
run() {
  local name="$1" spec="$2" n="$3"
  shift 3
  if ! "${MPIRUN[@]}" -n "$n" "$BIN" generate --model "$MODEL" --batch "$work/batch.jsonl" \
      --spec "$spec" "$@" >"$work/out.txt" 2>"$work/out.err"; then
    echo "$name: mpirun failed"; tail -5 "$work/out.err"; fail=1; return
  fi
  # cached_tokens says where the prefix cache served a prompt (which rank's cache), not output.
  if diff <(sed -E 's/"cached_tokens":[0-9]+/"cached_tokens":C/' "$work/one-$spec.txt") \
          <(sed -E 's/"cached_tokens":[0-9]+/"cached_tokens":C/' "$work/out.txt") >"$work/diff"; then
    echo "$name: identical ($(wc -l <"$work/out.txt") lines)"
  else
    echo "$name: DIFFERENT"; head -c 2000 "$work/diff"; fail=1
  fi
}
# expect NAME PATTERN: the last run's stderr has PATTERN.
expect() {
  grep -Eq "$2" "$work/out.err" || { echo "$1: stderr lacks /$2/"; cat "$work/out.err"; fail=1; }
}

for spec in off dspark; do
  "$BIN" generate --model "$MODEL" --batch "$work/batch.jsonl" --spec "$spec" \
      >"$work/one-$spec.txt" 2>"$work/one.err" || { cat "$work/one.err"; exit 1; }
  [ "$(wc -l <"$work/one-$spec.txt")" -eq "$lines" ] || { echo "single process: expected $lines lines"; exit 1; }
done

run "EP, 2 ranks" off 2
expect "EP, 2 ranks" "rank 1: [0-9]+ MoE calls.* [1-9][0-9]* remote"
run "EP, 4 ranks" off 4
run "EP, 4 ranks, DSpark" dspark 4
run "DP only (--expert-parallel off), 2 ranks" off 2 --expert-parallel off
expect "DP only" "^rank 1: [0-9]+ lines"
grep -q "expert parallel over" "$work/out.err" && { echo "DP only: an expert exchange ran"; fail=1; }
run "EPLB every 2 steps, 2 redundant, 2 ranks" off 2 --eplb-interval 2 --eplb-redundant 2
run "EPLB every 3 steps, 4 redundant, 4 ranks, DSpark" dspark 4 --eplb-interval 3 --eplb-redundant 4
expect "EPLB" "[1-9][0-9]* layer placements switched"
run "EP under preemption, 2 ranks" off 2 --kv-budget 300K --max-running 8
expect "EP under preemption" "[1-9][0-9]* preemptions"

# One prompt (generate --prompt-ids): rank 0 runs it, the other ranks serve their experts.
one=(generate --model "$MODEL" --prompt-ids 5,6,7,8,9 --max-tokens 16 --seed 3 --temperature 0.8)
"$BIN" "${one[@]}" >"$work/p1.txt" 2>/dev/null
if "${MPIRUN[@]}" -n 2 "$BIN" "${one[@]}" >"$work/p2.txt" 2>"$work/out.err" &&
    cmp -s "$work/p1.txt" "$work/p2.txt"; then
  echo "generate --prompt-ids, 2 ranks: identical"
else
  echo "generate --prompt-ids, 2 ranks: DIFFERENT or failed"; cat "$work/out.err"; fail=1
fi

# Ranks that disagree refuse to start, every rank with the same message (no hang).
if "${MPIRUN[@]}" -n 1 "$BIN" generate --model "$MODEL" --batch "$work/batch.jsonl" --max-running 8 : \
    -n 1 "$BIN" generate --model "$MODEL" --batch "$work/batch.jsonl" --max-running 9 \
    >"$work/out.txt" 2>"$work/out.err"; then
  echo "mismatched flags: started anyway"; fail=1
else
  expect "mismatched flags" "rank 1 differs from rank 0 in its engine flags"
  echo "mismatched flags: refused"
fi
# A rank killed mid-run ends the instance (Open MPI 4.1 has no fault tolerance) within 30 s, and
# mpirun's message names the rank; no rank hangs in a collective.
for i in $(seq 0 399); do
  echo "{\"prompt_ids\": [$((5 + i % 50)), 6, 7], \"max_tokens\": 240, \"ignore_eos\": true, \"seed\": $i}"
done >"$work/long.jsonl"
"${MPIRUN[@]}" -n 2 "$BIN" generate --model "$MODEL" --batch "$work/long.jsonl" \
    >"$work/out.txt" 2>"$work/out.err" &
job=$!
sleep 2
if ! pkill -9 -n -f "$BIN generate --model $MODEL --batch $work/long.jsonl"; then
  echo "killed rank: the run ended before the kill"; fail=1
fi
start=$(date +%s)
for _ in $(seq 1 30); do kill -0 "$job" 2>/dev/null || break; sleep 1; done
if kill -0 "$job" 2>/dev/null; then
  echo "killed rank: the instance still runs after 30 s"; kill -9 "$job"; fail=1
else
  wait "$job" && { echo "killed rank: exit status 0"; fail=1; }
  expect "killed rank" "process rank [0-9]+ .*(signal 9|Killed)"
  echo "killed rank: the instance ended after $(( $(date +%s) - start )) s"
fi
exit "$fail"
