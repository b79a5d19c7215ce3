"""Released-format checkpoint IO for the trainer: safetensors, FP8 / MXFP4 / BF16 codecs, manifest.

`load_released(dir)` reads a checkpoint folder as `deepinfer` does and returns every weight as a
float32 torch tensor under its release name, dequantized (the `.scale` tensors are folded in and
dropped; `wo_a` is dequantized like every other FP8 weight).

`export_released(state, config_json_path, out_dir, engram_token_map=None)` is the inverse: it
writes `config.json` (a byte copy) and `model.safetensors` exactly as `deepinfer make-checkpoint`
lays them out (src/model/deepseek_v41/weight_manifest.cc for names, order, dtypes and shapes;
src/io/safetensors_writer.cc for the header bytes), plus `engram_token_map.json` when given.

Encoding rules (those of make-checkpoint, random_checkpoint.cc, where it quantizes):
  * BF16: round to nearest, ties to even (NaN stays a quiet NaN).
  * FP8 dense (32x32 tiles) and the Engram table (32 columns of a row): scale 2^e with
    e = ceil(log2(amax / 448)) (amax / 448 a float32 division, e clamped to [-127, 127]; an
    all-zero block gets e = 0), values x * 2^-e rounded to e4m3, ties to even, saturating.
  * MXFP4 experts: per 32 inputs of a row the smallest 2^e with amax <= 6 * 2^e (all-zero: e = 0),
    values rounded to e2m1, ties to the even code, the sign kept (-0 -> code 8); element 2j in the
    low nibble of byte j.
  * Scale byte: e + 127 (F8_E8M0).

Round trips. Several (scale, codes) pairs decode to the same numbers (a 32x32 tile whose largest
code is 224 at scale 2^e equals the tile with largest code 448 at scale 2^(e-1); make-checkpoint
writes both kinds, and its MXFP4 experts are random codes under random scales). So that
re-exporting a loaded checkpoint is byte-identical, `load_released` remembers the scale bytes it
read (`state.scale_hints`, also returned by `load_released_with_scales`), and export uses a hinted
scale for every block that it represents exactly (encode + decode gives back the same float32
bits); other blocks (e.g. weights changed by training) get the rule above.

Only numpy and torch (1.13, which has no float8 dtypes: every codec here works on bit patterns).
"""

import json
import os
import shutil

import numpy as np
import torch

from .config import load_config

# --- safetensors ---------------------------------------------------------------------------------

_NP_DTYPES = {
    "BF16": np.uint16,  # raw bit patterns
    "F16": np.float16,
    "F32": np.float32,
    "F64": np.float64,
    "F8_E4M3": np.uint8,
    "F8_E8M0": np.uint8,
    "I8": np.int8,
    "U8": np.uint8,
    "I16": np.int16,
    "I32": np.int32,
    "I64": np.int64,
    "U16": np.uint16,
    "U32": np.uint32,
    "U64": np.uint64,
    "BOOL": np.uint8,
}


def dtype_size(name):
    return np.dtype(_NP_DTYPES[name]).itemsize


