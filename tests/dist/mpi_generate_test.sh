#!/usr/bin/env bash
# `mpirun -n 2|4 deepinfer generate --batch` (attention data parallel) prints the bytes the single
# process prints, on the fixture model: greedy and seeded sampling, n > 1, logprobs, prompt
# logprobs, a refused line, prefix-sharing prompts; speculation off and on.
#   usage: mpi_generate_test.sh DEEPINFER_BIN MODEL_DIR
set -euo pipefail
BIN="$1"
MODEL="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none
        --mca mpi_yield_when_idle 1 -x DEEPINFER_THREADS=1)
long="$(seq -s, 3 60)"
cat > "$work/batch.jsonl" <<JSONL
{"prompt_ids": [5, 6, 7, 8], "max_tokens": 12, "seed": 9}
{"prompt_ids": [9, 10, 11], "max_tokens": 10, "temperature": 0.8, "seed": 7, "n": 3}
{"prompt_ids": [12, 13, 14, 15, 16], "max_tokens": 8, "logprobs": true, "top_logprobs": 3, "prompt_logprobs": 2, "seed": 1}
{"prompt_ids": [$long], "max_tokens": 6, "seed": 2, "temperature": 1.0, "top_k": 20}
{"prompt_ids": [$long, 61, 62], "max_tokens": 6, "seed": 3, "temperature": 0.5}
{"prompt_ids": [17], "max_tokens": 4, "temperature": -1}
{"prompt_ids": [18, 19, 20, 21], "max_tokens": 9, "seed": 4, "temperature": 1.0, "repetition_penalty": 1.3, "min_tokens": 3}
JSONL
fail=0
for spec in off dspark; do
  "$BIN" generate --model "$MODEL" --batch "$work/batch.jsonl" --spec "$spec" \
      >"$work/one.txt" 2>"$work/one.err" || { cat "$work/one.err"; exit 1; }
  [ "$(wc -l <"$work/one.txt")" -eq 7 ] || { echo "single process: expected 7 lines"; exit 1; }
  for n in 2 4; do
    "${MPIRUN[@]}" -n "$n" "$BIN" generate --model "$MODEL" --batch "$work/batch.jsonl" \
        --spec "$spec" >"$work/n$n.txt" 2>"$work/n$n.err" ||
        { echo "mpirun -n $n (spec $spec) failed"; tail -5 "$work/n$n.err"; fail=1; continue; }
    # cached_tokens says where the prefix cache served a prompt (which rank's cache), not output.
    if diff <(sed -E 's/"cached_tokens":[0-9]+/"cached_tokens":C/' "$work/one.txt") \
            <(sed -E 's/"cached_tokens":[0-9]+/"cached_tokens":C/' "$work/n$n.txt") >"$work/diff"; then
      echo "spec $spec, $n ranks: identical ($(wc -l <"$work/n$n.txt") lines)"
    else
      echo "spec $spec, $n ranks: DIFFERENT"; head -c 2000 "$work/diff"; fail=1
    fi
  done
done
exit "$fail"
