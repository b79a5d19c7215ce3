#!/usr/bin/env bash
# `mpirun -n 2|3|4 deepinfer generate --batch --expert-parallel off --context-parallel on|auto`
# (docs/scaleout.md "Context parallelism"): every long prompt's prefill split over the ranks,
# the sequence handed to the rank that runs the line; the output is the single process's bytes
# (only cached_tokens differs), in both index-key modes and two page lengths, for prompts of 2
# to 3,000 tokens: greedy, seeded sampling, n = 2, logprobs, prompt logprobs (scored on the ranks
# that compute the positions), a refused line, and prompts sharing a long prefix (a cached prefix
# plus a CP suffix). The ranks' reports show that the prompts were split, that the decoding ranks'
# requests continued the handed-over sequences, and that a cached prefix was reused.
# Flags that cannot work with it are refused on every rank, naming the flag.
#   usage: cp_generate_test.sh DEEPINFER_BIN FIXTURE_MODEL DEFAULT_MODEL
set -euo pipefail
BIN="$1"
MODEL="$2"
BIG="$3"
source "$(dirname "$0")/processes.sh"
source "$(dirname "$0")/mpirun.sh"
fail=0

# The fixture model: a context of 256 positions, 512 ids.
l1="$(seq -s, 3 200)"
l2="$(seq -s, 300 500)"
cat > "$work/batch.jsonl" <<JSONL
{"prompt_ids": [$l1], "max_tokens": 8, "seed": 2, "temperature": 1.0}
{"prompt_ids": [$l1, 5, 6, 7], "max_tokens": 8, "seed": 3}
{"prompt_ids": [$l2], "max_tokens": 8, "seed": 4, "temperature": 0.7, "n": 2}
{"prompt_ids": [$l2, 9], "max_tokens": 8, "prompt_logprobs": 1, "seed": 5}
{"prompt_ids": [5, 6], "max_tokens": 8, "seed": 6}
{"prompt_ids": [5], "max_tokens": 8, "seed": 7}
{"prompt_ids": [5, 1000, 3], "max_tokens": 8, "seed": 8}
{"prompt_ids": [$l2, 9, 10], "max_tokens": 8, "logprobs": true, "top_logprobs": 2, "temperature": 0, "seed": 9}
{"prompt_ids": [$l1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23], "max_tokens": 8, "seed": 10}
JSONL

# same NAME ONE OUT: OUT has ONE's bytes but for cached_tokens.
same() {
  if diff <(sed -E 's/"cached_tokens":[0-9]+/"cached_tokens":C/' "$2") \
          <(sed -E 's/"cached_tokens":[0-9]+/"cached_tokens":C/' "$3") >"$work/diff"; then
    echo "$1: identical ($(wc -l <"$3") lines)"
  else
    echo "FAIL: $1: DIFFERENT"; head -c 1500 "$work/diff"; echo; fail=1
  fi
}
# report ERR FIELD: the sum over the ranks of a context-parallel figure in their reports.
report() {
  grep -oE "$2" "$1" | grep -oE '^[0-9]+' | awk '{ s += $1 } END { print s + 0 }'
}

for mode in official owner; do
  for page in 0 32; do
    "$BIN" generate --model "$MODEL" --batch "$work/batch.jsonl" --mode "$mode" \
      --page-tokens "$page" >"$work/one.txt" 2>"$work/one.err" || { cat "$work/one.err"; exit 1; }
    for n in 2 3 4; do
      name="$n ranks, $mode, page $page"
      if ! timeout 120 "${MPIRUN[@]}" -n "$n" "$BIN" generate --model "$MODEL" \
          --batch "$work/batch.jsonl" --mode "$mode" --page-tokens "$page" \
          --expert-parallel off --context-parallel on --context-parallel-chunks $((n == 2 ? 3 : 1)) \
          >"$work/cp.txt" 2>"$work/cp.err"; then
        echo "FAIL: $name: mpirun failed"; tail -5 "$work/cp.err"; fail=1; continue
      fi
      same "$name" "$work/one.txt" "$work/cp.txt"
      # 7 lines are split (not the 1-token and refused ones): every rank took part in all 7, and
      # each was continued by its request on the rank that ran it.
      parts=$(report "$work/cp.err" '[0-9]+ prompts \(')
      continued=$(report "$work/cp.err" '[0-9]+ requests continued')
      [ "$parts" -eq $((7 * n)) ] || { echo "FAIL: $name: $parts prompt parts, expected $((7 * n))"; cat "$work/cp.err"; fail=1; }
      [ "$continued" -eq 7 ] || { echo "FAIL: $name: $continued continued, expected 7"; cat "$work/cp.err"; fail=1; }
      if [ "$n" -eq 2 ]; then
        # Lines 0, 1 and 8 share 198 tokens and run on one rank: its cache holds the prefix.
        prefix=$(report "$work/cp.err" '[0-9]+ from a cached prefix')
        [ "$prefix" -gt 0 ] || { echo "FAIL: $name: no cached prefix reused"; cat "$work/cp.err"; fail=1; }
      fi
    done
  done
done

# auto: only prompts of --context-parallel-min-tokens or more are split.
"$BIN" generate --model "$MODEL" --batch "$work/batch.jsonl" >"$work/one.txt" 2>/dev/null
timeout 120 "${MPIRUN[@]}" -n 2 "$BIN" generate --model "$MODEL" --batch "$work/batch.jsonl" \
  --expert-parallel off --context-parallel auto --context-parallel-min-tokens 202 \
  >"$work/cp.txt" 2>"$work/cp.err" || { echo "FAIL: auto: mpirun failed"; tail -5 "$work/cp.err"; fail=1; }
