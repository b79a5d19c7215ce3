#!/usr/bin/python3
"""Trains the V4.1-architecture default model (issue 24). Run by hand, not by CI.

  /usr/bin/python3 train/train.py --run /work/runs/v41-small [--steps N] ...

Resumable: the run folder holds `last.pt` (model, optimiser, step, MoE biases, the log so far);
starting again with the same --run continues from it (the data windows of step s are drawn from a
generator seeded with (seed, s), so a resumed run sees what an uninterrupted one would). SIGINT or
SIGTERM saves and exits. `log.jsonl` gets one line per logged step and per evaluation.

A run can also start from a shipped model (`--init-from models/v41-small --init-step S`, used
when the run folder has no last.pt): its weights as stored (dequantized; the fp32 master weights
below the released roundings and the optimiser's moments are not in a model), the schedule
continuing at step S, and the learning rate warmed up again over --warmup steps because the
optimiser's moments start from zero.

Losses: next-token cross-entropy over the exact full vocabulary (the tied tail row stands for
V-K ids: its logit gets log(V-K) in the softmax, and a tail target's NLL adds log(V-K) back);
the indexers' KL to their attention (`aux`); from --dspark-from on, DSpark's KL to the detached
backbone distribution and its confidence head's cross-entropy against greedy acceptance.
MoE routing is balanced without a loss: after every step each gate bias moves by
--bias-rate toward the mean load (sign update, as DeepSeek-V3's auxiliary-loss-free balancing).

A shipped model can also grow its vocabulary rows: when --data's kept_ids.json is a superset of
the model's (prepare_data.py --kept-ids-base), each new id starts as a copy of the shared tail row,
which leaves the model's function unchanged. `--train dspark` trains the DSpark stage alone on a
frozen backbone (e.g. on the model's own replies, self_distill.py). Training steps run the
quantized GEMMs and the head in bf16 (`--gemm`, numerics.GEMM_BF16); evaluations in float32.
"""

import argparse
import json
import math
import os
import signal
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from v41 import numerics  # noqa: E402
from v41.config import load_config  # noqa: E402
from v41.model import V41Model, _is_vocab_rows  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default=os.path.join(HERE, "configs/v41-small.json"))
    p.add_argument("--data", default=os.path.join(HERE, "data"))
    p.add_argument("--run", required=True, help="run folder (checkpoints and log)")
    p.add_argument("--steps", type=int, default=3000, help="total optimiser steps of the schedule")
    p.add_argument("--stop-after", type=float, default=0, help="save and stop after this many minutes (0: never)")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=150)
    p.add_argument("--min-lr-frac", type=float, default=0.1)
    p.add_argument("--weight-decay", type=float, default=0.05)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--bias-rate", type=float, default=1e-3)
    p.add_argument("--indexer-weight", type=float, default=0.1)
    p.add_argument("--qat-from", type=int, default=0, help="step from which the released roundings are applied")
    p.add_argument("--dspark-from", type=int, default=0, help="step from which DSpark is trained")
    p.add_argument("--dspark-positions", type=int, default=32, help="draft positions per sequence")
    p.add_argument("--dspark-weight", type=float, default=1.0)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--eval-windows", type=int, default=32)
    p.add_argument("--save-every", type=float, default=5.0, help="minutes between checkpoints")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--train", choices=("all", "dspark"), default="all",
                   help="dspark: train the DSpark stage alone (the backbone frozen, no LM loss), e.g. on "
                        "the model's own replies (self_distill.py)")
    p.add_argument("--gemm", choices=("bf16", "fp32"), default="bf16",
                   help="the quantized linears' and the head's GEMMs in training steps "
                        "(numerics.GEMM_BF16; bf16: 2.7x faster steps on an AMX host); the "
                        "evaluations always use fp32")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--init-from", help="a model folder (compact.safetensors) to start from when the "
                   "run folder has no last.pt")
    p.add_argument("--init-step", type=int, default=0, help="the schedule step --init-from was "
                   "trained to (its MODEL_CARD.md says)")
    return p.parse_args()


