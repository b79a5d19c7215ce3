"""Tests of train/prepare_data.py and train/data_sources (/usr/bin/python3 -m unittest in train/).

Fast and self-contained: built-in samples only, never train/data/. The tests that go through the
engine (render-chat, tokenize) use $DEEPINFER_BIN (default build/release/deepinfer) and
$DEEPINFER_TOKENIZER_DIR (default the npm tokenizer of scripts/install-deps.sh); they fail when
those are named but missing, and skip when neither is named nor found at the default place.
"""
import os
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.dirname(HERE)
sys.path.insert(0, TRAIN)

import prepare_data as P  # noqa: E402
from data_sources import (Chat, Doc, fortunes, htmlprose, kjv, mobydick, npmtext, pgdocs,  # noqa: E402
                          pydocs, sotu, wordnet)

BIN = os.environ.get("DEEPINFER_BIN", P.DEFAULT_BIN)
TOK = os.environ.get("DEEPINFER_TOKENIZER_DIR", P.DEFAULT_TOKENIZER)
NAMED = "DEEPINFER_BIN" in os.environ or "DEEPINFER_TOKENIZER_DIR" in os.environ
HAVE_ENGINE = os.access(BIN, os.X_OK) and os.path.isfile(os.path.join(TOK, "tokenizer.json"))

BIBLE_OUT = """
Genesis 1

  1 In the beginning God created the heaven and the earth.
  2 And the earth was without form, and void.

Psalms 23

  1 The LORD is my shepherd; I shall not want.
"""

PAGE = """<html><body><div class="sphinxsidebar">side</div>
<div class="body" role="main"><section id="module-json">
<h1><a class="reference internal" href="#module-json" title="json: Encode and decode the JSON format.">
<code>json</code></a> — JSON encoder<a class="headerlink" href="#module-json">¶</a></h1>
<p>Some   prose
about JSON.</p>
<pre>x = 1
y = 2</pre>
<dl class="py function"><dt class="sig sig-object py" id="json.dumps">
<span class="sig-prename">json.</span><span class="sig-name">dumps</span><span class="sig-paren">(</span>
<em>obj</em><span class="sig-paren">)</span><a class="headerlink" href="#json.dumps">¶</a></dt>
<dd><p>Serialize <em>obj</em> to a JSON formatted str. More words follow here.</p>
<p>Second paragraph.</p></dd></dl>
</section></div><div class="footer">foot</div></body></html>
"""


class SplitTest(unittest.TestCase):
    def test_deterministic_and_sized(self):
        keys = [f"k{i}" for i in range(20000)]
        a = [P.split_of(k) for k in keys]
        self.assertEqual(a, [P.split_of(k) for k in keys])
        frac = a.count("val") / len(a)
        self.assertGreater(frac, 0.015)
        self.assertLess(frac, 0.025)
        # fixed by sha256: a change here reshuffles every split
        self.assertEqual([i for i in range(120) if a[i] == "val"], [2, 30, 53, 79, 84, 114])
        self.assertEqual(P.split_of("kjv:Psalms 23"), "val")
        self.assertEqual(P.split_of("kjv:John 3"), "train")
        self.assertEqual(P.split_of("k2", 0.0), "train")


