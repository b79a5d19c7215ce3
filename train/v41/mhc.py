"""Manifold-constrained hyper-connections (mHC) of DeepSeek-V4.1, training form.

The residual stream of every row is hc copies of the hidden vector, x [..., hc, dim]. A block has
two mixing sites (attention, ffn); each site owns `hc_<site>_fn` [(2+hc)*hc, hc*dim],
`hc_<site>_base` [(2+hc)*hc] and `hc_<site>_scale` [3] (release names, float32 on disk).
Engine: src/model/deepseek_v41/mhc.cc, kernels/cpu/hc_sinkhorn.cc, block.cc.

  mixes  = (flat(x) . fn^T) * rsqrt(mean(flat(x)^2) + norm_eps)        one RMS over all copies
  pre_c  = sigmoid(mixes[c] * scale[0] + base[c]) + hc_eps              c < hc
  post_c = 2 * sigmoid(mixes[hc + c] * scale[1] + base[hc + c])
  comb   = mixes[2hc:] * scale[2] + base[2hc:] as [hc, hc] (row j, column k);
           row softmax + hc_eps, column normalisation (sum + hc_eps), then iters-1 more rounds of
           row then column normalisation (so it ends on columns)
  collapse(x, pre)          = sum_c pre_c * x_c
  post(y, x, post, comb)_k  = post_k * y + sum_j comb[j][k] * x_j

Hand-on rule (block.cc RunBlock): a block's attention input is collapsed with the pre handed on by
the previous block (block 0 / stage 0: copy 0 alone, pre = [1, 0, ...]), its ffn input with the
pre computed at its own attention site, and it hands on the pre computed at its ffn site; the final
hidden state is collapsed with the last block's handed-on pre.
"""

import torch
import torch.nn.functional as F

from .common import rb


def hc_mixes(x, fn, scale, base, hc, iters, hc_eps, norm_eps):
    """x [..., hc, dim] -> pre [..., hc], post [..., hc], comb [..., hc, hc] (all fp32)."""
    flat = x.flatten(-2)
    mixes = F.linear(flat, fn)
    rs = torch.rsqrt(flat.pow(2).mean(-1, keepdim=True) + norm_eps)
    m = mixes * rs
    pre = torch.sigmoid(m[..., :hc] * scale[0] + base[:hc]) + hc_eps
    post = 2.0 * torch.sigmoid(m[..., hc:2 * hc] * scale[1] + base[hc:2 * hc])
    c = (m[..., 2 * hc:] * scale[2] + base[2 * hc:]).unflatten(-1, (hc, hc))
    c = torch.softmax(c, dim=-1) + hc_eps
    c = c / (c.sum(-2, keepdim=True) + hc_eps)
    for _ in range(iters - 1):
        c = c / (c.sum(-1, keepdim=True) + hc_eps)
        c = c / (c.sum(-2, keepdim=True) + hc_eps)
    return pre, post, c


def collapse(x, pre):
    """x [..., hc, dim], pre [..., hc] -> [..., dim]."""
    # Measured at [8, 256, 4, 256] on 2 threads (forward + backward), Intel host (torch 1.13's
    # CPU bmm runs a GEMM call per row at these sizes): a broadcast sum 2.6-4.4 ms, matmul 12-20 ms.
    return rb((pre.unsqueeze(-1) * x).sum(-2))


def post_mix(y, x, post, comb):
    """y [..., dim] (the sublayer output), x [..., hc, dim] -> new stream [..., hc, dim]."""
    # einsum folds the per-row 4 x 4 products into large GEMMs: 14 ms forward + backward at
    # [8, 256, 4, 256] against 50+ ms for matmul of the transposed comb or a broadcast sum.
    mixed = torch.einsum("...jk,...jd->...kd", comb, x)  # [..., k, dim] = sum_j comb[j][k] x_j
    return rb(torch.addcmul(mixed, post.unsqueeze(-1), y.unsqueeze(-2)))


def expand(h, hc):
    """Embedding [..., dim] -> stream [..., hc, dim] (every copy the same)."""
    return h.unsqueeze(-2).expand(*h.shape[:-1], hc, h.shape[-1])


def initial_pre(shape, hc, device=None):
    """The pre-mix entering block 0 / stage 0: copy 0 alone."""
    pre = torch.zeros(*shape, hc, device=device)
    pre[..., 0] = 1.0
    return pre