class Tokens:
    """A uint32 token stream cut into windows of T+1 ids, with its uint8 reply mask when there is
    one (PATH less .bin + _reply.bin: self_distill.py writes it)."""

    def __init__(self, path):
        self.ids = np.memmap(path, dtype="<u4", mode="r")
        mask = path[:-4] + "_reply.bin" if path.endswith(".bin") else None
        self.reply = np.memmap(mask, dtype=np.uint8, mode="r") if mask and os.path.exists(mask) else None
        if self.reply is not None and len(self.reply) != len(self.ids):
            raise SystemExit(f"{mask}: {len(self.reply)} entries for {len(self.ids)} tokens")

    def windows(self, rng, n, t):
        """n random windows [n, t+1] and the reply mask of the same windows (None without one)."""
        starts = rng.integers(0, len(self.ids) - t - 1, size=n)
        ids = torch.from_numpy(np.stack([self.ids[s:s + t + 1].astype(np.int64) for s in starts]))
        if self.reply is None:
            return ids, None
        return ids, torch.from_numpy(np.stack([self.reply[s:s + t + 1].astype(np.bool_) for s in starts]))

    def fixed_windows(self, n, t):
        """n evenly spaced windows: the same every evaluation."""
        step = max(1, (len(self.ids) - t - 1) // n)
        return torch.from_numpy(np.stack([self.ids[i * step:i * step + t + 1].astype(np.int64)
                                          for i in range(n) if i * step + t + 1 <= len(self.ids)]))


def full_vocab_log_softmax(model, logits):
    """log p over the K+1 rows, the tail row standing for every id outside kept_ids."""
    if model.tail_log_count is None:
        return F.log_softmax(logits, dim=-1)
    adj = logits.clone()
    adj[..., -1] = adj[..., -1] + model.tail_log_count
    return F.log_softmax(adj, dim=-1)


def token_nll(model, logits, targets):
    """Per-token NLL of the exact ids (a tail id is one of V-K equally likely members of its row)."""
    rows = model.vocab_map[targets]
    if model.tail_log_count is None:
        return F.cross_entropy(logits.flatten(0, -2), rows.flatten(), reduction="none").view(rows.shape)
    bias = torch.zeros(logits.shape[-1])
    bias[-1] = model.tail_log_count
    nll = F.cross_entropy((logits + bias).flatten(0, -2), rows.flatten(), reduction="none").view(rows.shape)
    return nll + (rows == logits.shape[-1] - 1).float() * model.tail_log_count


def lr_at(args, step, restart=0):
    """The schedule's rate at `step`; a run restarted at step `restart` from a shipped model (fresh
    optimiser moments) is warmed up again over --warmup steps."""
    if step < args.warmup:
        rate = args.lr * (step + 1) / args.warmup
    else:
        frac = min(1.0, (step - args.warmup) / max(1, args.steps - args.warmup))
        rate = args.lr * (args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * frac)))
    if restart and step - restart < args.warmup:
        rate *= (step - restart + 1) / args.warmup
    return rate


def reply_weights(ids, reply, positions, eos=1):
    """[B, P] weights of DSpark positions: 1 where the engine would draft, i.e. the token at p+1
    (the one drafting starts from) is a reply token other than EOS; 0 in prompts and after EOS.
    reply: [B, T] bool (the windows' reply mask)."""
    nxt = positions + 1
    return (reply[:, nxt] & (ids[:, nxt] != eos)).float()


def greedy_match(draft_logits, target_logits):
    """1.0 where the drafter's greedy token is the backbone's: the argmax of the raw rows. A tail
    id's logit is its shared row's own (every tail id ties on it), so it is the greedy token only
    when that row beats every kept one: not the argmax of full_vocab_log_softmax, whose tail row
    holds the mass of all V - K tail ids together (the distribution's, for the KL)."""
    return (draft_logits.argmax(-1) == target_logits.argmax(-1)).float()


def dspark_losses(model, out, ids, args, gen, reply=None):
    """DSpark's KL to the backbone and its confidence BCE at random positions (all of them, or,
    given the windows' reply mask, weighted to reply positions: reply_weights)."""
    b, t = ids.shape
    block = model.cfg.dspark_block_size
    n_pos = t - 1 - block
    k = min(args.dspark_positions, n_pos)
    positions = torch.randperm(n_pos, generator=gen)[:k].sort().values
    draft, conf = model.dspark(out, ids, positions)  # [B, P, block, R], [B, P, block]
    # Row j of position p predicts the token at p+2+j; the backbone's distribution for it sits at
    # logits row p+1+j.
    rows = positions.unsqueeze(1) + 1 + torch.arange(block).unsqueeze(0)  # [P, block]
    with torch.no_grad():
        target = full_vocab_log_softmax(model, out.logits.detach()[:, rows])  # [B, P, block, R]
    draft_lp = full_vocab_log_softmax(model, draft)
    kl_rows = (target.exp() * (target - draft_lp)).sum(-1)  # [B, P, block]
    accepted = greedy_match(draft.detach(), out.logits.detach()[:, rows])
    bce = F.binary_cross_entropy_with_logits(conf, accepted, reduction="none")
    w = torch.ones_like(kl_rows) if reply is None else \
        reply_weights(ids, reply, positions).unsqueeze(-1).expand_as(kl_rows)
    n = w.sum().clamp(min=1.0)
    per_row = (accepted * w).sum(dim=(0, 1)) / w.sum(dim=(0, 1)).clamp(min=1.0)
    return (kl_rows * w).sum() / n, (bce * w).sum() / n, per_row


