"""WordNet 3.0 glosses and example sentences, from Debian's wordnet-base (/usr/share/wordnet).

Prose: one short dictionary entry per synset ("cat, true cat (noun): feline mammal ...; "examples"")
grouped by lexicographer file (noun.animal, verb.motion, ...) into documents. Chats: questions
about a word answered with the gloss of its most frequent sense (index order), plus an example
sentence that contains the word when WordNet has one.
"""
import os
import random
import re

from . import Chat, Corpus, Doc

INFO = {
    "name": "wordnet",
    "title": "WordNet 3.0 glosses and examples (Princeton University)",
    "package": "apt: wordnet-base",
    "licence": "WordNet 3.0 licence (permissive, BSD-like: use, copy, modify and distribute for "
               "any purpose; keep the copyright notice)",
    "where": "/usr/share/doc/wordnet-base/copyright (License: WordNet3.0)",
}
NOTICE = "WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved."

POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
POS_NAME = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective", "r": "adverb"}
LEX_FILES = [
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event",
    "noun.feeling", "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object",
    "noun.person", "noun.phenomenon", "noun.plant", "noun.possession", "noun.process",
    "noun.quantity", "noun.relation", "noun.shape", "noun.state", "noun.substance", "noun.time",
    "verb.body", "verb.change", "verb.cognition", "verb.communication", "verb.competition",
    "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather",
    "adj.ppl",
]

ASK_ANY = [
    "What does {w} mean?", "Define {w}.", "What is the meaning of {w}?",
    "What does the word \"{w}\" mean?", "Meaning of {w}?", "define {w}", "Can you define {w}?",
    "What's the definition of {w}?", "Explain the word {w}.", "What does \"{w}\" mean?",
    "Give me the definition of {w}.", "{W}: what does it mean?", "What is the definition of {w}?",
]
ASK_NOUN = ["What is {a} {w}?", "What is {a} {w}?", "What's {a} {w}?", "Tell me what {a} {w} is."]
ASK_VERB = ["What does it mean to {w}?", "What does \"to {w}\" mean?", "Define the verb {w}."]
ASK_ADJ = ["What does it mean to be {w}?", "Define the adjective {w}.",
           "What does {w} mean as an adjective?"]
PROPER_PERSON = ["Who was {W}?", "Who is {W}?", "Tell me about {W}.", "Who was {W}?"]
PROPER_PLACE = ["Where is {W}?", "What is {W}?", "Tell me about {W}."]
PROPER_OTHER = ["What is {W}?", "Tell me about {W}.", "What does {W} refer to?"]
ASK_ADV = ["What does the adverb {w} mean?", "Define the adverb {w}."]


def article(word):
    return "an" if word[:1].lower() in "aeiou" else "a"


def parse_gloss(raw):
    """'def; "ex 1"; "ex 2"' -> (definition, [examples])."""
    parts = [p.strip() for p in raw.strip().split(";")]
    defs, exs = [], []
    for p in parts:
        if len(p) >= 2 and p.startswith('"'):
            exs.append(p.strip('"').strip())
        elif not exs:
            defs.append(p)
    return "; ".join(d for d in defs if d), [e for e in exs if e]


def read_synsets(root):
    """{(pos, offset): (ss_type, lexfile, [words], gloss_raw)}"""
    synsets = {}
    for pos, fname in POS_FILES.items():
        with open(os.path.join(root, "data." + fname), encoding="utf-8") as f:
            for line in f:
                if line.startswith("  "):
                    continue  # licence header
                head, _, gloss = line.partition(" | ")
                fields = head.split()
                offset, lexfile, ss_type = fields[0], int(fields[1]), fields[2]
                n = int(fields[3], 16)
                words = []
                for i in range(n):
                    w = fields[4 + 2 * i]
                    w = re.sub(r"\((a|p|ip)\)$", "", w).replace("_", " ")
                    words.append(w)
                synsets[(pos, offset)] = (ss_type, lexfile, words, gloss.strip())
    return synsets


