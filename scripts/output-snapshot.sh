#!/usr/bin/env bash
# Prints a snapshot of what `deepinfer generate --batch` and `deepinfer serve` answer for a fixed
# set of requests on a model (greedy and seeded sampling, n > 1, logprobs, prompt logprobs,
# stop strings, min_tokens, penalties, structured outputs, DSpark on, the chat routes), with the
# per-run fields (ids, timestamps, drawn seeds) blanked. Used to show a refactoring changes no
# byte of output:   scripts/output-snapshot.sh BIN MODEL > before.txt; ...; diff before after
#   BIN    the deepinfer binary            MODEL  a model folder (the default model, a fixture)
set -euo pipefail
BIN="$1"
MODEL="$2"
PORT="${SNAPSHOT_PORT:-18731}"
work="$(mktemp -d)"
trap 'kill "${srv:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
cat > "$work/batch.jsonl" <<'JSONL'
{"seed": 1, "prompt": "Hello, my name is", "max_tokens": 12}
{"prompt": "The capital of France", "max_tokens": 10, "temperature": 0.8, "seed": 7, "n": 3}
{"seed": 1, "prompt": "Once upon a time", "max_tokens": 8, "logprobs": true, "top_logprobs": 3, "prompt_logprobs": 2}
{"prompt": "Once upon a time there", "max_tokens": 9, "temperature": 1.0, "top_p": 0.9, "top_k": 40, "seed": 3, "repetition_penalty": 1.2, "presence_penalty": 0.5, "frequency_penalty": 0.3}
{"prompt": "List:", "max_tokens": 16, "min_tokens": 4, "stop": ["e", "a"], "seed": 11, "temperature": 0.7}
{"seed": 1, "prompt": "JSON please:", "max_tokens": 24, "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}}
{"prompt": "digits", "max_tokens": 6, "regex": "[0-9]{3}-[a-z]+", "temperature": 0.9, "seed": 5}
{"seed": 1, "prompt_ids": [0, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20], "max_tokens": 5, "ignore_eos": true}
{"seed": 1, "prompt": "", "max_tokens": 4}
{"seed": 1, "prompt": "bad", "max_tokens": 4, "temperature": -1}
JSONL
for spec in off dspark; do
  echo "== generate --batch (speculative: $spec)"
  extra=()
  [ "$spec" = off ] || extra=(--spec "$spec" --spec-policy fixed)
  "$BIN" generate --model "$MODEL" --batch "$work/batch.jsonl" --kv-budget 256M "${extra[@]}" \
      2>/dev/null | sed -E 's/"seed":[0-9]+/"seed":S/g' || echo "(generate exited $?)"
done
"$BIN" serve --model "$MODEL" --port "$PORT" --kv-budget 256M --served-model-name m \
    >"$work/serve.log" 2>&1 &
srv=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
post() {  # route body
  curl -s -X POST "http://127.0.0.1:$PORT$1" -H 'content-type: application/json' -d "$2" |
      sed -E 's/"(id|created)":("[^"]*"|[0-9]+)/"\1":X/g; s/"seed":[0-9]+/"seed":S/g'
  echo
}
echo "== serve"
post /v1/completions '{"seed": 1, "prompt": "Hello", "max_tokens": 8, "logprobs": 2}'
post /v1/completions '{"prompt": "Hello", "max_tokens": 8, "stream": true, "seed": 4, "temperature": 0.9, "n": 2}'
post /v1/completions '{"seed": 1, "prompt": "Hi", "max_tokens": 5, "prompt_logprobs": 1, "echo": false}'
post /v1/chat/completions '{"seed": 1, "messages": [{"role": "user", "content": "Hi there"}], "max_tokens": 10, "logprobs": true, "top_logprobs": 2}'
post /v1/chat/completions '{"seed": 1, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 10, "stream": true, "stream_options": {"include_usage": true}}'
post /v1/chat/completions '{"seed": 1, "messages": [{"role": "user", "content": "Give JSON"}], "max_tokens": 20, "response_format": {"type": "json_object"}}'
post /v1/chat/completions '{"seed": 1, "messages": [{"role": "user", "content": "weather?"}], "max_tokens": 30, "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}], "tool_choice": "required"}'
post /v1/chat/completions '{"seed": 1, "messages": [{"role": "user", "content": "x"}], "max_tokens": 4, "temperature": 9}'
post /v1/chat/completions '{"seed": 1, "messages": [{"role": "user", "content": "x"}], "max_tokens": 4, "stream": true, "top_p": 0}'
post /v1/messages '{"model": "m", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 10, "temperature": 0}'
post /v1/messages '{"model": "m", "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 10, "stream": true, "temperature": 0, "top_k": 5}'
post /v1/messages '{"seed": 1, "model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 4, "top_k": -3}'
