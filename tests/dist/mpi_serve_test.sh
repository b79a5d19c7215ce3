#!/usr/bin/env bash
# `mpirun -n 2 deepinfer serve` answers on one port (rank 0) and places requests on both ranks'
# engines by tokens of work (attention data parallel); expert parallel, every rank also holds only
# its routed experts. Its answers (sequential and concurrent: seeded and greedy completions,
# logprobs, n = 2, stop strings, a JSON-schema constraint, chat) have the bytes of a
# single-process server's; /metrics shows per-rank figures and rank 1 finished requests; the same
# holds with --expert-parallel off (pure attention DP); it stops when rank 0 gets SIGTERM (the
# other rank ends with it). On the same model (it has a tokenizer), `generate --batch` with
# structured outputs over 2 and 4 ranks gives the bytes of one process.
#   usage: mpi_serve_test.sh DEEPINFER_BIN MODEL_DIR (a model folder with tokenizer.json)
set -euo pipefail
BIN="$1"
MODEL="$2"
source "$(dirname "$0")/processes.sh"
source "$(dirname "$0")/mpirun.sh"
SERVE=(serve --model "$MODEL" --port 0 --kv-budget 256M --served-model-name m)


# ask URL OUT: three requests one after the other, then eight at once; their answers without the
# per-server fields (ids, timestamps).
ask() {
  python3 - "$1" >"$2" <<'PY'
import json, sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
url = sys.argv[1]
def post(path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())
def completion(body):
    r = post("/v1/completions", dict(body, model="m"))
    return [[c["index"], c["text"], c["finish_reason"],
             (c.get("logprobs") or {}).get("token_logprobs")] for c in r["choices"]]
concurrent = [
    {"prompt": "Alpha beta gamma", "max_tokens": 20, "temperature": 0.9, "seed": 5},
    {"prompt": "In the beginning", "max_tokens": 24, "temperature": 0, "logprobs": 3},
    {"prompt": "Numbers: 1 2 3", "max_tokens": 16, "temperature": 1.0, "seed": 8, "n": 2},
    {"prompt": "The weather today", "max_tokens": 30, "temperature": 0.7, "seed": 2,
     "stop": ["e"]},
    {"prompt": "Give me JSON", "max_tokens": 40, "temperature": 0.8, "seed": 4,
     "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
         "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
         "additionalProperties": False}}}},
    {"prompt": "Once more", "max_tokens": 12, "temperature": 0, "echo": False},
    {"prompt": "A long time ago in a galaxy far away", "max_tokens": 18, "temperature": 0.5,
     "seed": 13, "top_p": 0.9},
    {"prompt": "Last one", "max_tokens": 10, "temperature": 1.2, "seed": 21, "top_k": 5},
]
with ThreadPoolExecutor(len(concurrent)) as pool:
    together = list(pool.map(completion, concurrent))
out = [together]
r = post("/v1/completions", {"model": "m", "prompt": "The quick brown fox", "max_tokens": 24,
                             "temperature": 0.8, "seed": 11})
out.append(r["choices"][0]["text"])
r = post("/v1/completions", {"model": "m", "prompt": "Once upon a time", "max_tokens": 16,
                             "temperature": 0, "logprobs": 2})
out.append([r["choices"][0]["text"], r["choices"][0]["logprobs"]["token_logprobs"]])
r = post("/v1/completions", {"model": "m", "prompt": "Score this prompt, token by token",
                             "max_tokens": 4, "temperature": 0, "prompt_logprobs": 2})
out.append([r["choices"][0]["text"], r["choices"][0]["prompt_logprobs"]])
r = post("/v1/chat/completions", {"model": "m", "max_tokens": 20, "seed": 3, "temperature": 1.0,
                                  "messages": [{"role": "user", "content": "Hello!"}]})
out.append(r["choices"][0]["message"]["content"])
print(json.dumps(out))
PY
}

# rank0_of URL: the pid of rank 0, the process listening on URL's port (SIGTERM to it drains
# and ends every rank; to mpirun, it would end the job with an error status).
rank0_of() {
  local port="${1##*:}"
  pgrep -f "$BIN serve --model $MODEL" | while read -r p; do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "deepinfer" ] || continue
    # the socket listening on the port belongs to this process if its inode is among its fds
    inode="$(awk -v p="$(printf ':%04X' "$port")" '$2 ~ p"$" && $4 == "0A" {print $10}' \
             "/proc/$p/net/tcp" 2>/dev/null | head -1)"
    if [ -n "$inode" ] && ls -l "/proc/$p/fd" 2>/dev/null | grep -q "socket:\[$inode\]"; then
      echo "$p"
    fi
  done | head -1
}

