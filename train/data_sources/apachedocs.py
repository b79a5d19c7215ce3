"""The Apache HTTP Server 2.4 manual: Debian's apache2-doc (English HTML in
/usr/share/doc/apache2-doc/manual/en).

Prose only: the explanatory paragraphs of the guides, how-tos, module and directive descriptions,
with the headings above them; configuration examples, directive tables, navigation and the text
of the Apache License (a held-out document) are left out (`htmlprose`). No chats.
"""
from . import htmlprose

INFO = {
    "name": "apachedocs",
    "title": "Apache HTTP Server 2.4 documentation (The Apache Software Foundation)",
    "package": "apt: apache2-doc",
    "licence": "Apache License 2.0 (permissive)",
    "where": "/usr/share/doc/apache2-doc/copyright (\"Files: * Copyright: 2022 The Apache Software "
             "Foundation License: Apache-2.0\"); the manual's own footer: \"Licensed under the "
             "Apache License, Version 2.0\"",
    "modern": True,
}
ROOT = "/usr/share/doc/apache2-doc/manual/en"
EXCLUDE = [r"(^|/)license\.html$", r"^sitemap\.html$", r"(^|/)index\.html$",
           r"^mod/directives\.html$", r"^mod/quickreference\.html$"]
SKIP_CLASSES = {"toplang", "bottomlang", "top", "up", "example", "headerlink",
                "quickview"}
SKIP_IDS = {"page-header", "path", "footer", "quickview"}


def load(root=ROOT):
    files = htmlprose.html_files(root, exclude=EXCLUDE)
    if not files:
        raise FileNotFoundError(f"apachedocs: no HTML under {root} (apt install apache2-doc)")
    return htmlprose.load_pages("apachedocs", "apache", files, SKIP_CLASSES, SKIP_IDS)
