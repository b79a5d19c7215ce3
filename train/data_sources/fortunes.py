"""Sayings from Debian's fortunes / fortunes-min (/usr/share/games/fortunes), filtered hard.

The fortune program is BSD-licensed, but the cookies themselves are quotations "collected
haphazardly from a cacophony of sources ... it falls under fair use, as we understand it"
(/usr/share/doc/fortunes/Notes.gz): no file carries a licence of its own, and many quote
copyrighted books, films, comics and songs. So only the quotations whose attribution names an
English-language author who died before 1955 (public domain under life+70) or a traditional
proverb are kept, from the inoffensive files (never off/), and none from files that quote a
copyrighted work as a whole (startrek, pratchett, zippy, songs-poems, tao = The Tao of
Programming, humorists, ...). Attributions in the fortune files are not always accurate; that is
the remaining uncertainty.
"""
import os
import random
import re

from . import Chat, Corpus, Doc

INFO = {
    "name": "fortunes",
    "title": "fortune cookies: quotations by public-domain authors and proverbs only",
    "package": "apt: fortunes, fortunes-min",
    "licence": "BSD (the fortune package); the kept quotations are public domain (authors died "
               "before 1955) or traditional proverbs",
    "where": "/usr/share/doc/fortunes/copyright (BSD); /usr/share/doc/fortunes/Notes.gz (the "
             "quotations' own status: 'fair use, as we understand it' -> filtered by author)",
}
ROOT = "/usr/share/games/fortunes"
SKIP_FILES = {"startrek", "pratchett", "zippy", "songs-poems", "ascii-art", "translate-me", "tao",
              "humorists", "debian", "knghtbrd", "linux", "linuxcookie", "perl"}
PD_AUTHORS = """
Ambrose Bierce|Mark Twain|Oscar Wilde|William Shakespeare|Shakespeare|Wm. Shakespeare|
George Bernard Shaw|G. B. Shaw|Bernard Shaw|Thomas Jefferson|Ralph Waldo Emerson|Emerson|
John Heywood|Will Rogers|Benjamin Franklin|B. Franklin|Ben Franklin|Abraham Lincoln|
Samuel Johnson|Dr. Johnson|S. Johnson|Lewis Carroll|Lewis Carrol|Henry David Thoreau|Thoreau|
Francis Bacon|Sir Francis Bacon|Helen Rowland|Samuel Butler|Robert G. Ingersoll|Josh Billings|
G. K. Chesterton|Benjamin Disraeli|Disraeli|William Blake|Elbert Hubbard|Kin Hubbard|Kim Hubbard|
Robert Louis Stevenson|George Eliot|Jonathan Swift|John Keats|Sir Arthur Conan Doyle|
Arthur Conan Doyle|Alexander Pope|John Donne|John Milton|Thomas Tusser|John Lyly|
James Russell Lowell|Thomas Macaulay|Thomas Carlyle|Carlyle|Jerome K. Jerome|Finley Peter Dunne|
Alexander Hamilton|Adam Smith|Joseph Conrad|J. M. Barrie|Saki|George Ade|Henry Adams|
Theodore Roosevelt|William James|E. W. Howe|Ed Howe|Stephen Crane|Walt Whitman|Edgar Allan Poe|
Charles Dickens|Jane Austen|Lord Byron|Percy Bysshe Shelley|William Wordsworth|Alfred Tennyson|
Lord Tennyson|Rudyard Kipling|H. G. Wells|Arnold Bennett|Robert Benchley|Don Marquis|Bill Nye|
Artemus Ward|Charles Lamb|William Hazlitt|Thomas Paine|Henry Ward Beecher|
Oliver Wendell Holmes|Washington Irving|Herman Melville|Nathaniel Hawthorne|John Ruskin|
Matthew Arnold|Robert Browning|Elizabeth Barrett Browning|Emily Dickinson|Thomas Hardy|
William Butler Yeats|W. B. Yeats|Edmund Burke|Daniel Webster|Horace Greeley|P. T. Barnum|
Samuel Taylor Coleridge|William Cowper|Geoffrey Chaucer|Chaucer|Ben Jonson|Andrew Marvell|
Sir Walter Scott|Walter Scott|Laurence Sterne|Henry Fielding|Lord Chesterfield|Oliver Goldsmith|
Thomas Gray|Robert Burns|John Bunyan|Izaak Walton|Thomas Fuller|George Herbert|
Sir Thomas Browne|John Dryden|William Congreve|Richard Brinsley Sheridan|Edward Gibbon|
Thomas Hobbes|John Locke|David Hume|Edward Young|Robert Herrick|Henry Wadsworth Longfellow|
Longfellow|John Greenleaf Whittier|Ulysses S. Grant|George Washington|John Adams|
Frederick Douglass|Booker T. Washington|Woodrow Wilson|Calvin Coolidge|Mary Shelley|
Charlotte Bronte|Emily Bronte|Anthony Trollope|Wilkie Collins|William Makepeace Thackeray|
Thackeray|Rev. Sydney Smith|Sydney Smith|Horace Walpole|Jonathan Edwards|Cotton Mather|
Edward Lear|W. S. Gilbert|Gilbert and Sullivan|Ella Wheeler Wilcox|O. Henry|Jack London|
Bret Harte|Henry James|Edith Wharton|Sinclair Lewis|Gertrude Stein|F. Scott Fitzgerald|
Lord Acton|John Stuart Mill|Herbert Spencer|Thomas Huxley|T. H. Huxley|Charles Darwin|
Isaac Newton|Sir Isaac Newton|Michael Faraday|Lord Kelvin|Florence Nightingale|
Susan B. Anthony|Ralph Waldo Trine|Ernest Rutherford|Alfred North Whitehead
"""
PD = {a.strip().lower() for a in PD_AUTHORS.replace("\n", "").split("|") if a.strip()}

