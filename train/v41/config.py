"""DeepSeek-V4.1 configuration for the trainer: the HF-style config.json and the per-layer roles.

`load_config(path)` reads a `config.json` (composite `text_config` + top-level
`quantization_config`, or a flat one) and returns a `Config` whose attributes are every
`text_config` key under its HF spelling, plus:

  cfg.quantization_config   the top-level dict (None when absent)
  cfg.n_layers              backbone blocks (num_hidden_layers)
  cfg.n_stages              DSpark stages built (num_nextn_predict_layers, 0 when
                            dspark_block_size is 0 or absent: the official code then builds none)
  cfg.candidate_source      candidate_source_layer_id, -1 when null / absent / negative
  cfg.yarn                  (original_seq_len, factor, beta_fast, beta_slow) or None
  cfg.roles[i]              LayerRole for i in 0 .. n_layers + n_stages - 1 (stages after the
                            backbone, as in compress_ratios)

The roles follow the engine's derivation (src/model/deepseek_v41/layer_descriptor.cc): one
shared slot per kind of state, written by the layers in order, so a layer reads the last writer
at or before it. Index keys use owner semantics (a layer scores its KV source's keys); on a whole
prompt processed from position 0 this equals the official slot behaviour.
"""

import json
from dataclasses import dataclass


@dataclass
class LayerRole:
    index: int
    name: str                    # "layers.N" or "mtp.S"
    is_mtp: bool
    mtp_stage: int               # S for mtp.S, else -1
    ratio: int                   # compress ratio, 0 = sliding window only
    window: int                  # sliding window length
    rope_theta: float            # ratio 0: rope_theta; ratio > 0: compress_rope_theta
    yarn: bool                   # ratio > 0 and rope_scaling present
    kv_source: int = -1          # layer whose compressed KV this layer reads (-1 at ratio 0)
    owns_compressor: bool = False  # KV source: compressor.* + indexer.wk / indexer.k_norm
    compressor_pools: bool = False  # ratio > 1: gated pooling (compressor.wgate)
    has_indexer: bool = False    # index source: indexer.wq_b + indexer.weights_proj
    index_key_layer: int = -1    # whose index keys its indexer scores (has_indexer only)
    index_source: int = -1       # whose top-k selection this layer attends with
    candidate: str = "none"      # "none" | "source" | "consumer"
    candidate_source: int = -1   # for a consumer: the layer whose candidate mask it applies
    engram_index: int = -1       # position in engram_layer_ids, -1 = no Engram
    dspark_tap_slot: int = -1    # slot of this block's input in DSpark's main hidden, -1 = none
    has_main_proj: bool = False  # mtp.0
    has_draft_head: bool = False  # last stage
    n_routed_experts: int = 0
    n_activated_experts: int = 0
    n_shared_experts: int = 0

    @property
    def has_compressed_kv(self):
        return self.ratio > 0

    @property
    def has_engram(self):
        return self.engram_index >= 0

    @property
    def is_dspark_tap(self):
        return self.dspark_tap_slot >= 0


class Config:
    """Attribute bag: every text_config key (HF spelling) plus the derived fields above."""

    def __init__(self, text, top=None):
        top = top or {}
        for k, v in text.items():
            setattr(self, k, v)
        self.quantization_config = top.get("quantization_config", text.get("quantization_config"))
        self.n_layers = int(text["num_hidden_layers"])
        n_mtp = int(text.get("num_nextn_predict_layers", 0) or 0)
        block = int(text.get("dspark_block_size", 0) or 0) if n_mtp > 0 else 0
        self.n_stages = n_mtp if (n_mtp > 0 and block > 0) else 0
        cand = text.get("candidate_source_layer_id")
        self.candidate_source = -1 if cand is None or int(cand) < 0 else int(cand)
        rs = text.get("rope_scaling")
        if rs:
            self.yarn = (int(rs["original_max_position_embeddings"]), float(rs["factor"]),
                         float(rs["beta_fast"]), float(rs["beta_slow"]))
            if self.yarn[0] <= 0:
                self.yarn = None
        else:
            self.yarn = None
        self.roles = build_roles(self)

    def role(self, i):
        return self.roles[i]

    def __repr__(self):
        return f"Config(n_layers={self.n_layers}, n_stages={self.n_stages}, dim={self.hidden_size})"


def _last_at_or_before(ids, layer):
    best = -1
    for i in ids:
        if best < i <= layer:
            best = i
    return best


def _pos(ids, layer):
    return list(ids).index(layer) if layer in ids else -1


