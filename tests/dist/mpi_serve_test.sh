#!/usr/bin/env bash
# `mpirun -n 2 deepinfer serve` (expert parallel: rank 0 answers on one port, every rank holds its
# routed experts) answers seeded and greedy completions and chat completions with the bytes of a
# single-process server, then stops when rank 0 gets SIGTERM (the other rank ends with it).
#   usage: mpi_serve_test.sh DEEPINFER_BIN MODEL_DIR (a model folder with tokenizer.json)
set -euo pipefail
BIN="$1"
MODEL="$2"
work="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(mpirun --oversubscribe --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none
        --mca mpi_yield_when_idle 1 -x DEEPINFER_THREADS=1)
SERVE=(serve --model "$MODEL" --port 0 --kv-budget 256M --served-model-name m)

# wait_url LOG: the URL a server printed ("listening on http://...").
wait_url() {
  for _ in $(seq 1 600); do
    url="$(grep -oE 'listening on http://[0-9.]+:[0-9]+' "$1" | head -1 | cut -d' ' -f3 || true)"
    [ -n "$url" ] && { echo "$url"; return 0; }
    sleep 0.2
  done
  echo "no server came up:" >&2; cat "$1" "$1.err" >&2; return 1
}

# ask URL OUT: three requests, their answers without the per-server fields (ids, timestamps).
ask() {
  python3 - "$1" >"$2" <<'PY'
import json, sys, urllib.request
url = sys.argv[1]
def post(path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())
out = []
r = post("/v1/completions", {"model": "m", "prompt": "The quick brown fox", "max_tokens": 24,
                             "temperature": 0.8, "seed": 11})
out.append(r["choices"][0]["text"])
r = post("/v1/completions", {"model": "m", "prompt": "Once upon a time", "max_tokens": 16,
                             "temperature": 0, "logprobs": 2})
out.append([r["choices"][0]["text"], r["choices"][0]["logprobs"]["token_logprobs"]])
r = post("/v1/chat/completions", {"model": "m", "max_tokens": 20, "seed": 3, "temperature": 1.0,
                                  "messages": [{"role": "user", "content": "Hello!"}]})
out.append(r["choices"][0]["message"]["content"])
print(json.dumps(out))
PY
}

DEEPINFER_THREADS=1 "$BIN" "${SERVE[@]}" >"$work/one.log" 2>"$work/one.log.err" &
pids+=($!)
url="$(wait_url "$work/one.log")"
ask "$url" "$work/one.json"
kill -TERM "${pids[0]}"; wait "${pids[0]}" || true

"${MPIRUN[@]}" -n 2 "$BIN" "${SERVE[@]}" >"$work/two.log" 2>"$work/two.log.err" &
job=$!
pids+=("$job")
url="$(wait_url "$work/two.log")"
ask "$url" "$work/two.json"
fail=0
if cmp -s "$work/one.json" "$work/two.json"; then
  echo "serve over 2 ranks: identical answers: $(head -c 300 "$work/two.json")"
else
  echo "serve over 2 ranks: DIFFERENT"; cat "$work/one.json" "$work/two.json"; fail=1
fi
# Rank 0 is the process listening on the port; SIGTERM to it drains and ends every rank.
port="${url##*:}"
rank0="$(pgrep -f "$BIN serve --model $MODEL" | while read -r p; do
  if [ -r "/proc/$p/net/tcp" ] && ls -l "/proc/$p/fd" 2>/dev/null | grep -q socket &&
     grep -q "$(printf ':%04X' "$port")" "/proc/$p/net/tcp" &&
     [ "$(cat "/proc/$p/comm")" = "deepinfer" ]; then
    # the socket listening on the port belongs to this process if its inode is among its fds
    inode="$(awk -v p="$(printf ':%04X' "$port")" '$2 ~ p"$" && $4 == "0A" {print $10}' "/proc/$p/net/tcp" | head -1)"
    if ls -l "/proc/$p/fd" 2>/dev/null | grep -q "socket:\[$inode\]"; then echo "$p"; fi
  fi
done | head -1)"
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
