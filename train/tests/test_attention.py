"""Tests of v41.config / v41.rope / v41.attention (run: /usr/bin/python3 -m unittest from train/)."""

import math
import os
import re
import sys
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.dirname(HERE)
sys.path.insert(0, TRAIN)

from v41 import attention as A  # noqa: E402
from v41 import numerics as nx  # noqa: E402
from v41.config import describe_roles, load_config  # noqa: E402
from v41.rope import apply_rope, cos_sin, rope_freqs  # noqa: E402

FIXTURE = os.path.join(TRAIN, "..", "..", "shared", "fixtures", "v41-tiny-a")
SMALL = os.path.join(TRAIN, "configs", "v41-small.json")

torch.set_num_threads(1)


def tiny():
    return load_config(os.path.join(FIXTURE, "config.json"))


def build(cfg, seed=0):
    torch.manual_seed(seed)
    layers = [A.Attention(cfg, i) for i in range(cfg.n_layers + cfg.n_stages)]
    for a in layers:  # non-trivial norms and sinks
        for n, p in a.named_parameters():
            if n.endswith("norm.weight") or n == "attn_sink":
                with torch.no_grad():
                    p.add_(0.3 * torch.randn_like(p))
            if n == "compressor.wgate.weight":
                with torch.no_grad():
                    p.mul_(8.0)
    return layers


def run_backbone(cfg, layers, x):
    shared = {}
    outs = [layers[i](x, shared) for i in range(cfg.n_layers)]
    return outs, shared