# rank_finished URL RANK: requests rank RANK finished, from /metrics.
rank_finished() {
  curl -fsS "$1/metrics" |
    awk -v r="$2" -F' ' '$1 == "deepinfer_rank_requests_finished_total{rank=\"" r "\"}" {print $2}'
}

DEEPINFER_THREADS=1 "$BIN" "${SERVE[@]}" >"$work/one.log" 2>"$work/one.log.err" &
pids+=($!)
url="$(wait_url "$work/one.log")"
ask "$url" "$work/one.json"
kill -TERM "${pids[0]}"; wait "${pids[0]}" || true
fail=0

# generate --batch with structured outputs (a JSON schema, a regex, json_object, an EBNF grammar)
# and logprobs over 2 and 4 ranks: the bytes of one process but cached_tokens.
cat >"$work/structured.jsonl" <<'JSONL'
{"prompt": "Give me JSON", "max_tokens": 40, "temperature": 0.8, "seed": 4, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"enum": ["x", "y"]}}, "required": ["a", "b"], "additionalProperties": false}}}}
{"prompt": "A code", "max_tokens": 12, "temperature": 1.0, "seed": 5, "regex": "[A-Z]{3}-[0-9]{2,4}"}
{"prompt": "Some object", "max_tokens": 30, "temperature": 0.9, "seed": 6, "response_format": {"type": "json_object"}}
{"prompt": "Grammar", "max_tokens": 16, "temperature": 0.7, "seed": 9, "grammar": "root ::= (\"yes\" | \"no\") \" \" [a-z]{1,8}"}
{"prompt": "Plain", "max_tokens": 10, "temperature": 0, "seed": 2, "logprobs": true, "top_logprobs": 2, "n": 2}
JSONL
strip_cached() { sed -E 's/"cached_tokens":[0-9]+//'; }
DEEPINFER_THREADS=1 "$BIN" generate --model "$MODEL" --batch "$work/structured.jsonl" |
  strip_cached >"$work/structured.one"
for n in 2 4; do
  "${MPIRUN[@]}" -n "$n" "$BIN" generate --model "$MODEL" --batch "$work/structured.jsonl" \
    2>"$work/structured.err" | strip_cached >"$work/structured.$n"
  if [ -s "$work/structured.one" ] && cmp -s "$work/structured.one" "$work/structured.$n"; then
    echo "generate --batch with structured outputs over $n ranks: identical"
  else
    echo "generate --batch with structured outputs over $n ranks: DIFFERENT"
    diff "$work/structured.one" "$work/structured.$n" | head -5; tail -3 "$work/structured.err"
    fail=1
  fi
done

# serve_2 NAME FLAGS...: a 2-rank server with FLAGS answers as the single server did; $work/NAME.*
# keep its answers, and $rank1 / $continued what /metrics said (requests rank 1 finished, requests
# that continued a split prefill) before SIGTERM to rank 0 stopped it (status 0 expected).
serve_2() {
  local name="$1"; shift
  "${MPIRUN[@]}" -n 2 "$BIN" "${SERVE[@]}" "$@" >"$work/$name.log" 2>"$work/$name.log.err" &
  local job=$!
  pids+=("$job")
  local url
  url="$(wait_url "$work/$name.log")"
  ask "$url" "$work/$name.json"
  rank1="$(rank_finished "$url" 1)"
  continued="$(curl -fsS "$url/metrics" |
    awk '$1 ~ /^deepinfer_rank_pd_tails_continued_total/ {s += $2} END {print s + 0}')"
  local rank0
  rank0="$(rank0_of "$url")"
  kill -TERM "${rank0:-$job}" 2>/dev/null || true
  if cmp -s "$work/one.json" "$work/$name.json"; then
    echo "serve over 2 ranks ($name): identical answers; rank 1 finished ${rank1:-none}"
  else
    echo "serve over 2 ranks ($name): DIFFERENT"; cat "$work/one.json" "$work/$name.json"; fail=1
  fi
  for _ in $(seq 1 60); do kill -0 "$job" 2>/dev/null || break; sleep 0.5; done
  wait "$job" || { echo "serve over 2 ranks ($name): exit status $?"; fail=1; }
}

# Pure attention DP: every rank holds every expert; requests still spread over the ranks.
serve_2 dp --expert-parallel off
if [ -z "$rank1" ] || [ "${rank1%.*}" -lt 1 ]; then
  echo "serve over 2 ranks (dp): rank 1 ran no request"; fail=1
