"""King James Version of the Bible, from Debian's bible-kjv-text (data) read by bible-kjv's `bible`.

Prose: one document per chapter ("John 3" then numbered verses). Chats: a verse quoted on request
("Quote John 3:16."), and proverbs (Proverbs / Ecclesiastes verses) for "Tell me a proverb.".
"""
import random
import re
import subprocess

from . import Chat, Corpus, Doc

INFO = {
    "name": "kjv",
    "title": "King James Version of the Bible (1611)",
    "package": "apt: bible-kjv-text (text), bible-kjv (the `bible` reader)",
    "licence": "Public domain",
    "where": "/usr/share/doc/bible-kjv-text/copyright: \"The copyright for the King James Version "
             "text of the Bible is expired\"; the BRS data file: \"Users may copy, modify or "
             "distribute this file at will.\"",
}

VERSE_ASKS = [
    "Quote {ref}.",
    "Quote {ref}, please.",
    "What does {ref} say?",
    "Recite {ref}.",
    "What is {ref}?",
    "Can you quote {ref}?",
    "Give me the verse {ref}.",
    "What is written in {ref}?",
    "Read me {ref}.",
    "How does {ref} go?",
]
PROVERB_ASKS = [
    "Tell me a proverb.",
    "Give me a proverb.",
    "Quote a proverb.",
    "Tell me a saying.",
    "Share a wise saying.",
    "Tell me something wise.",
    "Give me a word of wisdom.",
    "Quote me something from Proverbs.",
]


def read_verses(bible="bible"):
    """[(book, chapter, verse, text)] in canonical order, from `bible -l100000 Gen1:1-Rev22:21`."""
    out = subprocess.run([bible, "-l100000", "Gen1:1-Rev22:21"], check=True,
                         capture_output=True, text=True).stdout
    return parse_bible_output(out)


def parse_bible_output(out):
    """`bible` prints "Book N" chapter headings and "  V text" verse lines."""
    verses, book, chapter = [], None, None
    for line in out.split("\n"):
        if not line.strip():
            continue
        m = re.match(r"^\s+(\d+) (.*)$", line)
        if m:
            verses.append((book, chapter, int(m.group(1)), m.group(2).strip()))
            continue
        m = re.match(r"^(.+) (\d+)$", line.strip())
        if not m:
            raise ValueError(f"kjv: unexpected line {line!r}")
        book, chapter = m.group(1), int(m.group(2))
    return verses


def ref_name(book, chapter, verse=None):
    name = "Psalm" if book == "Psalms" and verse is not None else book
    return f"{name} {chapter}" if verse is None else f"{name} {chapter}:{verse}"


def load(seed=1, bible="bible", verses=None):
    verses = read_verses(bible) if verses is None else verses
    corpus = Corpus("kjv")
    chapters = {}
    for book, ch, v, text in verses:
        chapters.setdefault((book, ch), []).append((v, text))
    rng = random.Random(seed)
    for (book, ch), vs in chapters.items():
        key = f"kjv:{book} {ch}"
        body = "\n".join(f"{v} {t}" for v, t in vs)
        corpus.docs.append(Doc(key, f"{ref_name(book, ch)}\n\n{body}\n"))
        for v, t in vs:
            ask = rng.choice(VERSE_ASKS).format(ref=ref_name(book, ch, v))
            corpus.chats.append(Chat(key, "verse", ask, t))
            if book in ("Proverbs", "Ecclesiastes"):
                corpus.chats.append(Chat(key, "proverb", rng.choice(PROVERB_ASKS), t))
    return corpus
