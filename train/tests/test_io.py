"""Tests of v41.ckpt_io, v41.compact, export.py and `deepinfer unpack-model`.

Run from train/: /usr/bin/python3 -m unittest tests.test_io (CTest passes the binary in
DEEPINFER_BINARY; default build/release/deepinfer). Everything runs on a small config derived from
train/configs/v41-small.json (vocab 1024, dim 128: a 3 MB checkpoint), plus the v41-tiny-a
fixture; the real-size round trip of v41-small (150 MB) runs with DEEPINFER_IO_FULL=1.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.dirname(HERE)
REPO = os.path.dirname(TRAIN)
sys.path.insert(0, TRAIN)

from v41 import ckpt_io as io  # noqa: E402
from v41 import compact  # noqa: E402

FIXTURE = os.path.join(REPO, "..", "shared", "fixtures", "v41-tiny-a")
SMALL = os.path.join(TRAIN, "configs", "v41-small.json")
BINARY = os.environ.get("DEEPINFER_BIN", os.path.join(REPO, "build", "release", "deepinfer"))

torch.set_num_threads(1)


def run(*args, check=True):
    r = subprocess.run([BINARY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"deepinfer {' '.join(args)} failed ({r.returncode}):\n{r.stderr}")
    return r


def same_file(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def engram_rows(t):
    """Rows of each Engram table: the sum of its hash primes, (max_ngram - 1) * n_heads distinct
    primes per layer searched upward from engram_vocab_size (v41_model.md, engram.py)."""
    used, rows = set(), []
    for _ in t["engram_layer_ids"]:
        total = 0
        for _ in range((t["engram_max_ngram_size"] - 1) * t["engram_n_heads"]):
            p = t["engram_vocab_size"]
            while p in used or any(p % d == 0 for d in range(2, int(p ** 0.5) + 1)):
                p += 1
            used.add(p)
            total += p
        rows.append(total)
    return rows


def tiny_config(path):
    """v41-small at toy widths (the same layer roles, Engram, DSpark, MoE counts)."""
    with open(SMALL) as f:
        c = json.load(f)
    t = c["text_config"]
    t.update(vocab_size=1024, engram_compressed_vocab_size=700, dspark_noise_token_id=1000,
             engram_vocab_size=100, hidden_size=128, moe_intermediate_size=64, q_lora_rank=64,
             o_lora_rank=64)
    t["engram_num_embeddings"] = engram_rows(t)
    c["image_token_id"] = 1020
    with open(path, "w") as f:
        json.dump(c, f, indent=2)
    return path


def need_binary(test):
    return unittest.skipUnless(os.access(BINARY, os.X_OK) or "DEEPINFER_BIN" in os.environ,
                               f"{BINARY} not built")(test)


class Codecs(unittest.TestCase):
    def test_e4m3(self):
        codes = np.array([c for c in range(256) if c & 0x7F != 0x7F], dtype=np.uint8)
        np.testing.assert_array_equal(io.e4m3_encode(io.e4m3_decode(codes)), codes)
        x = np.array([232, 233, 240, 448, 449, 1e9, np.inf, -1e-9, 0.0, -0.0, 2.0**-10,
                      3 * 2.0**-11, 2.0**-6, np.nan], dtype=np.float32)
        # ties to even (232 -> 224, 2^-10 -> 0, 0.75 * 2^-9 -> 2^-9), saturation, signed zeros.
        np.testing.assert_array_equal(
            io.e4m3_encode(x), [0x76, 0x77, 0x77, 0x7E, 0x7E, 0x7E, 0x7E, 0x80, 0, 0x80, 0, 1, 8, 0x7F])
        self.assertEqual(io.e4m3_decode(np.uint8(0x7E)), 448.0)

    def test_e2m1_and_bf16(self):
        x = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, 7, -0.1, -0.0, -6], dtype=np.float32)
        np.testing.assert_array_equal(io.e2m1_encode(x), [0, 2, 2, 4, 4, 6, 6, 7, 8, 8, 15])
        b = io.bf16_encode(np.array([1.0, 1 + 2.0**-8, 1 + 3 * 2.0**-8, -2.5, np.nan], np.float32))
        np.testing.assert_array_equal(b[:4], [0x3F80, 0x3F80, 0x3F82, 0xC020])
        self.assertTrue(np.isnan(io.bf16_decode(b[4])))

    def test_block_exponents(self):
        np.testing.assert_array_equal(
            io.fp8_block_exponent(np.array([448, 224, 448.01, 0, 1e-30], np.float32)),
            [0, -1, 1, 0, -108])
        np.testing.assert_array_equal(
            io.mxfp4_block_exponent(np.array([6, 4, 3, 6.01, 0, 2.0**-130], np.float32)),
            [0, 0, -1, 1, 0, -127])

    def test_fp8_and_mxfp4_blocks(self):
        rng = np.random.default_rng(1)
        w = (rng.standard_normal((70, 96)) * 0.05).astype(np.float32)  # partial last row tile
        codes, s = io.fp8_encode(w, 32, 32)
        self.assertEqual(s.shape, (3, 3))
        d = io.fp8_decode(codes, s, 32, 32)
        for r in range(3):
            for c in range(3):
                tile = d[32 * r: 32 * r + 32, 32 * c: 32 * c + 32]
                m = np.abs(tile).max() / 2.0 ** (int(s[r, c]) - 127)
                self.assertTrue(224 <= m <= 448, m)  # tight scales
        np.testing.assert_allclose(d, w, rtol=0.07, atol=1e-6)
        # Odd column count: the last high nibble stays zero.
        w = rng.standard_normal((4, 33)).astype(np.float32)
        packed, s = io.mxfp4_encode(w)
        self.assertEqual((packed.shape, s.shape), ((4, 17), (4, 2)))
        self.assertTrue(np.all(packed.view(np.uint8)[:, -1] >> 4 == 0))
        d = io.mxfp4_decode(packed, s, 33)
        np.testing.assert_array_equal(io.mxfp4_decode(*io.mxfp4_encode(d), 33), d)
        step = 2.0 ** (s.astype(np.int64) - 127)  # the widest e2m1 gap is 2 steps (4 -> 6)
        self.assertTrue(np.all(np.abs(d - w) <= np.repeat(step, 32, 1)[:, :33] + 1e-12))

    def test_matches_the_trainer_qdq(self):
        """The exporter's rounding equals numerics' QAT weight QDQ (what the trainer trained)."""
        from v41 import numerics
        g = torch.Generator().manual_seed(5)
        w = torch.randn(96, 128, generator=g) * 0.03
        w[0:32, 0:32] = 0  # an all-zero tile / block
        ours = io.fp8_decode(*io.fp8_encode(w.numpy(), 32, 32), 32, 32)
        np.testing.assert_array_equal(ours, numerics._w_fp8_qdq_raw(w).numpy())
        ours = io.mxfp4_decode(*io.mxfp4_encode(w.numpy()), 128)
        np.testing.assert_array_equal(ours, numerics._w_mxfp4_qdq_raw(w).numpy())

    def test_scale_hints(self):
        """A block that a hinted scale represents exactly keeps it; others get the rule."""
        w = np.zeros((32, 64), np.float32)
        w[0, 0] = 224.0  # rule: scale 2^-1 (code 448); hint 2^0 (code 224) is exact as well
        w[0, 32] = 224.0
        codes, s = io.fp8_encode(w, 32, 32, hint=np.array([[127, 200]], np.uint8))
        np.testing.assert_array_equal(s, [[127, 126]])  # 2^73 cannot hold 224 exactly
        np.testing.assert_array_equal(io.fp8_decode(codes, s, 32, 32), w)


class Manifest(unittest.TestCase):
    def test_header_bytes_and_order_match_the_fixture(self):
        r = io.SafetensorsReader(os.path.join(FIXTURE, "model.safetensors"))
        expect = []
        for name, layout, shape in io.manifest(os.path.join(FIXTURE, "config.json")):
            st = io.encode_weight(name, layout, shape, np.zeros(shape, np.float32))
            expect += [(n, d, list(a.shape)) for n, d, a in st]
        self.assertEqual(expect, [(n, r.dtype(n), r.shape(n)) for n in r.names()])
        with open(os.path.join(FIXTURE, "model.safetensors"), "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            self.assertEqual(f.read(n), io.safetensors_header(expect))


class Fixture(unittest.TestCase):
    def test_load_and_reexport(self):
        st = io.load_released(FIXTURE)
        self.assertEqual(len(st), 263)  # 411 tensors less 148 scales
        self.assertFalse(any(n.endswith(".scale") for n in st))
        self.assertTrue(all(t.dtype == torch.float32 for t in st.values()))
        self.assertEqual(tuple(st["layers.0.attn.wo_a.weight"].shape), (128, 128))
        self.assertEqual(tuple(st["layers.0.ffn.experts.0.w2.weight"].shape), (256, 128))
        self.assertEqual(tuple(st["layers.1.engram.embed.weight"].shape), (864, 32))
        # One element of each kind, decoded by hand from the bytes.
        r = io.SafetensorsReader(os.path.join(FIXTURE, "model.safetensors"))
        q = r.raw("layers.2.attn.wq_b.weight")[40, 50]
        s = r.raw("layers.2.attn.wq_b.scale")[1, 1]
        self.assertEqual(float(st["layers.2.attn.wq_b.weight"][40, 50]),
                         float(io.E4M3_VALUES[q]) * 2.0 ** (int(s) - 127))
        b = int(r.raw("layers.0.ffn.experts.1.w3.weight").view(np.uint8)[5, 20])
        s = int(r.raw("layers.0.ffn.experts.1.w3.scale")[5, 1])
        self.assertEqual(float(st["layers.0.ffn.experts.1.w3.weight"][5, 41]),
                         float(io.E2M1_VALUES[b >> 4]) * 2.0 ** (s - 127))
        t = int(r.raw("layers.1.engram.embed.weight")[100, 5])
        s = int(r.raw("layers.1.engram.embed.scale")[100, 0])
        self.assertEqual(float(st["layers.1.engram.embed.weight"][100, 5]),
                         float(io.E4M3_VALUES[t]) * 2.0 ** (s - 127))
        e = int(r.raw("embed.weight")[7, 9])
        self.assertEqual(float(st["embed.weight"][7, 9]),
                         float(np.array([e << 16], np.uint32).view(np.float32)[0]))
        with tempfile.TemporaryDirectory() as d:
            io.export_released(st, os.path.join(FIXTURE, "config.json"), d,
                               engram_token_map=os.path.join(FIXTURE, "engram_token_map.json"))
            self.assertTrue(same_file(os.path.join(d, "model.safetensors"),
                                      os.path.join(FIXTURE, "model.safetensors")))
            self.assertTrue(same_file(os.path.join(d, "engram_token_map.json"),
                                      os.path.join(FIXTURE, "engram_token_map.json")))


@need_binary
class RoundTrip(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="v41_io_")
        cls.cfg = tiny_config(os.path.join(cls.tmp, "tiny.json"))
        cls.ckpt = os.path.join(cls.tmp, "random")
        run("make-checkpoint", "--config", cls.cfg, "--seed", "3", "--out", cls.ckpt, "--quiet",
            "--threads", "1")
        cls.cfg = os.path.join(cls.ckpt, "config.json")
        cls.map = os.path.join(cls.ckpt, "engram_token_map.json")
        cls.state = io.load_released(cls.ckpt)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def out(self, name):
        return os.path.join(self.tmp, name)

    def test_reexport_is_byte_identical_and_loads(self):
        io.export_released(self.state, self.cfg, self.out("re"), engram_token_map=self.map)
        for f in ("model.safetensors", "config.json", "engram_token_map.json"):
            self.assertTrue(same_file(os.path.join(self.ckpt, f), self.out("re/" + f)), f)
        r = run("inspect", "--model", self.out("re"))
        self.assertIn("validation  OK", r.stdout)

    def test_export_without_hints_keeps_every_value(self):
        """Without the read scales, ambiguous blocks get the rule's scale: other bytes, same values."""
        io.export_released(dict(self.state), self.cfg, self.out("nohint"), engram_token_map=self.map)
        back = io.load_released(self.out("nohint"))
        for n, t in self.state.items():
            self.assertTrue(torch.equal(back[n], t), n)
        run("inspect", "--model", self.out("nohint"))

    def tied_state(self, kept):
        st = io.ReleasedState(self.state)
        st.scale_hints = self.state.scale_hints
        k = torch.tensor(kept)
        for n in io.vocab_table_names(self.cfg):
            st[n] = torch.cat([self.state[n][k], self.state[n][3:4]], 0)  # row 3 is the tail row
        return st

    def test_compact_unpacks_to_the_direct_export(self):
        kept = sorted((4 + np.random.default_rng(2).choice(1020, 300, replace=False)).tolist())
        st = self.tied_state(kept)
        path = compact.write_compact(st, self.cfg, kept, self.out("compact"),
                                     engram_token_map=self.map)
        full = compact.expand_tied(st, kept, self.cfg)
        io.export_released(full, self.cfg, self.out("direct"), engram_token_map=self.map)
        r = run("unpack-model", "--compact", path, "--out", self.out("unpacked"))
        self.assertIn("300 kept ids", r.stdout)
        for f in ("model.safetensors", "config.json", "engram_token_map.json"):
            self.assertTrue(same_file(self.out("direct/" + f), self.out("unpacked/" + f)), f)
        run("inspect", "--model", self.out("unpacked"))
        with open(self.out("unpacked/dspark_draft_vocab.json")) as f:  # by default: the kept ids
            self.assertEqual(json.load(f)["ids"], kept)
        # A draft vocabulary shipped beside the compact file is copied as it is (after a check).
        shipped = {"ids": kept[:50], "source": "a test's choice"}
        with open(self.out("compact/dspark_draft_vocab.json"), "w") as f:
            json.dump(shipped, f)
        run("unpack-model", "--compact", path, "--out", self.out("unpacked2"))
        self.assertTrue(same_file(self.out("compact/dspark_draft_vocab.json"),
                                  self.out("unpacked2/dspark_draft_vocab.json")))
        with open(self.out("compact/dspark_draft_vocab.json"), "w") as f:
            json.dump({"ids": [3, 5000]}, f)  # outside the 1,024-id vocabulary: refused
        r = run("unpack-model", "--compact", path, "--out", self.out("unpacked3"), check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("dspark_draft_vocab.json", r.stderr)
        os.remove(self.out("compact/dspark_draft_vocab.json"))
        # The compact form reads back as the K + 1-row state; a tied V-row state compacts the same.
        back, kept2 = compact.load_compact(self.out("compact"))
        self.assertEqual(kept2, kept)
        for n in st:
            self.assertTrue(torch.equal(back[n], st[n]), n)
        tensors, _ = compact.compact_tensors(full, self.cfg, kept, self.state.scale_hints)
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            f.seek(8 + n)
            data = f.read()
        self.assertEqual(b"".join(a.tobytes() for _, _, a in tensors), data)

    def test_compact_errors(self):
        kept = [5, 9, 200]
        with self.assertRaises(ValueError):  # V rows that are not tied
            compact.write_compact(self.state, self.cfg, kept, self.out("bad"))
        with self.assertRaises(ValueError):
            compact.write_compact(self.tied_state(kept), self.cfg, [9, 5, 200], self.out("bad"))
        r = run("unpack-model", "--compact", os.path.join(self.ckpt, "model.safetensors"),
                "--out", self.out("bad2"), "--config", self.cfg, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not a compact model", r.stderr)
        # A compact file missing one tensor.
        tensors, meta = compact.compact_tensors(self.tied_state(kept), self.cfg, kept)
        os.makedirs(self.out("bad3"), exist_ok=True)
        io.write_safetensors(self.out("bad3/compact.safetensors"),
                             [t for t in tensors if t[0] != "norm.weight"], meta)
        shutil.copyfile(self.cfg, self.out("bad3/config.json"))
        r = run("unpack-model", "--compact", self.out("bad3/compact.safetensors"), "--out",
                self.out("bad3/out"), check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("norm.weight", r.stderr)

    def test_export_cli(self):
        """export.py on a trainer checkpoint: --out and --compact agree byte for byte."""
        kept = list(range(0, 1024, 3))
        st = self.tied_state(kept)
        trainer_ckpt = self.out("last.pt")
        model_state = {n: t.clone() for n, t in st.items()}
        have_model = True
        try:
            from v41.config import load_config
            from v41.model import V41Model
            model = V41Model(load_config(self.cfg), kept_ids=kept)
            model.load_released(self.state)
            model_state = model.state_dict()
            st = dict(model_state)
        except ImportError:
            have_model = False
        torch.save({"model": model_state, "kept_ids": kept, "config": self.cfg, "step": 1},
                   trainer_ckpt)
        sys.path.insert(0, TRAIN)
        import export
        export.main(["--checkpoint", trainer_ckpt, "--out", self.out("exp"), "--compact",
                     self.out("exp_compact")])
        run("unpack-model", "--compact", self.out("exp_compact/compact.safetensors"), "--out",
            self.out("exp_unpacked"))
        self.assertTrue(same_file(self.out("exp/model.safetensors"),
                                  self.out("exp_unpacked/model.safetensors")))
        run("inspect", "--model", self.out("exp"))
        if have_model:  # the map the model hashed with (here make-checkpoint's, beside the config)
            for d in ("exp", "exp_unpacked"):
                self.assertTrue(same_file(self.out(d + "/engram_token_map.json"), self.map), d)
        if have_model:
            # train.py --init-from: a fresh model takes the compact model's stored values exactly
            # (exported again, every tensor decodes to the same numbers).
            import train as trainer
            fresh = V41Model(load_config(self.cfg), kept_ids=kept, seed=7)
            trainer.init_from_model(fresh, self.out("exp_compact"))
            torch.save({"model": fresh.state_dict(), "kept_ids": kept, "config": self.cfg,
                        "step": 1}, self.out("again.pt"))
            export.main(["--checkpoint", self.out("again.pt"), "--compact",
                         self.out("again_compact")])
            first, _ = compact.load_compact(self.out("exp_compact"))
            again, _ = compact.load_compact(self.out("again_compact"))
            self.assertEqual(sorted(first), sorted(again))
            for n in first:
                self.assertTrue(torch.equal(first[n], again[n]), n)
            other = V41Model(load_config(self.cfg), kept_ids=kept[:-1])
            with self.assertRaises(SystemExit):  # kept ids missing one of the model's: refused
                trainer.init_from_model(other, self.out("exp_compact"))
        back = io.load_released(self.out("exp"))
        for n in io.vocab_table_names(self.cfg):
            want = torch.from_numpy(io.bf16_decode(io.bf16_encode(st[n].float().numpy())))
            self.assertTrue(torch.equal(back[n][torch.tensor(kept)], want[:len(kept)]), n)
            self.assertTrue(torch.equal(back[n][1], want[len(kept)]), n)  # id 1 is a tail id
        if have_model:
            self.check_dspark_only_run(kept)

    def check_dspark_only_run(self, kept):
        """train.py --train dspark from the compact model: two steps move the DSpark stage and
        leave every backbone tensor (and MoE gate bias) as it was."""
        data = self.out("ds_data")
        os.makedirs(data, exist_ok=True)
        rng = np.random.default_rng(0)
        stream = np.concatenate([np.r_[0, rng.choice(kept[1:], size=40)] for _ in range(30)]).astype("<u4")
        stream.tofile(os.path.join(data, "train.bin"))
        stream[:400].tofile(os.path.join(data, "val.bin"))
        with open(os.path.join(data, "kept_ids.json"), "w") as f:
            json.dump(kept, f)
        run_dir = self.out("ds_run")
        r = subprocess.run([sys.executable, os.path.join(TRAIN, "train.py"), "--config", self.cfg,
                            "--data", data, "--run", run_dir, "--init-from", self.out("exp_compact"),
                            "--init-step", "500", "--steps", "502", "--batch", "2", "--seq", "32",
                            "--threads", "1", "--train", "dspark", "--dspark-positions", "4",
                            "--eval-windows", "2", "--log-every", "1"],
                           capture_output=True, text=True, check=False)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        import train as trainer
        from v41.config import load_config
        from v41.model import V41Model
        before = V41Model(load_config(self.cfg), kept_ids=kept, seed=7)
        trainer.init_from_model(before, self.out("exp_compact"))
        after = torch.load(os.path.join(run_dir, "last.pt"))
        self.assertEqual(after["step"], 502)
        moved = []
        for name, t in before.state_dict().items():
            if name.startswith("mtp."):
                moved.append(not torch.equal(t, after["model"][name]))
            else:
                self.assertTrue(torch.equal(t, after["model"][name]), name)
        self.assertTrue(any(moved))


@need_binary
class FullSize(unittest.TestCase):
    def test_v41_small(self):
        with tempfile.TemporaryDirectory() as d:
            run("make-checkpoint", "--config", SMALL, "--seed", "1", "--out", d + "/x", "--quiet")
            st = io.load_released(d + "/x")
            io.export_released(st, d + "/x/config.json", d + "/y")
            self.assertTrue(same_file(d + "/x/model.safetensors", d + "/y/model.safetensors"))
            kept = sorted(np.random.default_rng(0).choice(129280, 24000, replace=False).tolist())
            tied = io.ReleasedState(st)
            for n in io.vocab_table_names(SMALL):
                tied[n] = torch.cat([st[n][torch.tensor(kept)], st[n][:1]], 0)
            path = compact.write_compact(tied, SMALL, kept, d + "/c", scale_hints=st.scale_hints)
            print(f"\ncompact.safetensors for v41-small, K=24000: {os.path.getsize(path)} bytes")
            self.assertLess(os.path.getsize(path), 60e6)
            run("unpack-model", "--compact", path, "--out", d + "/u")
            io.export_released(compact.expand_tied(tied, kept, SMALL), SMALL, d + "/z",
                               scale_hints=st.scale_hints)
            self.assertTrue(same_file(d + "/u/model.safetensors", d + "/z/model.safetensors"))


if __name__ == "__main__":
    unittest.main()
