"""The released numerics as quantize-dequantize (QDQ) steps on float32 tensors.

The engine quantizes at fixed points (fixture README, "Numerics of the reference"): activations to
e4m3 before every FP8/FP4 GEMM, the window KV to e4m3, compressed KV and index vectors to e2m1, and
the weights are stored as FP8 tiles or MXFP4 rows. The trainer applies the same roundings in its
forward pass when QUANT is on, with a straight-through gradient (the rounding is treated as the
identity by backward), so the weights learn to live on the released grids (quantization-aware
training). Every function takes and returns float32 and groups along the last dimension.

Torch 1.13 has no float8 or float4 dtypes, so the grids are computed here: round to nearest, ties to
even (torch.round is half-to-even), saturating.
"""

import torch

# Apply the released roundings in the forward pass (QAT). Off: plain float32 training.
QUANT = True
# Also round activations to bf16 where the engine stores bf16 (parity tests only: slow, and
# training needs no bf16 emulation since fp32 activations stay within the fixture tolerances).
BF16_ACT = False
# Run the quantized GEMMs (FP8 / MXFP4 linears, whose inputs are already on the e4m3 / e2m1 grids
# with power-of-two scales, so exact in bf16) and the bf16 head in bf16 with fp32 accumulation
# (common.linear): oneDNN's bf16 GEMM (AMX or AVX-512 BF16 where the CPU has them) against its fp32
# one. The outputs and the gradients are rounded to bf16. Training only (train.py --bf16-gemm); the
# evaluation and the parity tests keep the float32 GEMMs.
GEMM_BF16 = False

_E4M3_MAX = 448.0
_FP4_MAX = 6.0


def ste(x, q):
    """Value q, gradient of x (straight-through estimator)."""
    return x + (q - x).detach()


def bf16(x):
    return x.to(torch.bfloat16).to(torch.float32)


def _round_mantissa(a, drop):
    """Round non-negative float32 `a` to its top 23-`drop` mantissa bits, ties to even (integer
    arithmetic on the bit pattern; a carry into the exponent is the correct rounding up)."""
    i = a.view(torch.int32)
    lsb = (i >> drop) & 1
    i = (i + ((1 << (drop - 1)) - 1) + lsb) & ~((1 << drop) - 1)
    return i.view(torch.float32)


def e4m3(x):
    """Round to float8_e4m3fn: 3 mantissa bits, bias 7, subnormals below 2^-6 (step 2^-9),
    saturating at 448."""
    a = x.abs().clamp(max=_E4M3_MAX)
    q = torch.where(a < 2.0**-6, torch.round(a * 512.0) * (1.0 / 512.0), _round_mantissa(a, 20))
    return torch.copysign(q.clamp(max=_E4M3_MAX), x)


def fp4(x):
    """Round to e2m1 {0, 0.5, 1, 1.5, 2, 3, 4, 6}, ties to the even code, saturating at 6: one
    mantissa bit at and above 1, the subnormal step 0.5 below (0.25 -> 0, 0.75 -> 1)."""
    a = x.abs().clamp(max=_FP4_MAX)
    q = torch.where(a < 1.0, torch.round(a * 2.0) * 0.5, _round_mantissa(a, 22))
    return torch.copysign(q.clamp(max=_FP4_MAX), x)


def _pow2_ceil(v):
    return torch.exp2(torch.ceil(torch.log2(v)))


def _grouped(x, group):
    n = x.shape[-1]
    assert n % group == 0, f"last dimension {n} is not a multiple of {group}"
    return x.reshape(*x.shape[:-1], n // group, group)


def _act_qdq_raw(x, group=32):
    g = _grouped(x, group)
    amax = g.abs().amax(dim=-1, keepdim=True)
    # 1/448 is an fp32 constant that is multiplied, not divided (as the reference does).
    s = _pow2_ceil(amax.clamp(min=1e-4) * torch.tensor(1.0 / _E4M3_MAX, dtype=torch.float32))
    return (e4m3(g / s) * s).reshape(x.shape)


def act_qdq(x, group=32):
    """Activation e4m3 in groups of `group` with power-of-two scales (before FP8/FP4 GEMMs)."""
    if not QUANT:
        return x
    return ste(x, _act_qdq_raw(x.detach(), group))


def kv_fp8_qdq(x):
    """Window KV after norm and RoPE: the whole latent e4m3 in groups of 32, power-of-two scales."""
    return act_qdq(x, 32)


def _fp4_groups_qdq(x, group, scale_of_amax):
    """e2m1 QDQ in groups of `group` with scale_of_amax(amax) per group, straight-through."""
    if not QUANT:
        return x
    g = _grouped(x.detach(), group)
    s = scale_of_amax(g.abs().amax(dim=-1, keepdim=True))
    return ste(x, (fp4(g / s) * s).reshape(x.shape))


def ckv_fp4_qdq(x):
    """Compressed KV: e2m1 in groups of 16 with an e4m3 scale e4m3(max(amax, 6*2^-9) / 6)."""
    return _fp4_groups_qdq(x, 16, lambda amax: e4m3(amax.clamp(min=_FP4_MAX * 2.0**-9) / _FP4_MAX))


def index_fp4_qdq(x):
    """Index q and k: e2m1 in groups of 32, scale 2^ceil(log2(max(amax, 6*2^-126) * (1/6)))."""
    return _fp4_groups_qdq(
        x, 32, lambda amax: _pow2_ceil(amax.clamp(min=_FP4_MAX * 2.0**-126) * torch.tensor(1.0 / _FP4_MAX)))


def fp8_tile_scales(w):
    """Power-of-two scale per 32x32 tile of a 2-D weight: 2^ceil(log2(amax / 448)); [ceil(out/32), in/32]."""
    out, inp = w.shape
    rows = (out + 31) // 32
    pad = rows * 32 - out
    wp = torch.nn.functional.pad(w.abs(), (0, 0, 0, pad)) if pad else w.abs()
    amax = wp.reshape(rows, 32, inp // 32, 32).amax(dim=(1, 3))
    return _pow2_ceil(amax.clamp(min=2.0**-120) / _E4M3_MAX)


def _w_fp8_qdq_raw(w):
    s = fp8_tile_scales(w)
    full = s.repeat_interleave(32, 0)[: w.shape[0]].repeat_interleave(32, 1)
    return e4m3(w / full) * full


def mxfp4_scales(w):
    """Power-of-two scale per 32 inputs of each row: 2^ceil(log2(amax / 6)); [out, in/32]."""
    g = _grouped(w.abs(), 32)
    return _pow2_ceil(g.amax(dim=-1).clamp(min=2.0**-120) / _FP4_MAX)


def _w_mxfp4_qdq_raw(w):
    s = mxfp4_scales(w).unsqueeze(-1)
    return (fp4(_grouped(w, 32) / s) * s).reshape(w.shape)


def w_fp8_qdq(w):
    """A dense weight as the released FP8 (e4m3, ue8m0 scale per 32x32 tile)."""
    if not QUANT:
        return w
    return ste(w, _w_fp8_qdq_raw(w.detach()))


def w_mxfp4_qdq(w):
    """An expert weight as the released MXFP4 (e2m1, ue8m0 scale per 32 inputs of a row).
    Works on [out, in] or stacked [experts, out, in]."""
    if not QUANT:
        return w
    wd = w.detach()
    if wd.dim() == 3:
        q = torch.stack([_w_mxfp4_qdq_raw(m) for m in wd])
    else:
        q = _w_mxfp4_qdq_raw(wd)
    return ste(w, q)
