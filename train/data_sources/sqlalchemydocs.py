"""The SQLAlchemy 1.4 documentation: Debian's python-sqlalchemy-doc (HTML in
/usr/share/doc/python-sqlalchemy-doc/html).

Prose only: the explanatory paragraphs of the unified tutorial, the ORM and Core guides, the
dialect notes and the FAQ, with the headings above them; code, tables, navigation, module source
listings and the changelog are left out (`htmlprose`). No chats.
"""
from . import htmlprose

INFO = {
    "name": "sqlalchemydocs",
    "title": "SQLAlchemy 1.4 documentation (the SQLAlchemy authors and contributors)",
    "package": "apt: python-sqlalchemy-doc",
    "licence": "MIT (Expat; permissive)",
    "where": "/usr/share/doc/python-sqlalchemy-doc/copyright (\"Files: * Copyright: 2005-2015, the "
             "SQLAlchemy authors and contributors License: Expat\")",
    "modern": True,
}
ROOT = "/usr/share/doc/python-sqlalchemy-doc/html"
SUBDIRS = ["tutorial", "orm", "core", "dialects", "faq"]
SKIP_CLASSES = {"sphinxsidebar", "highlight", "headerlink", "docs-navigation-links"}
SKIP_IDS = {"docs-sidebar", "docs-sidebar-popout", "fixed-sidebar", "docs-top-navigation-container",
            "docs-bottom-navigation", "docs-header", "docs-version-header", "docs-copyright",
            "narrow-index-nav", "docs-narrow-top-navigation", "sidebar-search", "sidebar-banner"}


def load(root=ROOT):
    files = htmlprose.html_files(root, SUBDIRS)
    if not files:
        raise FileNotFoundError(f"sqlalchemydocs: no HTML under {root} "
                                "(apt install python-sqlalchemy-doc)")
    return htmlprose.load_pages("sqlalchemydocs", "sqla", files, SKIP_CLASSES, SKIP_IDS)
