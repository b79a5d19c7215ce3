#!/usr/bin/env bash
# Prefill/decode disaggregation on loopback (docs/disaggregation.md): one prefill instance, two
# decode instances (KV hand-off over UCX) and `deepinfer route` in front of them answer exactly
# what one colocated instance answers (greedy, seeded, n = 2, logprobs, a JSON schema, chat,
# streams; each request again once its pages sit on the decode side), with DSpark off and on.
# The hand-off shows on /metrics (pages imported, prefix hits on the decode side). Faults: a
# decode instance killed in the middle of a stream (the router resumes it on the other one: the
# client's stream is whole and equals the colocated answer), a
# corrupt page (DEEPINFER_FAULT=pd_corrupt_page) is refused by its checksum, a decode instance
# that is gone and one with another page layout (fingerprint) fail the prefill leg with an error
# naming the decode instance; a killed prefill instance makes the router serve colocated on a
# decode instance (pd_fallbacks); every answer is still the colocated one. Every instance checks
# its page pool's invariants after every step (--check-integrity on) and must log no violation.
#   usage: pd_serve_test.sh DEEPINFER_BIN MODEL_DIR (a model folder with tokenizer.json)
set -euo pipefail
BIN="$1"
MODEL="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$(dirname "$0")/processes.sh"
export DEEPINFER_THREADS=1
export UCX_TLS="${UCX_TLS:-tcp,self}" UCX_NET_DEVICES="${UCX_NET_DEVICES:-lo}"
fail=0

serve() { local name="$1"; shift; start "$name" "$BIN" serve --model "$MODEL" --port 0 \
  --kv-budget 256M --served-model-name m --check-integrity on "$@"; }
metric() { curl -fsS "$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }
pd_address() { curl -fsS "$1/internal/info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pd_address"])'; }
# prefill_leg P_URL DECODE_ADDRESS PROMPT: status and body of a bare prefill leg.
prefill_leg() {
  curl -sS -o "$work/leg.json" -w '%{http_code}' "$1/internal/pd/prefill" \
    -H 'Content-Type: application/json' \
    -d "{\"path\": \"/v1/completions\", \"decode\": \"$2\", \"request\": {\"model\": \"m\", \"prompt\": \"$3\", \"max_tokens\": 4}}"
}

for spec in off dspark; do
  serve colo --spec "$spec"
  serve pre --spec "$spec" --role prefill
  serve dec1 --spec "$spec" --role decode
  serve dec2 --spec "$spec" --role decode
  colo="$(wait_url "$work/colo.log")"; pre="$(wait_url "$work/pre.log")"
  dec1="$(wait_url "$work/dec1.log")"; dec2="$(wait_url "$work/dec2.log")"
  start router "$BIN" route --port 0 --tokenizer "$MODEL" --prefill "$pre" --decode "$dec1" "$dec2"
  router="$(wait_url "$work/router.log")"
  python3 "$HERE/pd_client.py" "$colo" >"$work/colo.json"
  python3 "$HERE/pd_client.py" "$router" >"$work/pd.json"
  same_answers "spec $spec: PD through the router" "$work/colo.json" "$work/pd.json" || fail=1
  handoffs="$(metric "$pre" deepinfer_pd_handoffs_total)"
  imported=$(( $(metric "$dec1" deepinfer_pd_pages_imported_total | cut -d. -f1) + \
               $(metric "$dec2" deepinfer_pd_pages_imported_total | cut -d. -f1) ))
  hits=$(( $(metric "$dec1" deepinfer_prefix_cache_hits_total | cut -d. -f1) + \
           $(metric "$dec2" deepinfer_prefix_cache_hits_total | cut -d. -f1) ))
  held=$(( $(metric "$dec1" deepinfer_pd_tails_held_total | cut -d. -f1) + \
           $(metric "$dec2" deepinfer_pd_tails_held_total | cut -d. -f1) ))
  continued=$(( $(metric "$dec1" deepinfer_pd_tails_continued_total | cut -d. -f1) + \
                $(metric "$dec2" deepinfer_pd_tails_continued_total | cut -d. -f1) ))
  echo "spec $spec: hand-offs ${handoffs:-0}, pages imported $imported, decode-side prefix hits $hits," \
       "tails held $held, continued $continued"
  if [ "${handoffs%.*}" -lt 10 ] || [ "$imported" -lt 20 ] || [ "$hits" -lt 20 ]; then
    echo "spec $spec: the decode instances did not take the prompts' pages"; fail=1
  fi
  # Every hand-off carried its sequence's tail and its request continued it (one position on D).
  if [ "$held" -ne "${handoffs%.*}" ] || [ "$continued" -ne "$held" ]; then
    echo "spec $spec: tails held $held / continued $continued for ${handoffs%.*} hand-offs"; fail=1
  fi
  if [ "$spec" = dspark ]; then
    for name in colo pre dec1 dec2 router; do p="pid_$name"; kill -TERM "${!p}" 2>/dev/null || true; done
    sleep 1
    continue
  fi

  # Faults, on the spec-off deployment.
  a1="$(pd_address "$dec1")"; a2="$(pd_address "$dec2")"
  serve bad --role prefill
  serve other --role decode --page-tokens 128
  bad="$(wait_url "$work/bad.log")"; other="$(wait_url "$work/other.log")"
  DEEPINFER_FAULT=pd_corrupt_page serve corrupt --role prefill
  corrupt="$(wait_url "$work/corrupt.log")"
  refused0="$(metric "$dec1" deepinfer_pd_bundles_refused_total)"
  code="$(prefill_leg "$corrupt" "$a1" "$(python3 -c 'print(" ".join(["pebble"] * 200))')")"
  if [ "$code" = 502 ] && grep -q "checksum" "$work/leg.json" && grep -q "$a1" "$work/leg.json"; then
    echo "corrupt page: 502, $(head -c 200 "$work/leg.json")"
  else
    echo "corrupt page: expected 502 naming the checksum and $a1, got $code $(cat "$work/leg.json")"; fail=1
  fi
  refused1="$(metric "$dec1" deepinfer_pd_bundles_refused_total)"
  [ "${refused1%.*}" -gt "${refused0%.*}" ] || { echo "corrupt page: decode side did not count a refusal"; fail=1; }
  code="$(prefill_leg "$bad" "$(pd_address "$other")" "$(python3 -c 'print(" ".join(["cobble"] * 200))')")"
  if [ "$code" = 502 ] && grep -q "fingerprint" "$work/leg.json"; then
    echo "other page layout: 502, $(head -c 200 "$work/leg.json")"
  else
    echo "other page layout: expected 502 naming the fingerprint, got $code $(cat "$work/leg.json")"; fail=1
  fi
  # A decode instance killed in the middle of a stream it serves: the router resumes the request
  # on the other one; the client's stream is whole and its content is the colocated answer's.
  python3 - "$router" "$colo" "$dec1" "$dec2" "$pid_dec1" "$pid_dec2" >"$work/killed" <<'PY' || fail=1
