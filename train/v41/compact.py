"""The compact form of a trained model, for shipping in git (issue 24 item 2).

The trainer ties every rare token id to one shared row of the vocabulary tables (train/README.md,
"Tied tail vocabulary"): with K kept ids, `embed.weight`, `head.weight` and the last DSpark
stage's `markov_head.{embed,head}.weight` hold K + 1 rows, row K standing for every other id. The
released checkpoint repeats that shared row for all V - K tail ids; the compact form does not.

`models/<name>/compact.safetensors` holds every tensor of the released checkpoint already in its
on-disk dtype and bytes (the same encoder as `ckpt_io.export_released`, so the same scales and
codes), in the released order, except that the vocabulary tables are stored with only their
K + 1 rows, followed by `kept_ids` (I32 [K], strictly increasing token ids). Header metadata:

  format        "deepinfer-compact"
  version       "1"
  vocab_size    V, decimal
  tied_tables   the comma-separated names of the [K + 1, ...] tables

Beside it: `config.json` (the model's) and `engram_token_map.json` when the model needs one.
`deepinfer unpack-model --compact FILE --out DIR` (src/tools/compact_model.cc, C++: the product
must not need Python) expands it into the released `model.safetensors`, byte-identical to
`export_released(expand_tied(state, kept_ids), ...)`: token t gets row kept_ids.index(t), or row
K when t is not kept.
"""

import os
import shutil

import numpy as np
import torch

from . import ckpt_io

FORMAT = "deepinfer-compact"
VERSION = "1"
FILE_NAME = "compact.safetensors"


def check_kept_ids(kept_ids, vocab_size):
    k = np.asarray(kept_ids, dtype=np.int64).reshape(-1)
    if k.size and (k[0] < 0 or k[-1] >= vocab_size or np.any(np.diff(k) <= 0)):
        raise ValueError(f"kept_ids must be strictly increasing ids in [0, {vocab_size})")
    return k


def vocab_map(kept_ids, vocab_size):
    """LongTensor-like int64 [V]: token id -> row (kept ids their index, all others K)."""
    k = check_kept_ids(kept_ids, vocab_size)
    m = np.full(vocab_size, k.size, dtype=np.int64)
    m[k] = np.arange(k.size)
    return m


def expand_tied(state, kept_ids, config_json_path):
    """A copy of `state` with its [K + 1, ...] vocabulary tables widened to [V, ...] (every tail id
    gets row K), as the model's full_state_dict() does."""
    text, _ = ckpt_io.read_config(config_json_path)
    V = text["vocab_size"]
    m = torch.from_numpy(vocab_map(kept_ids, V))
    out = ckpt_io.ReleasedState(state)
    out.scale_hints = getattr(state, "scale_hints", None)
    K = int(np.asarray(kept_ids).size)
    for name in ckpt_io.vocab_table_names(config_json_path):
        t = state[name]
        if t.shape[0] == V and K + 1 != V:
            continue  # already full
        if t.shape[0] != K + 1:
            raise ValueError(f"{name}: {t.shape[0]} rows, expected K + 1 = {K + 1} or V = {V}")
        out[name] = t.index_select(0, m)
    return out


def _tied_rows(name, value, kept, V):
    """The [K + 1, ...] form of a table given with K + 1 or V rows (V rows: every tail row must be
    the same, and that row becomes row K)."""
    x = value.detach().to(torch.float32).cpu() if isinstance(value, torch.Tensor) else torch.as_tensor(
        np.asarray(value, dtype=np.float32))
    K = kept.size
    if x.shape[0] == K + 1:
        return x
    if x.shape[0] != V:
        raise ValueError(f"{name}: {x.shape[0]} rows, expected K + 1 = {K + 1} or V = {V}")
    tail = np.ones(V, dtype=bool)
    tail[kept] = False
    tail_ids = np.nonzero(tail)[0]
    if tail_ids.size:
        t = x[torch.from_numpy(tail_ids)]
        if not bool((t == t[:1]).all()):
            raise ValueError(f"{name}: the rows of the ids outside kept_ids are not all equal "
                             "(not a tied-tail model)")
        tail_row = t[:1]
    else:
        tail_row = torch.zeros(1, *x.shape[1:])
    return torch.cat([x[torch.from_numpy(kept)], tail_row], 0)


def compact_tensors(state, config_json_path, kept_ids, scale_hints=None):
    """[(name, dtype, ndarray as stored)] of compact.safetensors, and its metadata."""
    text, _ = ckpt_io.read_config(config_json_path)
    V = text["vocab_size"]
    kept = check_kept_ids(kept_ids, V)
    tables = ckpt_io.vocab_table_names(config_json_path)
    st = dict(state)
    for name in tables:
        st[name] = _tied_rows(name, state[name], kept, V)
    if scale_hints is None:
        scale_hints = getattr(state, "scale_hints", None)
    tensors = ckpt_io.encode_released(st, config_json_path, scale_hints,
                                      row_counts={n: kept.size + 1 for n in tables})
    tensors.append(("kept_ids", "I32", kept.astype(np.int32)))
    meta = {"format": FORMAT, "version": VERSION, "vocab_size": str(V),
            "tied_tables": ",".join(tables)}
    return tensors, meta


def write_compact(state, config_json_path, kept_ids, out_dir, engram_token_map=None,
                  scale_hints=None):
    """Writes out_dir/compact.safetensors, out_dir/config.json (byte copy) and, when given,
    out_dir/engram_token_map.json. `state`: release names, vocabulary tables with K + 1 rows (or
    V rows that are tied). Returns the compact file's path."""
    os.makedirs(out_dir, exist_ok=True)
    tensors, meta = compact_tensors(state, config_json_path, kept_ids, scale_hints)
    path = os.path.join(out_dir, FILE_NAME)
    ckpt_io.write_safetensors(path, tensors, meta)
    cfg_out = os.path.join(out_dir, "config.json")
    if os.path.abspath(config_json_path) != os.path.abspath(cfg_out):
        shutil.copyfile(config_json_path, cfg_out)
    if engram_token_map is not None:
        ckpt_io.write_engram_token_map(os.path.join(out_dir, "engram_token_map.json"),
                                       engram_token_map)
    return path


def load_compact(path):
    """(state {name: float32 tensor} with [K + 1, ...] vocabulary tables, kept_ids list) of a
    compact.safetensors (or a folder holding one); the state carries `.scale_hints`."""
    if os.path.isdir(path):
        path = os.path.join(path, FILE_NAME)
    r = ckpt_io.SafetensorsReader(path)
    if r.metadata.get("format") != FORMAT:
        raise ValueError(f"{path}: not a compact model (metadata format "
                         f"{r.metadata.get('format')!r})")
    names = [n for n in r.names() if n != "kept_ids"]
    cfg = os.path.join(os.path.dirname(path), "config.json")
    logical = {}
    if os.path.exists(cfg):
        logical = {n: s[1] for n, lay, s in ckpt_io.manifest(cfg) if lay == ckpt_io.MXFP4}
    arrays, hints = ckpt_io.decode_tensors(r.raw, names, {n: r.dtype(n) for n in names},
                                           {n: r.shape(n) for n in names}, logical)
    state = ckpt_io.ReleasedState((n, torch.from_numpy(a)) for n, a in arrays.items())
    state.scale_hints = hints
    return state, [int(v) for v in r.raw("kept_ids")]
