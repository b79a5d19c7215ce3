"""A count-based baseline for the trained model's NLL: interpolated Kneser-Ney n-grams.

    /usr/bin/python3 train/ngram_baseline.py --train train/data-v4/train.bin \
        --eval train/data-v4/heldout_prose.bin train/data-v4/heldout_literary.bin ...

Fits modified-free (one discount per order, D = n1 / (n1 + 2 n2)) interpolated Kneser-Ney bigram
and trigram models on a token file of the dataset format (uint32 ids, README "Format") and prints
their NLL in nats per token on the same windows `evaluate.py` and `deepinfer eval-nll` score (N
evenly spaced windows of T + 1 ids; each window's first id is context only, and the trigram scores
the window's second id with the bigram). The distributions are proper over the full vocabulary
(129,280 ids): the lowest order interpolates with the uniform distribution, so an id never seen in
training still gets a probability.

What it is for: the corpus's own local statistics, the number any neural model trained on the same
text has to beat. A model at this level has learned little beyond which token follows which.
Seconds on one core for the 14 M-token data-v4.
"""
import argparse
import json
import sys

import numpy as np

VOCAB = 129280


def _discount(counts):
    """D = n1 / (n1 + 2 n2) from the count-of-counts (0.5 when undefined)."""
    n1 = int(np.count_nonzero(counts == 1))
    n2 = int(np.count_nonzero(counts == 2))
    return n1 / (n1 + 2 * n2) if n1 + 2 * n2 > 0 else 0.5


class _Table:
    """Sorted int64 keys with a value each; lookups of absent keys give 0."""

    def __init__(self, keys, values=None):
        if values is None:
            self.keys, self.values = np.unique(keys, return_counts=True)
        else:
            self.keys, self.values = keys, values

    def __call__(self, k):
        if len(self.keys) == 0:
            return np.zeros(np.shape(k), dtype=np.float64)
        i = np.minimum(np.searchsorted(self.keys, k), len(self.keys) - 1)
        return np.where(self.keys[i] == k, self.values[i], 0).astype(np.float64)


class KneserNey:
    """Interpolated Kneser-Ney over ids in [0, vocab): bigram() and trigram() probabilities."""

    def __init__(self, ids, vocab=VOCAB):
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) < 3:
            raise ValueError("KneserNey needs at least 3 training ids")
        if ids.min() < 0 or ids.max() >= vocab:
            raise ValueError("training ids outside [0, %d)" % vocab)
        self.vocab = V = vocab
        # Trigram counts c(uvw), their contexts' totals c(uv.) and type counts N1+(uv.).
        tri = _Table((ids[:-2] * V + ids[1:-1]) * V + ids[2:])
        self.tri = tri
        self.d3 = _discount(tri.values)
        self.tri_ctx_total = _Table(ids[:-2] * V + ids[1:-1])
        self.tri_ctx_types = _Table(tri.keys // V)
        # Middle order: continuation counts N1+(.vw) = distinct u before (v, w).
        vw, cont = np.unique(tri.keys % (V * V), return_counts=True)
        self.mid = _Table(vw, cont)
        self.d2 = _discount(cont)
        v_of = vw // V
        self.mid_ctx_total = np.bincount(v_of, weights=cont, minlength=V)
        self.mid_ctx_types = np.bincount(v_of, minlength=V).astype(np.float64)
        # Raw bigram counts (the bigram model's highest order).
        bi = _Table(ids[:-1] * V + ids[1:])
        self.bi = bi
        self.d2_raw = _discount(bi.values)
        self.bi_ctx_total = np.bincount(ids[:-1], minlength=V).astype(np.float64)
        self.bi_ctx_types = np.bincount(bi.keys // V, minlength=V).astype(np.float64)
        # Lowest order: N1+(.w) = distinct v before w, interpolated with the uniform distribution.
        uni = np.bincount(bi.keys % V, minlength=V).astype(np.float64)
        self.d1 = _discount(uni[uni > 0])
        total = uni.sum()
        gamma1 = self.d1 * np.count_nonzero(uni) / total
        self.p1 = np.maximum(uni - self.d1, 0.0) / total + gamma1 / V

    def _interp(self, c, ctx_total, ctx_types, d, lower):
        has = ctx_total > 0
        safe = np.where(has, ctx_total, 1.0)
        mine = np.maximum(c - d, 0.0) / safe
        gamma = d * ctx_types / safe
        return np.where(has, mine + gamma * lower, lower)

    def _p2(self, v, w):
        v, w = np.asarray(v, np.int64), np.asarray(w, np.int64)
        return self._interp(self.mid(v * self.vocab + w), self.mid_ctx_total[v],
                            self.mid_ctx_types[v], self.d2, self.p1[w])

    def bigram(self, v, w):
        """P(w | v) of the KN bigram model (raw counts on top, continuation counts below)."""
        v, w = np.asarray(v, np.int64), np.asarray(w, np.int64)
        return self._interp(self.bi(v * self.vocab + w), self.bi_ctx_total[v],
                            self.bi_ctx_types[v], self.d2_raw, self.p1[w])

    def trigram(self, u, v, w):
        """P(w | u v) of the KN trigram model."""
        u, v, w = (np.asarray(a, np.int64) for a in (u, v, w))
        ctx = u * self.vocab + v
        return self._interp(self.tri(ctx * self.vocab + w), self.tri_ctx_total(ctx),
                            self.tri_ctx_types(ctx), self.d3, self._p2(v, w))


def fixed_windows(ids, n, t):
    """The windows of evaluate.py / train.Tokens.fixed_windows: n evenly spaced, t + 1 ids."""
    step = max(1, (len(ids) - t - 1) // n)
    return [ids[i * step:i * step + t + 1] for i in range(n) if i * step + t + 1 <= len(ids)]


def window_nll(model, windows):
    """Mean NLL (nats per scored id) of the bigram and trigram models over the windows."""
    bi = tri = 0.0
    count = 0
    for w in windows:
        w = np.asarray(w, np.int64)
        if len(w) < 2:
            continue
        bi -= np.log(model.bigram(w[:-1], w[1:])).sum()
        tri -= np.log(model.bigram(w[:1], w[1:2])).sum()
        if len(w) > 2:
            tri -= np.log(model.trigram(w[:-2], w[1:-1], w[2:])).sum()
        count += len(w) - 1
    return {"bigram": bi / count, "trigram": tri / count, "tokens_scored": count}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--train", required=True, help="token file the n-grams are counted on")
    p.add_argument("--eval", nargs="+", required=True, help="token files to score")
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--windows", type=int, default=32)
    a = p.parse_args(argv)
    model = KneserNey(np.fromfile(a.train, dtype=np.uint32))
    for path in a.eval:
        ids = np.fromfile(path, dtype=np.uint32)
        r = window_nll(model, fixed_windows(ids, a.windows, a.seq))
        print(json.dumps({"tokens": path, "windows": a.windows, "seq": a.seq, **r}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
