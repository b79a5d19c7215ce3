"""The SQLite documentation: Debian's sqlite3-doc (HTML in /usr/share/doc/sqlite3).

Prose only: the explanatory paragraphs of the articles (how SQLite works, the file format,
transactions, the query planner, its design and history) and of the C interface pages, with the
headings above them; code, syntax diagrams, tables, menus, the release logs and change lists are
left out (`htmlprose`). No chats.
"""
from . import htmlprose

INFO = {
    "name": "sqlitedocs",
    "title": "SQLite documentation (D. Richard Hipp and the SQLite developers)",
    "package": "apt: sqlite3-doc",
    "licence": "Public domain: \"All of the code and documentation in SQLite has been dedicated to "
               "the public domain by the authors.\"",
    "where": "/usr/share/doc/sqlite3/copyright.html; /usr/share/doc/sqlite3-doc/copyright "
             "(\"Files: * ... License: public-domain\")",
    "modern": True,
}
ROOT = "/usr/share/doc/sqlite3"
EXCLUDE = [r"^releaselog/", r"^syntax/", r"^search", r"^changes\.html$", r"^chronology\.html$",
           r"^copyright-release\.html$", r"^docs\.html$", r"^sitemap\.html$",
           r"^keyword_index\.html$", r"^index\.html$", r"^news\.html$", r"^doclist\.html$"]
SKIP_CLASSES = {"nosearch", "menu", "searchmenu", "submenu", "tagline", "fancy_toc", "fancy-toc1",
                "fancy-toc2", "codeblock", "imgcontainer", "headerlink"}


def load(root=ROOT):
    files = htmlprose.html_files(root, exclude=EXCLUDE)
    if not files:
        raise FileNotFoundError(f"sqlitedocs: no HTML under {root} (apt install sqlite3-doc)")
    return htmlprose.load_pages("sqlitedocs", "sqlite", files, SKIP_CLASSES)