class PackingTest(unittest.TestCase):
    def test_chunk_text(self):
        text = "\n\n".join(f"paragraph {i} " + "word " * (i * 7) for i in range(40))
        pieces = P.chunk_text(text, 300)
        self.assertTrue(all(len(p) <= 300 for p in pieces))
        self.assertEqual("".join(text.split()), "".join("".join(pieces).split()))

    def test_prose_documents_groups_by_split(self):
        docs = [Doc(f"k{i}", f"entry {i}", group="g") for i in range(100)]
        docs.append(Doc("long", "\n\n".join(["para " * 20] * 10)))
        out = P.prose_documents(docs, 200, 0.02)
        val_text = "\n".join(t for _, t in out["val"])
        for i in (2, 30, 53, 79, 84):  # the val keys above
            self.assertIn(f"entry {i}\n", val_text)
        train_text = "\n".join(t for _, t in out["train"])
        self.assertNotIn("entry 2\n", train_text)
        self.assertIn("entry 3\n", train_text)
        self.assertTrue(all(len(t) <= 201 for _, t in out["train"]))

    def test_sequences_and_pack(self):
        chat = P.chat_sequence([0, 5, 6], [7, 8])
        self.assertEqual(chat, [0, 5, 6, 7, 8, 1])
        with self.assertRaises(ValueError):
            P.chat_sequence([5, 6], [7])
        with self.assertRaises(ValueError):
            P.chat_sequence([0, 5], [7, 1])
        arr = P.pack([chat, P.prose_sequence([9, 10])])
        self.assertEqual(arr.dtype, np.dtype("<u4"))
        self.assertEqual(arr.tolist(), [0, 5, 6, 7, 8, 1, 0, 9, 10])
        with tempfile.TemporaryDirectory() as d:
            arr.tofile(os.path.join(d, "x.bin"))
            with open(os.path.join(d, "x.bin"), "rb") as f:
                self.assertEqual(f.read()[:8], bytes([0, 0, 0, 0, 5, 0, 0, 0]))

    def test_select_chats(self):
        def item(kind, i, n):
            return ([0] + [2] * (n - 2) + [1], Chat(f"{kind}{i}", kind, "q", "a", rank=i % 2))
        pool = {"define": [item("define", i, 10) for i in range(1000)],
                "saying": [item("saying", i, 10) for i in range(5)]}
        shares = {"define": 0.8, "saying": 0.2}
        a = P.select_chats(pool, 2000, shares, seed=1)
        self.assertEqual(a, P.select_chats(pool, 2000, shares, seed=1))
        got = {k: sum(len(s) for s, c in a if c.kind == k) for k in pool}
        # saying has 50 tokens, repeated at most MAX_REPEAT times; define takes the rest
        self.assertEqual(got["saying"], 50 * P.MAX_REPEAT)
        self.assertGreaterEqual(got["define"], 2000 - 50 * P.MAX_REPEAT)
        self.assertLess(got["define"], 2000 - 50 * P.MAX_REPEAT + 10)
        # rank 0 before rank 1
        self.assertTrue(all(c.rank == 0 for s, c in a if c.kind == "define"))

    def test_kept_ids(self):
        train = np.array([5, 5, 5, 7, 7, 9, 0], dtype="<u4")
        kept, cov = P.kept_ids(train, 2, [0, 1, 128804])
        self.assertEqual(kept, [0, 1, 5, 7, 128804])
        self.assertAlmostEqual(cov, 6 / 7)


class SelfDistillTest(unittest.TestCase):
    def test_chat_prompts(self):
        import self_distill as S
        think_end = [1718, 37947, 32]
        chat_a = [0, 128803, 11, 12, 128804] + think_end + [50, 51, 1]
        chat_b = [0, 128803, 13, 128804] + think_end + [52, 1]
        prose = [0, 60, 61, 62, 63]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "train.bin")
            np.asarray(chat_a + prose + chat_b + chat_a, dtype="<u4").tofile(path)
            # Prompts in stream order, each once, up to and including `</think>`; prose skipped.
            self.assertEqual(S.chat_prompts(path), [tuple(chat_a[:8]), tuple(chat_b[:7])])
            np.asarray(chat_a + [0, 128803, 14, 128804, 9, 9, 9, 1], dtype="<u4").tofile(path)
            with self.assertRaises(SystemExit):  # a prompt not ending with the same pieces
                S.chat_prompts(path)