class SafetensorsReader:
    """One .safetensors file, memory-mapped. `raw(name)` is a numpy view of the stored bytes in
    the dtype's container (BF16 as uint16 bit patterns, F8 as uint8, I8 as int8)."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(n).decode("utf-8"))
        self.data_offset = 8 + n
        self.metadata = header.pop("__metadata__", None) or {}
        # Tensors in file (data) order.
        self.entries = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])
        self.info = dict(self.entries)
        self._map = np.memmap(path, dtype=np.uint8, mode="r") if os.path.getsize(path) > 0 else None

    def names(self):
        return [k for k, _ in self.entries]

    def dtype(self, name):
        return self.info[name]["dtype"]

    def shape(self, name):
        return list(self.info[name]["shape"])

    def raw(self, name):
        t = self.info[name]
        b, e = t["data_offsets"]
        buf = self._map[self.data_offset + b: self.data_offset + e]
        return buf.view(_NP_DTYPES[t["dtype"]]).reshape(t["shape"])


def safetensors_header(entries, metadata=None):
    """The JSON header bytes `deepinfer`'s writer produces (io/safetensors_writer.cc): compact
    JSON, metadata first, tensors in the given order, padded with spaces so that 8 + N % 8 == 0.
    `entries`: (name, dtype, shape) in data order."""
    if metadata is None:
        metadata = {"format": "pt"}
    parts = []
    if metadata:
        parts.append('"__metadata__":' + json.dumps(dict(sorted(metadata.items())),
                                                    separators=(",", ":"), ensure_ascii=False))
    offset = 0
    seen = set()
    for name, dtype, shape in entries:
        if not name or name == "__metadata__" or name in seen:
            raise ValueError(f"safetensors writer: bad or duplicate tensor name {name!r}")
        seen.add(name)
        n = dtype_size(dtype)
        for d in shape:
            if d < 0:
                raise ValueError(f"safetensors writer: {name} has a negative dimension")
            n *= int(d)
        parts.append(json.dumps(name, ensure_ascii=False) + ':{"dtype":"' + dtype + '","shape":[' +
                     ",".join(str(int(d)) for d in shape) + '],"data_offsets":[' + str(offset) +
                     "," + str(offset + n) + "]}")
        offset += n
    h = ("{" + ",".join(parts) + "}").encode("utf-8")
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    return h


def write_safetensors(path, tensors, metadata=None):
    """Writes `tensors` [(name, dtype, ndarray)] in order (each array's bytes as stored, C order),
    through "<path>.tmp" and a rename, as the engine's writer does."""
    entries = [(n, d, list(a.shape)) for n, d, a in tensors]
    for n, d, a in tensors:
        if a.dtype.itemsize != dtype_size(d):
            raise ValueError(f"{n}: array dtype {a.dtype} does not hold {d}")
    header = safetensors_header(entries, metadata)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(len(header).to_bytes(8, "little"))
        f.write(header)
        for _, _, a in tensors:
            f.write(np.ascontiguousarray(a).tobytes())
    os.replace(tmp, path)


def _remove_checkpoint_files(out_dir):
    """An earlier checkpoint in out_dir (model.safetensors, shards, index), as the engine's writer."""
    for f in os.listdir(out_dir):
        if (f == "model.safetensors" or f == "model.safetensors.index.json" or
                (f.startswith("model-") and f.endswith(".safetensors") and "-of-" in f)):
            os.remove(os.path.join(out_dir, f))


def open_checkpoint(path):
    """A folder (model.safetensors, or shards + model.safetensors.index.json) or one file:
    returns {tensor name: SafetensorsReader} in file order."""
    if os.path.isfile(path):
        r = SafetensorsReader(path)
        return {n: r for n in r.names()}
    single = os.path.join(path, "model.safetensors")
    if os.path.exists(single):
        r = SafetensorsReader(single)
        return {n: r for n in r.names()}
    index = os.path.join(path, "model.safetensors.index.json")
    if not os.path.exists(index):
        raise FileNotFoundError(f"{path}: no model.safetensors or model.safetensors.index.json")
    with open(index) as f:
        weight_map = json.load(f)["weight_map"]
    readers = {}
    out = {}
    for fname in sorted(set(weight_map.values())):
        readers[fname] = SafetensorsReader(os.path.join(path, fname))
        for n in readers[fname].names():
            out[n] = readers[fname]
    return out


# --- codecs --------------------------------------------------------------------------------------

def bf16_encode(x):
    """float32 array -> uint16 bf16 bit patterns, round to nearest even; NaN stays a quiet NaN."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    nan = (u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    r = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
    r = np.where(nan, (u >> np.uint32(16)) | np.uint32(0x0040), r)
    return r.astype(np.uint16)


def bf16_decode(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << np.uint32(16)).view(np.float32)


def _e4m3_table():
    t = np.zeros(256, dtype=np.float32)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        exp = (code >> 3) & 0xF
        man = code & 7
        if exp == 0xF and man == 7:
            t[code] = np.nan
        elif exp == 0:
            t[code] = sign * man * 2.0 ** -9
        else:
            t[code] = sign * (1 + man / 8.0) * 2.0 ** (exp - 7)
    return t


E4M3_VALUES = _e4m3_table()  # code -> float32 (0x80 is -0.0)
E2M1_VALUES = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6],
                       dtype=np.float32)


def e4m3_encode(x):
    """float32 -> e4m3fn codes (uint8): nearest, ties to even, saturating at +-448, NaN -> 0x7F
    with its sign, the sign of zero kept (core/e4m3.h FloatToE4m3)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    sign = ((u >> np.uint32(24)) & np.uint32(0x80)).astype(np.uint8)
    a = u & np.uint32(0x7FFFFFFF)
    # Subnormal grid of 2^-9 below 2^-6 (exact power-of-two scaling, RNE).
    small = np.where(a < np.uint32(0x3C800000), a, np.uint32(0))
    sub = np.rint(small.view(np.float32) * np.float32(512.0)).astype(np.uint8)
    # Normal: round the mantissa to 3 bits, ties to even; a carry bumps the exponent.
    r = (a + np.uint32(0x7FFFF) + ((a >> np.uint32(20)) & np.uint32(1))) & np.uint32(0xFFF00000)
    exp = (r >> np.uint32(23)).astype(np.int64) - 120
    normal = ((np.clip(exp, 0, 15) << 3) | ((r >> np.uint32(20)) & np.uint32(7))).astype(np.uint8)
    code = np.where(a < np.uint32(0x3C800000), sub, normal)
    code = np.where((a >= np.uint32(0x43E00000)) | (r > np.uint32(0x43E00000)), np.uint8(0x7E), code)
    code = np.where(a > np.uint32(0x7F800000), np.uint8(0x7F), code)
    return (code | sign).astype(np.uint8)


def e4m3_decode(codes):
    return E4M3_VALUES[np.asarray(codes, dtype=np.uint8)]


def e2m1_encode(x):
    """float32 -> e2m1 nibbles (bit 3 sign): saturating at 6, nearest, ties to the even code,
    the sign kept (-0.1 -> 0x8); NaN -> 0 (core/e2m1.h FloatToE2m1)."""
    x = np.asarray(x, dtype=np.float32)
    neg = np.signbit(x) & ~np.isnan(x)
    a = np.abs(x)
    code = np.zeros(x.shape, dtype=np.uint8)
    code = np.where(a > 0.25, 1, code)
    code = np.where(a >= 0.75, 2, code)
    code = np.where(a > 1.25, 3, code)
    code = np.where(a >= 1.75, 4, code)
    code = np.where(a > 2.5, 5, code)
    code = np.where(a >= 3.5, 6, code)
    code = np.where(a > 5.0, 7, code)
    code = np.where(np.isnan(x), 0, code)
    return (code | np.where(neg, 8, 0)).astype(np.uint8)


def e2m1_decode(nibbles):
    return E2M1_VALUES[np.asarray(nibbles, dtype=np.uint8) & 0xF]


def e8m0_decode(codes):
    """Scale bytes -> float32 2^(b-127) (b = 0 is 2^-127, a float32 subnormal; 255 -> NaN)."""
    c = np.asarray(codes, dtype=np.uint8).astype(np.int64)
    v = np.ldexp(np.ones(c.shape, dtype=np.float64), c - 127).astype(np.float32)
    return np.where(c == 255, np.float32(np.nan), v)


def pow2(e):
    """2^e as float32 for integer exponents in [-149, 127] (exact)."""
    return np.ldexp(np.ones(np.shape(e), dtype=np.float64), np.asarray(e, dtype=np.int64)).astype(
        np.float32)


def fp8_block_exponent(amax):
    """make-checkpoint's TileExponent: e = ceil(log2(amax / 448)) with amax / 448 a float32
    division; 0 for all-zero (or NaN) blocks; clamped to [-127, 127]."""
    amax = np.asarray(amax, dtype=np.float32)
    q = amax / np.float32(448.0)
    m, e2 = np.frexp(q)
    e = np.where(m == np.float32(0.5), e2 - 1, e2).astype(np.int64)
    e = np.where(amax > 0, e, 0)
    return np.clip(e, -127, 127)


def mxfp4_block_exponent(amax):
    """The smallest e with amax <= 6 * 2^e (exact, no division); 0 for all-zero (or NaN) blocks;
    clamped to [-127, 127]."""
    amax = np.asarray(amax, dtype=np.float32)
    m, e2 = np.frexp(amax)  # amax = m * 2^e2, m in [0.5, 1)
    e = np.where(m <= np.float32(0.75), e2 - 3, e2 - 2).astype(np.int64)
    e = np.where(amax > 0, e, 0)
    return np.clip(e, -127, 127)


def _pad2(x, rows, cols):
    r, c = x.shape
    if r == rows and c == cols:
        return x
    out = np.zeros((rows, cols), dtype=x.dtype)
    out[:r, :c] = x
    return out


def _blocks(x, br, bc):
    """[R, C] -> [R/br, br, C/bc, bc] after zero padding."""
    r, c = x.shape
    tr, tc = -(-r // br), -(-c // bc)
    return _pad2(x, tr * br, tc * bc).reshape(tr, br, tc, bc)


def _expand(s, br, bc, shape):
    """Per-block [tr, tc] -> per-element [R, C]."""
    return np.repeat(np.repeat(s, br, axis=0), bc, axis=1)[: shape[0], : shape[1]]


def _choose_exponents(x, br, bc, rule, encode, decode, hint):
    """Per block exponent: the hint's (scale byte - 127) where it represents the block exactly,
    else rule(amax)."""
    blocks = _blocks(x, br, bc)
    amax = np.abs(blocks).max(axis=(1, 3))
    e = rule(amax)
    if hint is not None:
        hint = np.asarray(hint, dtype=np.uint8)
        if hint.shape == e.shape and hint.size:
            eh = hint.astype(np.int64) - 127
            ok_range = (hint != 255)
            eh = np.where(ok_range, eh, e)
            full = _expand(eh, br, bc, x.shape)
            with np.errstate(over="ignore", invalid="ignore"):
                codes = encode(x * pow2(-full))
                back = decode(codes) * pow2(full)
            same = back.view(np.uint32) == np.ascontiguousarray(x).view(np.uint32)
            exact = _blocks(same, br, bc).all(axis=(1, 3)) & ok_range
            e = np.where(exact, eh, e)
    return e


def fp8_encode(w, br, bc, hint=None):
    """[R, C] float32 -> (e4m3 codes [R, C] uint8, scale bytes [ceil(R/br), ceil(C/bc)] uint8).
    br = bc = 32: dense tiles; br = 1, bc = 32: the Engram table."""
    w = np.ascontiguousarray(w, dtype=np.float32)
    e = _choose_exponents(w, br, bc, fp8_block_exponent, e4m3_encode, e4m3_decode, hint)
    codes = e4m3_encode(w * pow2(-_expand(e, br, bc, w.shape)))
    return codes, (e + 127).astype(np.uint8)


def fp8_decode(codes, scales, br, bc):
    codes = np.asarray(codes, dtype=np.uint8)
    return e4m3_decode(codes) * _expand(e8m0_decode(scales), br, bc, codes.shape)


def mxfp4_encode(w, hint=None):
    """[R, C] float32 -> (packed bytes [R, ceil(C/2)] int8, scale bytes [R, ceil(C/32)] uint8)."""
    w = np.ascontiguousarray(w, dtype=np.float32)
    e = _choose_exponents(w, 1, 32, mxfp4_block_exponent, e2m1_encode, e2m1_decode, hint)
    nib = e2m1_encode(w * pow2(-_expand(e, 1, 32, w.shape)))
    r, c = nib.shape
    if c % 2:
        nib = np.concatenate([nib, np.zeros((r, 1), dtype=np.uint8)], axis=1)
    packed = (nib[:, 0::2] | (nib[:, 1::2] << 4)).astype(np.uint8)
    return packed.view(np.int8), (e + 127).astype(np.uint8)


def mxfp4_decode(packed, scales, cols=None):
    p = np.asarray(packed).view(np.uint8)
    r, half = p.shape
    nib = np.empty((r, 2 * half), dtype=np.uint8)
    nib[:, 0::2] = p & 0xF
    nib[:, 1::2] = p >> 4
    if cols is not None:
        nib = nib[:, :cols]
    return e2m1_decode(nib) * _expand(e8m0_decode(scales), 1, 32, nib.shape)


# --- the manifest --------------------------------------------------------------------------------

BF16, F32, FP8_TILE, MXFP4, FP8_ROW = "bf16", "f32", "fp8-tile32", "mxfp4", "fp8-row32"


def read_config(path):
    """(text config dict, top-level dict) of an HF config.json (composite or flat)."""
    with open(path) as f:
        top = json.load(f)
    text = top.get("text_config", top)
    if "hidden_size" not in text:
        raise ValueError(f"{path}: not a Hugging Face config.json (no hidden_size)")
    return text, top


def manifest(config_json_path):
    """The logical weights of the checkpoint, in file order: [(name, layout, shape)], shape the
    logical [out, in] (an MXFP4 `in` counts elements). Mirrors ExpectedWeights (weight_manifest.cc)
    and BuildLayerDescriptors (layer_descriptor.cc)."""
    t, top = read_config(config_json_path)
    roles = load_config(config_json_path).roles  # which layers own compressors and indexers
    q = top.get("quantization_config", t.get("quantization_config"))
    if q is None:
        dense, expert, table = BF16, BF16, BF16
    else:
        dense, table = FP8_TILE, FP8_ROW
        ed = q.get("expert_dtype", "fp4")
        expert = {"fp4": MXFP4, "fp8": FP8_TILE, None: FP8_TILE}[ed]
    V, dim = t["vocab_size"], t["hidden_size"]
    n_layers = t["num_hidden_layers"]
    n_mtp = t.get("num_nextn_predict_layers", 0)
    n_stages = n_mtp if (n_mtp > 0 and t.get("dspark_block_size", 0) > 0) else 0
    engram_ids = t.get("engram_layer_ids") or []
    hc = t["hc_mult"]
    mix = (2 + hc) * hc
    H, hd = t["num_attention_heads"], t["head_dim"]
    qr, og, orank = t["q_lora_rank"], t["o_groups"], t["o_lora_rank"]
    inter = t["moe_intermediate_size"]
    out = []

    def add(name, layout, shape):
        out.append((name, layout, [int(s) for s in shape]))

    def block(i):
        is_mtp = i >= n_layers
        stage = i - n_layers
        p = (f"mtp.{stage}." if is_mtp else f"layers.{i}.")
        owns, pools = roles[i].owns_compressor, roles[i].compressor_pools
        has_indexer = roles[i].has_indexer
        for k in ("hc_attn_fn", "hc_ffn_fn"):
            add(p + k, F32, [mix, hc * dim])
        for k in ("hc_attn_base", "hc_ffn_base"):
            add(p + k, F32, [mix])
        for k in ("hc_attn_scale", "hc_ffn_scale"):
            add(p + k, F32, [3])
        add(p + "attn.attn_sink", F32, [H])
        add(p + "attn.wq_a.weight", dense, [qr, dim])
        add(p + "attn.q_norm.weight", BF16, [qr])
        add(p + "attn.wq_b.weight", dense, [H * hd, qr])
        add(p + "attn.wkv.weight", dense, [hd, dim])
        add(p + "attn.kv_norm.weight", BF16, [hd])
        add(p + "attn.wo_a.weight", dense, [og * orank, H * hd // og])
        add(p + "attn.wo_b.weight", dense, [dim, og * orank])
        if owns:
            add(p + "attn.compressor.norm.weight", BF16, [hd])
            add(p + "attn.compressor.wkv.weight", BF16, [hd, dim])
            if pools:
                add(p + "attn.compressor.wgate.weight", BF16, [hd, dim])
        if has_indexer:
            add(p + "attn.indexer.wq_b.weight", dense, [t["index_n_heads"] * t["index_head_dim"], qr])
            add(p + "attn.indexer.weights_proj.weight", BF16, [t["index_n_heads"], dim])
        if owns:
            add(p + "attn.indexer.wk.weight", BF16, [t["index_head_dim"], hd])
            add(p + "attn.indexer.k_norm.weight", BF16, [t["index_head_dim"]])
        n_exp = t["n_routed_experts"]
        if is_mtp and t.get("dspark_n_routed_experts", 0):
            n_exp = t["dspark_n_routed_experts"]
        add(p + "ffn.gate.weight", BF16, [n_exp, dim])
        add(p + "ffn.gate.bias", F32, [n_exp])
        for e in range(n_exp):
            add(p + f"ffn.experts.{e}.w1.weight", expert, [inter, dim])
            add(p + f"ffn.experts.{e}.w2.weight", expert, [dim, inter])
            add(p + f"ffn.experts.{e}.w3.weight", expert, [inter, dim])
        if t["n_shared_experts"] > 0:
            sh = inter * t["n_shared_experts"]
            add(p + "ffn.shared_experts.w1.weight", dense, [sh, dim])
            add(p + "ffn.shared_experts.w2.weight", dense, [dim, sh])
            add(p + "ffn.shared_experts.w3.weight", dense, [sh, dim])
        if not is_mtp and i in engram_ids:
            rows = t["engram_num_embeddings"][engram_ids.index(i)]
            ein = t["engram_n_heads"] * t["engram_head_dim"] * (t["engram_max_ngram_size"] - 1)
            add(p + "engram.q_weight", BF16, [hc, dim])
            add(p + "engram.k_weight", BF16, [hc, dim])
            add(p + "engram.embed.weight", table, [rows, t["engram_head_dim"]])
            add(p + "engram.wkv.weight", dense, [(hc + 1) * dim, ein])
        add(p + "attn_norm.weight", BF16, [dim])
        add(p + "ffn_norm.weight", BF16, [dim])
        if is_mtp and stage == 0:
            add(p + "main_proj.weight", dense, [dim, len(t["dspark_target_layer_ids"]) * dim])
            add(p + "main_norm.weight", BF16, [dim])
        if is_mtp and stage == n_stages - 1:
            rank = t.get("dspark_markov_rank", 0)
            add(p + "norm.weight", BF16, [dim])
            add(p + "markov_head.embed.weight", BF16, [V, rank])
            add(p + "markov_head.head.weight", BF16, [V, rank])
            add(p + "confidence_head.proj.weight", BF16, [1, dim + rank])

    add("embed.weight", BF16, [V, dim])
    for i in range(n_layers):
        block(i)
    add("norm.weight", BF16, [dim])
    add("head.weight", BF16, [V, dim])
    for i in range(n_layers, n_layers + n_stages):
        block(i)
    return out


def scale_name(name):
    assert name.endswith(".weight"), name
    return name[: -len("weight")] + "scale"


def vocab_table_names(config_json_path):
    """The [V, ...] tables the tied tail vocabulary shares rows of: embed, head and the last DSpark
    stage's Markov embed/head."""
    return [n for n, _, shape in manifest(config_json_path)
            if n in ("embed.weight", "head.weight") or n.endswith(".markov_head.embed.weight") or
            n.endswith(".markov_head.head.weight")]


# --- encode / decode whole checkpoints -----------------------------------------------------------

def _np32(x):
    if isinstance(x, torch.Tensor):
        x = x.detach().to(torch.float32).cpu().numpy()
    return np.ascontiguousarray(x, dtype=np.float32)


def encode_weight(name, layout, shape, value, hints=None):
    """One logical weight -> [(tensor name, dtype, ndarray as stored)] (value, then scale)."""
    hints = hints or {}
    x = _np32(value)
    want = tuple(shape) if len(shape) != 1 else (shape[0],)
    if tuple(x.shape) != want:
        raise ValueError(f"{name}: shape {list(x.shape)}, the config wants {list(shape)}")
    if layout == BF16:
        return [(name, "BF16", bf16_encode(x))]
    if layout == F32:
        return [(name, "F32", x)]
    sname = scale_name(name)
    hint = hints.get(sname)
    if layout == FP8_TILE:
        codes, s = fp8_encode(x, 32, 32, hint)
        return [(name, "F8_E4M3", codes), (sname, "F8_E8M0", s)]
    if layout == FP8_ROW:
        codes, s = fp8_encode(x, 1, 32, hint)
        return [(name, "F8_E4M3", codes), (sname, "F8_E8M0", s)]
    if layout == MXFP4:
        packed, s = mxfp4_encode(x, hint)
        return [(name, "I8", packed), (sname, "F8_E8M0", s)]
    raise ValueError(f"{name}: unknown layout {layout}")


def encode_released(state, config_json_path, scale_hints=None, row_counts=None):
    """Every tensor of the released checkpoint for `state`, in file order:
    [(name, dtype, ndarray as stored)]. `row_counts` {name: rows} lets chosen [V, ...] tables
    have another row count (the compact form's K + 1)."""
    if scale_hints is None:
        scale_hints = getattr(state, "scale_hints", None)
    out = []
    missing = []
    for name, layout, shape in manifest(config_json_path):
        if name not in state:
            missing.append(name)
            continue
        if row_counts and name in row_counts:
            shape = [row_counts[name]] + shape[1:]
        out.extend(encode_weight(name, layout, shape, state[name], scale_hints))
    if missing:
        raise KeyError(f"state lacks {len(missing)} release tensors: {missing[:10]}")
    return out


def write_engram_token_map(path, token_map):
    """`token_map`: a path (copied byte for byte) or {"compressed_vocab_size": N, "map": [...]},
    written in make-checkpoint's format (random_checkpoint.cc WriteEngramTokenMap)."""
    if isinstance(token_map, (str, os.PathLike)):
        if os.path.abspath(token_map) != os.path.abspath(path):
            shutil.copyfile(token_map, path)
        return
    n = int(token_map["compressed_vocab_size"])
    m = [int(v) for v in token_map["map"]]
    with open(path + ".tmp", "w") as f:
        f.write('{\n  "compressed_vocab_size": ' + str(n) + ',\n  "map": [' +
                ", ".join(map(str, m)) + "]\n}\n")
    os.replace(path + ".tmp", path)


def export_released(state, config_json_path, out_dir, engram_token_map=None, scale_hints=None):
    """Writes out_dir/config.json (byte copy), out_dir/model.safetensors in the released layout
    and, when given, out_dir/engram_token_map.json. `state`: {release name: tensor} with full
    [V, ...] vocabulary tables (extra keys are ignored). Returns the model.safetensors path."""
    os.makedirs(out_dir, exist_ok=True)
    tensors = encode_released(state, config_json_path, scale_hints)
    cfg_out = os.path.join(out_dir, "config.json")
    if os.path.abspath(config_json_path) != os.path.abspath(cfg_out):
        shutil.copyfile(config_json_path, cfg_out)
    _remove_checkpoint_files(out_dir)
    path = os.path.join(out_dir, "model.safetensors")
    write_safetensors(path, tensors)
    if engram_token_map is not None:
        write_engram_token_map(os.path.join(out_dir, "engram_token_map.json"), engram_token_map)
    return path


class ReleasedState(dict):
    """{name: float32 tensor}; `scale_hints` {scale tensor name: uint8 array} as read."""
    scale_hints = None


def decode_tensors(get, names, dtypes, shapes, logical_cols=None):
    """Decodes stored tensors: `get(name)` -> raw ndarray. Returns ({name: float32 ndarray},
    {scale name: uint8 array}). Quantized weights are recognised by a `.scale` partner:
    F8_E4M3 with scale rows ceil(R/32) = 32x32 tiles, with R rows = per 32 columns of a row;
    I8 = MXFP4 nibble pairs."""
    logical_cols = logical_cols or {}
    out, hints = {}, {}
    nameset = set(names)
    for name in names:
        dt, shape = dtypes[name], shapes[name]
        if name.endswith(".scale") and name[: -len("scale")] + "weight" in nameset:
            continue
        sname = scale_name(name) if name.endswith(".weight") else None
        raw = get(name)
        if sname in nameset and dt in ("F8_E4M3", "I8"):
            s = np.array(get(sname), dtype=np.uint8)
            hints[sname] = s
            if dt == "I8":
                x = mxfp4_decode(raw, s, logical_cols.get(name))
            else:
                R = shape[0]
                if s.shape[0] == -(-R // 32) and R != 1:
                    x = fp8_decode(raw, s, 32, 32)
                elif s.shape[0] == R:
                    x = fp8_decode(raw, s, 1, 32)
                else:
                    raise ValueError(f"{name}: scale shape {list(s.shape)} fits no layout")
        elif dt == "BF16":
            x = bf16_decode(raw)
        elif dt == "F8_E4M3":
            x = e4m3_decode(raw)
        elif dt in ("F32", "F16", "F64"):
            x = np.array(raw, dtype=np.float32)
        else:
            x = np.asarray(raw).astype(np.float32)
        out[name] = np.ascontiguousarray(x if sname in hints else x.reshape(shape))
    return out, hints


def load_released_with_scales(path):
    """(state {name: float32 tensor}, scale hints {scale name: uint8 ndarray}) of a checkpoint
    folder (one file or shards) or a .safetensors file."""
    files = open_checkpoint(path)
    names = list(files)
    dtypes = {n: files[n].dtype(n) for n in names}
    shapes = {n: files[n].shape(n) for n in names}
    logical = {}
    cfg = os.path.join(path, "config.json") if os.path.isdir(path) else None
    if cfg and os.path.exists(cfg):
        try:
            logical = {n: s[1] for n, lay, s in manifest(cfg) if lay == MXFP4}
        except (KeyError, ValueError):
            logical = {}
    arrays, hints = decode_tensors(lambda n: files[n].raw(n), names, dtypes, shapes, logical)
    state = ReleasedState((n, torch.from_numpy(a)) for n, a in arrays.items())
    state.scale_hints = hints
    return state, hints


def load_released(path):
    """{release name: float32 tensor}, dequantized, `.scale` tensors folded in and dropped.
    The result also carries `.scale_hints` (see the module docstring)."""
    return load_released_with_scales(path)[0]
