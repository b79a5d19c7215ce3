"""Explanatory prose paragraphs from HTML documentation (the "modern prose" sources).

`extract(html_text, skip_classes, skip_ids)` walks one page and returns its text blocks in order:
("h", heading) and ("p", paragraph), with every element whose text is not running prose left out
(code listings, tables, scripts, forms, navigation and whatever the source names by class or id).
`page_text(blocks, seen)` keeps the paragraphs that read as sentences (`is_prose`), each heading
only when a kept paragraph follows it, drops paragraphs already seen on an earlier page of the same
source (boilerplate notes), and joins them with blank lines. `load_pages` builds a Corpus of one
document per page from a sorted list of files, so the output does not depend on the file system's
order. Pure Python (html.parser), no network, no third-party parser.
"""
import html.parser
import re

from . import Corpus, Doc

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr"}
# Elements that start or end a block of text (inline ones, like code or a, do not).
BLOCK = {"address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details",
         "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2",
         "h3", "h4", "h5", "h6", "header", "hr", "html", "li", "main", "menu", "nav", "ol", "p",
         "pre", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul"}
# Never prose: listings, tables (cells are not sentences), scripts, forms, the <head>.
SKIP_TAGS = {"head", "script", "style", "pre", "table", "form", "select", "textarea", "button",
             "svg", "math", "noscript", "iframe", "object", "nav", "map"}
HEADINGS = {"h1", "h2", "h3", "h4"}
# A <p> is closed by the start of any of these (HTML's implied end tags, as much as pages need).
CLOSES_P = BLOCK - {"body", "html", "td", "th", "tr", "tbody", "thead", "tfoot"}


class _Extractor(html.parser.HTMLParser):
    def __init__(self, skip_classes=(), skip_ids=()):
        super().__init__(convert_charrefs=True)
        self.skip_classes, self.skip_ids = set(skip_classes), set(skip_ids)
        self.stack = []  # [tag, skips]: open elements
        self.skip = 0  # open elements whose text is left out
        self.cur = []
        self.blocks = []

    # -- the open-element stack, with the implied end tags of p / li / dt / dd
    def _pop(self):
        tag, skips = self.stack.pop()
        if skips:
            self.skip -= 1
        return tag

    def _close(self, tag, stop_at=()):
        """Closes the nearest open `tag` (and everything above it) unless a stop_at comes first."""
        for i in range(len(self.stack) - 1, -1, -1):
            t = self.stack[i][0]
            if t == tag:
                while len(self.stack) > i:
                    self._pop()
                return
            if t in stop_at:
                return

    def flush(self):
        text = clean("".join(self.cur))
        self.cur = []
        if text:
            heading = any(t in HEADINGS for t, _ in self.stack)
            self.blocks.append(("h" if heading else "p", text))

    def handle_starttag(self, tag, attrs):
        if tag in BLOCK:
            self.flush()
        if tag in VOID:
            if tag == "br":
                self.cur.append(" ")
            return
        if tag in CLOSES_P:
            self._close("p", stop_at=("div", "td", "th", "li", "dd", "blockquote", "section"))
        if tag == "li":
            self._close("li", stop_at=("ul", "ol", "menu", "dir"))
        if tag in ("dt", "dd"):
            self._close("dt", stop_at=("dl",))
            self._close("dd", stop_at=("dl",))
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        skips = (tag in SKIP_TAGS or bool(classes & self.skip_classes)
                 or (a.get("id") or "") in self.skip_ids)
        self.stack.append([tag, skips])
        if skips:
            self.skip += 1

    def handle_startendtag(self, tag, attrs):  # XHTML <a/>, <br/>: no content either way
        if tag in BLOCK:
            self.flush()
        if tag == "br":
            self.cur.append(" ")

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if tag in BLOCK:
            self.flush()
        if any(t == tag for t, _ in self.stack):
            self._close(tag)

    def handle_data(self, data):
        if not self.skip:
            self.cur.append(data)


def extract(text, skip_classes=(), skip_ids=()):
    """[("h" | "p", text)] of one HTML page, in order (see the module doc)."""
    p = _Extractor(skip_classes, skip_ids)
    p.feed(text)
    p.close()
    p.flush()
    return p.blocks


_SPACES = re.compile(r"\s+")
_FOOTNOTE = re.compile(r"\s?\[\d{1,3}\]")
_DROP_CHARS = dict.fromkeys(map(ord, "\u00b6\u200b\u200c\u200d\u00ad\ufeff"))


def clean(text):
    """Whitespace collapsed (non-breaking spaces too), pilcrows and zero-width characters
    removed, footnote marks like "[1]" removed."""
    text = text.translate(_DROP_CHARS).replace("\u00a0", " ")
    text = _SPACES.sub(" ", text).strip()
    return _FOOTNOTE.sub("", text).strip()


# a word of running text: letters (inner - or ' allowed), optional opening and closing punctuation
_WORD = re.compile(r"^[(\"'\u201c\u2018]?[A-Za-z]+(?:[-'\u2019][A-Za-z]+)*"
                   r"[.,;:!?)\"'\u201d\u2019]*$")
_START = re.compile(r"^[A-Z\"'\u201c\u2018(]")
_END = re.compile(r"[.!?][)\"'\u201d\u2019]*$")
_RUN = re.compile(r"[a-z]{2,} [a-z]{2,} [a-z]{2,}")


def is_prose(text, min_words=8, word_share=0.8):
    """A paragraph of sentences: at least min_words words, starts like a sentence, ends with . ! or
    ? (a sentence leading into a code listing, ending with ':', is dropped with the listing), at
    least word_share of its words plain words (not identifiers, options, paths, numbers), and a
    run of three lower-case words somewhere."""
    words = text.split()
    if len(words) < min_words or not _START.match(text) or not _END.search(text):
        return False
    plain = sum(1 for w in words if _WORD.match(w))
    return plain >= word_share * len(words) and bool(_RUN.search(text))


_NUMBER = re.compile(r"^(?:[A-Z]\.)?[0-9]+(?:\.[0-9]+)*\.?$")  # "5.2.", "F.26.", "B.3.1."


def is_heading(text):
    """A section title of words (1-14 of them, not counting a section number); a function
    signature or an identifier as a title is not one."""
    words = [w for w in text.split() if not _NUMBER.match(w)]
    if not 0 < len(words) <= 14 or text.endswith((":", ",")):
        return False
    return sum(1 for w in words if _WORD.match(w)) >= 0.5 * len(words)


def page_text(blocks, seen):
    """The page's kept paragraphs (and the headings directly above them) joined by blank lines;
    `seen` (a set, updated) drops a paragraph that an earlier page of the source already had."""
    out, heading = [], None
    for kind, text in blocks:
        if kind == "h":
            heading = text if is_heading(text) else None
            continue
        if not is_prose(text) or text in seen:
            continue
        seen.add(text)
        if heading:
            out.append(heading)
            heading = None
        out.append(text)
    return "\n\n".join(out)


def load_pages(name, prefix, files, skip_classes=(), skip_ids=(), min_chars=200):
    """Corpus `name` with one Doc per page: files is [(relative path, path)] (read in the given
    order, which should be sorted), each doc keyed "prefix:relative path" (the split key)."""
    corpus = Corpus(name)
    seen = set()
    for rel, path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            blocks = extract(f.read(), skip_classes, skip_ids)
        text = page_text(blocks, seen)
        if len(text) >= min_chars:
            corpus.docs.append(Doc(f"{prefix}:{rel}", text + "\n"))
    return corpus


def html_files(root, subdirs=None, exclude=(), suffix=".html"):
    """[(relative path, path)] of the HTML files under root (or under root/each of subdirs),
    sorted, leaving out relative paths matching any regex of exclude."""
    import os
    pats = [re.compile(x) for x in exclude]
    out = []
    for sub in (subdirs or [""]):
        base = os.path.join(root, sub)
        for dp, dns, fns in os.walk(base):
            dns.sort()
            for fn in sorted(fns):
                if not fn.endswith(suffix):
                    continue
                path = os.path.join(dp, fn)
                rel = os.path.relpath(path, root)
                if not any(p.search(rel) for p in pats):
                    out.append((rel, path))
    return sorted(out)