class SourceParsersTest(unittest.TestCase):
    def test_kjv(self):
        verses = kjv.parse_bible_output(BIBLE_OUT)
        self.assertEqual(verses[2], ("Psalms", 23, 1, "The LORD is my shepherd; I shall not want."))
        c = kjv.load(verses=verses)
        self.assertEqual(len(c.docs), 2)
        self.assertTrue(c.docs[1].text.startswith("Psalms 23\n\n1 The LORD"))
        self.assertIn("Psalm 23:1", c.chats[2].user)
        self.assertEqual(c.chats[2].key, "kjv:Psalms 23")

    def test_wordnet_gloss(self):
        d, ex = wordnet.parse_gloss('feline mammal; "domestic cats"; "wildcats"')
        self.assertEqual((d, ex), ("feline mammal", ["domestic cats", "wildcats"]))
        import random
        r = wordnet.define_reply("run", "v", "move fast by using one's feet",
                                 ["Don't run--you'll be out of breath"], random.Random(0))
        self.assertTrue(r.startswith("To run means to move fast by using one's feet."))
        self.assertIn("Don't run", r)

    def test_fortunes_filter(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "wisdom"), "w") as f:
                f.write("Kept saying\nover two lines.\n\t\t-- Mark Twain\n%\n"
                        "Modern quip.\n\t\t-- Somebody Alive\n%\n"
                        "Old wisdom.\n\t\t-- Chinese proverb\n%\nNo attribution at all.\n%\n")
            with open(os.path.join(d, "startrek"), "w") as f:
                f.write("Beam me up.\n\t\t-- Mark Twain\n%\n")
            got = fortunes.read_cookies(d)
        self.assertEqual([(t, a) for _, _, t, a in got],
                         [("Kept saying over two lines.", "Mark Twain"),
                          ("Old wisdom.", "Chinese proverb")])

    def test_pydocs_page(self):
        with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False) as f:
            f.write(PAGE)
        try:
            p = pydocs.parse_page(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(p.module_title, "json: Encode and decode the JSON format.")
        self.assertIn("Some prose about JSON.", p.blocks)
        self.assertIn("x = 1\ny = 2", p.blocks)
        self.assertNotIn("side", " ".join(p.blocks))
        self.assertNotIn("foot", " ".join(p.blocks))
        self.assertEqual(p.entries[0][0], "json.dumps")
        self.assertTrue(p.entries[0][2].startswith("Serialize obj to a JSON formatted str."))
        import random
        r = pydocs.obj_reply("json.dumps", p.entries[0][1], p.entries[0][2], random.Random(1))
        self.assertIn("Serialize obj to a JSON formatted str.", r)


# A documentation page as the modern prose sources see it: navigation, a code listing, a table, an
# unclosed <p>, a skipped class, a sentence leading into code, a footnote mark, a pilcrow.
DOC_PAGE = """<html><head><title>T</title><script>var x = 1;</script></head><body>
<div class="navheader"><p>Prev Up Next: a navigation paragraph that has plenty of words in it.</p>
</div>
<div class="sect1"><h2 class="title">5.2. Default&nbsp;Values<a class="headerlink">\u00b6</a></h2>
<p>A column can be assigned a default value. When a new row is created and no values are
specified for some of the columns, those columns will be filled with their default values.[1]
<p>In a table definition, the <code>DEFAULT</code> value is listed after the column data type:
<pre class="programlisting">CREATE TABLE products (price numeric DEFAULT 9.99);</pre>
<p>so that the price is never null, which later queries rely on in many different places.</p>
<table><tr><td>The cells of a table are not running prose even when they are long sentences.</td>
</tr></table>
<h3>pg_dump --help</h3><p>Set the options with --jobs=4 -Fd /var/lib/x --no-owner -v -q now.</p>
<h3>Notes</h3><div class="caution"><p>The default expression is evaluated once per row, at
insertion time, and never again afterwards.</p></div>
<h3>Dangling</h3>
<p>A column can be assigned a default value. When a new row is created and no values are
specified for some of the columns, those columns will be filled with their default values.</p>
</div><div class="navfooter"><p>The footer also has a sentence with quite a few words in it.</p>
</div>
</body></html>
"""


class ModernProseTest(unittest.TestCase):
    """The cleaning of the modern prose sources (data_sources/htmlprose.py and its users)."""

    SKIP = {"navheader", "navfooter", "caution_x"}

    def test_extract(self):
        blocks = htmlprose.extract(DOC_PAGE, self.SKIP)
        text = " ".join(t for _, t in blocks)
        for gone in ("navigation", "footer", "CREATE TABLE", "cells of a table", "var x",
                     "\u00b6", "[1]", "\u00a0"):
            self.assertNotIn(gone, text)
        self.assertEqual(blocks[0], ("h", "5.2. Default Values"))
        # the unclosed <p> ends where the next one starts; inline code stays in its sentence
        self.assertTrue(blocks[1][1].endswith(
            "those columns will be filled with their default values."), blocks[1])
        self.assertEqual(blocks[2][1], "In a table definition, the DEFAULT value is listed "
                                       "after the column data type:")
        self.assertTrue(blocks[3][1].startswith("so that the price"))

    def test_is_prose(self):
        ok = "The default expression is evaluated once per row, at insertion time, and never again."
        self.assertTrue(htmlprose.is_prose(ok))
        self.assertTrue(htmlprose.is_prose("\u201cQuoted\u201d sentences can start a paragraph "
                                           "of ordinary words too."))
        for bad in ("Too short to count.",
                    "so that it starts mid-sentence after a code listing was cut out of it.",
                    "The value is listed after the column data type, as in this example:",
                    "Set the options with --jobs=4 -Fd /var/lib/x --no-owner -v -q now.",
                    "It has no sentence end at all although it has many words in it",
                    "SELECT A, B, C, D, E, F, G, H FROM T WHERE X = Y."):
            self.assertFalse(htmlprose.is_prose(bad), bad)
        self.assertTrue(htmlprose.is_heading("B.3.1. The Deepest Layer: the Hardware"))
        self.assertFalse(htmlprose.is_heading("inspector.open([port[, host[, wait]]])"))

    def test_page_text(self):
        seen = set()
        text = htmlprose.page_text(htmlprose.extract(DOC_PAGE, self.SKIP), seen)
        paras = text.split("\n\n")
        self.assertEqual(paras[0], "5.2. Default Values")
        self.assertTrue(paras[1].startswith("A column can be assigned a default value."))
        # the code-like heading and paragraph are gone, "Notes" heads the kept caution; the
        # repeated paragraph is dropped and so is the heading above it
        self.assertEqual(paras[2:], ["Notes", "The default expression is evaluated once per row, "
                                              "at insertion time, and never again afterwards."])
        self.assertEqual(len(seen), 2)
        self.assertEqual(htmlprose.page_text(htmlprose.extract(DOC_PAGE, self.SKIP), seen), "")

    def test_source_on_a_tree(self):
        with tempfile.TemporaryDirectory() as d:
            for fn in ("ddl-default.html", "release-15-1.html", "index.html"):
                with open(os.path.join(d, fn), "w") as f:
                    f.write(DOC_PAGE)
            c = pgdocs.load(d)
        self.assertEqual([x.key for x in c.docs], ["pg:ddl-default.html"])
        self.assertEqual(c.chats, [])
        self.assertTrue(c.docs[0].text.endswith("never again afterwards.\n"))
        self.assertTrue(pgdocs.INFO["modern"])

    def test_decontaminate_and_names(self):
        held = "Everyone is permitted to copy and distribute verbatim copies of this license " \
               "document, but changing it is not allowed."
        banned = P.word_ngrams(held)
        docs = [Doc("a", "Title\n\nThe GPL says that everyone is permitted to copy and distribute "
                         "verbatim copies of this license document, but not more.\n\nKept.\n"),
                Doc("b", "Everyone is permitted to copy and distribute verbatim copies of this "
                         "license document.\n")]
        out, dropped = P.decontaminate(docs, banned)
        self.assertEqual([(x.key, x.text) for x in out], [("a", "Title\n\nKept.\n")])
        self.assertEqual(dropped, 2)
        self.assertEqual(P.source_names("kjv,wordnet"), ["kjv", "wordnet"])
        self.assertEqual(P.source_names("kjv,modern,pgdocs"), ["kjv"] + P.MODERN)


def fake_npm_package(root, name, files):
    """A node_modules tree holding package `name` (version 9.9.9) with data/FILE texts."""
    pkg = os.path.join(root, name)
    os.makedirs(os.path.join(pkg, "data"))
    with open(os.path.join(pkg, "package.json"), "w") as f:
        f.write('{"name": "%s", "version": "9.9.9"}' % name)
    for fn, text in files.items():
        with open(os.path.join(pkg, "data", fn), "w", encoding="utf-8") as f:
            f.write(text)


class NpmTextTest(unittest.TestCase):
    """The npm corpora: the State of the Union (training) and Moby-Dick (held out)."""

    def test_sentence_pieces(self):
        text = ('Fellow-Citizens: I feel much satisfaction. "Is it so?" he asked. The navy '
                'grew (in 1801.) Then came peace!  And 3.5 more words follow here.')
        pieces = npmtext.sentence_pieces(text, 45)
        self.assertEqual(pieces, ["Fellow-Citizens: I feel much satisfaction.",
                                  '"Is it so?" he asked.',
                                  "The navy grew (in 1801.) Then came peace!",
                                  "And 3.5 more words follow here."])
        self.assertTrue(all(len(p) <= 45 for p in pieces))
        self.assertEqual(" ".join(pieces), " ".join(text.split()))
        # a sentence longer than the limit stays one piece (chunk_text cuts it later)
        self.assertEqual(npmtext.sentence_pieces("A" * 60 + ". Short one.", 20),
                         ["A" * 60 + ".", "Short one."])

    def test_sotu_on_a_tree(self):
        body = " ".join(f"Sentence number {i} of the address is here." for i in range(200))
        with tempfile.TemporaryDirectory() as d:
            fake_npm_package(d, sotu.PACKAGE, {"1790_george_washington_n.txt": body + "\n",
                                               "1790_george_washington_n.json": "{}",
                                               "2021_joseph_r_biden_d.txt": "Short. Address."})
            c = sotu.load(d)
            self.assertEqual(npmtext.package_version(sotu.PACKAGE, d), "9.9.9")
        keys = [x.key for x in c.docs]
        self.assertEqual(sorted(set(keys)), ["sotu:1790_george_washington_n",
                                             "sotu:2021_joseph_r_biden_d"])
        first = [x.text for x in c.docs if x.key == "sotu:1790_george_washington_n"]
        self.assertGreater(len(first), 1)
        self.assertTrue(all(len(t) <= sotu.MAX_CHARS and t.endswith("here.") for t in first))
        self.assertEqual(" ".join(first), body)
        self.assertEqual(c.chats, [])
        self.assertTrue(sotu.INFO["prose_only"])

    def test_mobydick_needs_every_chapter(self):
        files = {f"chapter_{i}.txt": f"CHAPTER {i}.\n\nText {i}.\n" for i in range(1, 136)}
        files.update({"epilogue.txt": "Epilogue\n", "contents.txt": "skip", "chapter_1.json": "{}"})
        with tempfile.TemporaryDirectory() as d:
            fake_npm_package(d, mobydick.PACKAGE, files)
            docs = mobydick.documents(d)
            os.remove(os.path.join(d, mobydick.PACKAGE, "data", "chapter_7.txt"))
            with self.assertRaises(FileNotFoundError):
                mobydick.documents(d)
        self.assertEqual(len(docs), 136)
        self.assertEqual([x.key for x in docs[:3]], ["heldout:moby-dick:chapter_1",
                                                     "heldout:moby-dick:chapter_2",
                                                     "heldout:moby-dick:chapter_3"])
        self.assertEqual(docs[-1].key, "heldout:moby-dick:epilogue")
        with self.assertRaises(FileNotFoundError):
            npmtext.package_dir("@stdlib/no-such-package", "/nonexistent")

    def test_repeats(self):
        self.assertEqual(P.parse_repeats(["sotu=2"], ["kjv", "sotu"]), {"sotu": 2})
        for bad in ("sotu=0", "sotu", "pgdocs=2", "sotu=x"):
            with self.assertRaises(SystemExit):
                P.parse_repeats([bad], ["kjv", "sotu"])


@unittest.skipUnless(HAVE_ENGINE or NAMED, f"no {BIN} / tokenizer (set DEEPINFER_BIN)")
class EngineTest(unittest.TestCase):
    """A chat rendered by the engine round-trips through the tokenizer and ends with EOS."""

    @classmethod
    def setUpClass(cls):
        cls.e = P.Engine(BIN, TOK)

    def test_chat_round_trip(self):
        users = ["What does cat mean?", "Quote John 3:16."]
        replies = ["Cat: feline mammal usually having thick soft fur.",
                   "For God so loved the world, that he gave his only begotten Son."]
        prompts = self.e.render_prompts(users)
        full = self.e.render_full([[{"role": "user", "content": u},
                                    {"role": "assistant", "content": r}]
                                   for u, r in zip(users, replies)])
        p_ids = self.e.encode(prompts)
        r_ids = self.e.encode(replies)
        for u, prompt, f, p, r in zip(users, prompts, full, p_ids, r_ids):
            self.assertTrue(prompt.endswith("<｜Assistant｜></think>"), prompt)
            seq = P.chat_sequence(p, r)
            self.assertEqual(seq[0], P.BOS)
            self.assertEqual(seq[-1], P.EOS)
            self.assertEqual(seq.count(P.EOS), 1)
            # the same text the engine renders for the finished conversation
            self.assertEqual(self.e.decode([seq])[0], f)
            # the prompt part is exactly what the server encodes for the user message
            self.assertEqual(seq[:len(p)], self.e.encode([prompt])[0])

    def test_template_ids(self):
        ids = P.template_ids(self.e)
        for t in (0, 1, 128803, 128804):
            self.assertIn(t, ids)
        prompt = self.e.render_prompts(["x"])[0]
        x = set(self.e.encode(["x"])[0])
        self.assertTrue({i for i in self.e.encode([prompt])[0] if i not in x} <= set(ids))


if __name__ == "__main__":
    unittest.main()
