#!/usr/bin/env bash
# DSpark on the trained default model, measured on chat prompts (docs/performance.md, "The trained
# default model"): the same chat questions through `deepinfer serve` with --spec off and
# --spec dspark, one request at a time (the latency case speculative decoding exists for), at
# temperature 0 and 1; bench-serve's output tokens/s and TPOT, and from the DSpark server's
# /metrics the acceptance rate and the tokens one verify step yields.
#   usage: bench/dspark_chat_bench.sh [MODEL]   (default build/default-model; BIN=build/release/deepinfer;
#          ROUNDS=4: passes over the prompts; CONC=1: requests in flight (4 or 8: speculation under load,
#          with ROUNDS=16: 128 requests take under 2 s at 8 in flight and their tokens/s swing ±4%);
#          SPEC_ARGS="--spec-policy fixed --spec-length 1 --spec-draft-vocab all": more flags for
#          the DSpark server; TEMPS="0 1": the temperatures)
# The prompts: bench/datasets/chat_questions.txt rendered by `deepinfer render-chat` (the server's
# prompt for one user message) and tokenized, replies up to 128 tokens ending at EOS.
set -euo pipefail
BIN="${BIN:-build/release/deepinfer}"
MODEL="${1:-build/default-model}"
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../tests/dist/processes.sh"
stop_all() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }
metric() { curl -fsS "$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }

# Chat questions -> {"prompt": [ids], "max_tokens": 128} (ids of the rendered prompt, BOS included).
/usr/bin/python3 - "$HERE/datasets/chat_questions.txt" "$work/render.jsonl" <<'PY'
import json, sys
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as out:
    for q in f:
        if q.strip() and not q.startswith("#"):
            print(json.dumps({"messages": [{"role": "user", "content": q.strip()}]}), file=out)
PY
"$BIN" render-chat --tokenizer "$MODEL" <"$work/render.jsonl" |
  /usr/bin/python3 -c 'import json, sys
for line in sys.stdin:
    print(json.dumps({"kind": "encode", "text": json.loads(line)["prompt"], "add_special_tokens": False}))' |
  "$BIN" tokenize --tokenizer "$MODEL" |
  /usr/bin/python3 -c 'import json, sys
for line in sys.stdin:
    print(json.dumps({"prompt": json.loads(line)["ids"], "max_tokens": 128}))' >"$work/chat.jsonl"
# Each prompt ROUNDS times (default 4, 128 requests): one pass is ~1.5 s of decoding, too short
# for the host's noise.
for _ in $(seq 1 "${ROUNDS:-4}"); do cat "$work/chat.jsonl"; done >"$work/rounds.jsonl"
n="${N:-$(wc -l <"$work/rounds.jsonl")}"
echo "$n requests: $(wc -l <"$work/chat.jsonl") chat prompts x ${ROUNDS:-4} rounds (N=…, ROUNDS=… to change)"

declare -A tpot tput
for temp in ${TEMPS:-0 1}; do
  for spec in off dspark; do
    start serve "$BIN" serve --model "$MODEL" --port 0 --served-model-name m --kv-budget 1G --spec "$spec" \
      $([ "$spec" = dspark ] && echo "${SPEC_ARGS:-}")
    url="$(wait_url "$work/serve.log")"
    "$BIN" bench-serve --base-url "$url" --model m --max-concurrency "${CONC:-1}" --num-prompts "$n" \
      --dataset "$work/rounds.jsonl" --respect-eos --temperature "$temp" --no-progress \
      --json "$work/t$temp-$spec.json" >"$work/t$temp-$spec.txt"
    echo "== temperature $temp, spec $spec"
    tpot[$spec]="$(awk '$1 == "TPOT" {print $2}' "$work/t$temp-$spec.txt")"
    tput[$spec]="$(awk '/^output throughput/ {print $NF}' "$work/t$temp-$spec.txt")"
    grep -E "Output token throughput|TPOT|Mean|Median" "$work/t$temp-$spec.txt" | head -8 || cat "$work/t$temp-$spec.txt"
    if [ "$spec" = dspark ]; then
      acc="$(metric "$url" deepinfer_spec_decode_acceptance_rate)"
      hist="$(curl -fsS "$url/metrics" | grep '^deepinfer_spec_decode_verify_calls_total{' || true)"
      /usr/bin/python3 - "$acc" "$hist" <<'PY'
import re, sys
acc = float(sys.argv[1] or 0)
calls = {int(k): float(v) for k, v in re.findall(r'accepted="(\d+)"\} (\S+)', sys.argv[2])}
total = sum(calls.values())
per_step = sum((k + 1) * v for k, v in calls.items()) / total if total else 0
print(f"acceptance rate {acc:.3f}; tokens per verify step {per_step:.2f} over {int(total)} verify calls")
PY
    fi
    stop_all
  done
  echo "temperature $temp: decode TPOT mean off / dspark ${tpot[off]} / ${tpot[dspark]} ms:" \
    "$(awk -v a="${tpot[off]}" -v b="${tpot[dspark]}" 'BEGIN {printf "%.2fx", a / b}');" \
    "output tokens/s ${tput[off]} / ${tput[dspark]}"
done