@torch.no_grad()
def evaluate(model, sets, args):
    """Mean NLL per set, with float32 GEMMs (as evaluate.py and the engine's eval-nll compare)."""
    model.eval()
    gemm_bf16, numerics.GEMM_BF16 = numerics.GEMM_BF16, False
    result = {}
    for name, windows in sets.items():
        total, count = 0.0, 0
        for i in range(0, len(windows), 8):
            w = windows[i:i + 8]
            out = model(w[:, :-1])
            nll = token_nll(model, out.logits, w[:, 1:])
            total += float(nll.sum())
            count += nll.numel()
        result[name] = total / max(1, count)
    numerics.GEMM_BF16 = gemm_bf16
    model.train()
    return result


def update_gate_biases(model, rate, prefix=""):
    for layer, loads in model.expert_loads().items():
        if not layer.startswith(prefix):
            continue
        bias = model.gate_bias(layer)
        loads = loads.float()
        bias += rate * torch.sign(loads.mean() - loads)


def grow_vocab_rows(state, kept, model):
    """A state whose vocabulary tables have rows for `kept` (+ the shared tail row) re-laid for
    model.kept_ids, a superset: a kept id keeps its row, a newly kept id starts as a copy of the
    shared tail row. The model computes the same function (a new row's logit is the tail's, and
    the tail's count falls by one for each), and the new rows then learn apart."""
    missing = sorted(set(kept) - set(model.kept_ids))
    if missing:
        raise SystemExit(f"--data's kept_ids.json lacks {len(missing)} of the model's ids "
                         f"(e.g. {missing[:5]}): it must hold them all to grow the vocabulary")
    old_row = {t: i for i, t in enumerate(kept)}
    tail = len(kept)
    index = torch.tensor([old_row.get(t, tail) for t in model.kept_ids] + [tail], dtype=torch.long)
    grown = dict(state)
    for name in state:
        if _is_vocab_rows(name):
            grown[name] = state[name][index]
    print(f"vocabulary grown from {len(kept)} to {len(model.kept_ids)} rows", flush=True)
    return grown


def init_from_model(model, folder):
    """Loads a shipped model's compact.safetensors into `model` (same config; the same kept ids or
    a superset of them, grow_vocab_rows)."""
    from v41 import compact
    state, kept = compact.load_compact(folder)
    if kept != model.kept_ids:
        state = grow_vocab_rows(state, kept, model)
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    if missing:
        raise SystemExit(f"{folder}: lacks {missing[:5]}")
    with torch.no_grad():
        for name, t in own.items():
            v = state[name]
            if tuple(v.shape) != tuple(t.shape):
                raise SystemExit(f"{folder}: {name} has shape {list(v.shape)}, the model {list(t.shape)}")
            t.copy_(v.to(t.dtype))


def save(run, model, opt, step, extra):
    tmp = os.path.join(run, "last.pt.tmp")
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                "kept_ids": model.kept_ids, "config": model.cfg.path, **extra}, tmp)
    os.replace(tmp, os.path.join(run, "last.pt"))


