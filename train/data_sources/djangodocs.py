"""The Django 3.2 documentation: Debian's python-django-doc (HTML in
/usr/share/doc/python-django-doc/html).

Prose only: the explanatory paragraphs of the overview, tutorial, topic guides, how-tos,
reference, FAQ, the contributing guide and the release notes of each feature release (0.95 to
3.2; not the bug-fix releases' change lists), with the headings above them; code, tables,
navigation and module source listings are left out (`htmlprose`). No chats.
"""
import re

from . import htmlprose

INFO = {
    "name": "djangodocs",
    "title": "Django 3.2 documentation (Django Software Foundation and contributors)",
    "package": "apt: python-django-doc",
    "licence": "BSD-3-Clause (permissive: \"Redistribution and use in source and binary forms, "
               "with or without modification, are permitted provided that ...\")",
    "where": "/usr/share/doc/python-django-doc/copyright (\"Files: * Copyright: Django Software "
             "Foundation and individual contributors ... License: BSD-3-Clause\")",
    "modern": True,
}
ROOT = "/usr/share/doc/python-django-doc/html"
SUBDIRS = ["faq", "howto", "internals", "intro", "misc", "ref", "topics"]
FEATURE_RELEASE = re.compile(r"^releases/[0-9]+\.[0-9]+\.html$")
SKIP_CLASSES = {"sphinxsidebar", "nav", "highlight", "headerlink", "doc-nav"}
SKIP_IDS = {"hd", "ft", "sidebar", "global-nav", "searchbox"}


def load(root=ROOT):
    files = htmlprose.html_files(root, SUBDIRS)
    files += [f for f in htmlprose.html_files(root, ["releases"]) if FEATURE_RELEASE.match(f[0])]
    files.sort()
    if not files:
        raise FileNotFoundError(f"djangodocs: no HTML under {root} (apt install python-django-doc)")
    return htmlprose.load_pages("djangodocs", "django", files, SKIP_CLASSES, SKIP_IDS)
