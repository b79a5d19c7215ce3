"""Attention of one DeepSeek-V4.1 layer in training form (whole sequences from position 0).

Mirrors the engine (src/model/deepseek_v41/attention.cc, compressor.cc, indexer.cc and the CPU
kernels) step by step; see the fixture README "Numerics of the reference":

  qr  = q_norm(wq_a x)                               FP8 GEMM (act e4m3/32), bf16 out, RMSNorm
  q   = RoPE(wq_b qr) per head                       FP8 GEMM; RoPE at the row's position
  kv  = FP8QDQ(RoPE(kv_norm(wkv x)))                 one K=V latent, whole latent QDQ'd
  compressed (ratio r > 0, entries j = 0 .. T//r - 1, entry j at position j r):
    latent_j = norm(wkv x_j)                         r = 1 (bf16 GEMM)
    latent_j = norm(bf16(sum_t softmax_t(wgate x) * (wkv x)))  r > 1, fp32, per channel, group j
    ckv_j  = FP4QDQ_e4m3/16(RoPE(latent_j, j r))
    key_j  = FP4QDQ_pow2/32(RoPE(k_norm(indexer.wk latent_j), j r))          (KV sources)
  indexer (index sources), entry j visible to row i iff j < (i + 1) // r:
    q_I = FP4QDQ_pow2/32(RoPE(indexer.wq_b qr)); w = bf16(weights_proj x) * Di^-1/2 * Hi^-1/2
    score = sum_h bf16(relu(bf16(q_I,h . key_j)) * w_h)                        (bf16 values)
    candidate source: block max over candidate_block_size entries, the row's newest block
      pinned, top candidate_topk_blocks finite blocks -> mask (published); consumers set the
      entries outside the source's mask to -inf.
    top-k: min(index_topk, visible) entries by (score desc, index asc).  Layers without an
      indexer reuse the selection of the last index source at or before them.
  sparse attention: list = window positions max(0, i-win+1) .. i  ++  selected entries;
    s = (q . kv) * head_dim^-1/2; o = sum_j bf16(exp(s_j - m)) kv_j / (sum_j exp(s_j - m)
    + exp(sink_h - m)); the sink is in the denominator only.
  o = bf16(o); inverse RoPE of the output's rotary lanes at the row's position;
  u_g = wo_a_g o_g (block diagonal, bf16 weights, no act quant); out = wo_b u (FP8 GEMM).

Quantization points go through v41.numerics (QUANT switch, straight-through gradients). The bf16
roundings of the engine's activations are emulated only when numerics.BF16_ACT
is set, for parity tests; training runs the rest in fp32.

The indexer gets no gradient through top-k; when grad is enabled, every index source adds
KL(target || softmax(index scores over visible entries)) to shared["aux"]["indexer_kl"], where the
target is the (detached) probability mass the layer's attention would give each visible
compressed entry if it could see all of them (per head, window and sink included), summed over
heads and normalised (DeepSeek-V3.2's indexer warm-up objective). The indexer's inputs (x, qr,
the latent behind the keys) are detached for that loss, so it trains only indexer.* weights.

`shared` (one dict per forward, passed to the layers in order) holds, by layer id:
  shared["ckv"][src]   compressed KV [B, Nc, head_dim] of a KV source
  shared["ikey"][src]  index keys [B, Nc, index_head_dim] of a KV source
  shared["sel"][li]    selection mask [B, T, Nc] (bool) of an index source
  shared["topk"][li]   selected entry ids [B, T, min(index_topk, Nc)], ascending, -1 = none
  shared["cand"]       candidate mask [B, T, Nc] of the candidate source
  shared["aux"]        {"indexer_kl": scalar, ...}
Missing sub-dicts are created here, so `shared = {}` is enough.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import numerics as nx
from .common import bf16_weight, emulating_bf16, linear, rb
from .rope import apply_rope, cos_sin, layer_freqs

_NEG_INF = float("-inf")


def rms_norm(x, weight, eps):
    """w * (x * rsqrt(mean(x^2) + eps)) in fp32, rounded to bf16 when emulating."""
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return rb(bf16_weight(weight) * (x * r))


class Linear(nn.Module):
    """y = x W^T with the release's storage of W.
    kind "fp8": FP8 weight and e4m3 activation quantization (the engine's FP8 GEMM);
    "fp8w": FP8 weight, activation used as is (wo_a); "bf16": BF16 weight, plain GEMM."""

    def __init__(self, out_features, in_features, kind):
        super().__init__()
        self.kind = kind
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        nn.init.normal_(self.weight, std=in_features ** -0.5)

    def qweight(self):
        if self.kind in ("fp8", "fp8w"):
            return nx.w_fp8_qdq(self.weight)
        return bf16_weight(self.weight)

    def forward(self, x, xq=None):
        """xq: act_qdq(x) when the caller already has it (one quantization shared by GEMMs)."""
        if self.kind == "fp8":
            return linear(nx.act_qdq(x) if xq is None else xq, self.qweight())
        return F.linear(x, self.qweight())


class Norm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


class Compressor(nn.Module):
    """Pre-RoPE latents of the compressed entries of a KV source: [B, T // ratio, head_dim]."""

    def __init__(self, cfg, ratio):
        super().__init__()
        dim, hd = int(cfg.hidden_size), int(cfg.head_dim)
        self.ratio = ratio
        self.wkv = Linear(hd, dim, "bf16")
        if ratio > 1:
            self.wgate = Linear(hd, dim, "bf16")
        self.norm = Norm(hd, float(cfg.rms_norm_eps))

    def forward(self, x):
        B, T, _ = x.shape
        r = self.ratio
        nc = T // r
        if r == 1:
            return self.norm(rb(self.wkv(x)))
        xs = x[:, : nc * r]  # a trailing partial group waits (never visible)
        kv = self.wkv(xs).view(B, nc, r, -1)  # fp32, no rounding (fp32 module)
        z = self.wgate(xs).view(B, nc, r, -1)
        pooled = (kv * torch.softmax(z, dim=2)).sum(dim=2)
        return self.norm(rb(pooled))


class Indexer(nn.Module):
    """indexer.* of a layer: wq_b + weights_proj on index sources, wk + k_norm on KV sources."""

    def __init__(self, cfg, role, dense_kind):
        super().__init__()
        hi, di = int(cfg.index_n_heads), int(cfg.index_head_dim)
        if role.has_indexer:
            self.wq_b = Linear(hi * di, int(cfg.q_lora_rank), dense_kind)
            self.weights_proj = Linear(hi, int(cfg.hidden_size), "bf16")
        if role.owns_compressor:
            self.wk = Linear(di, int(cfg.head_dim), "bf16")
            self.k_norm = Norm(di, float(cfg.rms_norm_eps))


class Attention(nn.Module):
    def __init__(self, cfg, layer_id):
        super().__init__()
        self.cfg = cfg
        self.layer_id = layer_id
        self.role = role = cfg.roles[layer_id]
        dim, hd, H = int(cfg.hidden_size), int(cfg.head_dim), int(cfg.num_attention_heads)
        ql = int(cfg.q_lora_rank)
        G, lora = int(cfg.o_groups), int(cfg.o_lora_rank)
        eps = float(cfg.rms_norm_eps)
        dense = "fp8" if cfg.quantization_config else "bf16"
        self.dim, self.hd, self.H, self.G, self.lora = dim, hd, H, G, lora
        self.rd = int(cfg.qk_rope_head_dim)
        self.window = role.window
        self.scale = float(hd ** -0.5)
        self.wq_a = Linear(ql, dim, dense)
        self.q_norm = Norm(ql, eps)
        self.wq_b = Linear(H * hd, ql, dense)
        self.wkv = Linear(hd, dim, dense)
        self.kv_norm = Norm(hd, eps)
        self.wo_a = Linear(G * lora, H * hd // G, "fp8w" if dense == "fp8" else "bf16")
        self.wo_b = Linear(dim, G * lora, dense)
        with torch.no_grad():  # output projection scaled down for training from scratch
            self.wo_b.weight.mul_(1.0 / math.sqrt(2.0 * cfg.n_layers))
        self.attn_sink = nn.Parameter(torch.zeros(H))
        if role.owns_compressor:
            self.compressor = Compressor(cfg, role.ratio)
        if role.has_indexer or role.owns_compressor:
            self.indexer = Indexer(cfg, role, dense)
        self.register_buffer("freqs", layer_freqs(cfg, layer_id), persistent=False)
        self.aux_loss = True

    # ---------------------------------------------------------------- pieces
    def _cs(self, positions):
        return cos_sin(self.freqs, positions)

    def _kv(self, x, c, s, xq=None):
        """Window KV latent: FP8QDQ(RoPE(kv_norm(wkv x))); c / s broadcast to x's rows."""
        kv = self.kv_norm(rb(self.wkv(x, xq)))
        kv = rb(apply_rope(kv, c, s, self.rd))
        return nx.kv_fp8_qdq(kv)

    def _q(self, x, c, s, xq=None):
        """(qr, q) with q [..., H, hd] rotated; c / s shaped like x's rows (+ rope_dim/2)."""
        qr = self.q_norm(rb(self.wq_a(x, xq)))
        q = rb(self.wq_b(qr)).view(*x.shape[:-1], self.H, self.hd)
        q = rb(apply_rope(q, c.unsqueeze(-2), s.unsqueeze(-2), self.rd))
        return qr, q

    def _out(self, o, c, s):
        """o [..., H, hd] (bf16) -> inverse RoPE -> grouped wo_a -> wo_b: [..., dim]."""
        o = rb(apply_rope(o, c.unsqueeze(-2), s.unsqueeze(-2), self.rd, inverse=True))
        lead = o.shape[:-2]
        og = o.reshape(*lead, self.G, self.H * self.hd // self.G)
        wa = self.wo_a.qweight().view(self.G, self.lora, -1)
        u = rb(torch.einsum("...gi,gri->...gr", og, wa)).reshape(*lead, self.G * self.lora)
        return rb(self.wo_b(u))

    def _sink(self, ndim, head_axis):
        shape = [1] * ndim
        shape[head_axis] = self.H
        return self.attn_sink.view(shape)

    def _attend(self, scores, allowed, values_fn, head_axis):
        """Softmax with the per-head sink in the denominator only.
        scores [..., S] fp32 (already scaled) with the heads on `head_axis`, allowed a
        broadcastable bool; values_fn(p) -> the unnormalised P.V for probabilities p shaped like
        scores. Returns (bf16-rounded o, e, den)."""
        sc = scores.masked_fill(~allowed, _NEG_INF)
        m = sc.amax(dim=-1, keepdim=True).detach()
        e = torch.exp(sc - m)
        sink = self._sink(sc.dim(), head_axis)
        den = e.sum(dim=-1, keepdim=True) + torch.exp(sink - m)
        return rb(values_fn(rb(e)) / den), e, den

    # ---------------------------------------------------------------- compressed branch
    def _publish_compressed(self, x, shared):
        """KV source: compressed KV and index keys into `shared`."""
        role = self.role
        latent = self.compressor(x)  # [B, Nc, hd]
        nc = latent.shape[1]
        c, s = self._cs(torch.arange(nc) * role.ratio)
        shared["ckv"][self.layer_id] = nx.ckv_fp4_qdq(rb(apply_rope(latent, c, s, self.rd)))
        ix = self.indexer
        k = ix.k_norm(rb(ix.wk(latent.detach())))
        k = rb(apply_rope(k, c, s, self.rd))
        shared["ikey"][self.layer_id] = nx.index_fp4_qdq(k)

    def _index_scores(self, x, qr, keys, c, s):
        """score [B, T, Nc] (bf16 values when emulating), differentiable w.r.t. indexer.*."""
        ix = self.indexer
        hi, di = int(self.cfg.index_n_heads), int(self.cfg.index_head_dim)
        B, T, _ = x.shape
        qi = rb(ix.wq_b(qr.detach())).view(B, T, hi, di)
        qi = rb(apply_rope(qi, c.unsqueeze(-2), s.unsqueeze(-2), self.rd))
        qi = nx.index_fp4_qdq(qi.reshape(B, T, hi * di)).view(B, T, hi, di)
        w = rb(ix.weights_proj(x.detach()))
        w = rb(w * float(di ** -0.5 * hi ** -0.5))
        dots = rb(torch.einsum("bthd,bsd->bths", qi, keys))
        prod = rb(torch.relu(dots) * w.unsqueeze(-1))
        return rb(prod.sum(dim=2))

    def _select(self, score, visible, vis, shared):
        """Top-k selection of an index source (detached). Returns (sel mask, entry ids)."""
        cfg, role = self.cfg, self.role
        B, T, nc = score.shape
        s = score.detach().masked_fill(~visible, _NEG_INF)
        if role.candidate == "source":
            shared["cand"] = _candidate_mask(s, visible, vis, int(cfg.candidate_block_size),
                                             int(cfg.candidate_topk_blocks))
        elif role.candidate == "consumer":
            s = s.masked_fill(~shared["cand"], _NEG_INF)
        k = min(int(cfg.index_topk), nc)
        order = torch.sort(s, dim=-1, descending=True, stable=True).indices[..., :k]
        valid = (torch.arange(k).view(1, k) < vis.view(T, 1)).expand(B, T, k)
        sel = torch.zeros(B, T, nc, dtype=torch.bool).scatter_(-1, order, valid)
        ids = torch.sort(order.masked_fill(~valid, nc), dim=-1).values
        ids = ids.masked_fill(ids == nc, -1)
        return sel, ids

    # ---------------------------------------------------------------- window (blocked)
    def _local_keys(self, kv):
        """kv [B, T, hd] -> chunk-pair keys [B, nch, 2w, hd]; key b of chunk c is position
        (c - 1) w + b (positions < 0 are zero rows, masked)."""
        B, T, hd = kv.shape
        w = self.window
        nch = (T + w - 1) // w
        kvp = F.pad(kv, (0, 0, w, nch * w - T))
        return torch.cat((kvp[:, : nch * w].reshape(B, nch, w, hd),
                          kvp[:, w:].reshape(B, nch, w, hd)), dim=2)

    def _local_scores(self, q, keys):
        """q [B, H, T, R, hd] (R query rows whose window ends at position p = 0 .. T-1) ->
        scores [B, H, T, R, 2w] against _local_keys."""
        B, H, T, R, hd = q.shape
        w = self.window
        nch = keys.shape[1]
        qp = F.pad(q, (0, 0, 0, 0, 0, nch * w - T)).reshape(B, H, nch, w * R, hd)
        s = torch.matmul(qp, keys.transpose(-1, -2).unsqueeze(1))  # [B, H, nch, wR, 2w]
        return s.reshape(B, H, nch * w, R, 2 * w)[:, :, :T]

    def _local_pv(self, p, keys):
        """p [B, H, T, R, 2w] -> [B, H, T, R, hd]."""
        B, H, T, R, w2 = p.shape
        w = self.window
        nch = keys.shape[1]
        pp = F.pad(p, (0, 0, 0, 0, 0, nch * w - T)).reshape(B, H, nch, w * R, w2)
        o = torch.matmul(pp, keys.unsqueeze(1))  # [B, H, nch, wR, hd]
        return o.reshape(B, H, nch * w, R, -1)[:, :, :T]

    # ---------------------------------------------------------------- forward
    def forward(self, x, shared):
        """x [B, T, dim] (the block's normalised attention input, positions 0 .. T-1)."""
        for key in ("ckv", "ikey", "sel", "topk"):
            shared.setdefault(key, {})
        shared.setdefault("aux", {})
        role = self.role
        B, T, _ = x.shape
        H, hd = self.H, self.hd
        pos = torch.arange(T)
        c, s = self._cs(pos)  # [T, rd/2]
        xq = nx.act_qdq(x) if self.wq_a.kind == "fp8" else None
        qr, q = self._q(x, c, s, xq)  # q [B, T, H, hd]
        kv = self._kv(x, c, s, xq)  # [B, T, hd]
        qh = q.permute(0, 2, 1, 3)  # [B, H, T, hd]
        keys = self._local_keys(kv)
        s_win = self._local_scores(qh.unsqueeze(3), keys).squeeze(3) * self.scale  # [B,H,T,2w]
        m_win = _local_mask(T, self.window).view(1, 1, T, -1)

        ckv = score = visible = None
        if role.ratio > 0:
            if role.owns_compressor:
                self._publish_compressed(x, shared)
            ckv = shared["ckv"][role.kv_source]
            if ckv.shape[1] == 0:
                ckv = None
        if ckv is None:
            o, _, _ = self._attend(
                s_win, m_win, lambda p: self._local_pv(p.unsqueeze(3), keys).squeeze(3), 1)
        else:
            nc = ckv.shape[1]
            vis = (pos + 1) // role.ratio  # [T]
            visible = torch.arange(nc).view(1, nc) < vis.view(T, 1)  # [T, Nc]
            if role.has_indexer:
                score = self._index_scores(x, qr, shared["ikey"][role.index_key_layer], c, s)
                sel, ids = self._select(score, visible, vis, shared)
                shared["sel"][self.layer_id] = sel
                shared["topk"][self.layer_id] = ids
            ids = shared["topk"][role.index_source]  # [B, T, K], -1 = none
            K = ids.shape[-1]
            flat = (ids.clamp_min(0) + (torch.arange(B) * nc).view(B, 1, 1)).reshape(-1)
            g = ckv.reshape(B * nc, hd).index_select(0, flat).reshape(B, T, K, hd)
            s_cmp = torch.matmul(q, g.transpose(-1, -2)).permute(0, 2, 1, 3) * self.scale
            scores = torch.cat((s_win, s_cmp), dim=-1)  # [B, H, T, 2w + K]
            allowed = torch.cat((m_win.expand(B, 1, T, m_win.shape[-1]),
                                 (ids >= 0).unsqueeze(1)), dim=-1)
            w2 = s_win.shape[-1]

            def pv(p):
                o_w = self._local_pv(p[..., :w2].unsqueeze(3), keys).squeeze(3)
                o_c = torch.matmul(p[..., w2:].permute(0, 2, 1, 3), g).permute(0, 2, 1, 3)
                return o_w + o_c

            o, _, _ = self._attend(scores, allowed, pv, 1)
        out = self._out(o.permute(0, 2, 1, 3), c, s)

        if score is not None and self.aux_loss and torch.is_grad_enabled():
            kl = self._indexer_kl(qh.detach(), s_win.detach(), m_win, ckv.detach(), visible,
                                  score, role.ratio)
            aux = shared["aux"]
            aux["indexer_kl"] = aux["indexer_kl"] + kl if "indexer_kl" in aux else kl
        return out

    def _indexer_kl(self, qh, s_win, m_win, ckv, visible, score, ratio):
        """KL(target || softmax(score)) over visible entries, mean over rows that see any.
        target: per head, the probability the attention would put on each visible compressed
        entry if it attended to the window and all of them (sink in the denominator), summed
        over heads, normalised."""
        T = qh.shape[2]
        r0 = ratio - 1  # first row that sees an entry
        with torch.no_grad():
            sw = s_win[:, :, r0:].masked_fill(~m_win[:, :, r0:], _NEG_INF)
            sc = torch.matmul(qh[:, :, r0:], ckv.transpose(1, 2).unsqueeze(1)) * self.scale
            sc = sc.masked_fill(~visible[r0:].view(1, 1, T - r0, -1), _NEG_INF)
            sink = self._sink(4, 1).expand(sw.shape[0], -1, T - r0, 1)
            lse = torch.logsumexp(torch.cat((sw, sc, sink), dim=-1), dim=-1, keepdim=True)
            mass = torch.exp(sc - lse).sum(dim=1)  # [B, T - r0, Nc]
            target = mass / mass.sum(dim=-1, keepdim=True).clamp_min(1e-30)
            logt = torch.log(target.clamp_min(1e-30))
        vis_rows = visible[r0:].unsqueeze(0)
        logq = torch.log_softmax(score[:, r0:].masked_fill(~vis_rows, _NEG_INF), dim=-1)
        logq = logq.masked_fill(~vis_rows, 0.0)
        return (target * (logt - logq)).sum(dim=-1).mean()

    # ---------------------------------------------------------------- DSpark stages
    def forward_dspark(self, x, main_x):
        """Draft attention of a DSpark stage (ratio-0 layer), for every position p at once.

        x [B, T, R, dim]: the stage's normalised attention input of the R draft rows that follow
        position p (row r sits at position p + 1 + r); main_x [B, T, dim]: RMSNorm_main(main_proj
        (taps)) of positions 0 .. T-1, whose KV fills the stage's ring. Row (p, r) attends to the
        ring = main KV at positions max(0, p-win+1) .. p, plus all R draft rows of its own block
        (bidirectional). Returns [B, T, R, dim]."""
        B, T, R, _ = x.shape
        cm, sm = self._cs(torch.arange(T))
        main_kv = self._kv(main_x, cm, sm)  # [B, T, hd]
        dpos = torch.arange(T).view(T, 1) + 1 + torch.arange(R).view(1, R)  # [T, R]
        cd, sd = self._cs(dpos)  # [T, R, rd/2]
        xq = nx.act_qdq(x) if self.wq_a.kind == "fp8" else None
        _, q = self._q(x, cd, sd, xq)  # [B, T, R, H, hd]
        dkv = self._kv(x, cd, sd, xq)  # [B, T, R, hd]
        qh = q.permute(0, 3, 1, 2, 4)  # [B, H, T, R, hd]
        keys = self._local_keys(main_kv)
        s_main = self._local_scores(qh, keys) * self.scale  # [B, H, T, R, 2w]
        s_blk = torch.matmul(q, dkv.unsqueeze(2).transpose(-1, -2)).permute(0, 3, 1, 2, 4)
        scores = torch.cat((s_main, s_blk * self.scale), dim=-1)  # [B, H, T, R, 2w + R]
        w2 = s_main.shape[-1]
        m = _local_mask(T, self.window).view(1, 1, T, 1, w2)
        allowed = torch.cat((m, torch.ones(1, 1, T, 1, R, dtype=torch.bool)), dim=-1)

        def pv(p):
            o_b = torch.matmul(p[..., w2:].permute(0, 2, 3, 1, 4), dkv.unsqueeze(2))
            return self._local_pv(p[..., :w2], keys) + o_b.permute(0, 3, 1, 2, 4)

        o, _, _ = self._attend(scores, allowed, pv, 1)  # [B, H, T, R, hd]
        return self._out(o.permute(0, 2, 3, 1, 4), cd, sd)


def _local_mask(T, window):
    """[T, 2w] bool: key b of row p's chunk pair (position (p // w - 1) w + b) is in the window
    max(0, p-w+1) .. p."""
    w = window
    a = (torch.arange(T) % w).view(T, 1)
    b = torch.arange(2 * w).view(1, 2 * w)
    first = (torch.arange(T) < w).view(T, 1)
    return (b > a) & (b <= a + w) & (~first | (b >= w))


def _window_mask(T, window):
    """[T, T] bool: row i sees positions max(0, i-window+1) .. i (reference / tests)."""
    i = torch.arange(T).view(T, 1)
    j = torch.arange(T).view(1, T)
    return (j <= i) & (j > i - window)


def _candidate_mask(s, visible, vis, block, topk_blocks):
    """Candidate-source mask [B, T, Nc] from scores s (-inf outside visible)."""
    B, T, nc = s.shape
    nb = (nc + block - 1) // block
    sp = F.pad(s, (0, nb * block - nc), value=_NEG_INF).view(B, T, nb, block).amax(dim=-1)
    has = vis > 0
    newest = ((vis - 1).clamp_min(0) // block).view(1, T, 1).expand(B, T, 1)
    pin = torch.full((B, T, 1), float("inf"))
    pinned = sp.scatter(-1, newest, pin)
    sp = torch.where(has.view(1, T, 1), pinned, sp)
    k = min(topk_blocks, nb)
    top = torch.sort(sp, dim=-1, descending=True, stable=True)
    keep = torch.zeros(B, T, nb, dtype=torch.bool).scatter_(
        -1, top.indices[..., :k], top.values[..., :k] > _NEG_INF)
    return keep.repeat_interleave(block, dim=-1)[..., :nc] & visible.unsqueeze(0)
