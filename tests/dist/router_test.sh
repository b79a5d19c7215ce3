#!/usr/bin/env bash
# `deepinfer route` in front of two `deepinfer serve` workers on loopback (docs/server.md
# "Router"): answers through the router (greedy and seeded; completions, chat and Anthropic
# messages; whole and streamed, and a stream read by the real `openai` npm client) are the bytes
# a worker gives directly; repeated requests with a shared prefix go to the worker holding it
# (router /metrics: requests and expected cache hits); a third worker serving another model
# name is refused and never gets a request; without the router's API key a request gets 401 in
# the route's format; a worker killed with SIGKILL: a stream it was serving is resumed on the
# other worker and the client gets the whole answer, identical in content; the following
# requests still succeed (on the other worker, retried when they were sent to the dead one) and
# the dead one shows as down; the router stops cleanly on SIGTERM.
#   usage: router_test.sh DEEPINFER_BIN MODEL_DIR NPM_DIR (MODEL_DIR: a model with tokenizer.json)
set -euo pipefail
BIN="$1"
MODEL="$2"
NPM="$(cd "$3" && pwd)"
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$(dirname "$0")/processes.sh"
export DEEPINFER_THREADS=1
KEY=router-secret
fail=0

serve() { local name="$1"; shift; start "$name" "$BIN" serve --model "$MODEL" --port 0 \
  --kv-budget 256M "$@"; }
# metric NAME WORKER_URL: a per-worker router metric (0 when absent).
metric() {
  curl -fsS -H "Authorization: Bearer $KEY" "$router/metrics" |
    awk -v m="$1{worker=\"$2\"}" '$1 == m {v = $2} END {print v + 0}'
}
check() {  # check CONDITION_TEXT MESSAGE: a failed condition fails the test
  if eval "$1"; then echo "ok: $2"; else echo "FAILED: $2 ($1)"; fail=1; fi
}

serve w1 --served-model-name m
serve w2 --served-model-name m
serve other --served-model-name not-m
w1="$(wait_url "$work/w1.log")"; w2="$(wait_url "$work/w2.log")"; other="$(wait_url "$work/other.log")"
start router "$BIN" route --port 0 --api-key "$KEY" --tokenizer "$MODEL" --worker "$w1" "$w2" "$other"
router="$(wait_url "$work/router.log")"

# Through the router = directly from a worker.
python3 "$HERE/router_client.py" "$w1" >"$work/direct.json"
python3 "$HERE/router_client.py" "$router" "$KEY" >"$work/routed.json"
if [ -s "$work/direct.json" ] && cmp -s "$work/direct.json" "$work/routed.json"; then
  echo "ok: through the router = directly: $(head -c 160 "$work/direct.json")"
else
  echo "FAILED: through the router DIFFERS from the worker's own answers"
  diff <(tr "]" "\n" <"$work/direct.json") <(tr "]" "\n" <"$work/routed.json") | head -10 || true; fail=1
fi
node "$HERE/router_openai_stream.mjs" "$NPM" "$w1" "" >"$work/sdk_direct.json"
node "$HERE/router_openai_stream.mjs" "$NPM" "$router" "$KEY" >"$work/sdk_routed.json"
check 'cmp -s "$work/sdk_direct.json" "$work/sdk_routed.json" && grep -q "\"several_chunks\":true" "$work/sdk_routed.json"' \
  "openai npm client, streamed chat through the router = directly: $(cat "$work/sdk_routed.json")"
for w in "$w1" "$w2"; do
  check '[ "$(metric deepinfer_router_requests_total "$w")" -gt 0 ]' "requests reached $w"
done

# Cache-aware: a shared prefix of several pages (64 tokens each) stays on one worker.
r1="$(metric deepinfer_router_requests_total "$w1")"; r2="$(metric deepinfer_router_requests_total "$w2")"
c1="$(metric deepinfer_router_cached_prompt_tokens_total "$w1")"; c2="$(metric deepinfer_router_cached_prompt_tokens_total "$w2")"
python3 - "$router" "$KEY" <<'PY'
import json, sys, urllib.request
prefix = " ".join(["pebble lantern harbor quartz"] * 60)
for i in range(5):
    req = urllib.request.Request(sys.argv[1] + "/v1/completions", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + sys.argv[2]},
        data=json.dumps({"model": "m", "prompt": prefix + f" question {i}?", "max_tokens": 4}).encode())
    urllib.request.urlopen(req, timeout=120).read()
PY
d1=$(( $(metric deepinfer_router_requests_total "$w1") - r1 )); d2=$(( $(metric deepinfer_router_requests_total "$w2") - r2 ))
h1=$(( $(metric deepinfer_router_cached_prompt_tokens_total "$w1") - c1 )); h2=$(( $(metric deepinfer_router_cached_prompt_tokens_total "$w2") - c2 ))
check '{ [ "$d1" = 5 ] && [ "$d2" = 0 ]; } || { [ "$d1" = 0 ] && [ "$d2" = 5 ]; }' \
  "5 requests with a shared prefix went to one worker (w1 $d1, w2 $d2; expected hits w1 $h1, w2 $h2 tokens)"
check '[ $(( h1 + h2 )) -ge $(( 4 * 192 )) ]' "the router expected the prefix's pages in that worker's cache"
if [ "$d1" = 5 ]; then holder="$w1"; survivor="$w2"; pid_holder="$pid_w1"; else holder="$w2"; survivor="$w1"; pid_holder="$pid_w2"; fi

# The worker with another model name is refused: logged, shown, never routed to.
check 'grep -q "refusing worker $other: model \"not-m\"" "$work/router.log.err"' "a worker serving another model is refused"
check '[ "$(metric deepinfer_router_worker_refused "$other")" = 1 ] && [ "$(metric deepinfer_router_requests_total "$other")" = 0 ]' \
  "the refused worker shows in /metrics and got no request"

