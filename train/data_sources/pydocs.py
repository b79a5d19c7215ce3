"""The Python 3.11 documentation: Debian's python3.11-doc (HTML in /usr/share/doc/python3.11).

Prose: the main text of the tutorial, library, reference, how-to, FAQ, installing/using pages
(code blocks kept as they are), cut at paragraphs. Chats: "What does str.split do?" answered with
the first sentence(s) of the object's description; "What is the json module?" answered with the
module synopsis.
"""
import html
import html.parser
import os
import random
import re

from . import Chat, Corpus, Doc

INFO = {
    "name": "pydocs",
    "title": "Python 3.11 documentation (Python Software Foundation)",
    "package": "apt: python3.11-doc",
    "licence": "PSF License Agreement (documentation); code examples also Zero-Clause BSD",
    "where": "/usr/share/doc/python3.11/html/license.html (\"Python software and documentation are "
             "licensed under the PSF License Agreement\"); /usr/share/doc/python3.11-doc/copyright",
}
ROOT = "/usr/share/doc/python3.11/html"
SECTIONS = ["tutorial", "library", "reference", "howto", "faq", "using", "installing"]

BLOCK = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "li", "dt", "dd", "pre", "div", "section",
         "tr", "table", "blockquote", "ul", "ol", "dl", "br", "hr", "caption"}
ASK_OBJ = ["What does {n} do?", "What does {n} do in Python?", "What is {n}?",
           "Explain {n}.", "What is {n} for?", "Describe {n}.", "In Python, what does {n} do?",
           "What is {n} used for?", "How does {n} work?"]
ASK_MOD = ["What is the {m} module?", "What does the {m} module do?", "What is {m} in Python?",
           "What is the {m} module for?", "Describe the Python module {m}."]


class _Page(html.parser.HTMLParser):
    """Collects the main text (blocks separated by blank lines) and API entries of one page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0  # >0 while inside div.body
        self.skip = 0  # >0 inside headerlinks, scripts
        self.pre = 0
        self.blocks, self.cur = [], []
        self.entries = []  # (id, signature, first paragraph)
        self.dt_id, self.dt_text, self.want_dd_p, self.in_dd_p = None, None, None, None
        self.module_title = None
        self.stack = []

    def flush(self):
        text = "".join(self.cur)
        self.cur = []
        if not self.pre:
            text = re.sub(r"\s+", " ", text).strip()
        else:
            text = text.strip("\n")
        if text:
            self.blocks.append(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = a.get("class") or ""
        if tag == "div" and a.get("role") == "main":
            self.depth = 1
            self.stack = ["div"]
            return
        if not self.depth:
            return
        if tag in ("br", "hr", "img", "input", "meta", "link", "wbr"):
            if tag == "br":
                self.cur.append("\n" if self.pre else " ")
            return
        self.stack.append((tag, self.skip, self.pre))
        if tag == "a" and "headerlink" in cls:
            self.skip += 1
        if tag in ("script", "style") or "sphinxsidebar" in cls:
            self.skip += 1
        if tag == "a" and self.module_title is None and a.get("title", "").count(": ") >= 1 \
                and (a.get("href") or "").startswith("#module-"):
            self.module_title = a["title"]
        if tag in BLOCK:
            self.flush()
        if tag == "pre":
            self.pre += 1
        if tag == "dt" and "sig-object" in cls and "py" in cls.split() and a.get("id"):
            self.dt_id, self.dt_text = a["id"], []
        if tag == "p" and self.want_dd_p is not None and self.in_dd_p is None:
            self.in_dd_p = []

    def handle_endtag(self, tag):
        if not self.depth:
            return
        if tag in ("br", "hr", "img", "input", "meta", "link", "wbr"):
            return
        if len(self.stack) <= 1:
            self.flush()
            self.depth = 0
            return
        top = self.stack.pop()
        _, self.skip, pre = top
        if tag in BLOCK:
            self.flush()
        self.pre = pre
        if tag == "dt" and self.dt_id is not None:
            sig = re.sub(r"\s+", " ", "".join(self.dt_text)).strip()
            self.want_dd_p = (self.dt_id, sig)
            self.dt_id, self.dt_text = None, None
        if tag == "p" and self.in_dd_p is not None:
            text = re.sub(r"\s+", " ", "".join(self.in_dd_p)).strip()
            self.entries.append((*self.want_dd_p, text))
            self.want_dd_p, self.in_dd_p = None, None
        if tag == "dd" and self.want_dd_p is not None and self.in_dd_p is None:
            self.want_dd_p = None

    def handle_data(self, data):
        if not self.depth or self.skip:
            return
        self.cur.append(data)
        if self.dt_text is not None:
            self.dt_text.append(data)
        if self.in_dd_p is not None:
            self.in_dd_p.append(data)


def parse_page(path):
    p = _Page()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    p.close()
    p.flush()
    return p


def first_sentences(text, max_chars=320):
    """The first sentence, plus the next ones while they fit in max_chars."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z(`'\"])", text)
    out = parts[0]
    for s in parts[1:]:
        if len(out) + 1 + len(s) > max_chars:
            break
        out += " " + s
    return out if len(out) <= max_chars * 1.5 else ""


def obj_reply(name, sig, text, rng):
    if not text[:1].isupper() or re.match(r"(Deprecated|New in version|Changed in version|"
                                          r"See |Note|Availability)", text) \
            or "\u2013" in text[:40] or name.startswith("test.") \
            or name.rsplit(".", 1)[-1].startswith("_"):
        return None
    s = first_sentences(text)
    if not s or len(s) < 12:
        return None
    s = s if s.endswith((".", "!", "?", ":")) else s + "."
    if s.endswith(":"):
        return None  # leads into a list or a code block
    sig = sig.replace(" ( ", "(").replace("( ", "(").replace(" )", ")")
    # name the object in full: "abstractmethod conjugate()" -> "numbers.Complex.conjugate()"
    args = sig[sig.index("("):] if "(" in sig and sig.endswith(")") else ""
    sig = ("class " if sig.startswith("class ") else "") + name + args
    return f"{sig}: {s}" if rng.randrange(2) == 0 else s


def pages(root=ROOT):
    for sec in SECTIONS:
        d = os.path.join(root, sec)
        for fn in sorted(os.listdir(d)):
            if fn.endswith(".html"):
                yield f"{sec}/{fn}", os.path.join(d, fn)


def load(root=ROOT, seed=3):
    corpus = Corpus("pydocs")
    rng = random.Random(seed)
    for rel, path in pages(root):
        p = parse_page(path)
        key = f"py:{rel}"
        text = "\n\n".join(b.replace("\u00b6", "") for b in p.blocks)
        if len(text) > 200:
            corpus.docs.append(Doc(key, text + "\n"))
        if p.module_title and rel.startswith("library/"):
            m, _, syn = p.module_title.partition(": ")
            syn = syn.strip()
            if syn:
                syn = syn[:1].upper() + syn[1:]
                syn = syn if syn.endswith(".") else syn + "."
                ask = rng.choice(ASK_MOD).format(m=m)
                reply = rng.choice([f"The {m} module: {syn}", f"{m}: {syn}",
                                    f"{m} is a standard library module. {syn}"])
                corpus.chats.append(Chat(key, "python", ask, reply))
        for oid, sig, first in p.entries:
            reply = obj_reply(oid, sig, first, rng)
            if reply is None:
                continue
            ask = rng.choice(ASK_OBJ).format(n=oid)
            corpus.chats.append(Chat(key, "python", ask, reply))
    return corpus
