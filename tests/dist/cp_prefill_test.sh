#!/usr/bin/env bash
# Context parallelism over real MPI ranks (`mpirun -n 2|4 deepinfer cp-prefill --check`, docs/
# scaleout.md "Context parallelism"): on the fixture model, the last rank's prefill logits and
# the logits of 4 greedy decode steps after it have the bits of a one-process prefill, for
# prompts from 1 token to many pages, two page lengths, both index-key modes; the logits' hash
# is the single process's; every rank but the last sends its pages' layers.
#   usage: cp_prefill_test.sh DEEPINFER_BIN MODEL_DIR
set -euo pipefail
BIN="$1"
MODEL="$2"
source "$(dirname "$0")/processes.sh"
source "$(dirname "$0")/mpirun.sh"
lens=1,5,16,17,63,100,1000
fail=0
for mode in official owner; do
  for page in 0 16; do
    "$BIN" cp-prefill --model "$MODEL" --prompt-len "$lens" --mode "$mode" --page-tokens "$page" \
      >"$work/one.jsonl"
    for n in 2 4; do
      # One chunk per rank at 4 ranks, three (round-robin) at 2.
      k=$((n == 2 ? 3 : 1))
      if ! timeout 120 "${MPIRUN[@]}" -n "$n" "$BIN" cp-prefill --model "$MODEL" --prompt-len "$lens" \
          --mode "$mode" --page-tokens "$page" --chunks-per-rank "$k" --check \
          >"$work/cp.jsonl" 2>"$work/cp.err"; then
        echo "FAIL: $n ranks, $mode, page $page: cp-prefill failed"; tail -5 "$work/cp.err"; fail=1
        continue
      fi
      if ! /usr/bin/python3 - "$work/one.jsonl" "$work/cp.jsonl" "$n" <<'PY'; then
import json, sys
one = [json.loads(l) for l in open(sys.argv[1])]
cp = [json.loads(l) for l in open(sys.argv[2])]
n = int(sys.argv[3])
assert len(one) == len(cp) == 7, (len(one), len(cp))
for a, b in zip(one, cp):
    assert b["ranks"] == n and b["prompt_len"] == a["prompt_len"], b
    assert b["check"] == "same", b
    assert b["logits_xxh3"] == a["logits_xxh3"], (a, b)
    ch = b["chunks"]
    senders = sum(1 for i, c in enumerate(ch[:-1]) if c[1] > c[0] and
                  any(d[1] > d[0] and d[2] != c[2] for d in ch[i + 1:]))
    assert (b["bytes_sent_per_token"] > 0) == (senders > 0), b
    assert b["chunks"][-1][1] == b["prompt_len"] and b["chunks"][0][0] == 0, b
    assert b["chunks"][-1][2] == n - 1, b
assert cp[-1]["bytes_sent_per_token"] > 0, cp[-1]
PY
        echo "FAIL: $n ranks, $mode, page $page"; cat "$work/cp.jsonl"; fail=1
      else
        echo "ok: $n ranks x $k chunks, $mode, page $page: 7 prompts, logits and 4 decode steps = one process"
      fi
    done
  done
done
exit "$fail"