# Auth: 401 in each route's format without the key; /health is open.
code="$(curl -sS -o "$work/401.json" -w '%{http_code}' "$router/v1/completions" -H 'Content-Type: application/json' -d '{"model": "m", "prompt": "x"}')"
check '[ "$code" = 401 ] && grep -q "authentication_error" "$work/401.json" && grep -q "\"error\":{" "$work/401.json"' "no key: 401 (OpenAI format)"
code="$(curl -sS -o "$work/401a.json" -w '%{http_code}' "$router/v1/messages" -H 'Authorization: Bearer wrong' -H 'Content-Type: application/json' -d '{}')"
check '[ "$code" = 401 ] && grep -q "\"type\":\"error\"" "$work/401a.json"' "wrong key: 401 (Anthropic format)"
check '[ "$(curl -sS -o /dev/null -w "%{http_code}" "$router/health")" = 200 ]' "/health needs no key"

# SIGKILL the worker holding the prefix in the middle of a stream it serves (the cache sends the
# prefix there): the router resumes the request on the survivor and the client's stream is
# complete, with the content of the uninterrupted answer (the survivor's own, asked directly:
# text, logprobs, finish reason), one id throughout and one [DONE]; the next requests (which the
# cache would send there too) still succeed, on the survivor; the dead worker shows as down.
python3 - "$router" "$KEY" "$pid_holder" "$survivor" <<'PY' || fail=1
import json, os, sys, urllib.request
prefix = " ".join(["pebble lantern harbor quartz"] * 60)
body = {"model": "m", "max_tokens": 400, "ignore_eos": True, "temperature": 0.8, "seed": 7,
        "logprobs": 1, "prompt": prefix + " stream?"}
def read(url, key, kill_after):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    req = urllib.request.Request(url + "/v1/completions", headers=headers,
                                 data=json.dumps(dict(body, stream=True)).encode())
    text, lps, finish, ids, done, n = "", [], None, set(), 0, 0
    with urllib.request.urlopen(req, timeout=300) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: "):
                continue
            n += 1
            if n == kill_after:
                os.kill(int(sys.argv[3]), 9)
            if line == "data: [DONE]":
                done += 1
                continue
            j = json.loads(line[6:])
            if "error" in j:
                return {"error": j["error"]}
            ids.add(j["id"])
            for c in j["choices"]:
                text += c["text"]
                lps += (c.get("logprobs") or {}).get("token_logprobs") or []
                finish = c["finish_reason"] or finish
    return {"text": text, "logprobs": lps, "finish": finish, "ids": len(ids), "done": done}
resumed = read(sys.argv[1], sys.argv[2], 3)
direct = read(sys.argv[4], "", 0)
if resumed != direct or resumed.get("ids") != 1 or resumed.get("done") != 1:
    print("FAILED: the stream of a killed worker was not resumed whole:", str(resumed)[:300],
          "| direct:", str(direct)[:200])
    sys.exit(1)
print(f"ok: a worker killed mid-stream: the router resumed it; {len(resumed['logprobs'])} tokens,"
      " content identical to the uninterrupted answer")
PY
wait "$pid_holder" 2>/dev/null || true
python3 - "$router" "$KEY" <<'PY' || fail=1
import json, sys, urllib.request
prefix = " ".join(["pebble lantern harbor quartz"] * 60)
for i in range(3):
    req = urllib.request.Request(sys.argv[1] + "/v1/completions", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + sys.argv[2]},
        data=json.dumps({"model": "m", "prompt": prefix + f" again {i}?", "max_tokens": 4}).encode())
    with urllib.request.urlopen(req, timeout=120) as r:
        assert r.status == 200
print("ok: requests the cache sends to the killed worker succeed")
PY
python3 "$HERE/router_client.py" "$router" "$KEY" >"$work/after_kill.json"
check 'cmp -s "$work/direct.json" "$work/after_kill.json"' "with a worker killed, the same answers through the router"
for _ in $(seq 1 50); do [ "$(metric deepinfer_router_worker_up "$holder")" = 0 ] && break; sleep 0.1; done
check '[ "$(metric deepinfer_router_worker_up "$holder")" = 0 ] && [ "$(metric deepinfer_router_worker_up "$survivor")" = 1 ]' "the killed worker shows as down, the other as up"
check '[ "$(metric deepinfer_router_retries_total "$holder")" -ge 1 ]' \
  "requests sent to the dead worker were retried ($(metric deepinfer_router_retries_total "$holder") retries)"
check 'grep -q "resuming the stream on another worker" "$work/router.log.err"' "the router logged the resume"
check '[ "$(curl -fsS -H "Authorization: Bearer $KEY" "$router/metrics" | awk '"'"'$1 == "deepinfer_router_stream_resumes_total" {print $2}'"'"')" = 1 ]' \
  "one stream resumed (router /metrics)"
check '[ "$(metric deepinfer_router_in_flight_tokens "$w1")" = 0 ] && [ "$(metric deepinfer_router_in_flight_tokens "$w2")" = 0 ]' \
  "no in-flight tokens left once every request has ended"

kill -TERM "$pid_router"
for _ in $(seq 1 100); do kill -0 "$pid_router" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid_router" 2>/dev/null; then
  echo "FAILED: the router still runs 10 s after SIGTERM"; fail=1
else
  wait "$pid_router" && echo "ok: the router stopped cleanly" || { echo "FAILED: router exit status $?"; fail=1; }
fi
[ "$fail" = 0 ] || { echo "--- router log"; tail -20 "$work/router.log.err"; }
exit "$fail"