same "auto, 2 ranks" "$work/one.txt" "$work/cp.txt"
parts=$(report "$work/cp.err" '[0-9]+ prompts \(')
[ "$parts" -eq 6 ] || { echo "FAIL: auto: $parts prompt parts, expected 6 (lines 3, 7 and 8 of 202+ tokens)"; cat "$work/cp.err"; fail=1; }

# Flags that cannot work with it are refused at start, on every rank.
refused() {
  local name="$1" want="$2"; shift 2
  if timeout 60 "${MPIRUN[@]}" -n 2 "$BIN" generate --model "$MODEL" --batch "$work/batch.jsonl" \
      --context-parallel on "$@" >"$work/r.txt" 2>"$work/r.err"; then
    echo "FAIL: $name: started"; fail=1
  elif ! grep -q -- "$want" "$work/r.err"; then
    echo "FAIL: $name: stderr lacks '$want'"; cat "$work/r.err"; fail=1
  else
    echo "$name: refused"
  fi
}
refused "expert parallel" "needs --expert-parallel off"
refused "no prefix cache" "needs --prefix-cache on" --expert-parallel off --prefix-cache off

# The server tests' random-weight model (the real vocabulary, a longer context): prompts of 1,500
# and 3,000 tokens.
/usr/bin/python3 - "$work/big.jsonl" <<'PY'
import json, random, sys
random.seed(5)
ids = [random.randrange(3, 100000) for _ in range(3000)]
with open(sys.argv[1], "w") as f:
    f.write(json.dumps({"prompt_ids": ids, "max_tokens": 6, "seed": 1, "temperature": 0.8}) + "\n")
    f.write(json.dumps({"prompt_ids": ids[:1500], "max_tokens": 6, "temperature": 0, "seed": 2,
                        "prompt_logprobs": 3}) + "\n")
    f.write(json.dumps({"prompt_ids": ids[:1500] + [7, 8, 9], "max_tokens": 6, "seed": 3}) + "\n")
PY
"$BIN" generate --model "$BIG" --batch "$work/big.jsonl" >"$work/one.txt" 2>"$work/one.err" \
  || { cat "$work/one.err"; exit 1; }
for n in 2 4; do
  timeout 240 "${MPIRUN[@]}" -n "$n" "$BIN" generate --model "$BIG" --batch "$work/big.jsonl" \
    --expert-parallel off --context-parallel on >"$work/cp.txt" 2>"$work/cp.err" \
    || { echo "FAIL: default model, $n ranks: mpirun failed"; tail -5 "$work/cp.err"; fail=1; continue; }
  same "default model, 3,000 tokens, $n ranks" "$work/one.txt" "$work/cp.txt"
  continued=$(report "$work/cp.err" '[0-9]+ requests continued')
  [ "$continued" -eq 3 ] || { echo "FAIL: default model: $continued continued, expected 3"; cat "$work/cp.err"; fail=1; }
done
# DSpark over real ranks: each rank extends the stage rings of its chunks and sends their page
# tails to the decoding rank, which rebuilds its rings from the pages. Outputs are one process's;
# with a fixed policy the drafts verified and accepted, summed over the ranks, equal those of the
# same ranks without context parallelism (12 chunks a rank and pages of 32, so that last chunks
# are shorter than the window). The random-weight model accepts no draft, so the rings' bytes
# themselves are checked by ContextParallelPrefillTest (engine tests).
spec=(--spec dspark --spec-policy fixed --spec-length 2 --page-tokens 32)
sed -E 's/"max_tokens": 6/"max_tokens": 24/' "$work/big.jsonl" >"$work/dspark.jsonl"
"$BIN" generate --model "$BIG" --batch "$work/dspark.jsonl" "${spec[@]}" >"$work/one.txt" 2>/dev/null
for cp in off on; do
  timeout 240 "${MPIRUN[@]}" -n 2 "$BIN" generate --model "$BIG" --batch "$work/dspark.jsonl" \
    --expert-parallel off --context-parallel "$cp" --context-parallel-chunks 12 "${spec[@]}" \
    >"$work/cp.txt" 2>"$work/cp-$cp.err" \
    || { echo "FAIL: DSpark, CP $cp: mpirun failed"; tail -5 "$work/cp-$cp.err"; fail=1; }
  same "DSpark, 2 ranks, CP $cp" "$work/one.txt" "$work/cp.txt"
done
verified_off=$(report "$work/cp-off.err" '[0-9]+ drafts verified')
accepted_off=$(report "$work/cp-off.err" '[0-9]+ accepted')
verified_on=$(report "$work/cp-on.err" '[0-9]+ drafts verified')
accepted_on=$(report "$work/cp-on.err" '[0-9]+ accepted')
continued=$(report "$work/cp-on.err" '[0-9]+ requests continued')
if [ "$verified_on" -gt 0 ] && [ "$verified_on" -eq "$verified_off" ] && \
   [ "$accepted_on" -eq "$accepted_off" ] && [ "$continued" -eq 3 ]; then
  echo "DSpark: CP on and off verify $verified_on drafts and accept $accepted_on"
else
  echo "FAIL: DSpark: CP on verified/accepted $verified_on/$accepted_on, off $verified_off/$accepted_off, $continued continued"
  cat "$work/cp-on.err" "$work/cp-off.err"; fail=1
fi

exit $fail
