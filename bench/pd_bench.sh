#!/usr/bin/env bash
# Prefill/decode disaggregation and the router, measured (docs/performance.md, "Disaggregation
# and the router"). Two parts:
#   mixed  MODEL TOKENIZER: colocated (one instance, 2 and 1 threads) against PD (a prefill and
#          a decode instance, 1 thread each, behind `deepinfer route`) on a workload that mixes long
#          prompts with ongoing decodes; bench-serve's TTFT / TPOT p50 / p99, and the hand-off's
#          bytes per prompt token and seconds (prefill instance's /metrics).
#   router MODEL: hit ratio and load spread of 4 workers behind the router, cache-aware against
#          round-robin, on bench-serve --dataset shared-prefix, and one instance's hit ratio.
#   usage: bench/pd_bench.sh mixed|router MODEL [TOKENIZER]   (BIN=build/release/deepinfer)
set -euo pipefail
BIN="${BIN:-build/release/deepinfer}"
what="$1"; MODEL="$2"; TOK="${3:-$2}"
WAIT_URL_S=600  # a large model loads for a while
source "$(dirname "$0")/../tests/dist/processes.sh"
export UCX_TLS="${UCX_TLS:-tcp,self}"
stop_all() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }
metric_sum() {  # metric_sum NAME URL...: the sum of one metric over servers
  local name="$1"; shift; local s=0
  for u in "$@"; do v="$(curl -fsS "$u/metrics" | awk -v m="$name" '$1 == m {print $2}')"; s="$(python3 -c "print($s + ${v:-0})")"; done
  echo "$s"
}
SERVE=(serve --model "$MODEL" --tokenizer "$TOK" --port 0 --served-model-name m --kv-budget 4G)

if [ "$what" = mixed ]; then
  # Two clients at once: the decodes (20 short prompts decoding 96 tokens, 6 at a time) and the
  # long prompts (4 of ~1,500 tokens, 8 tokens out, 2 at a time) arriving among them; each
  # client's report is its own class of requests.
  python3 - "$work" <<'PY'
import json, sys
words = "river stone lantern orbit maple signal harbor velvet copper meadow quartz ember".split()
def text(seed, n): return " ".join(words[(seed * 5 + i * i + i) % len(words)] for i in range(n))
with open(sys.argv[1] + "/decodes.jsonl", "w") as f:
    for k in range(20):
        print(json.dumps({"prompt": text(k, 24), "max_tokens": 96}), file=f)
with open(sys.argv[1] + "/long.jsonl", "w") as f:
    for k in range(4):
        print(json.dumps({"prompt": text(100 + k, 1500), "max_tokens": 8}), file=f)
PY
  mixed_run() {  # mixed_run URL LABEL: both clients at once; the decodes' and the long prompts' figures
    "$BIN" bench-serve --model m --dataset "$work/decodes.jsonl" --num-prompts 20 \
      --max-concurrency 6 --no-progress --no-warmup --base-url "$1" >"$work/dec.txt" &
    local dec_client=$!
    sleep 2
    "$BIN" bench-serve --model m --dataset "$work/long.jsonl" --num-prompts 4 \
      --max-concurrency 2 --no-progress --no-warmup --base-url "$1" >"$work/long.txt"
    wait "$dec_client"
    echo "== $2: decodes"; grep -E "duration|output throughput|TTFT|TPOT|ITL" "$work/dec.txt"
    echo "== $2: long prompts"; grep -E "TTFT|E2E" "$work/long.txt"
  }
  for threads in ${COLO_THREADS:-2 1}; do
    DEEPINFER_THREADS=$threads start colo "$BIN" "${SERVE[@]}"
    url="$(wait_url "$work/colo.log")"
    mixed_run "$url" "colocated, 1 instance x $threads threads"
    stop_all
  done
  DEEPINFER_THREADS=1 start pre "$BIN" "${SERVE[@]}" --role prefill
  DEEPINFER_THREADS=1 start dec "$BIN" "${SERVE[@]}" --role decode
  pre="$(wait_url "$work/pre.log")"; dec="$(wait_url "$work/dec.log")"
  start router "$BIN" route --port 0 --tokenizer "$TOK" --prefill "$pre" --decode "$dec"
  url="$(wait_url "$work/router.log")"
  mixed_run "$url" "PD: prefill 1 thread + decode 1 thread, behind the router"
  bytes="$(metric_sum deepinfer_pd_handoff_bytes_total "$pre")"
  secs="$(metric_sum deepinfer_pd_handoff_seconds_total "$pre")"
  n="$(metric_sum deepinfer_pd_handoffs_total "$pre")"
  pages="$(metric_sum deepinfer_pd_pages_imported_total "$dec")"
  echo "hand-offs $n: $bytes bytes, $secs s in all; $pages pages imported"
  stop_all
  exit 0
fi

# router: 4 workers (1 thread each) on shared-prefix prompts.
BENCH=(bench-serve --model m --dataset shared-prefix --num-prefixes "${PREFIXES:-32}" --prefix-len 512
       --input-len 64 --output-len 4 --num-prompts "${PROMPTS:-256}" --max-concurrency 8 --no-progress
       --seed 3)
DEEPINFER_THREADS=1 start one "$BIN" "${SERVE[@]}"
url="$(wait_url "$work/one.log")"
"$BIN" "${BENCH[@]}" --base-url "$url" >/dev/null
h="$(metric_sum deepinfer_prefix_cache_hits_total "$url")"; q="$(metric_sum deepinfer_prefix_cache_queries_total "$url")"
echo "one instance: prefix-cache hit ratio $(python3 -c "print(round($h / max($q, 1), 3))") ($h / $q blocks)"
stop_all
for policy in cache-aware round-robin; do
  urls=()
  for w in 1 2 3 4; do DEEPINFER_THREADS=1 start "w$w" "$BIN" "${SERVE[@]}"; done
  for w in 1 2 3 4; do urls+=("$(wait_url "$work/w$w.log")"); done
  args=(); for u in "${urls[@]}"; do args+=(--worker "$u"); done
  start router "$BIN" route --port 0 --tokenizer "$TOK" --policy "$policy" "${args[@]}"
  url="$(wait_url "$work/router.log")"
  "$BIN" "${BENCH[@]}" --base-url "$url" | grep -E "throughput|TTFT" | head -3
  h="$(metric_sum deepinfer_prefix_cache_hits_total "${urls[@]}")"
  q="$(metric_sum deepinfer_prefix_cache_queries_total "${urls[@]}")"
  loads="$(for u in "${urls[@]}"; do curl -fsS "$u/metrics" | awk '$1 ~ /^deepinfer_requests_total\{route="\/v1\/completions"/ {s += $2} END {print s + 0}'; done | tr '\n' ' ')"
  echo "$policy: hit ratio $(python3 -c "print(round($h / max($q, 1), 3))") ($h / $q blocks); requests per worker: $loads; max/mean $(python3 -c "l=[float(x) for x in '$loads'.split()]; print(round(max(l) / (sum(l) / len(l)), 2))")"
  stop_all
done
