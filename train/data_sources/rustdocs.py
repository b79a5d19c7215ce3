"""The Rust books: Debian's rust-doc (mdBook HTML in /usr/share/doc/rust-doc/html).

Prose only, from the books (not the API reference): The Rust Programming Language, the Rust
Reference, the Rustonomicon, the Edition Guide, the rustc and rustdoc books, the Embedded Rust
book and Rust by Example, each page's explanatory paragraphs with the headings above them; code,
tables, navigation, the one-page print versions and the archived book editions (redirect stubs)
are left out (`htmlprose`). No chats.
"""
from . import htmlprose

INFO = {
    "name": "rustdocs",
    "title": "The Rust books (The Rust Programming Language, Reference, Rustonomicon, Edition "
             "Guide, rustc, rustdoc, Embedded, Rust by Example; The Rust Project Developers)",
    "package": "apt: rust-doc",
    "licence": "MIT or Apache-2.0 (permissive)",
    "where": "/usr/share/doc/rust-doc/copyright (\"Files: ... src/doc/* ... Copyright: ... The "
             "Rust Project Developers License: MIT or Apache-2.0\"); /usr/share/doc/rust-doc/html/"
             "COPYRIGHT.txt",
    "modern": True,
}
ROOT = "/usr/share/doc/rust-doc/html"
BOOKS = ["book", "reference", "nomicon", "edition-guide", "rustc", "rustdoc", "embedded-book",
         "rust-by-example"]
EXCLUDE = [r"(^|/)print\.html$", r"(^|/)toc\.html$", r"(^|/)404\.html$", r"(^|/)SUMMARY\.html$",
           r"^book/(first|second|2018)-edition/"]
SKIP_CLASSES = {"menu-bar", "sidebar", "nav-wrapper", "nav-wide-wrapper", "mobile-nav-chapters",
                "nav-chapters", "searchresults-outer", "search-wrapper", "playground"}
SKIP_IDS = {"sidebar", "menu-bar", "search-wrapper", "menu-bar-hover-placeholder"}


def load(root=ROOT):
    files = htmlprose.html_files(root, BOOKS, exclude=EXCLUDE)
    if not files:
        raise FileNotFoundError(f"rustdocs: no HTML under {root} (apt install rust-doc)")
    return htmlprose.load_pages("rustdocs", "rust", files, SKIP_CLASSES, SKIP_IDS)
