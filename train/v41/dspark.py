"""DSpark draft stages (`mtp.S`) of DeepSeek-V4.1 in a teacher-forced training form.

Engine: src/model/deepseek_v41/dspark.cc (DSparkExtend, DSparkDraft); fixture README "DSpark".

Inference, after the backbone has run position p and its argmax t is the token at p+1:
  main_x[q] = main_norm(main_proj(taps[q]))            for every position q (taps: the mean over hc
                                                       copies of the stream entering each tap layer)
  ring of stage s = FP8QDQ(RoPE_q(kv_norm(wkv(main_x[q]))))  for q = max(0, p-window+1) .. p
  draft rows [t, noise, ..., noise] (dspark_block_size rows) at positions p+1 .. p+block, embedded
  with the backbone's embed, expanded to hc copies, pre = copy 0; each stage is an ordinary ratio-0
  block (mHC, attn_norm, attention, ffn_norm, MoE with the stage's own experts) whose attention
  sees the ring and every draft row of the block (no causal mask inside the block), the draft
  rows' own KV computed from their normalised attention input; RoPE theta = rope_theta, no YaRN.
  After the last stage: hidden = collapse(x, pre) (pre handed on as between backbone blocks),
  logits_j = head(stage norm(hidden_j)) + markov_head.head . markov_head.embed[token_j],
  confidence_j = confidence_head.proj . [hidden_j ; markov_head.embed[token_j]],
  where token_j is the token at position p+1+j (t for j = 0, then the previous draft).

Training form (`dspark_forward`): for every requested position p of every sequence at once, t is
the true token ids[p+1] and token_j the true ids[p+1+j] (teacher forcing). Returns draft logits
[B, P, block, R] (row j predicts the token at p+2+j) and confidence logits [B, P, block]. The taps,
`embed` and `head` are detached: DSpark losses do not move the backbone.
"""

import math

import torch
import torch.nn.functional as F

from . import numerics as N
from . import rope as R
from .common import bf16_weight, emulating_bf16, fp8_linear, linear, rb, rms_norm
from .mhc import collapse, expand, initial_pre


def _q_proj(attn, x, cos, sin, cfg):
    eps = float(cfg.rms_norm_eps)
    heads, hd, rd = int(cfg.num_attention_heads), int(cfg.head_dim), int(cfg.qk_rope_head_dim)
    qr = rms_norm(fp8_linear(x, attn.wq_a.weight), attn.q_norm.weight, eps)
    q = fp8_linear(qr, attn.wq_b.weight).unflatten(-1, (heads, hd))
    return rb(R.apply_rope(q, cos.unsqueeze(-2), sin.unsqueeze(-2), rd))


def _kv_proj(attn, x, cos, sin, cfg):
    eps = float(cfg.rms_norm_eps)
    rd = int(cfg.qk_rope_head_dim)
    kv = rms_norm(fp8_linear(x, attn.wkv.weight), attn.kv_norm.weight, eps)
    return N.kv_fp8_qdq(rb(R.apply_rope(kv, cos, sin, rd)))


def _out_proj(attn, o, cos, sin, cfg):
    """o [..., heads, hd] -> inverse RoPE, grouped wo_a (bf16 in the module tree, FP8 on disk, no
    activation quantization), wo_b (FP8)."""
    rd = int(cfg.qk_rope_head_dim)
    groups, lora = int(cfg.o_groups), int(cfg.o_lora_rank)
    o = rb(R.apply_rope(rb(o), cos.unsqueeze(-2), sin.unsqueeze(-2), rd, inverse=True)).flatten(-2)
    og = o.unflatten(-1, (groups, -1))  # [..., groups, gin]
    wa = N.w_fp8_qdq(attn.wo_a.weight).unflatten(0, (groups, lora))  # [groups, lora, gin]
    u = rb(torch.einsum("...gi,gli->...gl", og, wa)).flatten(-2)
    return fp8_linear(u, attn.wo_b.weight)


SPARSE_ATTN_BLOCK = 64  # the engine kernel's online-softmax block (kernels/cpu/sparse_attn.h)


