"""Mixture of experts of DeepSeek-V4.1 (engine: src/model/deepseek_v41/moe.cc, routed_experts.cc).

  gate   logits = x . gate.weight^T (fp32, no activation quantization); scores = sqrt(softplus(
         logits / gate_temp)) (torch softplus, threshold 20)
  route  top-k of scores + ffn.gate.bias (the bias only steers the choice; it is a buffer moved by
         the trainer from the loads, not by gradients); weights = the chosen raw scores / (their
         sum + 1e-20) (norm_topk_prob, k > 1), times routed_scaling_factor
  expert xq = e4m3 QDQ(x) (once, shared by every expert); g = xq.w1^T, u = xq.w3^T (MXFP4);
         h = weight * silu(min(g, limit)) * clamp(u, -limit, limit); y = QDQ(h).w2^T
  shared the same SwiGLU on FP8 weights, without a routing weight
  out    sum of the chosen experts' y plus the shared expert's

Expert compute is batched: the (token, choice) pairs are sorted by expert and each expert runs one
GEMM over its rows. The per-expert token counts of the last forward are kept in `self.load`.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import Weight, bf16_linear, fp4_linear, fp8_linear, rb


def swiglu(g, u, limit):
    if limit > 0:
        u = u.clamp(-limit, limit)
        g = g.clamp(max=limit)
    return F.silu(g) * u


class Gate(nn.Module):
    def __init__(self, n_experts, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_experts, dim) / math.sqrt(dim))
        self.register_buffer("bias", torch.zeros(n_experts))


class Expert(nn.Module):
    def __init__(self, dim, inter, out_scale=1.0):
        super().__init__()
        self.w1 = Weight(inter, dim)
        self.w2 = Weight(dim, inter, std=out_scale / math.sqrt(inter))
        self.w3 = Weight(inter, dim)


class MoE(nn.Module):
    def __init__(self, cfg, n_experts, top_k, n_shared, out_scale=1.0):
        super().__init__()
        dim, inter = int(cfg.hidden_size), int(cfg.moe_intermediate_size)
        self.n_experts, self.top_k = int(n_experts), int(top_k)
        self.limit = float(getattr(cfg, "swiglu_limit", 0.0) or 0.0)
        self.temp = float(getattr(cfg, "gate_temp", 1.0) or 1.0)
        self.route_scale = float(getattr(cfg, "routed_scaling_factor", 1.0))
        self.norm_topk = bool(getattr(cfg, "norm_topk_prob", True))
        self.score_func = getattr(cfg, "scoring_func", "sqrtsoftplus")
        self.gate = Gate(self.n_experts, dim)
        self.experts = nn.ModuleList(Expert(dim, inter, out_scale) for _ in range(self.n_experts))
        self.shared_experts = Expert(dim, inter * n_shared, out_scale) if n_shared > 0 else None
        self.load = torch.zeros(self.n_experts, dtype=torch.long)

    def scores(self, x):
        logits = bf16_linear(x, self.gate.weight) / self.temp
        if self.score_func == "sqrtsoftplus":
            return torch.sqrt(F.softplus(logits))
        if self.score_func == "sigmoid":
            return torch.sigmoid(logits)
        if self.score_func == "softmax":
            return torch.softmax(logits, dim=-1)
        raise ValueError(f"scoring_func {self.score_func}")

    def route(self, x):
        """x [N, dim] -> chosen experts [N, k] (long), routing weights [N, k] (differentiable)."""
        s = self.scores(x)
        sel = torch.topk(s.detach() + self.gate.bias, self.top_k, dim=-1).indices
        w = s.gather(-1, sel)
        if self.norm_topk and self.top_k > 1:
            w = w / (w.sum(-1, keepdim=True) + 1e-20)
        return sel, w * self.route_scale

    def forward(self, x):
        shape = x.shape
        x = x.reshape(-1, shape[-1])
        n = x.shape[0]
        sel, w = self.route(x)
        xq_src = x  # fp4/fp8_linear quantize the activation; quantizing once per expert is the same
        flat_e = sel.reshape(-1)
        order = torch.argsort(flat_e, stable=True)
        counts = torch.bincount(flat_e, minlength=self.n_experts)
        self.load = counts.detach().cpu()
        token = order // self.top_k
        pair_w = w.reshape(-1)[order]
        out = torch.zeros_like(x)
        start = 0
        for e, c in enumerate(counts.tolist()):
            if c == 0:
                continue
            rows = token[start:start + c]
            we = pair_w[start:start + c].unsqueeze(-1)
            start += c
            ex = self.experts[e]
            xe = xq_src.index_select(0, rows)
            h = rb(we * swiglu(fp4_linear(xe, ex.w1.weight), fp4_linear(xe, ex.w3.weight), self.limit))
            out = out.index_add(0, rows, fp4_linear(h, ex.w2.weight))
        if self.shared_experts is not None:
            se = self.shared_experts
            h = rb(swiglu(fp8_linear(x, se.w1.weight), fp8_linear(x, se.w3.weight), self.limit))
            out = out + fp8_linear(h, se.w2.weight)
        return rb(out).reshape(shape)
