"""Engram of DeepSeek-V4.1: the n-gram hash, the compressed-token map and the gated table lookup.

Engine: src/model/deepseek_v41/engram_hash.cc (hash plan, HashTokens), engram.cc (ApplyEngram),
src/tokenizer/engram_token_map.cc (the map from tokenizer.json), model.cc (which map is used).

Hash, per position p and Engram layer l (N = engram_max_ngram_size, H = engram_n_heads):
  tok[s] = map[ids[p - s]] for s = 0..N-1, the pad map[engram_pad_token_id] once p - s < 0
  r = tok[0] * M[l][0]; for n = 1..N-1: r ^= tok[n] * M[l][n];
      row[(n-1)*H + k] = r % P[l][n-1][k] + offset[l][(n-1)*H + k]
  P: primes handed out in order, never reused; for each layer and n-gram order the search restarts
     above engram_vocab_size - 1 and takes the next H unused primes. offset: exclusive prefix sum.
  M[l] = numpy default_rng(10007 * layer_id).integers(0, max(1, (INT64_MAX // Vc) // 2), N) * 2 + 1
     with Vc = engram_compressed_vocab_size.

Token map: `engram_token_map.json` in the model folder when it has one (what the engine loads first;
`deepinfer make-checkpoint` writes the stand-in i * Vc // V there), otherwise built from the
folder's tokenizer.json the way the engine builds it (build_token_map_from_tokenizer).

Apply (before the block it belongs to), per row and hc copy k:
  emb = the hashed table rows (e4m3, scale per 32 columns) concatenated, [(N-1)*H*head_dim]
  kv = engram.wkv(emb) (FP8 GEMM) -> keys [hc, dim] + one value [dim]
  dot = sum(x_k * (q_weight_k * k_weight_k) * key_k) * rsqrt(mean x_k^2 + eps) * rsqrt(mean key_k^2
        + eps) / sqrt(dim);  gate = sigmoid(sign(dot) * sqrt(max(|dot|, 1e-6)));  x_k += gate * value
"""

import json
import math
import os
import unicodedata

import numpy as np
import torch
import torch.nn as nn

from . import numerics as N
from .common import Weight, bf16_weight, fp8_linear, rb


# ----------------------------------------------------------------------------------------------
# Hash plan


def _is_prime(n):
    if n < 2:
        return False
    bases = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for p in bases:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d //= 2
        r += 1
    for a in bases:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


