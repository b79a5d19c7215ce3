"""Small building blocks shared by the core modules (owner: core).

Weights are held dequantized in float32 under their release names; the released numerics are
applied in the forward pass through v41.numerics when numerics.QUANT is on:
  fp8_linear   activation e4m3 QDQ (groups of 32) + weight FP8 32x32-tile QDQ  (FP8 GEMMs)
  fp4_linear   activation e4m3 QDQ (groups of 32) + weight MXFP4 QDQ           (expert GEMMs)
  bf16_weight  a bf16-stored weight (norms, gate, embed, head, ...) rounded to bf16 (STE)
  linear       the GEMM of the quantized linears and the head: bf16 when numerics.GEMM_BF16 is on
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


def linear(x, w):
    """x . w^T, in bf16 with fp32 accumulation when numerics.GEMM_BF16 is on (the result back in
    float32), else in float32."""
    if N.GEMM_BF16:
        return F.linear(x.to(torch.bfloat16), w.to(torch.bfloat16)).to(torch.float32)
    return F.linear(x, w)


def fp8_linear(x, w):
    return rb(linear(N.act_qdq(x), N.w_fp8_qdq(w)))


def fp4_linear(x, w):
    return rb(linear(N.act_qdq(x), N.w_mxfp4_qdq(w)))


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