ASKS = ["Tell me a saying.", "Give me a quote.", "Tell me a quotation.", "Share a famous quote.",
        "Tell me something {a} said.", "Quote {a}.", "Give me a quote by {a}.",
        "What is a famous saying?", "Tell me a witty saying.", "Say something wise.",
        "Give me a saying to think about.", "Do you know a good quote?"]
PROVERB_ASKS = ["Tell me a proverb.", "Give me a proverb.", "Tell me a saying.",
                "Tell me an old saying.", "Do you know a proverb?"]


def read_cookies(root=ROOT):
    """[(file, index, quote, author)] of kept cookies."""
    out = []
    for fn in sorted(os.listdir(root)):
        path = os.path.join(root, fn)
        if fn in SKIP_FILES or "." in fn or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            cookies = f.read().split("\n%\n")
        for i, c in enumerate(cookies):
            lines = c.rstrip("\n%").rstrip().split("\n")
            if len(lines) < 2:
                continue
            m = re.match(r"^\s*-{1,3}\s*([^-].*)$", lines[-1])
            if not m:
                continue
            attrib = m.group(1).strip()
            author = re.split(r",|\(|\"|;| in | on ", attrib)[0].strip().rstrip(".")
            proverb = re.fullmatch(r"[A-Z][a-z]+ proverb", author) is not None
            if author.lower() not in PD and author.lower() + "." not in PD and not proverb:
                continue
            body = [l.strip() for l in lines[:-1]]
            while body and not body[-1]:
                body.pop()
            text = re.sub(r"\s+", " ", " ".join(body)).strip()
            if not text or len(text) > 400 or not re.search(r"[a-z]", text):
                continue
            text = text.strip('"').strip()
            out.append((fn, i, text, author))
    return out


def load(root=ROOT, seed=4):
    corpus = Corpus("fortunes")
    rng = random.Random(seed)
    seen = set()
    for fn, i, text, author in read_cookies(root):
        if text.lower() in seen:
            continue
        seen.add(text.lower())
        key = f"fortune:{fn}:{i}"
        proverb = author.endswith("proverb")
        corpus.docs.append(Doc(key, f"\"{text}\" — {author}", group="fortunes"))
        if proverb:
            ask = rng.choice(PROVERB_ASKS)
            reply = f"{author[:1].upper() + author[1:]}: \"{text}\""
        else:
            ask = rng.choice(ASKS).format(a=author)
            reply = f"\"{text}\" — {author}"
        corpus.chats.append(Chat(key, "saying", ask, reply))
    return corpus