def build_roles(cfg):
    n_layers, n_stages = cfg.n_layers, cfg.n_stages
    ratios = list(cfg.compress_ratios)
    assert len(ratios) >= n_layers + n_stages, "compress_ratios shorter than layers + stages"
    kv_src = list(cfg.kv_source_layer_ids)
    idx_src = list(cfg.index_source_layer_ids)
    cand = cfg.candidate_source
    taps = sorted(getattr(cfg, "dspark_target_layer_ids", []) or [])
    engram = list(getattr(cfg, "engram_layer_ids", []) or [])
    routed = int(cfg.n_routed_experts)
    active = int(cfg.num_experts_per_tok)
    d_routed = int(getattr(cfg, "dspark_n_routed_experts", 0) or 0) or routed
    d_active = int(getattr(cfg, "dspark_num_experts_per_tok", 0) or 0) or active
    roles = []
    for i in range(n_layers + n_stages):
        mtp = i >= n_layers
        r = int(ratios[i])
        if mtp:
            assert r == 0, f"DSpark stage {i - n_layers} has compress ratio {r}"
        role = LayerRole(
            index=i, name=f"mtp.{i - n_layers}" if mtp else f"layers.{i}", is_mtp=mtp,
            mtp_stage=i - n_layers if mtp else -1, ratio=r, window=int(cfg.sliding_window),
            rope_theta=float(cfg.compress_rope_theta if r > 0 else cfg.rope_theta),
            yarn=r > 0 and cfg.yarn is not None)
        if r > 0:
            role.kv_source = _last_at_or_before(kv_src, i)
            assert role.kv_source >= 0, f"layer {i}: no KV source at or before it"
            assert int(ratios[role.kv_source]) == r, f"layer {i}: KV source ratio differs"
            role.owns_compressor = role.kv_source == i
            role.compressor_pools = role.owns_compressor and r > 1
            role.has_indexer = i in idx_src
            role.index_source = _last_at_or_before(idx_src, i)
            assert role.index_source >= role.kv_source, f"layer {i}: no index source"
            role.index_key_layer = role.kv_source if role.has_indexer else -1
            if role.has_indexer and cand >= 0:
                if i == cand:
                    role.candidate = "source"
                elif i > cand:
                    role.candidate = "consumer"
                    role.candidate_source = cand
        if not mtp:
            role.engram_index = _pos(engram, i)
            if n_stages > 0:
                role.dspark_tap_slot = _pos(taps, i)
        else:
            role.has_main_proj = role.mtp_stage == 0
            role.has_draft_head = role.mtp_stage == n_stages - 1
        role.n_routed_experts = d_routed if mtp else routed
        role.n_activated_experts = d_active if mtp else active
        role.n_shared_experts = int(cfg.n_shared_experts)
        roles.append(role)
    return roles


def load_config(path):
    """Read a config.json (a file, or a directory holding one)."""
    import os
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    with open(path) as f:
        j = json.load(f)
    text = j.get("text_config", j)
    cfg = Config(text, j)
    cfg.path = os.path.abspath(path)
    return cfg


def describe_roles(cfg):
    """Markdown table in the fixture README's vocabulary (for eyeballing and tests)."""
    dash = "\u2014"
    rows = ["| layer | name | ratio | RoPE | compressed KV + index keys | top-k indices | candidates "
            "| Engram | DSpark tap | experts |", "|---|---|---|---|---|---|---|---|---|---|"]
    for d in cfg.roles:
        theta = d.rope_theta
        theta_s = str(int(theta)) if float(theta).is_integer() else repr(theta)
        rope = "\u03b8=" + theta_s + (" + YaRN" if d.yarn else "")
        kv = topk = cand = dash
        if d.ratio > 0:
            kv = "own compressor" if d.owns_compressor else f"reads layer {d.kv_source}"
            if not d.has_indexer:
                topk = f"reuses layer {d.index_source}'s"
            elif d.index_key_layer == d.index:
                topk = "own indexer, own keys"
            else:
                topk = f"own indexer on layer {d.index_key_layer}'s keys"
            if d.candidate == "source":
                cand = "source"
            elif d.candidate == "consumer":
                cand = f"masks with layer {d.candidate_source}'s"
        rows.append(f"| {d.index} | `{d.name}` | {d.ratio} | {rope} | {kv} | {topk} | {cand} | "
                    f"{'yes' if d.has_engram else dash} | {'yes' if d.is_dspark_tap else dash} | "
                    f"{d.n_routed_experts} routed / top-{d.n_activated_experts} + "
                    f"{d.n_shared_experts} shared |")
    return "\n".join(rows)
