"""The PostgreSQL 15 manual: Debian's postgresql-doc-15 (HTML in /usr/share/doc/postgresql-doc-15).

Prose only: the explanatory paragraphs of every chapter and reference page (tutorial, SQL
language, administration, client interfaces, internals), with the headings above them; code
listings, command synopses, tables, navigation, the index and the release notes are left out
(`htmlprose`). No chats.
"""

from . import htmlprose

INFO = {
    "name": "pgdocs",
    "title": "PostgreSQL 15 documentation (PostgreSQL Global Development Group)",
    "package": "apt: postgresql-doc-15",
    "licence": "PostgreSQL Licence (permissive): \"Permission to use, copy, modify, and distribute "
               "this software and its documentation for any purpose, without fee, and without a "
               "written agreement is hereby granted, provided that the above copyright notice and "
               "this paragraph and the following two paragraphs appear in all copies.\"",
    "where": "/usr/share/doc/postgresql-doc-15/html/legalnotice.html; "
             "/usr/share/doc/postgresql-doc-15/copyright (\"Files: * ... License: PostgreSQL\")",
    "modern": True,
}
ROOT = "/usr/share/doc/postgresql-doc-15/html"
EXCLUDE = [r"^index\.html$", r"^legalnotice\.html$", r"^bookindex\.html$", r"^release",
           r"^biblio\.html$"]
SKIP_CLASSES = {"navheader", "navfooter", "toc", "refsynopsisdiv", "cmdsynopsis", "funcsynopsis",
                "synopsis", "programlisting", "screen", "literallayout", "table", "informaltable",
                "list-of-tables", "list-of-examples", "list-of-figures", "indexterm"}


def load(root=ROOT):
    files = htmlprose.html_files(root, exclude=EXCLUDE)
    if not files:
        raise FileNotFoundError(f"pgdocs: no HTML under {root} (apt install postgresql-doc-15)")
    return htmlprose.load_pages("pgdocs", "pg", files, SKIP_CLASSES)