def _attend(q, k, valid, sink, scale, order=None):
    """q [..., R, H, hd], k [..., S, hd] (K = V), valid [..., S] bool (the same for every row R
    and head H), sink [H] -> [..., R, H, hd]. The sink adds exp(sink - max) to the denominator
    only (a softmax over [scores, sink] whose sink column is dropped).

    With bf16 emulation the engine's kernel is followed: the gathered list (`order` [..., S]: each
    key's index in the engine's list) is processed in blocks of 64 with an online softmax, the
    numerators exp(s - m) rounded to bf16 before they multiply V, the denominator in fp32."""
    s = torch.einsum("...rhd,...sd->...rhs", q, k) * scale
    vmask = valid[..., None, None, :]
    s = s.masked_fill(~vmask, float("-inf"))
    sk = sink.reshape(*([1] * (s.dim() - 2)), -1, 1).expand(*s.shape[:-1], 1)
    if not emulating_bf16():
        p = torch.softmax(torch.cat([s, sk], dim=-1), dim=-1)[..., :-1]
        return torch.einsum("...rhs,...sd->...rhd", p, k)
    chunk = (order // SPARSE_ATTN_BLOCK)[..., None, None, :] if order is not None else None
    n_chunks = int(order.max()) // SPARSE_ATTN_BLOCK + 1 if order is not None else 1
    m = torch.full(s.shape[:-1] + (1,), -1e30)
    den = torch.zeros_like(m)
    o = None
    for c in range(n_chunks):
        sc = s if chunk is None else s.masked_fill(chunk != c, float("-inf"))
        m_new = torch.maximum(m, sc.amax(-1, keepdim=True))
        alpha = torch.exp(m - m_new)
        e = torch.exp(sc - m_new)
        den = den * alpha + e.sum(-1, keepdim=True)
        part = torch.einsum("...rhs,...sd->...rhd", rb(e), k)
        o = part if o is None else o * alpha + part
        m = m_new
    den = den + torch.exp(sk - m)
    return o / den


def dspark_forward(model, out, ids, positions=None):
    cfg = model.cfg
    b, t = ids.shape
    block = int(cfg.dspark_block_size)
    win = int(cfg.sliding_window)
    hc = int(cfg.hc_mult)
    eps = float(cfg.rms_norm_eps)
    hd = int(cfg.head_dim)
    if positions is None:
        positions = torch.arange(max(0, t - 1 - block))
    positions = torch.as_tensor(positions, dtype=torch.long)
    p_n = positions.numel()
    assert int(positions.max()) + block <= t - 1, "draft rows need ids up to p + block"

    stages = model.mtp
    first, last = stages[0], stages[len(stages) - 1]
    taps = out.taps.detach()
    main_x = rms_norm(fp8_linear(taps, first.main_proj.weight), first.main_norm.weight, eps)  # [B,T,dim]

    # Draft rows: [t, noise...] at positions p+1 .. p+block; Markov tokens ids[p+1+j].
    offs = torch.arange(block)
    row_pos = positions.unsqueeze(1) + 1 + offs  # [P, block]
    markov_tok = ids[:, row_pos]  # [B, P, block]
    draft_tok = torch.full_like(markov_tok, int(cfg.dspark_noise_token_id))
    draft_tok[..., 0] = markov_tok[..., 0]
    x = expand(bf16_weight(model.embed.weight.detach()[model.vocab_map[draft_tok]]), hc)  # [B, P, block, hc, dim]
    pre = initial_pre(x.shape[:-2], hc)

    # Ring window of position p: p-win+1 .. p (entries before 0 masked).
    ring_pos = positions.unsqueeze(1) - win + 1 + torch.arange(win)  # [P, win]
    ring_valid = ring_pos >= 0
    ring_idx = ring_pos.clamp(min=0)
    valid = torch.cat([ring_valid, torch.ones(p_n, block, dtype=torch.bool)], dim=1)  # [P, win+block]
    # Each key's index in the engine's gathered list: ring slot (position % window) of the
    # min(window, p+1) ring entries, then the draft rows (bf16 emulation of the kernel's blocks).
    n_ring = torch.clamp(positions + 1, max=win).unsqueeze(1)  # [P, 1]
    order = torch.cat([ring_idx % win, n_ring + offs.unsqueeze(0)], dim=1)  # [P, win+block]
    all_pos = torch.arange(t)

    for si, stage in enumerate(stages):
        li = cfg.n_layers + si
        attn = stage.attn
        freqs = R.layer_freqs(cfg, li)
        c_all, s_all = R.cos_sin(freqs, all_pos)
        ring_kv = _kv_proj(attn, main_x, c_all, s_all, cfg)  # [B, T, hd]
        ring = ring_kv[:, ring_idx]  # [B, P, win, hd]
        c_row, s_row = R.cos_sin(freqs, row_pos)  # [P, block, rd/2]
        sink = attn.attn_sink

        def attn_fn(h, attn=attn, ring=ring, c_row=c_row, s_row=s_row, sink=sink):
            q = _q_proj(attn, h, c_row, s_row, cfg)  # [B, P, block, H, hd]
            kv = _kv_proj(attn, h, c_row, s_row, cfg)  # [B, P, block, hd]
            keys = torch.cat([ring, kv], dim=2)
            o = _attend(q, keys, valid, sink, hd ** -0.5, order)
            return _out_proj(attn, o, c_row, s_row, cfg)

        x, pre = stage(x, pre, attn_fn)

    hidden = collapse(x, pre)  # [B, P, block, dim]
    logits = linear(rms_norm(hidden, last.norm.weight, eps), model.head.weight.detach())
    m_rows = model.vocab_map[markov_tok]
    m_emb = bf16_weight(last.markov_head.embed.weight[m_rows])  # [B, P, block, rank]
    logits = logits + F.linear(m_emb, last.markov_head.head.weight)
    conf = F.linear(torch.cat([hidden, m_emb], dim=-1),
                    bf16_weight(last.confidence_head.proj.weight)).squeeze(-1)
    return logits, conf, hidden
