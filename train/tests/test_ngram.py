"""Tests of train/ngram_baseline.py (/usr/bin/python3 -m unittest tests.test_ngram in train/)."""
import os
import sys
import tempfile
import unittest
from collections import Counter

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import ngram_baseline as NG  # noqa: E402


def skewed_corpus(n, vocab, seed):
    """Ids 0..vocab-3 drawn with Zipf-like weights (the last two ids never occur)."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, vocab - 1)
    return rng.choice(vocab - 2, size=n, p=w / w.sum())


class KneserNeyTest(unittest.TestCase):
    V = 13

    def setUp(self):
        self.ids = skewed_corpus(600, self.V, seed=3)
        self.model = NG.KneserNey(self.ids, vocab=self.V)

    def test_distributions_sum_to_one_over_the_vocabulary(self):
        w = np.arange(self.V)
        # Seen contexts, a context never seen, and contexts holding the never-seen ids.
        for u, v in [(self.ids[0], self.ids[1]), (self.ids[10], self.ids[11]), (0, 0),
                     (self.V - 1, self.V - 2), (self.V - 1, 0)]:
            self.assertAlmostEqual(self.model.trigram(np.full(self.V, u), np.full(self.V, v), w).sum(),
                                   1.0, places=12)
            self.assertAlmostEqual(self.model.bigram(np.full(self.V, v), w).sum(), 1.0, places=12)
        self.assertTrue((self.model.trigram(np.full(self.V, 0), np.full(self.V, 1), w) > 0).all())

    def test_matches_the_definition_for_a_seen_context(self):
        ids = [int(i) for i in self.ids]
        tri = Counter(zip(ids, ids[1:], ids[2:]))
        u, v = ids[20], ids[21]
        c_uv = sum(c for (a, b, _), c in tri.items() if (a, b) == (u, v))
        types_uv = sum(1 for (a, b, _) in tri if (a, b) == (u, v))
        cont = Counter((b, c) for (_, b, c) in tri)           # N1+(. v w)
        c_v = sum(c for (b, _), c in cont.items() if b == v)
        types_v = sum(1 for (b, _) in cont if b == v)
        uni = Counter(b for (_, b) in set(zip(ids, ids[1:])))  # N1+(. w)
        tot1, types1 = sum(uni.values()), len(uni)
        m = self.model
        for w in range(self.V):
            p1 = max(uni[w] - m.d1, 0) / tot1 + m.d1 * types1 / tot1 / self.V
            p2 = max(cont[(v, w)] - m.d2, 0) / c_v + m.d2 * types_v / c_v * p1
            p3 = max(tri[(u, v, w)] - m.d3, 0) / c_uv + m.d3 * types_uv / c_uv * p2
            self.assertAlmostEqual(float(m.trigram(u, v, w)), p3, places=12)

    def test_learns_a_deterministic_sequence(self):
        pattern = np.tile(np.arange(5), 200)
        model = NG.KneserNey(pattern, vocab=self.V)
        seen = NG.window_nll(model, NG.fixed_windows(pattern, 4, 32))
        reversed_pattern = pattern[::-1].copy()
        unseen = NG.window_nll(model, NG.fixed_windows(reversed_pattern, 4, 32))
        self.assertLess(seen["trigram"], 0.1)
        self.assertLess(seen["bigram"], 0.1)
        self.assertGreater(unseen["trigram"], 1.5)
        self.assertEqual(seen["tokens_scored"], 4 * 32)

    def test_rejects_ids_outside_the_vocabulary(self):
        with self.assertRaises(ValueError):
            NG.KneserNey(np.array([0, 1, self.V]), vocab=self.V)

    def test_windows_are_the_evaluators(self):
        import train as T  # torch: only this test needs it
        ids = skewed_corpus(3000, self.V, seed=5).astype(np.uint32)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.bin")
            ids.tofile(path)
            expected = T.Tokens(path).fixed_windows(32, 64).numpy()
        got = np.stack(NG.fixed_windows(ids, 32, 64)).astype(np.int64)
        np.testing.assert_array_equal(got, expected)


if __name__ == "__main__":
    unittest.main()
