#!/usr/bin/python3
"""The trainer's NLL of a checkpoint on held-out windows: the number `deepinfer eval-nll` must
reproduce on the exported model (same windows: N evenly spaced windows of T+1 ids).

  /usr/bin/python3 train/evaluate.py --checkpoint RUN/last.pt --tokens train/data/val.bin \
      [--seq 256] [--windows 32]

Prints one JSON object: mean NLL per token (nats, exact over the full vocabulary). The forward runs
with the released roundings on (numerics.QUANT), i.e. the numbers the exported weights give.
"""

import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from train import Tokens, token_nll  # noqa: E402
from v41 import numerics  # noqa: E402
from v41.config import load_config  # noqa: E402
from v41.model import V41Model  # noqa: E402


def load_checkpoint(path, config=None):
    ck = torch.load(path)
    cfg = load_config(config or ck["config"])
    model = V41Model(cfg, kept_ids=ck["kept_ids"])
    model.load_state_dict(ck["model"])
    model.eval()
    return model, ck


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--config")
    p.add_argument("--tokens", required=True, help="uint32 token ids (train/data/*.bin)")
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--windows", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    numerics.QUANT = True
    model, ck = load_checkpoint(a.checkpoint, a.config)
    windows = Tokens(a.tokens).fixed_windows(a.windows, a.seq)
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(windows), 4):
            w = windows[i:i + 4]
            nll = token_nll(model, model(w[:, :-1]).logits, w[:, 1:])
            total += float(nll.sum())
            count += nll.numel()
    print(json.dumps({"checkpoint": a.checkpoint, "step": ck.get("step"), "source": a.tokens, "seq": a.seq,
                      "windows": len(windows), "tokens_scored": count, "nll": total / count}))


if __name__ == "__main__":
    main()
