"""Text corpora that come as npm packages (train/npm, installed by scripts/install-train-deps.sh
into .deps/train-npm): where a package is and its version, and sentence-bounded pieces of a text
that has no paragraph breaks."""
import json
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE_MODULES = os.path.join(REPO, ".deps/train-npm/node_modules")

# a sentence ends at . ! or ? (and a closing quote or bracket) before white space and a capital
_SENTENCE_END = re.compile(r"(?<=[.!?])([\"'\u201d\u2019)]?)\s+(?=[\"'\u201c\u2018(]?[A-Z])")


def package_dir(name, root=NODE_MODULES):
    path = os.path.join(root, name)
    if not os.path.isfile(os.path.join(path, "package.json")):
        raise FileNotFoundError(f"{name}: not under {root} (run scripts/install-train-deps.sh)")
    return path


def package_version(name, root=NODE_MODULES):
    with open(os.path.join(package_dir(name, root), "package.json")) as f:
        return json.load(f)["version"]


def sentence_pieces(text, max_chars):
    """Cuts one paragraph into pieces of whole sentences of at most max_chars each (a sentence
    longer than that is a piece of its own, cut later by prepare_data's chunk_text)."""
    sentences, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        sentences.append(text[start:m.start()] + m.group(1))
        start = m.end()
    sentences.append(text[start:])
    pieces, cur = [], ""
    for s in (x.strip() for x in sentences):
        if not s:
            continue
        if cur and len(cur) + 1 + len(s) > max_chars:
            pieces.append(cur)
            cur = ""
        cur = s if not cur else cur + " " + s
    if cur:
        pieces.append(cur)
    return pieces
