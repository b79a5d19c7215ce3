"""The Node.js 18 API documentation: Debian's nodejs-doc (HTML in /usr/share/doc/nodejs/api).

Prose only: the explanatory paragraphs of each module's page (the event loop, streams, buffers,
file system, processes, modules, errors, ...) with the headings above them; code, signatures,
version-history tables, stability badges and navigation are left out (`htmlprose`). No chats.
"""
from . import htmlprose

INFO = {
    "name": "nodedocs",
    "title": "Node.js 18 API documentation (Node.js contributors, Joyent, Inc.)",
    "package": "apt: nodejs-doc",
    "licence": "MIT (Expat; permissive)",
    "where": "/usr/share/doc/nodejs-doc/copyright (\"Files: * Copyright: Node.js contributors, "
             "Joyent, Inc. and other Node contributors. License: Expat\")",
    "modern": True,
}
ROOT = "/usr/share/doc/nodejs/api"
EXCLUDE = [r"^all\.html$", r"^index\.html$"]
SKIP_CLASSES = {"mark", "api_metadata", "toc", "picker", "header", "header-container"}
SKIP_IDS = {"column2", "gtoc", "toc"}


def load(root=ROOT):
    files = htmlprose.html_files(root, exclude=EXCLUDE)
    if not files:
        raise FileNotFoundError(f"nodedocs: no HTML under {root} (apt install nodejs-doc)")
    return htmlprose.load_pages("nodedocs", "node", files, SKIP_CLASSES, SKIP_IDS)