fi

# Context parallelism: every prompt's prefill split over both ranks, the sequence handed to the
# rank that runs the request (the tail continued there: deepinfer_rank_pd_tails_continued_total).
# 12 requests (one with prompt logprobs, scored over the ranks), every prompt of 2+ tokens: each
# continued the sequence its prefill left.
serve_2 cp --expert-parallel off --context-parallel on
if [ "${continued%.*}" -lt 12 ]; then
  echo "serve over 2 ranks (cp): only $continued requests continued a split prefill"; fail=1
else
  echo "serve over 2 ranks (cp): $continued requests continued a split prefill"
fi

"${MPIRUN[@]}" -n 2 "$BIN" "${SERVE[@]}" >"$work/two.log" 2>"$work/two.log.err" &
job=$!
pids+=("$job")
url="$(wait_url "$work/two.log")"
ask "$url" "$work/two.json"
if cmp -s "$work/one.json" "$work/two.json"; then
  echo "serve over 2 ranks: identical answers: $(head -c 300 "$work/two.json")"
else
  echo "serve over 2 ranks: DIFFERENT"; cat "$work/one.json" "$work/two.json"; fail=1
fi
curl -fsS "$url/metrics" >"$work/metrics.txt"
for family in deepinfer_rank_requests_running deepinfer_rank_kv_pages_capacity \
              deepinfer_rank_expert_exchange_bytes_total deepinfer_rank_moe_rows_total; do
  for r in 0 1; do
    grep -q "^$family{rank=\"$r\"" "$work/metrics.txt" ||
      { echo "/metrics lacks $family for rank $r"; fail=1; }
  done
done
rank1="$(rank_finished "$url" 1)"
echo "serve over 2 ranks: requests finished on rank 1: ${rank1:-none}"
if [ -z "$rank1" ] || [ "${rank1%.*}" -lt 1 ]; then
  echo "serve over 2 ranks: rank 1 ran no request"; fail=1
fi
# Two streams whose clients vanish after a few chunks (one lands on each rank): both are
# cancelled where they run, every rank's work and running count fall to zero, and the server
# still answers.
python3 - "$url" <<'PY' || fail=1
import http.client, json, sys, time, urllib.parse, threading
url = urllib.parse.urlparse(sys.argv[1])
def vanish():
    c = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    c.request("POST", "/v1/completions", json.dumps({"model": "m", "prompt": "Go on",
              "max_tokens": 2000, "stream": True, "ignore_eos": True}),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    for _ in range(3): r.fp.readline()
    c.sock.close()
ts = [threading.Thread(target=vanish) for _ in range(2)]
for t in ts: t.start()
for t in ts: t.join()
def metric(prefix):
    c = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    return {l.split(" ")[0]: float(l.split(" ")[1]) for l in text.splitlines()
            if l.startswith(prefix)}
for _ in range(300):
    busy = {k: v for k, v in metric("deepinfer_rank_").items()
            if ("work_tokens" in k or "running" in k) and v}
    if not busy: break
    time.sleep(0.1)
else:
    print("after the clients vanished, still busy:", busy); sys.exit(1)
cancelled = metric("deepinfer_requests_cancelled_total")["deepinfer_requests_cancelled_total"]
if cancelled < 2:
    print("clients vanished, but cancelled =", cancelled); sys.exit(1)
c = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
c.request("POST", "/v1/completions", json.dumps({"model": "m", "prompt": "Still there?",
          "max_tokens": 4}), {"Content-Type": "application/json"})
if c.getresponse().status != 200: sys.exit(1)
print("serve over 2 ranks: vanished clients cancelled on their ranks; still serving")
PY
if ! awk '$1 ~ /^deepinfer_rank_expert_exchange_bytes_total/ && $2 > 0 {n++} END {exit n < 2}' \
       "$work/metrics.txt"; then
  echo "serve over 2 ranks: an expert exchange with no bytes on some rank"; fail=1
fi
rank0="$(rank0_of "$url")"
if [ -z "$rank0" ]; then
  echo "could not find rank 0's process"; fail=1; kill -TERM "$job"
else
  kill -TERM "$rank0"
fi
for _ in $(seq 1 60); do kill -0 "$job" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$job" 2>/dev/null; then
  echo "serve over 2 ranks: still running 30 s after SIGTERM to rank 0"; fail=1
else
  wait "$job" && echo "serve over 2 ranks: stopped cleanly" ||
    { echo "serve over 2 ranks: exit status $?"; tail -5 "$work/two.log.err"; fail=1; }
fi
exit "$fail"
