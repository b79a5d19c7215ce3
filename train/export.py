#!/usr/bin/python3
"""Exports a trainer checkpoint as a released-format model folder and/or the compact form.

  /usr/bin/python3 train/export.py --checkpoint RUN/last.pt --out DIR [--compact models/NAME]
      [--config CONFIG.json] [--engram-token-map FILE] [--tokenizer DIR]

The checkpoint is what train/train.py saves (torch.save of a dict): `model` (the model's
state_dict: release tensor names, vocabulary tables with K + 1 rows when a tied tail is used),
`kept_ids` (sorted kept token ids, or None for the full vocabulary; a `kept_ids` entry of the
state_dict is used when the top-level one is absent) and `config` (the config.json path, overridden
by --config).

--out DIR writes DIR/config.json, DIR/model.safetensors (ckpt_io.export_released: FP8 dense with
ue8m0 tile scales, MXFP4 experts, bf16 embed/head over the full vocabulary) and, with the options,
DIR/engram_token_map.json (by default the map the model hashed with during training) and the
tokenizer files, so that `deepinfer serve --model DIR` runs it.
--compact models/NAME writes models/NAME/compact.safetensors + config.json (+ the Engram map when
given): the form shipped in git, expanded by `deepinfer unpack-model` into exactly the bytes --out
writes (v41/compact.py).

The full-vocabulary state comes from the model's own `full_state_dict()` (v41/model.py); it is
cross-checked against the plain row expansion (every tail id gets row K) of v41/compact.py.
"""

import argparse
import os
import shutil
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from v41 import ckpt_io, compact  # noqa: E402


def resolve_config(path):
    for p in (path, os.path.join(HERE, path), os.path.join(os.path.dirname(HERE), path)):
        if p and os.path.exists(p):
            return p
    raise FileNotFoundError(f"config {path!r} not found (pass --config)")


def read_checkpoint(path, config=None):
    """(state_dict, kept_ids list or None, config path) of a trainer checkpoint."""
    ckpt = torch.load(path, map_location="cpu")
    state = ckpt["model"] if isinstance(ckpt, dict) and "model" in ckpt else ckpt
    kept = ckpt.get("kept_ids") if isinstance(ckpt, dict) else None
    if kept is None and "kept_ids" in state:
        kept = state["kept_ids"]
    if isinstance(kept, torch.Tensor):
        kept = kept.tolist()
    cfg = config or (ckpt.get("config") if isinstance(ckpt, dict) else None)
    if cfg is None:
        raise ValueError(f"{path}: no config path in the checkpoint (pass --config)")
    return state, (None if kept is None else [int(k) for k in kept]), resolve_config(cfg)


def full_state(state, kept, config_path):
    """({release name: tensor} with full [V, ...] vocabulary tables, the Engram token map the
    model hashes with or None), from the model's full_state_dict() and engram_token_map_json();
    the tables are checked against compact.expand_tied."""
    try:
        from v41.config import load_config
        from v41.model import V41Model
    except ImportError as e:  # the model is not written yet: the documented contract instead
        print(f"export: v41.model unavailable ({e}); expanding the tied rows directly",
              file=sys.stderr)
        return (state if kept is None else compact.expand_tied(state, kept, config_path)), None
    model = V41Model(load_config(config_path), kept_ids=kept)
    missing, unexpected = model.load_state_dict(state, strict=False)
    names = {n for n, _, _ in ckpt_io.manifest(config_path)}
    lost = sorted(n for n in missing if n in names)
    if lost:
        raise KeyError(f"the checkpoint lacks release tensors: {lost[:10]}")
    with torch.no_grad():
        full = model.full_state_dict()
    if kept is not None:
        ref = compact.expand_tied(state, kept, config_path)
        for n in ckpt_io.vocab_table_names(config_path):
            if not torch.equal(full[n].detach().float(), ref[n].detach().float()):
                raise ValueError(f"{n}: full_state_dict() disagrees with the tied-row expansion")
    token_map = model.engram_token_map_json() if hasattr(model, "engram_token_map_json") else None
    return full, token_map


def copy_tokenizer(tokenizer_dir, out_dir):
    for f in ("tokenizer.json", "tokenizer_config.json"):
        src = os.path.join(tokenizer_dir, f)
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(out_dir, f))
        elif f == "tokenizer.json":
            raise FileNotFoundError(f"{tokenizer_dir}: no tokenizer.json")


@torch.no_grad()  # not torch.set_grad_enabled(False): tests call main() in-process
def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True, help="trainer checkpoint (torch.save dict)")
    p.add_argument("--out", help="released-format model folder to write")
    p.add_argument("--compact", help="folder for the compact form (models/NAME)")
    p.add_argument("--config", help="config.json (default: the path the checkpoint names)")
    p.add_argument("--engram-token-map", help="engram_token_map.json to ship with the model "
                   "(default: the map the model hashes with, as v41.model finds it)")
    p.add_argument("--no-engram-token-map", action="store_true",
                   help="ship no engram_token_map.json (the engine then builds the map from "
                   "tokenizer.json: only right when that is the map the model was trained with)")
    p.add_argument("--tokenizer", help="folder whose tokenizer.json (+ tokenizer_config.json) go "
                   "into --out")
    args = p.parse_args(argv)
    if not args.out and not args.compact:
        p.error("give --out and/or --compact")
    state, kept, cfg = read_checkpoint(args.checkpoint, args.config)
    full, model_map = full_state(state, kept, cfg)
    token_map = None if args.no_engram_token_map else (args.engram_token_map or model_map)
    if args.out:
        path = ckpt_io.export_released(full, cfg, args.out, engram_token_map=token_map)
        if args.tokenizer:
            copy_tokenizer(args.tokenizer, args.out)
        print(f"wrote {path} ({os.path.getsize(path) / 2**20:.1f} MiB)")
    if args.compact:
        V = ckpt_io.read_config(cfg)[0]["vocab_size"]
        ids = kept if kept is not None else list(range(V))
        path = compact.write_compact(full, cfg, ids, args.compact, engram_token_map=token_map)
        print(f"wrote {path} ({os.path.getsize(path) / 2**20:.1f} MiB, {len(ids)} kept ids)")


if __name__ == "__main__":
    main()
