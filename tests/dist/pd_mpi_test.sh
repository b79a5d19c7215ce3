#!/usr/bin/env bash
# Prefill/decode disaggregation with instances over MPI ranks (docs/disaggregation.md): a prefill
# instance and a decode instance, each `mpirun -n 2 deepinfer serve` (expert parallel), behind
# `deepinfer route`, answer exactly what one single-process colocated instance answers (the
# requests of pd_client.py: greedy, seeded, n = 2, logprobs, a JSON schema, chat, streams, each
# again once its pages sit on the decode side). The prefill legs run on both ranks of the prefill
# instance (a leg placed on rank 1 ships its pages to rank 0 with its last output); the hand-offs
# land on both ranks of the decode instance, and the requests that follow find their pages there
# (per-rank prefix hits on /metrics). Every rank checks its page pool after every step.
#   usage: pd_mpi_test.sh DEEPINFER_BIN MODEL_DIR (a model folder with tokenizer.json)
set -euo pipefail
BIN="$1"
MODEL="$2"
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$(dirname "$0")/processes.sh"
export DEEPINFER_THREADS=1
export UCX_TLS="${UCX_TLS:-tcp,self}" UCX_NET_DEVICES="${UCX_NET_DEVICES:-lo}"
source "$(dirname "$0")/mpirun.sh"
MPIRUN+=(-x UCX_TLS -x UCX_NET_DEVICES)
SERVE=(serve --model "$MODEL" --port 0 --kv-budget 256M --served-model-name m --check-integrity on)
fail=0

# per_rank URL METRIC: "rank0 rank1" values of a per-rank counter.
per_rank() {
  curl -fsS "$1/metrics" |
    awk -v m="$2" '{ for (r = 0; r < 2; r++) if ($1 == m "{rank=\"" r "\"}") v[r] = int($2) }
                   END { print v[0] + 0, v[1] + 0 }'
}
metric() { curl -fsS "$1/metrics" | awk -v m="$2" '$1 == m {print int($2)}'; }

start colo "$BIN" "${SERVE[@]}"
start pre "${MPIRUN[@]}" -n 2 "$BIN" "${SERVE[@]}" --role prefill
start dec "${MPIRUN[@]}" -n 2 "$BIN" "${SERVE[@]}" --role decode
colo="$(wait_url "$work/colo.log")"; pre="$(wait_url "$work/pre.log")"; dec="$(wait_url "$work/dec.log")"
start router "$BIN" route --port 0 --tokenizer "$MODEL" --prefill "$pre" --decode "$dec"
router="$(wait_url "$work/router.log")"
python3 "$HERE/pd_client.py" "$colo" >"$work/colo.json"
python3 "$HERE/pd_client.py" "$router" >"$work/pd.json"
same_answers "PD over 2 + 2 ranks through the router" "$work/colo.json" "$work/pd.json" || fail=1

read -r legs0 legs1 <<<"$(per_rank "$pre" deepinfer_rank_requests_finished_total)"
handoffs="$(metric "$pre" deepinfer_pd_handoffs_total)"
imported="$(metric "$dec" deepinfer_pd_pages_imported_total)"
read -r ran0 ran1 <<<"$(per_rank "$dec" deepinfer_rank_requests_finished_total)"
read -r hits0 hits1 <<<"$(per_rank "$dec" deepinfer_rank_prefix_cache_hits_total)"
read -r tails0 tails1 <<<"$(per_rank "$dec" deepinfer_rank_pd_tails_continued_total)"
held="$(metric "$dec" deepinfer_pd_tails_held_total)"
echo "prefill legs per rank: $legs0 $legs1; hand-offs ${handoffs:-0}; pages imported ${imported:-0}"
echo "decode requests per rank: $ran0 $ran1; decode-side prefix hits per rank: $hits0 $hits1"
echo "sequence tails held: ${held:-0}; continued per rank: $tails0 $tails1"
if [ "$legs1" -lt 1 ] || [ "$legs0" -lt 1 ] || [ "${handoffs:-0}" -lt 10 ]; then
  echo "the prefill legs did not run on both ranks of the prefill instance"; fail=1
fi
if [ "${imported:-0}" -lt 20 ] || [ "$ran1" -lt 1 ] || [ "$hits0" -lt 1 ] || [ "$hits1" -lt 1 ] ||
   [ $(( hits0 + hits1 )) -lt 20 ]; then
  echo "the decode instance's ranks did not take the prompts' pages"; fail=1
fi
# Every hand-off's tail (shipped through the exchanges on both sides) was held where its pages
# went and continued there by its request.
if [ "${held:-0}" != "${handoffs:-x}" ] || [ $(( tails0 + tails1 )) -ne "${held%.*}" ] ||
   [ "$tails0" -lt 1 ] || [ "$tails1" -lt 1 ]; then
  echo "the decode ranks did not continue every hand-off's tail"; fail=1
fi
failures="$(metric "$router" deepinfer_router_pd_fallbacks_total)"
if [ "${failures:-0}" -ne 0 ]; then
  echo "the router fell back to colocated prefills $failures times"; fail=1
fi

for log in "$work"/*.log.err; do
  if grep -qiE "integrity|invariant|engine step failed" "$log"; then
    echo "$(basename "$log"): $(grep -iE "integrity|invariant|engine step failed" "$log" | head -2)"; fail=1
  fi
done
exit "$fail"