class RolesTest(unittest.TestCase):
    def test_fixture_roles_match_readme(self):
        cfg = tiny()
        with open(os.path.join(FIXTURE, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        want = [ln for ln in readme.splitlines() if re.match(r"^\| \d+ \| `", ln)]
        got = describe_roles(cfg).splitlines()[2:]
        self.assertEqual(len(want), cfg.n_layers + cfg.n_stages)
        self.assertEqual(got, want)

    def test_fixture_role_fields(self):
        cfg = tiny()
        r = cfg.roles
        self.assertEqual((cfg.n_layers, cfg.n_stages), (6, 1))
        self.assertEqual([d.ratio for d in r], [0, 2, 2, 1, 1, 1, 0])
        self.assertEqual([d.kv_source for d in r], [-1, 1, 1, 3, 3, 3, -1])
        self.assertEqual([d.index_source for d in r], [-1, 1, 1, 3, 3, 5, -1])
        self.assertEqual([d.index_key_layer for d in r], [-1, 1, -1, 3, -1, 3, -1])
        self.assertEqual([d.candidate for d in r],
                         ["none", "none", "none", "source", "none", "consumer", "none"])
        self.assertEqual([d.dspark_tap_slot for d in r], [-1, -1, -1, -1, 0, 1, -1])
        self.assertEqual([d.engram_index for d in r], [0, 1, -1, -1, -1, -1, -1])
        self.assertEqual([d.yarn for d in r], [False, True, True, True, True, True, False])
        self.assertTrue(r[6].is_mtp and r[6].has_main_proj and r[6].has_draft_head)
        self.assertEqual(cfg.hidden_size, 256)  # text_config keys as attributes
        self.assertEqual(cfg.quantization_config["weight_block_size"], [32, 32])

    def test_small_config_loads(self):
        cfg = load_config(SMALL)
        self.assertEqual(cfg.n_stages, 1)
        self.assertEqual(cfg.roles[5].candidate, "consumer")


class RopeTest(unittest.TestCase):
    def test_release_yarn_band(self):
        # Release: rope_dim 64, theta 160000, orig 65536, factor 16: pairs < 15 keep their
        # frequency, pairs >= 25 are divided by 16 (v41_model.md 3.4.1).
        plain = rope_freqs(64, 160000.0)
        f = rope_freqs(64, 160000.0, (65536, 16.0, 32.0, 1.0))
        self.assertTrue(torch.equal(f[:16], plain[:16]))
        self.assertTrue(torch.allclose(f[25:], plain[25:] / 16, rtol=1e-6))
        self.assertTrue(((f[16:25] < plain[16:25]) & (f[16:25] > plain[16:25] / 16)).all())

    def test_rotation_and_inverse(self):
        freqs = rope_freqs(16, 10000.0)
        c, s = cos_sin(freqs, torch.arange(5))
        x = torch.randn(5, 64)
        y = apply_rope(x, c, s, 16)
        self.assertTrue(torch.equal(y[:, :48], x[:, :48]))
        self.assertTrue(torch.allclose(apply_rope(y, c, s, 16, inverse=True), x, atol=1e-6))
        # pair (x[48], x[49]) rotated by pos * f_0 = pos radians
        ang = torch.arange(5, dtype=torch.float64)
        want0 = x[:, 48].double() * torch.cos(ang) - x[:, 49].double() * torch.sin(ang)
        self.assertTrue(torch.allclose(y[:, 48].double(), want0, atol=1e-5))


def reference_attention(att, x, shared_ref):
    """Per-row transcription of the engine (attention.cc / indexer.cc / sparse_attn), reusing
    the module's projections; `shared_ref` carries ckv / keys / top-k lists / candidate masks."""
    cfg, role = att.cfg, att.role
    B, T, _ = x.shape
    c, s = att._cs(torch.arange(T))
    qr, q = att._q(x, c, s)
    kv = att._kv(x, c, s)
    li = att.layer_id
    if role.owns_compressor:
        tmp = {"ckv": {}, "ikey": {}}
        att._publish_compressed(x, tmp)
        shared_ref["ckv"][li] = tmp["ckv"][li]
        shared_ref["ikey"][li] = tmp["ikey"][li]
    lists = None
    if role.ratio > 0:
        ckv = shared_ref["ckv"][role.kv_source]
        if role.has_indexer:
            score = att._index_scores(x, qr, shared_ref["ikey"][role.index_key_layer], c, s)
            topk = [[None] * T for _ in range(B)]
            if role.candidate == "source":
                shared_ref["cand"] = [[None] * T for _ in range(B)]
            for b in range(B):
                for i in range(T):
                    vis = (i + 1) // role.ratio
                    sc = [float(v) for v in score[b, i, :vis]]
                    if role.candidate == "source" and vis > 0:
                        bs, kb = cfg.candidate_block_size, cfg.candidate_topk_blocks
                        nb = (vis + bs - 1) // bs
                        blk = [max(sc[t] for t in range(j * bs, min(vis, (j + 1) * bs)))
                               for j in range(nb)]
                        blk[(vis - 1) // bs] = math.inf
                        order = sorted(range(nb), key=lambda j: (-blk[j], j))[:kb]
                        keep = set()
                        for j in order:
                            keep.update(range(j * bs, min(vis, (j + 1) * bs)))
                        shared_ref["cand"][b][i] = keep
                    if role.candidate == "consumer" and vis > 0:
                        keep = shared_ref["cand"][b][i]
                        sc = [v if t in keep else -math.inf for t, v in enumerate(sc)]
                    k = min(cfg.index_topk, vis)
                    topk[b][i] = sorted(sorted(range(vis), key=lambda t: (-sc[t], t))[:k])
            shared_ref["topk"][li] = topk
        lists = shared_ref["topk"][role.index_source]
    H, hd, w = att.H, att.hd, att.window
    o = torch.zeros(B, T, H, hd)
    for b in range(B):
        for i in range(T):
            vals = [kv[b, p] for p in range(max(0, i - w + 1), i + 1)]
            if lists is not None:
                vals += [ckv[b, j] for j in lists[b][i]]
            V = torch.stack(vals)  # [n, hd]
            logits = (q[b, i] @ V.T) * att.scale  # [H, n]
            m = logits.max(dim=-1, keepdim=True).values
            e = torch.exp(logits - m)
            den = e.sum(-1, keepdim=True) + torch.exp(att.attn_sink.view(H, 1) - m)
            o[b, i] = (e @ V) / den
    return att._out(o, c, s)


def reference_dspark(att, x, main_x):
    B, T, R, _ = x.shape
    w = att.window
    cm, sm = att._cs(torch.arange(T))
    main_kv = att._kv(main_x, cm, sm)
    dpos = torch.arange(T).view(T, 1) + 1 + torch.arange(R).view(1, R)
    cd, sd = att._cs(dpos)
    _, q = att._q(x, cd, sd)
    dkv = att._kv(x, cd, sd)
    o = torch.zeros(B, T, R, att.H, att.hd)
    for b in range(B):
        for p in range(T):
            V = torch.cat((main_kv[b, max(0, p - w + 1): p + 1], dkv[b, p]), dim=0)
            for r in range(R):
                logits = (q[b, p, r] @ V.T) * att.scale
                m = logits.max(dim=-1, keepdim=True).values
                e = torch.exp(logits - m)
                den = e.sum(-1, keepdim=True) + torch.exp(att.attn_sink.view(-1, 1) - m)
                o[b, p, r] = (e @ V) / den
    return att._out(o, cd, sd)


class AttentionTest(unittest.TestCase):
    def setUp(self):
        self.quant = nx.QUANT

    def tearDown(self):
        nx.QUANT = self.quant
        nx.BF16_ACT = False

    def _check_against_reference(self, T, emulate, **overrides):
        # Exact agreement needs QUANT off: with it on, a last-bit difference in a sum flips an
        # e4m3 rounding. With quantization (and bf16 emulation) on, the check is relative.
        nx.QUANT = emulate
        nx.BF16_ACT = emulate
        cfg = tiny()
        for k, v in overrides.items():
            setattr(cfg, k, v)
        layers = build(cfg, seed=1)
        torch.manual_seed(2)
        x = torch.randn(2, T, cfg.hidden_size)
        with torch.no_grad():
            outs, shared = run_backbone(cfg, layers, x)
            ref_shared = {"ckv": {}, "ikey": {}, "topk": {}}
            for i in range(cfg.n_layers):
                ref = reference_attention(layers[i], x, ref_shared)
                if emulate:
                    rel = float((outs[i] - ref).norm() / ref.norm())
                    self.assertLess(rel, 0.02, f"layer {i}")
                else:
                    self.assertTrue(torch.allclose(outs[i], ref, atol=1e-5, rtol=1e-4),
                                    f"layer {i}: max diff {(outs[i] - ref).abs().max()}")
                if layers[i].role.has_indexer:
                    ids = shared["topk"][i]
                    for b in range(2):
                        for t in range(T):
                            got = [int(v) for v in ids[b, t] if v >= 0]
                            self.assertEqual(got, ref_shared["topk"][i][b][t], (i, b, t))

    def test_matches_per_row_reference(self):
        # T odd (a ratio-2 partial group waits), long enough for several windows, > topk
        # entries and several candidate blocks.
        self._check_against_reference(T=45, emulate=False)

    def test_matches_reference_fewer_candidates_than_topk(self):
        # 1 block of 4 < index_topk 8: masked (-inf) entries fill the top-k, lowest index first.
        self._check_against_reference(T=45, emulate=False, candidate_topk_blocks=1)

    def test_matches_per_row_reference_bf16(self):
        self._check_against_reference(T=21, emulate=True)

    def test_dspark_matches_reference(self):
        nx.QUANT = False
        cfg = tiny()
        layers = build(cfg, seed=3)
        st = layers[cfg.n_layers]
        torch.manual_seed(4)
        R = cfg.dspark_block_size
        x = torch.randn(2, 37, R, cfg.hidden_size)
        main_x = torch.randn(2, 37, cfg.hidden_size)
        with torch.no_grad():
            got = st.forward_dspark(x, main_x)
            ref = reference_dspark(st, x, main_x)
        self.assertTrue(torch.allclose(got, ref, atol=2e-5, rtol=1e-4),
                        f"max diff {(got - ref).abs().max()}")

    def test_topk_ties_go_to_lower_index(self):
        cfg = tiny()
        att = build(cfg)[1]
        T, nc = 9, 4
        vis = (torch.arange(T) + 1) // 2
        visible = torch.arange(nc).view(1, nc) < vis.view(T, 1)
        score = torch.zeros(1, T, nc)  # all tied
        _, ids = att._select(score, visible, vis, {})
        k = min(cfg.index_topk, nc)
        for t in range(T):
            want = list(range(min(k, int(vis[t]))))
            self.assertEqual([int(v) for v in ids[0, t] if v >= 0], want)

    def test_causal(self):
        cfg = tiny()
        layers = build(cfg, seed=5)
        torch.manual_seed(6)
        T = 40
        x = torch.randn(2, T, cfg.hidden_size)
        R = cfg.dspark_block_size
        xd = torch.randn(2, T, R, cfg.hidden_size)
        with torch.no_grad():
            base, _ = run_backbone(cfg, layers, x)
            dbase = layers[cfg.n_layers].forward_dspark(xd, x)
            for t in (0, 1, 2, 7, 16, 17, 25, 38):
                x2 = x.clone()
                x2[:, t + 1:] = torch.randn_like(x2[:, t + 1:])
                xd2 = xd.clone()
                xd2[:, t + 1:] = torch.randn_like(xd2[:, t + 1:])
                outs, _ = run_backbone(cfg, layers, x2)
                for i, (o1, o2) in enumerate(zip(base, outs)):
                    self.assertTrue(torch.equal(o1[:, : t + 1], o2[:, : t + 1]), (i, t))
                    if t + 1 < T:
                        self.assertFalse(torch.equal(o1[:, t + 1:], o2[:, t + 1:]), (i, t))
                d2 = layers[cfg.n_layers].forward_dspark(xd2, x2)
                self.assertTrue(torch.equal(dbase[:, : t + 1], d2[:, : t + 1]), ("dspark", t))

    def test_gradients_reach_every_parameter(self):
        cfg = tiny()
        layers = build(cfg, seed=7)
        torch.manual_seed(8)
        x = torch.randn(2, 33, cfg.hidden_size)
        outs, shared = run_backbone(cfg, layers, x)
        self.assertIn("indexer_kl", shared["aux"])
        kl = shared["aux"]["indexer_kl"]
        self.assertTrue(torch.isfinite(kl) and kl >= 0)
        loss = sum((o * torch.randn_like(o)).sum() for o in outs)
        xd = torch.randn(2, 33, cfg.dspark_block_size, cfg.hidden_size)
        d = layers[cfg.n_layers].forward_dspark(xd, x)
        loss = loss + (d * torch.randn_like(d)).sum() + kl
        loss.backward()
        for i, att in enumerate(layers):
            for n, p in att.named_parameters():
                self.assertIsNotNone(p.grad, f"layer {i} {n}")
                self.assertTrue(torch.isfinite(p.grad).all(), f"layer {i} {n}")
                self.assertGreater(float(p.grad.abs().sum()), 0.0, f"layer {i} {n}")

    def test_indexer_kl_trains_only_the_indexer(self):
        cfg = tiny()
        layers = build(cfg, seed=9)
        x = torch.randn(1, 20, cfg.hidden_size)
        _, shared = run_backbone(cfg, layers, x)
        shared["aux"]["indexer_kl"].backward()
        for i, att in enumerate(layers[: cfg.n_layers]):
            for n, p in att.named_parameters():
                moved = p.grad is not None and float(p.grad.abs().sum()) > 0
                if moved:
                    self.assertTrue(n.startswith("indexer."), f"layer {i} {n}")

    def test_parameter_names_and_shapes(self):
        cfg = tiny()
        layers = build(cfg)
        names = {n: tuple(p.shape) for n, p in layers[1].named_parameters()}
        self.assertEqual(names["wo_a.weight"], (128, 128))
        self.assertEqual(names["compressor.wgate.weight"], (64, 256))
        self.assertEqual(names["indexer.wk.weight"], (64, 64))
        n5 = {n for n, _ in layers[5].named_parameters()}
        self.assertIn("indexer.wq_b.weight", n5)
        self.assertNotIn("indexer.wk.weight", n5)
        self.assertNotIn("compressor.wkv.weight", n5)
        n4 = {n for n, _ in layers[4].named_parameters()}
        self.assertFalse(any(n.startswith(("indexer.", "compressor.")) for n in n4))


if __name__ == "__main__":
    unittest.main()
