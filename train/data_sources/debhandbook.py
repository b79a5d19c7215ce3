"""The Debian Administrator's Handbook (Debian 11), English: Debian's debian-handbook (HTML in
/usr/share/doc/debian-handbook/html/en-US).

Prose only: the book's paragraphs (Publican's <div class="para">) and its side notes (culture,
back to basics, tools), with the headings above them; command sessions, listings, URLs, navigation
and the table of contents are left out (`htmlprose`). No chats.
"""
from . import htmlprose

INFO = {
    "name": "debhandbook",
    "title": "The Debian Administrator's Handbook, Debian 11 (Raphaël Hertzog, Roland Mas)",
    "package": "apt: debian-handbook",
    "licence": "GPL-2.0+ or CC-BY-SA-3.0 (the user's choice)",
    "where": "/usr/share/doc/debian-handbook/copyright (\"Files: * ... License: GPL-2.0+ or "
             "CC-BY-SA-3.0\")",
    "modern": True,
}
ROOT = "/usr/share/doc/debian-handbook/html/en-US"
EXCLUDE = [r"^index\.html$", r"^Common_Content/"]
SKIP_CLASSES = {"docnav", "url", "indexterm", "toc", "screen", "programlisting", "legalnotice",
                "mediaobject", "revhistory"}
SKIP_IDS = {"banner", "title"}


def load(root=ROOT):
    files = htmlprose.html_files(root, exclude=EXCLUDE)
    if not files:
        raise FileNotFoundError(f"debhandbook: no HTML under {root} (apt install debian-handbook)")
    return htmlprose.load_pages("debhandbook", "debhb", files, SKIP_CLASSES, SKIP_IDS)