def read_index(root):
    """[(lemma, pos, [offsets by frequency], tagged sense count)] in file order."""
    out = []
    for pos, fname in POS_FILES.items():
        with open(os.path.join(root, "index." + fname), encoding="utf-8") as f:
            for line in f:
                if line.startswith("  "):
                    continue
                fields = line.split()
                lemma, cnt = fields[0], int(fields[2])
                tagged = int(fields[-cnt - 1])  # senses seen in the SemCor concordance
                out.append((lemma.replace("_", " "), pos, fields[-cnt:], tagged))
    return out


def finish(text):
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def contains_word(sentence, word):
    stem = word.lower()[: max(3, len(word) - 2)]
    return stem in sentence.lower()


def define_reply(word, pos, definition, examples, rng):
    d = definition
    if pos == "v":
        reply = f"To {word} means to {d}" if not d.startswith("to ") else f"To {word} means {d}"
    elif pos in ("a", "s", "r"):
        reply = rng.choice([f"{word[:1].upper() + word[1:]} means {d}",
                            f"\"{word}\" means {d}"])
    else:
        reply = rng.choice([f"{word[:1].upper() + word[1:]}: {d}", f"\"{word}\" means {d}",
                            f"The word \"{word}\" means {d}"])
    reply = finish(reply)
    good = [e for e in examples if contains_word(e, word)]
    if good:
        ex = finish(good[0][:1].upper() + good[0][1:])
        reply += rng.choice([f" For example: \"{ex}\"", f" Example: \"{ex}\""])
    return reply


def load(root="/usr/share/wordnet", seed=2):
    synsets = read_synsets(root)
    corpus = Corpus("wordnet")
    # Prose: one entry per synset, grouped by lexicographer file in offset order.
    for (pos, offset), (ss_type, lexfile, words, gloss) in sorted(
            synsets.items(), key=lambda kv: (kv[1][1], kv[0][1])):
        name = LEX_FILES[lexfile] if lexfile < len(LEX_FILES) else str(lexfile)
        text = f"{', '.join(words)} ({POS_NAME[ss_type]}): {gloss}"
        corpus.docs.append(Doc(f"wn:{pos}{offset}", text, group=f"wn:{name}"))
    # Chats: the most frequent sense of each lemma.
    rng = random.Random(seed)
    seen = set()  # lemmas already asked about generically (index order: noun, verb, adj, adv)
    for lemma, pos, offsets, tagged in read_index(root):
        # common words first: attested in SemCor, then plain lowercase words, then the rest
        rank = 0 if tagged > 0 and lemma.islower() else 1 if re.fullmatch(r"[a-z]+", lemma) else 2
        if not re.fullmatch(r"[A-Za-z][A-Za-z' -]*", lemma) or len(lemma) < 2:
            continue
        ss_type, lexfile, words, gloss = synsets[(pos, offsets[0])]
        definition, examples = parse_gloss(gloss)
        if not definition:
            continue
        word = next((w for w in words if w.lower() == lemma), lemma)
        if pos == "n" and word[:1].isupper():
            # proper nouns: people, places, other names
            lex = LEX_FILES[lexfile]
            asks = (PROPER_PERSON if lex == "noun.person" else
                    PROPER_PLACE if lex == "noun.location" else PROPER_OTHER)
            ask = rng.choice(asks).format(W=word)
            corpus.chats.append(Chat(f"wn:{pos}{offsets[0]}", "define", ask,
                                     finish(f"{word}: {definition}"), rank=2))
            continue
        asks = list(ASK_ANY) if lemma not in seen else []
        seen.add(lemma)
        if pos == "n":
            asks += ["Define the noun {w}.", "What does {w} mean as a noun?"]
            if word.islower() and " " not in word:
                asks += [a.replace("{a}", article(word)) for a in ASK_NOUN]
        elif pos == "v":
            asks += ASK_VERB
        elif pos == "a":
            asks += ASK_ADJ
        elif pos == "r":
            asks += ASK_ADV
        ask = rng.choice(asks).format(w=word, W=word[:1].upper() + word[1:])
        reply = define_reply(word, pos, definition, examples, rng)
        corpus.chats.append(Chat(f"wn:{pos}{offsets[0]}", "define", ask, reply, rank=rank))
    return corpus
