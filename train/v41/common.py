"""Small building blocks shared by the core modules (owner: core).

Weights are held dequantized in float32 under their release names; the released numerics are
applied in the forward pass through v41.numerics when numerics.QUANT is on:
  fp8_linear   activation e4m3 QDQ (groups of 32) + weight FP8 32x32-tile QDQ  (FP8 GEMMs)
  fp4_linear   activation e4m3 QDQ (groups of 32) + weight MXFP4 QDQ           (expert GEMMs)
  bf16_weight  a bf16-stored weight (norms, gate, embed, head, ...) rounded to bf16 (STE)
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import numerics as N


def emulating_bf16():
    """Round activations to bf16 where the engine holds bf16 tensors (parity tests only; the same
    switch attention.py reads)."""
    return bool(getattr(N, "BF16_ACT", False))


def rb(x):
    """bf16 rounding of an activation (straight-through) when emulating, else the identity."""
    if not emulating_bf16():
        return x
    return N.ste(x, N.bf16(x.detach()))


def bf16_weight(w):
    if not N.QUANT:
        return w
    return N.ste(w, N.bf16(w.detach()))


def fp8_linear(x, w):
    return rb(F.linear(N.act_qdq(x), N.w_fp8_qdq(w)))


def fp4_linear(x, w):
    return rb(F.linear(N.act_qdq(x), N.w_mxfp4_qdq(w)))


def bf16_linear(x, w):
    """A plain GEMM with a bf16-stored weight (gate, compressor, ...): no activation quantization."""
    return F.linear(x, bf16_weight(w))


def rms_norm(x, w, eps):
    return rb(x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * bf16_weight(w))


class Weight(nn.Module):
    """A module holding one parameter `weight` (so names read `<module>.weight`)."""

    def __init__(self, *shape, std=None, fill=None):
        super().__init__()
        w = torch.empty(*shape)
        if fill is not None:
            w.fill_(fill)
        else:
            if std is None:
                std = 1.0 / math.sqrt(shape[-1])
            w.normal_(0.0, std)
        self.weight = nn.Parameter(w)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)