import json, os, sys, urllib.request
router, colo, decs, pids = sys.argv[1], sys.argv[2], sys.argv[3:5], sys.argv[5:7]
body = {"model": "m", "max_tokens": 300, "ignore_eos": True, "temperature": 0.7, "seed": 17,
        "logprobs": 1, "prompt": " ".join(["maple signal harbor"] * 90)}
def running(url):
    text = urllib.request.urlopen(url + "/metrics", timeout=30).read().decode()
    return sum(float(l.split()[1]) for l in text.splitlines()
               if l.startswith("deepinfer_requests_running "))
def read(url, kill_after):
    req = urllib.request.Request(url + "/v1/completions", headers={"Content-Type": "application/json"},
                                 data=json.dumps(dict(body, stream=True)).encode())
    text, lps, finish, ids, n, killed = "", [], None, set(), 0, None
    with urllib.request.urlopen(req, timeout=300) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            n += 1
            if n == kill_after:
                busy = [k for k in range(2) if running(decs[k]) > 0]
                killed = busy[0] if busy else 0
                os.kill(int(pids[killed]), 9)
            j = json.loads(line[6:])
            if "error" in j:
                return {"error": j["error"]}, killed
            ids.add(j["id"])
            for c in j["choices"]:
                text += c["text"]
                lps += (c.get("logprobs") or {}).get("token_logprobs") or []
                finish = c["finish_reason"] or finish
    return {"text": text, "logprobs": lps, "finish": finish, "ids": len(ids)}, killed
resumed, killed = read(router, 3)
direct, _ = read(colo, 0)
ok = resumed == direct and resumed.get("ids") == 1
print(killed)
print(("decode instance killed mid-stream: resumed, identical to colocated (%d tokens)"
       % len(direct["logprobs"])) if ok else
      "decode instance killed mid-stream: DIFFERENT " + str(resumed)[:300], file=sys.stderr)
sys.exit(0 if ok else 1)
PY
  if [ "$(head -1 "$work/killed")" = 1 ]; then
    dead="$pid_dec2"; dead_addr="$a2"; alive="$dec1"
  else
    dead="$pid_dec1"; dead_addr="$a1"; alive="$dec2"
  fi
  wait "$dead" 2>/dev/null || true
  start_s=$(date +%s)
  code="$(prefill_leg "$bad" "$dead_addr" "$(python3 -c 'print(" ".join(["gravel"] * 200))')")"
  if [ "$code" = 502 ] && grep -q "$dead_addr" "$work/leg.json" && [ $(( $(date +%s) - start_s )) -lt 30 ]; then
    echo "decode instance gone: 502 in $(( $(date +%s) - start_s )) s, $(head -c 200 "$work/leg.json")"
  else
    echo "decode instance gone: expected a prompt 502 naming $dead_addr, got $code $(cat "$work/leg.json")"; fail=1
  fi
  # The router still answers everything as the colocated instance does (one decode instance is
  # down: its requests are retried on the other).
  python3 "$HERE/pd_client.py" "$router" >"$work/pd2.json"
  if cmp -s "$work/colo.json" "$work/pd2.json"; then
    echo "with a decode instance killed: PD through the router = colocated"
  else
    echo "with a decode instance killed: DIFFERENT"; fail=1
  fi
  # The prefill instance killed: the router's prefill leg fails and the decode instance computes
  # the prompts itself (colocated fallback); the answers do not change.
  kill -9 "$pid_pre"; wait "$pid_pre" 2>/dev/null || true
  python3 "$HERE/pd_client.py" "$router" >"$work/pd3.json"
  fallbacks="$(curl -fsS "$router/metrics" | awk '$1 == "deepinfer_router_pd_fallbacks_total" {print $2}')"
  if cmp -s "$work/colo.json" "$work/pd3.json" && [ "${fallbacks:-0}" -ge 10 ]; then
    echo "with the prefill instance killed: colocated fallback ($fallbacks), answers = colocated"
  else
    echo "with the prefill instance killed: DIFFERENT or no fallback (${fallbacks:-none})"; fail=1
  fi
  for name in colo pre dec1 dec2 router bad other corrupt; do p="pid_$name"; kill -TERM "${!p}" 2>/dev/null || true; done
  sleep 1
done

for log in "$work"/*.log.err; do
  if grep -qiE "integrity|invariant|engine step failed" "$log"; then
    echo "$(basename "$log"): $(grep -iE "integrity|invariant|engine step failed" "$log" | head -2)"; fail=1
  fi
done
exit "$fail"
