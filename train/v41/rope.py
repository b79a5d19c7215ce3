"""Rotary position embedding of DeepSeek-V4.1, as the engine computes it (kernels/cpu/rope.cc).

Frequencies (fp32): f_i = 1 / fp32(theta ** fp32(2i / rope_dim)), i < rope_dim / 2. With YaRN
(compressed layers only, at every context length, no attention / mscale factor):
  corr(r) = rope_dim * ln(orig / (2 pi r)) / (2 ln theta)            (double)
  low = max(floor(corr(beta_fast)), 0), high = min(ceil(corr(beta_slow)), rope_dim - 1)
  ramp_i = clamp((i - low) / max(high - low, 1e-3), 0, 1), smooth = 1 - ramp     (fp32)
  f_i = (f_i / factor) * (1 - smooth) + f_i * smooth
Angle at position p: fp32(p) * f_i in fp32; cos / sin evaluated in double, rounded to fp32.
Rotation on adjacent pairs (x[2i], x[2i+1]) of the LAST rope_dim lanes:
  forward (a c - b s, a s + b c), inverse (a c + b s, b c - a s); products rounded to fp32 first.
"""

import math

import torch


def rope_freqs(rope_dim, theta, yarn=None):
    """rope_dim/2 fp32 frequencies; yarn = (original_seq_len, factor, beta_fast, beta_slow) or None."""
    n = rope_dim // 2
    e = (torch.arange(0, rope_dim, 2, dtype=torch.float32) / float(rope_dim)).double()
    p = torch.pow(torch.tensor(float(theta), dtype=torch.float64), e).float()
    f = torch.tensor(1.0, dtype=torch.float32) / p
    if yarn is not None and yarn[0] > 0:
        orig, factor, beta_fast, beta_slow = yarn

        def corr(rot):
            return rope_dim * math.log(orig / (rot * 2.0 * math.pi)) / (2.0 * math.log(theta))

        low = max(math.floor(corr(beta_fast)), 0)
        high = min(math.ceil(corr(beta_slow)), rope_dim - 1)
        denom = torch.tensor(max(float(high - low), 1e-3), dtype=torch.float32)
        ramp = ((torch.arange(n, dtype=torch.float32) - float(low)) / denom).clamp(0.0, 1.0)
        smooth = 1.0 - ramp
        f = f / torch.tensor(float(factor), dtype=torch.float32) * (1.0 - smooth) + f * smooth
    return f


def layer_freqs(cfg, layer_id):
    """Frequencies of layer `layer_id` (backbone or DSpark stage) of a v41.config.Config."""
    role = cfg.roles[layer_id]
    return rope_freqs(int(cfg.qk_rope_head_dim), role.rope_theta, cfg.yarn if role.yarn else None)


def cos_sin(freqs, positions):
    """cos, sin [*positions.shape, rope_dim/2] fp32 for integer positions (tensor or int)."""
    pos = torch.as_tensor(positions).to(torch.float32)
    angle = pos.unsqueeze(-1) * freqs  # fp32 product, as torch.outer
    a = angle.double()
    return torch.cos(a).float(), torch.sin(a).float()


def apply_rope(x, cos, sin, rope_dim, inverse=False):
    """Rotate the last rope_dim lanes of x [..., D] (cos / sin broadcastable to [..., rope_dim/2]).
    Differentiable; returns a new tensor."""
    d = x.shape[-1]
    pairs = x[..., d - rope_dim:].reshape(*x.shape[:-1], rope_dim // 2, 2)
    a, b = pairs[..., 0], pairs[..., 1]
    if inverse:
        ra = a * cos + b * sin
        rb = b * cos - a * sin
    else:
        ra = a * cos - b * sin
        rb = a * sin + b * cos
    rot = torch.stack((ra, rb), dim=-1).reshape(*x.shape[:-1], rope_dim)
    if rope_dim == d:
        return rot
    return torch.cat((x[..., : d - rope_dim], rot), dim=-1)