def main():
    args = parse_args()
    torch.set_num_threads(args.threads)
    numerics.GEMM_BF16 = args.gemm == "bf16"
    os.makedirs(args.run, exist_ok=True)
    cfg = load_config(args.config)
    kept = json.load(open(os.path.join(args.data, "kept_ids.json")))
    torch.manual_seed(args.seed)
    model = V41Model(cfg, kept_ids=kept, seed=args.seed)
    decay, no_decay = [], []
    dspark_only = args.train == "dspark"
    if dspark_only and cfg.num_nextn_predict_layers == 0:
        raise SystemExit("--train dspark: the config has no DSpark stage")
    for name, p in model.named_parameters():
        if dspark_only and not name.startswith("mtp."):
            p.requires_grad_(False)
            continue
        (decay if p.dim() >= 2 and "hc_" not in name else no_decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    backbone_params = [p for n, p in model.named_parameters() if not n.startswith("mtp.")]
    dspark_params = [p for n, p in model.named_parameters() if n.startswith("mtp.")]
    step = restart = 0
    ckpt_path = os.path.join(args.run, "last.pt")
    if os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        step = ck["step"]
        restart = ck.get("restart", 0)
        print(f"resumed {ckpt_path} at step {step}", flush=True)
    elif args.init_from:
        init_from_model(model, args.init_from)
        step = restart = args.init_step
        print(f"started from {args.init_from} at step {step}", flush=True)
    train = Tokens(os.path.join(args.data, "train.bin"))
    if train.reply is not None:
        print("DSpark positions weighted to the replies (train_reply.bin)", flush=True)
    evals = {"val": Tokens(os.path.join(args.data, "val.bin")).fixed_windows(args.eval_windows, args.seq)}
    for name in ("heldout_prose", "heldout_literary"):
        path = os.path.join(args.data, name + ".bin")
        if os.path.exists(path):
            evals[name] = Tokens(path).fixed_windows(args.eval_windows, args.seq)
    log = open(os.path.join(args.run, "log.jsonl"), "a")

    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)

    if args.init_from and step == restart and step > 0:
        # The shipped model's own numbers (its MODEL_CARD.md has them): the import is checked.
        numerics.QUANT = True
        ev = evaluate(model, evals, args)
        rec = {"step": step, "eval": {k: round(v, 4) for k, v in ev.items()}, "init_from": args.init_from}
        print(json.dumps(rec), flush=True)
        log.write(json.dumps(rec) + "\n")
        log.flush()

    started = time.time()
    last_save = time.time()
    tokens_per_step = args.batch * args.seq
    window_t0, window_steps = time.time(), 0
    while step < args.steps and not stop["now"]:
        numerics.QUANT = step >= args.qat_from
        rng = np.random.default_rng([args.seed, step])
        gen = torch.Generator().manual_seed(args.seed * 1000003 + step)
        batch, reply = train.windows(rng, args.batch, args.seq)
        ids, targets = batch[:, :-1], batch[:, 1:]
        for g in opt.param_groups:
            g["lr"] = lr_at(args, step, restart)
        with torch.set_grad_enabled(not dspark_only):
            out = model(ids)
            lm = token_nll(model, out.logits, targets).mean()
        loss = 0.0 if dspark_only else lm
        aux = {k: float(v) for k, v in out.aux.items()}
        if "indexer_kl" in out.aux and not dspark_only:
            loss = loss + args.indexer_weight * out.aux["indexer_kl"]
        ds = {}
        if (step >= args.dspark_from or dspark_only) and cfg.num_nextn_predict_layers > 0:
            kl, conf, acc = dspark_losses(model, out, ids, args, gen,
                                          None if reply is None else reply[:, :-1])
            loss = loss + args.dspark_weight * (kl + conf)
            ds = {"dspark_kl": float(kl), "conf_bce": float(conf), "greedy_accept": [round(float(a), 4) for a in acc]}
        opt.zero_grad(set_to_none=True)
        loss.backward()
        # Clipped apart: the DSpark stage's large early gradients must not scale down the
        # backbone's step (they share no parameters: DSpark reads detached taps, embed and head).
        gnorm = torch.zeros(()) if dspark_only else torch.nn.utils.clip_grad_norm_(backbone_params, args.clip)
        if dspark_params:
            torch.nn.utils.clip_grad_norm_(dspark_params, args.clip)
        opt.step()
        with torch.no_grad():
            update_gate_biases(model, args.bias_rate, "mtp." if dspark_only else "")
        step += 1
        window_steps += 1
        if step % args.log_every == 0:
            dt = time.time() - window_t0
            rec = {"step": step, "lm": round(float(lm), 4), "lr": lr_at(args, step - 1, restart), "gnorm": round(float(gnorm), 3),
                   "tok_s": round(window_steps * tokens_per_step / dt, 1), "quant": numerics.QUANT,
                   "elapsed_min": round((time.time() - started) / 60, 2), **aux, **ds}
            print(json.dumps(rec), flush=True)
            log.write(json.dumps(rec) + "\n")
            log.flush()
            window_t0, window_steps = time.time(), 0
        if step % args.eval_every == 0 or step == args.steps:
            ev = evaluate(model, evals, args)
            rec = {"step": step, "eval": {k: round(v, 4) for k, v in ev.items()}}
            print(json.dumps(rec), flush=True)
            log.write(json.dumps(rec) + "\n")
            log.flush()
        if time.time() - last_save > args.save_every * 60:
            save(args.run, model, opt, step, {"restart": restart})
            last_save = time.time()
        if args.stop_after and time.time() - started > args.stop_after * 60:
            break
    save(args.run, model, opt, step, {"restart": restart})
    print(f"saved at step {step}", flush=True)


if __name__ == "__main__":
    main()