class HashPlan:
    """Primes, offsets and multipliers of every Engram layer (engram_layer_ids order)."""

    def __init__(self, cfg):
        self.layer_ids = list(getattr(cfg, "engram_layer_ids", []) or [])
        self.max_ngram = int(getattr(cfg, "engram_max_ngram_size", 0) or 0)
        self.n_heads = int(getattr(cfg, "engram_n_heads", 0) or 0)
        self.pad_id = int(getattr(cfg, "engram_pad_token_id", 0) or 0)
        self.primes, self.offsets, self.multipliers, self.num_rows = [], [], [], []
        if not self.layer_ids:
            return
        vc = int(cfg.engram_compressed_vocab_size)
        bound = max(1, (np.iinfo(np.int64).max // vc) // 2)
        used = set()
        for lid in self.layer_ids:
            primes = []
            for _ in range(1, self.max_ngram):
                cur = int(cfg.engram_vocab_size) - 1
                for _ in range(self.n_heads):
                    cur += 1
                    while not _is_prime(cur) or cur in used:
                        cur += 1
                    used.add(cur)
                    primes.append(cur)
            self.primes.append(primes)
            self.offsets.append([int(v) for v in np.cumsum([0] + primes[:-1])])
            self.num_rows.append(int(sum(primes)))
            rng = np.random.default_rng(10007 * lid)
            m = rng.integers(0, bound, self.max_ngram, dtype=np.int64) * 2 + 1
            self.multipliers.append([int(v) for v in m])
        want = list(getattr(cfg, "engram_num_embeddings", []) or [])
        if want and want != self.num_rows:
            raise ValueError(f"Engram hash buckets {self.num_rows} differ from "
                             f"engram_num_embeddings {want}")

    @property
    def n_cols(self):
        return (self.max_ngram - 1) * self.n_heads

    def hash(self, ids, token_map):
        """ids [B, T] (whole sequences from position 0), token_map LongTensor [V] ->
        table rows [B, T, n_engram_layers, n_cols] (offsets included)."""
        comp = token_map[ids]
        pad = int(token_map[self.pad_id])
        b, t = ids.shape
        toks = []
        for s in range(self.max_ngram):
            if s == 0:
                toks.append(comp)
            else:
                padded = torch.full((b, s), pad, dtype=comp.dtype)
                toks.append(torch.cat([padded, comp[:, : t - s]], dim=1)[:, :t])
        out = []
        for li in range(len(self.layer_ids)):
            mult, primes, offs = self.multipliers[li], self.primes[li], self.offsets[li]
            rolling = toks[0] * mult[0]
            cols = []
            for n in range(1, self.max_ngram):
                rolling = torch.bitwise_xor(rolling, toks[n] * mult[n])
                for k in range(self.n_heads):
                    c = (n - 1) * self.n_heads + k
                    cols.append(torch.remainder(rolling, primes[c]) + offs[c])
            out.append(torch.stack(cols, dim=-1))
        return torch.stack(out, dim=2)


# ----------------------------------------------------------------------------------------------
# Token map


def load_token_map(model_dir, cfg):
    """The compressed-token map the engine uses for `model_dir`: LongTensor [vocab_size]."""
    path = os.path.join(model_dir, "engram_token_map.json")
    if os.path.exists(path):
        with open(path) as f:
            j = json.load(f)
        if int(j["compressed_vocab_size"]) != int(cfg.engram_compressed_vocab_size):
            raise ValueError(f"{path}: compressed_vocab_size {j['compressed_vocab_size']} differs from "
                             f"engram_compressed_vocab_size {cfg.engram_compressed_vocab_size}")
        m = torch.tensor(j["map"], dtype=torch.long)
        if m.numel() != int(cfg.vocab_size):
            raise ValueError(f"{path}: {m.numel()} entries for vocab_size {cfg.vocab_size}")
        return m
    tok = os.path.join(model_dir, "tokenizer.json")
    if os.path.exists(tok):
        m, n = build_token_map_from_tokenizer(tok, int(cfg.vocab_size), int(cfg.engram_pad_token_id))
        if n != int(cfg.engram_compressed_vocab_size):
            raise ValueError(f"{tok}: {n} compressed ids, config says {cfg.engram_compressed_vocab_size}")
        return m
    raise FileNotFoundError(f"{model_dir}: no engram_token_map.json and no tokenizer.json")


def stand_in_token_map(vocab, compressed):
    """The map `deepinfer make-checkpoint` writes: i -> i * compressed // vocab."""
    return torch.arange(vocab, dtype=torch.long) * compressed // vocab


def _bytes_to_unicode():
    """GPT-2 byte-level alphabet: byte -> printable character."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + \
        list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


_WS = " \t\r\n"


def normalize_for_engram(text):
    """NFKC -> NFD -> drop marks (Mn, Mc, Me) -> lower-case -> runs of [ \\t\\r\\n] to one space ->
    strip White_Space at both ends, except that a lone space stays (tokenizer/engram_token_map.h)."""
    t = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text))
    t = "".join(ch for ch in t if unicodedata.category(ch) not in ("Mn", "Mc", "Me"))
    t = t.lower()
    out, in_run = [], False
    for ch in t:
        ws = ch in _WS
        if not ws:
            out.append(ch)
        elif not in_run:
            out.append(" ")
        in_run = ws
    s = "".join(out)
    if s == " ":
        return s
    return s.strip()  # str.strip() strips Unicode White_Space


def build_token_map_from_tokenizer(tokenizer_json, vocab_size=None, pad_token_id=2):
    """The engine's BuildEngramTokenMap on a byte-level BPE tokenizer.json: every id decoded alone
    (special tokens kept); a decode with U+FFFD (a partial UTF-8 sequence) is keyed by the raw token
    string, otherwise by its normal form (the text itself when that is empty); equal keys share a
    compressed id, numbered by first appearance. Returns (LongTensor [n], n_compressed) with
    n = vocab_size when given: ids the tokenizer lacks (above its last id) take the pad's id (the
    engine cannot hash them either; they never occur)."""
    with open(tokenizer_json, encoding="utf-8") as f:
        tj = json.load(f)
    tokens = {}
    for text, i in tj["model"]["vocab"].items():
        tokens[int(i)] = (text, False)
    for a in tj.get("added_tokens", []):
        tokens[int(a["id"])] = (a["content"], True)
    n_ids = max(tokens) + 1
    dec = {c: b for b, c in _bytes_to_unicode().items()}
    keys, out = {}, []
    for i in range(n_ids):
        if i not in tokens:
            raise ValueError(f"{tokenizer_json}: no token for id {i}")
        text, _ = tokens[i]
        # Every token (added ones too) through the byte-level alphabet; a string with a character
        # outside it stands for its own UTF-8 bytes (tokenizer/byte_level.cc).
        raw = bytes(dec[c] for c in text) if all(c in dec for c in text) else text.encode("utf-8")
        decoded = raw.decode("utf-8", errors="replace")
        if "\ufffd" in decoded:
            key = text
        else:
            key = normalize_for_engram(decoded) or decoded
        if key not in keys:
            keys[key] = len(keys)
        out.append(keys[key])
    m = torch.tensor(out, dtype=torch.long)
    if vocab_size is not None and vocab_size > n_ids:
        m = torch.cat([m, torch.full((vocab_size - n_ids,), int(m[pad_token_id]), dtype=torch.long)])
    return m, len(keys)


# ----------------------------------------------------------------------------------------------
# The Engram module of one layer


class Engram(nn.Module):
    """Parameters `q_weight`, `k_weight` [hc, dim], `embed.weight` [rows, head_dim],
    `wkv.weight` [(hc+1)*dim, (N-1)*H*head_dim]."""

    def __init__(self, cfg, n_rows):
        super().__init__()
        self.hc, self.dim = int(cfg.hc_mult), int(cfg.hidden_size)
        self.head_dim = int(cfg.engram_head_dim)
        self.cols = (int(cfg.engram_max_ngram_size) - 1) * int(cfg.engram_n_heads)
        self.eps = float(cfg.rms_norm_eps)
        self.q_weight = nn.Parameter(torch.ones(self.hc, self.dim))
        self.k_weight = nn.Parameter(torch.ones(self.hc, self.dim))
        self.embed = Weight(n_rows, self.head_dim, std=0.3)
        self.wkv = Weight((self.hc + 1) * self.dim, self.cols * self.head_dim)

    def forward(self, x, rows):
        """x [..., hc, dim] (the stream), rows [..., cols] table rows -> new stream."""
        emb = self.embed.weight[rows]  # [..., cols, head_dim]
        emb = N.act_qdq(emb, 32)  # the table's e4m3 rows with a scale per 32 columns
        emb = emb.flatten(-2)
        kv = fp8_linear(emb, self.wkv.weight)
        keys = kv[..., : self.hc * self.dim].unflatten(-1, (self.hc, self.dim))
        value = kv[..., self.hc * self.dim:]
        gw = bf16_weight(self.q_weight) * bf16_weight(self.k_weight)
        dot = (x * gw * keys).sum(-1)
        rstd = torch.rsqrt(x.pow(2).mean(-1) + self.eps) * torch.rsqrt(keys.pow(2).mean(-1) + self.eps)
        dot = dot * rstd / math.sqrt(self.dim)
        mag = torch.sqrt(dot.abs().clamp(min=1e-6))
        gate = torch.sigmoid(torch.where(dot < 0, -mag, mag))
        return rb(x + gate.unsqueeze(-1) * value.unsqueeze(-2))
