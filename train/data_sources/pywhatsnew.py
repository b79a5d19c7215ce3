"""The "What's New in Python" essays (2.0 to 3.11) from Debian's python3.11-doc (HTML in
/usr/share/doc/python3.11/html/whatsnew), the one part of that package `pydocs` does not read.

Prose only: each essay's paragraphs (why a change was made, what it means for a program) with the
headings above them; code, tables and navigation are left out (`htmlprose`). No chats.
"""
from . import htmlprose
from .pydocs import INFO as _PYDOCS

INFO = {
    "name": "pywhatsnew",
    "title": "What's New in Python 2.0-3.11 (A.M. Kuchling and the Python developers; Python "
             "Software Foundation)",
    "package": "apt: python3.11-doc",
    "licence": _PYDOCS["licence"],
    "where": _PYDOCS["where"],
    "modern": True,
}
ROOT = "/usr/share/doc/python3.11/html"
SKIP_CLASSES = {"sphinxsidebar", "related", "footer", "headerlink", "highlight",
                "version_switcher_placeholder", "language_switcher_placeholder", "inline-search"}


def load(root=ROOT):
    files = htmlprose.html_files(root, ["whatsnew"], exclude=[r"/index\.html$", r"changelog"])
    if not files:
        raise FileNotFoundError(f"pywhatsnew: no HTML under {root}/whatsnew "
                                "(apt install python3.11-doc)")
    return htmlprose.load_pages("pywhatsnew", "pywn", files, SKIP_CLASSES)
