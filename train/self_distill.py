"""DSpark's self-distillation data: the chat prompts of a dataset answered by the model itself.

DSpark drafts what the backbone will say next. Trained on the dataset's own replies (teacher
forcing), its inputs are the sources' text; served, they are the backbone's own replies, which a
small model words differently (shorter, repetitive). This script runs `deepinfer generate` on the
exported model over the dataset's chat prompts (greedy and sampled at temperature 1) and writes
the prompts with the model's replies as a dataset of the same format (`prepare_data.py`): a stream
of BOS-started sequences, uint32, and beside each split a uint8 mask of the reply tokens
(SPLIT_reply.bin). `train.py --train dspark --data OUT` then trains the DSpark stage alone on
them, at reply positions only (the backbone frozen; its distributions are the targets, as
always).

  /usr/bin/python3 train/self_distill.py --data train/data-v3 --model DIR --out train/data-dspark

DIR is the exported model (export.py, or `unpack-model` of a compact one) whose backbone the
DSpark stage is trained for. The prompts are deterministic (seeded); the replies are the model's.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

from prepare_data import make_dataset_dir

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ASSISTANT = 128804  # <｜Assistant｜>; the prompt ends with the `</think>` pieces after it
THINK_END_PIECES = 3


def chat_prompts(path):
    """The distinct chat prompts of a token stream: BOS .. <｜Assistant｜></think>, in stream order."""
    a = np.fromfile(path, dtype="<u4")
    starts = np.flatnonzero(a == 0).tolist() + [len(a)]
    seen, out = set(), []
    for s, e in zip(starts[:-1], starts[1:]):
        seq = a[s:e]
        hits = np.flatnonzero(seq == ASSISTANT)
        if len(hits) == 0:
            continue
        prompt = tuple(int(v) for v in seq[:hits[0] + 1 + THINK_END_PIECES])
        if prompt not in seen:
            seen.add(prompt)
            out.append(prompt)
    ends = {p[-THINK_END_PIECES:] for p in out}
    if len(ends) > 1:  # every rendered prompt ends with the same `</think>` pieces
        raise SystemExit(f"{path}: chat prompts end in {len(ends)} different ways, e.g. {sorted(ends)[:2]}")
    return out


def generate(binary, model, requests, kv_budget):
    """Runs the requests through `deepinfer generate --batch -`; the output lines in input order."""
    body = "".join(json.dumps(r) + "\n" for r in requests)
    res = subprocess.run([binary, "generate", "--model", model, "--batch", "-", "--kv-budget", kv_budget],
                         input=body, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"deepinfer generate failed ({res.returncode}): {res.stderr[-2000:]}")
    lines = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    if len(lines) != len(requests):
        raise SystemExit(f"deepinfer generate answered {len(lines)} of {len(requests)} requests")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="a prepare_data.py folder (its chat prompts, kept_ids.json)")
    ap.add_argument("--model", required=True, help="the exported model folder to answer with")
    ap.add_argument("--out", required=True)
    ap.add_argument("--prompts", type=int, default=4000, help="training prompts (each answered once per temperature)")
    ap.add_argument("--val-prompts", type=int, default=200)
    ap.add_argument("--temperatures", default="0,1")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kv-budget", default="2G")
    ap.add_argument("--bin", default=os.path.join(REPO, "build/release/deepinfer"))
    args = ap.parse_args()
    t0 = time.time()
    make_dataset_dir(args.out)
    temps = [float(t) for t in args.temperatures.split(",")]
    rng = np.random.default_rng(args.seed)
    report = {"model": os.path.abspath(args.model), "data": os.path.relpath(os.path.abspath(args.data), REPO),
              "temperatures": temps, "max_tokens": args.max_tokens, "splits": {}}
    for split, n in (("train", args.prompts), ("val", args.val_prompts)):
        prompts = chat_prompts(os.path.join(args.data, f"{split}.bin"))
        pick = sorted(rng.choice(len(prompts), size=min(n, len(prompts)), replace=False).tolist())
        requests = [{"prompt_ids": list(prompts[i]), "max_tokens": args.max_tokens, "temperature": t,
                     "seed": args.seed * 1000003 + k}
                    for k, (i, t) in enumerate((i, t) for t in temps for i in pick)]
        answers = generate(args.bin, args.model, requests, args.kv_budget)
        seqs, masks, ended, reply_tokens = [], [], 0, 0
        for req, ans in zip(requests, answers):
            if "error" in ans:
                raise SystemExit(f"request {ans.get('index')}: {ans['error']}")
            seqs.append(req["prompt_ids"] + ans["ids"])
            masks.append([0] * len(req["prompt_ids"]) + [1] * len(ans["ids"]))
            ended += ans["finish_reason"] == "stop"
            reply_tokens += len(ans["ids"])
        order = rng.permutation(len(seqs))
        stream = np.concatenate([np.asarray(seqs[i], dtype="<u4") for i in order])
        stream.tofile(os.path.join(args.out, f"{split}.bin"))
        # 1 where the token is the model's reply (EOS included), 0 in the prompt: train.py then
        # trains DSpark only where the engine drafts (reply_weights).
        np.concatenate([np.asarray(masks[i], dtype=np.uint8) for i in order]).tofile(
            os.path.join(args.out, f"{split}_reply.bin"))
        report["splits"][split] = {"prompts": len(pick), "sequences": len(seqs), "tokens": int(len(stream)),
                                   "reply_tokens": reply_tokens, "ended_by_eos": round(ended / len(seqs), 4)}
        print(f"{split}: {len(seqs)} replies, {reply_tokens} reply tokens, "
              f"{ended / len(seqs):.1%} ended by EOS ({time.time() - t0:.0f}s)", file=sys.stderr)
    shutil.copyfile(os.path.join(args.data, "kept_ids.json"), os.path.join(args.out, "kept_ids.json"))
    with open(os.path.join(args.out, "sources.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(f"done in {time.time() - t0:.0f}s -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
